"""Large bodies read in a worker process, off the event loop (the dispatch sends them: dispatch.py).

mitmproxy runs every addon on one event loop: while a hook runs, no other connection
moves. A resumed conversation costs a fraction of a millisecond, but the first sight of a
large history costs a full parse, decide and write, and orjson holds the GIL for all of
it (about 0.3 s to parse 32 MB). So a body below ``dispatch.OFFLOAD_BYTES`` is read inline
(the common case pays nothing extra) and a larger one in a worker process (:class:`Offloader`,
the record renderer's plain child process, running a :class:`Reader`), awaited from an async hook while the loop serves
everyone else. A job names its own work (``job.run(memo)``), so
this module imports no hop's code.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ..core.memo.store import Memo
from .continued import RESEND, Continued, Held, Resend, body_delta, rebuild
from .worker import WorkerProcess

# Rewriting or recording, the worker remembers conversations up to this size (core/memo/): a resumed
# turn then costs only its new part. A full entry holds about 3.5x its body (body and parsed
# items); a larger history is bridged afresh every turn instead, and its memory freed after each.
WORKER_MEMO_MAX_BODY = 32 * 1024 * 1024


# ---- the worker process ----------------------------------------------------------------------


class Reader:
    """The worker's function (worker.serve makes one and calls it): one job in, what its ``run``
    gives out (a chat request's Outcome, chat_hop/jobs.py; a Responses-over-WebSocket frame's,
    websocket.FrameJob's, what websocket.frame_work gives). It holds what the worker process
    keeps between jobs (the fallback's one, in the calling thread, the same in the proxy): its
    memo, the bodies the proxy sent by token (continued.py) and the rewritten body
    (splice.Written) it gave for each."""

    def __init__(self) -> None:
        self.memo: Memo | None = None
        self.held: dict[int, bytes] = {}
        self.written: dict[int, Any] = {}

    def __call__(self, job: Any) -> Any:
        if type(job) is Continued:  # a body that goes on from one held here: joined, then this job
            return self._continued(job)
        if getattr(job, "light", False):  # the proxy keeps the conversation: hand its entry back
            memo = Memo(light=True)
            result = job.run(memo)
            result.entry = memo.only()
            return result  # what was parsed is freed, and the heap trimmed, once the reply is out (worker.serve)
        if self.memo is None:
            self.memo = Memo()
        return job.run(self.memo if keeps(job) else None)

    def forget(self) -> None:
        """The bodies held and written here let go (the worker is gone: jobs come whole from now on)."""
        self.held.clear()
        self.written.clear()

    def _continued(self, job: Continued) -> Any:
        """The reader for a body sent as its new part: its rewritten body answered as pieces of
        the one written for its base, when the worker wrote that one."""
        old = self.written.get(job.base) if job.base is not None else None
        reply = rebuild(job, self.held, self)
        for token in job.drop:
            self.written.pop(token, None)
        if reply is RESEND:
            return reply
        body = getattr(reply, "body", None)
        entry = self.memo.newest() if self.memo is not None and body is not None else None
        written = entry.written if entry is not None else None
        if written is None or written.body is not body or job.token in job.drop:
            return reply
        self.written[job.token] = written
        pieces = body_delta(old, written) if old is not None else None
        if pieces is not None:
            reply.body, reply.delta = None, (job.base, len(written.body), pieces)
        return reply


def keeps(job: Any) -> bool:
    """Whether the worker's memo keeps ``job``'s conversation, so that its next turn comes back
    here and reuses the heap this one leaves (worker.serve hands that back only when idle)."""
    if type(job) is Continued:  # only such jobs are sent so
        return True
    return not getattr(job, "light", False) and len(job.raw) <= WORKER_MEMO_MAX_BODY


class Offloader:
    """Reads large bodies in one worker process, off the event loop.

    If the worker cannot run, :class:`.worker.WorkerProcess` does the job in the calling
    thread instead (with a memo of this process), which still keeps the loop free of all
    but orjson's own GIL-holding calls."""

    def __init__(self) -> None:
        self._worker = WorkerProcess(Reader)
        # The bodies of the conversations the worker's memo keeps, sent once: a later turn sends
        # only what follows the part the worker holds (continued.py).
        self.held = Held()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._worker.pid

    async def run(self, job: Any) -> Any:
        """What :class:`Reader` gives for ``job``, made in the worker while the loop runs on."""
        return await asyncio.to_thread(self._render, job)

    def _render(self, job: Any) -> Any:
        if not (self._worker.remote and keeps(job)):
            return self._worker.render(job)
        with self._lock:  # one job at a time, as the worker takes them: the held bodies agree
            shipped = self.held.ship(job)
            reply = self._worker.render(shipped)
            if type(reply) is Resend and self._worker.remote:  # the worker does not hold its base
                shipped = self.held.whole(shipped, job.raw)
                reply = self._worker.render(shipped)
            if not self._worker.remote:  # the worker is gone: jobs run here from now on, whole
                self.held.forget_all()
                self._worker.local.forget()  # what the fallback held in this process
                if type(reply) is Resend:
                    return self._worker.render(job)
            return self.held.receive(shipped, reply)

    def close(self) -> None:
        self._worker.close()
