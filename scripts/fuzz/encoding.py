"""Writing the fuzzer's documents: exactly the bytes orjson writes, at any depth (a mutation can nest
a document past the 254 levels orjson writes), and a canonical form to compare items by."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson

TOO_DEEP = "too-deep-to-encode"  # a case whose document orjson cannot write (over 254 levels): written here


def _splice_deep(raw: bytes) -> bytes:
    def deep(m: re.Match[bytes]) -> bytes:
        depth, shape = int(m.group(1)), m.group(2)
        if shape == b"l":
            return b"[" * depth + b'"x"' + b"]" * depth
        return b'{"x":' * depth + b"1" + b"}" * depth

    return re.sub(rb'"__DEEP_(\d+)_([lo])__"', deep, raw)


def _dumps(doc: Any) -> bytes:
    return _splice_deep(orjson.dumps(doc))


_CLOSE = object()  # marks the end of a container on the encoder's stack


def _dumps_any_depth(doc: Any, limit: int = 256 * 1024 * 1024) -> bytes:
    """The JSON of ``doc`` at any depth, byte for byte what orjson would write if it could (it stops
    at 254 levels with "Recursion limit reached"): containers without recursion, leaves by orjson.
    A document that contains itself, or would be larger than ``limit``, raises ValueError."""
    out: list[bytes] = []
    size = 0
    open_: set[int] = set()  # the containers being written: meeting one again is a cycle
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple) and node and node[0] is _CLOSE:
            open_.discard(node[1])
            continue
        if isinstance(node, dict | list):
            if id(node) in open_:
                raise ValueError("the document contains itself")
            open_.add(id(node))
            stack.append((_CLOSE, id(node)))
        if isinstance(node, bytes):  # a piece of syntax pushed below
            out.append(node)
            size += len(node)
        elif isinstance(node, dict):
            parts: list[Any] = [b"{"]
            for i, (k, v) in enumerate(node.items()):
                parts += [b"," if i else b"", orjson.dumps(k) + b":", v]
            parts.append(b"}")
            stack.extend(reversed(parts))
        elif isinstance(node, list):
            parts = [b"["]
            for i, v in enumerate(node):
                parts += [b"," if i else b"", v]
            parts.append(b"]")
            stack.extend(reversed(parts))
        else:
            out.append(orjson.dumps(node))
            size += len(out[-1])
        if size > limit:
            raise ValueError(f"the document would be over {limit} bytes")
    return _splice_deep(b"".join(out))


def _key(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # deeper than orjson writes (the input may be): the stdlib, with room to recurse
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            return json.dumps(obj, sort_keys=True).encode("utf-8", "surrogatepass")
        finally:
            sys.setrecursionlimit(limit)
