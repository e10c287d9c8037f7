"""Anthropic Messages: ``tool_use`` blocks in assistant turns, ``tool_result`` blocks
(with ``is_error``) in user turns.

The writer keeps the request valid for the Messages API: no empty ``content``,
and when a removal would put two turns of the same role side by side they are
merged, so user/assistant alternation holds.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..history import History, ToolCall, ToolResult
from . import Cursor, DialectError, Output, opt_str, text_parts

NAME = "anthropic"
ITEMS = "messages"
MARKERS = (b"tool_use", b"tool_result")


def _blocks(
    messages: Any, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, dict[str, Any], list[Any] | None]]:
    """Each message with its content blocks (None when content is a plain string)."""
    if not isinstance(messages, list):
        raise DialectError("'messages' is not a list")
    for i in range(start, len(messages) if stop is None else stop):
        m = messages[i]
        if not isinstance(m, dict):
            raise DialectError(f"message {i} is not an object")
        content = m.get("content")
        if isinstance(content, str):
            yield i, m, None
        elif isinstance(content, list):
            for j, b in enumerate(content):
                if not isinstance(b, dict):
                    raise DialectError(f"message {i}: content block {j} is not an object")
            yield i, m, content
        else:
            raise DialectError(f"message {i}: content is neither a string nor a list")


def _is_call(m: dict[str, Any], b: dict[str, Any]) -> bool:
    return m.get("role") == "assistant" and b.get("type") == "tool_use"


def _is_result(m: dict[str, Any], b: dict[str, Any]) -> bool:
    return m.get("role") == "user" and b.get("type") == "tool_result"


def result_text(content: Any) -> str | None:
    """A tool_result's content as text; None when it holds images or documents."""
    return "" if content is None else text_parts(content, ("text",))


def read(body: dict[str, Any]) -> History:
    h = History()
    read_items(body.get(ITEMS), Cursor(), h)
    return h


def read_items(messages: Any, at: Cursor, h: History, stop: int | None = None) -> Cursor:
    """Read ``messages[at.index:stop]`` into ``h``, continuing from ``at``; where it stopped.

    ``h.turns`` must hold the turns before ``at``: one message is one turn, so a
    turn's index is its message's index."""
    pos = at.pos
    end = at.index
    for i, m, blocks in _blocks(messages, at.index, stop):
        end = i + 1
        role = "other"
        for b in blocks or ():
            if _is_call(m, b):
                role = "calls"
                args = b.get("input")
                name = opt_str(b.get("name")) or ""
                h.calls.append(ToolCall(pos, i, opt_str(b.get("id")), name, args if isinstance(args, dict) else None))
                pos += 1
            elif _is_result(m, b):
                # Claude Code appends reminder text blocks to result turns: still a results turn.
                role = "results"
                is_error = b.get("is_error")
                text = result_text(b.get("content"))
                h.results.append(ToolResult(pos, i, opt_str(b.get("tool_use_id")), text, is_error is True))
                pos += 1
        h.turns.append(role)  # type: ignore[arg-type]
    return Cursor(end, pos, end)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    def as_blocks(c: Any) -> list[Any]:
        return [{"type": "text", "text": c}] if isinstance(c, str) else list(c)

    merged = dict(a)
    merged["content"] = as_blocks(a["content"]) + as_blocks(b["content"])
    return merged


def write(body: dict[str, Any], stepped: frozenset[int]) -> list[Any]:
    out = Output([], 0)
    write_items(body.get(ITEMS), 0, stepped, out)
    return out.items


def write_items(messages: Any, start: int, stepped: Collection[int], out: Output, stop: int | None = None) -> None:
    """Write ``messages[start:stop]`` onto ``out``, continuing from its state."""
    items, pos = out.items, out.pos
    dropped = out.dropped  # merge only neighbours that a removal brought together
    for _, m, blocks in _blocks(messages, start, stop):
        if blocks is not None:
            keep = []
            for b in blocks:
                if _is_call(m, b) or _is_result(m, b):
                    pos += 1
                    if pos - 1 in stepped:
                        continue
                keep.append(b)
            if not keep:
                dropped = True
                continue
            if len(keep) != len(blocks):
                m = {**m, "content": keep}
        if dropped and items and items[-1].get("role") == m.get("role"):
            items[-1] = _merge(items[-1], m)
        else:
            items.append(m)
        dropped = False
    out.pos, out.dropped = pos, dropped
