"""Builders for planner-hop tests: real fixtures, gateway-like steps at wire level, gencode steps, framing."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.steps import DONE, KIND_BY_FIELD, OFFICIAL_TYPE
from native_bridge.cascade.wire import len_field, varint_field
from native_bridge.evidence import Observation

# kind name -> its oneof field number (the known gateway types a step by it).
FIELD_BY_KIND = {name: number for number, name in KIND_BY_FIELD.items()}
FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "gateway-3.9.27"
GRPC = "application/grpc"
CONNECT = "application/connect+proto"
UNARY = "application/proto"
API_KEY = b"wsk-FIXTURE-KEY-0123456789"
JWT = b"eyJhbGciOiJIUzI1NiJ9.SECRET-JWT-PAYLOAD.sig"


def fixture(name: str) -> bytes:
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"gateway fixture {path} is absent (it lives in ../shared/fixtures, next to the repository)")
    return path.read_bytes()


def envelope_payload(body: bytes) -> bytes:
    """The message inside a one-envelope body (decompressing flag 1 as gzip)."""
    data = body[5 : 5 + int.from_bytes(body[1:5], "big")]
    return gzip.decompress(data) if body[0] & 1 else data


# ---- steps ---------------------------------------------------------------------------


def official_type(kind: str) -> int:
    """The CortexStepType that names the body (RUN_COMMAND 21 for run_command, at field 28)."""
    return OFFICIAL_TYPE[FIELD_BY_KIND[kind]]


def step(kind: str, status: int = DONE, type_: int | None = None, **body: Any) -> bytes:
    """A step serialized by the gencode (implicit-presence defaults are not written), typed with
    the official type of its body unless ``type_`` says otherwise."""
    doc = {"type": official_type(kind) if type_ is None else type_, "status": status, kind: body}
    return json_format.ParseDict(doc, pb.CortexTrajectoryStep()).SerializeToString()


def raw_step(kind: str, body: bytes, status: int = DONE, type_: int | None = None, extra: bytes = b"") -> bytes:
    """A step laid out as the gateway does: type, status, body (plus ``extra`` bytes at the end).
    The type is the official one of the body unless ``type_`` says otherwise (the known gateway's
    own numbering is the body's field number: ``gateway_run``)."""
    number = FIELD_BY_KIND[kind]
    type_ = official_type(kind) if type_ is None else type_
    return varint_field(1, type_) + varint_field(4, status) + len_field(number, body) + extra


def gateway_run(command: str, output: str | None, exit_code: int = 0, extra: bytes = b"") -> bytes:
    """A run_command step exactly as gateway 3.9.27 writes it: typed 28 (its body's field number,
    officially COMMAND_STATUS), observed (stdout, exit_code 0, combined_output, even when empty)
    or unobserved (command_line and blocking only)."""
    body = len_field(23, command.encode()) + varint_field(11, 1)
    if output is not None:
        out = output.encode()
        body += len_field(4, out) + varint_field(6, exit_code) + len_field(21, len_field(1, out))
    return raw_step("run_command", body + extra, type_=FIELD_BY_KIND["run_command"])


# ---- requests and framing ------------------------------------------------------------


def request(steps: list[bytes], cascade_id: str = "cascade-1", *, steps_at: str = "end") -> bytes:
    """A SendUserCascadeMessageRequest with every field the gateway sends and secrets in Metadata."""
    head = len_field(1, cascade_id.encode()) + len_field(2, len_field(1, b"hello"))
    metadata = len_field(1, b"windsurf") + len_field(3, API_KEY) + len_field(21, JWT) + varint_field(9, 123)
    middle = len_field(3, metadata) + len_field(5, len_field(1, varint_field(4, 1)))
    tail = len_field(6, len_field(1, b"\x89PNG"))
    encoded = b"".join(len_field(9, s) for s in steps)
    if steps_at == "middle":
        return head + encoded + middle + tail
    return head + middle + tail + encoded


def metadata() -> bytes:
    """Metadata with both credentials (api_key 3, user_jwt 21) beside other fields."""
    return len_field(1, b"windsurf") + len_field(3, API_KEY) + len_field(21, JWT) + varint_field(9, 123)


def replay_request(steps: list[bytes], cascade_id: str = "cascade-1") -> bytes:
    """A ReplayGroundTruthTrajectoryRequest: metadata 1, replay_steps 2, cascade_id 3, cascade_config 4."""
    encoded = b"".join(len_field(2, s) for s in steps)
    config = len_field(4, len_field(1, varint_field(4, 1)))
    return len_field(1, metadata()) + encoded + len_field(3, cascade_id.encode()) + config


def interaction_request(
    cascade_id: str = "cascade-1",
    step_index: int = 3,
    proposed: str = "npm test",
    submitted: str = "printf 'boom\\n'; exit 2",
    confirm: bool = True,
    action: int = 1,
) -> bytes:
    """A HandleCascadeUserInteractionRequest confirming a proposed command, as the second gateway
    sends it (its submitted command line replays the client's result by execution)."""
    run = (
        varint_field(1, int(confirm))
        + len_field(2, proposed.encode())
        + len_field(3, submitted.encode())
        + varint_field(4, action)
    )
    interaction = len_field(1, b"traj-1") + varint_field(2, step_index) + len_field(5, run)
    return len_field(1, cascade_id.encode()) + len_field(2, interaction)


def send_without_items(steps: list[bytes], cascade_id: str = "cascade-1") -> bytes:
    """A SendUserCascadeMessageRequest with no items (field 2), as the second gateway re-sends steps."""
    encoded = b"".join(len_field(9, s) for s in steps)
    return len_field(1, cascade_id.encode()) + len_field(3, metadata()) + len_field(5, b"") + encoded


def grpc(payload: bytes, *, gz: bool = False) -> bytes:
    data = gzip.compress(payload) if gz else payload
    return bytes([1 if gz else 0]) + len(data).to_bytes(4, "big") + data


connect = grpc  # the same 5-byte envelope; flag 0x01 means gzip under connect-content-encoding


# ---- the chat hop, as a test stand-in --------------------------------------------------


class ChatEvidence:
    """What the chat hop would hand over for an Anthropic request from Claude Code (the
    chat-turnN.json fixtures): each Bash call's result, matched by command line and output,
    claimed only when exactly one matches."""

    def __init__(self, doc: dict[str, Any]) -> None:
        calls: dict[str, dict[str, Any]] = {}
        results: dict[str, dict[str, Any]] = {}
        for message in doc["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block["type"] == "tool_use":
                    calls[block["id"]] = block
                elif block["type"] == "tool_result":
                    results[block["tool_use_id"]] = block
        self.pairs = [(calls[i], r) for i, r in results.items() if i in calls]
        self.asked: list[tuple[str, str, str]] = []

    def lookup(self, kind: str, command_or_path: str, output: str) -> Observation | None:
        self.asked.append((kind, command_or_path, output))
        found = [
            r
            for c, r in self.pairs
            if kind == "run_command"
            and c["name"] == "Bash"
            and c["input"]["command"] == command_or_path
            and r["content"] == output
        ]
        if len(found) != 1:
            return None
        return Observation(failed=bool(found[0].get("is_error")), client="claude-code")


def chat_evidence(name: str) -> ChatEvidence:
    import json

    return ChatEvidence(json.loads(fixture(name)))
