"""The planner hop's part of a record: steps before/after as proto3 JSON, each change with its reason.

Built in the recorder's worker from raw material (:class:`NativeJob`), never on the
request path. The request body is kept with Metadata's ``api_key`` and ``user_jwt``
replaced (cascade.native.redact_body); a body that cannot be read that far is not kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mitmproxy import http

from ..cascade.framing import unframe
from ..cascade.native import DEFAULT_MAX_SIZE, NativeResult, redact_body
from ..cascade.request import parse_request
from . import META, native_view, redact
from .renderer import by_reference


@dataclass(slots=True)
class NativeJob:
    body: bytes | None  # the request body as the gateway sent it (framed, possibly compressed)
    headers: dict[str, str]  # lower-case names
    result: NativeResult
    changes: list[dict[str, Any]] | None = None  # instead of result.changes (a flow keeps only index/action/reason)

    __reduce__ = by_reference  # the body crosses to the record worker without a copy


def from_flow(flow: http.HTTPFlow) -> NativeJob:
    """The material of a planner-hop record, rebuilt from a flow (bridge.export)."""
    meta = flow.metadata.get(META) or {}
    headers = {k.lower(): v for k, v in flow.request.headers.items()}
    corrected = meta.get("status") == "corrected"
    original = native_view.original_raw(flow) if corrected else flow.request.raw_content
    before, after = _steps(original, headers), _steps(flow.request.raw_content, headers)
    result = NativeResult(
        str(meta.get("status")),
        str(meta.get("reason", "")),
        delta_start=int(meta.get("delta_start") or 0),
        steps_before=before,
        steps_after=after,
    )
    return NativeJob(original, headers, result, [c for c in meta.get("change_list", []) if isinstance(c, dict)])


def _steps(body: bytes | None, headers: dict[str, str]) -> list[bytes]:
    try:
        framed = unframe(body or b"", headers.get("content-type", ""), headers, DEFAULT_MAX_SIZE)
        return parse_request(framed.payload).steps
    except Exception:
        return []


def render(job: NativeJob) -> dict[str, Any]:
    r = job.result
    body = redact_body(job.body, job.headers.get("content-type", ""), job.headers) if job.body else None
    return {
        "cascade_id": r.cascade_id,
        "protocol": r.protocol,
        "delta_start": r.delta_start,
        # Tool output may hold a token a command printed: the same redaction as chat steps.
        "steps_before": redact.body(r.before),
        "steps_after": redact.body(r.after),
        "changes": redact.body(r.changes_json() if job.changes is None else job.changes),
        # The request as it came with its credentials replaced, for replay_check and rebuilds.
        "body_hex": body.hex() if body is not None else None,
    }
