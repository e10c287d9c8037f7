"""The light containers: what a light memo keeps of a conversation in place of its lists.

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
below ``light_from`` bytes whole (the chat hop's: store.LIGHT_FROM), and lightens a
conversation's entry once its body reaches that size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, NoReturn, cast, overload

import orjson

from ..history import ToolCall, ToolResult
from ..layout import Extent
from .entry import MAX_MARKS, Entry, Mark

# The last items a light entry can read again from its body. Read as ``light.LIGHT_ITEMS`` where
# used outside this module: a test narrows the window to make resumes end early.
LIGHT_ITEMS = 4 * MAX_MARKS


class Gone(LookupError):
    """A light entry no longer holds this item: the resume ends, the full read runs."""


class _GoneItem:
    """What a light entry holds in place of what it dropped: any use of it raises :class:`Gone`
    (LazyItems raises before handing it out)."""

    def __getattr__(self, name: str) -> NoReturn:
        raise Gone(f"a dropped value's {name}")

    def __reduce__(self) -> str:
        return "GONE"


GONE = _GoneItem()


class Tail[T]:
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

    def __init__(self, off: int, kept: list[T]) -> None:
        self.off, self.kept = off, kept

    def __len__(self) -> int:
        return self.off + len(self.kept)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T] | Tail[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T] | Tail[T]:
        off = self.off
        if isinstance(i, int):
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

    def __setitem__(self, i: int, v: T) -> None:
        j = i - self.off if i >= 0 else i + len(self.kept)  # the index in kept
        if j == -1 and self.off:  # the one just before those kept: kept too
            self.kept.insert(0, v)
            self.off -= 1
        elif j < 0:
            raise Gone(f"element {i} of {len(self)} is not held")
        else:
            self.kept[j] = v

    def append(self, v: T) -> None:
        self.kept.append(v)

    def then(self, cut: int, new: list[T]) -> Tail[T]:
        """``self[:cut] + new`` in one step (a resume's join)."""
        off = self.off
        if cut <= off:
            return Tail(cut, new[:])
        kept = self.kept[: cut - off]
        kept += new
        return Tail(off, kept)

    def __iter__(self) -> Iterator[T]:
        if self.off:
            raise Gone("the first element is not held")
        yield from self.kept

    def __reversed__(self) -> Iterator[T]:
        yield from reversed(self.kept)
        if self.off:
            raise Gone(f"element {self.off - 1} of {len(self)} is not held")

    def __repr__(self) -> str:
        return f"Tail({self.off}, {self.kept!r})"


class LazyItems(list[Any]):
    """A history's items whose old ones are read again from the body's bytes when used.

    A list (the dialects check for one) of real items and empty slots: a slot within the
    last ``LIGHT_ITEMS`` is parsed from ``raw[start:end]`` (where layout.py found it, so those
    bytes are the item); an older one raises :class:`Gone`. Every way to read an element
    goes through ``__getitem__``, so no slot is ever taken for an item."""

    __slots__ = ("raw", "spans")

    def __init__(self, slots: Iterable[Any] = (), raw: bytes = b"", spans: dict[int, Extent] | None = None) -> None:
        super().__init__(slots)
        self.raw = raw
        self.spans = spans or {}

    # Any: list's own signature (an index or a slice; an element is a JSON value).
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
        if v is not GONE:
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

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __reversed__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self) - 1, -1, -1))

    def __contains__(self, x: object) -> bool:
        return any(x == v for v in self)

    def index(self, *args: object) -> int:
        raise Gone("index() on a light entry's items")

    def count(self, x: object) -> int:
        return sum(1 for v in self if v == x)

    def __add__(self, other: Iterable[Any]) -> LazyItems:
        return LazyItems([*list.__iter__(self), *other], self.raw, self.spans)

    # Crosses from the worker without its body (adopt() gives it back).
    def __reduce__(self) -> tuple[type[LazyItems], tuple[list[Any], bytes, dict[int, Extent]]]:
        return (LazyItems, (list(list.__iter__(self)), b"", self.spans))


def light_items(items: list[Any], raw: bytes, known: dict[int, Extent]) -> LazyItems:
    """``items`` (of the body ``raw``, where the last ones lie at ``known``) holding none:
    the last ``LIGHT_ITEMS`` readable again from ``raw``."""
    return LazyItems([GONE] * len(items), raw, _spans(items, known))


def lighten_items(items: LazyItems, known: dict[int, Extent]) -> None:
    """:func:`light_items` in place, for a resume's own join (its real items are the new ones
    at the end: only they are dropped)."""
    spans = _spans(items, known)
    for i in range(len(items) - 1, -1, -1):
        if list.__getitem__(items, i) is GONE:
            break
        list.__setitem__(items, i, GONE)
    items.spans = spans


def _spans(items: list[Any], known: dict[int, Extent]) -> dict[int, Extent]:
    """Where the last ``LIGHT_ITEMS`` of ``items`` lie in their body: for the real items at the
    end, where the body's layout found them (``known``: one it could not find stays unread), the
    light ones' own below them."""
    n = len(items)
    lo = max(n - LIGHT_ITEMS, 0)
    spans, i = {}, n - 1
    while i >= lo:  # the real items at the end
        if list.__getitem__(items, i) is GONE:
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


def stand_in[T](tail: Tail[T]) -> list[T]:
    """A Tail where an entry, a history, a part or a plan holds a list: a light entry's lists, and
    a light resume's joins of them, are Tails standing in for those lists (the class says what
    they answer; what observe mode never asks of them raises Gone). The stand-in is not a list
    subclass (it holds a length and the last elements, not the elements), so the types cannot
    say so without every layer that reads those lists taking either: this says it, here only."""
    return cast(list[T], tail)


def join[T](xs: list[T], cut: int, new: list[T]) -> list[T]:
    """``xs[:cut] + new``: a resume's join of an entry's list (a light entry's is a Tail, its
    items LazyItems: each joins in one step)."""
    if isinstance(xs, LazyItems):
        return xs.then(cut, new)
    if isinstance(xs, Tail):  # a light entry's list (stand_in)
        return stand_in(xs.then(cut, new))
    return xs[:cut] + new


def _slim_call(c: ToolCall) -> ToolCall:
    return c if c.arguments is None else ToolCall(c.pos, c.turn, c.id, c.name, None)


def _slim_result(r: ToolResult) -> ToolResult:
    if r.text is None:
        return r
    return ToolResult(r.pos, r.turn, r.call_id, None, r.is_error, r.exit_code, r.placeholder)


def _recent[T](xs: list[T], slim: Callable[[T], T], light: int = 0) -> list[T]:
    """The last ``LIGHT_ITEMS`` of ``xs`` made light, the older ones dropped (a resume looks at
    the last round only: delta_start; one that looks further raises, and the full read runs);
    ``xs[:light]`` is light already (a light entry's, resumed)."""
    held, off = (xs.kept, xs.off) if isinstance(xs, Tail) else (xs, 0)  # a light entry's (stand_in)
    k = max(len(held) - LIGHT_ITEMS, 0)  # indexes in held from here on
    done = max(k, light - off)
    kept = held[k:done]
    kept += map(slim, held[done:])
    return stand_in(Tail(off + k, kept))


def lightened(entry: Entry) -> Entry:
    """The entry as a light memo keeps it (a copy: entries never change once made)."""
    light = replace(entry)
    lighten(light)
    return light


def lighten(entry: Entry, base: Mark | None = None) -> None:
    """Make an entry no one holds yet light, in place; ``base``: the mark of the light entry it
    was resumed from (what lies before it is light already)."""
    calls, results, steps = (base.n_calls, base.n_results, base.n_steps) if base is not None else (0, 0, 0)
    if base is not None and isinstance(entry.items, LazyItems):  # the resume's own join (LazyItems.then)
        entry.items.raw = entry.raw
        lighten_items(entry.items, entry.spans)
    else:
        entry.items = light_items(entry.items, entry.raw, entry.spans)
    entry.calls = _recent(entry.calls, _slim_call, calls)
    entry.results = _recent(entry.results, _slim_result, results)
    entry.step_calls = _recent(entry.step_calls, _slim_call, steps)
    entry.docs = stand_in(Tail(len(entry.docs), []))  # the marks' tallies count them
    entry.sources = stand_in(Tail(len(entry.sources), []))
    entry.accounting = stand_in(Tail(len(entry.accounting), []))  # likewise
    entry.out = stand_in(Tail(len(entry.out), []))  # a writer reads only the last, which each mark keeps
    entry.stepped = stand_in(Tail(len(entry.stepped), []))  # only a writer reads it (observe mode writes nothing)
    entry.light = True
    entry.written = None  # nothing is written
