"""gRPC and Connect message framing for one unary request message.

gRPC (``application/grpc[+proto]``) and Connect streaming (``application/connect+proto``)
wrap each message in a 5-byte envelope: a flag byte and a 4-byte big-endian length.
Connect unary (``application/proto``) sends the bare message, compressed per
``content-encoding``. A SendUserCascadeMessage request is exactly one message: anything
else (a second envelope, an end-stream flag, trailing bytes) is refused, because a
rewrite of only part of a stream would send the rest unchecked.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Protocol = Literal["grpc", "connect", "connect-unary"]

_CONTENT_TYPES: Mapping[str, Protocol] = {
    "application/grpc": "grpc",
    "application/grpc+proto": "grpc",
    "application/connect+proto": "connect",
    "application/proto": "connect-unary",
}
# The header that names a compressed envelope's (or a unary body's) encoding.
_ENCODING_HEADER: Mapping[Protocol, str] = {
    "grpc": "grpc-encoding",
    "connect": "connect-content-encoding",
    "connect-unary": "content-encoding",
}
# zlib wbits: gzip framing, or zlib framing (gRPC's "deflate" is RFC 1950).
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_SUPPORTED: Mapping[Protocol, frozenset[str]] = {
    "grpc": frozenset({"gzip", "deflate"}),
    "connect": frozenset({"gzip"}),
    "connect-unary": frozenset({"gzip"}),
}
_COMPRESSED = 0x01
_END_STREAM = 0x02  # Connect: the end-of-stream message, never in a request
_PREFIX = 5


class FramingError(ValueError):
    """The body is not exactly one message this module can read and write back."""


@dataclass(frozen=True, slots=True)
class Framed:
    payload: bytes  # the protobuf message, decompressed
    protocol: Protocol
    compressed: bool  # the message came compressed, and goes back compressed
    encoding: str | None  # its encoding when compressed ("gzip", "deflate")


def protocol_for(content_type: str) -> Protocol:
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        return _CONTENT_TYPES[media]
    except KeyError:
        raise FramingError(f"unknown content type {content_type!r}") from None


def unframe(
    body: bytes,
    content_type: str,
    headers: Mapping[str, str],
    max_size: int,
    *,
    already_decoded: bool = False,
) -> Framed:
    """The one message ``body`` carries. ``headers``: lower-case names.

    ``already_decoded``: for Connect unary only, the caller already undid
    ``content-encoding`` (mitmproxy's ``get_content()`` does, and ``set_content()``
    encodes again): the body is the message, and goes back as it is. Envelopes are
    compressed inside the body, so the flag always decides for gRPC and Connect streaming."""
    protocol = protocol_for(content_type)
    if protocol == "connect-unary":
        encoding = "identity" if already_decoded else _encoding(headers, protocol)
        if encoding == "identity":
            _check_size(len(body), max_size)
            return Framed(bytes(body), protocol, False, None)
        return Framed(_decompress(body, encoding, max_size), protocol, True, encoding)
    if len(body) < _PREFIX:
        raise FramingError(f"truncated envelope: {len(body)} bytes, a prefix needs {_PREFIX}")
    flags = body[0]
    size = int.from_bytes(body[1:_PREFIX], "big")
    allowed = _COMPRESSED | (_END_STREAM if protocol == "connect" else 0)
    if flags & ~allowed:
        raise FramingError(f"envelope flag 0x{flags:02x} is not a {protocol} request flag")
    # mutation: wire-end-stream
    if flags & _END_STREAM:
        raise FramingError("Connect end-stream envelope in a request")
    end = _PREFIX + size
    if end > len(body):
        raise FramingError(f"envelope says {size} bytes, {len(body) - _PREFIX} follow (truncated or lying length)")
    # mutation: wire-trailing-bytes
    if end < len(body):
        rest = len(body) - end
        if rest >= _PREFIX and end + _PREFIX + int.from_bytes(body[end + 1 : end + _PREFIX], "big") <= len(body):
            raise FramingError("more than one message: a streaming call, not a unary request")
        raise FramingError(f"{rest} trailing bytes after the envelope")
    data = body[_PREFIX:end]
    if not flags & _COMPRESSED:
        _check_size(size, max_size)
        return Framed(bytes(data), protocol, False, None)
    encoding = _encoding(headers, protocol)
    if encoding == "identity" and protocol == "connect" and _ENCODING_HEADER[protocol] not in headers:
        # connect-es as the known gateway (3.9.27) runs it: gzip envelopes with only
        # connect-accept-encoding sent. The one encoding it offers is the one it used.
        offered = {e.strip() for e in headers.get("connect-accept-encoding", "").lower().split(",")}
        if offered == {"gzip"}:
            encoding = "gzip"
    if encoding == "identity":
        raise FramingError(f"compressed envelope but {_ENCODING_HEADER[protocol]} is identity or absent")
    return Framed(_decompress(data, encoding, max_size), protocol, True, encoding)


def reframe(framed: Framed, payload: bytes) -> bytes:
    """``payload`` framed as ``framed`` came: same protocol, same compression (deterministic)."""
    data = _compress(payload, framed.encoding) if framed.compressed else payload
    if framed.protocol == "connect-unary":
        return data
    flags = _COMPRESSED if framed.compressed else 0
    return bytes([flags]) + len(data).to_bytes(4, "big") + data


def _encoding(headers: Mapping[str, str], protocol: Protocol) -> str:
    name = _ENCODING_HEADER[protocol]
    encoding = (headers.get(name) or "identity").strip().lower()
    if encoding != "identity" and encoding not in _SUPPORTED[protocol]:
        raise FramingError(f"unsupported {name}: {encoding!r}")
    return encoding


def _check_size(size: int, max_size: int) -> None:
    if size > max_size:
        raise FramingError(f"message of {size} bytes exceeds the limit of {max_size}")


def _decompress(data: bytes, encoding: str, max_size: int) -> bytes:
    """Inflate at most ``max_size`` bytes: a small bomb never gets to expand in memory."""
    d = zlib.decompressobj(_WBITS[encoding])
    out = bytearray()
    chunk = bytes(data)
    try:
        while not d.eof:
            before = len(out)
            # mutation: wire-bomb-inflated
            out += d.decompress(chunk, max_size + 1 - len(out))
            if len(out) > max_size:
                raise FramingError(f"{encoding} message inflates past the limit of {max_size} bytes")
            chunk = d.unconsumed_tail
            if not chunk and len(out) == before:
                break
    except zlib.error as e:
        raise FramingError(f"bad {encoding} data: {e}") from None
    if not d.eof:
        raise FramingError(f"truncated {encoding} data")
    if d.unused_data:
        raise FramingError(f"{len(d.unused_data)} bytes after the {encoding} stream")
    return bytes(out)


def _compress(payload: bytes, encoding: str | None) -> bytes:
    if encoding == "gzip":
        # mutation: wire-gzip-timestamp
        return gzip.compress(payload, mtime=0)  # mtime 0: the same input gives the same bytes
    if encoding == "deflate":
        return zlib.compress(payload)
    raise FramingError(f"cannot compress with {encoding!r}")
