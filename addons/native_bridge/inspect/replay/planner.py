"""Re-checking planner-hop flows and records with today's corrections (scripts/replay_check.py).

A planner-hop flow or record holds the gateway's body (the flow's backup, or the record's
``planner.body_hex`` with Metadata's credentials replaced; ``native.body_hex`` in a record
written before that key was renamed), what went upstream, and the changes made. :func:`recheck`
runs :func:`...cascade.correct.correct_request` on the original body again under the same
conditions and lists every difference:

- the call as it was (``method``: a send's steps are field 9, a replay's field 2, an
  interaction has none; a record from before the method was kept is a send);
- the ledger as it was: the recorded ``held`` (else ``delta_start``) leading steps count as
  delivered (so a single record can be checked on its own, whatever else was captured; a send
  withheld because the cut would have emptied it holds what the ledger held);
- the chat hop's evidence as it was: the observations of the chat requests captured before
  the send (same sources), made as the chat addon makes them;
- the ``bridge_planner_client`` and ``bridge_planner_types`` settings the flow was corrected
  under (``planner_client``, ``planner_types``; a record from before the types option: official).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...cascade.calls import CALLS, SEND, Call
from ...cascade.correct import PlannerResult, correct_request, read_body
from ...cascade.ledger import step_digest
from ...cascade.steps import to_json
from ...chat_hop.jobs import observed
from ...core.pipeline import Config, rewrite
from ...records import redact
from ...records.planner import DIALECT, call_of_flow, original_raw, part_of
from ...runtime import META
from ...runtime.store import MemoryStore, Observation, StoreEvidence
from .. import explain

__all__ = ["DIALECT", "PlannerCase", "evidence", "from_flow", "from_record", "observations_of", "recheck"]


@dataclass(slots=True)
class PlannerCase:
    """One call (a SendUserCascadeMessage, a replay, an interaction) as the planner hop handled it."""

    status: str
    reason: str
    original: bytes | None  # the body as the gateway sent it, framed (a record's: credentials replaced)
    headers: dict[str, str]  # lower-case names
    delta_start: int = 0
    changes: list[tuple[int, str]] = field(default_factory=list)  # (index, action) as recorded
    steps_after: list[dict[str, Any]] | None = None  # proto3 JSON of what went upstream
    sent: bytes | None = None  # the body that went upstream (flows only: records keep no corrected body)
    client: str | None = None  # bridge_planner_client when it was corrected
    types: str = "official"  # bridge_planner_types when it was corrected
    cascade_id: str | None = None
    steps_in: int | None = None
    redacted: bool = True  # the recorded side is redacted (a record): compare redacted
    method: str = SEND.method  # the call (cascade.calls)
    held: int | None = None  # leading steps the ledger held (None: delta_start)

    @property
    def call(self) -> Call:
        return CALLS.get(self.method, SEND)

    @property
    def steps_out(self) -> int | None:
        return None if self.steps_after is None else len(self.steps_after)


def _steps(body: bytes | None, headers: Mapping[str, str], call: Call = SEND) -> list[bytes] | None:
    req = read_body(body, headers, call)
    return req.steps if req is not None else None  # unreadable: the recorded status says why


def _changes(items: Any) -> list[tuple[int, str]]:
    return [
        (c["index"], str(c["action"])) for c in items or [] if isinstance(c, dict) and isinstance(c.get("index"), int)
    ]


def from_record(rec: Mapping[str, Any]) -> PlannerCase:
    part = part_of(rec)  # also a record's old ``native`` key
    headers = {str(k).lower(): str(v) for k, v in rec.get("request_headers") or []}
    body_hex = part.get("body_hex")
    summary = rec.get("summary") or {}
    after = part.get("steps_after")
    return PlannerCase(
        status=str(rec.get("status")),
        reason=str(rec.get("reason", "")),
        original=bytes.fromhex(body_hex) if isinstance(body_hex, str) else None,
        headers=headers,
        delta_start=int(part.get("delta_start") or 0),
        changes=_changes(part.get("changes")),
        steps_after=after if isinstance(after, list) else None,
        client=summary.get("planner_client"),
        types=str(summary.get("planner_types") or "official"),
        cascade_id=part.get("cascade_id"),
        steps_in=len(part["steps_before"]) if isinstance(part.get("steps_before"), list) else None,
        redacted=True,
        method=str(part.get("method") or SEND.method),
        held=part["held"] if isinstance(part.get("held"), int) else None,
    )


def from_flow(flow: Any) -> PlannerCase:
    """From a flow the planner hop saw (``flow.metadata["bridge"]["dialect"] == "cascade"``)."""
    meta = flow.metadata.get(META) or {}
    headers = {k.lower(): v for k, v in flow.request.headers.items()}
    corrected = meta.get("status") == "corrected"
    sent = flow.request.raw_content
    original = original_raw(flow) if corrected else sent
    call = call_of_flow(flow)
    came = read_body(original, headers, call)
    before, after = (came.steps if came else None), _steps(sent, headers, call)
    cascade_id = came.cascade_id if came else None
    return PlannerCase(
        status=str(meta.get("status")),
        reason=str(meta.get("reason", "")),
        original=original,
        headers=headers,
        delta_start=int(meta.get("delta_start") or 0),
        changes=_changes(meta.get("change_list")),
        steps_after=None if after is None else [to_json(s) for s in after],
        sent=sent,
        client=meta.get("planner_client"),
        types=str(meta.get("planner_types") or "official"),
        cascade_id=cascade_id,
        steps_in=None if before is None else len(before),
        redacted=False,
        method=call.method,
        held=meta["held"] if isinstance(meta.get("held"), int) else None,
    )


# ---- the chat hop's evidence --------------------------------------------------------------


def observations_of(raw: bytes, config: Config, path: str | None, user_agent: str | None = None) -> list[Observation]:
    """What the chat hop observes in one chat request body (the chat addon's own conversion)."""
    return observed(rewrite(raw, config, path, None, user_agent), config.tool_kinds)


def evidence(seen: Iterable[Observation] = ()) -> StoreEvidence:
    """The observations of the chat requests seen so far, as the planner hop takes them."""
    store = MemoryStore()
    store.observe(list(seen))
    return StoreEvidence(lambda: store)


# ---- comparing -----------------------------------------------------------------------------


def rerun(case: PlannerCase, evidence: StoreEvidence | None = None) -> PlannerResult:
    """Today's correction of the original body, with the recorded ledger prefix and settings."""
    if case.original is None:
        return PlannerResult("skipped", "the original body is not available", method=case.method)
    steps = _steps(case.original, case.headers, case.call) or []
    held = case.delta_start if case.held is None else case.held
    delivered = [step_digest(s) for s in steps[:held]]
    return correct_request(
        case.original,
        case.headers.get("content-type", ""),
        case.headers,
        delivered,
        evidence,
        client=case.client,
        types="keep" if case.types == "keep" else "official",
        call=case.call,
    )


def _clean(steps: Sequence[dict[str, Any]], redacted: bool) -> list[dict[str, Any]]:
    return [redact.body(s) for s in steps] if redacted else list(steps)


def recheck(case: PlannerCase, evidence: StoreEvidence | None = None) -> list[str]:
    """What would change for this send under today's corrections; empty when nothing would."""
    if case.original is None:
        if case.status == "skipped":
            return []  # nothing was kept to re-run, and nothing was corrected
        return ["the original body is not available: cannot re-run"]
    now = rerun(case, evidence)
    out: list[str] = []
    if now.status != case.status:
        old = f"{case.status} ({case.reason})" if case.reason else case.status
        out.append(f"status: {old} -> {now.status} ({now.reason})")
    old_changes, new_changes = case.changes, [(c.index, c.action) for c in now.changes]
    for index, action in old_changes:
        if (index, action) not in new_changes:
            out.append(f"change gone  step {index}: {action}")
    for index, action in new_changes:
        if (index, action) not in old_changes:
            out.append(f"new change   step {index}: {action}")
    if case.steps_after is not None and now.status != "skipped":
        out += explain.step_changes(_clean(case.steps_after, case.redacted), _clean(now.after, case.redacted))
    if not out and case.sent is not None and now.status == "corrected" and now.body != case.sent:
        out.append("the corrected body differs outside the steps")
    return out


def describe(case: PlannerCase) -> str:
    text = case.status if case.method == SEND.method else f"{case.method}: {case.status}"
    if case.status == "corrected":
        text += f", {case.steps_in} -> {case.steps_out} steps"
        actions: dict[str, int] = {}
        for _, a in case.changes:
            actions[a] = actions.get(a, 0) + 1
        text += " (" + ", ".join(f"{n} {a}" for a, n in actions.items()) + ")"
    elif case.reason:
        text += f" ({case.reason})"
    return text


def exit_codes(case: PlannerCase) -> list[int]:
    """The non-zero exit codes of the run_command steps sent upstream."""
    out = []
    for s in case.steps_after or []:
        code = s.get("runCommand", {}).get("exitCode") if isinstance(s.get("runCommand"), dict) else None
        if isinstance(code, int) and code != 0:
            out.append(code)
    return out
