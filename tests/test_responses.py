"""OpenAI Responses dialect (read/write) and rewrite() on Responses bodies, as Codex CLI and the
Agents SDK send them."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from chatkit import build_pending
from native_bridge import rewrite
from native_bridge.core.builder import build
from native_bridge.core.dialects import DialectError, responses
from native_bridge.core.encoder import step_json

PATH = "/v1/responses"
STEPS, DELTA = "additional_steps", "additional_steps_delta_start"


# ---- tiny builders ----------------------------------------------------------------------------


def fc(call_id: str | None, name: str, args: Any = None, **kw: Any) -> dict[str, Any]:
    it: dict[str, Any] = {"type": "function_call", "name": name}
    it["arguments"] = args if isinstance(args, str) else json.dumps(args if args is not None else kw)
    if call_id is not None:
        it["call_id"] = call_id
    return it


def shell(call_id: str, script: str, **extra: Any) -> dict[str, Any]:
    return fc(call_id, "shell", {"command": ["bash", "-lc", script], "workdir": "/w", **extra})


def out(call_id: str | None, output: Any, type: str = "function_call_output") -> dict[str, Any]:
    it: dict[str, Any] = {"type": type, "output": output}
    if call_id is not None:
        it["call_id"] = call_id
    return it


def codex_json(output: str, code: int) -> str:
    return json.dumps(
        {"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.1}}, separators=(",", ":")
    )


def reasoning(n: int = 0) -> dict[str, Any]:
    return {"type": "reasoning", "summary": [], "encrypted_content": f"gAAAAABo{n:04d}"}


def msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def body(*items: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5-codex", "instructions": "You are Codex.", "input": list(items), **extra}


CODEX_UA = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"


def rw(doc: Any) -> Any:
    # As Codex CLI sends them (its user agent): its words count.
    return rewrite(doc if isinstance(doc, bytes) else orjson.dumps(doc), path=PATH, client_hint=CODEX_UA)


def after(doc: dict[str, Any]) -> dict[str, Any]:
    r = rw(doc)
    assert r.status == "rewritten", r.reason
    return orjson.loads(r.body or b"")


def commands(doc: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(s["runCommand"]["commandLine"], s["runCommand"].get("exitCode")) for s in doc[STEPS]]


# ---- read ------------------------------------------------------------------------------------


def test_read_function_calls_and_outputs() -> None:
    h = responses.read(
        body(
            msg("user", "go"),
            reasoning(),
            fc("a", "shell_command", command="ls", workdir="/w"),
            fc("b", "read_file", "{not json"),
            fc("c", "exec_command", "[1]"),
            out("a", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nx"),
            out("b", [{"type": "input_text", "text": "L1: a"}, {"type": "input_text", "text": "L2: b"}]),
            out("c", [{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "data:,"}]),
        )
    )
    assert [(c.pos, c.turn, c.id, c.name, c.arguments) for c in h.calls] == [
        (0, 1, "a", "shell_command", {"command": "ls", "workdir": "/w"}),
        (1, 1, "b", "read_file", None),
        (2, 1, "c", "exec_command", None),
    ]
    assert [(r.pos, r.turn, r.call_id, r.text) for r in h.results] == [
        (3, 2, "a", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nx"),
        (4, 2, "b", "L1: a\nL2: b"),
        (5, 2, "c", None),
    ]
    assert h.turns == ["other", "calls", "results"]


def test_read_custom_local_shell_and_shell_calls() -> None:
    h = responses.read(
        body(
            {"type": "custom_tool_call", "call_id": "p", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "local_shell_call", "call_id": "l", "id": "lsh_1", "status": "completed",
             "action": {"type": "exec", "command": ["make"], "working_directory": "/w", "env": {}}},
            {"type": "shell_call", "call_id": "s", "action": {"commands": ["ls"], "timeout_ms": 1000}},
            {"type": "local_shell_call", "call_id": "x"},
            out("p", "Success.", "custom_tool_call_output"),
            {"type": "local_shell_call_output", "id": "l", "output": codex_json("built", 0)},
            {"type": "shell_call_output", "call_id": "s",
             "output": [{"stdout": "a\n", "stderr": "b\n", "outcome": {"type": "exit", "exit_code": 3}}]},
        )
    )  # fmt: skip
    assert [(c.id, c.name, c.arguments) for c in h.calls] == [
        ("p", "apply_patch", {"input": "*** Begin Patch"}),
        ("l", "local_shell", {"command": ["make"], "working_directory": "/w", "env": {}}),
        ("s", "shell_call", {"commands": ["ls"], "timeout_ms": 1000}),
        ("x", "local_shell", None),
    ]
    assert [(r.call_id, r.text, r.is_error, r.exit_code) for r in h.results] == [
        ("p", "Success.", None, None),
        ("l", codex_json("built", 0), None, None),  # local_shell_call_output: call_id falls back to id
        ("s", "a\nb\n", None, 3),
    ]


@pytest.mark.parametrize(
    ("output", "want"),
    [
        ([{"stdout": "x", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}], ("x", None, 0)),
        ([{"stdout": "part", "stderr": "", "outcome": {"type": "timeout"}}], ("part", True, None)),
        ([{"stdout": "x", "stderr": None, "outcome": {"type": "exit"}}], ("x", None, None)),
        ([{"stdout": "a", "outcome": {"type": "exit", "exit_code": 0}}] * 2, (None, None, None)),
        ("plain", (None, None, None)),
    ],
)
def test_read_shell_call_output(output: Any, want: tuple[Any, ...]) -> None:
    h = responses.read(
        body(
            {"type": "shell_call", "call_id": "s", "action": {"commands": ["ls"]}},
            out("s", output, "shell_call_output"),
        )
    )
    (r,) = h.results
    assert (r.text, r.is_error, r.exit_code) == want


def test_read_string_input_has_no_history() -> None:
    h = responses.read(body())
    assert (h.calls, h.results, h.turns) == ([], [], [])
    assert rw({"model": "m", "input": "hello, make a shell_call"}).status == "unchanged"


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"model": "m", "instructions": "x"}, "'input' is neither a string nor a list"),
        ({"input": {"type": "message"}}, "'input' is neither a string nor a list"),
        ({"input": [fc("a", "shell"), "text"]}, "input item 1 is not an object"),
        ({"input": [None]}, "input item 0 is not an object"),
    ],
)
def test_wrong_shapes_raise_dialect_error(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(DialectError, match=match):
        responses.read(doc)
    r = rw(doc | {"note": "function_call"})
    assert (r.status, r.dialect, r.reason) == ("skipped", "responses", match)


# ---- turn grouping and delta_start ------------------------------------------------------------


def test_one_model_response_is_one_turn_with_reasoning_and_text_between_its_calls() -> None:
    h = responses.read(
        body(
            msg("user", "go"),
            reasoning(1),
            shell("a", "ls"),
            reasoning(2),
            msg("assistant", "And the date:"),
            shell("b", "date"),
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            out("a", codex_json("x", 0)),
            out("b", codex_json("Mon", 0)),
        )
    )
    assert h.turns == ["other", "calls", "results"]
    assert [c.turn for c in h.calls] == [1, 1]
    plan = build(h)
    assert (len(plan.steps), plan.delta_start) == (2, 0)


def test_each_response_after_outputs_is_a_new_turn() -> None:
    doc = body(
        msg("user", "go"),
        reasoning(1),
        shell("a", "ls"),
        out("a", codex_json("x", 0)),
        reasoning(2),
        shell("b", "false"),
        out("b", codex_json("", 1)),
    )
    h = responses.read(doc)
    assert h.turns == ["other", "calls", "results", "calls", "results"]
    a = after(doc)
    assert (commands(a), a[DELTA]) == ([("bash -lc ls", 0), ("bash -lc false", 1)], 1)
    h.client = "codex"  # rewrite() identified it by its user agent
    assert [step_json(s) for s in build_pending(h)] == a[STEPS][1:]


def test_a_user_message_after_the_outputs_empties_the_delta() -> None:
    doc = body(msg("user", "go"), shell("a", "ls"), out("a", codex_json("x", 0)), msg("user", "thanks"))
    assert after(doc)[DELTA] == 1
    assert build_pending(responses.read(doc)) == []


def test_a_late_output_of_an_earlier_call_ends_the_pending_round() -> None:
    doc = body(
        shell("a", "ls"),
        shell("b", "pwd"),
        out("b", codex_json("/w", 0)),
        reasoning(1),  # a new response (without it, "c" would go on the response of "a" and "b")
        shell("c", "id"),
        out("c", "uid"),
        out("a", "x"),
    )
    h = responses.read(doc)
    assert build(h).delta_start == len(build(h).steps)
    assert build_pending(h) == []


def test_input_items_are_their_own_turns() -> None:
    h = responses.read(body(msg("user", "a"), msg("developer", "b"), {"type": "item_reference", "id": "msg_1"}))
    assert h.turns == ["other", "other", "other"]


# ---- write and rewrite -------------------------------------------------------------------------


def test_items_the_bridge_does_not_own_stay_in_order_untouched() -> None:
    items = [
        msg("developer", "<permissions instructions>"),
        msg("user", "go"),
        reasoning(1),  # followed by a call that stays: it stays (test_a_reasoning_item_keeps_the_item_...)
        {"type": "custom_tool_call", "call_id": "p", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
        shell("a", "ls"),
        fc("u", "update_plan", plan=[{"step": "x", "status": "completed"}]),
        out("a", codex_json("x", 0)),
        out("p", "Success. Updated the following files:\nM a.go\n", "custom_tool_call_output"),
        out("u", "Plan updated"),
        {"type": "item_reference", "id": "msg_9"},
        msg("assistant", "Done."),
    ]
    doc = body(*items)
    a = after(doc)
    assert commands(a) == [("bash -lc ls", 0)]
    assert a["input"] == [it for it in items if it.get("call_id") != "a"]
    kept = responses.write(doc, build(responses.read(doc)).stepped)
    assert all(any(k is it for it in items) for k in kept), "kept items are the client's own objects"


def test_codex_output_formats() -> None:
    doc = body(
        shell("a", "go test ./...", timeout_ms=120000),
        fc("b", "shell_command", command="./check.sh", workdir="/w"),
        fc("c", "exec_command", cmd="go vet ./...", workdir="/w", yield_time_ms=10000),
        fc("d", "exec_command", cmd="go run ./cmd/serve", yield_time_ms=1000),
        shell("e", "go test -race ./...", sandbox_permissions="require_escalated", justification="cache"),
        shell("f", "fuzz"),
        {"type": "local_shell_call", "call_id": "g", "status": "completed",
         "action": {"type": "exec", "command": ["make", "all"], "working_directory": "/w", "env": {}, "timeout_ms": 1}},
        out("a", codex_json("FAIL\tpkg\t0.1s\n", 1)),
        out("b", "Exit code: 0\nWall time: 1.4 seconds\nOutput:\n[check] lint: exit code 3 (skipped)\n"),
        out("c", "Chunk ID: 1a2b3c\nWall time: 0.8000 seconds\nProcess exited with code 2\nOutput:\nvet: x\n"),
        out("d", "Chunk ID: 4d5e6f\nWall time: 1.0000 seconds\nProcess running with session ID 41577\nOutput:\nup\n"),
        out("e", "exec command rejected by user"),
        out("f", "execution error: Sandbox(Signal(9))"),
        out("g", codex_json("built\n", 0)),
    )  # fmt: skip
    a = after(doc)
    assert commands(a) == [
        ("bash -lc 'go test ./...'", 1),
        ("./check.sh", 0),  # the client's header wins over the script's own words
        ("go vet ./...", 2),
        ("bash -lc fuzz", 1),  # a failure without a number
        ("make all", 0),
    ]
    assert a[STEPS][0]["runCommand"]["combinedOutput"] == {"full": "FAIL\tpkg\t0.1s\n"}, "the JSON frame is gone"
    assert a[STEPS][0]["runCommand"]["cwd"] == "/w"
    assert [it["call_id"] for it in a["input"]] == ["d", "e", "d", "e"]


def test_shell_call_output_outcome_is_the_exit_code() -> None:
    doc = body(
        {"type": "shell_call", "call_id": "s", "action": {"commands": ["pytest -q"], "timeout_ms": 60000}},
        {"type": "shell_call", "call_id": "t", "action": {"commands": ["sleep 99"]}},
        {"type": "shell_call", "call_id": "m", "action": {"commands": ["ls", "pwd"]}},
        out(
            "s",
            [{"stdout": "1 failed\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 1}}],
            "shell_call_output",
        ),
        out("t", [{"stdout": "", "stderr": "", "outcome": {"type": "timeout"}}], "shell_call_output"),
        out("m", [{"stdout": "a", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}] * 2, "shell_call_output"),
    )
    a = after(doc)
    assert commands(a) == [("pytest -q", 1), ("sleep 99", 1)]  # a timeout is a failure without a number
    assert [it["call_id"] for it in a["input"]] == ["m", "m"], "two commands cannot be one step"


def test_no_ids_orphans_and_duplicates_stay() -> None:
    doc = body(
        out("early", "x"),
        shell("early", "ls"),
        shell(None, "pwd"),  # type: ignore[arg-type]
        shell("dup", "one"),
        shell("dup", "two"),
        shell("ok", "id"),
        out("dup", codex_json("?", 0)),
        out(None, "no id"),
        out("orphan", "stray"),
        out("ok", codex_json("uid", 0)),
    )
    a = after(doc)
    assert commands(a) == [("bash -lc id", 0)]
    assert a["input"] == [it for it in doc["input"] if it.get("call_id") != "ok"]


def test_previous_response_id_makes_every_step_the_delta() -> None:
    items = [shell("a", "ls"), out("a", codex_json("x", 0)), msg("user", "and now?")]
    plain = rw(body(*items))
    resumed = rw(body(*items, previous_response_id="resp_123"))
    assert plain.plan is not None and plain.plan.delta_start == 1 and plain.notes == []
    assert orjson.loads(resumed.body or b"")[DELTA] == 0
    assert resumed.summary()["delta_start"] == 0
    assert resumed.notes == ["previous_response_id: input holds only new items, all steps are the delta"]


def test_previous_response_id_with_only_outputs_steps_nothing() -> None:
    r = rw(body(out("a", codex_json("x", 0)), previous_response_id="resp_123"))
    assert (r.status, r.body) == ("unchanged", None)
    assert r.notes and "previous_response_id" in r.notes[0]
    assert r.plan is not None and [p.code for p in r.plan.kept] == ["orphan"]


def test_rewrite_of_its_own_output_changes_nothing() -> None:
    doc = body(
        msg("user", "go"),
        shell("a", "ls"),
        out("a", codex_json("x", 0)),
        fc("k", "update_plan", plan=[]),
        out("k", "ok"),
    )
    first = rw(doc)
    assert first.body is not None
    second = rw(first.body)
    assert second.status in ("skipped", "unchanged") and second.body is None
    rest = orjson.loads(first.body)["input"]
    assert build(responses.read(body(*rest))).steps == []


def test_dialect_by_body_shape() -> None:
    doc = body(shell("a", "ls"), out("a", codex_json("x", 0)))
    r = rewrite(orjson.dumps(doc), path="/api/generate")
    assert (r.status, r.dialect) == ("rewritten", "responses")


def test_codex_placeholder_for_a_missing_output_is_not_an_observation() -> None:
    doc = body(shell("a", "go test ./..."), out("a", "aborted"), msg("user", "stop, run only the money tests"))
    r = rw(doc)
    assert r.status == "unchanged" and r.plan is not None
    assert [p.code for p in r.plan.kept if p.item == "call"] == ["unobserved"]


# ---- the rewritten request stays valid for the Responses API (issue 10, item 6) -----------------


def cmdlines(doc: dict[str, Any]) -> list[str]:
    return [s["runCommand"]["commandLine"] for s in doc[STEPS]]


def test_a_reasoning_item_goes_with_the_calls_it_led_to() -> None:
    doc = body(
        msg("user", "go"),
        reasoning(1),
        shell("a", "ls"),
        shell("b", "pwd"),
        out("a", "x"),
        out("b", "/w"),
        reasoning(2),
        msg("assistant", "Done."),
        msg("user", "thanks"),
    )
    a = after(doc)
    assert cmdlines(a) == ["bash -lc ls", "bash -lc pwd"]
    # The second reasoning item led to a message that stays: it stays with it.
    assert a["input"] == [msg("user", "go"), reasoning(2), msg("assistant", "Done."), msg("user", "thanks")]


def test_a_reasoning_item_keeps_the_item_it_was_followed_by() -> None:
    plan = fc("k", "update_plan", plan=[])
    rs = reasoning(1) | {"id": "rs_1"}
    doc = body(msg("user", "go"), rs, shell("a", "ls"), plan, shell("b", "pwd"),
               out("a", "x"), out("k", "ok"), out("b", "/w"))  # fmt: skip
    a = after(doc)
    # update_plan stays a message, so the reasoning stays, followed by its call "a" as before.
    assert cmdlines(a) == ["bash -lc pwd"]
    assert a["input"] == [msg("user", "go"), rs, shell("a", "ls"), plan, out("a", "x"), out("k", "ok")]
    r = rw(doc)
    assert r.plan is not None and {p.id: p.code for p in r.plan.kept}["a"] == "validity"
    # Without ids (Codex sends none, store false) only its place ties it: it stays, followed by a call
    # of its own response, and "a" can go.
    no_id = body(*[rs if it is rs else it for it in doc["input"]])
    no_id["input"][1] = reasoning(1)
    a = after(no_id)
    assert cmdlines(a) == ["bash -lc ls", "bash -lc pwd"]
    assert a["input"] == [msg("user", "go"), reasoning(1), plan, out("k", "ok")]
    # When the call it was followed by stays anyway, the later ones can go.
    doc = body(msg("user", "go"), reasoning(1), plan, shell("a", "ls"), out("k", "ok"), out("a", "x"))
    a = after(doc)
    assert a["input"] == [msg("user", "go"), reasoning(1), plan, out("k", "ok")]


def test_reasoning_before_a_message_or_hosted_call_is_not_ours_to_move() -> None:
    ws = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    doc = body(msg("user", "go"), reasoning(1), ws, shell("a", "ls"), out("a", "x"), msg("user", "ok"))
    assert after(doc)["input"] == [msg("user", "go"), reasoning(1), ws, msg("user", "ok")]


def test_calls_and_outputs_that_interleave_in_one_response_are_one_round() -> None:
    doc = body(
        msg("user", "go"),
        reasoning(1),
        shell("a", "ls"),
        out("a", "x"),
        shell("b", "pwd"),
        out("b", "/w"),
    )
    h = responses.read(doc)
    assert h.turns == ["other", "calls", "results", "more", "results"]
    a = after(doc)
    assert (cmdlines(a), a[DELTA]) == (["bash -lc ls", "bash -lc pwd"], 0)
    assert [step_json(s) for s in build_pending(h)] == a[STEPS]
    # An earlier round stays out of the delta; a user message after it ends the round.
    earlier = body(msg("user", "go"), shell("z", "id"), out("z", "uid"), msg("user", "more"), *doc["input"][1:])
    a = after(earlier)
    assert (cmdlines(a), a[DELTA]) == (["bash -lc id", "bash -lc ls", "bash -lc pwd"], 1)
    # Without a reasoning item the same shape is one round too (told apart only by reasoning).
    bare = body(msg("user", "go"), shell("a", "ls"), out("a", "x"), shell("b", "pwd"), out("b", "/w"))
    assert after(bare)[DELTA] == 0
