"""The checked-in gencode matches proto/cortex.proto, and the schema has the design brief's field numbers."""

from __future__ import annotations

import ast
from pathlib import Path

import gen_proto
import pytest
from google.protobuf import descriptor_pb2, text_format
from native_bridge._proto import cortex_pb2

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto" / "cortex.proto"
CHECKED_IN = ROOT / "addons" / "native_bridge" / "_proto" / "cortex_pb2.py"


def serialized_file(gencode: Path) -> bytes:
    """The FileDescriptorProto bytes a generated module passes to AddSerializedFile (without importing it)."""
    tree = ast.parse(gencode.read_text())
    found = [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "AddSerializedFile"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, bytes)
    ]
    assert len(found) == 1, f"{gencode}: expected one AddSerializedFile(b'...') call"
    return found[0]


def file_proto(data: bytes) -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto()
    fd.ParseFromString(data)
    return fd


def assert_same(fresh: descriptor_pb2.FileDescriptorProto, checked: descriptor_pb2.FileDescriptorProto) -> None:
    assert text_format.MessageToString(fresh) == text_format.MessageToString(checked), (
        "the checked-in gencode drifted from proto/cortex.proto: run scripts/gen_proto.py"
    )
    assert fresh == checked


def without_json_names(fd: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """protoc fills json_name only for code generators, not in --descriptor_set_out: drop it to compare."""
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(fd)
    stack = list(out.message_type)
    while stack:
        m = stack.pop()
        for f in m.field:
            f.ClearField("json_name")
        stack.extend(m.nested_type)
    return out


@pytest.fixture(scope="module")
def fresh_gencode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gencode")
    gen_proto.generate(out)
    return out / "cortex_pb2.py"


def test_checked_in_gencode_matches_freshly_generated(fresh_gencode: Path) -> None:
    assert_same(file_proto(serialized_file(fresh_gencode)), file_proto(serialized_file(CHECKED_IN)))


def test_checked_in_gencode_matches_descriptor_set(tmp_path: Path) -> None:
    from grpc_tools import protoc

    out = tmp_path / "cortex.pb"
    rc = protoc.main(["protoc", f"-I{PROTO.parent}", f"--descriptor_set_out={out}", str(PROTO)])
    assert rc == 0
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    (fresh,) = fds.file
    assert_same(without_json_names(fresh), without_json_names(file_proto(serialized_file(CHECKED_IN))))


def test_imported_module_is_the_checked_in_one() -> None:
    loaded = descriptor_pb2.FileDescriptorProto()
    cortex_pb2.DESCRIPTOR.CopyToProto(loaded)
    assert_same(loaded, file_proto(serialized_file(CHECKED_IN)))


# ---- wire facts from the design brief ----------------------------------------------------


def fields(message: str) -> dict[str, int]:
    return {f.name: f.number for f in cortex_pb2.DESCRIPTOR.message_types_by_name[message].fields}


def test_send_user_cascade_message_request_fields() -> None:
    assert fields("SendUserCascadeMessageRequest") == {
        "cascade_id": 1,
        "items": 2,
        "metadata": 3,
        "cascade_config": 5,
        "images": 6,
        "additional_steps": 9,
    }
    steps = cortex_pb2.SendUserCascadeMessageRequest.DESCRIPTOR.fields_by_name["additional_steps"]
    assert steps.is_repeated
    assert steps.message_type.name == "CortexTrajectoryStep"
    assert fields("TextOrScopeItem") == {"text": 1}


STEP_BODIES = {
    "grep_search": 13,
    "view_file": 14,
    "list_directory": 15,
    "user_input": 19,
    "write_to_file": 23,
    "error_message": 24,
    "run_command": 28,
    "propose_code": 32,
    "find": 34,
    "command_status": 37,
    "read_url_content": 40,
    "search_web": 42,
    "grep_search_v2": 105,
}
# The official CortexStepType of each body (the type number is not the body's field number).
STEP_TYPES = {
    "grep_search": 7,
    "view_file": 8,
    "list_directory": 9,
    "user_input": 14,
    "write_to_file": 16,
    "error_message": 17,
    "run_command": 21,
    "propose_code": 24,
    "find": 25,
    "command_status": 28,
    "read_url_content": 31,
    "search_web": 33,
    "grep_search_v2": 91,
}


def test_trajectory_step_fields_and_oneof() -> None:
    assert fields("CortexTrajectoryStep") == {"type": 1, "status": 4, "error": 31, **STEP_BODIES}
    desc = cortex_pb2.CortexTrajectoryStep.DESCRIPTOR
    assert [f.name for f in desc.oneofs_by_name["step"].fields] == list(STEP_BODIES)


def test_step_type_enum_has_the_official_numbers() -> None:
    values = {v.name: v.number for v in cortex_pb2.CortexStepType.DESCRIPTOR.values}
    assert len(values) == 84 and values["CORTEX_STEP_TYPE_UNSPECIFIED"] == 0
    assert {name: values[f"CORTEX_STEP_TYPE_{name.upper()}"] for name in STEP_BODIES} == STEP_TYPES


def test_run_command_fields_and_exit_code_presence() -> None:
    assert fields("CortexStepRunCommand") == {
        "cwd": 2,
        "stdout": 4,
        "stderr": 5,
        "exit_code": 6,
        "blocking": 11,
        "command_id": 13,
        "combined_output": 21,
        "command_line": 23,
        "proposed_command_line": 25,
        "shell_name": 28,
    }
    assert fields("RunCommandOutput") == {"full": 1}
    exit_code = cortex_pb2.CortexStepRunCommand.DESCRIPTOR.fields_by_name["exit_code"]
    assert exit_code.has_presence
    assert exit_code.type == exit_code.TYPE_INT32
    fd = file_proto(serialized_file(CHECKED_IN))
    (rc,) = [m for m in fd.message_type if m.name == "CortexStepRunCommand"]
    (field,) = [f for f in rc.field if f.name == "exit_code"]
    assert field.proto3_optional
    # presence on the wire: 0 is sent, unset is not
    assert cortex_pb2.CortexStepRunCommand(exit_code=0).SerializeToString() == b"\x30\x00"
    assert cortex_pb2.CortexStepRunCommand().SerializeToString() == b""


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("CortexStepViewFile", {"absolute_path_uri": 1, "content": 4, "offset": 11, "limit": 12}),
        (
            "CortexStepGrepSearchV2",
            {
                "pattern": 2,
                "path": 3,
                "glob": 4,
                "output_mode": 5,
                "lines_after": 6,
                "lines_before": 7,
                "lines_both": 8,
                "case_insensitive": 10,
                "type": 11,
                "head_limit": 12,
                "multiline": 13,
                "raw_output": 15,
            },
        ),
        ("CortexStepFind", {"pattern": 1, "search_directory": 10, "raw_output": 11}),
        ("CortexStepListDirectory", {"directory_path_uri": 1, "children": 2}),
        ("CortexStepWriteToFile", {"target_file_uri": 1, "code_content": 2, "file_created": 4}),
        ("CortexStepProposeCode", {"action_spec": 1, "code_instruction": 3}),
        ("ActionSpec", {"command": 1}),
        ("ActionSpecCommand", {"instruction": 1, "is_edit": 2, "file": 4, "replacement_chunks": 9}),
        ("PathScopeItem", {"absolute_uri": 5}),
        ("ReplacementChunk", {"target_content": 1, "replacement_content": 2, "allow_multiple": 3}),
        ("CortexStepSearchWeb", {"query": 1, "domain": 3, "summary": 5}),
        (
            "CortexStepReadUrlContent",
            {"url": 1, "web_document": 2, "resolved_url": 3, "latency_ms": 4, "user_rejected": 6},
        ),
        ("KnowledgeBaseItem", {"document_id": 1, "text": 2, "url": 3, "title": 4, "summary": 7}),
        (
            "CortexStepCommandStatus",
            {
                "command_id": 1,
                "status": 2,
                "stdout": 3,
                "stderr": 4,
                "exit_code": 5,
                "error": 6,
                "output_character_count": 8,
                "combined": 9,
                "wait_duration_seconds": 10,
                "waited_duration_seconds": 11,
                "delta": 12,
            },
        ),
        ("CortexStepErrorMessage", {"error": 3, "should_show_model": 4, "should_show_user": 5}),
        ("CortexStepUserInput", {"query": 1, "user_response": 2, "items": 3, "images": 5}),
        ("HandleCascadeUserInteractionRequest", {"cascade_id": 1, "interaction": 2}),
        (
            "CascadeUserInteraction",
            {"trajectory_id": 1, "step_index": 2, "run_command": 5, "read_url_content": 15},
        ),
        (
            "CascadeRunCommandInteraction",
            {"confirm": 1, "proposed_command_line": 2, "submitted_command_line": 3, "action": 4},
        ),
        (
            "ReplayGroundTruthTrajectoryRequest",
            {"metadata": 1, "replay_steps": 2, "cascade_id": 3, "cascade_config": 4},
        ),
    ],
)
def test_body_field_numbers(message: str, expected: dict[str, int]) -> None:
    assert fields(message) == expected


def test_repeated_fields() -> None:
    d = cortex_pb2.DESCRIPTOR.message_types_by_name
    assert d["CortexStepListDirectory"].fields_by_name["children"].is_repeated
    assert d["CortexStepWriteToFile"].fields_by_name["code_content"].is_repeated
    assert d["ActionSpecCommand"].fields_by_name["replacement_chunks"].is_repeated


def test_additional_steps_wire_tag() -> None:
    req = cortex_pb2.SendUserCascadeMessageRequest(
        additional_steps=[cortex_pb2.CortexTrajectoryStep(type=cortex_pb2.CORTEX_STEP_TYPE_RUN_COMMAND)]
    )
    # field 9, wire type 2 -> tag 0x4a; the step holds field 1 varint 21 (official RUN_COMMAND)
    assert req.SerializeToString() == b"\x4a\x02\x08\x15"
