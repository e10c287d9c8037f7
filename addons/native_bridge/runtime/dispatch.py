"""Where and when a hop's work runs: decided here, in one place for both hops, with the one fail-open.

mitmproxy runs every addon on one event loop: while a hook runs, no other connection moves.
A hop hands each request (or WebSocket frame) over as one object (a :class:`Work`, in practice
a :class:`Request`: it holds everything about that request and the :class:`Stage` it is in),
and :meth:`Dispatch.run` drives it from ``SELECTED`` to ``ACCOUNTED``, deciding:

- **on the loop** when the body is below ``OFFLOAD_BYTES`` (a first sight of 200 KB costs a few
  ms), or when what is new in it is (``fresh``: a large history whose earlier turns this process
  already read). A reading here that finds it needs the whole body after all goes
  off the loop;
- **off the loop** otherwise: in the worker process or a thread (the work's ``away``), awaited
  from the hook while the loop serves everyone else;
- **after the request has gone upstream** when the request need not wait for it (``goes_first``:
  observe mode). A reading off the loop is then kept in
  ``readings`` by flow id until it ends: the reply and the planner hop wait for it;
- **after the reply** when neither the reply nor a planner hop of another process waits for
  it (``after_reply``: no flow view, no shared state, a body read on the loop): an observed
  request's reading, a rewritten one's verdict and the rest of its reading (the observations,
  the memo's entry) are kept in
  ``deferred`` until its reply is out (:meth:`Dispatch.replied`) or the next request or
  planner call comes (it begins them first: their evidence, their memo entries), whichever
  comes first;
- **after the readings in flight** when the work needs their evidence (``wait``: the planner hop):
  this process's, and with a shared state file the ones other processes began (``unfinished``:
  polled every millisecond until each has ended, or until the time by which it ends at the latest).

Whatever fails (preparing, reading here or away, applying) fails open, here: the traceback is
logged, the work's ``failed`` result is decided, applied and accounted instead, and the request
or frame goes upstream as it came. The verdict (annotations, log line, record: ``account``) is made once
the request has gone upstream when it still goes (later.deferrable), else at once.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from mitmproxy import http

from .later import after_forward, deferrable, running_loop
from .offload import Offloader

logger = logging.getLogger(__name__)

# Bodies at least this large (decoded) are read off the loop, unless what is new in them is
# smaller. Below it even a first sight stays well under 20 ms on the loop (about 5 ms for
# 200 KB on a slow core).
OFFLOAD_BYTES = 512 * 1024
# A reading that waits for its reply begins this long after the reply is out: the agent's process,
# which the reply wakes, takes it first. On a machine where the agent and the proxy share cores
# the scheduler wakes it on the proxy's core, behind a reading begun at once (measured: +0.2x
# plain's latency in a 10 KB agent loop, the reading's whole cost; 0.2 ms later: the same).
AFTER_REPLY = 0.001
# With the state on a server, a resumed turn whose new part is smaller than this is read before its
# request goes: its observations are then one write, where a reading after it costs two round trips
# (its begin, its end). Such a reading takes about as long as one of them (a 200 KB loop's turn:
# 0.15 ms in process; the 200 KB loop through Redis on loopback +0.15x plain -> +0.04-0.05x SQLite's).
ONE_WRITE_BYTES = 16 * 1024
POLL = 0.001  # seconds between looks at the readings another process has not ended

R = TypeVar("R")
T = TypeVar("T")


class Stage(enum.Enum):
    """Where a request (or frame) is on its way; it only moves forward (addons/README.md)."""

    SELECTED = "selected"  # a hook chose it: nothing looked at yet
    READY = "ready"  # prepared: there is a body to read, its size known
    DECIDED = "decided"  # its result is in: read, known without reading (skipped) or failed open
    APPLIED = "applied"  # the result is on the flow: the body or frame it sends, the observations handed over
    ACCOUNTED = "accounted"  # its verdict is made: annotations, log line, record
    ANSWERED = "answered"  # its reply came (the planner hop: the ledger learnt what the server accepted)


class StageError(RuntimeError):
    """A request asked to move where it cannot go from its stage: a bug (the dispatch fails open)."""


class Work(Protocol[R]):
    """One request's or frame's work for a hop, as the dispatch runs it (R: the hop's result)."""

    flow: http.HTTPFlow
    where: str  # for the log line: "flow <id>", "planner flow <id>", "flow <id> message <i>"
    unit: str  # what goes upstream as it came on a failure: "request" or "frame"
    goes_first: bool  # its request goes upstream first, its reading follows it (later.after_forward)
    # Its reading (goes_first), or what waits until its request has gone (the verdict; the rest of a
    # split reading), waits for its reply, or for the next request or planner call (Dispatch.run).
    after_reply: bool
    wait: bool  # the readings in flight come first (their evidence)
    size: int  # the body's size, known once prepared

    def prepare(self) -> R | None:
        """SELECTED to READY (then ``size`` is set); or the result when there is nothing to read
        (skipped, not the hop's)."""

    def fresh(self) -> int:
        """The bytes a reading here would parse: ``size``, or a large history's new part when
        this process holds the rest."""

    def here(self, whole: bool) -> R | None:
        """Read on the loop: the whole body (``whole``), or only what is new (None: that is not enough)."""

    def away(self, dispatch: Dispatch) -> Awaitable[R]:
        """Read off the loop: in ``dispatch.worker`` or ``dispatch.thread``."""

    def failed(self, e: Exception) -> R:
        """The fail-open result (applying it changes nothing)."""

    def decided(self, result: R) -> None:
        """Its result is in (read, known or failed): to DECIDED, holding ``result``."""

    def apply(self) -> None:
        """DECIDED to APPLIED: hand the result over and change the request or frame; must not
        change it when it raises."""

    def account(self) -> None:
        """APPLIED to ACCOUNTED: the verdict (annotations, log line, record)."""


class Request[Result]:
    """What every hop's request (and WebSocket frame) has: its flow, its stage and its result;
    the hop's own class adds what it reads and how (a :class:`Work`)."""

    unit = "request"
    goes_first = False
    after_reply = False
    wait = False

    def __init__(self, flow: http.HTTPFlow, where: str) -> None:
        self.flow, self.where = flow, where
        self.stage = Stage.SELECTED
        self.size = 0
        self.result: Result | None = None

    def decided(self, result: Result) -> None:
        # Again from DECIDED: applying the result failed, the fail-open one replaces it.
        self.move(Stage.DECIDED, Stage.SELECTED, Stage.READY, Stage.DECIDED)
        self.result = result

    def move(self, to: Stage, *came_from: Stage) -> None:
        """Go to stage ``to``, which is reached only from ``came_from``."""
        if self.stage not in came_from:
            raise StageError(f"{self.where}: cannot be {to.value} when {self.stage.value}")
        self.stage = to


class Dispatch:
    """Runs the hops' work (module docstring); holds the worker process, started when first needed."""

    def __init__(self, unfinished: Callable[[], dict[int, float]] = dict) -> None:
        # Chat requests still being read off the loop after they went upstream, by flow id: the
        # reply waits for its own, the planner hop for all of them (their evidence).
        self.readings: dict[str, asyncio.Future[None]] = {}
        self.unfinished = unfinished  # the readings other processes began and have not ended
        # Readings not begun, by flow id, each waiting for its request's reply (after_reply).
        self.deferred: dict[str, Callable[[], None]] = {}
        self.offloader: Offloader | None = None

    @property
    def worker(self) -> Offloader:
        """The worker process for large bodies and frames, started when first needed."""
        if self.offloader is None:
            self.offloader = Offloader()
        return self.offloader

    @staticmethod
    def thread(fn: Callable[[], T]) -> Awaitable[T]:
        """``fn`` in a thread: for work that needs this process's state (Python that gives the GIL up)."""
        return asyncio.to_thread(fn)

    def close(self) -> None:
        if self.offloader is not None:
            self.offloader.close()
            self.offloader = None

    def run(self, work: Work[Any]) -> Awaitable[None] | None:
        """Run ``work`` as the module docstring says. An awaitable when the hook must wait for it
        (mitmproxy awaits what a hook returns), None when it is done or goes on by itself."""
        try:
            known = work.prepare()
        except Exception as e:
            known = self._failed(work, e)
        if known is not None:
            self._finish(work, known, forwarded=False)
            return None
        # The work waiting for its reply goes first: a planner call needs its evidence, a
        # conversation's next turn the memo entry it makes (a turn sent within a moment of the
        # last reply would otherwise miss it and be read in full).
        self._begin_deferred()
        in_flight = list(self.readings.values()) if work.wait else []
        elsewhere = self._unfinished(work) if work.wait else {}
        if in_flight or elsewhere:
            return self._after(in_flight, elsewhere, work)
        return self._start(work)

    async def _after(self, in_flight: list[asyncio.Future[None]], elsewhere: dict[int, float], work: Work[Any]) -> None:
        if in_flight:
            await asyncio.wait(in_flight)
        while elsewhere.keys() & self._unfinished(work).keys():  # each ends, or its time is up
            await asyncio.sleep(POLL)
        pending = self._start(work)
        if pending is not None:
            await pending

    def _unfinished(self, work: Work[Any]) -> dict[int, float]:
        try:
            return self.unfinished()
        except Exception:  # unreadable: the work goes on with the evidence there is
            logger.exception(f"bridge: {work.where}: cannot tell which chat readings are unfinished")
            return {}

    def _start(self, work: Work[Any]) -> Awaitable[None] | None:
        loop = running_loop()
        if work.goes_first and loop is not None:  # the request goes on now; the reading follows it
            if work.after_reply:
                self.deferred[work.flow.id] = lambda: self._follow(work, loop)
            else:
                after_forward(lambda: self._follow(work, loop), loop)
            return None
        here = self._where(work, forwarded=False)
        if here is None:
            return None
        return self._here(work, forwarded=False) if here else self._away(work, forwarded=False)

    def busy(self, flow_id: str) -> bool:
        """Whether work of ``flow_id`` is still to come: a reading (or verdict) waiting for its
        reply, or a reading in flight (its verdict is not on the flow yet)."""
        return flow_id in self.deferred or flow_id in self.readings

    def replied(self, flow_id: str) -> None:
        """The reply of ``flow_id`` is out (from its ``response`` hook), or the flow failed: its
        deferred reading, if it still waits, begins ``AFTER_REPLY`` seconds later (the next request
        or planner call begins it sooner). Without a running loop (a test calling a hook directly), at once."""
        if flow_id not in self.deferred:
            return
        loop = running_loop()
        if loop is None:
            self._begin(flow_id)
        else:
            loop.call_later(AFTER_REPLY, self._begin, flow_id)

    def _begin(self, flow_id: str) -> None:
        follow = self.deferred.pop(flow_id, None)
        if follow is None:  # begun already (by the next request or a planner call)
            return
        try:
            follow()
        except Exception:  # a reading fails open by itself: this is a bug, and it must not spread
            logger.exception(f"bridge: flow {flow_id}: the work after the reply failed")

    def _begin_deferred(self) -> None:
        """Every work still waiting for its reply, begun now (in the order they came): on the
        loop each is done when this returns, off it each is in ``readings``."""
        while self.deferred:
            self._begin(next(iter(self.deferred)))

    def _where(self, work: Work[Any], forwarded: bool) -> bool | None:
        """Whether to read here (else away); None: that failed, and the failure is handled."""
        try:
            return work.size < OFFLOAD_BYTES or work.fresh() < OFFLOAD_BYTES
        except Exception as e:
            self._finish(work, self._failed(work, e), forwarded)
            return None

    def _here(self, work: Work[Any], forwarded: bool) -> Awaitable[None] | None:
        if self._read_here(work, forwarded):
            return None
        if not forwarded:  # it needs the whole body after all: off the loop, awaited
            return self._away(work, forwarded=False)
        self._meanwhile(work, asyncio.get_running_loop())  # after forwarding: on the loop (_start)
        return None

    def _read_here(self, work: Work[Any], forwarded: bool) -> bool:
        """Read on the loop; False when that is not enough (the whole body must go away)."""
        try:
            result = work.here(work.size < OFFLOAD_BYTES)
        except Exception as e:
            result = self._failed(work, e)
        if result is None:
            return False
        self._finish(work, result, forwarded)
        return True

    async def _away(self, work: Work[Any], forwarded: bool) -> None:
        try:
            result = await work.away(self)
        except Exception as e:
            result = self._failed(work, e)
        self._finish(work, result, forwarded)

    def _follow(self, work: Work[Any], loop: asyncio.AbstractEventLoop) -> None:
        """The reading of a request that has gone: where to read it is decided now too (for a
        large history, ``fresh`` compares it with the memo's: the request did not wait for that)."""
        here = self._where(work, forwarded=True)
        if here:
            self._here(work, forwarded=True)
        elif here is not None:
            self._meanwhile(work, loop, list(self.readings.values()))

    def _meanwhile(
        self, work: Work[Any], loop: asyncio.AbstractEventLoop, earlier: Sequence[asyncio.Future[None]] = ()
    ) -> None:
        """Read off the loop after the request went on, kept in ``readings`` until done. A body
        bound away while ``earlier`` readings are in flight waits for them, then is placed again:
        the next turn of a conversation whose last reading has not ended (a headless reply goes on
        before it) then finds its memo entry, instead of a second full reading of the history
        beside the first (the worker takes one job at a time anyway)."""
        key = work.flow.id

        async def read() -> None:
            try:
                if earlier:
                    await asyncio.wait(earlier)
                    here = self._where(work, forwarded=True)
                    if here is None or (here and self._read_here(work, forwarded=True)):
                        return
                await self._away(work, forwarded=True)
            finally:
                del self.readings[key]

        self.readings[key] = loop.create_task(read())

    def _finish(self, work: Work[R], result: R, forwarded: bool) -> None:
        work.decided(result)
        try:
            work.apply()
        except Exception as e:  # the request or frame is unchanged (Work.apply)
            work.decided(self._failed(work, e))
            work.apply()
        if not forwarded and deferrable(work.flow):
            if work.after_reply:  # the rest of a split reading and the verdict: after the reply
                self.deferred[work.flow.id] = work.account
            else:
                after_forward(work.account)
        else:
            work.account()

    @staticmethod
    def _failed(work: Work[R], e: Exception) -> R:
        """Fail open: the traceback logged (call it from an ``except`` block) and the work's ``failed`` result."""
        logger.exception(f"bridge: {work.where}: rewrite failed, sending the original {work.unit}")
        # mutation: chat-fail-closed
        return work.failed(e)
