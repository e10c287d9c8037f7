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
digests. The worker keeps its own memo, so a conversation that stays large is resumed
there turn after turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.memo import Memo
from ..core.observe import observations
from ..core.pipeline import Config, Rewrite, rewrite
from .renderer import Renderer, by_reference
from .store import Observation, call_key, match_key

# Bodies at least this large (decoded) are bridged in the worker process. Below it even a
# first sight stays well under 20 ms on the loop (about 5 ms for 200 KB on a slow core).
OFFLOAD_BYTES = 512 * 1024
# The worker remembers conversations up to this size (memo.py): a resumed turn then costs only its
# new part. A larger history would stay in memory at about 3.5x its size (body and parsed items);
# it is bridged afresh every turn instead, off the loop, and its memory is freed after each.
WORKER_MEMO_MAX_BODY = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Job:
    raw: bytes
    config: Config
    path: str | None
    hint: str | None  # the User-Agent
    emit: bool  # rewrite mode: write the new body; observe mode: do not
    record: bool  # records are on: keep what a record needs

    __reduce__ = by_reference  # the body crosses to the worker without a copy

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


# ---- the worker process ----------------------------------------------------------------------

_WORKER_MEMO: Memo | None = None  # the worker process's own (or the fallback's, in the calling thread)


def work(job: Any) -> Any:
    """The worker's function (renderer.serve calls it): one job in, what its ``run`` gives out
    (a :class:`Job`'s Outcome; a Responses-over-WebSocket frame's, websocket.FrameJob's, what
    websocket.frame_work gives). The job names its work, so this module imports no hop's code."""
    global _WORKER_MEMO
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
