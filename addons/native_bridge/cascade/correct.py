"""One request body of a call that carries tool history in, the corrected body (or why not) out.

The calls are :mod:`.calls`' table: SendUserCascadeMessage (field 9, its delivered prefix cut),
ReplayGroundTruthTrajectory (field 2, corrected the same way, never cut) and
HandleCascadeUserInteraction (recorded, never rewritten). Fail open for traffic (truth
rule 9): any input this package cannot read exactly is reported as ``skipped`` and the
caller sends the original body; this function never raises. A correction that would leave
a request with neither items nor steps when the gateway's had some is withheld: the
request goes as it came (``skipped``), and the ledger is not written by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .calls import SEND, Call
from .corrections import Change, Evidence, Lookup, Types, correct
from .framing import Framed, FramingError, reframe, unframe
from .ledger import Delivered, Delivery, delivered_prefix
from .request import CascadeRequest, parse_request, redacted, splice
from .steps import to_json
from .wire import WireError

METHOD = SEND.method
DEFAULT_MAX_SIZE = 32 * 1024 * 1024  # decompressed; a history far larger than any seen
Status = Literal["corrected", "unchanged", "skipped"]


@dataclass(frozen=True, slots=True)
class PlannerResult:
    status: Status
    reason: str
    body: bytes | None = None  # the body to send, only when status is "corrected"
    cascade_id: str | None = None
    protocol: str | None = None
    # Every field-9 step as the gateway sent it: the caller stores it for cascade_id once
    # the upstream reply succeeded (a failed send delivered nothing).
    delivery: Delivery | None = None
    delta_start: int = 0  # leading steps already delivered, removed from the body
    corrections: list[Change] = field(default_factory=list)  # the steps' fixes; indices into the gateway's steps
    steps_before: list[bytes] = field(default_factory=list)  # every field-9 step as it came
    steps_after: list[bytes] = field(default_factory=list)  # the field-9 steps sent on
    method: str = METHOD  # the call (cascade.calls): its steps are field 9, or a replay's field 2
    # Leading steps the ledger held for this cascade: delta_start, or (an empty send withheld)
    # what the cut would have removed; replay_check re-runs with it.
    held: int = 0

    @property
    def changes(self) -> list[Change]:
        """Every change: one per delivered step removed (made when asked: a long cascade's
        prefix is thousands of steps), then the corrections."""
        held = self._held()
        delivered = [
            Change(i, "already_delivered", held, s, None) for i, s in enumerate(self.steps_before[: self.delta_start])
        ]
        return delivered + self.corrections

    def change_list(self) -> list[dict[str, Any]]:
        """Index, action and reason of every change: what a flow keeps of them."""
        held = self._held()
        out = [{"index": i, "action": "already_delivered", "reason": held} for i in range(self.delta_start)]
        return out + [{"index": c.index, "action": c.action, "reason": c.reason} for c in self.corrections]

    def _held(self) -> str:
        return f"cascade {self.cascade_id!r} already holds this step"

    def counts(self) -> dict[str, int]:
        """How many changes of each action, in the order they first occur."""
        return _counts(self.delta_start, self.corrections)

    @property
    def digests(self) -> list[bytes]:
        """The digests of the gateway's steps (the ledger entry a persistent store writes)."""
        return self.delivery.digests() if self.delivery is not None else []

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


def payload(body: bytes | None, headers: Mapping[str, str]) -> bytes | None:
    """The message inside a planner call's body as it came (envelope and compression removed);
    None when there is none or it cannot be read."""
    if body is None:
        return None
    try:
        return unframe(body, headers.get("content-type", ""), headers, DEFAULT_MAX_SIZE).payload
    except Exception:
        return None


def read_body(body: bytes | None, headers: Mapping[str, str], call: Call = SEND) -> CascadeRequest | None:
    """A planner call's body as it came, parsed (its steps: a send's field 9, a replay's field 2):
    the one reader the records, the views and the offline replay share. None when unreadable."""
    message = payload(body, headers)
    try:
        return parse_request(message, call) if message is not None else None
    except Exception:  # a damaged or foreign body: the caller says it cannot read it
        return None


def correct_request(
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    delivered: Delivered | Sequence[bytes] | Callable[[str], Delivered | Sequence[bytes]] | None,
    evidence: Evidence | Lookup | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    *,
    already_decoded: bool = False,
    client: str | None = None,
    types: Types = "official",
    call: Call = SEND,
) -> PlannerResult:
    """Correct the steps of one request body of ``call`` (field 9 of a SendUserCascadeMessage,
    the default); every other byte goes as it came.

    ``headers``: lower-case names. ``delivered``: the ledger entry for this request's
    cascade_id, or the delivered steps' digests (None or empty: a new cascade), or a
    function from the cascade_id to either (the caller's ledger: the id is known only
    once the body is read).
    ``already_decoded``: see :func:`.framing.unframe`.
    ``client``, ``types``: see :func:`.corrections.correct`.
    ``call``: the call the request path names (:func:`.calls.call_of`): where its cascade_id and
    steps are; a replay is corrected whole (never cut), an interaction never rewritten."""
    try:
        framed = unframe(body, content_type, headers, max_size, already_decoded=already_decoded)
        return _correct(framed, delivered or (), evidence, client, types, call)
    except (FramingError, WireError) as e:
        return PlannerResult("skipped", f"{type(e).__name__}: {e}", method=call.method)
    except Exception as e:  # fail open: a bug here must not stop traffic
        # mutation: planner-fail-closed
        return PlannerResult("skipped", f"internal error: {type(e).__name__}: {e}", method=call.method)


# An interaction holds a confirmation and command lines the language server will execute.
NEVER_REWRITTEN = (
    "an interaction is recorded, never rewritten: it holds no outcome as data, only a confirmation "
    "and command lines the language server will execute"
)


def _correct(
    framed: Framed,
    delivered: Delivered | Sequence[bytes] | Callable[[str], Delivered | Sequence[bytes]],
    evidence: Evidence | Lookup | None,
    client: str | None,
    types: Types,
    call: Call,
) -> PlannerResult:
    req = parse_request(framed.payload, call)
    if call.steps is None:
        return PlannerResult(
            "unchanged", NEVER_REWRITTEN, cascade_id=req.cascade_id, protocol=framed.protocol, method=call.method
        )
    # mutation: planner-replay-cut
    if not call.cut_delivered:  # a replay states the whole trajectory again: nothing is cut
        delivered = ()
    if callable(delivered):
        delivered = delivered(req.cascade_id) if req.cascade_id else ()
    if not isinstance(delivered, Delivered):
        delivered = Delivered(digests=delivered)
    # mutation: planner-delivered-resent
    start = delivered_prefix(delivered, req.steps)
    known = delivered.digests[:start] if delivered.digests is not None else ()
    # Delivered steps are removed unread: the planner holds exactly those bytes already.
    fixed = correct(req.steps[start:], evidence, client=client, first_index=start, types=types)
    # mutation: planner-empty-send
    if req.steps and not fixed.steps and not req.items:
        return _withheld(framed, req, start, fixed.changes)
    # mutation: planner-ledger-of-corrected-steps
    unchanged = PlannerResult(
        "unchanged",
        "nothing to correct",
        cascade_id=req.cascade_id,
        protocol=framed.protocol,
        delivery=Delivery(req.steps, known),
        delta_start=start,
        steps_before=req.steps,
        steps_after=req.steps,
        method=call.method,
        held=start,
    )
    if not start and not fixed.changes:
        return unchanged
    return replace(
        unchanged,
        status="corrected",
        reason=", ".join(f"{n} {a}" for a, n in _counts(start, fixed.changes).items()),
        body=reframe(framed, splice(framed.payload, req, fixed.steps)),
        corrections=fixed.changes,
        steps_after=fixed.steps,
    )


def _withheld(framed: Framed, req: CascadeRequest, start: int, changes: Sequence[Change]) -> PlannerResult:
    """Nobody has seen a language server accept a request with neither items nor steps: the
    gateway's goes as it came, and the ledger is not written by it (no delivery)."""
    what = [f"{start} already delivered"] if start else []
    what += [f"{n} {a}" for a, n in _counts(0, changes).items()]
    reason = (
        f"a correction ({', '.join(what)}) would leave {req.call.method} with neither items nor steps: "
        "sent as the gateway sent it, the ledger unchanged"
    )
    return PlannerResult(
        "skipped",
        reason,
        cascade_id=req.cascade_id,
        protocol=framed.protocol,
        steps_before=req.steps,
        steps_after=req.steps,
        method=req.call.method,
        held=start,
    )


def _counts(delta_start: int, corrections: Sequence[Change]) -> dict[str, int]:
    out = {"already_delivered": delta_start} if delta_start else {}
    for c in corrections:
        out[c.action] = out.get(c.action, 0) + 1
    return out


def redact_body(
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    max_size: int = DEFAULT_MAX_SIZE,
    *,
    already_decoded: bool = False,
    call: Call = SEND,
) -> bytes | None:
    """The body with Metadata api_key and user_jwt replaced (the call's Metadata field), framed as
    it came; None when it cannot be read, so that a caller never writes what it could not clean."""
    try:
        framed = unframe(body, content_type, headers, max_size, already_decoded=already_decoded)
        return reframe(framed, redacted(framed.payload, call))
    except (FramingError, WireError):
        return None
