"""The delta of a resumed cascade: which leading steps the planner already holds.

The gateway encodes the whole history again on every turn of a resumed cascade.
The caller keeps, per ``cascade_id``, what it delivered (the state lives with the
caller: memory or SQLite) and sends only what follows it. A ledger entry holds the
delivered steps' bytes while the caller can afford them (a comparison then costs a
memcmp) and their digests otherwise (then only the steps compared are hashed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

DIGEST_SIZE = 16  # 128 bits: collisions between one cascade's steps are not a concern


def step_digest(step: bytes) -> bytes:
    """The digest of a step as the gateway sent it (before any correction), so that the
    next turn's identical step matches whatever the corrections did to it."""
    return hashlib.sha256(step).digest()[:DIGEST_SIZE]


@dataclass(frozen=True, slots=True)
class Delivered:
    """A cascade's ledger entry: its delivered steps in order, as bytes or as digests (or both)."""

    steps: Sequence[bytes] | None = None
    digests: Sequence[bytes] | None = None

    def __len__(self) -> int:
        return len(self.steps if self.steps is not None else self.digests or ())


def delivered_prefix(delivered: Delivered | Sequence[bytes], current: Sequence[bytes]) -> int:
    """How many leading ``current`` steps (their bytes) were delivered, in order.

    ``delivered``: a ledger entry, or the delivered steps' digests. A prefix, not a set: a
    command run twice is two real steps, and the second is new."""
    if not isinstance(delivered, Delivered):
        delivered = Delivered(digests=delivered)
    if delivered.steps is not None:
        known, new_steps = delivered.steps, iter(current)
    else:  # digests: map hashes a step only when the comparison reaches it
        known, new_steps = delivered.digests or (), map(step_digest, current)
    n = 0
    for old, new in zip(known, new_steps, strict=False):
        # mutation: planner-ledger-as-set
        if old != new:
            break
        n += 1
    return n


class Delivery:
    """What the caller stores for a cascade once the planner accepted the request: the
    steps as the gateway sent them, and their digests, made only when a store asks (a
    store that keeps the bytes never hashes a step that is still in memory)."""

    __slots__ = ("_digests", "_known", "steps")

    def __init__(self, steps: Sequence[bytes], known: Sequence[bytes] = ()) -> None:
        self.steps = list(steps)
        self._known = list(known[: len(self.steps)])  # digests of a leading part, already made
        self._digests: list[bytes] | None = None

    def digests(self) -> list[bytes]:
        if self._digests is None:
            self._digests = self._known + [step_digest(s) for s in self.steps[len(self._known) :]]
        return self._digests
