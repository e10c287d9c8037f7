"""From a neutral history to steps, the pairs that stay messages, and the delta.

Correlation is by id only (truth rule 1); a step exists only for a correlated,
translatable, truthfully statable pair (rules 2 and 5); every call and result is
accounted for exactly once (rule 6); ``delta_start`` marks the pending round
(rule 7).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Literal

from .._proto import cortex_pb2
from .encoder import encode_step, step_doc
from .history import History, ToolCall, ToolResult
from .kinds import KINDS, Kind, Refusal
from .mapping import NotAShellCall, shape_of
from .rules.tool_names import DEFAULT_TOOL_KINDS

# Why an item stayed in the messages, machine-readable (the record's "code").
KeepCode = Literal[
    "no_id",  # the item carries no id, so nothing can be correlated
    "unobserved",  # a call with no result: it never ran as far as we know
    "orphan",  # a result no call carries the id of
    "ambiguous",  # duplicated id, or the result comes before its call
    "unmapped",  # the tool has no step kind
    "kind_off",  # the kind is mapped but not selected by bridge_kinds
    "untranslatable",  # arguments or result the step cannot state truthfully
    "validity",  # taking the pair out would leave the request invalid for its API (the writer pinned it)
]


@dataclass(slots=True)  # never changed once made; not frozen for speed (history.ToolCall)
class Placement:
    """Where one call or result of the input ended."""

    item: Literal["call", "result"]
    pos: int
    turn: int
    id: str | None
    name: str | None  # tool name (for a result: its call's, when known)
    step: int | None = None  # index into the steps, when it became one
    code: KeepCode | None = None
    reason: str | None = None
    mapped: str | None = None  # a call of a tool taken as a shell tool by its declared schema: why (mapping.py)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"item": self.item, "id": self.id, "name": self.name, "turn": self.turn}
        if self.step is not None:
            out["step"] = self.step
        else:
            out["kept"] = self.code
            out["reason"] = self.reason
        if self.mapped is not None:
            out["mapped"] = self.mapped
        return out


@dataclass(slots=True)
class _Decision:
    call: ToolCall
    result: ToolResult | None = None
    kind: str | None = None
    inputs: dict[str, Any] | None = None
    observed: dict[str, Any] | None = None
    code: KeepCode | None = None
    reason: str | None = None
    mapped: str | None = None  # the tool is a shell tool by its declared schema: why (mapping.py)


@dataclass(slots=True)  # never changed once made; not frozen for speed (history.ToolCall)
class Tally:
    """What a plan's summary counts, over its first ``steps`` steps and ``placed`` placements.

    A resumed conversation (memo/) carries the tally of everything before its cut, so its
    summary costs only the new part, and the old steps need not be kept (a light memo)."""

    steps: int = 0
    placed: int = 0
    failed: tuple[int, ...] = ()  # the exit codes other than 0 the steps state, in step order
    kept_by_code: tuple[tuple[str, int], ...] = ()  # sorted
    unobserved: int = 0  # calls kept as never observed

    @property
    def kept(self) -> int:
        """The placements kept as messages (the rest of ``placed`` are in steps)."""
        return sum(n for _, n in self.kept_by_code)

    def add(self, docs: list[dict[str, Any]], placements: list[Placement]) -> Tally:
        """This tally and the steps ``docs`` and ``placements`` after it."""
        failed = [c for c in map(exit_code, docs) if c not in (None, 0)]
        kept_by_code, unobserved = self.kept_by_code, self.unobserved
        new = [p for p in placements if p.step is None]
        if new:  # a resumed turn's pairs mostly all became steps: then nothing here changes
            kept = dict(kept_by_code)
            for p in new:
                assert p.code is not None, "a placement that is no step was kept with a code"
                kept[p.code] = kept.get(p.code, 0) + 1
                unobserved += p.item == "call" and p.code == "unobserved"
            kept_by_code = tuple(sorted(kept.items()))
        return Tally(
            self.steps + len(docs),
            self.placed + len(placements),
            self.failed + tuple(failed) if failed else self.failed,
            kept_by_code,
            unobserved,
        )


def exit_code(doc: dict[str, Any]) -> int | None:
    """The exit code a step states (run_command only)."""
    code = doc.get("runCommand", {}).get("exitCode")
    return code if isinstance(code, int) else None


# What a step is built from: encode_step's (kind, inputs, observed).
Source = tuple[Kind, dict[str, Any], dict[str, Any] | None]


@dataclass(slots=True)
class Plan:
    docs: list[dict[str, Any]]  # each step in proto3 JSON (what goes on the wire); treat as read-only
    step_calls: list[ToolCall]  # the call behind each step, same order
    accounting: list[Placement]  # one per call and result, in history order
    delta_start: int
    stepped_at: list[int] = field(default_factory=list)  # sorted pos of the calls and results now in steps
    # What each step was built from: the protobuf messages are made only when asked for.
    sources: list[Source] = field(default_factory=list, repr=False)
    _steps: list[cortex_pb2.CortexTrajectoryStep] | None = field(default=None, repr=False, compare=False)
    # The tally of docs[:tally.steps] and accounting[:tally.placed] (a resumed plan's), if any.
    tally: Tally | None = field(default=None, repr=False, compare=False)
    _stepped: frozenset[int] | None = field(default=None, repr=False, compare=False)

    @property
    def stepped(self) -> frozenset[int]:
        """``stepped_at`` as a set, made when asked for (a writer's; observe mode never asks: a
        light memo's resumed plan holds a light.Tail there, and this raises light.Gone)."""
        if self._stepped is None:
            self._stepped = frozenset(self.stepped_at)
        return self._stepped

    def counted(self) -> Tally:
        """The tally of the whole plan: only what the carried tally does not hold is counted."""
        base = self.tally or Tally()
        return base.add(self.docs[base.steps :], self.accounting[base.placed :])

    @property
    def steps(self) -> list[cortex_pb2.CortexTrajectoryStep]:
        """The steps as protobuf messages (built on first use; the wire form is ``docs``)."""
        if self._steps is None:
            self._steps = [encode_step(kind, inputs, observed) for kind, inputs, observed in self.sources]
        return self._steps

    @property
    def kept(self) -> list[Placement]:
        return [p for p in self.accounting if p.step is None]


def _pending_turn(history: History) -> int | None:
    """The first turn of the newest tool round, if nothing but its results follow it.

    A round is a calls turn and the ``more`` turns that go on its model response (each
    after a results turn). Histories come in history order (dialect readers append calls
    and results as they read, turns never go back), so only the tail is looked at."""
    turns = history.turns
    last = len(turns) - 1
    while last >= 0 and turns[last] not in ("calls", "more"):
        last -= 1
    if last < 0:
        return None
    for role in turns[last + 1 :]:
        if role != "results":
            return None
    while turns[last] == "more" and last >= 2 and turns[last - 1] == "results" and turns[last - 2] in ("calls", "more"):
        last -= 2
    ids = set()
    for c in reversed(history.calls):
        if c.turn < last:
            break
        ids.add(c.id)
    for r in reversed(history.results):
        if r.turn <= last:
            break
        if r.call_id not in ids:
            return None
    return last


# mutation: whole-history-resent
def delta_start(history: History, step_calls: list[ToolCall]) -> int:
    """Where the newest pending round's steps begin (truth rule 7); len(steps) when none is pending."""
    pending = _pending_turn(history)
    i = len(step_calls)
    if pending is None:
        return i
    while i and step_calls[i - 1].turn >= pending:  # step calls are in history order
        i -= 1
    return i


def decide(history: History, kinds: Collection[str], tool_kinds: Mapping[str, str]) -> list[_Decision]:
    """Each call's decision, in call order: a step of which kind, or why it stays a message."""
    # Counted by hand: a Counter costs more to make than a resumed turn's pair costs to count.
    call_ids: dict[str | None, int] = {}
    for c in history.calls:
        call_ids[c.id] = call_ids.get(c.id, 0) + 1
    result_ids: dict[str | None, int] = {}
    for r in history.results:
        result_ids[r.call_id] = result_ids.get(r.call_id, 0) + 1
    # mutation: correlate-by-position
    results = {r.call_id: r for r in history.results}
    decisions = []
    for call in history.calls:
        d = _Decision(call)
        decisions.append(d)
        if not call.id:
            d.code, d.reason = "no_id", "the call carries no id"
            continue
        n_calls, n_results = call_ids[call.id], result_ids.get(call.id, 0)
        if n_calls > 1:
            d.code, d.reason = "ambiguous", f"id {call.id!r} is carried by {n_calls} calls"
            continue
        # mutation: done-without-result
        if n_results == 0:
            d.code, d.reason = "unobserved", "no result: the call was never observed"
            continue
        # mutation: duplicate-result-last-wins
        if n_results > 1:
            d.code, d.reason = "ambiguous", f"id {call.id!r} is carried by {n_results} results"
            continue
        result = results[call.id]
        if result.placeholder:
            d.code, d.reason = "unobserved", f"the client's stand-in {result.text!r} for an output it never got"
            continue
        # mutation: result-before-call
        if result.pos < call.pos:
            d.code, d.reason = "ambiguous", "the result comes before its call"
            continue
        d.result = result
        kind = tool_kinds.get(call.name)
        if kind is None:
            d.code, d.reason = "unmapped", f"tool {call.name!r} maps to no step kind"
            continue
        arguments: Mapping[str, Any] | None = call.arguments
        shape = shape_of(tool_kinds, call.name)
        if shape is not None:  # a shell tool by its declared schema (mapping.py)
            d.mapped = shape.why
            try:
                arguments = shape.arguments(call.name, arguments)
            except NotAShellCall as e:  # code in another language: no command line is made of it
                d.code, d.reason = "unmapped", str(e)
                continue
        if kind not in kinds:
            d.code, d.reason = "kind_off", f"kind {kind} is not bridged (bridge_kinds)"
            continue
        try:
            d.inputs = KINDS[kind].inputs(arguments)
            d.observed = KINDS[kind].observe(result, d.inputs, history.client)
        except Refusal as e:
            d.code, d.reason = "untranslatable", str(e)
            continue
        d.kind = kind
    return decisions


def _kept(decisions: list[_Decision], keep: Mapping[int, str]) -> list[_Decision]:
    """``decisions`` with the step pairs that ``keep`` names kept back as messages (a decision
    is never changed once made: a kept one is a new one)."""
    out = []
    for d in decisions:
        result = d.result  # a step's decision has its result
        if d.kind is not None and result is not None and (d.call.pos in keep or result.pos in keep):
            why = keep.get(d.call.pos) or keep[result.pos]
            d = _Decision(d.call, d.result, None, d.inputs, d.observed, "validity", why, d.mapped)
        out.append(d)
    return out


def _result_placement(result: ToolResult, by_id: dict[str, _Decision], step_of: dict[int, int]) -> Placement:
    d = by_id.get(result.call_id) if result.call_id else None
    name = d.call.name if d else None
    if d and d.result is result and d.call.pos in step_of:
        return Placement("result", result.pos, result.turn, result.call_id, name, step=step_of[d.call.pos])
    code: KeepCode | None
    reason: str | None
    if not result.call_id:
        code, reason = "no_id", "the result carries no id"
    elif d is None:
        code, reason = "orphan", f"no call carries id {result.call_id!r}"
    else:
        code, reason = d.code, d.reason
    return Placement("result", result.pos, result.turn, result.call_id, name, code=code, reason=reason)


_POS = attrgetter("pos")


@dataclass(slots=True)
class Part:
    """The steps and placements of a history, or of a stretch of one (see memo/resume.py)."""

    docs: list[dict[str, Any]]
    sources: list[Source]
    step_calls: list[ToolCall]
    placements: list[Placement]  # sorted by pos
    stepped: list[int]  # sorted positions of the calls and results now in steps
    # The decisions behind it (assemble's own, never a joined part's): observe.py reuses them.
    decisions: list[_Decision] | None = field(default=None, repr=False, compare=False)
    tally: Tally | None = field(default=None, repr=False, compare=False)  # a joined part's: before its cut


def assemble(
    history: History,
    kinds: Collection[str],
    tool_kinds: Mapping[str, str],
    step_base: int = 0,
    keep: Mapping[int, str] | None = None,
    prior: list[_Decision] | None = None,
) -> Part:
    """Decide every pair and lay out steps and placements; step indices start at ``step_base``.

    ``keep``: positions (of a call or a result) whose pair stays in the messages, and why
    (the dialect writer's pins: taking the pair out would leave the request invalid).
    ``prior``: this history's decisions made before (settle.py's earlier round): only the
    kept pairs change, so nothing is read or parsed again."""
    decisions = decide(history, kinds, tool_kinds) if prior is None else prior
    if keep:
        decisions = _kept(decisions, keep)
    docs: list[dict[str, Any]] = []
    sources: list[Source] = []
    step_calls: list[ToolCall] = []
    step_of: dict[int, int] = {}
    for d in decisions:
        if d.kind is not None:
            step_of[d.call.pos] = step_base + len(docs)
            source = (KINDS[d.kind], d.inputs or {}, d.observed)
            docs.append(step_doc(*source))
            sources.append(source)
            step_calls.append(d.call)
    by_id: dict[str, _Decision] = {}
    for d in decisions:
        if d.call.id:
            by_id.setdefault(d.call.id, d)
    placements = [
        Placement(
            "call",
            d.call.pos,
            d.call.turn,
            d.call.id,
            d.call.name,
            step=step_of.get(d.call.pos),
            code=d.code,
            reason=d.reason,
            mapped=d.mapped,
        )
        for d in decisions
    ]
    placements += [_result_placement(r, by_id, step_of) for r in history.results]
    placements.sort(key=_POS)
    # mutation: orphan-dropped, unmapped-dropped
    stepped = [p.pos for p in placements if p.step is not None]
    return Part(docs, sources, step_calls, placements, stepped, decisions)


def build(
    history: History,
    kinds: Collection[str] = frozenset(KINDS),
    tool_kinds: Mapping[str, str] = DEFAULT_TOOL_KINDS,
) -> Plan:
    part = assemble(history, kinds, tool_kinds)
    delta = delta_start(history, part.step_calls)
    return Plan(part.docs, part.step_calls, part.placements, delta, part.stepped, part.sources)
