"""The planner hop's part of a record: the call (``method``), steps before/after as proto3 JSON,
each change with its reason; for HandleCascadeUserInteraction the interaction decoded. And what
the planner hop leaves on a flow, read back (its dialect, its call, the gateway's body), here
below both the hop that writes it and the views that show it.

Built in the recorder's worker from raw material (:class:`PlannerJob`), never on the
request path. The request body is kept with Metadata's ``api_key`` and ``user_jwt``
replaced (cascade.correct.redact_body, in the call's Metadata field: a send's 3, a
replay's 1); a body that cannot be read that far is not kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mitmproxy import http

from ..cascade.calls import CALLS, SEND, Call, call_of, decode_interaction
from ..cascade.correct import PlannerResult, payload, read_body, redact_body
from ..runtime import META
from ..runtime.worker import by_reference
from . import redact

DIALECT = "cascade"  # the bridge metadata's and the record's dialect for a planner-hop flow
RECORD_KEY = "planner"  # the record's key for the planner hop's part (render)
_OLD_RECORD_KEY = "native"  # the same key in records written before it was renamed


def part_of(rec: Mapping[str, Any]) -> dict[str, Any]:
    """A record's planner-hop part (:func:`render`'s dict), also from a record written before its
    key was renamed; ``{}`` for a chat-hop record."""
    part = rec.get(RECORD_KEY)
    if not isinstance(part, dict):
        part = rec.get(_OLD_RECORD_KEY)
    return part if isinstance(part, dict) else {}


def is_planner_flow(flow: http.HTTPFlow) -> bool:
    meta = flow.metadata.get(META)
    return isinstance(meta, dict) and meta.get("dialect") == DIALECT


def original_raw(flow: http.HTTPFlow) -> bytes | None:
    """The request body as the gateway sent it (framed), from the flow's backup."""
    state = getattr(flow, "_backup", None)
    if isinstance(state, dict) and isinstance(state.get("request"), dict):
        content = state["request"].get("content")
        return content if isinstance(content, bytes) else None
    return None


def call_of_flow(flow: http.HTTPFlow) -> Call:
    """The call a planner-hop flow is: as its bridge metadata names it, else by its path (a flow from
    before the method was kept is a SendUserCascadeMessage)."""
    meta = flow.metadata.get(META)
    method = meta.get("method") if isinstance(meta, dict) else None
    return CALLS.get(str(method)) or call_of(flow.request.path) or SEND


@dataclass(slots=True)
class PlannerJob:
    body: bytes | None  # the request body as the gateway sent it (framed, possibly compressed)
    headers: dict[str, str]  # lower-case names
    result: PlannerResult
    changes: list[dict[str, Any]] | None = None  # instead of result.changes (a flow keeps only index/action/reason)

    __reduce__ = by_reference  # the body crosses to the record worker without a copy


def from_flow(flow: http.HTTPFlow) -> PlannerJob:
    """The material of a planner-hop record, rebuilt from a flow (bridge.export)."""
    meta = flow.metadata.get(META) or {}
    headers = {k.lower(): v for k, v in flow.request.headers.items()}
    corrected = meta.get("status") == "corrected"
    original = original_raw(flow) if corrected else flow.request.raw_content
    call = call_of_flow(flow)
    before, after = read_body(original, headers, call), read_body(flow.request.raw_content, headers, call)
    result = PlannerResult(
        str(meta.get("status")),
        str(meta.get("reason", "")),
        cascade_id=before.cascade_id if before is not None else None,
        delta_start=int(meta.get("delta_start") or 0),
        steps_before=before.steps if before is not None else [],
        steps_after=after.steps if after is not None else [],
        method=call.method,
        held=int(meta.get("held") or meta.get("delta_start") or 0),
    )
    return PlannerJob(original, headers, result, [c for c in meta.get("change_list", []) if isinstance(c, dict)])


def render(job: PlannerJob) -> dict[str, Any]:
    r = job.result
    call = CALLS.get(r.method, SEND)
    ctype = job.headers.get("content-type", "")
    body = redact_body(job.body, ctype, job.headers, call=call) if job.body else None
    out: dict[str, Any] = {
        "method": r.method,  # the call (cascade.calls): where its steps are
        "cascade_id": r.cascade_id,
        "protocol": r.protocol,
        "delta_start": r.delta_start,
        "held": r.held,
        # Tool output may hold a token a command printed: the same redaction as chat steps.
        "steps_before": redact.body(r.before),
        "steps_after": redact.body(r.after),
        "changes": redact.body(r.changes_json() if job.changes is None else job.changes),
        # The request as it came with its credentials replaced, for replay_check and rebuilds.
        "body_hex": body.hex() if body is not None else None,
    }
    if call.interaction is not None:
        # Which step, what was decided, the command lines as data (never rewritten; redacted like
        # tool output: a command line may carry a token a command printed).
        message = payload(job.body, job.headers) if job.body else None
        out["interaction"] = redact.body(decode_interaction(message)) if message is not None else None
    return out
