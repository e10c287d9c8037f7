"""The core tests' Chat Completions bodies: the builders every history generator shares
(support/histories/chat.py), and what the tests make of a body (its history, its plan) and
check in a rewritten one.
"""

from __future__ import annotations

from typing import Any

import orjson
from native_bridge._proto import cortex_pb2
from native_bridge.core.builder import Plan, _pending_turn, build, decide
from native_bridge.core.dialects import chat
from native_bridge.core.encoder import encode_step
from native_bridge.core.history import History
from native_bridge.core.kinds import KINDS
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS
from support.histories.chat import assistant, bash, body, call, raw, system, tool, user

__all__ = [
    "assert_valid_rewrite",
    "assistant",
    "bash",
    "body",
    "build_pending",
    "call",
    "history",
    "plan",
    "raw",
    "system",
    "tool",
    "user",
]


def history(*messages: dict[str, Any], client: str | None = None) -> History:
    """The history of a Chat body; ``client``: who sent it (clients.py), whose words count."""
    h = chat.read(body(*messages))
    h.client = client
    return h


def plan(*messages: dict[str, Any], client: str | None = None, **kwargs: Any) -> Plan:
    return build(history(*messages, client=client), **kwargs)


def _key(m: Any) -> bytes:
    return orjson.dumps(m, option=orjson.OPT_SORT_KEYS)


def _call_ids(m: Any) -> list[Any]:
    calls = m.get("tool_calls") if isinstance(m, dict) and m.get("role") == "assistant" else None
    return [tc.get("id") for tc in calls or [] if isinstance(tc, dict)]


def _answered_tool_messages(messages: list[Any]) -> set[bytes]:
    """Tool messages that some earlier assistant message carries the call of."""
    seen: set[Any] = set()
    out = set()
    for m in messages:
        seen.update(_call_ids(m))
        if m.get("role") == "tool" and m.get("tool_call_id") in seen:
            out.add(_key(m))
    return out


def _answered_calls(messages: list[Any]) -> set[bytes]:
    """Tool calls that some later tool message answers."""
    out = set()
    for i, m in enumerate(messages):
        for tc in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
            if any(r.get("role") == "tool" and r.get("tool_call_id") == tc.get("id") for r in messages[i + 1 :]):
                out.add(_key(tc))
    return out


def _is_trimmed(out: dict[str, Any], orig: dict[str, Any]) -> bool:
    """``out`` is ``orig``, or ``orig`` with some of its tool calls taken out (in order)."""
    if out == orig:
        return True
    if orig.get("role") != "assistant" or not orig.get("tool_calls"):
        return False
    rest_o = {k: v for k, v in out.items() if k != "tool_calls"}
    rest_i = {k: v for k, v in orig.items() if k != "tool_calls"}
    if rest_o != rest_i:
        return False
    it = iter(orig["tool_calls"])
    return all(any(tc == x for x in it) for tc in out.get("tool_calls", []))


def assert_valid_rewrite(out: list[Any], original: list[Any]) -> None:
    """The rewritten messages are still a valid Chat Completions history, as far as the input was one."""
    # Order and content: each output message is an input message (assistant ones maybe with fewer calls), in order.
    it = iter(original)
    for m in out:
        assert any(_is_trimmed(m, o) for o in it), f"message not from the input, or out of order: {m}"
    for m in out:
        assert isinstance(m, dict)
        if m.get("role") == "assistant":
            assert m.get("tool_calls") != [], "empty tool_calls list"
            assert m.get("content") not in (None, "", []) or m.get("tool_calls"), f"empty assistant message: {m}"
    # Pairing: what was a proper call -> result pairing in the input still is one.
    lost_call = _answered_tool_messages(original) & {_key(m) for m in out} - _answered_tool_messages(out)
    assert not lost_call, f"tool message lost its call: {lost_call}"
    kept_calls = {_key(tc) for m in out if m.get("role") == "assistant" for tc in m.get("tool_calls") or []}
    lost_result = _answered_calls(original) & kept_calls - _answered_calls(out)
    assert not lost_result, f"kept call lost its tool message: {lost_result}"


def build_pending(history: History) -> list[cortex_pb2.CortexTrajectoryStep]:
    """The reuse build (truth rule 7's proof, kept here: no product code needs it): only the pending
    round's steps, built on their own, which must equal ``build(h).steps[delta_start:]``."""
    pending = _pending_turn(history)
    if pending is None:
        return []
    return [
        encode_step(KINDS[d.kind], d.inputs or {}, d.observed)
        for d in decide(history, frozenset(KINDS), DEFAULT_TOOL_KINDS)
        if d.kind is not None and d.call.turn >= pending
    ]
