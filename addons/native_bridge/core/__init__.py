"""The chat-history core: a request body in, steps and the rewritten history out.

Pure: no mitmproxy, no I/O, no module-level state (the memo is passed in)."""
