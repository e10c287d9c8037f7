"""The delta of a resumed cascade: which leading steps the planner already holds.

The gateway encodes the whole history again on every turn of a resumed cascade.
The caller keeps, per ``cascade_id``, the digests of the steps it delivered (the
state lives with the caller: memory or SQLite) and sends only what follows them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

DIGEST_SIZE = 16  # 128 bits: collisions between one cascade's steps are not a concern


def step_digest(step: bytes) -> bytes:
    """The digest of a step as the gateway sent it (before any correction), so that the
    next turn's identical step matches whatever the corrections did to it."""
    return hashlib.sha256(step).digest()[:DIGEST_SIZE]


def delivered_prefix(delivered: Sequence[bytes], current: Sequence[bytes]) -> int:
    """How many leading ``current`` digests equal ``delivered``, in order.

    A prefix, not a set: a command run twice is two real steps, and the second is new."""
    n = 0
    for old, new in zip(delivered, current, strict=False):
        if old != new:
            break
        n += 1
    return n
