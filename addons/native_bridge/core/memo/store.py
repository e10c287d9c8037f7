"""The memo's store and search: the remembered conversations, bounded, kept in the byte order of
their bodies, and the search for the one a new body goes on from furthest (by byte compares
only, no parsing)."""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

from ..config import Config
from ..dialects import Dialect
from ..layout import skip
from .entry import Entry, Mark
from .light import LazyItems, lightened

MAX_ENTRIES = 64  # conversations remembered
MAX_BYTES = 64 * 2**20  # sum of remembered bodies; their parsed items cost about twice as much again
# Below this, a chat hop's light memo keeps entries whole (light.py): as large as the bodies read
# on the event loop (runtime/dispatch.OFFLOAD_BYTES), whose parsed history costs a few MB at most,
# while the memory target is about the multi-MB histories.
LIGHT_FROM = 512 * 2**10
_END = attrgetter("end")
_RAW = attrgetter("raw")


class Found(NamedTuple):
    """The entry a body goes on from furthest, and its latest mark the body keeps."""

    entry: Entry
    mark: Mark


@dataclass(frozen=True, slots=True)
class _Serves:
    """Whether an entry may serve a body of ``dialect`` read with ``config`` (:meth:`Memo.find`)."""

    dialect: Dialect
    config: Config
    any_client: bool  # the client is not known yet: an entry made for any client serves

    def __call__(self, entry: Entry) -> bool:
        if entry.dialect is not self.dialect:
            return False
        if self.any_client:
            return entry.config.for_client(None) == self.config
        return entry.config is self.config or entry.config == self.config


def _every(entry: Entry) -> bool:
    """Every entry serves (:meth:`Memo.continues` asks how far any conversation goes)."""
    return True


class Memo:
    """The remembered conversations, most recently used last; safe to share across threads.

    ``light``: keep each conversation light (light.py); only for rewrites made
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
        # continues()'s answer and the body it was for, for the find() after it
        self._found: Found | None = None
        self._found_for: bytes | None = None
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

    def find(self, raw: bytes, dialect: Dialect, config: Config, any_client: bool = False) -> Found | None:
        """The entry this body continues furthest, and its latest mark the body keeps.
        ``any_client``: the client is not known yet (``config`` has none): an entry made for
        any client serves, and the caller checks the client once it has read the new part."""
        serves = _Serves(dialect, config, any_client)
        with self._lock:
            found, found_for, self._found, self._found_for = self._found, self._found_for, None, None
            if found is not None and found_for is raw and id(found.entry) in self._entries and serves(found.entry):
                return found  # continues() compared these bytes a moment ago: not twice
        return self._furthest(raw, serves)

    def continues(self, raw: bytes) -> int:
        """How many of ``raw``'s bytes a remembered conversation already holds (0: none), by a
        byte compare, no parsing: what a resume would not read again (it may still end in a
        full read). The caller decides by what is left, ``len(raw)`` less this, where to read it."""
        best = self._furthest(raw, _every)
        with self._lock:
            self._found, self._found_for = best, None if best is None else raw
        return best.mark.end if best is not None else 0

    def _furthest(self, raw: bytes, serves: Callable[[Entry], bool]) -> Found | None:
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
            if at == i and best is not None:  # it has the best mark so far
                with self._lock:
                    alone = self._alone(entry, best.end)
                if alone:  # an entry that went as far would hold this one's bytes up to its mark
                    self.searched += i + 1
                    return Found(entry, best)
        self.searched += i + 1
        window, near, end = b"", 0, -1  # the bytes before the best end so far
        for i, entry in held:
            if i == at:  # its latest kept mark is the one just found
                continue
            if best is None:
                kept = _longest_kept(entry, raw)
            else:
                if best.end != end:
                    end = best.end
                    near = end - 64 if end > 64 else 0
                    window = raw[near:end]
                beyond = end - 1 if i < at else end  # a newer entry wins a tie
                if entry.marks[-1].end <= beyond or not entry.raw.startswith(window, near):
                    continue
                kept = _longest_kept(entry, raw, beyond)
            if kept is not None:
                best, at, found = kept, i, entry
        return None if best is None or found is None else Found(found, best)

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
            entry = lightened(entry)
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
