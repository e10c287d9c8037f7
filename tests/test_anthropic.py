"""Anthropic Messages dialect (read/write) and rewrite() on Messages bodies, as Claude Code sends them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chatkit import build_pending
from native_bridge import rewrite
from native_bridge.core.builder import build
from native_bridge.core.dialects import DialectError, anthropic
from native_bridge.core.encoder import step_json

PATH = "/v1/messages"
REJECT = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the "
    "new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to "
    "proceed."
)
REMINDER = {
    "type": "text",
    "text": "<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>",
}
THINK = {"type": "thinking", "thinking": "Run the tests first.", "signature": "EqQBCkYIBxgCKkB" + "x" * 40}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


# ---- tiny builders ----------------------------------------------------------------------------


def use(id: str | None, name: str, **input: Any) -> dict[str, Any]:
    b: dict[str, Any] = {"type": "tool_use", "name": name, "input": input}
    if id is not None:
        b["id"] = id
    return b


def bash(id: str, command: str, **extra: Any) -> dict[str, Any]:
    return use(id, "Bash", command=command, **extra)


def res(id: str | None, content: Any = "ok", is_error: bool | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {"type": "tool_result", "content": content}
    if id is not None:
        b["tool_use_id"] = id
    if is_error is not None:
        b["is_error"] = is_error
    return b


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def user(*content: Any) -> dict[str, Any]:
    return {
        "role": "user",
        "content": content[0] if len(content) == 1 and isinstance(content[0], str) else list(content),
    }


def asst(*content: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content[0] if len(content) == 1 and isinstance(content[0], str) else list(content),
    }


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": list(messages), **extra}


def rw(doc: Any) -> Any:
    # "as Claude Code sends them": its user agent says so, and its words count.
    return rewrite(doc if isinstance(doc, bytes) else orjson.dumps(doc), path=PATH, client_hint=CLAUDE_UA)


CLAUDE_UA = "claude-cli/2.1.332 (external, sdk-cli)"


def out(doc: dict[str, Any]) -> dict[str, Any]:
    r = rw(doc)
    assert r.status == "rewritten", r.reason
    return orjson.loads(r.body or b"")


def write(doc: dict[str, Any]) -> list[Any]:
    return anthropic.write(doc, build(anthropic.read(doc)).stepped)


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


# ---- read ------------------------------------------------------------------------------------


def test_read_positions_turns_and_arguments() -> None:
    h = anthropic.read(
        body(
            user("fix it"),
            asst(THINK, text("Looking."), bash("a", "ls"), use("b", "Read", file_path="/x")),
            user(res("b", "B"), res("a", [text("A1"), text("A2")]), REMINDER),
            asst("done"),
        )
    )
    assert h.turns == ["other", "calls", "results", "other"]
    assert [(c.pos, c.turn, c.id, c.name, c.arguments) for c in h.calls] == [
        (0, 1, "a", "Bash", {"command": "ls"}),
        (1, 1, "b", "Read", {"file_path": "/x"}),
    ]
    assert [(r.pos, r.turn, r.call_id, r.text, r.is_error) for r in h.results] == [
        (2, 2, "b", "B", False),
        (3, 2, "a", "A1\nA2", False),
    ]


@pytest.mark.parametrize(
    ("content", "want"),
    [
        ("plain", "plain"),
        ([text("a"), text("b")], "a\nb"),
        ([], ""),
        (None, ""),
        ([text("see"), IMAGE], None),  # an image: text cannot carry it
        ([{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}], None),
    ],
)
def test_read_result_content_as_text(content: Any, want: str | None) -> None:
    b = res("a", content)
    if content is None:
        del b["content"]
    h = anthropic.read(body(user("go"), asst(bash("a", "ls")), user(b)))
    assert h.results[0].text == want


@pytest.mark.parametrize(("flag", "want"), [(True, True), (False, False), (None, False), ("true", False)])
def test_read_is_error(flag: Any, want: bool) -> None:
    h = anthropic.read(body(user("go"), asst(bash("a", "ls")), user(res("a", "x", flag))))
    assert h.results[0].is_error is want


def test_read_blocks_in_the_wrong_role_are_not_calls_or_results() -> None:
    h = anthropic.read(body(user(use("u", "Bash", command="ls"), text("hi")), asst(res("r", "x"), text("ok"))))
    assert (h.calls, h.results, h.turns) == ([], [], ["other", "other"])


def test_read_odd_inputs() -> None:
    h = anthropic.read(
        body(
            user("go"),
            asst({"type": "tool_use", "id": "a", "name": "Bash", "input": "ls"}, use(None, "Bash", command="ls")),
            asst({"type": "tool_use", "id": "n", "input": {}}),
        )
    )
    assert [(c.id, c.name, c.arguments) for c in h.calls] == [
        ("a", "Bash", None),
        (None, "Bash", {"command": "ls"}),
        ("n", "", {}),
    ]


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"model": "m"}, "'messages' is not a list"),
        ({"messages": {"role": "user"}}, "'messages' is not a list"),
        ({"messages": ["hi"]}, "message 0 is not an object"),
        ({"messages": [{"role": "user", "content": ["hi"]}]}, "message 0: content block 0 is not an object"),
        ({"messages": [{"role": "user", "content": [text("a"), None]}]}, "message 0: content block 1 is not"),
        ({"messages": [{"role": "assistant", "content": None}]}, "message 0: content is neither"),
        ({"messages": [{"role": "user"}]}, "message 0: content is neither"),
        ({"messages": [{"role": "user", "content": 3}]}, "message 0: content is neither"),
    ],
)
def test_wrong_shapes_raise_dialect_error(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(DialectError, match=match):
        anthropic.read(doc)


def test_rewrite_skips_wrong_shapes_with_the_reason() -> None:
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x")), "not a message")  # type: ignore[arg-type]
    r = rw(doc)
    assert (r.status, r.dialect, r.reason, r.body) == ("skipped", "anthropic", "message 3 is not an object", None)


# ---- write -------------------------------------------------------------------------------------


def test_stepped_blocks_go_kept_blocks_stay_untouched_in_place() -> None:
    a = asst(THINK, text("Two things."), bash("s", "ls"), use("k", "TodoWrite", todos=[]))
    u = user(res("k", "Todos updated"), res("s", "file.txt"), REMINDER)
    doc = body(user("go"), a, u)
    messages = write(doc)
    assert messages == [
        user("go"),
        asst(THINK, text("Two things."), use("k", "TodoWrite", todos=[])),
        user(res("k", "Todos updated"), REMINDER),
    ]
    assert messages[0] is doc["messages"][0], "an untouched message is the client's own object"
    assert doc["messages"][1] == a and len(a["content"]) == 4, "the input is not mutated"


def test_unchanged_messages_are_the_same_objects_and_no_steps_is_identity() -> None:
    doc = body(user("go"), asst(use("k", "TodoWrite", todos=[])), user(res("k", "ok")))
    assert anthropic.write(doc, frozenset()) == doc["messages"]
    assert all(a is b for a, b in zip(anthropic.write(doc, frozenset()), doc["messages"], strict=True))


def test_fully_stepped_round_is_dropped_without_merging_different_roles() -> None:
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x")), asst("Listed."), user("thanks"))
    assert write(doc) == [user("go"), asst("Listed."), user("thanks")]


def test_removal_merges_the_assistant_turns_it_brings_together() -> None:
    doc = body(
        user("go"),
        asst(text("First."), bash("a", "ls")),
        user(res("a", "x")),
        asst(text("Second."), use("k", "TodoWrite", todos=[])),
        user(res("k", "ok")),
    )
    assert write(doc) == [
        user("go"),
        asst(text("First."), text("Second."), use("k", "TodoWrite", todos=[])),
        user(res("k", "ok")),
    ]


def test_removal_merges_the_user_turns_it_brings_together_string_content_too() -> None:
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x"), REMINDER), asst("done"))
    assert write(doc) == [user(text("go"), REMINDER), asst("done")]


def test_merge_with_a_plain_string_assistant_turn() -> None:
    doc = body(user("go"), asst(text("First."), bash("a", "ls")), user(res("a", "x")), asst("plain"))
    assert write(doc) == [user("go"), asst(text("First."), text("plain"))]


def test_same_role_neighbours_the_client_sent_are_not_merged() -> None:
    doc = body(user("one"), user("two"), asst(bash("a", "ls")), user(res("a", "x")), asst("a"), asst("b"))
    assert write(doc) == [user("one"), user("two"), asst("a"), asst("b")]


def test_a_thinking_block_that_led_to_a_stepped_call_goes_with_its_turn() -> None:
    doc = body(user("go"), asst(THINK, bash("a", "ls")), user(res("a", "x"), REMINDER))
    assert write(doc) == [user(text("go"), REMINDER)]


def test_kept_tool_use_keeps_its_tool_result_in_the_next_turn() -> None:
    doc = body(
        user("go"),
        asst(bash("s", "ls"), bash("bg", "serve", run_in_background=True)),
        user(res("s", "x"), res("bg", "Command running in background with ID: b1. Output is being written to: /t")),
    )
    messages = write(doc)
    assert messages == [
        user("go"),
        asst(bash("bg", "serve", run_in_background=True)),
        user(doc["messages"][2]["content"][1]),
    ]


# ---- rewrite -----------------------------------------------------------------------------------


def test_rewrite_is_error_and_claude_code_exit_codes() -> None:
    doc = body(
        user("go"),
        asst(bash("a", "make"), bash("b", "make lint"), bash("c", "true"), bash("d", "echo hi")),
        user(
            res("a", "Exit code 2\nmake: *** [all] Error 2", True),
            res("b", "boom", True),  # a failure flag without a number: 1
            res("c", "(Bash completed with no output)", False),
            res("d", "hi"),
        ),
    )
    steps = out(doc)["additional_steps"]
    assert [s["runCommand"].get("exitCode") for s in steps] == [2, 1, None, None]
    assert all("stdout" not in s["runCommand"] for s in steps)
    assert steps[0]["runCommand"]["combinedOutput"] == {"full": "Exit code 2\nmake: *** [all] Error 2"}


@pytest.mark.parametrize(
    ("call", "result"),
    [
        (bash("a", "git push"), res("a", REJECT, True)),
        (bash("a", "serve", run_in_background=True), res("a", "Command running in background with ID: b1.")),
        (use("a", "Edit", file_path="/w/x.py", old_string="a", new_string="b"),
         res("a", "<tool_use_error>String to replace not found in file.</tool_use_error>", True)),
        (use("a", "Read", file_path="/w/shot.png"), res("a", [IMAGE])),
        (use("a", "Read", file_path="/w/x.py"), res("a", "File does not exist.", True)),
        (use("a", "Grep", pattern="x"), res("a", "rg: error", True)),
    ],
)  # fmt: skip
def test_pairs_a_step_cannot_state_stay_messages_verbatim(call: dict[str, Any], result: dict[str, Any]) -> None:
    doc = body(user("go"), asst(bash("ok", "ls"), call), user(res("ok", "x"), result))
    after = out(doc)
    assert len(after["additional_steps"]) == 1
    assert after["messages"] == [user("go"), asst(call), user(result)]


def test_unobserved_orphan_and_ambiguous_stay() -> None:
    doc = body(
        user(res("orphan", "stray")),
        asst(bash("a", "ls"), bash("none", "sleep 9"), bash("dup", "one"), bash("dup", "two")),
        user(res("a", "x"), res("dup", "?")),
        asst("And?"),
        user("go on"),
    )
    after = out(doc)
    assert [s["runCommand"]["commandLine"] for s in after["additional_steps"]] == ["ls"]
    assert after["messages"] == [
        doc["messages"][0],
        asst(bash("none", "sleep 9"), bash("dup", "one"), bash("dup", "two")),
        user(res("dup", "?")),
        asst("And?"),
        user("go on"),
    ]


def test_delta_start_counts_a_results_turn_with_reminder_text_as_the_pending_round() -> None:
    doc = body(
        user("go"),
        asst(bash("a", "ls")),
        user(res("a", "x")),
        asst(THINK, bash("b", "pwd"), bash("c", "id")),
        user(res("b", "/w"), res("c", "uid=1"), REMINDER),
    )
    after = out(doc)
    assert after["additional_steps_delta_start"] == 1
    h = anthropic.read(doc)
    plan = build(h)
    assert [step_json(s) for s in build_pending(h)] == [step_json(s) for s in plan.steps[1:]]


def test_delta_start_is_empty_after_a_user_text_turn() -> None:
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x")), asst("Done."), user("thanks"))
    assert out(doc)["additional_steps_delta_start"] == 1
    assert build_pending(anthropic.read(doc)) == []


def test_everything_but_messages_is_the_clients_own() -> None:
    system = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x")), system=system, thinking={"type": "enabled"})
    after = out(doc)
    assert list(after) == [*doc, "additional_steps", "additional_steps_delta_start"]
    assert {
        k: v for k, v in after.items() if k not in ("messages", "additional_steps", "additional_steps_delta_start")
    } == {k: v for k, v in doc.items() if k != "messages"}


def test_rewrite_of_its_own_output_changes_nothing() -> None:
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x")), asst("ok"), user("more"))
    first = rw(doc)
    assert first.body is not None
    second = rw(first.body)
    assert second.status in ("skipped", "unchanged") and second.body is None
    messages = orjson.loads(first.body)["messages"]
    assert build(anthropic.read(body(*messages))).steps == []


def test_without_tool_blocks_nothing_is_parsed() -> None:
    r = rw(body(user("What is a tool?"), asst("A function."), user("ok")))
    assert (r.status, r.reason) == ("unchanged", "no tool history")


def test_dialect_by_body_shape() -> None:
    doc = body(user("go"), asst(bash("a", "ls")), user(res("a", "x")))
    r = rewrite(orjson.dumps(doc), path="/api/generate")
    assert (r.status, r.dialect) == ("rewritten", "anthropic")


# ---- the rewritten request stays valid for the Messages API (issue 10, item 6) ---------------------


def kept_codes(doc: dict[str, Any]) -> dict[str | None, str | None]:
    r = rw(doc)
    assert r.plan is not None
    return {p.id: p.code for p in r.plan.kept}


def test_a_thinking_block_goes_with_the_call_it_led_to_when_its_turn_goes() -> None:
    doc = body(user("go"), asst(THINK, bash("a", "ls")), user(res("a", "x")), asst("Listed."), user("thanks"))
    assert out(doc)["messages"] == [user("go"), asst("Listed."), user("thanks")]


def test_a_call_a_thinking_block_led_to_stays_when_its_turn_stays() -> None:
    todo = use("k", "TodoWrite", todos=[])
    doc = body(
        user("go"),
        asst(THINK, bash("a", "ls"), todo, bash("b", "pwd")),
        user(res("a", "x"), res("k", "ok"), res("b", "/w")),
    )
    after = out(doc)
    assert [s["runCommand"]["commandLine"] for s in after["additional_steps"]] == ["pwd"]
    assert after["messages"] == [user("go"), asst(THINK, bash("a", "ls"), todo), user(res("a", "x"), res("k", "ok"))]
    assert kept_codes(doc)["a"] == "validity"


def test_a_merge_never_puts_thinking_after_other_content() -> None:
    later = asst(THINK, text("Second."), use("k", "TodoWrite", todos=[]))
    doc = body(
        user("go"),
        asst(bash("z", "pwd")),
        user(res("z", "/w")),
        asst(text("First."), bash("a", "ls")),
        user(res("a", "x")),
        later,
        user(res("k", "ok")),
    )
    after = out(doc)
    assert [s["runCommand"]["commandLine"] for s in after["additional_steps"]] == ["pwd"]
    assert after["messages"] == [user("go"), *doc["messages"][3:]]
    assert kept_codes(doc)["a"] == "validity"


def test_a_request_that_ended_on_the_user_never_ends_on_an_assistant_turn() -> None:
    doc = body(
        user("go"),
        asst(bash("z", "pwd")),
        user(res("z", "/w")),
        asst(text("Now the listing."), bash("a", "ls")),
        user(res("a", "x")),
    )
    after = out(doc)
    assert after["messages"] == [user("go"), *doc["messages"][3:]]
    assert [s["runCommand"]["commandLine"] for s in after["additional_steps"]] == ["pwd"]
    assert after["additional_steps_delta_start"] == 1  # the pending round stays messages: nothing new
    assert kept_codes(doc)["a"] == "validity"


def test_the_end_is_kept_by_the_least_it_needs() -> None:
    # Two calls in the last round: keeping one pair is enough to end on the user's turn.
    doc = body(user("go"), asst(text("Both."), bash("a", "ls"), bash("b", "pwd")), user(res("a", "x"), res("b", "/w")))
    after = out(doc)
    assert after["messages"] == [user("go"), asst(text("Both."), bash("b", "pwd")), user(res("b", "/w"))]
    assert [s["runCommand"]["commandLine"] for s in after["additional_steps"]] == ["ls"]


def test_a_user_turn_that_stays_or_a_prefill_the_client_sent_needs_no_pin() -> None:
    doc = body(user("go"), asst(text("Listing."), bash("a", "ls")), user(res("a", "x"), REMINDER))
    assert out(doc)["messages"] == [user("go"), asst(text("Listing.")), user(REMINDER)]
    prefill = body(user("go"), asst(text("Listing."), bash("a", "ls")), user(res("a", "x")), asst("So"))
    assert out(prefill)["messages"] == [user("go"), asst(text("Listing."), text("So"))]


def cc(block: dict[str, Any], ttl: str | None = None) -> dict[str, Any]:
    return {**block, "cache_control": {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}}


def n_breakpoints(doc: Any) -> int:
    return orjson.dumps(doc).count(b'"cache_control"')


def test_a_breakpoint_on_a_removed_block_moves_to_the_nearest_earlier_block_that_stays() -> None:
    todo = use("k", "TodoWrite", todos=[])
    doc = body(
        user("go"),
        asst(text("Listing."), todo, bash("a", "ls")),
        user(res("k", "ok"), cc(res("a", "x"), "1h"), REMINDER),
    )
    after = out(doc)
    assert after["messages"] == [user("go"), asst(text("Listing."), todo), user(cc(res("k", "ok"), "1h"), REMINDER)]
    assert n_breakpoints(after["messages"]) == 1


def test_a_breakpoint_crosses_into_the_turn_before_and_skips_thinking_and_empty_text() -> None:
    doc = body(
        user(text("go"), text("")),
        asst(THINK, bash("a", "ls")),
        user(cc(res("a", "x")), REMINDER),
    )
    after = out(doc)
    # The assistant turn went whole (the thinking with its call): the breakpoint lands on "go".
    assert after["messages"] == [user(cc(text("go")), text(""), REMINDER)]
    string_first = body(user("go"), asst(cc(bash("a", "ls"))), user(res("a", "x"), REMINDER))
    assert out(string_first)["messages"] == [user(cc(text("go")), REMINDER)]


def test_breakpoints_are_never_added() -> None:
    doc = body(
        user(cc(text("go"))),
        asst(cc(bash("a", "ls"))),
        user(cc(res("a", "x")), REMINDER),
    )
    after = out(doc)
    assert after["messages"] == [user(cc(text("go")), REMINDER)]
    assert n_breakpoints(after) == 1 < n_breakpoints(doc)
