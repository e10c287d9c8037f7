"""What the chat hop observed of one tool call, and how a planner step is matched to it.

One :class:`Observation` goes the whole way: the chat hop's reading makes it (core/observe.py),
the store keeps it (runtime/store.py: digests only, nothing a secret could hide in), and the
planner hop's corrections take it as the evidence for a step (cascade/corrections.py). Pure:
no mitmproxy, no I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

DIGEST_SIZE = 16  # 128 bits: two different pairs with one key would make each other's claim ambiguous, never false


def match_key(kind: str, subject: str, output: str) -> bytes:
    """The digest an observation and a planner step are matched by (command or path, and output)."""
    h = hashlib.sha256()
    for part in (kind, subject, output):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.digest()[:DIGEST_SIZE]


def call_key(conversation: str, call_id: str) -> bytes:
    """The digest of a call: the same pair seen again (every turn resends it) is one observation."""
    return hashlib.sha256(f"{conversation}\0{call_id}".encode("utf-8", "surrogatepass")).digest()[:DIGEST_SIZE]


@dataclass(frozen=True, slots=True)
class Observation:
    """One (call, result) pair the chat hop saw, reduced to what the planner hop may use."""

    exit_code: int | None = None  # the code the client's result states (None: it states none)
    failed: bool | None = None  # the client's verdict: True failed, False succeeded, None unknown
    client: str | None = None  # the client's id (core/clients.py): its frames count in the text
    key: bytes = b""  # match_key(kind, subject, output)
    call: bytes = b""  # call_key(conversation, call id)
