"""core/layout.py: where a body's items lie in the bytes the client sent (the memo's cuts)."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest
from native_bridge.core.layout import layout
from native_bridge.core.splice import around
from support.histories.agent import Session
from support.histories.encodings import ENCODINGS

LAST = 16


def _as_orjson_writes_it(raw: bytes, doc: dict[str, Any], key: str) -> dict[int, tuple[int, int]] | None:
    """The spans of the last ``LAST`` items of a body that is ``orjson.dumps(doc)``, each as long
    as its encoding, back from the "]" (splice.around); None: it is not orjson's bytes."""
    if orjson.dumps(doc) != raw:
        return None
    items, spans = doc[key], {}
    end = len(raw) - len(around(doc, key)[1])
    for i in range(len(items) - 1, max(len(items) - LAST, 0) - 1, -1):
        spans[i] = (end - len(orjson.dumps(items[i])), end)
        end = spans[i][0] - 1
    return spans


@pytest.mark.parametrize("style", sorted(ENCODINGS))
@pytest.mark.parametrize("dialect", ["chat", "anthropic", "responses"])
def test_a_body_in_any_style_is_laid_out_where_its_items_lie(style: str, dialect: str) -> None:
    """A body is taken as orjson's own exactly when writing it gives its bytes, and its items'
    spans are then their encodings' lengths; any other style is found by reading its bytes
    (orjson False); in every style the spans hold the items they name."""
    for rounds in (1, 4, 9):
        s = Session(dialect, 2, seed=rounds)
        doc = s.doc(rounds)
        key = "input" if dialect == "responses" else "messages"
        raw = ENCODINGS[style](doc)
        got = layout(raw, doc, key, LAST)
        assert got is not None
        own = _as_orjson_writes_it(raw, doc, key)
        assert got.orjson == (own is not None)
        if own is not None:
            assert got.spans == own
        for i, (a, b) in got.spans.items():
            assert orjson.loads(raw[a:b]) == doc[key][i]
        assert raw[got.head - 1 : got.head] == b"[" and raw[got.stop : got.stop + 1] == b"]"


def test_one_byte_off_orjsons_own_is_read_from_the_bytes() -> None:
    """A space after one item's comma, or one key's value written otherwise: not orjson's bytes."""
    doc = Session("chat", 1, seed=3).doc(6)
    raw = orjson.dumps(doc)
    rng = random.Random(5)
    for _ in range(10):
        at = rng.choice([i for i in range(len(raw)) if raw[i : i + 2] == b",{"])
        spaced = raw[: at + 1] + b" " + raw[at + 1 :]
        got = layout(spaced, doc, "messages", LAST)
        assert got is not None and not got.orjson
        assert all(orjson.loads(spaced[a:b]) == doc["messages"][i] for i, (a, b) in got.spans.items())
    other = raw.replace(b'"stream":true', b'"stream": true')
    got = layout(other, doc, "messages", LAST)
    assert got is not None and not got.orjson


@pytest.mark.parametrize("style", ["compact", "python"])
def test_an_item_too_deep_for_orjson_to_write_in_the_body_has_no_layout(style: str) -> None:
    """An item orjson writes alone but not at its depth in the body (orjson writes 254 levels):
    the rewrite cannot encode the body, so there is no layout, whatever the style."""
    for depth, expected in ((250, True), (253, False)):
        deep: Any = "x"
        for _ in range(depth):
            deep = [deep]
        orjson.dumps(deep)  # alone, it is written
        doc = {"model": "m", "messages": [{"role": "user", "content": deep}]}
        raw = orjson.dumps(doc) if style == "compact" and expected else json.dumps(doc).encode()
        assert (layout(raw, doc, "messages", LAST) is not None) == expected, (depth, style)
