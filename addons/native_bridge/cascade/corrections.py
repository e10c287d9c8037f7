"""Corrections of the gateway's steps, and nothing else (truth rule 10).

Each rule changes or drops a step only where the step's own observation text, or
an observation of the chat hop (:class:`Evidence`), says so. No step is added,
unknown fields survive (the editors in :mod:`.steps` copy every byte they are not
asked to change). Every step whose body we know is read, whatever its status (issue
19): a result it carries is judged as a DONE step's is (the exit code is the
command's outcome, whatever the step's state; one copy of the output; a result the
kind cannot state), in run_command and command_status bodies alike; only "never
observed" needs the claim of completion (DONE). The status itself is left as sent:
it is the step's state in the language server's own trajectory (a RUNNING step
awaits its command_status or an interaction), which no evidence of ours observes. A
step's ``type`` that does not name its body, by the official schema, gets the
body's type, whatever the status (``types="official"``, the default; ``"keep"``
leaves every type as sent); a body we do not know keeps its type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..core.exitstatus import parse_exit_status
from ..core.history import ToolResult
from ..core.kinds import signals_failure
from ..evidence import Observation
from .steps import (
    CS_EXIT_CODE,
    CS_STDOUT,
    EXIT_CODE,
    OFFICIAL_TYPE,
    RESULT_FIELDS,
    STDOUT,
    TYPE,
    StepView,
    command_status,
    edit,
    result_text,
    rewrap,
    run_command,
    run_command_id,
    subject,
    type_name,
    view,
)
from .wire import Field, WireError, varint_field

Action = Literal["dropped", "exit_code", "stdout_deduplicated", "type", "already_delivered"]
Types = Literal["official", "keep"]
TYPES: tuple[Types, ...] = ("official", "keep")


class Evidence(Protocol):
    def lookup(self, kind: str, command_or_path: str, output: str) -> Observation | None:
        """The observation of exactly one matching result, or None (none, or several)."""
        ...


Lookup = Callable[[str, str, str], Observation | None]


@dataclass(frozen=True, slots=True)
class StepEdit:
    """A step and an edit of its body, made only when asked for: the state between two
    changes of one step is for records and views, never for the wire (picklable, so the
    record worker can make it)."""

    step: bytes
    drop: frozenset[int]
    varint: tuple[int, int] | None

    def made(self) -> bytes:
        v = view(self.step)
        assert v.body is not None
        return rewrap(self.step, v, edit(v.body, v.body_fields, drop=self.drop, varint=self.varint))


@dataclass(frozen=True, slots=True)
class Change:
    index: int  # position of the step in the list that was corrected
    action: Action
    reason: str
    step_before: bytes | StepEdit
    step_after: bytes | StepEdit | None  # None: the step was removed

    @property
    def before(self) -> bytes:
        b = self.step_before
        return b.made() if isinstance(b, StepEdit) else b

    @property
    def after(self) -> bytes | None:
        a = self.step_after
        return a.made() if isinstance(a, StepEdit) else a


@dataclass(frozen=True, slots=True)
class Corrected:
    steps: list[bytes]
    changes: list[Change] = field(default_factory=list)


def correct(
    steps: Sequence[bytes],
    evidence: Evidence | Lookup | None = None,
    *,
    client: str | None = None,
    first_index: int = 0,
    types: Types = "official",
) -> Corrected:
    """The steps with the gateway's false claims corrected or removed.

    ``client``: the client whose own frames count in a step's output when no observation
    names one (a setting of the caller; None: the planner hop cannot tell the client, so the
    text is read as for a client we cannot name, truth rule 3). Raises
    :class:`~.wire.WireError` when a step does not parse. Deterministic and idempotent:
    correcting the output again changes nothing. ``first_index``: the index of ``steps[0]``
    in the request (changes and errors name steps by it). ``types``: ``"official"`` gives a
    step whose type does not name its body the body's official type; ``"keep"`` leaves types
    as sent."""
    if types not in TYPES:
        raise ValueError(f"types: {types!r} is not one of {', '.join(TYPES)}")
    lookup = _lookup_of(evidence)
    out: list[bytes] = []
    changes: list[Change] = []
    views = []
    for i, step in enumerate(steps, first_index):
        try:
            views.append(view(step))
        except WireError as e:
            raise WireError(f"additional_steps[{i}] is not a step: {e}") from None
    command_lines = _command_lines(views)
    for i, (step, v) in enumerate(zip(steps, views, strict=True), first_index):
        if v.kind is None:
            out.append(step)
            continue
        new: bytes | None = step
        found: list[Change] = []
        fix = _SHELL_FIXES.get(v.kind)
        if fix is not None:
            new, found = fix(i, step, v, lookup, client, command_lines)
        else:
            new, found = _other(i, step, v, lookup, client)
        # mutation: planner-type-kept
        if new is not None and types == "official":
            new, typed = _typed(i, new, v if new is step else view(new))
            found += typed
        changes += found
        if new is not None:
            out.append(new)
    return Corrected(out, changes)


def _command_lines(views: Sequence[StepView]) -> dict[str, str]:
    """command_id -> command line, from the run_command steps that state both: how a
    command_status step (which names its command by id only) finds the command it reports.
    Read only when the request holds a command_status step (most gateways send none)."""
    out: dict[str, str] = {}
    if not any(v.kind == "command_status" for v in views):
        return out
    for v in views:
        if v.kind == "run_command" and v.body is not None:
            command_id = run_command_id(v.body, v.body_fields)
            if command_id:
                out[command_id] = run_command(v.body, v.body_fields).command_line or ""
    return out


def _lookup_of(evidence: Evidence | Lookup | None) -> Lookup | None:
    if evidence is None:
        return None
    return evidence.lookup if hasattr(evidence, "lookup") else evidence


def _dropped(i: int, step: bytes, reason: str) -> tuple[None, list[Change]]:
    return None, [Change(i, "dropped", reason, step, None)]


# ---- run_command --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Claim:
    action: Literal["set", "absent", "drop"]
    code: int | None
    why: str
    running: bool = False  # "drop": the command was still running (not: it never ran)


def _exit_claim(text: str, obs: Observation | None, client: str | None) -> _Claim:
    """What the exit code truly is. The gateway's own value is never evidence."""
    failed = obs.failed if obs is not None else None
    client = getattr(obs, "client", None) or client
    by = f" (client: {client})" if client else ""
    # mutation: planner-observed-exit-code-ignored
    if obs is not None and obs.exit_code is not None:
        # mutation: planner-conflict-claims
        if failed is not None and failed != (obs.exit_code != 0):
            why = f"conflicting signals: the client says failed={failed} and exit code {obs.exit_code}{by}, so no claim"
            return _Claim("absent", None, why)
        return _Claim("set", obs.exit_code, f"the exit code the chat hop observed{by}")
    # Without a client, the text is read as every known client would read it (truth rule 3).
    status = parse_exit_status(text, failed, client or None)
    if status.verdict in ("not_run", "running"):
        what = "never ran" if status.verdict == "not_run" else "was still running"
        why = f"the command {what} ({status.source}{by}): no outcome to state"
        return _Claim("drop", None, why, running=status.verdict == "running")
    if status.verdict == "conflict" or (failed and status.code == 0):
        why = f"conflicting signals: the client flagged a failure, the output says success ({status.source}){by}"
        return _Claim("absent", None, why + ", so no claim")
    if status.code is None:
        if status.verdict == "declined":
            return _Claim("absent", None, f"a stated number is declined ({status.source}){by}: absent, never 1")
        said = f"nothing in {client}'s own words" if client else "no known frame (client unknown)"
        return _Claim("absent", None, f"{said} states the exit status; absent is not 0")
    flag = " and the client's error flag" if failed else ""
    return _Claim("set", status.code, f"{status.verdict} per {status.source!r}{flag}{by}")


def _run_command(
    i: int, step: bytes, v: StepView, lookup: Lookup | None, client: str | None, command_lines: Mapping[str, str]
) -> tuple[bytes | None, list[Change]]:
    body = v.body
    assert body is not None
    rc = run_command(body, v.body_fields)
    # The exit code alone is no observation: the gateway writes 0 without one, and
    # after correction it may be gone, which must not turn the step unobserved.
    # mutation: planner-unobserved-kept
    if rc.stdout is None and rc.stderr is None and not rc.combined_output:
        # mutation: planner-running-step-dropped
        if not v.done:  # a step not over yet (RUNNING, PENDING, ...) claims no outcome
            return step, []
        return _dropped(
            i,
            step,
            "never observed: a DONE run_command without output (only its inputs"
            + (f" and the gateway's exit_code {rc.exit_code}" if rc.exit_code is not None else "")
            + "): the call never got a result",
        )
    text = rc.full if rc.combined_output else rc.stdout if rc.stdout is not None else rc.stderr
    assert text is not None
    # mutation: planner-stdout-duplicate-kept
    twice = STDOUT if rc.combined_output and rc.stdout is not None and rc.stdout == rc.full else None
    shell = _Shell(EXIT_CODE, rc.exit_code, twice, "stdout repeats combined_output.full")
    return _outcome(i, step, v, shell, text, rc.command_line or "", lookup, client)


def _command_status(
    i: int, step: bytes, v: StepView, lookup: Lookup | None, client: str | None, command_lines: Mapping[str, str]
) -> tuple[bytes | None, list[Change]]:
    """A command_status body (official CortexStepCommandStatus): the output and exit code of the
    command its command_id names, as a gateway reports them. Its copies of the output and its
    exit code are corrected as a run_command's are; the observation of the chat hop is matched
    through the run_command step of the same request that has the same command_id."""
    body = v.body
    assert body is not None
    cs = command_status(body, v.body_fields)
    text = next((t for t in (cs.combined, cs.stdout, cs.delta, cs.stderr) if t is not None), None)
    if text is None:  # no output: it states no outcome of its own
        return step, []
    twice = CS_STDOUT if cs.combined is not None and cs.stdout is not None and cs.stdout == cs.combined else None
    line = command_lines.get(cs.command_id) if cs.command_id else None
    shell = _Shell(CS_EXIT_CODE, cs.exit_code, twice, "stdout repeats combined")
    return _outcome(i, step, v, shell, text, line, lookup, client)


@dataclass(frozen=True, slots=True)
class _Shell:
    """Where a shell body keeps its outcome: its exit_code field (and the value sent there), and
    its copy of the output that repeats the combined one (None: no such copy)."""

    exit_field: int
    exit_code: int | None  # the body's exit code as the gateway sent it
    twice: int | None
    twice_why: str


def _outcome(
    i: int,
    step: bytes,
    v: StepView,
    shell: _Shell,
    text: str,
    subject: str | None,
    lookup: Lookup | None,
    client: str | None,
) -> tuple[bytes | None, list[Change]]:
    """The shell body's exit code as the evidence states it and one copy of its output, in a
    step of any status: the exit code is the command's outcome, whatever the step's state."""
    body = v.body
    assert body is not None
    # mutation: planner-evidence-ignored
    obs = lookup("run_command", subject, text) if lookup and subject is not None else None
    # mutation: planner-running-step-unjudged
    claim = _exit_claim(text, obs, client)
    if claim.action == "drop":
        if not (claim.running and not v.done):
            return _dropped(i, step, claim.why)
        # Still running, and the step says it is not over: true; only an exit code would claim an end.
        claim = _Claim("absent", None, f"{claim.why}; the step is {v.status_name}, kept without an exit code")
    varint = (shell.exit_field, claim.code) if claim.code is not None else None
    drop = frozenset() if varint else frozenset({shell.exit_field})
    if shell.twice is not None:
        drop |= {shell.twice}
    # mutation: planner-exit-code-kept
    fixed = rewrap(step, v, edit(body, v.body_fields, drop=drop, varint=varint))
    changes: list[Change] = []
    # The exit code's change ends where the deduplication starts: that step is made only
    # when a record or view asks for it.
    twice = shell.twice is not None
    middle: bytes | StepEdit = StepEdit(step, drop - {shell.twice}, varint) if twice else fixed
    if _exit_code_edited(body, v.body_fields, claim.code, shell.exit_field):
        was = "absent" if shell.exit_code is None else str(shell.exit_code)
        now = "absent" if claim.code is None else str(claim.code)
        changes.append(Change(i, "exit_code", f"exit_code {was} -> {now}: {claim.why}", step, middle))
    else:
        middle = step
    if twice:
        changes.append(Change(i, "stdout_deduplicated", f"{shell.twice_why}: one copy of the output", middle, fixed))
    return fixed, changes


def _exit_code_edited(body: bytes, body_fields: Sequence[Field], code: int | None, number: int = EXIT_CODE) -> bool:
    """Whether setting the exit code field ``number`` to ``code`` (None: absent) changes the body's bytes."""
    found = [f for f in body_fields if f.number == number]
    if code is None:
        return bool(found)
    return len(found) != 1 or body[found[0].start : found[0].end] != varint_field(number, code)


# ---- the other kinds ----------------------------------------------------------------


def _other(
    i: int, step: bytes, v: StepView, lookup: Lookup | None, client: str | None
) -> tuple[bytes | None, list[Change]]:
    kind = v.kind
    assert kind is not None
    if kind not in RESULT_FIELDS or kind == "grep_search":  # fields not known: nothing to judge
        return step, []
    text = result_text(v)
    if RESULT_FIELDS[kind] and text is None:
        if not v.done:  # not over yet: it claims no result
            return step, []
        return _dropped(i, step, f"never observed: a DONE {kind} without its result field: the call never got a result")
    obs = lookup(kind, subject(v), text or "") if lookup else None
    who = getattr(obs, "client", None) or client
    by = f" (client: {who})" if who else ""
    if obs is not None and obs.failed:
        return _dropped(i, step, f"the chat hop observed that this {kind} failed{by}; the step has no field to say so")
    # mutation: planner-non-shell-failure-kept
    if text is not None and signals_failure(ToolResult(pos=0, turn=0, call_id=None, text=text)):
        if obs is not None and obs.failed is False:
            return _dropped(
                i,
                step,
                f"conflicting signals: the result is in failure words but the client did not flag "
                f"it{by}; a {kind} step cannot state either, so no claim",
            )
        return _dropped(
            i, step, f"the {kind} result is a failure in the client's words; the step has no field to say so"
        )
    return step, []


# ---- the type names the body ---------------------------------------------------------


def _typed(i: int, step: bytes, v: StepView) -> tuple[bytes, list[Change]]:
    """``step`` (whose view is ``v``) with the type that names its body
    by the official schema: a gateway's type is a claim about the body, and the body is what the
    step holds (one gateway types run_command 28, officially COMMAND_STATUS; another types
    every step 8, officially VIEW_FILE). Only the type field changes, in its place."""
    assert v.body_field is not None and v.kind is not None
    official = OFFICIAL_TYPE.get(v.body_field)
    if official is None or v.type == official:
        return step, []
    if v.type is None:
        said = "absent (UNSPECIFIED)"
    elif v.type == 0:
        said = "0 (UNSPECIFIED)"
    else:
        said = f"{v.type} ({type_name(v.type)})"
    reason = (
        f"type {said} does not name the step's body, {v.kind} (field {v.body_field}): "
        f"the official type of that body is {official} ({type_name(official)})"
    )
    new = edit(step, v.fields, varint=(TYPE, official))
    return new, [Change(i, "type", reason, step, new)]


# mutation: planner-command-status-unjudged
_SHELL_FIXES = {"run_command": _run_command, "command_status": _command_status}
