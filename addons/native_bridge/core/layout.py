"""Where a body's items lie in its own bytes, whatever style the client wrote them in.

The memo (memo/) cuts a conversation between two items, at byte offsets in the body the
client sent: compact (Node, Rust, httpx), Python's ``json.dumps`` (``", "``, ``": "``,
``\\uXXXX``), Go's (``\\u003c``), pretty-printed, or a mix of these. Those offsets are found
here, in the body's bytes, never in a re-encoding of them.

orjson finds them: given the bytes from where a value starts, it parses that value (native
code, however large) and reports where the first byte that is not whitespace after it lies
("unexpected content after document"). A body that is orjson's own encoding of what it holds
needs not even that: each item's length is its encoding's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from .splice import around

_WS = re.compile(rb"[ \t\n\r]*")
_AFTER = "unexpected content after document"  # orjson's message when the value ends before the bytes do
_ENDS_A_VALUE = frozenset(b",:]} \t\n\r")  # bytes that cannot go on a value (a number) that ends before them

Extent = tuple[int, int]  # an item's first byte, and the offset just past its last


@dataclass(slots=True)
class Layout:
    """A body's items array in its bytes: ``raw[:head]`` ends with its "[", ``raw[stop]`` is its
    "]"; ``spans``: the last items' (by index), at least ``last`` of them; ``orjson``: the body
    is orjson's own encoding of what it holds."""

    head: int
    stop: int
    spans: dict[int, Extent]
    orjson: bool


def skip(raw: bytes, at: int) -> int:
    """The offset of the first byte from ``at`` on that is not JSON whitespace."""
    # re's stubs give match() as Optional; a pattern that matches the empty string always matches.
    return _WS.match(raw, at).end()  # type: ignore[union-attr]


def value_end(raw: bytes, at: int, guess: int) -> int:
    """The offset just past the JSON value that starts at ``raw[at]`` (-1: none does), read by
    orjson from a window of about ``guess`` bytes that grows until the value ends in it."""
    n, view = len(raw), memoryview(raw)
    size = guess + guess // 2 + 64
    while True:
        stop = min(n, at + size)
        try:
            orjson.loads(view[at:stop])
        except orjson.JSONDecodeError as e:
            if e.msg.startswith(_AFTER):  # e.pos: the next byte that is not whitespace, in characters
                doc = e.doc
                after = e.pos if len(doc) == stop - at else len(doc[: e.pos].encode())
                return at + len(raw[at : at + after].rstrip(b" \t\n\r"))
            if stop == n:
                return -1
        else:  # the value and whitespace fill the window: unless a number goes on past it
            if stop == n or raw[stop] in _ENDS_A_VALUE or raw[stop - 1] in _ENDS_A_VALUE:
                return at + len(raw[at:stop].rstrip(b" \t\n\r"))
        size *= 4


def item_spans(raw: bytes, at: int, items: list[Any], first: int = 0) -> dict[int, Extent] | None:
    """The spans of ``items`` (numbered from ``first``: after that many others, each new one
    after a ","), one after another from ``at`` in an array whose "]" follows the last; None:
    they are not laid out so. An item written as orjson writes it is found by one compare (a
    valid JSON value is never a prefix of another, unless a number goes on); any other by
    :func:`value_end`."""
    spans: dict[int, Extent] = {}
    n = len(raw)
    for i, item in enumerate(items, first):
        at = skip(raw, at)
        if i:
            if raw[at : at + 1] != b",":
                return None
            at = skip(raw, at + 1)
        mine = orjson.dumps(item)
        end = at + len(mine)
        if not (raw.startswith(mine, at) and (end == n or raw[end] in _ENDS_A_VALUE)):
            end = value_end(raw, at, len(mine))
            if end < 0:
                return None
        spans[i] = (at, end)
        at = end
    at = skip(raw, at)
    return spans if raw[at : at + 1] == b"]" else None


def layout(raw: bytes, doc: dict[str, Any], key: str, last: int) -> Layout | None:
    """Where ``doc[key]`` (a list; ``doc`` parsed from ``raw``) lies in ``raw``, with
    the spans of at least its ``last`` items; None: it cannot be told (a key twice, or orjson
    cannot write the body)."""
    items = doc[key]
    try:
        mine = orjson.dumps(doc)
    except orjson.JSONEncodeError:
        return None  # nested deeper than orjson writes: the rewrite cannot encode it either
    if mine == raw:  # orjson's own bytes: each item is as long as its encoding, the rest is around()
        before, after = around(doc, key)
        stop = len(raw) - len(after)
        spans, end = {}, stop
        for i in range(len(items) - 1, max(len(items) - last, 0) - 1, -1):
            spans[i] = (end - len(orjson.dumps(items[i])), end)
            end = spans[i][0] - 1  # the "," before it
        return Layout(len(before), stop, spans, True)
    head = _head(raw, doc, key)
    if head < 0:
        return None
    every = item_spans(raw, head, items)  # every item: where the last ones start is known only so
    if every is None:
        return None
    stop = skip(raw, every[len(items) - 1][1] if items else head)
    if raw[stop : stop + 1] != b"]" or not _rest(raw, stop + 1, doc, list(doc)[list(doc).index(key) + 1 :]):
        return None
    keep = range(max(len(items) - last, 0), len(items))
    return Layout(head, stop, {i: every[i] for i in keep}, False)


def _head(raw: bytes, doc: dict[str, Any], key: str) -> int:
    """The offset just past the "[" of ``doc[key]`` in ``raw``, each key before it read in the
    bytes as the one ``doc`` holds there (a key written twice is not: -1)."""
    at = skip(raw, 0)
    if raw[at : at + 1] != b"{":
        return -1
    at = skip(raw, at + 1)
    for name, value in doc.items():
        at = _key(raw, at, name)
        if at < 0:
            return -1
        if name == key:
            return at + 1 if raw[at : at + 1] == b"[" else -1
        end = value_end(raw, at, len(orjson.dumps(value)))
        if end < 0:
            return -1
        at = skip(raw, end)
        if raw[at : at + 1] != b",":
            return -1
        at = skip(raw, at + 1)
    return -1


def _key(raw: bytes, at: int, name: str) -> int:
    """Past the ``"name":`` at ``at`` and the whitespace after it (-1: another key is there)."""
    end = value_end(raw, at, len(name) + 2)
    if end < 0 or raw[at : at + 1] != b'"' or orjson.loads(raw[at:end]) != name:
        return -1
    colon = skip(raw, end)
    return skip(raw, colon + 1) if raw[colon : colon + 1] == b":" else -1


def _rest(raw: bytes, at: int, doc: dict[str, Any], names: list[str]) -> bool:
    """Whether ``raw[at:]`` (just past the items' "]") is ``doc``'s keys ``names``, each once, and
    the body's end."""
    at = skip(raw, at)
    for name in names:
        if raw[at : at + 1] != b",":
            return False
        at = _key(raw, skip(raw, at + 1), name)
        if at < 0:
            return False
        end = value_end(raw, at, len(orjson.dumps(doc[name])))
        if end < 0:
            return False
        at = skip(raw, end)
    return raw[at : at + 1] == b"}" and skip(raw, at + 1) == len(raw)
