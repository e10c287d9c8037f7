"""SendUserCascadeMessageRequest at wire level: the field-9 splice and redaction.

Only ``additional_steps`` (field 9) is ever rewritten; every other field is kept as
the bytes it came as, in its place, so the planner gets exactly what the gateway
sent outside the steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .wire import LEN, Field, WireError, fields, len_field, string

CASCADE_ID = 1
METADATA = 3
ADDITIONAL_STEPS = 9
# Metadata fields that are credentials: they never reach a record.
SECRET_METADATA_FIELDS = frozenset({3, 21})  # api_key, user_jwt
REDACTED = b"<redacted>"


@dataclass(frozen=True, slots=True)
class CascadeRequest:
    cascade_id: str | None
    steps: list[bytes]  # the field-9 payloads, in order
    fields: list[Field]  # every top-level field, in order
    step_fields: list[Field]  # the field-9 entries among them


def parse_request(payload: bytes) -> CascadeRequest:
    all_fields = fields(payload)
    cascade_id = None
    step_fields = []
    for f in all_fields:
        if f.number == CASCADE_ID:
            cascade_id = string(payload, f)  # the last one wins, as in protobuf
        elif f.number == ADDITIONAL_STEPS:
            if f.wire_type != LEN:
                raise WireError(f"additional_steps entry with wire type {f.wire_type}")
            step_fields.append(f)
    return CascadeRequest(cascade_id, [payload[f.value_start : f.end] for f in step_fields], all_fields, step_fields)


def splice(payload: bytes, req: CascadeRequest, new_steps: Sequence[bytes]) -> bytes:
    """``payload`` with its field-9 entries replaced by ``new_steps``, every other byte kept.

    The new entries go where the first old one was (at the end if there was none);
    the other fields keep their bytes and relative order."""
    if list(new_steps) == req.steps:
        return payload
    encoded = b"".join(len_field(ADDITIONAL_STEPS, s) for s in new_steps)
    if not req.step_fields:
        return payload + encoded
    out = bytearray()
    pos = 0
    for i, f in enumerate(req.step_fields):
        out += payload[pos : f.start]
        if i == 0:
            out += encoded
        pos = f.end
    out += payload[pos:]
    return bytes(out)


def secret_spans(payload: bytes) -> list[tuple[int, int]]:
    """Where the credentials' values sit in ``payload`` (Metadata api_key, user_jwt)."""
    spans = []
    for f in fields(payload):
        if f.number == METADATA and f.wire_type == LEN:
            for g in fields(payload[f.value_start : f.end]):
                if g.number in SECRET_METADATA_FIELDS:
                    spans.append((f.value_start + g.value_start, f.value_start + g.end))
    return spans


def redacted(payload: bytes) -> bytes:
    """``payload`` with each credential's value replaced by ``<redacted>`` (lengths re-encoded).

    A fixed marker, not a same-length mask: a record does not even keep a key's length.
    Metadata that does not parse is replaced whole; a payload that does not parse raises
    :class:`WireError`, so the caller never records what it could not clean."""
    out = bytearray()
    for f in fields(payload):
        if f.number != METADATA or f.wire_type != LEN:
            out += payload[f.start : f.end]
            continue
        meta = payload[f.value_start : f.end]
        try:
            inner = fields(meta)
        except WireError:
            out += len_field(METADATA, REDACTED)
            continue
        clean = b"".join(
            len_field(g.number, REDACTED) if g.number in SECRET_METADATA_FIELDS else meta[g.start : g.end]
            for g in inner
        )
        out += len_field(METADATA, clean)
    return bytes(out)
