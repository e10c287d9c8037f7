"""Protobuf wire format at byte level: spans, varints, and refusals of malformed input."""

from __future__ import annotations

import itertools

import pytest
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.wire import (
    LEN,
    VARINT,
    Field,
    WireError,
    encode_varint,
    fields,
    int32,
    len_field,
    read_varint,
    varint_field,
)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 2**31 - 1, 2**32, 2**63, 2**64 - 1])
def test_varint_round_trip(n: int) -> None:
    encoded = encode_varint(n)
    assert read_varint(encoded, 0) == (n, len(encoded))


@pytest.mark.parametrize("code", [-1, -2, -(2**31), 0, 1, 2, 255, 2**31 - 1])
def test_int32_field_encodes_as_protobuf(code: int) -> None:
    # proto3 int32: negative values are 10-byte two's complement varints.
    expected = pb.CortexStepRunCommand(exit_code=code).SerializeToString()
    assert varint_field(6, code) == expected
    assert int32(read_varint(expected, 1)[0]) == code


def test_negative_varint_is_ten_bytes() -> None:
    assert len(encode_varint(-1)) == 10


def test_spans_cover_the_message() -> None:
    msg = pb.CortexStepRunCommand(command_line="ls", blocking=True, exit_code=2, combined_output={"full": "x"})
    buf = msg.SerializeToString()
    found = fields(buf)
    assert [f.number for f in found] == [6, 11, 21, 23]
    assert found[0].start == 0 and found[-1].end == len(buf)
    assert all(a.end == b.start for a, b in itertools.pairwise(found))
    cmd = found[-1]
    assert cmd == Field(23, LEN, cmd.start, len(buf), cmd.start + 3)  # 2-byte tag, 1-byte length
    assert buf[cmd.value_start : cmd.end] == b"ls"
    assert found[0].wire_type == VARINT


def test_fixed_width_fields_are_spanned() -> None:
    buf = b"\x09" + b"\x00" * 8 + b"\x15" + b"\x00" * 4  # field 1 I64, field 2 I32
    assert [(f.number, f.end) for f in fields(buf)] == [(1, 9), (2, 14)]


def test_memoryview_input() -> None:
    buf = len_field(1, b"abc") + varint_field(2, 5)
    assert fields(memoryview(buf)) == fields(buf)


@pytest.mark.parametrize(
    ("buf", "why"),
    [
        (b"\x08", "truncated varint"),
        (b"\x08" + b"\xff" * 10 + b"\x01", "longer than 10 bytes"),
        (b"\x08" + b"\xff" * 9 + b"\x7f", "overflows 64 bits"),
        (b"\x0a\x05abc", "runs past the end"),
        (b"\x0a", "truncated varint"),
        (b"\x0b\x0c", "groups"),
        (b"\x0c", "groups"),
        (b"\x0e", "invalid wire type"),
        (b"\x0f", "invalid wire type"),
        (b"\x00\x01", "field number 0"),
        (b"\x09\x00\x00", "runs past the end"),
    ],
)
def test_malformed_input_is_refused(buf: bytes, why: str) -> None:
    with pytest.raises(WireError, match=why):
        fields(buf)


def test_wire_error_is_a_value_error() -> None:
    assert issubclass(WireError, ValueError)


def test_len_field_matches_gencode() -> None:
    assert len_field(23, b"npm test") == pb.CortexStepRunCommand(command_line="npm test").SerializeToString()
    big = "x" * 300  # a two-byte length
    assert len_field(23, big.encode()) == pb.CortexStepRunCommand(command_line=big).SerializeToString()
