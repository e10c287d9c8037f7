"""The planner hop's part of a record: steps before/after as proto3 JSON, each change with its reason.

Built in the recorder's worker from raw material (:class:`NativeJob`), never on the
request path. The request body is kept with Metadata's ``api_key`` and ``user_jwt``
replaced (cascade.native.redact_body); a body that cannot be read that far is not kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cascade.native import NativeResult, redact_body
from . import redact


@dataclass(slots=True)
class NativeJob:
    body: bytes | None  # the request body as the gateway sent it (framed, possibly compressed)
    headers: dict[str, str]  # lower-case names
    result: NativeResult


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
        "changes": redact.body(r.changes_json()),
        # The request as it came with its credentials replaced, for replay_check and rebuilds.
        "body_hex": body.hex() if body is not None else None,
    }
