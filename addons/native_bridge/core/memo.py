"""The per-conversation memo: a resumed conversation is rewritten from where it was last cut.

An agent resends its whole history on every turn, a round or two longer than the last
time. Reading, deciding and re-encoding all of it again costs far more than parsing it
(scripts/BENCH.md). The memo keeps, per conversation, the last request body and
everything the rewrite derived from it, with *marks*: cuts between two history items
where the derivation can be split. A later body that starts with exactly the same bytes
up to a mark reuses everything before the mark and reads, decides and writes only the
items after it.

Why this gives exactly the bytes a full rewrite gives:

* Same bytes, same values. A mark's offset is where its item ends in the body the client sent,
  in whatever style it wrote JSON (layout.py finds it in those bytes, never in a re-encoding); a
  new body equal up to that offset holds the same items before the mark, with the same types
  and key order. Only the rest of the new body is parsed, as ``[[rest]]``: one list in one list
  only when the rest is values and commas, so the body has one items array.
* Same decisions. A mark is *safe*: no call or result id before it appears after it. The
  new items must not reuse an id from before the mark either. Decisions depend on other
  items only through ids (truth rule 1), so each side decides as if alone.
* Same layout. Steps are in call order and placements in history order, so the new
  lists are the old prefix plus the new part; the reader, the writer (Anthropic merges
  neighbours across the cut) and delta_start carry their state across the cut.

Anything that does not fit (no entry, another config, a body whose items layout.py cannot place, an id
reused across the cut, bad JSON or shape after the cut) falls back to the full rewrite,
which then refills the memo. tests/test_memo.py checks memo and full rewrite agree on
generated sessions with edited, truncated and forked histories.

Entries and marks are never changed once made: a rewrite builds a new entry and swaps
it in, so a result may share (read-only) objects with earlier results.

Each entry keeps the body's other fields parsed (its *shell*: the tools, most often), so that a
body whose bytes after the items are the same again is parsed only from the cut to the items' end.

A *light* memo (observe mode without records: no body is written, no step recorded) keeps
of a conversation little more than its last body, which the byte compare needs anyway: the
items are read again from those bytes when a resume needs one near the cut
(:class:`LazyItems`; one further back ends the resume, :class:`Gone`), the steps and
placements only as the marks' tallies, the last calls and results without their arguments
and texts, the written items not at all (a writer only looks at the last one, which the
mark keeps). The same decisions follow (nothing a resume decides reads an old item's
content), so a light memo gives the same verdict and observations, at about the body's
size in memory instead of three times. Its lists are each a :class:`Tail` (a length and the last
elements), so that a resume copies and keeps what is new, not a list as long as the history
(two things are still copied whole: the first position of each id, and the turns' roles).
Making an entry light and resuming from one costs about a fifth more than the same with a
whole entry, which for a short history buys little: a light memo may keep entries of bodies
below ``light_from`` bytes whole (the chat hop's: :data:`LIGHT_FROM`), and lightens a
conversation's entry once its body reaches that size.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from operator import attrgetter
from types import ModuleType
from typing import Any

import orjson

from .builder import Part, Placement, Tally, assemble, decide, delta_start
from .dialects import Cursor, DialectError, Output
from .history import History, ToolCall, ToolResult
from .layout import Extent, Layout, item_spans, layout, skip
from .settle import Span, cut_ok, settle
from .splice import Frame, Reuse, Written, around

MAX_ENTRIES = 64  # conversations remembered
MAX_BYTES = 64 * 2**20  # sum of remembered bodies; their parsed items cost about twice as much again
MAX_MARKS = 16  # cuts kept per conversation: the last items, where a client edits (cache_control)
LIGHT_ITEMS = 4 * MAX_MARKS  # the last items a light entry can read again from its body
# Below this, a chat hop's light memo keeps entries whole (the module's docstring): as large as
# the bodies read on the event loop (runtime/dispatch.OFFLOAD_BYTES), whose parsed history costs a
# few MB at most, while the memory target is about the multi-MB histories.
LIGHT_FROM = 512 * 2**10
_NONE = object()
_END = attrgetter("end")
_RAW = attrgetter("raw")


class Gone(LookupError):
    """A light entry no longer holds this item: the resume ends, the full read runs."""


class _GoneItem:
    """What a light entry holds in place of what it dropped: any use of it raises :class:`Gone`
    (LazyItems raises before handing it out)."""

    def __getattr__(self, name: str) -> Any:
        raise Gone(f"a dropped value's {name}")

    def __reduce__(self) -> str:
        return "_GONE"


_GONE = _GoneItem()


class Tail:
    """A light entry's list of calls, results, steps, placements or written items: how many of
    its first elements it dropped (``off``) and the rest (``kept``). Reading a dropped element
    raises :class:`Gone` (the resume ends, the full read runs). A resume joins a tail and its new
    part in O(what it keeps), where copying a list as long as the history would be O(history).

    It answers what a resume asks of such a list: its length, an element, a slice (a list when
    it lies in what is kept), a list joined after a cut, an element appended or set (the
    writer's last item: setting the one just before those kept keeps it too) and walking it from
    the end back (delta_start). Iterating it from the start raises Gone at once when it dropped
    any: a light resume's plan has Tails for its steps, sources, placements and stepped
    positions, which only what observe mode never asks for (a writer, records) reads whole."""

    __slots__ = ("kept", "off")

    def __init__(self, off: int, kept: list[Any]) -> None:
        self.off, self.kept = off, kept

    def __len__(self) -> int:
        return self.off + len(self.kept)

    def __getitem__(self, i: Any) -> Any:
        off = self.off
        if type(i) is int:
            if i >= 0:
                if i >= off:
                    return self.kept[i - off]  # IndexError past the end, as a list's
            elif i >= -len(self.kept):
                return self.kept[i]
            elif i < -(off + len(self.kept)):
                raise IndexError("Tail index out of range")
            raise Gone(f"element {i} of {len(self)} is not held")
        start, stop, step = i.indices(len(self))
        if step != 1:
            raise Gone("a stepped slice of a light entry's list")
        if stop <= start:
            return []
        if start >= off:
            return self.kept[start - off : stop - off]
        return Tail(off - start if stop > off else stop - start, self.kept[: max(0, stop - off)])

    def __setitem__(self, i: int, v: Any) -> None:
        j = i - self.off if i >= 0 else i + len(self.kept)  # the index in kept
        if j == -1 and self.off:  # the one just before those kept: kept too
            self.kept.insert(0, v)
            self.off -= 1
        elif j < 0:
            raise Gone(f"element {i} of {len(self)} is not held")
        else:
            self.kept[j] = v

    def append(self, v: Any) -> None:
        self.kept.append(v)

    def then(self, cut: int, new: list[Any]) -> Tail:
        """``self[:cut] + new`` in one step (a resume's join)."""
        off = self.off
        if cut <= off:
            return Tail(cut, new[:])
        kept = self.kept[: cut - off]
        kept += new
        return Tail(off, kept)

    def __iter__(self) -> Any:
        if self.off:
            raise Gone("the first element is not held")
        yield from self.kept

    def __reversed__(self) -> Any:
        yield from reversed(self.kept)
        if self.off:
            raise Gone(f"element {self.off - 1} of {len(self)} is not held")

    def __repr__(self) -> str:
        return f"Tail({self.off}, {self.kept!r})"


class LazyItems(list):  # type: ignore[type-arg]
    """A history's items whose old ones are read again from the body's bytes when used.

    A list (the dialects check for one) of real items and empty slots: a slot within the
    last ``LIGHT_ITEMS`` is parsed from ``raw[start:end]`` (where layout.py found it, so those
    bytes are the item); an older one raises :class:`Gone`. Every way to read an element
    goes through ``__getitem__``, so no slot is ever taken for an item."""

    __slots__ = ("raw", "spans")

    def __init__(self, slots: Any = (), raw: bytes = b"", spans: dict[int, tuple[int, int]] | None = None) -> None:
        super().__init__(slots)
        self.raw = raw
        self.spans = spans or {}

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise Gone("a stepped slice of a light entry's items")
            spans = self.spans
            if start or (spans and max(spans) >= stop):  # else (a resume's items[:cut]) they are all kept
                spans = {k - start: v for k, v in spans.items() if start <= k < stop}
            return LazyItems(list.__getitem__(self, i), self.raw, spans)
        v = list.__getitem__(self, i)
        if v is not _GONE:
            return v
        span = self.spans.get(i % len(self))
        if span is None:
            raise Gone(f"item {i} is not held")
        return orjson.loads(memoryview(self.raw)[span[0] : span[1]])

    def then(self, cut: int, new: list[Any]) -> LazyItems:
        """``self[:cut] + new``, copied once (a resume's items: the entry's before its cut)."""
        spans = self.spans
        if spans and max(spans) >= cut:
            spans = {k: v for k, v in spans.items() if k < cut}
        out = LazyItems((), self.raw, spans)
        list.extend(out, list.__getitem__(self, slice(0, cut)))  # a plain list: copied at memcpy speed
        list.extend(out, new)
        return out

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __reversed__(self) -> Any:
        return (self[i] for i in range(len(self) - 1, -1, -1))

    def __contains__(self, x: object) -> bool:
        return any(x == v for v in self)

    def index(self, *args: Any) -> int:  # type: ignore[override]
        raise Gone("index() on a light entry's items")

    def count(self, x: Any) -> int:
        return sum(1 for v in self if v == x)

    def __add__(self, other: Any) -> LazyItems:  # type: ignore[override]
        return LazyItems([*list.__iter__(self), *other], self.raw, self.spans)

    def __reduce__(self) -> Any:  # crosses from the worker without its body (adopt() gives it back)
        return (LazyItems, (list(list.__iter__(self)), b"", self.spans))


def _light_items(items: Any, raw: bytes, known: dict[int, Extent]) -> LazyItems:
    """``items`` (of the body ``raw``, where the last ones lie at ``known``) holding none:
    the last ``LIGHT_ITEMS`` readable again from ``raw``."""
    return LazyItems([_GONE] * len(items), raw, _spans(items, known))


def _lighten_items(items: LazyItems, known: dict[int, Extent]) -> None:
    """:func:`_light_items` in place, for a resume's own join (its real items are the new ones
    at the end: only they are dropped)."""
    spans = _spans(items, known)
    for i in range(len(items) - 1, -1, -1):
        if list.__getitem__(items, i) is _GONE:
            break
        list.__setitem__(items, i, _GONE)
    items.spans = spans


def _spans(items: Any, known: dict[int, Extent]) -> dict[int, Extent]:
    """Where the last ``LIGHT_ITEMS`` of ``items`` lie in their body: for the real items at the
    end, where the body's layout found them (``known``: one it could not find stays unread), the
    light ones' own below them."""
    n = len(items)
    lo = max(n - LIGHT_ITEMS, 0)
    spans, i = {}, n - 1
    while i >= lo:  # the real items at the end
        if list.__getitem__(items, i) is _GONE:
            break
        span = known.get(i)
        if span is not None:
            spans[i] = span
        i -= 1
    if i >= lo and isinstance(items, LazyItems) and i in items.spans:  # light already below: their
        known = items.spans  # spans, down to the first not held
        low = min(known)
        if max(known) == i and len(known) == i - low + 1:  # one run ending at i: the usual case
            spans.update(known)
            for j in range(low, lo):
                del spans[j]
        else:
            while i >= lo and (span := known.get(i)) is not None:
                spans[i] = span
                i -= 1
    return spans


def _then(xs: list[Any] | Tail | LazyItems, cut: int, new: list[Any]) -> Any:
    """``xs[:cut] + new``: a resume's join of an entry's list (a light entry's is a Tail, its
    items LazyItems: each joins in one step)."""
    return xs.then(cut, new) if isinstance(xs, (Tail, LazyItems)) else xs[:cut] + new


def _slim_call(c: Any) -> Any:
    return c if c.arguments is None else ToolCall(c.pos, c.turn, c.id, c.name, None)


def _slim_result(r: Any) -> Any:
    if r.text is None:
        return r
    return ToolResult(r.pos, r.turn, r.call_id, None, r.is_error, r.exit_code, r.placeholder)


def _recent(xs: list[Any] | Tail, slim: Any, light: int = 0) -> Tail:
    """The last ``LIGHT_ITEMS`` of ``xs`` made light, the older ones dropped (a resume looks at
    the last round only: delta_start; one that looks further raises, and the full read runs);
    ``xs[:light]`` is light already (a light entry's, resumed)."""
    held, off = (xs.kept, xs.off) if type(xs) is Tail else (xs, 0)
    k = max(len(held) - LIGHT_ITEMS, 0)  # indexes in held from here on
    done = max(k, light - off)
    kept = held[k:done]
    kept += map(slim, held[done:])
    return Tail(off + k, kept)


def _light(entry: Entry) -> Entry:
    """The entry as a light memo keeps it (a copy: entries never change once made)."""
    light = replace(entry)
    _lighten(light)
    return light


def _lighten(entry: Entry, base: Mark | None = None) -> None:
    """Make an entry no one holds yet light, in place; ``base``: the mark of the light entry it
    was resumed from (what lies before it is light already)."""
    calls, results, steps = (base.n_calls, base.n_results, base.n_steps) if base is not None else (0, 0, 0)
    if base is not None and isinstance(entry.items, LazyItems):  # the resume's own join (LazyItems.then)
        entry.items.raw = entry.raw
        _lighten_items(entry.items, entry.spans)
    else:
        entry.items = _light_items(entry.items, entry.raw, entry.spans)
    entry.calls = _recent(entry.calls, _slim_call, calls)
    entry.results = _recent(entry.results, _slim_result, results)
    entry.step_calls = _recent(entry.step_calls, _slim_call, steps)
    entry.docs = Tail(len(entry.docs), [])  # the marks' tallies count them
    entry.sources = Tail(len(entry.sources), [])
    entry.accounting = Tail(len(entry.accounting), [])  # likewise
    entry.out = Tail(len(entry.out), [])  # a writer reads only the last, which each mark keeps
    entry.stepped = Tail(len(entry.stepped), [])  # only a writer reads it (observe mode writes nothing)
    entry.light = True
    entry.written = None  # nothing is written


@dataclass(slots=True)  # never changed once made; not frozen for speed (history.ToolCall)
class Mark:
    """A safe cut before item ``index``, and the state of every piece of the rewrite there."""

    index: int
    end: int  # raw offset just past item index-1: whitespace, then "," or "]", follow
    cursor: Cursor  # the reader's (cursor.pos: calls and results before the cut)
    last_turn: Any  # the last turn's role at the cut (a call just after it may still change it)
    n_calls: int
    n_results: int
    n_steps: int
    out_len: int  # the writer's: items written ...
    pending: Any  # ... the last of them as it was at the cut (a later message may merge into it)
    dropped: bool
    gap: tuple[int, ...] = ()
    tally: Tally = field(default_factory=Tally)  # the summary's counts of the steps and placements before it


@dataclass(slots=True)
class Entry:
    dialect: ModuleType
    config: Any
    raw: bytes
    head: int  # raw[:head] is everything up to and including the items array's "["
    stop: int  # raw[stop] is the items array's "]"
    spans: dict[int, Extent]  # where the last LIGHT_ITEMS items lie in raw (a light entry reads them again)
    framed: bool  # raw[:head] and raw[stop:] are orjson's encoding of the other keys (splice.Reuse.frame)
    marks: tuple[Mark, ...]  # ascending
    items: list[Any]
    calls: list[ToolCall]
    results: list[ToolResult]
    turns: list[Any]
    docs: list[dict[str, Any]]
    sources: list[Any]
    step_calls: list[ToolCall]
    accounting: list[Placement]
    stepped: list[int]  # sorted positions
    out: list[Any]
    first_pos: dict[str, int]  # each id: the position of the first call or result carrying it
    light: bool = False  # made by a light memo: serves only a light memo (see the module's docstring)
    written: Written | None = None  # the rewritten body's arrays, which the next turn copies (splice.py)
    shell: dict[str, Any] | None = None  # the body's object with the items left out (None in their place)

    @property
    def size(self) -> int:
        """The bytes it holds that count against the memo's bound."""
        return len(self.raw) + (len(self.written.body) if self.written is not None else 0)

    def __reduce__(self) -> Any:
        # From the worker: without its body (adopt() gives it back) and with its dialect by name.
        fields = {f: getattr(self, f) for f in self.__slots__}  # type: ignore[attr-defined]
        fields["raw"], fields["dialect"] = b"", self.dialect.NAME
        return (_rebuilt, (fields,))


def _rebuilt(fields: dict[str, Any]) -> Entry:
    from .dialects import anthropic, chat, gemini, responses

    by_name = {d.NAME: d for d in (chat, anthropic, responses, gemini)}
    return Entry(**{**fields, "dialect": by_name[fields["dialect"]]})


@dataclass(slots=True)
class Resumed:
    """A rewrite continued from a mark: what rewrite() needs to finish it, and the new entry
    (``successor()``: made when asked, which may be once the request has gone)."""

    doc: dict[str, Any]  # the new body without the items before the mark
    history: History
    part: Part
    out: list[Any]
    successor: Callable[[], Entry]
    config: Any  # the new entry's
    replaces: Entry | None
    fresh: History | None = None  # the calls and results after the cut: the only ones decided now
    decisions: list[Any] | None = None  # their decisions, before settle pinned any (observe.py)
    delta: int = 0  # delta_start (made here: it looks back at the calls before the cut)
    reuse: Reuse | None = None  # what the rewritten body may copy of the entry's (splice.py)
    shared: int = 0  # the bytes the new body holds of the entry's (Memo.put)


class Memo:
    """The remembered conversations, most recently used last; safe to share across threads.

    ``light``: keep each conversation light (the module's docstring); only for rewrites made
    with ``emit=False`` whose steps no one records. ``light_from``: a light memo's entries of
    shorter bodies stay whole."""

    def __init__(
        self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES, light: bool = False, light_from: int = 0
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.light = light
        self.light_from = light_from
        self._entries: OrderedDict[int, Entry] = OrderedDict()
        # The same entries in the byte order of their bodies, and each one's place there (by id).
        # Of all the others, an entry's neighbours share the most leading bytes with it, so two
        # compares tell that no other entry holds its body as far as a mark (_alone): then the
        # search ends at the first entry it finds, however many conversations the memo holds.
        self._order: list[Entry] = []
        self._place: dict[int, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._found: tuple[bytes, Entry, Mark] | None = None  # continues()'s, for the find() after it
        self.hits = 0
        self.misses = 0
        self.errors = 0  # resumes that raised (the full rewrite ran instead)
        self.searched = 0  # entries the searches looked at (tests: a search stops at the one it finds)

    def __len__(self) -> int:
        return len(self._entries)

    def copy(self) -> Memo:
        """Another memo holding the same entries (they never change): to measure a resume twice."""
        other = Memo(self.max_entries, self.max_bytes, self.light, self.light_from)  # counters start at 0
        with self._lock:
            other._entries = OrderedDict(self._entries)
            other._order, other._place = list(self._order), dict(self._place)
            other._bytes = self._bytes
        return other

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._order.clear()
            self._place.clear()
            self._bytes = 0

    def find(self, raw: bytes, dialect: ModuleType, config: Any, any_client: bool = False) -> tuple[Entry, Mark] | None:
        """The entry this body continues furthest, and its latest mark the body keeps.
        ``any_client``: the client is not known yet (``config`` has none): an entry made for
        any client serves, and the caller checks the client once it has read the new part."""

        def serves(entry: Entry) -> bool:
            if entry.dialect is not dialect:
                return False
            if any_client:
                return entry.config.for_client(None) == config
            return entry.config is config or entry.config == config

        with self._lock:
            found, self._found = self._found, None
            if found is not None and found[0] is raw and id(found[1]) in self._entries and serves(found[1]):
                return found[1], found[2]  # continues() compared these bytes a moment ago: not twice
        return self._furthest(raw, serves)

    def continues(self, raw: bytes) -> int:
        """How many of ``raw``'s bytes a remembered conversation already holds (0: none), by a
        byte compare, no parsing: what a resume would not read again (it may still end in a
        full read). The caller decides by what is left, ``len(raw)`` less this, where to read it."""
        best = self._furthest(raw, lambda entry: True)
        with self._lock:
            self._found = None if best is None else (raw, *best)
        return best[1].end if best is not None else 0

    def _furthest(self, raw: bytes, serves: Any) -> tuple[Entry, Mark] | None:
        """Of the entries that ``serves`` accepts (and this memo may use), the one ``raw`` goes
        on from furthest (on a tie the most recent), and its latest mark the body keeps.

        An entry whose bytes before its first mark the body does not hold is out at one window
        compare (every mark needs them). One conversation's next turn goes on from its entry's
        last mark (or the one before), so those are tried next; an earlier mark (a rewind) is
        searched for only in the entries that hold the bytes just before the best end so far,
        which any entry that goes further must. Entries of the same client whose first marks lie
        in what they all share (one system prompt, one first task) so cost three or four short
        compares each, not a binary search in each. And once an entry keeps one of its last two
        marks and no other entry holds its bytes up to there (_alone: two compares), none can go
        further: the search ends at the first entry it finds, however many the memo holds."""
        with self._lock:
            newest_first = list(reversed(self._entries.values()))
        light = self.light
        best: Mark | None = None
        at, found = -1, None  # best's entry, by its place among the entries that serve, and itself
        n = len(raw)
        held = []  # the entries whose first mark the body keeps the bytes before: every mark needs them
        i = -1
        for entry in newest_first:  # asked whether it serves only when reached: the search may end first
            if (entry.light and not light) or not serves(entry):
                continue
            i += 1
            old, marks = entry.raw, entry.marks
            first = marks[0].end
            near = first - 64 if first > 64 else 0
            if not raw.startswith(old[near:first], near):  # another conversation, most often
                continue
            held.append((i, entry))
            for mark in marks[-1:-3:-1]:  # the window inline, one slice, no call: most differ there
                end = mark.end
                if best is not None and end <= best.end:
                    break
                near = end - 64 if end > 64 else 0
                if end < n and raw.startswith(old[near:end], near) and _keeps(old, raw, end):
                    best, at, found = mark, i, entry
                    break
            if at == i:
                with self._lock:
                    alone = self._alone(entry, best.end)  # type: ignore[union-attr]
                if alone:  # an entry that went as far would hold this one's bytes up to its mark
                    self.searched += i + 1
                    return entry, best  # type: ignore[return-value]
        self.searched += i + 1
        window, near, end = b"", 0, -1  # the bytes before the best end so far
        for i, entry in held:
            if i == at:  # its latest kept mark is the one just found
                continue
            if best is None:
                mark = _longest_kept(entry, raw)
            else:
                if best.end != end:
                    end = best.end
                    near = end - 64 if end > 64 else 0
                    window = raw[near:end]
                beyond = end - 1 if i < at else end  # a newer entry wins a tie
                if entry.marks[-1].end <= beyond or not entry.raw.startswith(window, near):
                    continue
                mark = _longest_kept(entry, raw, beyond)
            if mark is not None:
                best, at, found = mark, i, entry
        return None if best is None else (found, best)  # type: ignore[return-value]

    def adopt(self, entry: Entry, raw: bytes) -> None:
        """Keep an entry a worker made for ``raw`` (it crossed without the body: ``raw`` is it)."""
        entry.raw = raw
        if isinstance(entry.items, LazyItems):
            entry.items.raw = raw
        self.put(entry)

    def newest(self) -> Entry | None:
        """The entry stored last (a worker's: the one its last job made, with the body it wrote)."""
        with self._lock:
            return next(reversed(self._entries.values()), None)

    def only(self) -> Entry | None:
        """The one entry of a memo made for one body (a worker's, to hand back)."""
        with self._lock:
            return next(iter(self._entries.values()), None) if len(self._entries) == 1 else None

    def put(self, entry: Entry, replaces: Entry | None = None, shared: int = 0) -> None:
        """Remember ``entry`` (in place of ``replaces``, whose first ``shared`` bytes its body
        holds); a light memo keeps it light (from ``light_from`` bytes on)."""
        if self.light and not entry.light and len(entry.raw) >= self.light_from:
            entry = _light(entry)
        with self._lock:
            taken = None  # the place in byte order ``entry`` takes over from ``replaces``
            size = entry.size
            if replaces is not None and self._entries.pop(id(replaces), None) is not None:
                self._bytes -= replaces.size
                # No other entry holds those bytes: every one differs from both bodies at the same
                # byte, before them, so the new body sorts where the old one did (no compares).
                if shared and size <= self.max_bytes and self._alone(replaces, shared):
                    taken = self._place.pop(id(replaces))
                else:
                    self._unorder(replaces)
            if size > self.max_bytes:
                return
            self._entries[id(entry)] = entry
            self._bytes += size
            if taken is not None:
                self._order[taken] = entry
                self._place[id(entry)] = taken
            elif id(entry) not in self._place:
                at = bisect_left(self._order, entry.raw, key=_RAW)
                self._order.insert(at, entry)
                self._number(at)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, old = self._entries.popitem(last=False)
                self._bytes -= old.size
                self._unorder(old)

    def _alone(self, entry: Entry, end: int) -> bool:
        """Whether no other entry's body starts with ``entry``'s first ``end`` bytes (under the lock)."""
        at = self._place.get(id(entry))
        if at is None:
            return False
        order, head = self._order, memoryview(entry.raw)[:end]
        before = at > 0 and order[at - 1].raw.startswith(head)
        return not before and not (at + 1 < len(order) and order[at + 1].raw.startswith(head))

    def _unorder(self, entry: Entry) -> None:
        at = self._place.pop(id(entry), None)
        if at is not None:
            del self._order[at]
            self._number(at)

    def _number(self, start: int) -> None:
        """The places from ``start`` on, after an entry came or went there."""
        place, order = self._place, self._order
        for i in range(start, len(order)):
            place[id(order[i])] = i


def _keeps(old: bytes, raw: bytes, end: int) -> bool:
    """Whether ``raw`` has ``old``'s bytes up to a mark ending at ``end`` (and goes on after it)."""
    near = max(0, end - 64)
    sep = skip(raw, end)
    return (
        raw[sep : sep + 1] in (b",", b"]")
        and old[near:end] == raw[near:end]  # a cheap no before the long compare
        and raw.startswith(memoryview(old)[:end])  # compared in place, not copied
    )


def _longest_kept(entry: Entry, raw: bytes, beyond: int = 0) -> Mark | None:
    """The latest mark (past offset ``beyond``) up to which ``raw`` has the entry's bytes; for an
    entry whose bytes before its first mark ``raw`` holds (Memo._furthest checked them)."""
    marks, old = entry.marks, entry.raw
    if not raw.startswith(memoryview(old)[: entry.head]):
        return None
    # The common cases: the body goes on from where the last one ended, or from where the
    # one before ended (the client edited its last message: Claude Code moves cache_control).
    for mark in marks[-1:-3:-1]:
        if mark.end <= beyond:
            return None
        if _keeps(old, raw, mark.end):
            return mark
    # Marks ascend; if the bytes agree up to one mark they agree up to every earlier one, and a
    # mark that is not kept is followed by none that is (the bytes differ at or before its end).
    lo = bisect_right(marks, beyond, key=_END)
    hi = len(marks) - 2  # the last two were tried
    if lo >= hi or not _keeps(old, raw, marks[lo].end):
        return None
    best, lo = marks[lo], lo + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _keeps(old, raw, marks[mid].end):
            best, lo = marks[mid], mid + 1
        else:
            hi = mid
    return best


# ---- filling the memo after a full rewrite -----------------------------------------------


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


def _ids(calls: list[ToolCall], results: list[ToolResult]) -> list[tuple[int, str]]:
    """(pos, id) of every call and result that carries an id (calls first: not in pos order)."""
    return [(c.pos, c.id) for c in calls if c.id] + [(r.pos, r.call_id) for r in results if r.call_id]


def _marks(
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
    for pos, x in _ids(history.calls, history.results):
        if pos < first_pos.get(x, pos + 1):
            first_pos[x] = pos
    split = reads[0][1].pos
    tail_ids = _ids([c for c in history.calls if c.pos >= split], [r for r in history.results if r.pos >= split])
    marks = _marks(
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
    entry = _entry(dialect, config, raw, where.head, where.stop, marks, items, history, part, out, first_pos)
    entry.spans, entry.framed = where.spans, framed
    entry.shell = _shell(doc, dialect.ITEMS)
    return entry


def _shell(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """``doc`` without its items (the key kept in its place): what a resume reuses when the bytes
    after the items are the same again (the tools, most often: parsed once per conversation)."""
    shell = dict(doc)
    shell[key] = None
    return shell


def _parse_rest(
    raw: bytes, entry: Entry, mark: Mark, steps_key: str
) -> tuple[dict[str, Any], Frame | None, int, bool] | None:
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
    return doc, frame, stop, framed


def _entry(
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


def _thin(marks: list[Mark]) -> list[Mark]:
    """The last MAX_MARKS marks, and ever sparser older ones (a client may rewind a few turns)."""
    if len(marks) <= 2 * MAX_MARKS:
        return marks
    older = marks[:-MAX_MARKS][::2][-MAX_MARKS:]
    return older + marks[-MAX_MARKS:]


# ---- continuing from a mark ---------------------------------------------------------------


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
    config: Any  # the entry's (an unnamed client's, as the new part told it)
    items: list[Any]
    fresh: History  # the calls and results after the cut
    reads: list[tuple[Any, ...]]
    decisions: list[Any]  # the new pairs', before settle pinned any
    ids: list[tuple[int, str]]  # (pos, id) of the new calls and results (_ids)


def begin(
    memo: Memo,
    raw: bytes,
    dialect: ModuleType,
    config: Any,
    steps_key: str,
    client_of: Callable[[dict[str, Any]], str | None] | None = None,
) -> Begun | None:
    """The first half of a resume: from a remembered cut, the new part read and its pairs
    decided (what the planner hop's observations need); None: do a full rewrite.

    ``client_of``: the client is not known before parsing (no user agent names it); it is told
    from the parsed part (its declared tools, which lie outside the items: clients.identify),
    the same answer a full read gives, and the entry must have been made for that client."""
    found = memo.find(raw, dialect, config, any_client=client_of is not None)
    if found is None:
        memo.misses += 1
        return None
    entry, mark = found
    # Parse only what follows the cut (and the head): the items before it are the entry's.
    parsed = _parse_rest(raw, entry, mark, steps_key)
    if parsed is None:
        return None
    doc, frame, stop, framed = parsed
    new = doc.get(dialect.ITEMS)
    if type(new) is not list:
        return None
    if client_of is not None:
        client = client_of(doc)
        if client != entry.config.client:  # another client's decisions: an entry of this one may serve
            return begin(memo, raw, dialect, entry.config.for_client(client), steps_key)
        config = entry.config
    items = _then(entry.items, mark.index, new)
    cur = mark.cursor
    turns = entry.turns[: cur.turns]
    if turns:
        turns[-1] = mark.last_turn
    h = History([], [], turns, getattr(config, "client", None))  # the client is part of the config
    try:
        # Marks at the end only: with the mark it went on from, they serve the next turn (the
        # client may edit its last message, Claude Code moves cache_control) and rewinds.
        reads = read_marked(dialect, items, cur, h, mark.n_calls, mark.n_results, tail=0)
    except DialectError:
        return None
    # No id may be carried on both sides of the cut.
    ids, first_pos, at = _ids(h.calls, h.results), entry.first_pos, cur.pos
    for _, x in ids:
        if first_pos.get(x, at) < at:
            return None
    decisions = decide(h, config.kinds, config.tool_kinds)
    return Begun(entry, mark, raw, doc, frame, stop, framed, config, items, h, reads, decisions, ids)


def complete(memo: Memo, begun: Begun) -> Resumed | None:
    """The second half of a resume (after :func:`begin`): settled, written, the new entry made
    when asked (``Resumed.successor``); None: do a full rewrite."""
    entry, mark, items, h, config = begun.entry, begun.mark, begun.items, begun.fresh, begun.config
    dialect, b, cur = entry.dialect, mark.index, mark.cursor

    def write(new_stepped: frozenset[int]) -> tuple[Output, Any]:
        prefix = entry.out[: mark.out_len]
        if prefix:
            prefix[-1] = mark.pending
        out = Output(prefix, cur.pos, mark.dropped, mark.gap)
        return out, write_marked(dialect, items, b, new_stepped, out, tail=0)

    part = assemble(h, config.kinds, config.tool_kinds, mark.n_steps, prior=begun.decisions)
    # A pin on a pair before the cut (the new items need it back) means a full rewrite.
    settled = settle(dialect, items, h, config.kinds, config.tool_kinds, part, write, mark.n_steps, cur.pos)
    if settled is None:
        return None
    part, out, writes, spans = settled
    # The stepped positions before the cut: a light entry keeps none, the mark's tally counts them.
    k = mark.tally.placed - mark.tally.kept if entry.light else bisect_left(entry.stepped, cur.pos)
    stepped = _then(entry.stepped, k, part.stepped)

    whole = History(
        _then(entry.calls, mark.n_calls, h.calls), _then(entry.results, mark.n_results, h.results), h.turns, h.client
    )
    step_calls = _then(entry.step_calls, mark.n_steps, part.step_calls)
    joined = Part(
        _then(entry.docs, mark.n_steps, part.docs),
        _then(entry.sources, mark.n_steps, part.sources),
        step_calls,
        _then(entry.accounting, cur.pos, part.placements),
        stepped,
        tally=mark.tally,
    )
    doc = begun.doc

    def successor() -> Entry:
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
        tallied = (joined.docs, joined.placements, mark.tally, mark.n_steps)
        ends = {len(items): end}
        fresh = _marks(items, ends, begun.reads, writes, step_calls, first_pos, new_ids, dialect, spans, *tallied)
        marks = _thin(marks + [m for m in fresh if m.index > b])
        made = _entry(dialect, config, raw, entry.head, stop, marks, items, whole, joined, out.items, first_pos)
        made.shell = _shell(doc, dialect.ITEMS)
        # Where the new items lie (a light entry reads the last ones again): found in the bytes
        # after the mark, one compare each when orjson wrote them. Unfound, they are not read again.
        found = item_spans(raw, mark.end, new, b) or {}
        kept = len(items) - LIGHT_ITEMS
        made.spans = {i: x for i, x in entry.spans.items() if kept <= i < b}
        made.spans.update(found)
        made.framed = begun.framed
        if entry.light:
            _lighten(made, mark)
        return made

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
        doc, whole, joined, out.items, successor, config, replaces, h, begun.decisions, delta, reuse, mark.end
    )
