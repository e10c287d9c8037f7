"""The planner hop's flows as the views, commands and replay scripts show them.

A planner-hop flow carries the gateway's body in its backup and the corrected body as its
request; the changes (index, action, reason) and the call (``method``: cascade.calls)
are in its bridge metadata. Both bodies are decoded with our schema by the call's field
numbers (cascade.steps.to_json; an interaction by cascade.calls.decode_interaction) and
shown with the same step lines as chat flows (explain.py). What the hop leaves on a flow is read
by records/planner.py (the records and the planner hop use it too).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from ..cascade.calls import SEND, decode_interaction
from ..cascade.correct import payload, read_body
from ..cascade.steps import to_json
from ..records.planner import call_of_flow, original_raw
from ..runtime import META
from . import explain


def payload_of(flow: http.HTTPFlow, body: bytes | None) -> bytes | None:
    """The message inside a planner flow's body (its envelope and compression removed)."""
    return payload(body, {k.lower(): v for k, v in flow.request.headers.items()})


def decode_steps(flow: http.HTTPFlow, body: bytes | None) -> list[dict[str, Any]] | None:
    """The steps of a body (a send's field 9, a replay's field 2) as proto3 JSON; None when unreadable."""
    req = read_body(body, {k.lower(): v for k, v in flow.request.headers.items()}, call_of_flow(flow))
    return [to_json(s) for s in req.steps] if req is not None else None


@dataclass(slots=True)
class PlannerExplained:
    status: str
    reason: str
    before: list[dict[str, Any]] | None
    after: list[dict[str, Any]] | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    method: str = SEND.method
    interaction: dict[str, Any] | None = None  # HandleCascadeUserInteraction, decoded


def explain_planner(flow: http.HTTPFlow) -> PlannerExplained:
    meta = flow.metadata.get(META) or {}
    current = flow.request.raw_content
    before = original_raw(flow) if meta.get("status") == "corrected" else current
    call = call_of_flow(flow)
    interaction = None
    if call.interaction is not None:
        payload = payload_of(flow, current)
        interaction = decode_interaction(payload) if payload is not None else None
    return PlannerExplained(
        str(meta.get("status")),
        str(meta.get("reason", "")),
        decode_steps(flow, before),
        decode_steps(flow, current),
        [c for c in meta.get("change_list", []) if isinstance(c, dict)],
        {k: v for k, v in meta.items() if k in ("steps_in", "steps_out", "delta_start", "changes")},
        call.method,
        interaction,
    )


def headline(ex: PlannerExplained) -> str:
    s = ex.summary
    hop = "planner hop" if ex.method == SEND.method else f"planner hop, {ex.method}"
    text = f"bridge ({hop}): {ex.status}"
    if ex.status == "corrected":
        text += f", {s.get('steps_in')} -> {s.get('steps_out')} steps"
        if s.get("delta_start"):
            text += f" ({s['delta_start']} already delivered to this cascade)"
    elif ex.reason:
        text += f" ({ex.reason})"
    return text


def change_lines(ex: PlannerExplained) -> list[str]:
    """One line per change, naming the gateway's step it changed (kind and subject)."""
    out = []
    for c in ex.changes:
        i = c.get("index")
        step = ex.before[i] if ex.before is not None and isinstance(i, int) and 0 <= i < len(ex.before) else None
        what = f" ({explain.step_kind(step)} {explain.step_subject(step)})".rstrip() if step else ""
        out.append(f"  step {i}{what}: {c.get('action')}: {c.get('reason')}")
    return out


def interaction_lines(doc: dict[str, Any] | None) -> list[str]:
    """A HandleCascadeUserInteraction as text: which step, what was decided, the command lines as data."""
    if doc is None or "undecodable" in doc:
        return ["(the body cannot be read as a HandleCascadeUserInteraction)"]
    i = doc.get("interaction") or {}
    lines = [
        f"interaction (recorded, never rewritten) for cascade {doc.get('cascadeId')!r}: "
        f"step {i.get('stepIndex', 0)} of trajectory {i.get('trajectoryId')!r}"
    ]
    for kind in ("runCommand", "readUrlContent"):
        body = i.get(kind)
        if isinstance(body, dict):
            lines.append(f"  {kind}:")
            lines += [f"    {k}: {v!r}" for k, v in body.items()]
    if not any(k in i for k in ("runCommand", "readUrlContent")):
        lines.append("  (no interaction we model)")
    return lines


def steps_text(ex: PlannerExplained) -> str:
    lines = [headline(ex)]
    if ex.method != SEND.method and ex.interaction is not None:
        return "\n".join([*lines, *interaction_lines(ex.interaction)]) + "\n"
    if ex.changes:
        lines += ["changes (indices are the gateway's steps):", *change_lines(ex)]
    if ex.after is None:
        lines.append(f"(the body cannot be read as a {ex.method})")
    else:
        lines.append("steps sent to the language server:")
        for i, step in enumerate(ex.after):
            lines += explain.step_lines(i, step)
    return "\n".join(lines) + "\n"


def diff_text(ex: PlannerExplained) -> str:
    def render(steps: list[dict[str, Any]] | None) -> list[str]:
        if steps is None:
            return ["(unreadable)"]
        return [line for i, s in enumerate(steps) for line in explain.step_lines(i, s, indent="")]

    lines = [headline(ex), *change_lines(ex)]
    if ex.interaction is not None:  # never rewritten: there is nothing to diff
        return "\n".join([*lines, *interaction_lines(ex.interaction), "(no difference)"]) + "\n"
    diff = difflib.unified_diff(render(ex.before), render(ex.after), "gateway", "sent", lineterm="", n=1000)
    lines += list(diff)[2:] or ["(no difference)"]
    return "\n".join(lines) + "\n"
