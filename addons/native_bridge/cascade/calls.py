"""The LanguageServerService calls that carry tool history, and where their fields are.

Field numbers come from the request messages in proto/cortex.proto (held to the official
schema by tests/test_proto_official.py), never written twice:

================================  ==========  =====  =====  ========  =========================
call                              cascade_id  steps  items  metadata  what the bridge does
================================  ==========  =====  =====  ========  =========================
SendUserCascadeMessage            1           9      2      3         corrects; cuts the delivered prefix
ReplayGroundTruthTrajectory       3           2      -      1         corrects; never cut (whole trajectory)
HandleCascadeUserInteraction      1           -      -      -         records decoded; never rewritten
================================  ==========  =====  =====  ========  =========================

HandleCascadeUserInteraction (interaction 2) holds a confirmation and command lines the language
server will execute (``submitted_command_line``): nothing there states an outcome as data, and a
command line is never rewritten (truth rule 10), so it is recorded and sent as it came.
Other official calls carry steps too (BranchCascade additional_steps 8, StartCascade's base
trajectory, HandleStreamingTabV2's predictive steps): not covered (proto/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from .._proto import cortex_pb2


@dataclass(frozen=True, slots=True)
class Call:
    method: str  # the rpc's name, the last segment of its path
    cascade_id: int
    steps: int | None = None  # repeated CortexTrajectoryStep; None: the call has no steps
    items: int | None = None  # the user's items: a send with neither items nor steps is empty
    metadata: int | None = None  # Metadata (api_key 3, user_jwt 21 inside): never in a record
    interaction: int | None = None  # CascadeUserInteraction: decoded for records, never rewritten
    cut_delivered: bool = False  # the steps continue the cascade: its delivered prefix is removed

    @property
    def steps_name(self) -> str:
        return _STEPS_NAME.get(self.method, "steps")


_SERVICE = cortex_pb2.DESCRIPTOR.services_by_name["LanguageServerService"]
_STEPS_NAME = {"SendUserCascadeMessage": "additional_steps", "ReplayGroundTruthTrajectory": "replay_steps"}


def _number(method: str, name: str) -> int:
    return _SERVICE.methods_by_name[method].input_type.fields_by_name[name].number


def _call(method: str, **names: str) -> Call:
    numbers = {key: _number(method, name) for key, name in names.items()}
    return Call(method, _number(method, "cascade_id"), **numbers, cut_delivered=method == "SendUserCascadeMessage")


SEND = _call("SendUserCascadeMessage", steps="additional_steps", items="items", metadata="metadata")
REPLAY = _call("ReplayGroundTruthTrajectory", steps="replay_steps", metadata="metadata")
INTERACTION = _call("HandleCascadeUserInteraction", interaction="interaction")
CALLS: dict[str, Call] = {c.method: c for c in (SEND, REPLAY, INTERACTION)}


def method_of(path: str) -> str:
    """The rpc named by a request path (``/<package>.<Service>/<Method>``, a query ignored)."""
    return path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def call_of(path: str) -> Call | None:
    """The call a request path names, whatever its package and service; None for any other."""
    if "/" not in path:
        return None
    return CALLS.get(method_of(path))


def decode_interaction(payload: bytes) -> dict[str, Any]:
    """A HandleCascadeUserInteractionRequest as proto3 JSON (records and views only: protobuf's
    JSON drops unknown fields). The command lines are shown as data, as they came."""
    try:
        msg = cortex_pb2.HandleCascadeUserInteractionRequest.FromString(payload)
    except DecodeError as e:
        return {"undecodable": str(e), "size": len(payload)}
    return json_format.MessageToDict(msg)
