"""The builder: id correlation (rule 1), no step without observation (rule 2), accounting (rule 6), delta (rule 7)."""

from __future__ import annotations

from typing import Any

import pytest
from chatkit import assistant, bash, build_pending, call, history, plan, tool, user
from native_bridge.core.builder import Plan, build
from native_bridge.core.encoder import UnobservedCallError, encode_step, step_json
from native_bridge.core.history import History, ToolCall, ToolResult
from native_bridge.core.kinds import KINDS


def commands(p: Plan) -> list[str]:
    return [s.run_command.command_line for s in p.steps]


def placement(p: Plan, item: str, id: str | None, nth: int = 0):
    found = [x for x in p.accounting if x.item == item and x.id == id]
    return found[nth]


def codes(p: Plan) -> list[tuple[str, str | None, str | None]]:
    return [(x.item, x.id, x.code) for x in p.accounting]


def assert_accounting_complete(h: History, p: Plan) -> None:
    """Exactly one placement per call and per result, and each step claimed by one call and one result."""
    positions = sorted([c.pos for c in h.calls] + [r.pos for r in h.results])
    assert sorted(x.pos for x in p.accounting) == positions
    assert [x.pos for x in p.accounting] == positions  # history order
    for x in p.accounting:
        assert (x.step is None) != (x.code is None), x
    for i in range(len(p.steps)):
        owners = sorted(x.item for x in p.accounting if x.step == i)
        assert owners == ["call", "result"]
    assert p.stepped == frozenset(x.pos for x in p.accounting if x.step is not None)
    assert len(p.step_calls) == len(p.steps)


# ---- correlation by id, never by position (rule 1) ------------------------------


def test_parallel_results_in_reverse_order_pair_by_id() -> None:
    p = plan(
        user("check"),
        assistant(bash("a", "true"), bash("b", "false")),
        tool("b", "Exit code: 1\nOutput:\n"),
        tool("a", "Exit code: 0\nOutput:\n"),
        client="codex",
    )
    assert commands(p) == ["true", "false"]
    assert [s.run_command.exit_code for s in p.steps] == [0, 1]
    assert [s.run_command.combined_output.full for s in p.steps] == [
        "Exit code: 0\nOutput:\n",
        "Exit code: 1\nOutput:\n",
    ]
    assert placement(p, "result", "b").step == 1
    assert placement(p, "result", "a").step == 0


def test_result_next_to_a_call_belongs_to_the_call_its_id_names() -> None:
    # Position says "B-output" answers call a; the id says it answers call b (which comes later).
    p = plan(
        assistant(bash("a", "echo A")),
        tool("b", "B-output"),
        assistant(bash("b", "echo B")),
        tool("a", "A-output"),
    )
    assert commands(p) == ["echo A"]
    assert p.steps[0].run_command.combined_output.full == "A-output"
    assert placement(p, "call", "b").code == "ambiguous"
    assert placement(p, "result", "b").code == "ambiguous"


def test_results_for_calls_of_an_earlier_turn() -> None:
    p = plan(
        assistant(bash("a", "echo A")),
        assistant(bash("b", "echo B")),
        tool("b", "B"),
        tool("a", "A"),
    )
    assert commands(p) == ["echo A", "echo B"]
    assert [s.run_command.combined_output.full for s in p.steps] == ["A", "B"]


def test_duplicate_call_ids_are_ambiguous() -> None:
    h = history(assistant(bash("x", "rm -rf build")), assistant(bash("x", "ls")), tool("x", "done"))
    p = build(h)
    assert p.steps == []
    assert codes(p) == [("call", "x", "ambiguous"), ("call", "x", "ambiguous"), ("result", "x", "ambiguous")]
    assert_accounting_complete(h, p)


def test_duplicate_result_ids_are_ambiguous() -> None:
    h = history(assistant(bash("x", "ls")), tool("x", "Exit code: 0"), tool("x", "Exit code: 2"))
    p = build(h)
    assert p.steps == []
    assert codes(p) == [("call", "x", "ambiguous"), ("result", "x", "ambiguous"), ("result", "x", "ambiguous")]


def test_duplicates_do_not_spoil_other_pairs() -> None:
    p = plan(
        assistant(bash("x", "a"), bash("x", "b"), bash("y", "c")),
        tool("x", "1"),
        tool("y", "2"),
    )
    assert commands(p) == ["c"]
    assert placement(p, "result", "y").step == 0


def test_result_before_call_is_ambiguous() -> None:
    h = history(user(), tool("x", "Exit code: 0"), assistant(bash("x", "make")))
    p = build(h)
    assert p.steps == []
    assert codes(p) == [("result", "x", "ambiguous"), ("call", "x", "ambiguous")]
    assert "before" in (placement(p, "call", "x").reason or "")


def test_orphan_result_is_kept() -> None:
    h = history(assistant(bash("a", "ls")), tool("a", "x"), tool("ghost", "where from?"))
    p = build(h)
    assert len(p.steps) == 1
    ghost = placement(p, "result", "ghost")
    assert ghost.code == "orphan"
    assert ghost.step is None
    assert ghost.name is None
    assert_accounting_complete(h, p)


def test_call_without_result_is_unobserved_never_a_step() -> None:
    h = history(user(), assistant(bash("a", "rm -rf /tmp/x")), user("never mind"))
    p = build(h)
    assert p.steps == []
    assert codes(p) == [("call", "a", "unobserved")]
    assert p.kept[0].name == "Bash"
    assert_accounting_complete(h, p)


def test_unmapped_tool_is_kept_with_its_result() -> None:
    todo = call("t", "TodoWrite", {"todos": [{"content": "x", "status": "pending"}]})
    h = history(assistant(todo, bash("b", "ls")), tool("t", "Todos updated"), tool("b", "a.py"))
    p = build(h)
    assert commands(p) == ["ls"]
    assert placement(p, "call", "t").code == "unmapped"
    assert placement(p, "result", "t").code == "unmapped"
    assert placement(p, "result", "t").name == "TodoWrite"
    assert_accounting_complete(h, p)


def test_kinds_filter_keeps_pairs_of_unselected_kinds() -> None:
    read = call("r", "Read", {"file_path": "/repo/a.py"})
    h = history(
        assistant(read, bash("b", "ls")), tool("r", "     1\tprint(1)"), tool("b", "a.py"), client="claude-code"
    )
    p = build(h, kinds={"view_file"})
    assert [s.WhichOneof("step") for s in p.steps] == ["view_file"]
    assert placement(p, "call", "b").code == "kind_off"
    assert placement(p, "result", "b").code == "kind_off"
    assert build(h, kinds=set()).steps == []


def test_custom_tool_kinds_table() -> None:
    h = history(assistant(call("c", "run", {"command": "ls"})), tool("c", "a"))
    assert build(h).steps == []
    assert commands(build(h, tool_kinds={"run": "run_command"})) == ["ls"]


def test_calls_and_results_without_id() -> None:
    h = history(assistant(call(None, "Bash", {"command": "ls"})), tool(None, "a.py"))
    p = build(h)
    assert p.steps == []
    assert codes(p) == [("call", None, "no_id"), ("result", None, "no_id")]


def test_untranslatable_pair_is_kept_with_reason() -> None:
    h = history(assistant(call("r", "Read", {"file_path": "rel/a.py"})), tool("r", "x"))
    p = build(h)
    assert p.steps == []
    assert codes(p) == [("call", "r", "untranslatable"), ("result", "r", "untranslatable")]
    assert "absolute" in (p.kept[0].reason or "")


def test_failed_read_is_kept() -> None:
    h = history(
        assistant(call("r", "Read", {"file_path": "/repo/nope.py"})),
        tool("r", "<tool_use_error>File does not exist.</tool_use_error>"),
    )
    p = build(h)
    assert p.steps == []
    assert placement(p, "call", "r").code == "untranslatable"


def test_every_step_is_done_and_typed() -> None:
    p = plan(
        assistant(bash("a", "ls"), call("r", "Read", {"file_path": "/a"})),
        tool("a", "x"),
        tool("r", "     1\ty"),
        client="claude-code",
    )
    assert len(p.steps) == 2
    for s in p.steps:
        doc = step_json(s)
        assert doc["status"] == "CORTEX_STEP_STATUS_DONE"
        assert doc["type"] == f"CORTEX_STEP_TYPE_{s.WhichOneof('step').upper()}"


def test_accounting_one_placement_per_item_in_a_mixed_history() -> None:
    h = history(
        user(),
        tool("early", "before its call"),
        assistant(bash("a", "ls"), bash("dup", "x"), call("t", "TodoWrite", {"todos": []}), bash("u", "pwd")),
        tool("a", "ok"),
        tool("dup", "1"),
        tool("t", "done"),
        assistant(bash("dup", "y"), bash("early", "z"), call(None, "Bash", {"command": "q"})),
        tool("orphan", "?"),
        tool(None, "no id"),
        tool("dup", "2"),
    )
    p = build(h)
    assert_accounting_complete(h, p)
    assert commands(p) == ["ls"]
    assert [x.to_json() for x in p.accounting if x.step is not None] == [
        {"item": "call", "id": "a", "name": "Bash", "turn": 2, "step": 0},
        {"item": "result", "id": "a", "name": "Bash", "turn": 3, "step": 0},
    ]
    kept = {(x.item, x.id, x.code) for x in p.kept}
    assert kept == {
        ("result", "early", "ambiguous"),
        ("call", "dup", "ambiguous"),
        ("call", "t", "unmapped"),
        ("call", "u", "unobserved"),
        ("result", "dup", "ambiguous"),
        ("result", "t", "unmapped"),
        ("call", "early", "ambiguous"),
        ("call", None, "no_id"),
        ("result", "orphan", "orphan"),
        ("result", None, "no_id"),
    }
    assert len(p.kept) == len(h.calls) + len(h.results) - 2


# ---- encoder: no step without an observation (rule 2) ------------------------------


def test_encode_step_refuses_without_observation() -> None:
    kind = KINDS["run_command"]
    with pytest.raises(UnobservedCallError):
        encode_step(kind, {"command_line": "ls", "blocking": True}, None)
    assert issubclass(UnobservedCallError, ValueError)


def test_encode_step_with_empty_observation_is_allowed() -> None:
    # propose_code states its outcome by existing; an empty observation is still an observation.
    kind = KINDS["propose_code"]
    s = encode_step(kind, {"action_spec": {"command": {"is_edit": True}}}, {})
    assert step_json(s)["status"] == "CORTEX_STEP_STATUS_DONE"


# ---- delta_start (rule 7) -----------------------------------------------------------


def earlier_round() -> list[dict[str, Any]]:
    return [user("start"), assistant(bash("a1", "ls")), tool("a1", "x"), assistant(content="ok")]


DELTA_CASES: dict[str, tuple[list[dict[str, Any]], int, int]] = {
    # name: (messages, number of steps, expected delta_start)
    "pending round after an earlier one": (
        [
            *earlier_round(),
            user("more"),
            assistant(bash("b1", "pwd"), bash("b2", "id")),
            tool("b2", "u"),
            tool("b1", "/"),
        ],
        3,
        1,
    ),
    "pending round only": ([user(), assistant(bash("b1", "pwd")), tool("b1", "/")], 1, 0),
    "user tail": ([*earlier_round(), user("thanks")], 1, 1),
    "user tail after a round": ([user(), assistant(bash("b1", "pwd")), tool("b1", "/"), user("next")], 1, 1),
    "assistant text tail": ([user(), assistant(bash("b1", "pwd")), tool("b1", "/"), assistant(content="done")], 1, 1),
    "pending round without results yet": ([*earlier_round(), assistant(bash("b1", "pwd"))], 1, 1),
    "pending round partly answered": (
        [*earlier_round(), assistant(bash("b1", "pwd"), bash("b2", "id")), tool("b1", "/")],
        2,
        1,
    ),
    "pending round unmapped only": (
        [*earlier_round(), assistant(call("t", "TodoWrite", {"todos": []})), tool("t", "ok")],
        1,
        1,
    ),
    "late result for an earlier call after the last round": (
        [user(), assistant(bash("a1", "ls")), assistant(bash("b1", "pwd")), tool("b1", "/"), tool("a1", "x")],
        2,
        2,
    ),
    "orphan after the last round": (
        [user(), assistant(bash("b1", "pwd")), tool("b1", "/"), tool("zz", "?")],
        1,
        1,
    ),
    "no tool history": ([user(), assistant(content="hi")], 0, 0),
}


@pytest.mark.parametrize("name", list(DELTA_CASES))
def test_delta_start(name: str) -> None:
    messages, n_steps, delta = DELTA_CASES[name]
    h = history(*messages)
    p = build(h)
    assert len(p.steps) == n_steps
    assert p.delta_start == delta


@pytest.mark.parametrize("name", list(DELTA_CASES))
def test_reuse_build_equals_delta_slice(name: str) -> None:
    messages, _, _ = DELTA_CASES[name]
    h = history(*messages)
    p = build(h)
    pending = build_pending(h)
    assert [s.SerializeToString(deterministic=True) for s in pending] == [
        s.SerializeToString(deterministic=True) for s in p.steps[p.delta_start :]
    ]


def test_user_tail_is_an_empty_delta() -> None:
    h = history(user(), assistant(bash("a", "ls")), tool("a", "x"), user("and now?"))
    p = build(h)
    assert len(p.steps) == 1
    assert p.delta_start == len(p.steps)
    assert build_pending(h) == []


def test_delta_covers_the_whole_pending_round() -> None:
    h = history(
        user(),
        assistant(bash("a", "one")),
        tool("a", "1"),
        assistant(bash("b", "two"), bash("c", "three")),
        tool("c", "3"),
        tool("b", "2"),
    )
    p = build(h)
    assert commands(p)[p.delta_start :] == ["two", "three"]
    assert [s.run_command.command_line for s in build_pending(h)] == ["two", "three"]


def test_builder_on_handmade_history() -> None:
    # The builder is dialect-free: positions and turns are all it needs.
    h = History(
        calls=[ToolCall(0, 0, "k", "Bash", {"command": "ls"})],
        results=[ToolResult(1, 1, "k", "Exit code 2\nls: nope", is_error=True)],
        turns=["calls", "results"],
        client="claude-code",
    )
    p = build(h)
    assert p.steps[0].run_command.exit_code == 2
    assert p.delta_start == 0
