"""Chat Completions history items, as every generator here writes them.

Two shapes of a tool call and its result, both as clients send them:

- ``call``/``tool``: the id last, and absent when it is None (the tests' bodies, tests/chatkit.py,
  and the fuzzer's seeds, which drop ids on purpose);
- ``sent_call``/``sent_result``: the id first, as an SDK serialises a tool round (the bench's
  agent sessions and the bundled chat session).

Key order is part of the bytes, and those bytes are pinned (the bench's golden digests, the
bundled fixtures, the fuzzer's case numbers): a generator keeps the shape it was written with.
"""

from __future__ import annotations

from typing import Any

import orjson


def call(id: str | None, name: str, args: Any = None, **kwargs: Any) -> dict[str, Any]:
    """One assistant tool call; ``args`` is a dict (JSON-encoded here) or a raw string."""
    if args is None:
        args = kwargs
    arguments = args if isinstance(args, str) else orjson.dumps(args).decode()
    tc: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if id is not None:
        tc["id"] = id
    return tc


def assistant(*calls: dict[str, Any], content: Any = None, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        m["tool_calls"] = list(calls)
    m.update(extra)
    return m


def tool(id: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"role": "tool", "content": content}
    if id is not None:
        m["tool_call_id"] = id
    m.update(extra)
    return m


def user(text: str = "go on") -> dict[str, Any]:
    return {"role": "user", "content": text}


def system(text: str = "You are a coding agent.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "messages": list(messages), **extra}


def raw(doc: Any) -> bytes:
    return orjson.dumps(doc)


def bash(id: str, command: str, **extra: Any) -> dict[str, Any]:
    return call(id, "Bash", {"command": command, **extra})


def sent_call(id: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call as an SDK serialises it: id, type, function (``arguments`` already JSON)."""
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def sent_result(id: str, content: Any) -> dict[str, Any]:
    """A tool result as an SDK serialises it: role, tool_call_id, content."""
    return {"role": "tool", "tool_call_id": id, "content": content}
