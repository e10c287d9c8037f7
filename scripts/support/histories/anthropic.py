"""Anthropic Messages history blocks, as the generators here write them (key order is part of the
pinned bytes: the bundled session writes its tool_result with ``tool_use_id`` first, and the
fuzzer's seeds put an id last, or leave it out; those stay as they were written)."""

from __future__ import annotations

from typing import Any


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(id: str, name: str, input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def tool_result(id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    """Claude Code's result block; ``is_error`` only when it is set."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": id, "content": content}
    if is_error:
        block["is_error"] = True
    return block
