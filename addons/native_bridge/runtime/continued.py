"""A large body sent to the worker as what follows the part it already holds.

Rewriting or recording, the worker's memo keeps each conversation and resumes it from its
last cut, so a turn costs the worker only its new part. Sending it the whole body every turn
cost more than that work: through two 1 MiB pipes a 2 MB body takes about 0.7 ms each way,
10 MB about 3.5 ms. So the proxy remembers the bodies it sent (:class:`Held`, by token) and
sends a body that goes on from one of them as that one's token, the number of leading bytes
both share, and the rest (:class:`Continued`). The worker keeps the same bodies under the
same tokens and joins the two parts (:func:`rebuild`): byte for byte the body the proxy holds,
so everything after it is the same as for a body sent whole.

The proxy alone decides which bodies are held (it tells the worker which to forget), so both
sides agree, except when the worker no longer has a body: a new worker (the old one died), or
a body it could not keep. It then answers :data:`RESEND` and the proxy sends the body whole.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .worker import by_reference

# A body goes on from a held one only when they share at least this much: below it, sending the
# whole body costs about as little.
MIN_SHARED = 64 * 1024
HELD_BODIES = 8  # conversations whose last body the proxy and the worker hold
HELD_BYTES = 128 * 1024 * 1024  # and at most this much of them


@dataclass(frozen=True, slots=True)
class Continued:
    """``job`` (its body left out) whose body is ``base``'s first ``shared`` bytes then ``rest``
    (``base`` None: ``rest`` is the whole body); held from now on as ``token``."""

    job: Any
    token: int
    base: int | None
    shared: int
    rest: bytes
    body_size: int  # the whole body's length: the worker checks what it joined
    drop: tuple[int, ...] = ()  # the bodies the proxy no longer holds: the worker lets them go too

    __reduce__ = by_reference  # the rest (or a whole body) crosses out of band


class Resend:
    """The worker's answer to a body it cannot rebuild (it does not hold ``base``)."""

    def __reduce__(self) -> str:
        return "RESEND"


RESEND = Resend()


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share. Where they part is guessed from 64-byte
    windows (a binary search, a few hundred bytes read), then proven by one compare in place at
    memcmp speed; when the guess is wrong, an exact binary search of compares in place."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    while hi - lo > 64:
        mid = (lo + hi) // 2
        if a[mid - 64 : mid] == b[mid - 64 : mid]:
            lo = mid
        else:
            hi = mid
    view = memoryview(a)
    if not b.startswith(view[:lo]):
        lo, hi = 0, lo  # they part before the guess
    while lo < hi:  # a[:lo] == b[:lo]; they part before hi, or hi is where one ends
        mid = (lo + hi + 1) // 2
        if b.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


class Held:
    """The proxy's side: the bodies the worker holds, by token, least recently used first."""

    def __init__(self, max_bodies: int = HELD_BODIES, max_bytes: int = HELD_BYTES) -> None:
        self.max_bodies, self.max_bytes = max_bodies, max_bytes
        self._bodies: OrderedDict[int, bytes] = OrderedDict()
        self._bytes = 0
        self._next = 0
        self._dropped: list[int] = []  # forgotten here since the last job: the worker is told
        self.sent = 0  # body bytes sent (tests, bench: what crossed)
        self.saved = 0  # body bytes not sent, because the worker held them

    def ship(self, job: Any) -> Continued:
        """``job`` as it crosses: its body after the held body that shares the most with it."""
        raw: bytes = job.raw
        base, shared = None, 0
        for token, held in reversed(self._bodies.items()):  # the newest first: on a tie it wins
            n = common_prefix(held, raw)
            if n > shared:
                base, shared = token, n
        if shared < MIN_SHARED:
            base, shared = None, 0
        elif 2 * shared >= len(self._bodies[base]):  # type: ignore[index]
            # Going on from near its end, this is that conversation's next turn: it takes the
            # place of its last body. From early on (another conversation with the same start,
            # an old fork), both are held.
            self._forget(base)  # type: ignore[arg-type]
        self._next += 1
        token = self._next
        self._keep(token, raw)
        drop, self._dropped = tuple(self._dropped), []  # the base among them, when it was replaced
        out = Continued(dataclasses.replace(job, raw=b""), token, base, shared, raw[shared:], len(raw), drop)
        self.sent += len(raw) - shared
        self.saved += shared
        return out

    def whole(self, c: Continued, raw: bytes) -> Continued:
        """``c`` again with its whole body (the worker did not hold its base)."""
        self.sent += c.shared
        self.saved -= c.shared
        return dataclasses.replace(c, base=None, shared=0, rest=raw)

    def forget_all(self) -> None:
        """The worker holds nothing now (it was restarted, or it is gone)."""
        self._bodies.clear()
        self._bytes = 0
        self._dropped.clear()

    def _keep(self, token: int, raw: bytes) -> None:
        self._bodies[token] = raw
        self._bytes += len(raw)
        while len(self._bodies) > self.max_bodies or self._bytes > self.max_bytes:
            self._forget(next(iter(self._bodies)))

    def _forget(self, token: int) -> None:
        raw = self._bodies.pop(token, None)
        if raw is not None:
            self._bytes -= len(raw)
            self._dropped.append(token)

    def __len__(self) -> int:
        return len(self._bodies)


def rebuild(c: Continued, held: dict[int, bytes], run: Callable[[Any], Any]) -> Any:
    """The worker's side: ``c``'s job with its body joined again, run; :data:`RESEND` when the
    worker does not hold its base. The body is held as ``c.token`` for the next turn."""
    if c.base is None:
        raw = c.rest
    else:
        base = held.get(c.base)
        if base is None or len(base) < c.shared:
            return RESEND
        raw = b"".join((memoryview(base)[: c.shared], c.rest))
    if len(raw) != c.body_size:
        return RESEND
    for token in c.drop:  # after the join: the base may be one of them (this body took its place)
        held.pop(token, None)
    if c.token not in c.drop:
        held[c.token] = raw
    return run(dataclasses.replace(c.job, raw=raw))
