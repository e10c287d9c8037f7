"""A rewritten body written from the previous turn's bytes: only what is new is encoded.

A rewritten body is ``{...the client's keys, items: [written items], ...its other keys,
additional_steps: [steps], delta_start: n}``, and an agent's next request keeps every written
item and step before the memo's cut. So a full memo entry keeps its body's two arrays as
orjson wrote them (:class:`Written`: each array's elements joined by ``,``, with where each
ends), and the next turn copies the bytes of the elements it shares (the very same objects)
and encodes only the others. The result is byte for byte ``orjson.dumps`` of the whole body
(orjson writes a dict as ``{"key":value,...}`` and a list as ``[a,b]``, nothing between);
each element is encoded at the depth it has in the body, so one too deep to write fails here
as it fails there.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import orjson

_OPEN, _CLOSE = len(b'{"":['), len(b"]}")


@dataclass(slots=True)
class Written:
    """A rewritten body as orjson wrote it, and where its two arrays' elements end in it."""

    body: bytes
    item_ends: list[int]  # body offsets: item i ends at item_ends[i] (its "," or the "]" follows)
    items_at: int  # the first item's offset (just past the items array's "[")
    step_ends: list[int]
    steps_at: int


# A body's bytes before its items (through the "[") and after them (from the "]").
Frame = tuple[bytes | memoryview, bytes | memoryview]


@dataclass(frozen=True, slots=True)
class Reuse:
    """What a resumed rewrite may copy: the first ``n_items`` of ``out`` and ``n_steps`` of
    ``docs`` (an entry's written items and steps, as objects) from ``written``; ``frame``: the
    body's bytes before its items (through the "[") and after them (from the "]"), when they
    are orjson's encoding of the body's other keys (the tools, a system prompt: not encoded
    again on every turn)."""

    written: Written
    out: list[Any]
    docs: list[Any]
    n_items: int
    n_steps: int
    frame: Frame | None = None


def around(doc: dict[str, Any], key: str) -> tuple[bytes, bytes]:
    """``doc``'s orjson bytes before the array at ``key`` (through its "[") and after it (from "]")."""
    keys = list(doc)
    at = keys.index(key)
    before = orjson.dumps({k: doc[k] for k in keys[:at]})
    after = orjson.dumps({k: doc[k] for k in keys[at + 1 :]})
    head = before[:-1] + (b"," if at else b"") + orjson.dumps(key) + b":["
    tail = b"]" + (b"," + after[1:] if len(after) > 2 else b"}")
    return head, tail


def _element(x: Any) -> bytes:
    """``x`` as orjson writes it inside a body's top-level array (that depth: the same limit)."""
    return orjson.dumps({"": [x]})[_OPEN:-_CLOSE]


def _shared(xs: list[Any], old: list[Any], n: int) -> int:
    """How many of the first ``n`` elements of ``xs`` are ``old``'s very objects."""
    n = min(n, len(xs), len(old))
    same = list(map(operator.is_, xs[:n], old[:n]))
    return n if all(same) else same.index(False)


class _Body:
    """The body's bytes as pieces (copied once, at the end), and its length so far."""

    def __init__(self) -> None:
        self.parts: list[bytes | memoryview] = []
        self.size = 0

    def add(self, b: bytes | memoryview) -> None:
        self.parts.append(b)
        self.size += len(b)

    def array(self, xs: list[Any], old: Written | None, ends: list[int], at: int, keep: int) -> list[int]:
        """``xs``'s elements joined by ","; the first ``keep`` copied from ``old`` (their
        ``ends`` there, from ``at``). Where each element ends in this body."""
        out: list[int] = []
        if keep:
            assert old is not None
            shift = self.size - at
            self.add(memoryview(old.body)[at : ends[keep - 1]])
            out = [e + shift for e in ends[:keep]] if shift else ends[:keep]
        for i, x in enumerate(xs[keep:]):
            if keep + i:
                self.add(b",")
            self.add(_element(x))
            out.append(self.size)
        return out


def encode(
    doc: dict[str, Any],
    items_key: str,
    items: list[Any],
    steps_key: str,
    steps: list[Any],
    delta_key: str,
    delta: int,
    reuse: Reuse | None = None,
) -> Written | None:
    """``orjson.dumps`` of ``doc`` with ``items_key`` set to ``items`` and the two step keys
    added (``Written.body``); None when the keys are not laid out so (the caller encodes the
    body whole). Raises orjson.JSONEncodeError as orjson.dumps would."""
    if steps_key in doc or delta_key in doc or items_key not in doc:
        return None
    head, tail = reuse.frame if reuse is not None and reuse.frame is not None else around(doc, items_key)
    old = reuse.written if reuse is not None else None
    k_items = _shared(items, reuse.out, reuse.n_items) if reuse is not None else 0
    k_steps = _shared(steps, reuse.docs, reuse.n_steps) if reuse is not None else 0
    b = _Body()
    b.add(head)
    items_at = b.size
    item_ends = b.array(items, old, old.item_ends if old else [], old.items_at if old else 0, k_items)
    b.add(tail[:-1])
    b.add(b"," + orjson.dumps(steps_key) + b":[")  # the steps go where the body's "}" was
    steps_at = b.size
    step_ends = b.array(steps, old, old.step_ends if old else [], old.steps_at if old else 0, k_steps)
    b.add(b"]," + orjson.dumps(delta_key) + b":" + orjson.dumps(delta) + b"}")
    return Written(b"".join(b.parts), item_ends, items_at, step_ends, steps_at)
