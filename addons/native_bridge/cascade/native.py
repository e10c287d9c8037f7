"""One SendUserCascadeMessage request body in, the corrected body (or why not) out.

Fail open for traffic (truth rule 9): any input this package cannot read exactly
is reported as ``skipped`` and the caller sends the original body; this function
never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .correct import Change, Evidence, Lookup, correct
from .framing import Framed, FramingError, reframe, unframe
from .ledger import delivered_prefix, step_digest
from .request import parse_request, redacted, splice
from .steps import to_json
from .wire import WireError

METHOD = "SendUserCascadeMessage"
DEFAULT_MAX_SIZE = 32 * 1024 * 1024  # decompressed; a history far larger than any seen
Status = Literal["corrected", "unchanged", "skipped"]


@dataclass(frozen=True, slots=True)
class NativeResult:
    status: Status
    reason: str
    body: bytes | None = None  # the body to send, only when status is "corrected"
    cascade_id: str | None = None
    protocol: str | None = None
    # Digests of every field-9 step as the gateway sent it: the caller stores them for
    # cascade_id once the upstream reply succeeded (a failed send delivered nothing).
    digests: list[bytes] = field(default_factory=list)
    delta_start: int = 0  # leading steps already delivered, removed from the body
    changes: list[Change] = field(default_factory=list)  # indices into the gateway's steps
    steps_before: list[bytes] = field(default_factory=list)  # every field-9 step as it came
    steps_after: list[bytes] = field(default_factory=list)  # the field-9 steps sent on

    # proto3 JSON for records, computed on demand: off the request's hot path.
    @property
    def before(self) -> list[dict[str, Any]]:
        return [to_json(s) for s in self.steps_before]

    @property
    def after(self) -> list[dict[str, Any]]:
        return [to_json(s) for s in self.steps_after]

    def changes_json(self) -> list[dict[str, Any]]:
        """The changes for a record: index, action, reason, and the step before/after as proto3 JSON."""
        return [
            {
                "index": c.index,
                "action": c.action,
                "reason": c.reason,
                "before": to_json(c.before),
                "after": None if c.after is None else to_json(c.after),
            }
            for c in self.changes
        ]


def is_send_user_cascade_message(path: str) -> bool:
    """Whether a request path is the unary SendUserCascadeMessage rpc (any package and service)."""
    return path.split("?", 1)[0].rstrip("/").endswith("/" + METHOD)


def correct_request(
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    delivered: Sequence[bytes] | Callable[[str], Sequence[bytes]] | None,
    evidence: Evidence | Lookup | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    *,
    already_decoded: bool = False,
    client: str | None = None,
) -> NativeResult:
    """Correct field 9 of one request body; every other byte goes as it came.

    ``headers``: lower-case names. ``delivered``: the digests stored for this request's
    cascade_id (None or empty: a new cascade), or a function from the cascade_id to them
    (the caller's ledger: the id is known only once the body is read).
    ``already_decoded``: see :func:`.framing.unframe`.
    ``client``: see :func:`.correct.correct`."""
    try:
        framed = unframe(body, content_type, headers, max_size, already_decoded=already_decoded)
        return _correct(framed, delivered or (), evidence, client)
    except (FramingError, WireError) as e:
        return NativeResult("skipped", f"{type(e).__name__}: {e}")
    except Exception as e:  # fail open: a bug here must not stop traffic
        return NativeResult("skipped", f"internal error: {type(e).__name__}: {e}")


def _correct(
    framed: Framed,
    delivered: Sequence[bytes] | Callable[[str], Sequence[bytes]],
    evidence: Evidence | Lookup | None,
    client: str | None,
) -> NativeResult:
    req = parse_request(framed.payload)
    if callable(delivered):
        delivered = delivered(req.cascade_id) if req.cascade_id else ()
    digests = [step_digest(s) for s in req.steps]
    start = delivered_prefix(delivered, digests)
    # Delivered steps are removed unread: the planner holds exactly those bytes already.
    fixed = correct(req.steps[start:], evidence, client=client, first_index=start)
    changes = [
        Change(i, "already_delivered", f"cascade {req.cascade_id!r} already holds this step", s, None)
        for i, s in enumerate(req.steps[:start])
    ] + fixed.changes
    common = dict(
        cascade_id=req.cascade_id, protocol=framed.protocol, digests=digests, delta_start=start, steps_before=req.steps
    )
    if not changes:
        return NativeResult("unchanged", "nothing to correct", steps_after=req.steps, **common)  # type: ignore[arg-type]
    payload = splice(framed.payload, req, fixed.steps)
    summary = ", ".join(f"{n} {a}" for a, n in _count(changes).items())
    return NativeResult(
        "corrected",
        summary,
        body=reframe(framed, payload),
        changes=changes,
        steps_after=fixed.steps,
        **common,  # type: ignore[arg-type]
    )


def _count(changes: Sequence[Change]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in changes:
        out[c.action] = out.get(c.action, 0) + 1
    return out


def redact_body(
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    max_size: int = DEFAULT_MAX_SIZE,
    *,
    already_decoded: bool = False,
) -> bytes | None:
    """The body with Metadata api_key and user_jwt replaced, framed as it came; None when
    it cannot be read, so that a caller never writes what it could not clean."""
    try:
        framed = unframe(body, content_type, headers, max_size, already_decoded=already_decoded)
        return reframe(framed, redacted(framed.payload))
    except (FramingError, WireError):
        return None
