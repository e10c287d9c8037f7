"""OpenAI Responses: ``input`` items. Calls: ``function_call``, ``custom_tool_call``,
``local_shell_call``, ``shell_call``; results: the matching ``*_output`` items.

Items the bridge does not own stay where they were, in order, except a ``reasoning``
item whose calls all became steps: it goes with them (the API rejects a reasoning item
without the item that followed it). When some calls of its response stay, it stays; if
it carries an id (the API then checks the very item that followed it), the steps before
the first call that stays are pinned. With ``previous_response_id`` the input holds only
the new items, so what the bridge builds from it is already the delta.

A model response's calls and their outputs may interleave (Codex records ``call a,
output a, call b, output b``): a run of model output that starts with a call right after
outputs continues the response before it (turn role ``more``), and the builder counts it
in the same round. A response of a reasoning model starts with its reasoning item, so a
new response is told apart; without reasoning items two one-call responses look the
same as one two-call response and count as one round: a resumed planner may get the
earlier step again, but never misses one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..history import History, ToolCall, ToolResult
from . import Cursor, DialectError, Output, json_object, opt_str, text_parts

NAME = "responses"
ITEMS = "input"
MARKERS = (b"_call",)

CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "shell_call"})
RESULTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output", "shell_call_output"})
# Names for the built-in shell tools, which carry no name of their own.
LOCAL_SHELL = "local_shell"
SHELL_CALL = "shell_call"
ABORTED_PLACEHOLDER = "aborted"


def _items(items: Any, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, dict[str, Any], str | None]]:
    if isinstance(items, str):
        return
    if not isinstance(items, list):
        raise DialectError("'input' is neither a string nor a list")
    for i in range(start, len(items) if stop is None else stop):
        it = items[i]
        if not isinstance(it, dict):
            raise DialectError(f"input item {i} is not an object")
        t = it.get("type")
        yield i, it, t if isinstance(t, str) and (t in CALLS or t in RESULTS) else None


def _call(it: dict[str, Any], t: str) -> tuple[str, dict[str, Any] | None]:
    if t == "function_call":
        return opt_str(it.get("name")) or "", json_object(it.get("arguments"))
    if t == "custom_tool_call":
        raw = it.get("input")
        return opt_str(it.get("name")) or "", {"input": raw} if isinstance(raw, str) else None
    action = it.get("action")
    if not isinstance(action, dict):
        return (LOCAL_SHELL if t == "local_shell_call" else SHELL_CALL), None
    args = {k: v for k, v in action.items() if k != "type"}
    return (LOCAL_SHELL if t == "local_shell_call" else SHELL_CALL), args


def _shell_output(output: Any) -> tuple[str | None, int | None, bool]:
    """shell_call_output's structured output: (text, exit code, failed without a code)."""
    if not (isinstance(output, list) and len(output) == 1 and isinstance(output[0], dict)):
        return None, None, False
    o = output[0]
    stdout, stderr = o.get("stdout") or "", o.get("stderr") or ""
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        return None, None, False
    text = stdout + stderr
    outcome = o.get("outcome")
    if isinstance(outcome, dict):
        code = outcome.get("exit_code")
        if outcome.get("type") == "exit" and type(code) is int and -(2**31) <= code < 2**31:
            return text, outcome["exit_code"], False
        if outcome.get("type") == "timeout":
            return text, None, True
    return text, None, False


def _result(it: dict[str, Any], t: str, pos: int, turn: int) -> ToolResult:
    call_id = opt_str(it.get("call_id"))
    if t == "local_shell_call_output" and call_id is None:
        call_id = opt_str(it.get("id"))
    if t == "shell_call_output":
        text, code, failed = _shell_output(it.get("output"))
        return ToolResult(pos, turn, call_id, text, failed or None, exit_code=code)
    text = text_parts(it.get("output"), ("input_text", "output_text"))
    # Codex fills in "aborted" for a call whose output it never got (codex-rs context manager,
    # ensure_call_outputs_present): a stand-in, not what the tool returned.
    return ToolResult(pos, turn, call_id, text, placeholder=text == ABORTED_PLACEHOLDER)


def _is_model_output(it: dict[str, Any]) -> bool:
    """Reasoning, assistant text and hosted tool calls: what a model response holds."""
    t = it.get("type")
    if t in (None, "message"):
        return it.get("role") == "assistant"
    return isinstance(t, str) and (t == "reasoning" or t.endswith("_call"))


def read(body: dict[str, Any]) -> History:
    h = History()
    read_items(body.get(ITEMS), Cursor(), h)
    return h


def read_items(items: Any, at: Cursor, h: History, stop: int | None = None) -> Cursor:
    """Read ``items[at.index:stop]`` into ``h``, continuing from ``at``; where it stopped.

    ``h.turns`` must hold the turns before ``at`` (a run of model output may go on
    across the cut, and a call in it makes that turn a "calls" turn)."""
    pos = at.pos
    previous = at.run
    end = at.index
    for i, it, t in _items(items, at.index, stop):
        end = i + 1
        # One turn per run of model output (calls, reasoning, assistant text) and per run of results.
        cls = "model" if t in CALLS or _is_model_output(it) else "results" if t in RESULTS else "input"
        if cls != previous or cls == "input":
            if cls == "model" and previous == "results" and t in CALLS:
                h.turns.append("more")  # the response before goes on: its calls and outputs interleave
            else:
                h.turns.append("results" if cls == "results" else "other")
            previous = cls
        turn = len(h.turns) - 1
        if t in CALLS:
            if h.turns[turn] != "more":
                h.turns[turn] = "calls"
            name, args = _call(it, t)
            h.calls.append(ToolCall(pos, turn, opt_str(it.get("call_id")), name, args))
            pos += 1
        elif t in RESULTS:
            h.results.append(_result(it, t, pos, turn))
            pos += 1
    return Cursor(end, pos, len(h.turns), previous)


def write(body: dict[str, Any], stepped: frozenset[int]) -> list[Any]:
    out = Output([], 0)
    write_items(body.get(ITEMS), 0, stepped, out)
    return out.items


PIN_REASONING = "a reasoning item (with an id) led to this call and to calls that stay: the API needs its next item"


def item_type(it: Any) -> str | None:
    """An item's type (a client may send anything under "type": only a string names one)."""
    t = it.get("type") if isinstance(it, dict) else None
    return t if isinstance(t, str) else None


def _owned(it: Any) -> bool:
    return item_type(it) in CALLS or item_type(it) in RESULTS


def _is_reasoning(it: Any) -> bool:
    return isinstance(it, dict) and it.get("type") == "reasoning"


def _reasoning_fate(
    items: list[Any], i: int, pos: int, stepped: Collection[int], pins: dict[int, tuple[str, int]]
) -> bool:
    """Whether the reasoning item ``items[i]`` goes: True when every call of its response became a step.

    Its response: the calls (with their outputs) straight after it and after the reasoning
    items next to it. When the call right after it is a step but a later call of the
    response stays, the steps before the first kept call are pinned, so the reasoning
    item keeps the item it was followed by."""
    j = i + 1
    while j < len(items) and _is_reasoning(items[j]):
        j += 1
    if j == len(items) or item_type(items[j]) not in CALLS:
        return False  # followed by a message, a hosted call, input, or nothing: not ours to change
    calls: list[int] = []
    p = pos
    k = j
    while k < len(items) and _owned(items[k]):
        if items[k]["type"] in CALLS:
            calls.append(p)
        p += 1
        k += 1
    kept = [c for c in calls if c not in stepped]
    if not kept:
        return True
    if not isinstance(items[i].get("id"), str):
        # No item ids (Codex: store false): nothing ties the reasoning to one call but its place,
        # and it is still followed by a call of its own response.
        return False
    # With ids the API checks the very item that followed it (rs_... then fc_...): keep that one.
    for c in calls:
        if c == kept[0]:
            break
        pins[c] = (PIN_REASONING, k if k < len(items) else len(items))
    return False


def write_items(items: Any, start: int, stepped: Collection[int], out: Output, stop: int | None = None) -> None:
    """Write ``items[start:stop]`` onto ``out``, continuing from its state."""
    kept, pos = out.items, out.pos
    for i, it, t in _items(items, start, stop):
        if t is not None:
            pos += 1
            if pos - 1 in stepped:
                continue
        elif it.get("type") == "reasoning" and stepped and _reasoning_fate(items, i, pos, stepped, out.pins):
            continue
        kept.append(it)
    out.pos = pos


def joins(items: Any, k: int) -> bool:
    """Whether what is written before ``items[k]`` depends on items from ``k`` on: the cut falls
    inside a reasoning item's response (its fate depends on every call of that response)."""
    if not isinstance(items, list):
        return False
    i = k - 1
    while i >= 0 and _owned(items[i]):
        i -= 1
    return i >= 0 and _is_reasoning(items[i])
