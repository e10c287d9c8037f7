"""Filling the memo after a full rewrite: the reader's and the writer's state noted at the cuts
near the end of the items, the safe ones among them made :class:`~.entry.Mark` s, and the
:class:`~.entry.Entry` that holds them (a resume makes its successor the same way, resume.py)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..builder import Part, Placement, Tally
from ..config import Config
from ..dialects import Cursor, Dialect, Output
from ..history import History, ToolCall, ToolResult, TurnRole
from ..layout import Layout
from ..settle import Settled, Span, cut_ok
from ..splice import around
from .entry import MAX_MARKS, Entry, Mark

_NONE = object()  # no item written yet


class ReadAt(NamedTuple):
    """The reader's state at the cut before item ``item``."""

    item: int
    cursor: Cursor
    calls: int  # the calls before the cut (those before the reading began too)
    results: int
    last_turn: TurnRole | None  # the last turn's role (None: none yet)


class WroteAt(NamedTuple):
    """The writer's state at a cut (:class:`~..dialects.Output`'s, its items counted)."""

    out_len: int
    pending: Any  # the last item written, a JSON value (_NONE: none yet)
    dropped: bool
    gap: tuple[int, ...]


class Carried(NamedTuple):
    """A call or a result that carries an id, at its position."""

    pos: int
    id: str


@dataclass(slots=True)
class Cuts:
    """What :func:`marks_at` makes one reading's marks from: the cuts it noted, where they end
    in the body, and the rewrite's state there."""

    dialect: Dialect
    items: list[Any]
    ends: dict[int, int]  # the raw offset just past item i-1, by i
    reads: list[ReadAt]
    writes: dict[int, WroteAt]  # by the index of the cut
    spans: list[Span]  # the pins' (settle.py)
    first_pos: dict[str, int]  # each id: the position of the first call or result carrying it
    ids: list[Carried]  # those at or after the first cut read (ids_of)
    step_calls: list[ToolCall]
    docs: list[dict[str, Any]]  # the steps, in step_calls' order
    accounting: list[Placement]
    tally: Tally = field(default_factory=Tally)  # the steps and placements before the first cut read
    step_base: int = 0  # the steps before it: step_calls[:step_base] lie before every cut


def read_marked(
    dialect: Dialect, items: list[Any], at: Cursor, h: History, calls: int = 0, results: int = 0, tail: int = MAX_MARKS
) -> list[ReadAt]:
    """Read ``items[at.index:]`` into ``h`` (as ``dialect.read_items`` does), noting the
    reader's state at the end and at the cuts before each of the last ``tail`` items;
    ``calls`` and ``results`` count those before ``at`` that ``h`` does not hold."""
    n = len(items)
    split = max(at.index, n - tail)
    at = dialect.read_items(items, at, h, stop=split)
    states = [ReadAt(split, at, calls + len(h.calls), results + len(h.results), h.turns[-1] if h.turns else None)]
    for i in range(split, n):
        at = dialect.read_items(items, at, h, stop=i + 1)
        last = h.turns[-1] if h.turns else None
        states.append(ReadAt(i + 1, at, calls + len(h.calls), results + len(h.results), last))
    return states


def write_marked(
    dialect: Dialect, items: list[Any], start: int, stepped: Collection[int], out: Output, tail: int = MAX_MARKS
) -> dict[int, WroteAt]:
    """Write ``items[start:]`` onto ``out``, noting the writer's state at the same cuts."""
    n = len(items)
    split = max(start, n - tail)
    dialect.write_items(items, start, stepped, out, stop=split)
    states = {split: WroteAt(len(out.items), out.items[-1] if out.items else _NONE, out.dropped, out.gap)}
    for i in range(split, n):
        dialect.write_items(items, i, stepped, out, stop=i + 1)
        states[i + 1] = WroteAt(len(out.items), out.items[-1] if out.items else _NONE, out.dropped, out.gap)
    return states


def ids_of(calls: list[ToolCall], results: list[ToolResult]) -> list[Carried]:
    """Every call and result that carries an id (calls first: not in pos order)."""
    return [Carried(c.pos, c.id) for c in calls if c.id] + [Carried(r.pos, r.call_id) for r in results if r.call_id]


def marks_at(cuts: Cuts) -> list[Mark]:
    """Marks at the safe cuts among ``cuts.reads``.

    A cut is not safe either where what was written before it depends on items after it
    (settle.cut_ok: a pin's span, a Responses reasoning item and the calls that follow it)."""
    last_pos: dict[str, int] = {}
    for pos, x in cuts.ids:
        last_pos[x] = max(pos, last_pos.get(x, pos))
    # A cut is unsafe when an id is carried on both sides of it.
    first_pos = cuts.first_pos
    id_spans = [(first_pos[x], last) for x, last in last_pos.items()]
    step_base = cuts.step_base
    step_pos = [c.pos for c in cuts.step_calls[step_base:]]  # those before step_base are before every cut here
    dialect, items, spans, docs, accounting = cuts.dialect, cuts.items, cuts.spans, cuts.docs, cuts.accounting
    tally = cuts.tally
    marks = []
    for read in cuts.reads:
        index, cursor = read.item, read.cursor
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
        wrote = cuts.writes[index]
        n_steps = step_base + bisect_left(step_pos, cursor.pos)
        tally = tally.add(docs[tally.steps : n_steps], accounting[tally.placed : cursor.pos])  # reads ascend
        mark = Mark(
            index=index,
            end=cuts.ends[index],
            cursor=cursor,
            last_turn=read.last_turn,
            n_calls=read.calls,
            n_results=read.results,
            n_steps=n_steps,
            out_len=wrote.out_len,
            pending=wrote.pending,
            dropped=wrote.dropped,
            gap=wrote.gap,
            tally=tally,
        )
        marks.append(mark)
    return marks


def remember(
    raw: bytes,
    doc: dict[str, Any],
    dialect: Dialect,
    config: Config,
    history: History,
    reads: list[ReadAt],
    settled: Settled[dict[int, WroteAt]],
    where: Layout | None,
) -> Entry | None:
    """An entry for a body rewritten in full (``raw``, parsed as ``doc``, read as ``history``
    noting ``reads``, settled and written with the writer's states as ``settled.extra``), its
    items where ``where`` found them in those bytes (layout.layout: None, no entry)."""
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
    split = reads[0].cursor.pos
    tail_ids = ids_of([c for c in history.calls if c.pos >= split], [r for r in history.results if r.pos >= split])
    part = settled.part
    cuts = Cuts(
        dialect=dialect,
        items=items,
        ends={i + 1: end for i, (_, end) in where.spans.items()},
        reads=reads,
        writes=settled.extra,
        spans=list(settled.spans),
        first_pos=first_pos,
        ids=tail_ids,
        step_calls=part.step_calls,
        docs=part.docs,
        accounting=part.placements,
    )
    marks = marks_at(cuts)
    if not marks:
        return None
    entry = entry_of(
        dialect=dialect,
        config=config,
        raw=raw,
        head=where.head,
        stop=where.stop,
        marks=marks,
        items=items,
        history=history,
        part=settled.part,
        out=settled.out.items,
        first_pos=first_pos,
    )
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
    *,
    dialect: Dialect,
    config: Config,
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
    """The entry for a body and what its rewrite read, decided and wrote (the caller sets where its
    items lie, its framing and its shell)."""
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
