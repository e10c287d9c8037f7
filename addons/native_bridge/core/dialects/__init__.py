"""Dialect readers and writers: a request body in, a neutral history out, and back.

Each dialect module is a :class:`Dialect`: NAME, ITEMS (the body key holding the
history), MARKERS (bytes without which a raw body cannot hold tool history),
``read(body)`` and ``write(body, stepped)`` (the history items with the stepped
positions removed).

``read_items`` and ``write_items`` do the same for a stretch of the items, carrying
a :class:`Cursor` / :class:`Output` across stretches: reading a history in pieces
gives exactly what reading it whole gives. The per-conversation memo (core/memo/) reads
and writes only the items a resumed conversation added.

A writer keeps the request valid for its API (truth rule 6). Where taking a stepped
pair out would break it (a thinking block or a thought signature torn from its call,
turns merged out of order, a request left ending on a model turn), the writer does not
improvise: it *pins* the pair (``Output.pins``) and the pipeline decides again with that
pair kept as messages (builder ``keep``). A dialect may also be an :class:`EndPins`
(what the end of the written history needs) and a :class:`Joins` (True when what is
written before item ``k`` depends on items from ``k`` on, so the memo must not cut there).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson

from ..history import History


class DialectError(ValueError):
    """The body is not a request of the dialect (wrong shape or types)."""


# Pins: position of the call or result -> (why, the last item index the need depends on).
Pins = dict[int, tuple[str, int]]


@dataclass(slots=True)  # never changed once made; not frozen for speed (history.ToolCall)
class Cursor:
    """Where a reader stands: before item ``index``, after ``pos`` calls and results and ``turns`` turns."""

    index: int = 0
    pos: int = 0
    turns: int = 0
    run: str | None = None  # Responses: the kind of run the previous item belongs to


@dataclass(slots=True)
class Output:
    """A writer's state: the items written so far, the history position reached, and
    (Anthropic, Gemini) whether the last message was dropped, so its neighbours may merge."""

    items: list[Any]
    pos: int
    dropped: bool = False
    # Positions of the stepped results in the messages dropped since the last written one:
    # the pair to pin when those messages must come back (a merge or the end needs them).
    gap: tuple[int, ...] = ()
    # Pairs the writer needs kept as messages: position of the call or result ->
    # (why, the last item index the need depends on; len(items) when it depends on the end).
    pins: Pins = field(default_factory=dict)


def opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def json_object(raw: Any) -> dict[str, Any] | None:
    """Tool arguments as an object: given as one, or as a JSON string of one."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return None
    try:
        doc = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def text_parts(content: Any, types: tuple[str, ...]) -> str | None:
    """A string, or a list of text parts joined; None when a part is not text (an image)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for part in content:
        if not (isinstance(part, dict) and part.get("type") in types and isinstance(part.get("text"), str)):
            return None
        parts.append(part["text"])
    return "\n".join(parts)


@runtime_checkable
class Dialect(Protocol):
    """A chat API's request format, one module each (chat, anthropic, responses, gemini).
    ``items`` is the body's ``ITEMS`` list, as the client sent it (any JSON value: a reader
    raises :class:`DialectError` on a shape it does not know)."""

    @property
    def NAME(self) -> str: ...  # the dialect's name (Config.dialect, records)

    @property
    def ITEMS(self) -> str: ...  # the body key holding the history

    @property
    def MARKERS(self) -> tuple[bytes, ...]: ...  # bytes without which a raw body holds no tool history

    def read(self, body: dict[str, Any], /) -> History:
        """The body's history, whole."""
        ...

    def read_items(self, items: Any, at: Cursor, h: History, /, stop: int | None = None) -> Cursor:
        """Read ``items[at.index:stop]`` into ``h``; where the reader stands after them."""
        ...

    def write(self, body: dict[str, Any], stepped: frozenset[int], /) -> list[Any]:
        """The body's history items with the stepped calls and results taken out."""
        ...

    def write_items(
        self, items: Any, start: int, stepped: Collection[int], out: Output, /, stop: int | None = None
    ) -> None:
        """Write ``items[start:stop]`` onto ``out`` with the stepped calls and results taken out."""
        ...


@runtime_checkable
class EndPins(Protocol):
    """A dialect whose written history must end in a certain way (Anthropic, Gemini: on the user's turn)."""

    def end_pins(self, items: Any, out: Output, /) -> Pins:
        """The pairs that the end of the history written onto ``out`` needs kept as messages."""
        ...


@runtime_checkable
class Joins(Protocol):
    """A dialect whose items may depend on the items after them (Responses: a reasoning item)."""

    def joins(self, items: Any, k: int, /) -> bool:
        """True when what is written before ``items[k]`` depends on items from ``k`` on."""
        ...


if TYPE_CHECKING:  # each dialect module is a Dialect, and the optional parts where it has them
    from . import anthropic, chat, gemini, responses

    _DIALECTS: tuple[Dialect, ...] = (chat, anthropic, responses, gemini)
    _END_PINS: tuple[EndPins, ...] = (anthropic, gemini)
    _JOINS: tuple[Joins, ...] = (responses,)
