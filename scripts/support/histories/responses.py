"""OpenAI Responses input items, as the generators here write them (Codex CLI's shapes)."""

from __future__ import annotations

from typing import Any


def message(role: str, text: str) -> dict[str, Any]:
    """A message item: ``output_text`` for the assistant, ``input_text`` for the others."""
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def function_call(name: str, arguments: str, call_id: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "name": name, "arguments": arguments}
    if call_id is not None:
        item["call_id"] = call_id
    return item


def custom_tool_call(name: str, input: str, call_id: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "custom_tool_call", "name": name, "input": input}
    if call_id is not None:
        item["call_id"] = call_id
    return item


def output(call_id: str, output: Any, type: str = "function_call_output") -> dict[str, Any]:
    """The client's answer to a call: its type follows the call's (``custom_tool_call_output``...)."""
    return {"type": type, "call_id": call_id, "output": output}
