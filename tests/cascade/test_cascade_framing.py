"""gRPC and Connect framing: one message in, the same framing out; everything else refused with a reason."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest
from cascadekit import CONNECT, GRPC, UNARY, connect, grpc
from native_bridge.cascade.framing import Framed, FramingError, reframe, unframe

MSG = b"\x0a\x03abc" * 50
LIMIT = 1 << 20


@pytest.mark.parametrize(
    ("body", "ctype", "headers", "expected"),
    [
        (grpc(MSG), GRPC, {}, Framed(MSG, "grpc", False, None)),
        (grpc(MSG), "application/grpc+proto", {"grpc-encoding": "gzip"}, Framed(MSG, "grpc", False, None)),
        (grpc(MSG, gz=True), GRPC, {"grpc-encoding": "gzip"}, Framed(MSG, "grpc", True, "gzip")),
        (connect(MSG), CONNECT, {}, Framed(MSG, "connect", False, None)),
        (connect(MSG, gz=True), CONNECT, {"connect-content-encoding": "gzip"}, Framed(MSG, "connect", True, "gzip")),
        # gateway 3.9.27 (connect-es): gzip envelopes, only connect-accept-encoding sent
        (connect(MSG, gz=True), CONNECT, {"connect-accept-encoding": "gzip"}, Framed(MSG, "connect", True, "gzip")),
        (MSG, UNARY, {}, Framed(MSG, "connect-unary", False, None)),
        (gzip.compress(MSG), UNARY, {"content-encoding": "gzip"}, Framed(MSG, "connect-unary", True, "gzip")),
        (
            MSG,
            "Application/Proto; charset=binary",
            {"content-encoding": "identity"},
            Framed(MSG, "connect-unary", False, None),
        ),
    ],
)
def test_unframe(body: bytes, ctype: str, headers: dict[str, str], expected: Framed) -> None:
    assert unframe(body, ctype, headers, LIMIT) == expected


def test_grpc_deflate() -> None:
    body = b"\x01" + len(zlib.compress(MSG)).to_bytes(4, "big") + zlib.compress(MSG)
    framed = unframe(body, GRPC, {"grpc-encoding": "deflate"}, LIMIT)
    assert framed == Framed(MSG, "grpc", True, "deflate")
    assert unframe(reframe(framed, MSG), GRPC, {"grpc-encoding": "deflate"}, LIMIT) == framed


def test_unary_already_decoded_by_the_shell() -> None:
    # mitmproxy's get_content() undid content-encoding; set_content() will redo it.
    framed = unframe(MSG, UNARY, {"content-encoding": "gzip"}, LIMIT, already_decoded=True)
    assert framed == Framed(MSG, "connect-unary", False, None)
    assert reframe(framed, MSG) == MSG


@pytest.mark.parametrize(
    ("body", "ctype", "headers"),
    [
        (grpc(MSG), GRPC, {}),
        (grpc(MSG, gz=True), GRPC, {"grpc-encoding": "gzip"}),
        (connect(MSG, gz=True), CONNECT, {"connect-content-encoding": "gzip"}),
        (MSG, UNARY, {}),
        (gzip.compress(MSG), UNARY, {"content-encoding": "gzip"}),
    ],
)
def test_reframe_keeps_protocol_and_compression(body: bytes, ctype: str, headers: dict[str, str]) -> None:
    framed = unframe(body, ctype, headers, LIMIT)
    new = MSG + b"\x10\x01"
    out = reframe(framed, new)
    again = unframe(out, ctype, headers, LIMIT)
    assert again == Framed(new, framed.protocol, framed.compressed, framed.encoding)
    assert reframe(framed, new) == out  # deterministic
    if not framed.compressed:
        assert out == body + b"\x10\x01" if framed.protocol == "connect-unary" else out[5:] == new


def test_gzip_output_has_no_timestamp() -> None:
    out = reframe(Framed(MSG, "connect", True, "gzip"), MSG)
    assert out[5:7] == b"\x1f\x8b" and out[9:13] == b"\0\0\0\0"  # gzip MTIME = 0


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """256 MiB of zeros, gzipped to a few hundred KiB."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    data = b"".join(c.compress(chunk) for _ in range(256)) + c.flush()
    assert len(data) < 1 << 20
    return data


def test_gzip_bomb_is_refused_without_inflating_it(bomb: bytes) -> None:
    body = b"\x01" + len(bomb).to_bytes(4, "big") + bomb
    tracemalloc.start()
    try:
        with pytest.raises(FramingError, match="inflates past the limit"):
            unframe(body, CONNECT, {"connect-content-encoding": "gzip"}, 4 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak} bytes: the bomb was inflated"


def test_unary_gzip_bomb_is_refused(bomb: bytes) -> None:
    with pytest.raises(FramingError, match="inflates past the limit"):
        unframe(bomb, UNARY, {"content-encoding": "gzip"}, 4 << 20)


def test_exactly_max_size_passes() -> None:
    assert unframe(grpc(MSG, gz=True), GRPC, {"grpc-encoding": "gzip"}, len(MSG)).payload == MSG
    with pytest.raises(FramingError, match="limit"):
        unframe(grpc(MSG, gz=True), GRPC, {"grpc-encoding": "gzip"}, len(MSG) - 1)
    with pytest.raises(FramingError, match="exceeds the limit"):
        unframe(grpc(MSG), GRPC, {}, len(MSG) - 1)
    with pytest.raises(FramingError, match="exceeds the limit"):
        unframe(MSG, UNARY, {}, len(MSG) - 1)


BAD = [
    ("empty body", b"", GRPC, {}, "truncated envelope"),
    ("truncated prefix", b"\x00\x00\x00", GRPC, {}, "truncated envelope"),
    ("truncated message", grpc(MSG)[:-1], GRPC, {}, "truncated or lying length"),
    ("length that lies (too long)", b"\x00\x00\x00\x10\x00" + MSG, GRPC, {}, "truncated or lying length"),
    ("length that lies (too short)", b"\x00\x00\x00\x00\x03" + MSG, GRPC, {}, "trailing bytes"),
    ("trailing bytes", grpc(MSG) + b"\x00\x00", GRPC, {}, "trailing bytes"),
    ("two envelopes (streaming)", grpc(MSG) + grpc(MSG), GRPC, {}, "more than one message"),
    ("connect stream + end-stream", connect(MSG) + b"\x02\x00\x00\x00\x02{}", CONNECT, {}, "more than one message"),
    ("end-stream flag", b"\x02" + grpc(MSG)[1:], CONNECT, {}, "end-stream"),
    ("end-stream flag in gRPC", b"\x02" + grpc(MSG)[1:], GRPC, {}, "not a grpc request flag"),
    ("reserved flag bits", b"\x80" + grpc(MSG)[1:], CONNECT, {}, "not a connect request flag"),
    ("compressed, no encoding", grpc(MSG, gz=True), GRPC, {}, "identity or absent"),
    ("connect compressed, nothing offered", connect(MSG, gz=True), CONNECT, {}, "identity or absent"),
    (
        "connect compressed, several offered",
        connect(MSG, gz=True),
        CONNECT,
        {"connect-accept-encoding": "gzip, br"},
        "identity or absent",
    ),
    (
        "connect compressed, identity stated",
        connect(MSG, gz=True),
        CONNECT,
        {"connect-content-encoding": "identity", "connect-accept-encoding": "gzip"},
        "identity or absent",
    ),
    ("compressed, identity", grpc(MSG, gz=True), GRPC, {"grpc-encoding": "identity"}, "identity or absent"),
    ("compressed, unsupported", grpc(MSG, gz=True), GRPC, {"grpc-encoding": "snappy"}, "unsupported grpc-encoding"),
    ("connect deflate", connect(MSG, gz=True), CONNECT, {"connect-content-encoding": "deflate"}, "unsupported"),
    ("unary brotli", MSG, UNARY, {"content-encoding": "br"}, "unsupported content-encoding"),
    ("not gzip", b"\x01\x00\x00\x00\x04junk", GRPC, {"grpc-encoding": "gzip"}, "bad gzip data"),
    (
        "truncated gzip",
        b"\x01" + (9).to_bytes(4, "big") + gzip.compress(MSG)[:9],
        GRPC,
        {"grpc-encoding": "gzip"},
        "truncated gzip",
    ),
    (
        "two gzip members",
        gzip.compress(MSG) + gzip.compress(MSG),
        UNARY,
        {"content-encoding": "gzip"},
        "after the gzip",
    ),
    ("unknown content type", grpc(MSG), "application/json", {}, "unknown content type"),
    ("grpc-web", grpc(MSG), "application/grpc-web+proto", {}, "unknown content type"),
    ("connect JSON", b"{}", "application/connect+json", {}, "unknown content type"),
]


@pytest.mark.parametrize(("body", "ctype", "headers", "why"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_refused_with_a_reason(body: bytes, ctype: str, headers: dict[str, str], why: str) -> None:
    with pytest.raises(FramingError, match=why):
        unframe(body, ctype, headers, LIMIT)


def test_framing_error_is_a_value_error() -> None:
    assert issubclass(FramingError, ValueError)
