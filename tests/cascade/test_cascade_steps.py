"""A step at wire level: the view, the run_command accessors, editors that touch only what they must."""

from __future__ import annotations

import pytest
from cascadekit import envelope_payload, fixture, gateway_run, raw_step, step
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.steps import (
    DONE,
    EXIT_CODE,
    STDOUT,
    edit,
    result_text,
    rewrap,
    run_command,
    subject,
    to_json,
    view,
)
from native_bridge.cascade.wire import WireError, fields, len_field, varint_field

UNKNOWN_TOP = len_field(999, b"future step field")
UNKNOWN_BODY = varint_field(77, 5) + len_field(78, b"future body field")


def test_view_of_the_gateway_steps() -> None:
    steps = parse_request(envelope_payload(fixture("grpc-turn1.bin"))).steps
    views = [view(s) for s in steps]
    assert [(v.type, v.status, v.body_field, v.kind) for v in views] == [
        (28, DONE, 28, "run_command"),
        (14, DONE, 14, "view_file"),
        (28, DONE, 28, "run_command"),
        (105, DONE, 105, "grep_search_v2"),
    ]
    rc = run_command(views[0].body)
    out = "Exit code 1\nFAIL src/cart.test.js\n  expected 90, received 100"
    assert rc.command_line == "npm test" and rc.blocking is True
    assert (rc.stdout, rc.full, rc.exit_code, rc.combined_output) == (out, out, 0, True)
    never = run_command(views[2].body)
    assert (never.stdout, never.full, never.exit_code, never.combined_output) == (None, None, None, False)
    assert result_text(views[1]).startswith("     1\t{")
    assert subject(views[1]) == "file:///home/dev/app/package.json"
    assert result_text(views[3]) == "src/cart.js:12: // TODO apply discount once"
    assert subject(views[3]) == "TODO"


def test_kind_is_the_body_field_not_the_type_number() -> None:
    # The official schema's RUN_COMMAND is 21; the body field (28) decides.
    v = view(raw_step("run_command", len_field(23, b"ls"), type_=21))
    assert (v.type, v.kind) == (21, "run_command")


def test_unknown_body_is_no_kind() -> None:
    v = view(varint_field(1, 500) + varint_field(4, DONE) + len_field(500, b"\x08\x01"))
    assert v.kind is None and v.body is None


def test_negative_exit_code_decodes_as_int32() -> None:
    body = pb.CortexStepRunCommand(exit_code=-1, stdout="x").SerializeToString()
    assert run_command(body).exit_code == -1


def test_empty_combined_output_is_present() -> None:
    body = len_field(21, b"")
    rc = run_command(body)
    assert rc.combined_output and rc.full == ""


def test_repeated_combined_output_merges_like_protobuf() -> None:
    body = len_field(21, len_field(1, b"a")) + len_field(21, b"") + len_field(21, len_field(1, b""))
    assert run_command(body).full == pb.CortexStepRunCommand.FromString(body).combined_output.full == ""


def test_subject_of_propose_code_is_the_file() -> None:
    s = step("propose_code", action_spec={"command": {"is_edit": True, "file": {"absolute_uri": "file:///a.py"}}})
    assert subject(view(s)) == "file:///a.py"


@pytest.mark.parametrize(
    ("buf", "why"),
    [
        (len_field(28, b"") + len_field(14, b""), "two bodies"),
        (len_field(28, b"") + len_field(28, b""), "two bodies"),
        (varint_field(28, 1), "wire type 0"),
        (len_field(28, b"\x0a\x05ab"), "runs past the end"),
        (len_field(1, b""), "expected a varint"),
        (b"\x08", "truncated"),
    ],
)
def test_bad_steps_raise(buf: bytes, why: str) -> None:
    with pytest.raises(WireError, match=why):
        view(buf)


def test_editors_keep_unknown_fields_and_order() -> None:
    body = len_field(23, b"ls") + UNKNOWN_BODY + len_field(4, b"out") + varint_field(6, 0) + len_field(21, b"")
    s = raw_step("run_command", body, extra=UNKNOWN_TOP)
    v = view(s)
    no_stdout = edit(v.body, fields(v.body), drop={STDOUT})
    assert no_stdout == len_field(23, b"ls") + UNKNOWN_BODY + varint_field(6, 0) + len_field(21, b"")
    coded = edit(no_stdout, fields(no_stdout), varint=(EXIT_CODE, -3))
    assert coded == len_field(23, b"ls") + UNKNOWN_BODY + varint_field(6, -3) + len_field(21, b"")
    out = rewrap(s, v, coded)
    assert out == raw_step("run_command", coded, extra=UNKNOWN_TOP)
    assert rewrap(s, v, v.body) is s


def test_a_set_varint_is_appended_when_absent_and_collapses_repeats() -> None:
    ls = len_field(23, b"ls")
    assert edit(ls, fields(ls), varint=(6, 2)) == ls + varint_field(6, 2)
    repeated = varint_field(6, 0) + ls + varint_field(6, 0)
    assert edit(repeated, fields(repeated), varint=(6, 1)) == varint_field(6, 1) + ls


def test_an_edit_that_drops_nothing_returns_the_same_object() -> None:
    body = len_field(23, b"ls")
    assert edit(body, fields(body), drop={4}) is body


def test_to_json_is_the_planner_json_mapping() -> None:
    s = gateway_run("false", "Exit code 1")
    assert to_json(s) == {
        # the gateway's type 28, which the official enum calls COMMAND_STATUS, as sent
        "type": "CORTEX_STEP_TYPE_COMMAND_STATUS",
        "status": "CORTEX_STEP_STATUS_DONE",
        "runCommand": {
            "commandLine": "false",
            "blocking": True,
            "stdout": "Exit code 1",
            "exitCode": 0,
            "combinedOutput": {"full": "Exit code 1"},
        },
    }
    assert "undecodable" in to_json(b"\x0a\x05ab")
