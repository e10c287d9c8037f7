"""A request body in each style clients write JSON in (the design brief's "The client's bytes").

The same document, the bytes differing only as real clients' encoders make them differ: the memo
must resume a conversation from its own bytes in every one of them (issue 40). Deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

_GO = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
)


def compact(doc: dict[str, Any]) -> bytes:
    """Node, Rust, httpx 0.28+: orjson's own bytes."""
    return orjson.dumps(doc)


def python(doc: dict[str, Any]) -> bytes:
    """Python's default ``json.dumps`` (requests, aiohttp, LiteLLM's hosted_vllm): ", ", ": ", \\uXXXX."""
    return json.dumps(doc).encode()


def go(doc: dict[str, Any]) -> bytes:
    """Go's encoding/json: compact, with <, >, &, U+2028 and U+2029 escaped (they occur only in strings)."""
    raw = orjson.dumps(doc)
    for plain, escaped in _GO:
        raw = raw.replace(plain, escaped)
    return raw


def pretty(doc: dict[str, Any]) -> bytes:
    """Pretty-printed, two spaces, UTF-8 as it is (JSON.stringify(doc, null, 2))."""
    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def mixed(doc: dict[str, Any]) -> bytes:
    """A proxy that re-encodes only some fields: its own keys in Python's style, and of a list it
    passes on (the items), every third element as the client wrote it (compact), the rest its way."""
    parts = []
    for key, value in doc.items():
        if isinstance(value, list):
            inner = b", ".join(compact(v) if i % 3 == 0 else python(v) for i, v in enumerate(value))  # type: ignore[arg-type]
            encoded = b"[" + inner + b"]"
        else:
            encoded = json.dumps(value).encode()
        parts.append(json.dumps(key).encode() + b": " + encoded)
    return b"{" + b", ".join(parts) + b"}"


ENCODINGS: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "compact": compact,
    "python": python,
    "go": go,
    "pretty": pretty,
    "mixed": mixed,
}
