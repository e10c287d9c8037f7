"""OpenAI Chat Completions: assistant ``tool_calls`` and ``role: "tool"`` results."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..history import History, ToolCall, ToolResult
from . import Cursor, DialectError, Output, json_object, opt_str, text_parts

NAME = "chat"
ITEMS = "messages"
MARKERS = (b"tool_calls",)


def _walk(
    messages: Any, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, dict[str, Any], list[Any] | None]]:
    """Each message with its tool calls (None when it carries none), checked for shape."""
    if not isinstance(messages, list):
        raise DialectError("'messages' is not a list")
    for i in range(start, len(messages) if stop is None else stop):
        m = messages[i]
        if not isinstance(m, dict):
            raise DialectError(f"message {i} is not an object")
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if calls is not None and not isinstance(calls, list):
            raise DialectError(f"message {i}: 'tool_calls' is not a list")
        yield i, m, calls or None


def read(body: dict[str, Any]) -> History:
    h = History()
    read_items(body.get(ITEMS), Cursor(), h)
    return h


def read_items(messages: Any, at: Cursor, h: History, stop: int | None = None) -> Cursor:
    """Read ``messages[at.index:stop]`` into ``h``, continuing from ``at``; where it stopped.

    ``h.turns`` must hold the turns before ``at``: one message is one turn, so a
    turn's index is its message's index."""
    pos = at.pos
    calls_out, results_out, turns = h.calls, h.results, h.turns
    end = at.index
    for i, m, calls in _walk(messages, at.index, stop):
        end = i + 1
        if calls:
            turns.append("calls")
            for j, tc in enumerate(calls):
                if not isinstance(tc, dict):
                    raise DialectError(f"message {i}: tool call {j} is not an object")
                fn = tc.get("function")
                fn = fn if isinstance(fn, dict) else {}
                name = opt_str(fn.get("name")) or ""
                calls_out.append(ToolCall(pos, i, opt_str(tc.get("id")), name, json_object(fn.get("arguments"))))
                pos += 1
        elif m.get("role") == "tool":
            turns.append("results")
            text = text_parts(m.get("content"), ("text",))
            # Codex writes "aborted" for a call whose output it never got, over Chat Completions as
            # over Responses (codex-rs context manager): a stand-in, not what the tool returned.
            # mutation: aborted-over-chat-observed
            results_out.append(ToolResult(pos, i, opt_str(m.get("tool_call_id")), text, placeholder=text == "aborted"))
            pos += 1
        else:
            turns.append("other")
    return Cursor(end, pos, end)


def _is_empty(message: dict[str, Any]) -> bool:
    return all(v in (None, "", []) for k, v in message.items() if k not in ("role", "name"))


def write(body: dict[str, Any], stepped: frozenset[int]) -> list[Any]:
    """The messages with every item in ``stepped`` (by history position) taken out."""
    out = Output([], 0)
    write_items(body.get(ITEMS), 0, stepped, out)
    return out.items


def write_items(messages: Any, start: int, stepped: Collection[int], out: Output, stop: int | None = None) -> None:
    """Write ``messages[start:stop]`` onto ``out``, continuing from its state."""
    items, pos = out.items, out.pos
    for _, m, calls in _walk(messages, start, stop):
        if calls:
            keep = [tc for j, tc in enumerate(calls) if pos + j not in stepped]
            pos += len(calls)
            if len(keep) == len(calls):
                items.append(m)
                continue
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            if keep:
                m["tool_calls"] = keep
            elif _is_empty(m):
                continue
            items.append(m)
        elif m.get("role") == "tool":
            pos += 1
            if pos - 1 not in stepped:
                items.append(m)
        else:
            items.append(m)
    out.pos = pos
