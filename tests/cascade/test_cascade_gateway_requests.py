"""correct_request: the real gateway requests, every byte outside field 9 kept, the delta, bad input."""

from __future__ import annotations

import gzip

import pytest
from cascadekit import (
    API_KEY,
    CONNECT,
    GRPC,
    JWT,
    UNARY,
    chat_evidence,
    connect,
    envelope_payload,
    fixture,
    gateway_run,
    grpc,
    request,
)
from native_bridge.cascade.calls import SEND, call_of
from native_bridge.cascade.correct import correct_request, redact_body
from native_bridge.cascade.framing import unframe
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.steps import run_command, view
from native_bridge.cascade.wire import fields, len_field

GZ = {"grpc-encoding": "gzip"}
CGZ = {"connect-content-encoding": "gzip"}
LIMIT = 1 << 20


def outside_9(payload: bytes) -> list[bytes]:
    return [payload[f.start : f.end] for f in fields(payload) if f.number != 9]


def payload_of(body: bytes, ctype: str, headers: dict[str, str]) -> bytes:
    return unframe(body, ctype, headers, LIMIT).payload


def run(s: bytes):
    v = view(s)
    return run_command(v.body) if v.kind == "run_command" else None


# ---- the real gateway requests -----------------------------------------------------------


def test_fixture_turn_1() -> None:
    body = fixture("grpc-turn1.bin")
    original = parse_request(envelope_payload(body)).steps
    r = correct_request(body, GRPC, {}, None, chat_evidence("chat-turn1.json"))
    assert r.status == "corrected" and r.cascade_id == "fake-cascade-1" and r.delta_start == 0
    steps = parse_request(envelope_payload(r.body)).steps
    assert len(steps) == 3
    npm_test = run(steps[0])
    assert npm_test.command_line == "npm test" and npm_test.exit_code == 1
    assert (
        npm_test.stdout is None and npm_test.full == "Exit code 1\nFAIL src/cart.test.js\n  expected 90, received 100"
    )
    # view_file, grep: byte-identical but for the type (the gateway's 14 and 105 name other kinds)
    assert steps[1] == b"\x08\x08" + original[1][2:] and original[1][:2] == b"\x08\x0e"
    assert steps[2] == b"\x08\x5b" + original[3][2:] and original[3][:2] == b"\x08\x69"
    assert "npm run dev" not in str(r.after) and "npm run dev" in str(r.before)
    assert len(r.digests) == 4
    assert r.body[0] == 0 and int.from_bytes(r.body[1:5], "big") == len(r.body) - 5


def test_fixture_turn_1_without_the_chat_hop() -> None:
    # The planner hop alone (issue 17): the result's own frame ("Exit code 1", Claude Code's
    # words) states the code, whatever client wrote it; not the gateway's 0.
    r = correct_request(fixture("grpc-turn1.bin"), GRPC, {}, None)
    npm_test = run(parse_request(envelope_payload(r.body)).steps[0])
    assert (npm_test.exit_code, npm_test.stdout) == (1, None)


def test_fixture_turn_2_without_the_chat_hop_states_exit_2() -> None:
    r = correct_request(fixture("grpc-turn2-resumed.bin"), GRPC, {}, None)
    cat = run(parse_request(envelope_payload(r.body)).steps[-1])
    assert (cat.command_line, cat.exit_code, cat.stdout) == ("cat test_x.py", 2, None)


def test_fixture_turn_2_resumed_gets_only_the_new_step() -> None:
    turn1 = correct_request(fixture("grpc-turn1.bin"), GRPC, {}, None, chat_evidence("chat-turn1.json"))
    r = correct_request(fixture("grpc-turn2-resumed.bin"), GRPC, {}, turn1.digests, chat_evidence("chat-turn2.json"))
    assert r.status == "corrected" and r.delta_start == 4
    steps = parse_request(envelope_payload(r.body)).steps
    assert len(steps) == 1
    cat = run(steps[0])
    assert (cat.command_line, cat.exit_code, cat.stdout) == ("cat test_x.py", 2, None)
    assert [c.action for c in r.changes] == ["already_delivered"] * 4 + ["exit_code", "stdout_deduplicated", "type"]
    assert [c.index for c in r.changes][-3:] == [4, 4, 4]  # indices into the gateway's steps
    assert r.digests[:4] == turn1.digests


def test_fixture_turn_2_without_a_ledger_corrects_everything() -> None:
    r = correct_request(fixture("grpc-turn2-resumed.bin"), GRPC, {}, None)
    assert r.delta_start == 0 and len(parse_request(envelope_payload(r.body)).steps) == 4


def test_fixture_connect_gzip_matches_grpc() -> None:
    grpc_r = correct_request(fixture("grpc-turn1.bin"), GRPC, {}, None, chat_evidence("chat-turn1.json"))
    r = correct_request(fixture("connect-turn1.bin"), CONNECT, CGZ, None, chat_evidence("chat-turn1.json"))
    assert r.status == "corrected" and r.protocol == "connect"
    assert r.body[0] == 1  # still a gzip envelope
    assert parse_request(envelope_payload(r.body)).steps == parse_request(envelope_payload(grpc_r.body)).steps
    assert r.digests == grpc_r.digests


# ---- every byte outside field 9 -----------------------------------------------------------

STEPS = [gateway_run("npm test", "Exit code 1\nboom"), gateway_run("npm run dev", None), gateway_run("ls", "a\n")]


def framings(payload: bytes) -> list[tuple[str, bytes, str, dict[str, str]]]:
    return [
        ("grpc", grpc(payload), GRPC, {}),
        ("grpc gzip", grpc(payload, gz=True), GRPC, GZ),
        ("connect gzip", connect(payload, gz=True), CONNECT, CGZ),
        ("connect", connect(payload), CONNECT, {}),
        ("connect unary", payload, UNARY, {}),
        ("connect unary gzip", gzip.compress(payload), UNARY, {"content-encoding": "gzip"}),
    ]


@pytest.mark.parametrize("layout", ["end", "middle"])
@pytest.mark.parametrize("i", range(6), ids=[f[0] for f in framings(b"")])
def test_every_byte_outside_field_9_is_unchanged(layout: str, i: int) -> None:
    payload = request(STEPS, steps_at=layout)
    name, body, ctype, headers = framings(payload)[i]
    r = correct_request(body, ctype, headers, None)
    assert r.status == "corrected", r.reason
    out = payload_of(r.body, ctype, headers)
    assert outside_9(out) == outside_9(payload)
    # The spliced steps sit where the first step was.
    assert [f.number for f in fields(out)].index(9) == [f.number for f in fields(payload)].index(9)
    assert unframe(r.body, ctype, headers, LIMIT).compressed == unframe(body, ctype, headers, LIMIT).compressed
    if name in ("grpc", "connect"):  # same flag byte, the new length, then the message itself
        assert r.body == body[:1] + len(out).to_bytes(4, "big") + out
    elif name == "connect unary":
        assert r.body == out


def test_retyping_changes_only_the_type_bytes_of_the_retyped_steps() -> None:
    """A step whose type names another kind than its body gets the body's type, and nothing else
    in the request changes: here a view_file typed 28 beside a step already typed officially."""
    from cascadekit import raw_step

    wrong = raw_step("view_file", len_field(1, b"file:///a") + len_field(4, b"x"), type_=28)
    right = raw_step("view_file", len_field(1, b"file:///b") + len_field(4, b"y"), type_=8)
    payload = request([right, wrong, right])
    r = correct_request(grpc(payload), GRPC, {}, None)
    assert r.status == "corrected" and [(c.index, c.action) for c in r.changes] == [(1, "type")]
    expected = payload.replace(wrong, b"\x08\x08" + wrong[2:])  # type 28 -> 8, in its place
    assert wrong.startswith(b"\x08\x1c") and payload.count(wrong) == 1
    assert r.body == grpc(expected)
    kept = correct_request(grpc(payload), GRPC, {}, None, types="keep")
    assert kept.status == "unchanged" and kept.changes == []


def test_unchanged_request_has_no_body() -> None:
    clean = [gateway_run("ls", "a")]
    fixed = correct_request(grpc(request(clean)), GRPC, {}, None)
    r = correct_request(grpc(request(parse_request(envelope_payload(fixed.body)).steps)), GRPC, {}, None)
    assert r.status == "unchanged" and r.body is None and r.changes == []
    assert r.steps_after == r.steps_before


@pytest.mark.parametrize("with_chat_hop", [False, True])
def test_request_level_idempotence_and_determinism(with_chat_hop: bool) -> None:
    for body, ctype, headers in ((fixture("grpc-turn1.bin"), GRPC, {}), (fixture("connect-turn1.bin"), CONNECT, CGZ)):
        ev = chat_evidence("chat-turn1.json") if with_chat_hop else None
        first = correct_request(body, ctype, headers, None, ev)
        assert correct_request(body, ctype, headers, None, ev).body == first.body  # byte-identical
        again = correct_request(first.body, ctype, headers, None, ev)
        assert again.status == "unchanged", again.changes


def test_empty_delta_sends_no_steps() -> None:
    body = fixture("grpc-turn1.bin")
    first = correct_request(body, GRPC, {}, None)
    r = correct_request(body, GRPC, {}, first.digests)  # the same request again (a retry)
    assert r.delta_start == 4 and parse_request(envelope_payload(r.body)).steps == []
    assert outside_9(envelope_payload(r.body)) == outside_9(envelope_payload(body))


# ---- records -------------------------------------------------------------------------


def test_records_hold_reasons_and_proto3_json_but_no_secret() -> None:
    r = correct_request(grpc(request(STEPS)), GRPC, {}, None)
    changes = r.changes_json()
    fixes = ["exit_code", "stdout_deduplicated", "type"]
    assert [c["action"] for c in changes] == [*fixes, "dropped", *fixes]
    assert changes[0]["before"]["runCommand"]["exitCode"] == 0 and changes[0]["after"]["runCommand"]["exitCode"] == 1
    assert changes[3]["after"] is None and "never observed" in changes[3]["reason"]
    # the gateway's type 28 as sent, which the official enum calls COMMAND_STATUS; sent as RUN_COMMAND
    assert r.before[0]["type"] == "CORTEX_STEP_TYPE_COMMAND_STATUS" and len(r.after) == 2
    assert changes[2]["before"]["type"] == "CORTEX_STEP_TYPE_COMMAND_STATUS"
    assert [s["type"] for s in r.after] == ["CORTEX_STEP_TYPE_RUN_COMMAND"] * 2
    text = repr((changes, r.before, r.after, r.reason))
    assert API_KEY.decode() not in text and JWT.decode() not in text


@pytest.mark.parametrize("i", range(6), ids=[f[0] for f in framings(b"")])
def test_redact_body(i: int) -> None:
    _, body, ctype, headers = framings(request(STEPS))[i]
    clean = redact_body(body, ctype, headers)
    payload = payload_of(clean, ctype, headers)
    assert API_KEY not in payload and JWT not in payload and b"<redacted>" in payload
    assert parse_request(payload).steps == STEPS


def test_redact_body_refuses_what_it_cannot_read() -> None:
    assert redact_body(b"\x00\x00", GRPC, {}) is None
    assert redact_body(grpc(b"\x0a\x50" + API_KEY), GRPC, {}) is None


# ---- bad input: skipped with a reason, never an exception ------------------------------

GOOD = request(STEPS)
BAD = [
    ("truncated frame", grpc(GOOD)[:-3], GRPC, {}, "truncated"),
    ("lying length", b"\x00" + (len(GOOD) + 9).to_bytes(4, "big") + GOOD, GRPC, {}, "lying length"),
    ("gzip bomb", b"\x01" + b"\0\0\0\0" + b"", CONNECT, CGZ, "FramingError"),
    ("two envelopes (streaming)", grpc(GOOD) + grpc(GOOD), GRPC, {}, "more than one message"),
    ("end-stream flag", b"\x02" + grpc(GOOD)[1:], CONNECT, {}, "end-stream"),
    ("unknown content type", grpc(GOOD), "application/json", {}, "unknown content type"),
    ("field-9 entry that does not parse", grpc(request([STEPS[0], b"\x0a\x50abc"])), GRPC, {}, "additional_steps[1]"),
    ("field-9 entry with two bodies", grpc(request([len_field(28, b"") + len_field(14, b"")])), GRPC, {}, "two bodies"),
    ("field 9 not a message", grpc(GOOD + b"\x48\x01"), GRPC, {}, "wire type 0"),
    ("payload not protobuf", grpc(b"\xff\xff"), GRPC, {}, "WireError"),
    ("cascade_id not UTF-8", grpc(len_field(1, b"\xff")), GRPC, {}, "not UTF-8"),
]


@pytest.fixture(scope="module")
def bomb_body() -> bytes:
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = b"".join(c.compress(bytes(1 << 20)) for _ in range(64)) + c.flush()
    return b"\x01" + len(data).to_bytes(4, "big") + data


@pytest.mark.parametrize(("body", "ctype", "headers", "why"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_skipped_with_a_reason(body: bytes, ctype: str, headers: dict, why: str, bomb_body: bytes) -> None:
    if why == "FramingError":
        body, why = bomb_body, "inflates past the limit"
    r = correct_request(body, ctype, headers, None, max_size=LIMIT)
    assert r.status == "skipped" and r.body is None
    assert why in r.reason


def test_an_evidence_hook_that_raises_does_not_stop_traffic() -> None:
    def broken(kind: str, cmd: str, output: str):
        raise RuntimeError("store is gone")

    r = correct_request(grpc(GOOD), GRPC, {}, None, broken)
    assert r.status == "skipped" and r.body is None and "store is gone" in r.reason


def test_method_selection() -> None:
    assert call_of("/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage") is SEND
    assert call_of("/exa.language_server_pb.LanguageServerService/GetCascadeTrajectorySteps") is None
    assert call_of("/x.Svc/NotSendUserCascadeMessage") is None
