"""A request of a call that carries tool history, at wire level: the steps splice and redaction.

The field numbers are the call's (:mod:`.calls`): SendUserCascadeMessage's
``additional_steps`` (9), ReplayGroundTruthTrajectory's ``replay_steps`` (2). Only the
steps are ever rewritten; every other field is kept as the bytes it came as, in its
place, so the planner gets exactly what the gateway sent outside the steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .calls import SEND, Call
from .wire import LEN, Field, WireError, fields, len_field, string

# Metadata fields that are credentials: they never reach a record.
SECRET_METADATA_FIELDS = frozenset({3, 21})  # api_key, user_jwt
REDACTED = b"<redacted>"


@dataclass(frozen=True, slots=True)
class CascadeRequest:
    cascade_id: str | None
    steps: list[bytes]  # the steps' payloads (field 9 of a send), in order
    fields: list[Field]  # every top-level field, in order
    step_fields: list[Field]  # the steps' entries among them
    call: Call = SEND
    items: int = 0  # how many items (a send's field 2) it carries


def parse_request(payload: bytes, call: Call = SEND) -> CascadeRequest:
    all_fields = fields(payload)
    cascade_id = None
    step_fields = []
    items = 0
    for f in all_fields:
        if f.number == call.cascade_id:
            cascade_id = string(payload, f)  # the last one wins, as in protobuf
        elif f.number == call.steps:
            if f.wire_type != LEN:
                raise WireError(f"{call.steps_name} entry with wire type {f.wire_type}")
            step_fields.append(f)
        elif f.number == call.items:
            items += 1
    steps = [payload[f.value_start : f.end] for f in step_fields]
    return CascadeRequest(cascade_id, steps, all_fields, step_fields, call, items)


def splice(payload: bytes, req: CascadeRequest, new_steps: Sequence[bytes]) -> bytes:
    """``payload`` with its steps' entries replaced by ``new_steps``, every other byte kept.

    The new entries go where the first old one was (at the end if there was none);
    the other fields keep their bytes and relative order."""
    # mutation: planner-splice-not-identity
    if list(new_steps) == req.steps:
        return payload
    if req.call.steps is None:
        raise ValueError(f"{req.call.method} has no steps to splice")
    encoded = b"".join(len_field(req.call.steps, s) for s in new_steps)
    if not req.step_fields:
        return payload + encoded
    out = bytearray()
    pos = 0
    for i, f in enumerate(req.step_fields):
        out += payload[pos : f.start]
        # mutation: planner-splice-appends
        if i == 0:
            out += encoded
        pos = f.end
    out += payload[pos:]
    return bytes(out)


def redacted(payload: bytes, call: Call = SEND) -> bytes:
    """``payload`` with each credential's value replaced by ``<redacted>`` (lengths re-encoded).

    The Metadata is the call's (a send's field 3, a replay's field 1; an interaction has none).
    A fixed marker, not a same-length mask: a record does not even keep a key's length.
    Metadata that does not parse is replaced whole; a payload that does not parse raises
    :class:`WireError`, so the caller never records what it could not clean."""
    out = bytearray()
    metadata = call.metadata
    for f in fields(payload):
        if f.number != metadata or f.wire_type != LEN:
            out += payload[f.start : f.end]
            continue
        meta = payload[f.value_start : f.end]
        try:
            inner = fields(meta)
        except WireError:
            out += len_field(f.number, REDACTED)
            continue
        # mutation: planner-metadata-not-redacted
        clean = b"".join(
            len_field(g.number, REDACTED) if g.number in SECRET_METADATA_FIELDS else meta[g.start : g.end]
            for g in inner
        )
        out += len_field(f.number, clean)
    return bytes(out)
