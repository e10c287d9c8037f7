"""What the memo keeps of a conversation: an :class:`Entry` (its last body and what the rewrite
derived from it) and the :class:`Mark` s where a later body may go on from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from ..builder import Placement, Source, Tally
from ..config import Config
from ..dialects import Cursor, Dialect
from ..history import ToolCall, ToolResult, TurnRole
from ..layout import Extent
from ..splice import Written

MAX_MARKS = 16  # cuts kept per conversation: the last items, where a client edits (cache_control)


@dataclass(slots=True)  # never changed once made; not frozen for speed (history.ToolCall)
class Mark:
    """A safe cut before item ``index``, and the state of every piece of the rewrite there."""

    index: int
    end: int  # raw offset just past item index-1: whitespace, then "," or "]", follow
    cursor: Cursor  # the reader's (cursor.pos: calls and results before the cut)
    last_turn: TurnRole | None  # the last turn's role at the cut (a call just after it may still change it)
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
    """One conversation as the memo keeps it: its last body, its marks, and what the rewrite read,
    decided and wrote from that body (a light entry: little of it, light.py)."""

    dialect: Dialect
    config: Config
    raw: bytes
    head: int  # raw[:head] is everything up to and including the items array's "["
    stop: int  # raw[stop] is the items array's "]"
    spans: dict[int, Extent]  # where the last LIGHT_ITEMS items lie in raw (a light entry reads them again)
    framed: bool  # raw[:head] and raw[stop:] are orjson's encoding of the other keys (splice.Reuse.frame)
    marks: tuple[Mark, ...]  # ascending
    items: list[Any]
    calls: list[ToolCall]
    results: list[ToolResult]
    turns: list[TurnRole]
    docs: list[dict[str, Any]]
    sources: list[Source]
    step_calls: list[ToolCall]
    accounting: list[Placement]
    stepped: list[int]  # sorted positions
    out: list[Any]  # the written items, JSON values
    first_pos: dict[str, int]  # each id: the position of the first call or result carrying it
    light: bool = False  # made by a light memo: serves only a light memo (light.py)
    written: Written | None = None  # the rewritten body's arrays, which the next turn copies (splice.py)
    shell: dict[str, Any] | None = None  # the body's object with the items left out (None in their place)

    @property
    def size(self) -> int:
        """The bytes it holds that count against the memo's bound."""
        return len(self.raw) + (len(self.written.body) if self.written is not None else 0)

    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], Entry], tuple[dict[str, Any]]]:
        # From the worker: without its body (adopt() gives it back) and with its dialect by name.
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        state["raw"], state["dialect"] = b"", self.dialect.NAME
        return (_rebuilt, (state,))


def _rebuilt(state: dict[str, Any]) -> Entry:
    from ..dialects import anthropic, chat, gemini, responses

    by_name = {d.NAME: d for d in (chat, anthropic, responses, gemini)}
    return Entry(**{**state, "dialect": by_name[state["dialect"]]})
