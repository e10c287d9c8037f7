"""Filling the memo after a full rewrite: the reader's and the writer's state noted at the cuts
near the end of the items, the safe ones among them made :class:`~.entry.Mark` s, and the
:class:`~.entry.Entry` that holds them (a resume makes its successor the same way, resume.py)."""

from __future__ import annotations

from bisect import bisect_left
from types import ModuleType
from typing import Any

from ..builder import Part, Placement, Tally
from ..dialects import Cursor, Output
from ..history import History, ToolCall, ToolResult
from ..layout import Layout
from ..settle import Span, cut_ok
from ..splice import around
from .entry import MAX_MARKS, Entry, Mark

_NONE = object()


def read_marked(
    dialect: ModuleType, items: Any, at: Cursor, h: History, calls: int = 0, results: int = 0, tail: int = MAX_MARKS
) -> list[tuple[Any, ...]]:
    """Read ``items[at.index:]`` into ``h`` (as ``dialect.read_items`` does), noting the
    reader's state at the end and at the cuts before each of the last ``tail`` items:
    (index, cursor, calls, results, last turn); ``calls`` and ``results`` count those
    before ``at`` that ``h`` does not hold."""
    n = len(items)
    split = max(at.index, n - tail)
    at = dialect.read_items(items, at, h, stop=split)
    states = [(split, at, calls + len(h.calls), results + len(h.results), h.turns[-1] if h.turns else _NONE)]
    for i in range(split, n):
        at = dialect.read_items(items, at, h, stop=i + 1)
        states.append((i + 1, at, calls + len(h.calls), results + len(h.results), h.turns[-1] if h.turns else _NONE))
    return states


def write_marked(
    dialect: ModuleType, items: Any, start: int, stepped: Any, out: Output, tail: int = MAX_MARKS
) -> dict[int, tuple[Any, ...]]:
    """Write ``items[start:]`` onto ``out``, noting the writer's state at the same cuts."""
    n = len(items)
    split = max(start, n - tail)
    dialect.write_items(items, start, stepped, out, stop=split)
    states = {split: (len(out.items), out.items[-1] if out.items else _NONE, out.dropped, out.gap)}
    for i in range(split, n):
        dialect.write_items(items, i, stepped, out, stop=i + 1)
        states[i + 1] = (len(out.items), out.items[-1] if out.items else _NONE, out.dropped, out.gap)
    return states


def ids_of(calls: list[ToolCall], results: list[ToolResult]) -> list[tuple[int, str]]:
    """(pos, id) of every call and result that carries an id (calls first: not in pos order)."""
    return [(c.pos, c.id) for c in calls if c.id] + [(r.pos, r.call_id) for r in results if r.call_id]


def marks_at(
    items: list[Any],
    ends: dict[int, int],
    reads: list[tuple[Any, ...]],
    writes: dict[int, tuple[Any, ...]],
    step_calls: list[ToolCall],
    first_pos: dict[str, int],
    tail_ids: list[tuple[int, str]],
    dialect: ModuleType,
    spans: list[Span],
    docs: list[Any],
    accounting: list[Placement],
    tally: Tally,
    step_base: int = 0,
) -> list[Mark]:
    """Marks at the safe cuts among ``reads``; ``ends``: the raw offset just past item i-1, by i.

    A cut is not safe either where what was written before it depends on items after it
    (settle.cut_ok: a pin's span, a Responses reasoning item and the calls that follow it)."""
    last_pos: dict[str, int] = {}
    for pos, x in tail_ids:
        last_pos[x] = max(pos, last_pos.get(x, pos))
    # A cut is unsafe when an id is carried on both sides of it.
    id_spans = [(first_pos[x], last) for x, last in last_pos.items()]
    step_pos = [c.pos for c in step_calls[step_base:]]  # those before step_base are before every cut here
    marks = []
    for index, cursor, n_calls, n_results, last_turn in reads:
        if index == 0:
            continue
        straddled = False  # an id on both sides of the cut (a loop: no generator on every turn)
        for first, last in id_spans:
            if first < cursor.pos <= last:
                straddled = True
                break
        if straddled:
            continue
        if not cut_ok(dialect, items, index, cursor.pos, spans):
            continue
        out_len, pending, dropped, gap = writes[index]
        n_steps = step_base + bisect_left(step_pos, cursor.pos)
        tally = tally.add(docs[tally.steps : n_steps], accounting[tally.placed : cursor.pos])  # reads ascend
        state = (n_calls, n_results, n_steps, out_len, pending, dropped, gap, tally)
        marks.append(Mark(index, ends[index], cursor, last_turn, *state))
    return marks


def remember(
    raw: bytes,
    doc: dict[str, Any],
    dialect: ModuleType,
    config: Any,
    history: History,
    reads: list[tuple[Any, ...]],
    part: Part,
    out: list[Any],
    writes: dict[int, tuple[Any, ...]],
    spans: list[Span] = (),  # type: ignore[assignment]
    where: Layout | None = None,
) -> Entry | None:
    """An entry for a body rewritten in full (``raw``, parsed as ``doc``), its items where
    ``where`` found them in those bytes (layout.layout: None, no entry)."""
    items = doc.get(dialect.ITEMS)
    if not isinstance(items, list) or not items or where is None:
        return None
    # The bytes around the items may be copied into the rewritten body only when orjson wrote them.
    framed = where.orjson
    if not framed:
        head, tail = around(doc, dialect.ITEMS)
        framed = where.head == len(head) and len(raw) - where.stop == len(tail)
        framed = framed and raw.startswith(head) and raw.endswith(tail)
    first_pos: dict[str, int] = {}
    for pos, x in ids_of(history.calls, history.results):
        if pos < first_pos.get(x, pos + 1):
            first_pos[x] = pos
    split = reads[0][1].pos
    tail_ids = ids_of([c for c in history.calls if c.pos >= split], [r for r in history.results if r.pos >= split])
    marks = marks_at(
        items,
        {i + 1: end for i, (_, end) in where.spans.items()},
        reads,
        writes,
        part.step_calls,
        first_pos,
        tail_ids,
        dialect,
        list(spans),
        part.docs,
        part.placements,
        Tally(),
    )
    if not marks:
        return None
    entry = entry_of(dialect, config, raw, where.head, where.stop, marks, items, history, part, out, first_pos)
    entry.spans, entry.framed = where.spans, framed
    entry.shell = shell_of(doc, dialect.ITEMS)
    return entry


def shell_of(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """``doc`` without its items (the key kept in its place): what a resume reuses when the bytes
    after the items are the same again (the tools, most often: parsed once per conversation)."""
    shell = dict(doc)
    shell[key] = None
    return shell


def entry_of(
    dialect: ModuleType,
    config: Any,
    raw: bytes,
    head: int,
    stop: int,
    marks: list[Mark],
    items: list[Any],
    history: History,
    part: Part,
    out: list[Any],
    first_pos: dict[str, int],
) -> Entry:
    return Entry(
        dialect=dialect,
        config=config,
        raw=raw,
        head=head,
        stop=stop,
        marks=tuple(marks),
        items=items,
        calls=history.calls,
        results=history.results,
        turns=history.turns,
        docs=part.docs,
        sources=part.sources,
        step_calls=part.step_calls,
        accounting=part.placements,
        stepped=part.stepped,
        out=out,
        first_pos=first_pos,
        spans={},
        framed=False,
    )


def thin(marks: list[Mark]) -> list[Mark]:
    """The last MAX_MARKS marks, and ever sparser older ones (a client may rewind a few turns)."""
    if len(marks) <= 2 * MAX_MARKS:
        return marks
    older = marks[:-MAX_MARKS][::2][-MAX_MARKS:]
    return older + marks[-MAX_MARKS:]
