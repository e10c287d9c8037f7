"""Protobuf steps from translated fields, and their proto3 JSON form."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from ._proto import cortex_pb2
from .kinds import Kind

DONE = "CORTEX_STEP_STATUS_DONE"


class UnobservedCallError(ValueError):
    """A completed step was asked for a call whose result does not exist."""


def encode_step(kind: Kind, inputs: dict[str, Any], observed: dict[str, Any] | None) -> cortex_pb2.CortexTrajectoryStep:
    """A DONE step; refused (truth rule 2) when there is no observation."""
    if observed is None:
        raise UnobservedCallError(f"{kind.name}: no result, so no completed step")
    body = getattr(cortex_pb2, kind.body)(**inputs, **observed)
    step = cortex_pb2.CortexTrajectoryStep(
        type=cortex_pb2.CortexStepType.Value(kind.step_type),
        status=cortex_pb2.CortexStepStatus.Value(DONE),
    )
    getattr(step, kind.name).CopyFrom(body)
    return step


def step_json(step: cortex_pb2.CortexTrajectoryStep) -> dict[str, Any]:
    """The proto3 JSON mapping, as the planner's Connect JSON codec reads it."""
    return json_format.MessageToDict(step)


def parse_step_json(doc: dict[str, Any]) -> cortex_pb2.CortexTrajectoryStep:
    """Strict decode of one step's proto3 JSON (unknown fields are errors)."""
    return json_format.ParseDict(doc, cortex_pb2.CortexTrajectoryStep())
