"""The planner hop's flows as the views, commands and replay scripts show them.

A native flow carries the gateway's body in its backup and the corrected body as its
request; the changes (index, action, reason) are in its bridge metadata. Both bodies
are decoded with our schema (cascade.steps.to_json) and shown with the same step
lines as chat flows (explain.py).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from ..cascade.framing import unframe
from ..cascade.native import DEFAULT_MAX_SIZE
from ..cascade.request import parse_request
from ..cascade.steps import to_json
from . import META, explain

DIALECT = "cascade"  # the bridge metadata's dialect for a planner-hop flow


def is_native(flow: http.HTTPFlow) -> bool:
    meta = flow.metadata.get(META)
    return isinstance(meta, dict) and meta.get("dialect") == DIALECT


def original_raw(flow: http.HTTPFlow) -> bytes | None:
    """The request body as the gateway sent it (framed), from the flow's backup."""
    state = getattr(flow, "_backup", None)
    if isinstance(state, dict) and isinstance(state.get("request"), dict):
        content = state["request"].get("content")
        return content if isinstance(content, bytes) else None
    return None


def decode_steps(flow: http.HTTPFlow, body: bytes | None) -> list[dict[str, Any]] | None:
    """The field-9 steps of a SendUserCascadeMessage body as proto3 JSON; None when unreadable."""
    if body is None:
        return None
    headers = {k.lower(): v for k, v in flow.request.headers.items()}
    try:
        framed = unframe(body, headers.get("content-type", ""), headers, DEFAULT_MAX_SIZE)
        return [to_json(s) for s in parse_request(framed.payload).steps]
    except Exception:  # a damaged or foreign body: the view says it cannot read it
        return None


@dataclass(slots=True)
class NativeExplained:
    status: str
    reason: str
    before: list[dict[str, Any]] | None
    after: list[dict[str, Any]] | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def explain_native(flow: http.HTTPFlow) -> NativeExplained:
    meta = flow.metadata.get(META) or {}
    current = flow.request.raw_content
    before = original_raw(flow) if meta.get("status") == "corrected" else current
    return NativeExplained(
        str(meta.get("status")),
        str(meta.get("reason", "")),
        decode_steps(flow, before),
        decode_steps(flow, current),
        [c for c in meta.get("change_list", []) if isinstance(c, dict)],
        {k: v for k, v in meta.items() if k in ("steps_in", "steps_out", "delta_start", "changes")},
    )


def headline(ex: NativeExplained) -> str:
    s = ex.summary
    text = f"bridge (planner hop): {ex.status}"
    if ex.status == "corrected":
        text += f", {s.get('steps_in')} -> {s.get('steps_out')} steps"
        if s.get("delta_start"):
            text += f" ({s['delta_start']} already delivered to this cascade)"
    elif ex.reason:
        text += f" ({ex.reason})"
    return text


def change_lines(ex: NativeExplained) -> list[str]:
    """One line per change, naming the gateway's step it changed (kind and subject)."""
    out = []
    for c in ex.changes:
        i = c.get("index")
        step = ex.before[i] if ex.before is not None and isinstance(i, int) and 0 <= i < len(ex.before) else None
        what = f" ({explain.step_kind(step)} {explain.step_subject(step)})".rstrip() if step else ""
        out.append(f"  step {i}{what}: {c.get('action')}: {c.get('reason')}")
    return out


def steps_text(ex: NativeExplained) -> str:
    lines = [headline(ex)]
    if ex.changes:
        lines += ["changes (indices are the gateway's steps):", *change_lines(ex)]
    if ex.after is None:
        lines.append("(the body cannot be read as a SendUserCascadeMessage)")
    else:
        lines.append("steps sent to the language server:")
        for i, step in enumerate(ex.after):
            lines += explain.step_lines(i, step)
    return "\n".join(lines) + "\n"


def diff_text(ex: NativeExplained) -> str:
    def render(steps: list[dict[str, Any]] | None) -> list[str]:
        if steps is None:
            return ["(unreadable)"]
        return [line for i, s in enumerate(steps) for line in explain.step_lines(i, s, indent="")]

    lines = [headline(ex), *change_lines(ex)]
    diff = difflib.unified_diff(render(ex.before), render(ex.after), "gateway", "sent", lineterm="", n=1000)
    lines += list(diff)[2:] or ["(no difference)"]
    return "\n".join(lines) + "\n"
