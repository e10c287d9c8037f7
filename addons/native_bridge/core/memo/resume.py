"""Resuming from a mark: a body that goes on from a remembered one is read, decided and written
only after the cut, in two halves (:func:`begin` as far as its pairs' decisions, what the planner
hop's observations need; :func:`complete` the rest), and the entry that takes its place is made
when asked (:attr:`Resumed.successor`)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from ..builder import Part, _Decision, assemble, decide, delta_start
from ..config import Config
from ..dialects import Dialect, DialectError, Output
from ..history import History
from ..layout import item_spans, layout, skip
from ..settle import Settled, settle
from ..splice import Frame, Reuse
from . import light
from .entry import Entry, Mark
from .fill import Carried, Cuts, ReadAt, WroteAt, entry_of, ids_of, marks_at, read_marked, shell_of, thin, write_marked
from .light import join, lighten
from .store import Found, Memo


@dataclass(slots=True)
class Resumed:
    """A rewrite continued from a mark: what rewrite() needs to finish it, and the new entry
    (``successor()``: made when asked, which may be once the request has gone)."""

    doc: dict[str, Any]  # the new body without the items before the mark
    history: History
    part: Part
    out: list[Any]
    successor: Callable[[], Entry]
    config: Config  # the new entry's
    replaces: Entry | None
    fresh: History | None = None  # the calls and results after the cut: the only ones decided now
    decisions: list[_Decision] | None = None  # their decisions, before settle pinned any (observe.py)
    delta: int = 0  # delta_start (made here: it looks back at the calls before the cut)
    reuse: Reuse | None = None  # what the rewritten body may copy of the entry's (splice.py)
    shared: int = 0  # the bytes the new body holds of the entry's (Memo.put)


class Rest(NamedTuple):
    """A new body parsed from a mark on (:func:`_parse_rest`)."""

    doc: dict[str, Any]  # the body's object with only the items after the mark
    frame: Frame | None  # its bytes before and after the items, when they may be copied (splice.Reuse.frame)
    stop: int  # its items array's "]"
    framed: bool  # orjson wrote the bytes around its items (Entry.framed)


def _parse_rest(raw: bytes, entry: Entry, mark: Mark, steps_key: str) -> Rest | None:
    """The new body's object with only the items after ``mark``, its items' "]" offset and
    whether orjson wrote the bytes around them (None: not one items array after the mark, or it
    holds ``steps_key``). When the bytes after the items are the entry's own, only the new items
    are parsed, the rest is the entry's shell, and the body's bytes before and after its items
    come with it when orjson wrote them (splice.Reuse.frame: they need not be encoded again)."""
    sep = skip(raw, mark.end)
    comma = raw[sep : sep + 1] == b","
    start = sep + 1 if comma else sep
    tail = memoryview(entry.raw)[entry.stop :]  # from the items array's "]" on
    key = entry.dialect.ITEMS
    try:
        if entry.shell is not None and raw.endswith(tail) and len(raw) - len(tail) >= start:
            stop = len(raw) - len(tail)
            # "[[" and "]]": parsed as deep as a full read sees them (an object's array); one list
            # in one list only if the bytes between are values and commas, not "],[" or "]}".
            wrapped = orjson.loads(b"[[" + raw[start:stop] + b"]]")
            if len(wrapped) != 1:
                return None
            doc = dict(entry.shell)
            doc[key] = wrapped[0]
            framed = entry.framed
            frame = (memoryview(raw)[: entry.head], tail) if framed else None
        else:
            small = raw[: entry.head] + raw[start:]
            doc = orjson.loads(small)
            if type(doc) is not dict or steps_key in doc or type(doc.get(key)) is not list:
                return None
            where = layout(small, doc, key, 0)  # one items array where the entry's was, each key once
            if where is None or where.head != entry.head:
                return None
            stop, frame, framed = where.stop - entry.head + start, None, where.orjson
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    if comma and not doc.get(key):  # "[A,B,]": a comma and no item after it is not JSON
        return None
    return Rest(doc, frame, stop, framed)


@dataclass(slots=True)
class Begun:
    """A resume read and decided as far as its new pairs (:func:`begin`): what the planner hop's
    observations need. :func:`complete` settles and writes it, and makes the new entry."""

    entry: Entry
    mark: Mark
    raw: bytes
    doc: dict[str, Any]  # the new body without the items before the mark
    frame: Frame | None
    stop: int  # the new body's items array's "]"
    framed: bool  # orjson wrote the new body's bytes around its items (Entry.framed)
    config: Config  # the entry's (an unnamed client's, as the new part told it)
    items: list[Any]
    fresh: History  # the calls and results after the cut
    reads: list[ReadAt]  # the reader's states at the new cuts
    decisions: list[_Decision]  # the new pairs', before settle pinned any
    ids: list[Carried]  # the new calls and results that carry an id (fill.ids_of)


class _WentOn(NamedTuple):
    """The entry and mark a body goes on from, and its part after the mark (:func:`_go_on`)."""

    found: Found
    rest: Rest


def _go_on(
    memo: Memo, raw: bytes, dialect: Dialect, config: Config, steps_key: str, any_client: bool
) -> _WentOn | None:
    """Where ``raw`` goes on from in the memo, its part after the mark parsed; None: nowhere."""
    found = memo.find(raw, dialect, config, any_client=any_client)
    if found is None:
        memo.misses += 1
        return None
    # Parse only what follows the cut (and the head): the items before it are the entry's.
    parsed = _parse_rest(raw, found.entry, found.mark, steps_key)
    if parsed is None or type(parsed.doc.get(dialect.ITEMS)) is not list:
        return None
    return _WentOn(found, parsed)


def begin(
    memo: Memo,
    raw: bytes,
    dialect: Dialect,
    config: Config,
    steps_key: str,
    client_of: Callable[[dict[str, Any]], str | None] | None = None,
) -> Begun | None:
    """The first half of a resume: from a remembered cut, the new part read and its pairs
    decided (what the planner hop's observations need); None: do a full rewrite.

    ``client_of``: the client is not known before parsing (no user agent names it); it is told
    from the parsed part (its declared tools, which lie outside the items: clients.identify),
    the same answer a full read gives, and the entry must have been made for that client."""
    went = _go_on(memo, raw, dialect, config, steps_key, any_client=client_of is not None)
    if went is not None and client_of is not None:
        made_for = went.found.entry.config
        client = client_of(went.rest.doc)
        if client == made_for.client:
            config = made_for
        else:  # another client's decisions: an entry of this one may serve
            config = made_for.for_client(client)
            went = _go_on(memo, raw, dialect, config, steps_key, any_client=False)
    if went is None:
        return None
    (entry, mark), parsed = went
    doc = parsed.doc
    new = doc[dialect.ITEMS]
    items = join(entry.items, mark.index, new)
    cur = mark.cursor
    turns = entry.turns[: cur.turns]
    if turns and mark.last_turn is not None:  # a cut after a turn holds its role
        turns[-1] = mark.last_turn
    h = History([], [], turns, getattr(config, "client", None))  # the client is part of the config
    try:
        # Marks at the end only: with the mark it went on from, they serve the next turn (the
        # client may edit its last message, Claude Code moves cache_control) and rewinds.
        reads = read_marked(dialect, items, cur, h, mark.n_calls, mark.n_results, tail=0)
    except DialectError:
        return None
    # No id may be carried on both sides of the cut.
    ids, first_pos, at = ids_of(h.calls, h.results), entry.first_pos, cur.pos
    for _, x in ids:
        if first_pos.get(x, at) < at:
            return None
    decisions = decide(h, config.kinds, config.tool_kinds)
    return Begun(
        entry=entry,
        mark=mark,
        raw=raw,
        doc=doc,
        frame=parsed.frame,
        stop=parsed.stop,
        framed=parsed.framed,
        config=config,
        items=items,
        fresh=h,
        reads=reads,
        decisions=decisions,
        ids=ids,
    )


def complete(memo: Memo, begun: Begun) -> Resumed | None:
    """The second half of a resume (after :func:`begin`): settled, written, the new entry made
    when asked (``Resumed.successor``); None: do a full rewrite."""
    entry, mark, items, h, config = begun.entry, begun.mark, begun.items, begun.fresh, begun.config
    dialect, b, cur = entry.dialect, mark.index, mark.cursor
    part = assemble(h, config.kinds, config.tool_kinds, mark.n_steps, prior=begun.decisions)
    # A pin on a pair before the cut (the new items need it back) means a full rewrite.
    write = _Write(entry, mark, items)
    settled = settle(dialect, items, h, config.kinds, config.tool_kinds, part, write, mark.n_steps, cur.pos)
    if settled is None:
        return None
    part = settled.part
    # The stepped positions before the cut: a light entry keeps none, the mark's tally counts them.
    k = mark.tally.placed - mark.tally.kept if entry.light else bisect_left(entry.stepped, cur.pos)
    stepped = join(entry.stepped, k, part.stepped)

    whole = History(
        join(entry.calls, mark.n_calls, h.calls), join(entry.results, mark.n_results, h.results), h.turns, h.client
    )
    step_calls = join(entry.step_calls, mark.n_steps, part.step_calls)
    joined = Part(
        join(entry.docs, mark.n_steps, part.docs),
        join(entry.sources, mark.n_steps, part.sources),
        step_calls,
        join(entry.accounting, cur.pos, part.placements),
        stepped,
        tally=mark.tally,
    )
    memo.hits += 1
    # Going on from near the end of the entry's body, this is the same conversation: it takes
    # the entry's place. From early on (another conversation with the same system prompt, an
    # old fork), both are kept.
    replaces = entry if 2 * b >= len(entry.items) else None
    delta = delta_start(whole, step_calls)
    reuse = None
    if entry.written is not None:  # the items before the pending one and the steps before the cut
        reuse = Reuse(entry.written, entry.out, entry.docs, max(0, mark.out_len - 1), mark.n_steps, begun.frame)
    return Resumed(
        doc=begun.doc,
        history=whole,
        part=joined,
        out=settled.out.items,
        successor=_Successor(begun, whole, joined, settled),
        config=config,
        replaces=replaces,
        fresh=h,
        decisions=begun.decisions,
        delta=delta,
        reuse=reuse,
        shared=mark.end,
    )


@dataclass(slots=True)
class _Write:
    """A resume's writer (settle's ``write``): the entry's written items up to the mark, as the
    mark holds the last of them, then the new items."""

    entry: Entry
    mark: Mark
    items: list[Any]

    def __call__(self, new_stepped: frozenset[int]) -> tuple[Output, dict[int, WroteAt]]:
        mark = self.mark
        prefix = self.entry.out[: mark.out_len]
        if prefix:
            prefix[-1] = mark.pending
        out = Output(prefix, mark.cursor.pos, mark.dropped, mark.gap)
        return out, write_marked(self.entry.dialect, self.items, mark.index, new_stepped, out, tail=0)


@dataclass(slots=True)
class _Successor:
    """The entry a resume makes for its body (``Resumed.successor``), when called."""

    begun: Begun
    whole: History  # the history before the cut and after it
    joined: Part  # likewise the part
    settled: Settled[dict[int, WroteAt]]  # the new part's, with the writer's states at the new cuts

    def __call__(self) -> Entry:
        begun, joined, settled = self.begun, self.joined, self.settled
        entry, mark, items, doc = begun.entry, begun.mark, begun.items, begun.doc
        dialect, b, cur = entry.dialect, mark.index, mark.cursor
        first_pos = (
            {x: p for x, p in entry.first_pos.items() if p < cur.pos} if b < len(entry.items) else dict(entry.first_pos)
        )
        new_ids = begun.ids
        for pos, x in new_ids:
            if pos < first_pos.get(x, pos + 1):
                first_pos[x] = pos
        new, raw, stop = doc[dialect.ITEMS], begun.raw, begun.stop
        end = mark.end + len(raw[mark.end : stop].rstrip(b" \t\n\r"))  # just past the last item
        marks = [m for m in entry.marks if m.index <= b]
        cuts = Cuts(
            dialect=dialect,
            items=items,
            ends={len(items): end},
            reads=begun.reads,
            writes=settled.extra,
            spans=settled.spans,
            first_pos=first_pos,
            ids=new_ids,
            step_calls=joined.step_calls,
            docs=joined.docs,
            accounting=joined.placements,
            tally=mark.tally,
            step_base=mark.n_steps,
        )
        marks = thin(marks + [m for m in marks_at(cuts) if m.index > b])
        made = entry_of(
            dialect=dialect,
            config=begun.config,
            raw=raw,
            head=entry.head,
            stop=stop,
            marks=marks,
            items=items,
            history=self.whole,
            part=joined,
            out=settled.out.items,
            first_pos=first_pos,
        )
        made.shell = shell_of(doc, dialect.ITEMS)
        # Where the new items lie (a light entry reads the last ones again): found in the bytes
        # after the mark, one compare each when orjson wrote them. Unfound, they are not read again.
        found = item_spans(raw, mark.end, new, b) or {}
        kept = len(items) - light.LIGHT_ITEMS  # read here: a test narrows the window
        made.spans = {i: x for i, x in entry.spans.items() if kept <= i < b}
        made.spans.update(found)
        made.framed = begun.framed
        if entry.light:
            lighten(made, mark)
        return made
