"""OpenAI Chat Completions: assistant ``tool_calls`` and ``role: "tool"`` results."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..history import History, ToolCall, ToolResult
from . import DialectError, json_object, opt_str, text_parts

NAME = "chat"
ITEMS = "messages"
MESSAGES = ITEMS  # old name, kept while tests move over
MARKERS = (b"tool_calls",)


def _walk(messages: Any) -> Iterator[tuple[int, dict[str, Any], list[Any] | None]]:
    """Each message with its tool calls (None when it carries none), checked for shape."""
    if not isinstance(messages, list):
        raise DialectError("'messages' is not a list")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise DialectError(f"message {i} is not an object")
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if calls is not None and not isinstance(calls, list):
            raise DialectError(f"message {i}: 'tool_calls' is not a list")
        yield i, m, calls or None


def read(body: dict[str, Any]) -> History:
    h = History()
    pos = 0
    for i, m, calls in _walk(body.get(ITEMS)):
        if calls:
            h.turns.append("calls")
            for j, tc in enumerate(calls):
                if not isinstance(tc, dict):
                    raise DialectError(f"message {i}: tool call {j} is not an object")
                fn = tc.get("function")
                fn = fn if isinstance(fn, dict) else {}
                name = opt_str(fn.get("name")) or ""
                h.calls.append(ToolCall(pos, i, opt_str(tc.get("id")), name, json_object(fn.get("arguments"))))
                pos += 1
        elif m.get("role") == "tool":
            h.turns.append("results")
            h.results.append(
                ToolResult(pos, i, opt_str(m.get("tool_call_id")), text_parts(m.get("content"), ("text",)))
            )
            pos += 1
        else:
            h.turns.append("other")
    return h


def _is_empty(message: dict[str, Any]) -> bool:
    return all(v in (None, "", []) for k, v in message.items() if k not in ("role", "name"))


def write(body: dict[str, Any], stepped: frozenset[int]) -> list[Any]:
    """The messages with every item in ``stepped`` (by history position) taken out."""
    out: list[Any] = []
    pos = 0
    for _, m, calls in _walk(body.get(ITEMS)):
        if calls:
            keep = [tc for j, tc in enumerate(calls) if pos + j not in stepped]
            pos += len(calls)
            if len(keep) == len(calls):
                out.append(m)
                continue
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            if keep:
                m["tool_calls"] = keep
            elif _is_empty(m):
                continue
            out.append(m)
        elif m.get("role") == "tool":
            pos += 1
            if pos - 1 not in stepped:
                out.append(m)
        else:
            out.append(m)
    return out
