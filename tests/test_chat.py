"""Chat Completions dialect (read/write) and the rewrite() entry point on chat bodies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chatkit import assert_valid_rewrite, assistant, bash, body, call, history, raw, system, tool, user
from native_bridge import Config, rewrite
from native_bridge.core.builder import build
from native_bridge.core.dialects import DialectError, chat

CHAT_PATH = "/v1/chat/completions"
# The results below are in Codex's words ("Exit code: N" above "Output:"): Codex sends them.
CODEX_UA = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"


def rw(doc: Any, **kwargs: Any):
    kwargs.setdefault("client_hint", CODEX_UA)
    return rewrite(raw(doc) if not isinstance(doc, bytes) else doc, path=CHAT_PATH, **kwargs)


def rewritten(doc: dict[str, Any]) -> dict[str, Any]:
    r = rw(doc)
    assert r.status == "rewritten", r.reason
    assert r.body is not None
    return orjson.loads(r.body)


def write(doc: dict[str, Any]) -> list[Any]:
    return chat.write(doc, build(chat.read(doc)).stepped)


# ---- read ------------------------------------------------------------------------


def test_read_positions_turns_and_arguments() -> None:
    h = history(
        system(),
        user(),
        assistant(bash("a", "ls"), call("b", "Read", {"file_path": "/x"}), content="Let me look."),
        tool("b", "B"),
        tool("a", "A"),
        assistant(content="done"),
    )
    assert h.turns == ["other", "other", "calls", "results", "results", "other"]
    assert [(c.pos, c.turn, c.id, c.name, c.arguments) for c in h.calls] == [
        (0, 2, "a", "Bash", {"command": "ls"}),
        (1, 2, "b", "Read", {"file_path": "/x"}),
    ]
    assert [(r.pos, r.turn, r.call_id, r.text, r.is_error) for r in h.results] == [
        (2, 3, "b", "B", None),
        (3, 4, "a", "A", None),
    ]


def test_read_arguments_as_object_and_undecodable() -> None:
    h = history(
        assistant(
            {"id": "o", "type": "function", "function": {"name": "Bash", "arguments": {"command": "ls"}}},
            call("s", "Bash", "{not json"),
            call("l", "Bash", "[1, 2]"),
            call("e", "Bash", ""),
        )
    )
    assert [c.arguments for c in h.calls] == [{"command": "ls"}, None, None, {}]


def test_undecodable_arguments_stay_in_messages() -> None:
    doc = body(assistant(call("s", "Bash", '{"command": "ls"')), tool("s", "a.py"))
    p = build(chat.read(doc))
    assert p.steps == []
    assert p.kept[0].code == "untranslatable"


def test_read_array_content_parts() -> None:
    h = history(
        assistant(bash("a", "ls"), bash("b", "ls")),
        tool("a", [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]),
        tool("b", [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "data:,"}}]),
    )
    assert [r.text for r in h.results] == ["one\ntwo", None]


def test_non_text_result_stays_a_message() -> None:
    doc = body(assistant(bash("b", "screenshot")), tool("b", [{"type": "image_url", "image_url": {"url": "data:,"}}]))
    assert build(chat.read(doc)).steps == []
    assert write(doc) == doc["messages"]


def test_empty_tool_calls_list_is_not_a_tool_turn() -> None:
    h = history(user(), {"role": "assistant", "content": "hi", "tool_calls": []})
    assert h.turns == ["other", "other"]
    assert h.calls == []


def test_tool_calls_on_a_user_message_are_not_calls() -> None:
    h = history({"role": "user", "content": "x", "tool_calls": [{"id": "a"}]})
    assert h.calls == []
    assert h.turns == ["other"]


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"model": "m"}, "not a list"),
        ({"messages": {"role": "user"}}, "not a list"),
        ({"messages": ["hello"]}, "message 0 is not an object"),
        ({"messages": [user(), {"role": "assistant", "tool_calls": {"id": "a"}}]}, "message 1: 'tool_calls'"),
        ({"messages": [{"role": "assistant", "tool_calls": ["x"]}]}, "tool call 0 is not an object"),
    ],
)
def test_wrong_shapes_raise_dialect_error(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(DialectError, match=match):
        chat.read(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"model": "m", "tool_calls": 1},
        {"messages": "tool_calls"},
        {"messages": ["tool_calls"]},
        {"messages": [{"role": "assistant", "tool_calls": "x"}]},
        {"messages": [{"role": "assistant", "tool_calls": [1]}]},
    ],
)
def test_rewrite_skips_wrong_shapes_with_a_reason(doc: dict[str, Any]) -> None:
    r = rw(doc)
    assert r.status == "skipped"
    assert r.reason
    assert r.body is None


# ---- write: the rewritten messages stay valid Chat Completions ------------------------


def test_stepped_pairs_removed_together_kept_pairs_untouched() -> None:
    todo = call("t", "TodoWrite", {"todos": []})
    msgs = [
        system(),
        user(),
        assistant(bash("a", "ls"), todo, content="Working."),
        tool("a", "a.py"),
        tool("t", "ok"),
        assistant(content="done"),
    ]
    out = write(body(*msgs))
    assert out == [
        system(),
        user(),
        assistant(todo, content="Working."),
        tool("t", "ok"),
        assistant(content="done"),
    ]
    assert_valid_rewrite(out, msgs)


def test_assistant_with_only_stepped_calls_is_dropped() -> None:
    msgs = [user(), assistant(bash("a", "ls")), tool("a", "x"), user("next")]
    out = write(body(*msgs))
    assert out == [user(), user("next")]
    assert_valid_rewrite(out, msgs)


@pytest.mark.parametrize("content", [None, "", []])
def test_assistant_with_empty_content_and_stepped_calls_is_dropped(content: Any) -> None:
    msgs = [user(), assistant(bash("a", "ls"), content=content, refusal=None, name="agent"), tool("a", "x")]
    assert write(body(*msgs)) == [user()]


def test_assistant_text_survives_when_its_calls_become_steps() -> None:
    parts = [{"type": "text", "text": "I will list files."}]
    msgs = [user(), assistant(bash("a", "ls"), content=parts, reasoning_content="hmm"), tool("a", "x")]
    out = write(body(*msgs))
    assert out == [user(), {"role": "assistant", "content": parts, "reasoning_content": "hmm"}]
    assert "tool_calls" not in out[1]
    assert_valid_rewrite(out, msgs)


def test_kept_call_keeps_its_tool_message_in_a_mixed_turn() -> None:
    read_rel = call("r", "Read", {"file_path": "rel.py"})
    msgs = [
        user(),
        assistant(bash("a", "ls"), read_rel, bash("u", "sleep 1")),
        tool("r", "content", name="Read"),
        tool("a", "x"),
        user("stop"),
    ]
    out = write(body(*msgs))
    assert out[1]["tool_calls"] == [read_rel, bash("u", "sleep 1")]
    assert out[2] == tool("r", "content", name="Read")
    assert len(out) == 4
    assert_valid_rewrite(out, msgs)


def test_unchanged_messages_are_the_same_objects() -> None:
    msgs = [user(), assistant(bash("a", "ls"), content="x"), tool("a", "y"), tool("zz", "orphan")]
    doc = body(*msgs)
    out = write(doc)
    assert out[0] is msgs[0]
    assert out[-1] is msgs[-1]
    assert msgs[1]["tool_calls"] == [bash("a", "ls")], "the input must not be mutated"


def test_write_without_stepped_items_is_identity() -> None:
    msgs = [user(), assistant(bash("a", "ls")), tool("a", "x"), tool("b", "orphan")]
    assert chat.write(body(*msgs), frozenset()) == msgs


def test_orphans_and_ambiguous_pairs_stay_in_place() -> None:
    msgs = [
        user(),
        tool("early", "before"),
        assistant(bash("early", "ls"), bash("d", "a"), bash("d", "b"), bash("ok", "pwd")),
        tool("d", "1"),
        tool("ok", "/"),
        tool("ghost", "?"),
    ]
    out = write(body(*msgs))
    assert out == [
        user(),
        tool("early", "before"),
        assistant(bash("early", "ls"), bash("d", "a"), bash("d", "b")),
        tool("d", "1"),
        tool("ghost", "?"),
    ]


# ---- rewrite() ----------------------------------------------------------------------


def failing_bash_body(**extra: Any) -> dict[str, Any]:
    return body(
        system(),
        user("list /nope"),
        assistant(bash("call_1", "ls /nope", description="List")),
        tool("call_1", "Exit code: 2\nOutput:\nls: cannot access /nope"),
        **extra,
    )


def test_rewrite_proto3_json_and_delta() -> None:
    doc = failing_bash_body(temperature=0, stream=True)
    out = rewritten(doc)
    assert out["additional_steps"] == [
        {
            "type": "CORTEX_STEP_TYPE_RUN_COMMAND",
            "status": "CORTEX_STEP_STATUS_DONE",
            "runCommand": {
                "commandLine": "ls /nope",
                "blocking": True,
                "exitCode": 2,
                "combinedOutput": {"full": "Exit code: 2\nOutput:\nls: cannot access /nope"},
            },
        }
    ]
    assert out["additional_steps_delta_start"] == 0
    assert out["messages"] == [system(), user("list /nope")]
    assert list(out) == [
        "model",
        "messages",
        "temperature",
        "stream",
        "additional_steps",
        "additional_steps_delta_start",
    ]
    assert out["temperature"] == 0
    assert out["stream"] is True


def test_rewrite_delta_start_after_user_tail() -> None:
    doc = failing_bash_body()
    doc["messages"].append(user("why?"))
    r = rw(doc)
    out = orjson.loads(r.body or b"")
    assert out["additional_steps_delta_start"] == len(out["additional_steps"]) == 1
    assert r.plan is not None
    assert r.plan.delta_start == 1


def test_rewrite_skips_bodies_that_already_carry_steps() -> None:
    doc = failing_bash_body(additional_steps=[])
    r = rw(doc)
    assert r.status == "skipped"
    assert "additional_steps" in r.reason
    assert r.body is None


def test_rewrite_of_its_own_output_changes_nothing() -> None:
    first = rw(failing_bash_body())
    assert first.body is not None
    second = rewrite(first.body, path=CHAT_PATH)
    assert second.status in ("skipped", "unchanged")
    assert second.body is None


@pytest.mark.parametrize(
    "doc",
    [
        body(system(), user("hi")),
        body(user("please explain what tool_calls means")),
        body(user("x"), assistant(content="y")),
    ],
)
def test_rewrite_unchanged_without_tool_history(doc: dict[str, Any]) -> None:
    r = rw(doc)
    assert r.status == "unchanged"
    assert r.reason == "no tool history"
    assert r.body is None


def test_rewrite_unchanged_when_no_pair_became_a_step() -> None:
    r = rw(body(user(), assistant(call("t", "TodoWrite", {"todos": []})), tool("t", "ok")))
    assert r.status == "unchanged"
    assert r.body is None
    assert r.plan is not None
    assert r.plan.kept[0].code == "unmapped"


def test_rewrite_unobserved_call_is_not_a_step() -> None:
    r = rw(body(user(), assistant(bash("a", "rm -rf build"))))
    assert r.status == "unchanged"
    assert r.steps == []


def test_rewrite_is_deterministic() -> None:
    doc = body(
        user(),
        assistant(bash("a", "ls"), bash("b", "false"), call("t", "TodoWrite", {"todos": []})),
        tool("b", "Exit code: 1\nOutput:\nfailed"),
        tool("a", "x"),
        tool("t", "ok"),
    )
    data = raw(doc)
    outs = {rewrite(data, path=CHAT_PATH, client_hint=CODEX_UA).body for _ in range(3)}
    assert len(outs) == 1
    (out,) = outs
    assert out is not None
    assert orjson.loads(out)["additional_steps"][1]["runCommand"]["exitCode"] == 1


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"messages": [tool_calls', "not JSON"),
        (b'["tool_calls"]', "not a JSON object"),
        (b'"tool_calls"', "not a JSON object"),
        (b"tool_calls", "not JSON"),
    ],
)
def test_rewrite_skips_non_json_and_non_object_bodies(data: bytes, reason: str) -> None:
    r = rewrite(data, path=CHAT_PATH)
    assert r.status == "skipped"
    assert reason in r.reason
    assert r.body is None


def test_rewrite_reads_an_escaped_marker() -> None:
    data = (
        b'{"model":"m","messages":[{"role":"user","content":"x"},'
        b'{"role":"assistant","content":null,"\\u0074ool_calls":[{"id":"a","type":"function",'
        b'"function":{"name":"Bash","arguments":"{\\"command\\":\\"ls\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"a","content":"x"}]}'
    )
    r = rewrite(data, path=CHAT_PATH)
    assert r.status == "rewritten"
    assert r.steps[0]["runCommand"]["commandLine"] == "ls"


def test_rewrite_with_bridge_kinds_off() -> None:
    r = rw(failing_bash_body(), config=Config(kinds=frozenset({"view_file"})))
    assert r.status == "unchanged"
    assert r.plan is not None
    assert {p.code for p in r.plan.kept} == {"kind_off"}


def test_rewrite_detects_chat_without_a_path() -> None:
    r = rewrite(raw(failing_bash_body()))
    assert r.status == "rewritten"
    assert r.dialect == "chat"


def test_rewritten_body_is_valid_chat() -> None:
    msgs = [
        system(),
        user(),
        assistant(bash("a", "ls"), call("t", "TodoWrite", {"todos": []}), content=None),
        tool("t", "ok"),
        tool("a", "x"),
        assistant(bash("b", "make")),
        tool("b", "Exit code: 2\nOutput:\n"),
        user("?"),
    ]
    out = rewritten(body(*msgs))
    assert_valid_rewrite(out["messages"], msgs)
    assert out["messages"] == [
        system(),
        user(),
        assistant(call("t", "TodoWrite", {"todos": []})),
        tool("t", "ok"),
        user("?"),
    ]
    assert [s["runCommand"].get("exitCode") for s in out["additional_steps"]] == [None, 2]


# ---- the validity checker itself can fail ------------------------------------------------


@pytest.mark.parametrize(
    "broken",
    [
        # the kept call's tool message dropped
        [user(), assistant(call("t", "TodoWrite", {"todos": []}))],
        # an empty assistant message left behind
        [user(), {"role": "assistant", "content": None}, tool("t", "ok")],
        # an empty tool_calls list
        [user(), {"role": "assistant", "content": "x", "tool_calls": []}],
        # the tool message moved before its call
        [user(), tool("t", "ok"), assistant(call("t", "TodoWrite", {"todos": []}))],
        # a message edited
        [user("changed"), assistant(call("t", "TodoWrite", {"todos": []})), tool("t", "ok")],
    ],
)
def test_validity_checker_rejects_broken_rewrites(broken: list[dict[str, Any]]) -> None:
    original = [user(), assistant(call("t", "TodoWrite", {"todos": []})), tool("t", "ok")]
    assert_valid_rewrite(original, original)
    with pytest.raises(AssertionError):
        assert_valid_rewrite(broken, original)
