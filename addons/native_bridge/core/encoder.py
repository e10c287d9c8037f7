"""Protobuf steps from translated fields, and their proto3 JSON form."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .._proto import cortex_pb2
from .kinds import Kind

if TYPE_CHECKING:  # the C extension's descriptors, as the protobuf stubs name them beside the Python ones
    from google._upb import _message as upb

DONE = "CORTEX_STEP_STATUS_DONE"


class UnobservedCallError(ValueError):
    """A completed step was asked for a call whose result does not exist."""


def encode_step(kind: Kind, inputs: dict[str, Any], observed: dict[str, Any] | None) -> cortex_pb2.CortexTrajectoryStep:
    """A DONE step; refused (truth rule 2) when there is no observation."""
    if observed is None:
        raise UnobservedCallError(f"{kind.name}: no result, so no completed step")
    body = getattr(cortex_pb2, kind.body)(**inputs, **observed)
    step = cortex_pb2.CortexTrajectoryStep(type=kind.step_type, status=DONE)  # enum values by name
    getattr(step, kind.name).CopyFrom(body)
    return step


def step_json(step: cortex_pb2.CortexTrajectoryStep) -> dict[str, Any]:
    """The proto3 JSON mapping, as the planner's Connect JSON codec reads it."""
    return json_format.MessageToDict(step)


def parse_step_json(doc: dict[str, Any]) -> cortex_pb2.CortexTrajectoryStep:
    """Strict decode of one step's proto3 JSON (unknown fields are errors)."""
    return json_format.ParseDict(doc, cortex_pb2.CortexTrajectoryStep())


# ---- the same JSON without protobuf ---------------------------------------------------
#
# Building each step as a protobuf message and converting it with MessageToDict was the
# largest single cost of a rewrite (two passes through upb per step, every string copied
# twice). step_doc() writes the proto3 JSON mapping directly, driven by the descriptors
# of proto/cortex.proto: fields in field-number order (as ListFields, hence MessageToDict,
# emits them), json_name keys, implicit-presence scalars only when not default, message
# and `optional` fields whenever set. It accepts only what it can prove protobuf would
# accept (exact types, ranges, UTF-8-encodable strings) and hands anything else to the
# protobuf path, so a value protobuf would refuse still raises the same error there.
# tests/test_bench_smoke.py checks step_doc against step_json(encode_step(...)).


class _Unsure(Exception):
    """A value the direct encoder will not vouch for: use the protobuf path."""


def _string(v: Any) -> str:
    # bytes would be accepted (decoded) by protobuf; lone surrogates refused: let it decide.
    if type(v) is not str:
        raise _Unsure
    if not v.isascii():
        try:
            v.encode()
        except UnicodeEncodeError:
            raise _Unsure from None
    return v


# A scalar's check: the value as protobuf would take it, or _Unsure.
type _Check = Callable[[Any], object]
# A field: (name, json_name, repeated, presence, check, sub), sub the plan of a message field.
type _Field = tuple[str, str, bool, bool, _Check | None, _Plan | None]
# A message: its field names, and its fields in number order.
type _Plan = tuple[frozenset[str], tuple[_Field, ...]]


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if type(v) is not int or not lo <= v < hi:
            raise _Unsure
        return v

    return check


def _bool(v: Any) -> bool:
    if type(v) is not bool:
        raise _Unsure
    return v


_SCALARS: dict[int, _Check] = {
    FieldDescriptor.TYPE_STRING: _string,
    FieldDescriptor.TYPE_UINT32: _int_range(0, 2**32),
    FieldDescriptor.TYPE_INT32: _int_range(-(2**31), 2**31),
    FieldDescriptor.TYPE_BOOL: _bool,
}


def _message(f: FieldDescriptor | upb.FieldDescriptor) -> Descriptor | upb.Descriptor:
    if f.message_type is None:
        raise TypeError(f"{f.full_name} is not a message field")
    return f.message_type


def _plan(desc: Descriptor | upb.Descriptor, done: dict[str, _Plan]) -> _Plan:
    """(field names, fields in number order as (name, json_name, repeated, presence, check, sub))."""
    if desc.full_name in done:
        return done[desc.full_name]
    fields: list[_Field] = []
    declared: Sequence[FieldDescriptor | upb.FieldDescriptor] = desc.fields
    for f in sorted(declared, key=lambda f: f.number):
        repeated = f.is_repeated
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            fields.append((f.name, f.json_name, repeated, True, None, _plan(_message(f), done)))
        elif f.type in _SCALARS:
            fields.append((f.name, f.json_name, repeated, f.has_presence, _SCALARS[f.type], None))
        else:  # a type the bodies do not use (yet): never vouch for it
            fields.append((f.name, f.json_name, repeated, f.has_presence, None, None))
    done[desc.full_name] = plan = (frozenset(f.name for f in declared), tuple(fields))
    return plan


def _doc(plan: _Plan, values: Any) -> dict[str, Any]:
    names, fields = plan
    if type(values) is not dict or not names.issuperset(values):
        raise _Unsure
    out: dict[str, Any] = {}
    for name, json_name, repeated, presence, check, sub in fields:
        v = values.get(name)
        if v is None:  # protobuf constructors treat None as "not set"
            continue
        if sub is not None:  # a message
            if not repeated:
                out[json_name] = _doc(sub, v)
            elif type(v) is not list:
                raise _Unsure
            elif v:
                out[json_name] = [_doc(sub, x) for x in v]
        elif check is None:  # neither a message nor a scalar we check
            raise _Unsure
        elif repeated:
            if type(v) is not list:
                raise _Unsure
            if v:
                out[json_name] = [check(x) for x in v]
        elif presence or v:
            out[json_name] = check(v)
        else:
            check(v)  # a default value is omitted, but must still be valid
    return out


_STEP = cortex_pb2.CortexTrajectoryStep.DESCRIPTOR
_PLANS: dict[str, _Plan] = {}
_BODIES = {
    f.name: (_message(f).name, f.json_name, _plan(_message(f), _PLANS)) for f in _STEP.oneofs_by_name["step"].fields
}
_STEP_TYPES = frozenset(v.name for v in cortex_pb2.CortexStepType.DESCRIPTOR.values if v.number)


def step_doc(kind: Kind, inputs: dict[str, Any], observed: dict[str, Any] | None) -> dict[str, Any]:
    """``step_json(encode_step(kind, inputs, observed))``, without building the message."""
    if observed is None:
        raise UnobservedCallError(f"{kind.name}: no result, so no completed step")
    try:
        body_name, json_name, plan = _BODIES[kind.name]
        if body_name != kind.body or kind.step_type not in _STEP_TYPES:
            raise _Unsure
        if type(inputs) is not dict or type(observed) is not dict or not inputs.keys().isdisjoint(observed):
            raise _Unsure
        body = _doc(plan, inputs | observed) if observed else _doc(plan, inputs)
        return {"type": kind.step_type, "status": DONE, json_name: body}
    except (_Unsure, KeyError):
        return step_json(encode_step(kind, inputs, observed))
