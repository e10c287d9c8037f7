"""One chat request's bridging as plain data, on the event loop or in the worker process.

:func:`bridge` is the whole job, pure: bytes, config and the caller's memo in, an
:class:`Outcome` out, with the observations for the planner hop already reduced to
digests. :func:`resume` is the same job when the body goes on from the memo and only its
new part needs reading (a large body then stays on the loop: runtime/dispatch.py). In
observe mode without records the worker keeps nothing: it hands back the light memo entry
it made (memo/light.py: a few bytes per call, no body, no parsed history) and the proxy's own
memo takes it with the body it already holds, so the next turn of that conversation is
read in place, its new part only, however large the history. Rewriting or recording, the
worker keeps full entries in its own memo and resumes a large conversation there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import pipeline
from ..core.memo.entry import Entry
from ..core.memo.store import Memo
from ..core.observe import observations
from ..core.pipeline import Config, Reading, Rewrite, rewrite
from ..evidence import Observation
from ..runtime.worker import by_reference


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
        """Neither a body written nor steps recorded: a light memo serves it (memo/light.py)."""
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
    # Where each call and result went (core.builder.Placement): the record's renderer writes them
    # as JSON, after the turn (records/writer.py), not the turn itself.
    accounting: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    turn: dict[str, Any] | None = None  # a resumed reading's new steps (Rewrite.turn): the log line's
    entry: Entry | None = None  # the light memo entry a worker made (Memo.adopt gives it its body)
    delta: Any = None  # from the worker: the body as pieces of one the proxy holds (runtime/continued.py)
    # What :func:`sent_first` left for once the request has gone (later.after_forward): the
    # observations, the record's fields and the memo's new entry (never set on an Outcome that
    # crosses processes).
    rest: Callable[[], None] | None = None

    __reduce__ = by_reference  # the new body crosses back without a copy


def observed(result: Rewrite | Reading, tool_kinds: Mapping[str, str]) -> list[Observation]:
    """The planner hop's observations of the pairs this rewrite decided (the rest were handed over before)."""
    history = result.fresh if result.fresh is not None else result.history  # type: ignore[union-attr]
    if history is None:
        return []
    return observations(history, tool_kinds, result.decisions if history is result.fresh else None)


def outcome(
    result: Rewrite, tool_kinds: Mapping[str, str], record: bool, seen: list[Observation] | None = None
) -> Outcome:
    """The Outcome of ``result``; ``seen``: its observations, made already."""
    if seen is None:
        seen = observed(result, tool_kinds)
    out = Outcome(result.status, result.reason, result.dialect, result.body, result.summary(), seen)
    out.turn = result.turn()
    if record:
        _record_fields(out, result)
    return out


def _record_fields(out: Outcome, result: Rewrite) -> None:
    """What only a record reads: the steps, the accounting (its placements as they are: each made
    JSON by the record's renderer, off the turn: every turn's accounting holds the whole history),
    the notes."""
    out.steps = result.steps
    out.accounting = list(result.plan.accounting) if result.plan else []
    out.notes = result.notes


def bridge(job: Job, memo: Memo | None, rewrite: Callable[..., Rewrite] = rewrite) -> Outcome:
    """Rewrite (or only read, when not ``job.emit``) one body; raises only on a bug (the caller fails open)."""
    result = rewrite(job.raw, job.config, job.path, memo, job.hint, emit=job.emit)
    return outcome(result, job.config.tool_kinds, job.record)


def sent_first(job: Job, memo: Memo, whole: bool, rewrite: Callable[..., Rewrite] = rewrite) -> Outcome | None:
    """:func:`bridge` (``whole``) or :func:`resume` for a request that goes upstream before the
    rest is done (rewrite mode, the state in this process): the Outcome's verdict and body now;
    its observations, the record's fields and the memo's new entry when its ``rest()`` is called."""
    if whole:
        done = rewrite(job.raw, job.config, job.path, memo, job.hint, emit=job.emit, later=True)
    else:
        done = pipeline.resume(job.raw, job.config, job.path, memo, job.hint, emit=job.emit, later=True)
        if done is None:
            return None
    out = outcome(done, job.config.tool_kinds, False, seen=[])  # the observations and record fields: rest()

    def rest() -> None:
        if done.remember is not None:
            done.remember()
        out.observations = observed(done, job.config.tool_kinds)
        if job.record:
            _record_fields(out, done)

    out.rest = rest
    return out


def resume(job: Job, memo: Memo) -> Outcome | None:
    """:func:`bridge` when the body goes on from ``memo`` and only its new part needs reading
    (pipeline.resume); None: it needs a full read (the worker's)."""
    result = pipeline.resume(job.raw, job.config, job.path, memo, job.hint, emit=job.emit)
    return None if result is None else outcome(result, job.config.tool_kinds, job.record)
