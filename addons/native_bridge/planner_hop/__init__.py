"""The planner hop (gateway -> language server): the mitmproxy addon that corrects the
gateway's own steps (addon.py) on the prior-knowledge HTTP/2 listeners it serves (runtime/h2c.py:
the chat hop reads them too, to leave their flows alone)."""
