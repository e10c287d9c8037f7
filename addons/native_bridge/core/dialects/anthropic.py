"""Anthropic Messages: ``tool_use`` blocks in assistant turns, ``tool_result`` blocks
(with ``is_error``) in user turns.

The writer keeps the request valid for the Messages API: no empty ``content``,
and when a removal would put two turns of the same role side by side they are
merged, so user/assistant alternation holds.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..history import History, ToolCall, ToolResult, TurnRole
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
        role: TurnRole = "other"
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
                # mutation: is-error-ignored
                is_error = b.get("is_error")
                text = result_text(b.get("content"))
                h.results.append(ToolResult(pos, i, opt_str(b.get("tool_use_id")), text, is_error is True))
                pos += 1
        h.turns.append(role)
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


THINKING = frozenset({"thinking", "redacted_thinking"})
PIN_THINKING = "a thinking block leads to this call in a turn that stays: the API needs them together"
PIN_ORDER = "taking it out would merge two assistant turns with a thinking block after other content"
PIN_END = "taking it out would leave the request ending on an assistant turn (a prefill), not on the user's"


def _thinking(b: Any) -> bool:
    """A thinking block (a block's "type" may be anything a client sent: only a string names a kind)."""
    t = b.get("type") if isinstance(b, dict) else None
    return isinstance(t, str) and t in THINKING


def _attached(blocks: list[Any]) -> dict[int, int]:
    """Each thinking block of an assistant turn that leads straight to a tool_use: its index -> the tool_use's."""
    out: dict[int, int] = {}
    run: list[int] = []
    for j, b in enumerate(blocks):
        if _thinking(b):
            run.append(j)
            continue
        if isinstance(b, dict) and b.get("type") == "tool_use":
            out.update((t, j) for t in run)
        run = []
    return out


def _cacheable(b: Any) -> bool:
    """A block the API accepts cache_control on (not thinking, not empty text)."""
    return isinstance(b, dict) and not _thinking(b) and not (b.get("type") == "text" and not b.get("text"))


def _with_breakpoint(blocks: list[Any], cache_control: Any) -> list[Any] | None:
    """``blocks`` with the breakpoint moved onto the last block that can carry it (a new list;
    the same one when that block has a breakpoint already); None when no block can."""
    for j in range(len(blocks) - 1, -1, -1):
        if _cacheable(blocks[j]):
            if "cache_control" in blocks[j]:
                return blocks
            return [*blocks[:j], {**blocks[j], "cache_control": cache_control}, *blocks[j + 1 :]]
    return None


def _move_breakpoint(items: list[Any], cache_control: Any) -> None:
    """Put a removed block's breakpoint on the last block written before it (items[-1], replaced,
    never changed in place: the memo shares it). None can carry it: it goes (never one more)."""
    if not items:
        return
    m = items[-1]
    content = m.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    moved = _with_breakpoint(blocks, cache_control) if isinstance(blocks, list) else None
    if moved is not None and moved is not blocks:
        items[-1] = {**m, "content": moved}


def _starts_thinking(m: dict[str, Any]) -> bool:
    c = m.get("content")
    return isinstance(c, list) and bool(c) and _thinking(c[0])


def write_items(messages: Any, start: int, stepped: Collection[int], out: Output, stop: int | None = None) -> None:
    """Write ``messages[start:stop]`` onto ``out``, continuing from its state.

    Validity (truth rule 6; what cannot be kept valid is pinned, see dialects/__init__.py):
    no empty content; turns a removal brings together are merged so user/assistant
    alternate; a thinking block that leads to a tool_use goes with it when its whole turn
    goes, and otherwise pins it (the API wants the thinking with the call it led to); a
    merge never puts a thinking block after other content (the API wants an assistant
    turn that has thinking to start with it); a removed block's ``cache_control``
    breakpoint moves to the nearest earlier block that stays."""
    items, pos = out.items, out.pos
    dropped, gap, pins = out.dropped, out.gap, out.pins  # merge only neighbours that a removal brought together
    for i, m, blocks in _blocks(messages, start, stop):
        if blocks is not None:
            owned = {}  # block index -> its history position
            for j, b in enumerate(blocks):
                if _is_call(m, b) or _is_result(m, b):
                    owned[j] = pos
                    pos += 1
            gone = {j for j, p in owned.items() if p in stepped}
            if gone:
                attached = _attached(blocks) if m.get("role") == "assistant" else {}
                whole = all(j in gone or attached.get(j) in gone for j in range(len(blocks)))
                if not whole:
                    for j in set(attached.values()) & gone:
                        pins[owned[j]] = (PIN_THINKING, i)
                keep: list[Any] = []
                for j, b in enumerate(blocks):
                    if whole or j in gone:
                        cc = b.get("cache_control")
                        if cc is not None:
                            moved = _with_breakpoint(keep, cc)
                            if moved is not None:
                                keep = moved
                            else:
                                _move_breakpoint(items, cc)
                        continue
                    keep.append(b)
                if not keep:
                    dropped = True
                    gap += tuple(owned[j] for j in sorted(gone) if _is_result(m, blocks[j]))
                    continue
                m = {**m, "content": keep}
        if dropped and items and items[-1].get("role") == m.get("role"):
            if m.get("role") == "assistant" and _starts_thinking(m) and not _starts_thinking(items[-1]) and gap:
                pins[gap[-1]] = (PIN_ORDER, i)
            items[-1] = _merge(items[-1], m)
        else:
            items.append(m)
        dropped, gap = False, ()
    out.pos, out.dropped, out.gap = pos, dropped, gap


def end_pins(messages: Any, out: Output) -> dict[int, tuple[str, int]]:
    """A request that ended on the user's turn must not end on an assistant turn (or on none)."""
    if not out.gap or not isinstance(messages, list) or not messages:
        return {}
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return {}  # the client's own prefill
    if out.items and out.items[-1].get("role") == "user":
        return {}
    return {out.gap[-1]: (PIN_END, len(messages))}
