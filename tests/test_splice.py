"""A rewritten body written from the previous turn's bytes (core/splice.py) is orjson.dumps of the whole.

The memo tests compare whole rewrites with and without a memo (the splice included); these pin
the encoder itself: any keys around the items, any elements, any prefix shared (or not: an
element replaced by another object), and the depth orjson refuses to write.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from native_bridge.core.splice import Reuse, encode

ITEMS, STEPS, DELTA = "messages", "additional_steps", "delta_start"

scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text()
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(), kids, max_size=3))
keys = st.lists(st.text().filter(lambda k: k not in (ITEMS, STEPS, DELTA)), max_size=3, unique=True)


def whole(doc: dict[str, Any], items: list[Any], steps: list[Any], delta: int) -> bytes:
    new = dict(doc)
    new[ITEMS], new[STEPS], new[DELTA] = items, steps, delta
    return orjson.dumps(new)


def doc_of(before: list[str], after: list[str], fill: Any) -> dict[str, Any]:
    return {**{k: fill for k in before}, ITEMS: [], **{k: fill for k in after if k not in before}}


@settings(max_examples=300, deadline=None)
@given(
    keys,
    keys,
    values,
    st.lists(values, max_size=6),
    st.lists(values, max_size=6),
    st.data(),
)
def test_a_spliced_body_is_the_whole_encoded(before, after, fill, items, steps, data) -> None:
    doc = doc_of(before, after, fill)
    first = encode(doc, ITEMS, items, STEPS, steps, DELTA, 3)
    assert first is not None and first.body == whole(doc, items, steps, 3)
    # The next turn keeps a prefix of each array (maybe less than the memo offers) and adds more.
    k = data.draw(st.integers(0, len(items)))
    j = data.draw(st.integers(0, len(steps)))
    items2 = items[:k] + data.draw(st.lists(values, max_size=3))
    steps2 = steps[:j] + data.draw(st.lists(values, max_size=3))
    if k and data.draw(st.booleans()):  # an element the writer replaced: not copied
        items2[data.draw(st.integers(0, k - 1))] = data.draw(values)
    offered_items = data.draw(st.integers(0, len(items)))
    offered_steps = data.draw(st.integers(0, len(steps)))
    doc2 = doc_of(data.draw(keys), after, fill)
    reuse = Reuse(first, items, steps, offered_items, offered_steps)
    second = encode(doc2, ITEMS, items2, STEPS, steps2, DELTA, 7, reuse)
    assert second is not None and second.body == whole(doc2, items2, steps2, 7)
    for ends in (second.item_ends, second.step_ends):
        assert all(second.body[e : e + 1] in (b",", b"]") for e in ends)
    third = encode(doc2, ITEMS, items2, STEPS, steps2, DELTA, 7, Reuse(second, items2, steps2, 99, 99))
    assert third is not None and third.body == second.body  # a whole resend copies all


def test_the_keys_it_adds_or_lacks_leave_it_to_the_whole_encoder() -> None:
    assert encode({ITEMS: [], DELTA: 1}, ITEMS, [], STEPS, [], DELTA, 0) is None
    assert encode({ITEMS: [], STEPS: []}, ITEMS, [], STEPS, [], DELTA, 0) is None
    assert encode({"other": []}, ITEMS, [], STEPS, [], DELTA, 0) is None


@pytest.mark.parametrize("depth", [250, 251, 252, 253, 254, 255])
def test_an_element_too_deep_fails_as_the_whole_does(depth: int) -> None:
    x: Any = 1
    for _ in range(depth):
        x = [x]
    try:
        expected: bytes | None = whole({ITEMS: []}, [x], [], 0)
    except orjson.JSONEncodeError:
        expected = None
    if expected is None:
        with pytest.raises(orjson.JSONEncodeError):
            encode({ITEMS: []}, ITEMS, [x], STEPS, [], DELTA, 0)
    else:
        got = encode({ITEMS: []}, ITEMS, [x], STEPS, [], DELTA, 0)
        assert got is not None and got.body == expected
