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

The rewritten body comes back the same way: the worker keeps the last body it wrote for each
held one, and answers with the new one as pieces (:func:`body_delta`): ranges of the body it
wrote for the base (the written items before the cut, the steps before it: what the writer
copied, splice.py) and the bytes between them. The proxy, which holds that body too, joins them.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.splice import Written
from .worker import by_reference

# A body goes on from a held one only when they share at least this much: below it, sending the
# whole body costs about as little.
MIN_SHARED = 64 * 1024
HELD_BODIES = 8  # conversations whose last body the proxy and the worker hold
HELD_BYTES = 96 * 1024 * 1024  # and at most this much of them and of their rewritten bodies


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
    """How many leading bytes ``a`` and ``b`` share: :func:`_guess`, proven by one compare in
    place at memcmp speed; when the guess is wrong, an exact binary search of compares in place."""
    lo = _guess(a, b)
    view = memoryview(a)
    if not b.startswith(view[:lo]):
        lo, hi = 0, lo  # they part before the guess
    else:
        hi = lo
    while lo < hi:  # a[:lo] == b[:lo]; they part before hi
        mid = (lo + hi + 1) // 2
        if b.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _guess(a: bytes, b: bytes) -> int:
    """Where ``a`` and ``b`` part, guessed from 64-byte windows (a binary search, a few hundred
    bytes read) and the last bytes one by one: exact when the windows before it agree and those
    after it do not, as they do for two turns of a conversation; :func:`common_prefix` proves it."""
    lo, hi = 0, min(len(a), len(b))
    while hi - lo > 64:
        mid = (lo + hi) // 2
        if a[mid - 64 : mid] == b[mid - 64 : mid]:
            lo = mid
        else:
            hi = mid
    while lo < hi and a[lo] == b[lo]:  # the last few bytes one by one (fewer than 65)
        lo += 1
    return lo


class Held:
    """The proxy's side: the bodies the worker holds, by token, least recently used first."""

    def __init__(self, max_bodies: int = HELD_BODIES, max_bytes: int = HELD_BYTES) -> None:
        self.max_bodies, self.max_bytes = max_bodies, max_bytes
        self._bodies: OrderedDict[int, bytes] = OrderedDict()
        self._bytes = 0
        self._next = 0
        self._dropped: list[int] = []  # forgotten here since the last job: the worker is told
        self._written: dict[int, bytes] = {}  # the rewritten body the worker gave for each held body
        self._base_written: bytes | None = None  # the last job's base's (the worker's pieces are of it)
        self.sent = 0  # body bytes sent (tests, bench: what crossed)
        self.saved = 0  # body bytes not sent, because the worker held them
        self.received_saved = 0  # rewritten body bytes that came as ranges of one held here

    def ship(self, job: Any) -> Continued:
        """``job`` as it crosses: its body after the held body that shares the most with it."""
        raw: bytes = job.raw
        base, guess = None, 0
        for token, held in reversed(self._bodies.items()):  # the newest first: on a tie it wins
            n = _guess(held, raw)  # a few hundred bytes read: only the best is proven (one pass)
            if n > guess:
                base, guess = token, n
        shared = common_prefix(self._bodies[base], raw) if base is not None and guess >= MIN_SHARED else 0
        if shared < MIN_SHARED:
            base, shared = None, 0
        self._base_written = self._written.get(base) if base is not None else None  # type: ignore[arg-type]
        if base is not None and 2 * shared >= len(self._bodies[base]):
            # Going on from near its end, this is that conversation's next turn: it takes the
            # place of its last body. From early on (another conversation with the same start,
            # an old fork), both are held.
            self._forget(base)
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

    def receive(self, c: Continued, reply: Any) -> Any:
        """The worker's reply to ``c``, its body joined again when it came as pieces; the body is
        held for the next turn's pieces."""
        delta = getattr(reply, "delta", None)
        if delta is not None:
            base, size, pieces = delta
            old = self._base_written
            body = join(old, pieces) if base == c.base and old is not None else None
            if body is None or len(body) != size:
                # Not the body the worker wrote (a bug): this request fails open, and this
                # conversation's next turn goes whole, on bodies neither side holds pieces of.
                self._forget(c.token)
                raise ValueError(f"the worker's pieces of body {base} do not join to its body")
            reply.body, reply.delta = body, None
            self.received_saved += len(reply.body) - sum(len(p) for p in pieces if type(p) is bytes)
        self._base_written = None
        body = getattr(reply, "body", None)
        if type(body) is bytes and c.token in self._bodies:
            self._written[c.token] = body
            self._bytes += len(body)
            self._bound()
        return reply

    def forget_all(self) -> None:
        """The worker holds nothing now (it was restarted, or it is gone)."""
        self._bodies.clear()
        self._written.clear()
        self._bytes = 0
        self._dropped.clear()

    def _keep(self, token: int, raw: bytes) -> None:
        self._bodies[token] = raw
        self._bytes += len(raw)
        self._bound()

    def _bound(self) -> None:
        while len(self._bodies) > self.max_bodies or self._bytes > self.max_bytes:
            self._forget(next(iter(self._bodies)))

    def _forget(self, token: int) -> None:
        raw = self._bodies.pop(token, None)
        written = self._written.pop(token, None)
        if written is not None:
            self._bytes -= len(written)
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


Piece = tuple[int, int] | bytes  # a range of the base's rewritten body, or bytes


def body_delta(old: Written, new: Written) -> list[Piece] | None:
    """``new.body`` as pieces of ``old.body`` and bytes: the bytes both start with, then what
    lies between them and the steps ``new`` starts its steps array with that ``old``'s also
    starts with; every range proven by a compare. None: they share less than MIN_SHARED."""
    a = common_prefix(old.body, new.body)
    pieces: list[Piece] = [(0, a)] if a else []
    j = _shared_steps(old, new) if a <= new.steps_at else 0
    if j:
        end = old.step_ends[j - 1]
        pieces.append(new.body[a : new.steps_at])
        pieces.append((old.steps_at, end))
        pieces.append(new.body[new.steps_at + end - old.steps_at :])
    else:
        pieces.append(new.body[a:])
    if sum(p[1] - p[0] for p in pieces if type(p) is tuple) < MIN_SHARED:
        return None
    return pieces


def _shared_steps(old: Written, new: Written) -> int:
    """How many of ``old``'s steps ``new``'s steps array starts with, as the same bytes."""
    ends, at, body = old.step_ends, old.steps_at, memoryview(old.body)

    def same(j: int) -> bool:
        return new.body.startswith(body[at : ends[j - 1]], new.steps_at)

    if not ends:
        return 0
    if same(len(ends)):  # the common case: every old step is still there
        return len(ends)
    lo, hi = 0, len(ends) - 1  # same(lo) (or lo is 0); not same(hi + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def join(old: bytes, pieces: list[Piece]) -> bytes:
    """The body the pieces describe (one copy)."""
    view = memoryview(old)
    return b"".join(view[p[0] : p[1]] if type(p) is tuple else p for p in pieces)
