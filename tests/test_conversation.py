"""Conversation keys: where they come from, that turns of one session share one, and that no raw id leaks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from native_bridge.core.conversation import conversation_key
from native_bridge.core.pipeline import rewrite
from native_bridge.records.writer import RecordJob, to_record

SESSION = (Path(__file__).resolve().parent / "fixtures" / "sessions" / "chat_session.json").read_bytes()
SECRETISH = "user_8f3a0c_account_5a1e-77_session_d2b4c6e8-1111-2222-3333-444455556666"


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    "header", ["x-session-id", "session_id", "X-Claude-Code-Session-Id", "conversation-id", "session-id"]
)
def test_session_header_wins(header):
    body = orjson.dumps({"metadata": {"user_id": "u"}, "messages": [{"role": "user", "content": "hi"}]})
    key = conversation_key([("content-type", "application/json"), (header, "sess-42")], body)
    assert key == f"{header.lower()}:{digest('sess-42')}"


@pytest.mark.parametrize(
    ("doc", "source", "value"),
    [
        ({"metadata": {"user_id": SECRETISH}, "messages": []}, "metadata.user_id", SECRETISH),  # Claude Code
        ({"metadata": {"session_id": "s1", "user_id": "u"}, "messages": []}, "metadata.session_id", "s1"),
        ({"prompt_cache_key": "019a-conv", "input": []}, "prompt_cache_key", "019a-conv"),  # Codex
        ({"user": "alice", "messages": []}, "user", "alice"),
        ({"previous_response_id": "resp_1", "input": []}, "previous_response_id", "resp_1"),
        ({"conversation": {"id": "conv_9"}, "input": []}, "conversation", "conv_9"),
    ],
)
def test_request_metadata(doc, source, value):
    assert conversation_key([], orjson.dumps(doc)) == f"{source}:{digest(value)}"


def test_opening_turns_group_the_turns_of_one_conversation():
    doc = orjson.loads(SESSION)
    first = conversation_key([], SESSION)
    assert first is not None and first.startswith("opening:")
    # A later turn repeats the opening and adds to the end: same key. Another task: another key.
    later = dict(doc, messages=[*doc["messages"], {"role": "user", "content": "thanks"}])
    assert conversation_key([], orjson.dumps(later)) == first
    other = dict(doc, messages=[doc["messages"][0], {"role": "user", "content": "something else"}])
    assert conversation_key([], orjson.dumps(other)) != first
    # The rewritten request of a turn has the same opening (only tool history moves into steps).
    after = rewrite(SESSION, path="/v1/chat/completions").body
    assert conversation_key([], after) == first


def test_opening_covers_anthropic_system_and_responses_instructions():
    a = {"system": "You are A", "messages": [{"role": "user", "content": "go"}]}
    b = {"system": "You are B", "messages": [{"role": "user", "content": "go"}]}
    assert conversation_key([], orjson.dumps(a)) != conversation_key([], orjson.dumps(b))
    r1 = {"instructions": "codex", "input": "hello"}
    r2 = {"instructions": "codex", "input": [{"type": "message", "role": "user", "content": "hello"}]}
    assert conversation_key([], orjson.dumps(r1)).startswith("opening:")
    assert conversation_key([], orjson.dumps(r1)) != conversation_key([], orjson.dumps(r2))


@pytest.mark.parametrize("body", [None, b"not json", b"[1, 2]", b"{}", orjson.dumps({"messages": "x"})])
def test_nothing_to_key_on(body):
    assert conversation_key([], body) is None


def test_blank_header_is_ignored():
    assert conversation_key([("x-session-id", "  ")], orjson.dumps({"user": "bob"})) == f"user:{digest('bob')}"


def test_deeply_nested_opening_gives_no_key_rather_than_an_error():
    body = b'{"messages": [{"role": "user", "content": ' + b"[" * 300 + b'"x"' + b"]" * 300 + b"}]}"
    assert orjson.loads(body)  # readable, but deeper than orjson writes
    assert conversation_key([], body) is None


def test_records_carry_the_key_and_never_the_raw_value():
    body = orjson.dumps({"model": "m", "metadata": {"user_id": SECRETISH}, "messages": []})
    job = RecordJob(
        "f1", 0.0, "POST", "http://x/v1/messages", [("x-api-key", "sk-ant-123456789")], "unchanged", "", None, body
    )
    rec = to_record(job)
    assert rec["conversation"] == f"metadata.user_id:{digest(SECRETISH)}"
    job.headers = [("x-claude-code-session-id", "cc-session-7")]
    rec = to_record(job)
    assert rec["conversation"] == f"x-claude-code-session-id:{digest('cc-session-7')}"
    assert "cc-session-7" not in rec["conversation"]
