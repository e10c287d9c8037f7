"""The protobuf wire format at byte level: fields as spans into the buffer.

Byte-exact output needs this level (protobuf runtimes re-serialize in field
order): a field we do not change is copied as the bytes it came as.
"""

from __future__ import annotations

from typing import NamedTuple

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
_MAX_FIELD_NUMBER = 2**29 - 1
_FIXED_SIZE = {I64: 8, I32: 4}

Buffer = bytes | bytearray | memoryview


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message (as far as we read it)."""


class Field(NamedTuple):
    """One field's span in its buffer. A NamedTuple, not a frozen dataclass: a request has
    thousands of fields, and a frozen dataclass costs ten times as much to build."""

    number: int
    wire_type: int
    start: int  # where its tag starts
    end: int  # one past its last byte
    value_start: int  # where its value starts (for LEN: the payload, after the length)


_new = tuple.__new__


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = 0
    for i in range(10):
        if pos >= len(buf):
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if result >= 1 << 64:
                raise WireError("varint overflows 64 bits")
            return result, pos
    raise WireError("varint longer than 10 bytes")


def encode_varint(n: int) -> bytes:
    """A varint; a negative number as its 64-bit two's complement (10 bytes), as protobuf does for int32/int64."""
    if n < 0:
        # mutation: wire-negative-varint
        n += 1 << 64
    if not 0 <= n < 1 << 64:
        raise ValueError(f"{n} does not fit a varint")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    if not 1 <= number <= _MAX_FIELD_NUMBER:
        raise ValueError(f"field number {number} out of range")
    return encode_varint(number << 3 | wire_type)


def len_field(number: int, payload: Buffer) -> bytes:
    return tag(number, LEN) + encode_varint(len(payload)) + bytes(payload)


def varint_field(number: int, value: int) -> bytes:
    return tag(number, VARINT) + encode_varint(value)


def fields(buf: Buffer) -> list[Field]:
    """Every top-level field of ``buf`` in order; their spans cover ``buf`` exactly.

    Groups (wire types 3/4) are refused: no message here uses them, and skipping one
    means trusting its nesting."""
    out: list[Field] = []
    append = out.append
    pos, end = 0, len(buf)
    while pos < end:
        start = pos
        # One- and two-byte tags and lengths (fields below 2048, values below 16 KiB) are the
        # common case: decoded here without a call; longer ones by read_varint.
        key = buf[pos]
        if key < 0x80:
            pos += 1
        elif pos + 1 < end and buf[pos + 1] < 0x80:
            key = (key & 0x7F) | buf[pos + 1] << 7
            pos += 2
        else:
            key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0 or number > _MAX_FIELD_NUMBER:
            raise WireError(f"field number {number} at byte {start}")
        if wire_type == LEN:
            size = buf[pos] if pos < end else 0x80
            if size < 0x80:
                value_start = pos + 1
            elif pos + 1 < end and buf[pos + 1] < 0x80:
                size, value_start = (size & 0x7F) | buf[pos + 1] << 7, pos + 2
            else:
                size, value_start = read_varint(buf, pos)
            pos = value_start + size
        elif wire_type == VARINT:
            value_start = pos
            if pos < end and buf[pos] < 0x80:
                pos += 1
            else:
                _, pos = read_varint(buf, pos)
        elif wire_type in _FIXED_SIZE:
            value_start = pos
            pos += _FIXED_SIZE[wire_type]
        # mutation: wire-group
        elif wire_type in (SGROUP, EGROUP):
            raise WireError(f"field {number}: groups (wire type {wire_type}) are not supported")
        else:
            raise WireError(f"field {number}: invalid wire type {wire_type}")
        if pos > end:
            raise WireError(f"field {number} at byte {start} runs past the end")
        append(_new(Field, (number, wire_type, start, pos, value_start)))  # skips NamedTuple.__new__ (Python code)
    return out


def value(buf: Buffer, f: Field) -> bytes:
    """The value bytes of a field (for LEN: the payload without its length)."""
    return bytes(buf[f.value_start : f.end])


def varint_value(buf: Buffer, f: Field) -> int:
    if f.wire_type != VARINT:
        raise WireError(f"field {f.number}: wire type {f.wire_type}, expected a varint")
    return read_varint(buf, f.value_start)[0]


def int32(n: int) -> int:
    """A decoded varint read as int32, as protobuf does (the low 32 bits, signed)."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def string(buf: Buffer, f: Field) -> str:
    if f.wire_type != LEN:
        raise WireError(f"field {f.number}: wire type {f.wire_type}, expected a string")
    try:
        return bytes(buf[f.value_start : f.end]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise WireError(f"field {f.number}: string is not UTF-8 ({e.reason})") from None
