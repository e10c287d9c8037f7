"""Decide and write until the written request is valid for its API (truth rule 6).

The builder decides each pair on its own; the dialect writer sees what taking the
stepped pairs out does to the request. Where it would leave the request invalid
(dialects/__init__.py: pins), the pinned pairs are decided again as kept messages
(code ``validity``) and the history is written again. Pins only ever keep more, so
this ends (at most once per stepped pair; in practice once or twice).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, NamedTuple

from .builder import Part, assemble
from .dialects import Dialect, Output, Pins
from .history import History

# (call position of a pinned pair, last item index the pin depends on): the memo must
# not cut between the two, since the cut would carry a decision made on items after it.
Span = tuple[int, int]


class Settled[Extra](NamedTuple):
    """What :func:`settle` ends with: the part (decided again where pinned), the written output,
    what ``write`` gave beside it (the memo's writer: its states at the cuts) and the pins' spans."""

    part: Part
    out: Output
    extra: Extra
    spans: list[Span]


def pins_of(dialect: Dialect, items: Any, out: Output, stepped: Collection[int]) -> Pins:
    """What the writer pinned; once it pins no step (of ``stepped``) any more, what the end of the
    written history needs. The end is judged only on a history the writer's own pins no longer
    change: a content a writer pin keeps may be what the history ends on (a pin on the last
    pair, made while an earlier content was still going, would keep a pair for nothing)."""
    pins = dict(out.pins)
    end: Callable[[Any, Output], Pins] | None = getattr(dialect, "end_pins", None)  # dialects.EndPins
    if end is not None and not any(p in stepped for p in pins):
        pins.update(end(items, out))
    return pins


def settle[Extra](
    dialect: Dialect,
    items: Any,
    history: History,
    kinds: Collection[str],
    tool_kinds: Mapping[str, str],
    part: Part,
    write: Callable[[frozenset[int]], tuple[Output, Extra]],
    step_base: int = 0,
    floor: int = 0,
) -> Settled[Extra] | None:
    """The settled part, once no pin needs another pass. ``write(stepped)`` writes the history
    afresh onto a new Output. ``history`` holds the calls and results from position ``floor`` on; a pin before
    ``floor`` (a resumed write that would need a pair before the memo's cut) returns None."""
    keep: dict[int, str] = {}
    spans: list[Span] = []
    while True:
        out, extra = write(frozenset(part.stepped))
        pins = pins_of(dialect, items, out, set(part.stepped))
        if not pins:
            return Settled(part, out, extra, spans)
        if any(p < floor for p in pins):
            return None
        stepped = set(part.stepped)
        new = {p: v for p, v in pins.items() if p in stepped and p not in keep}
        if not new:  # a pin on a pair that is not a step: nothing more to keep
            return Settled(part, out, extra, spans)
        call_of = {r.pos: r.call_id for r in history.results if r.pos in new}
        call_pos = {c.id: c.pos for c in history.calls if c.id in call_of.values()}
        for p, (why, horizon) in new.items():
            keep[p] = why
            spans.append((call_pos.get(call_of.get(p), p), horizon))
        part = assemble(history, kinds, tool_kinds, step_base, keep, prior=part.decisions)


def cut_ok(dialect: Dialect, items: Any, index: int, pos: int, spans: list[Span]) -> bool:
    """Whether the memo may cut before ``items[index]`` (``pos``: calls and results before it)."""
    for call, horizon in spans:
        if call < pos and horizon >= index:
            return False
    joins: Callable[[Any, int], bool] | None = getattr(dialect, "joins", None)  # dialects.Joins
    return joins is None or not joins(items, index)
