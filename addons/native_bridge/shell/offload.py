"""One chat request's bridging as plain data, on the event loop or in a worker process.

mitmproxy runs every addon on one event loop: while a hook runs, no other connection
moves. A resumed conversation costs a fraction of a millisecond, but the first sight of a
large history costs a full parse, decide and write, and orjson holds the GIL for all of
it (about 0.3 s to parse 32 MB). So the chat hop bridges a body below
``OFFLOAD_BYTES`` inline (the common case pays nothing extra) and hands a larger one to
a worker process (:class:`Offloader`, the record renderer's plain child process), awaiting
it from an async hook while the loop serves everyone else.

:func:`bridge` is the whole job, pure: bytes, config and the caller's memo in, an
:class:`Outcome` out, with the observations for the planner hop already reduced to
digests. In observe mode without records the worker keeps nothing: it hands back the
light memo entry it made (memo.py: a few bytes per call, no body, no parsed history) and the
proxy's own memo takes it with the body it already holds, so the next turn of that
conversation is read in place, its new part only (:func:`resume`), however large the
history. Rewriting or recording, the worker keeps full entries in its own memo and resumes
a large conversation there.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import pipeline
from ..core.memo import Entry, Memo
from ..core.observe import observations
from ..core.pipeline import Config, Rewrite, rewrite
from .renderer import Renderer, by_reference
from .store import Observation, call_key, match_key

# Bodies at least this large (decoded) are bridged in the worker process. Below it even a
# first sight stays well under 20 ms on the loop (about 5 ms for 200 KB on a slow core).
OFFLOAD_BYTES = 512 * 1024
# Rewriting or recording, the worker remembers conversations up to this size (memo.py): a resumed
# turn then costs only its new part. A full entry holds about 3.5x its body (body and parsed
# items); a larger history is bridged afresh every turn instead, and its memory freed after each.
WORKER_MEMO_MAX_BODY = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Job:
    raw: bytes
    config: Config
    path: str | None
    hint: str | None  # the User-Agent
    emit: bool  # rewrite mode: write the new body; observe mode: do not
    record: bool  # records are on: keep what a record needs

    __reduce__ = by_reference  # the body crosses to the worker without a copy

    @property
    def light(self) -> bool:
        """Neither a body written nor steps recorded: a light memo serves it (memo.py)."""
        return not self.emit and not self.record

    def run(self, memo: Memo | None) -> Outcome:
        """The worker's part (see :func:`work`)."""
        return bridge(self, memo)


@dataclass(slots=True)
class Outcome:
    """What the shell needs of a rewrite: plain data (it crosses a process boundary)."""

    status: str
    reason: str
    dialect: str | None = None
    body: bytes | None = None
    summary: dict[str, Any] = field(default_factory=lambda: {"steps": 0})
    observations: list[Observation] = field(default_factory=list)
    # for records only (Job.record):
    steps: list[dict[str, Any]] = field(default_factory=list)
    accounting: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    entry: Entry | None = None  # the light memo entry a worker made (Memo.adopt gives it its body)

    __reduce__ = by_reference  # the new body crosses back without a copy


def observed(result: Rewrite, tool_kinds: Mapping[str, str]) -> list[Observation]:
    """The planner hop's observations of the pairs this rewrite decided (the rest were handed over before)."""
    history = result.fresh if result.fresh is not None else result.history
    if history is None:
        return []
    client = history.client
    return [
        Observation(match_key(o.kind, o.subject, o.output), call_key("", o.call_id), o.exit_code, o.failed, client)
        for o in observations(history, tool_kinds, result.decisions if history is result.fresh else None)
    ]


def outcome(result: Rewrite, tool_kinds: Mapping[str, str], record: bool) -> Outcome:
    seen = observed(result, tool_kinds)
    out = Outcome(result.status, result.reason, result.dialect, result.body, result.summary(), seen)
    if record:
        out.steps = result.steps
        out.accounting = [p.to_json() for p in result.plan.accounting] if result.plan else []
        out.notes = result.notes
    return out


def bridge(job: Job, memo: Memo | None, rewrite: Callable[..., Rewrite] = rewrite) -> Outcome:
    """Rewrite (or only read, when not ``job.emit``) one body; raises only on a bug (the caller fails open)."""
    result = rewrite(job.raw, job.config, job.path, memo, job.hint, emit=job.emit)
    return outcome(result, job.config.tool_kinds, job.record)


def resume(job: Job, memo: Memo) -> Outcome | None:
    """:func:`bridge` when the body goes on from ``memo`` and only its new part needs reading
    (pipeline.resume); None: it needs a full read (the worker's)."""
    result = pipeline.resume(job.raw, job.config, job.path, memo, job.hint, emit=job.emit)
    return None if result is None else outcome(result, job.config.tool_kinds, job.record)


# ---- the worker process ----------------------------------------------------------------------

_WORKER_MEMO: Memo | None = None  # the worker process's own (or the fallback's, in the calling thread)


def work(job: Any) -> Any:
    """The worker's function (renderer.serve calls it): one job in, what its ``run`` gives out
    (a :class:`Job`'s Outcome; a Responses-over-WebSocket frame's, websocket.FrameJob's, what
    websocket.frame_work gives). The job names its work, so this module imports no hop's code."""
    global _WORKER_MEMO
    if getattr(job, "light", False):  # the proxy keeps the conversation: hand its entry back
        memo = Memo(light=True)
        result = job.run(memo)
        result.entry = memo.only()
        del memo
        _trim()
        return result
    if _WORKER_MEMO is None:
        _WORKER_MEMO = Memo()
    kept = len(job.raw) <= WORKER_MEMO_MAX_BODY
    memo = _WORKER_MEMO if kept else None
    result = job.run(memo)
    if not kept:
        _trim()  # the history's strings were malloc'd: hand the freed heap back to the system
    return result


def _trim() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)


class Offloader:
    """Bridges large bodies in one worker process, off the event loop.

    If the worker cannot run, :class:`.renderer.Renderer` does the job in the calling
    thread instead (with a memo of this process), which still keeps the loop free of all
    but orjson's own GIL-holding calls."""

    def __init__(self) -> None:
        self._worker = Renderer(work)

    @property
    def pid(self) -> int | None:
        return self._worker.pid

    async def bridge(self, job: Job) -> Outcome:
        return await self.run(job)

    async def run(self, job: Any) -> Any:
        """What :func:`work` gives for ``job``, made in the worker while the loop runs on."""
        return await asyncio.to_thread(self._worker.render, job)

    def close(self) -> None:
        self._worker.close()
