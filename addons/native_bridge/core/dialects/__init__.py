"""Dialect readers and writers: a request body in, a neutral history out, and back.

Each dialect module has NAME, ITEMS (the body key holding the history), MARKERS
(bytes without which a raw body cannot hold tool history), ``read(body)`` and
``write(body, stepped)`` (the history items with the stepped positions removed).

``read_items`` and ``write_items`` do the same for a stretch of the items, carrying
a :class:`Cursor` / :class:`Output` across stretches: reading a history in pieces
gives exactly what reading it whole gives. The per-conversation memo (core/memo/) reads
and writes only the items a resumed conversation added.

A writer keeps the request valid for its API (truth rule 6). Where taking a stepped
pair out would break it (a thinking block or a thought signature torn from its call,
turns merged out of order, a request left ending on a model turn), the writer does not
improvise: it *pins* the pair (``Output.pins``) and the pipeline decides again with that
pair kept as messages (builder ``keep``). A dialect may also have ``end_pins(items,
out)`` (what the end of the written history needs) and ``joins(items, k)`` (True when
what is written before item ``k`` depends on items from ``k`` on, so the memo must not
cut there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


class DialectError(ValueError):
    """The body is not a request of the dialect (wrong shape or types)."""


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
    pins: dict[int, tuple[str, int]] = field(default_factory=dict)


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
