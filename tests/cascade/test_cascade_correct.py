"""Corrections of the gateway's steps, one rule at a time, and nothing else."""

from __future__ import annotations

import pytest
from cascadekit import chat_evidence, envelope_payload, fixture, gateway_run, raw_step, step
from hypothesis import given, settings
from hypothesis import strategies as st
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.corrections import Corrected, correct
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.steps import DONE, OFFICIAL_TYPE, run_command, view
from native_bridge.cascade.wire import len_field, varint_field
from native_bridge.evidence import Observation

GENERATING = 8


def exit_of(s: bytes) -> int | None:
    return run_command(view(s).body).exit_code


def one(s: bytes, evidence=None):
    fixed = correct([s], evidence)
    return (fixed.steps[0] if fixed.steps else None), fixed.changes


# ---- (a) never observed -----------------------------------------------------------------

UNOBSERVED = {
    "run_command": step("run_command", command_line="npm run dev", blocking=True),
    "view_file": step("view_file", absolute_path_uri="file:///a"),
    "grep_search_v2": step("grep_search_v2", pattern="TODO"),
    "find": step("find", pattern="*.py"),
    "list_directory": step("list_directory", directory_path_uri="file:///d"),
    "search_web": step("search_web", query="q"),
    "read_url_content": step("read_url_content", url="https://x"),
}


@pytest.mark.parametrize("kind", list(UNOBSERVED))
def test_done_step_without_its_result_is_dropped(kind: str) -> None:
    out, changes = one(UNOBSERVED[kind])
    assert out is None
    assert [(c.index, c.action) for c in changes] == [(0, "dropped")]
    assert "never observed" in changes[0].reason and changes[0].after is None


def test_the_gateway_unobserved_run_command_is_dropped() -> None:
    out, changes = one(gateway_run("npm run dev", None))
    assert out is None and "never observed" in changes[0].reason


def test_an_exit_code_alone_is_no_observation() -> None:
    s = raw_step("run_command", len_field(23, b"x") + varint_field(6, 0))
    assert one(s)[0] is None


NOT_OVER = [1, 2, 8, 9]  # PENDING, RUNNING, GENERATING, WAITING (official CortexStepStatus)


def _with_status(s: bytes, status: int) -> bytes:
    msg = pb.CortexTrajectoryStep.FromString(s)
    msg.status = status  # type: ignore[assignment]
    return msg.SerializeToString()


@pytest.mark.parametrize("status", NOT_OVER)
@pytest.mark.parametrize("kind", list(UNOBSERVED))
def test_a_step_not_over_without_its_result_is_kept(kind: str, status: int) -> None:
    """Never observed needs the claim of completion: a step not over yet claims no result."""
    s = _with_status(UNOBSERVED[kind], status)
    assert correct([s]) == Corrected([s], [])


# ---- every status (issue 19): the outcome a step carries is judged whatever its status ----


@pytest.mark.parametrize("status", [*NOT_OVER, 7, 3])  # ..., ERROR, DONE
def test_a_result_in_a_step_of_any_status_gets_the_true_exit_code_and_one_copy(status: int) -> None:
    s = _with_status(gateway_run("ls /nope", "Exit code: 2\nOutput:\nls: cannot access /nope", 1), status)
    out, changes = one(s)
    rc = run_command(view(out).body)
    assert (rc.exit_code, rc.stdout) == (2, None)  # not the made-up 1; one copy
    assert view(out).status == status  # the step's state in the trajectory is left as sent
    assert [c.action for c in changes] == ["exit_code", "stdout_deduplicated", "type"]


@pytest.mark.parametrize("status", NOT_OVER)
def test_a_made_up_exit_code_in_a_running_step_is_removed(status: int) -> None:
    # No frame, no flag, no observation: nothing states the code the gateway wrote.
    out, changes = one(_with_status(gateway_run("make", "building...\ndone", 1), status))
    assert run_command(view(out).body).exit_code is None
    assert changes[0].action == "exit_code" and changes[0].reason.startswith("exit_code 1 -> absent")


def test_a_running_step_whose_command_still_runs_is_kept_without_an_exit_code() -> None:
    text = "Process running with session ID 5\nOutput:\n[vite] ready"
    out, changes = one(_with_status(gateway_run("npm run dev", text, 0), 2))
    assert out is not None and run_command(view(out).body).exit_code is None
    assert "was still running" in changes[0].reason and "RUNNING" in changes[0].reason
    # DONE claims an end that never came: the step goes.
    out, changes = one(gateway_run("npm run dev", text, 0))
    assert out is None and changes[0].action == "dropped"


def test_a_failed_read_in_a_running_step_is_dropped() -> None:
    s = step("view_file", status=2, absolute_path_uri="file:///a", content="File does not exist.")
    out, changes = one(s)
    assert out is None and changes[0].action == "dropped"


def command_status(step_status: int = 2, **fields: object) -> bytes:
    """A step with a command_status body (its own ``status`` is a field of the body)."""
    body = pb.CortexStepCommandStatus(**fields)  # type: ignore[arg-type]
    msg = pb.CortexTrajectoryStep(type=28, status=step_status, command_status=body)  # type: ignore[arg-type]
    return msg.SerializeToString()


def test_a_command_status_body_gets_the_true_exit_code_and_one_copy() -> None:
    # Another gateway: the output in stdout, combined and delta, an exit code made up from a flag.
    text = "Exit code: 2\nWall time: 0.2 seconds\nOutput:\nls: cannot access '/nope'"
    s = command_status(command_id="c1", status=3, stdout=text, combined=text, delta=text, exit_code=1)
    out, changes = one(s)
    body = pb.CortexTrajectoryStep.FromString(out).command_status
    assert (body.exit_code, body.stdout, body.combined, body.delta) == (2, "", text, text)
    assert body.status == 3 and view(out).status == 2  # both statuses as sent
    assert [c.action for c in changes] == ["exit_code", "stdout_deduplicated"]


def test_a_command_status_takes_the_chat_hops_observation_through_its_run_command() -> None:
    text = "FAIL src/a.test.ts"
    run = raw_step("run_command", len_field(23, b"npm test") + len_field(13, b"c7") + len_field(21, len_field(1, b"x")))
    status = command_status(command_id="c7", combined=text, exit_code=0)
    seen = Recorder(Observation(exit_code=1, failed=True, client="cline"))
    fixed = correct([run, status], seen)
    assert ("run_command", "npm test", text) in seen.calls
    assert pb.CortexTrajectoryStep.FromString(fixed.steps[1]).command_status.exit_code == 1
    # Without a run_command naming c7 there is nothing to match: the text alone decides (absent).
    alone = correct([status], Recorder(Observation(exit_code=1)))
    assert not pb.CortexTrajectoryStep.FromString(alone.steps[0]).command_status.HasField("exit_code")


def test_a_command_status_without_output_is_kept() -> None:
    s = command_status(command_id="c1", status=2)
    assert correct([s]) == Corrected([s], [])


@pytest.mark.parametrize(
    "s",
    [
        step("write_to_file", target_file_uri="file:///a", code_content=["x"]),
        step("propose_code", action_spec={"command": {"file": {"absolute_uri": "file:///a"}}}),
        raw_step("grep_search", b""),
    ],
    ids=["write_to_file", "propose_code", "grep_search"],
)
def test_kinds_without_a_result_field_are_kept(s: bytes) -> None:
    assert correct([s]).steps == [s]


@pytest.mark.parametrize(
    "s",
    [
        step("view_file", absolute_path_uri="file:///a", content="x"),
        raw_step("view_file", len_field(1, b"file:///empty") + len_field(4, b"")),  # an empty file, observed
        step("grep_search_v2", pattern="p", raw_output="a:1: p"),
        step("find", pattern="*", raw_output="a.py"),
        step("list_directory", directory_path_uri="file:///d", children=["a", "b/"]),
        step("search_web", query="q", summary="s"),
        step("read_url_content", url="https://x", web_document={"text": "s"}),
    ],
)
def test_observed_non_shell_steps_are_kept_byte_identical(s: bytes) -> None:
    fixed = correct([s])
    assert fixed.steps == [s] and fixed.steps[0] is s and fixed.changes == []


# ---- (b) exit code ----------------------------------------------------------------------
#
# The planner hop cannot tell the client (the gateway dropped it), so on its own it reads the
# text as every known client would (truth rule 3, issue 17): a frame counts at its place, and
# where two clients read it differently there is no claim. A client named by the chat hop's
# observation, or by the caller's setting, reads its own frames first.


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("Exit code: 2\nOutput:\nls: cannot access /nope", 2),  # the reference fix's probe
        ("Exit code: 2\nWall time: 0.2 seconds\nOutput:\nls: cannot access '/nope'", 2),  # Codex
        ("Exit code 1\nFAIL src/cart.test.js", 1),  # Claude Code's frame (the generic family too)
        ("[tool error] boom", 1),  # an error flag with no number
        ("FAILED x\n[Command finished with exit code 3]", 3),  # OpenHands
        ("Command executed successfully.", 0),  # Zed states success
        ('{"output": "boom", "metadata": {"exit_code": 101}}', 101),  # Codex structured
    ],
)
def test_without_a_client_every_known_frame_states_the_code(output: str, code: int) -> None:
    out, changes = one(gateway_run("cmd", output))
    assert exit_of(out) == code
    if code != 0:
        assert changes[0].action == "exit_code" and changes[0].reason.startswith(f"exit_code 0 -> {code}")


@pytest.mark.parametrize(
    "output",
    [
        "hello world",
        "",
        "build ok\nthe test said: Exit code 1 expected\ndone",  # words inside the output
        "Exit code 3\nall good\n[Command finished with exit code 0]",  # two clients' readings differ
    ],
)
def test_without_a_client_no_frame_leaves_the_code_absent(output: str) -> None:
    out, changes = one(gateway_run("cmd", output))
    assert exit_of(out) is None  # absent, not 0
    assert not pb.CortexTrajectoryStep.FromString(out).run_command.HasField("exit_code")
    assert changes[0].action == "exit_code" and changes[0].reason.startswith("exit_code 0 -> absent")


@pytest.mark.parametrize(
    ("output", "client", "code"),
    [
        ("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nls: cannot access", "codex", 2),
        ("Exit code: -1\nWall time: 0.1 seconds\nOutput:\nkilled", "codex", -1),  # a 10-byte varint
        ("FAILED x\n[Command finished with exit code 3]", "openhands", 3),
        ('Command "cargo test" failed with exit code 101.\n\nerror', "zed", 101),
        ("Command executed successfully.", "zed", 0),  # the client states success
        ("build ok\nthe test said: Exit code 1 expected", "codex", None),  # words inside the output
        ("FAILED x\n[Command finished with exit code 3]", "codex", None),  # another client's frame
    ],
)
def test_exit_code_in_the_words_of_a_known_client(output: str, client: str, code: int | None) -> None:
    fixed = correct([gateway_run("cmd", output)], client=client)
    out = fixed.steps[0]
    assert exit_of(out) == code
    if code is not None:
        assert pb.CortexStepRunCommand(exit_code=code).SerializeToString() in out  # encoded as protobuf does
        if code:
            assert client in fixed.changes[0].reason


@pytest.mark.parametrize(
    ("output", "client"),
    [
        ("<tool_use_error>InputValidationError: command is required</tool_use_error>", None),  # never ran
        ("The user doesn't want to proceed with this tool use.", None),
        ("Command running in background with ID: b20hid1oz. Output is being written to: /tmp/x", "claude-code"),
    ],
)
def test_a_command_that_produced_no_outcome_is_dropped(output: str, client: str | None) -> None:
    fixed = correct([gateway_run("cmd", output)], client=client)
    assert fixed.steps == [] and fixed.changes[0].action == "dropped" and "no outcome" in fixed.changes[0].reason


def test_exit_code_read_from_stdout_without_combined_output() -> None:
    s = raw_step("run_command", len_field(23, b"x") + len_field(4, b"Exit code: 4\nOutput:\n") + varint_field(6, 0))
    fixed = correct([s], client="codex")
    assert exit_of(fixed.steps[0]) == 4 and [c.action for c in fixed.changes] == ["exit_code"]


# ---- (c) one copy of the output -------------------------------------------------------


def test_stdout_repeating_combined_output_is_dropped() -> None:
    out, changes = one(gateway_run("true", "ok\n"))
    rc = run_command(view(out).body)
    assert rc.stdout is None and rc.full == "ok\n"
    assert [c.action for c in changes] == ["exit_code", "stdout_deduplicated", "type"]  # 28 -> 21
    assert changes[0].after == changes[1].before  # each change from the state the last left
    assert changes[1].after == changes[2].before and changes[2].after == out


def test_empty_output_keeps_one_empty_copy() -> None:
    out, _ = one(gateway_run("true", ""))
    rc = run_command(view(out).body)
    assert (rc.stdout, rc.combined_output, rc.full, rc.exit_code) == (None, True, "", None)
    assert correct([out]).steps == [out]  # still observed on the next pass


def test_stdout_that_differs_is_kept() -> None:
    body = len_field(23, b"x") + len_field(4, b"only stdout") + len_field(21, len_field(1, b"only stdout\nand stderr"))
    s = raw_step("run_command", body)
    assert run_command(view(one(s)[0]).body).stdout == "only stdout"


# ---- (d) claims a kind cannot state -----------------------------------------------------


@pytest.mark.parametrize(
    "s",
    [
        step("view_file", absolute_path_uri="file:///nope", content="File does not exist."),  # Claude Code Read
        step("view_file", absolute_path_uri="file:///x", content="<tool_use_error>Not allowed</tool_use_error>"),
        step("view_file", absolute_path_uri="file:///x", content="failed to read file: /x: permission denied"),
        step("grep_search_v2", pattern="p", raw_output="Error executing search_files: bad regex"),
        step("find", pattern="*", raw_output="[tool error] no such directory"),
        step("read_url_content", url="https://x", web_document={"text": '{"error": "404"}'}),
    ],
)
def test_a_failure_stated_as_content_is_dropped(s: bytes) -> None:
    out, changes = one(s)
    assert out is None and "failure in the client's words" in changes[0].reason


# ---- evidence from the chat hop --------------------------------------------------------


class Recorder:
    def __init__(self, observed: Observation | None) -> None:
        self.observed = observed
        self.calls: list[tuple[str, str, str]] = []

    def lookup(self, kind: str, command_or_path: str, output: str) -> Observation | None:
        self.calls.append((kind, command_or_path, output))
        return self.observed


@pytest.mark.parametrize(
    ("output", "observed", "code"),
    [
        ("Exit code 1\nboom", Observation(exit_code=2, client="codex"), 2),  # evidence wins over text
        ("Exit code 1\nboom", Observation(failed=True, client="claude-code"), 1),  # is_error + Claude Code's line
        ("Exit code 1\nboom", Observation(failed=False, client="claude-code"), None),  # that line needs is_error
        ("boom", Observation(failed=True, client="claude-code"), 1),  # is_error without a number
        ("boom", Observation(failed=True), 1),  # an unknown client's error flag still counts
        ("Command executed successfully.", Observation(failed=True, client="zed"), None),  # conflict: no claim
        ("boom", Observation(exit_code=0, failed=True), None),  # conflict inside the evidence
        ("boom", Observation(exit_code=5, failed=False), None),
        ("boom", Observation(failed=False), None),  # "not an error" is not an exit status
        ("boom", Observation(), None),  # states nothing: the text decides
        ("Exit code: 7\nOutput:\nx", Observation(client="codex"), 7),  # the observation names the client
    ],
)
def test_run_command_evidence(output: str, observed: Observation, code: int | None) -> None:
    ev = Recorder(observed)
    out, changes = one(gateway_run("npm test", output), ev)
    assert ev.calls == [("run_command", "npm test", output)]
    assert exit_of(out) == code
    if observed.client:
        assert observed.client in changes[0].reason


def test_evidence_may_be_a_plain_callable() -> None:
    out, _ = one(gateway_run("npm test", "boom"), lambda kind, cmd, output: Observation(exit_code=9))
    assert exit_of(out) == 9


@pytest.mark.parametrize(
    ("s", "subject"),
    [
        (step("write_to_file", target_file_uri="file:///a", code_content=["x"]), "file:///a"),
        (step("propose_code", action_spec={"command": {"file": {"absolute_uri": "file:///b"}}}), "file:///b"),
        (step("view_file", absolute_path_uri="file:///c", content="looks fine"), "file:///c"),
    ],
)
def test_a_step_the_client_saw_fail_is_dropped(s: bytes, subject: str) -> None:
    ev = Recorder(Observation(failed=True, client="claude-code"))
    out, changes = one(s, ev)
    assert ev.calls[0][:2] == (view(s).kind, subject)
    assert out is None and "claude-code" in changes[0].reason
    ev.observed = Observation(failed=False)
    assert one(s, ev) == (s, [])


def test_conflicting_non_shell_signals_drop_the_claim() -> None:
    s = step("view_file", absolute_path_uri="file:///x", content="File does not exist.")
    out, changes = one(s, Recorder(Observation(failed=False)))
    assert out is None and "conflicting" in changes[0].reason


# ---- what must not change ---------------------------------------------------------------


def test_unknown_fields_in_the_step_and_in_run_command_survive() -> None:
    unknown_body = varint_field(77, 5) + len_field(78, b"future")
    unknown_top = len_field(999, b"future step field") + varint_field(1000, 1)
    out_inner = len_field(1, b"Exit code 1\nx") + len_field(9, b"unknown inside combined_output")
    body = (
        len_field(23, b"npm test")
        + unknown_body
        + varint_field(11, 1)
        + len_field(4, b"Exit code 1\nx")
        + varint_field(6, 0)
        + len_field(21, out_inner)
    )
    s = raw_step("run_command", body, extra=unknown_top)
    out, _ = one(s, lambda kind, cmd, output: Observation(exit_code=1))
    expected_body = (
        len_field(23, b"npm test") + unknown_body + varint_field(11, 1) + varint_field(6, 1) + len_field(21, out_inner)
    )
    assert out == raw_step("run_command", expected_body, extra=unknown_top)


def test_the_type_number_is_never_changed() -> None:
    out_ = len_field(4, b"x") + len_field(21, len_field(1, b"x"))
    s = raw_step("run_command", len_field(23, b"x") + out_, type_=21)  # the official schema's RUN_COMMAND
    out, _ = one(s, lambda kind, cmd, output: Observation(exit_code=2))
    assert view(out).type == 21 and exit_of(out) == 2


def test_fixture_turn_1_with_the_chat_hop() -> None:
    steps = parse_request(envelope_payload(fixture("grpc-turn1.bin"))).steps
    evidence = chat_evidence("chat-turn1.json")
    fixed = correct(steps, evidence)
    assert len(fixed.steps) == 3
    npm_test, view_file, grep = fixed.steps
    rc = run_command(view(npm_test).body)
    assert (rc.command_line, rc.exit_code, rc.stdout) == ("npm test", 1, None)
    assert rc.full.startswith("Exit code 1\nFAIL")
    # byte-identical but for the type, which the gateway numbers by the body field (14, 105)
    assert view_file == retyped(steps[1], 8) and grep == retyped(steps[3], 91)
    assert [(c.index, c.action) for c in fixed.changes] == [
        (0, "exit_code"),
        (0, "stdout_deduplicated"),
        (0, "type"),
        (1, "type"),
        (2, "dropped"),
        (3, "type"),
    ]
    assert "claude-code" in fixed.changes[0].reason
    assert all(c.reason for c in fixed.changes)
    assert ("run_command", "npm test", rc.full) in evidence.asked


def test_fixture_turn_1_alone() -> None:
    steps = parse_request(envelope_payload(fixture("grpc-turn1.bin"))).steps
    fixed = correct(steps)
    assert len(fixed.steps) == 3
    rc = run_command(view(fixed.steps[0]).body)
    assert (rc.exit_code, rc.stdout) == (1, None)  # the gateway's 0 is gone; the result's own frame says 1


# ---- the type names the body (truth rule 10) ---------------------------------------------

RUN_OUT = len_field(23, b"ls") + len_field(21, len_field(1, b"a"))  # an observed run_command body


def retyped(s: bytes, type_: int) -> bytes:
    """``s`` with its (first) type field's value replaced, every other byte as it was."""
    old = varint_field(1, view(s).type)
    assert s.startswith(old)
    return varint_field(1, type_) + s[len(old) :]


def test_the_known_gateways_run_command_typed_28_becomes_21() -> None:
    """dwgx/WindsurfAPI types run_command with its body's field number, 28: officially
    COMMAND_STATUS. The step gets RUN_COMMAND 21, and only the type changes."""
    s = gateway_run("ls", "a\nExit code: 0")
    assert view(s).type == 28
    fixed = correct([s], client="claude-code")
    (out,) = fixed.steps
    assert view(out).type == 21
    assert [c.action for c in fixed.changes][-1] == "type"
    change = fixed.changes[-1]
    assert "28 (COMMAND_STATUS)" in change.reason and "21 (RUN_COMMAND)" in change.reason
    assert change.after == out and view(change.before).type == 28
    assert view(out).body == view(fixed.changes[-1].before).body  # the body as the other rules left it


def test_a_step_typed_8_with_a_run_command_body_becomes_21() -> None:
    """Another gateway types every step 8 (officially VIEW_FILE), in status RUNNING too."""
    for status in (DONE, 2):
        s = raw_step("run_command", RUN_OUT, status=status, type_=8)
        fixed = correct([s])
        assert fixed.steps == [retyped(s, 21)]
        assert [(c.index, c.action) for c in fixed.changes] == [(0, "type")]
        assert "8 (VIEW_FILE)" in fixed.changes[0].reason and "run_command" in fixed.changes[0].reason


@pytest.mark.parametrize(
    ("kind", "body", "official"),
    [
        ("view_file", len_field(1, b"file:///a") + len_field(4, b"x"), 8),
        ("grep_search_v2", len_field(2, b"p") + len_field(15, b"a:1: p"), 91),
        ("find", len_field(1, b"*") + len_field(11, b"a.py"), 25),
        ("list_directory", len_field(1, b"file:///d") + len_field(2, b"a"), 9),
        ("write_to_file", len_field(1, b"file:///a"), 16),
        ("propose_code", b"", 24),
        ("search_web", len_field(1, b"q") + len_field(5, b"s"), 33),
        ("read_url_content", len_field(1, b"https://x") + len_field(2, len_field(2, b"page")), 31),
        ("grep_search", b"", 7),
        ("command_status", len_field(1, b"c1") + len_field(9, b"a"), 28),
        ("error_message", len_field(3, len_field(3, b"boom")), 17),
        ("user_input", len_field(1, b"hi"), 14),
    ],
)
def test_every_known_body_gets_its_official_type(kind: str, body: bytes, official: int) -> None:
    from cascadekit import FIELD_BY_KIND

    s = raw_step(kind, body, type_=FIELD_BY_KIND[kind])  # the known gateway's numbering
    fixed = correct([s])
    assert fixed.steps == [retyped(s, official)]
    assert [c.action for c in fixed.changes] == ["type"]


def test_an_absent_type_gets_the_body_type() -> None:
    s = varint_field(4, DONE) + len_field(28, RUN_OUT)
    fixed = correct([s])
    assert fixed.steps == [s + varint_field(1, 21)]
    assert "absent" in fixed.changes[0].reason


def test_a_type_that_names_the_body_is_kept_byte_identical() -> None:
    s = raw_step("run_command", RUN_OUT, type_=21)
    fixed = correct([s])
    assert fixed.steps == [s] and fixed.steps[0] is s and fixed.changes == []


def test_an_unknown_body_keeps_its_type() -> None:
    for s in (
        varint_field(1, 8) + varint_field(4, DONE) + len_field(20, len_field(1, b"planner")),  # planner_response
        varint_field(1, 28) + varint_field(4, DONE) + len_field(999, b"future body"),
        varint_field(1, 28) + varint_field(4, 2),  # no body
    ):
        assert correct([s]) == Corrected([s], [])


def test_keep_leaves_every_type_as_sent() -> None:
    steps = [raw_step("run_command", RUN_OUT, type_=8), raw_step("view_file", len_field(4, b"x"), status=2)]
    assert correct(steps, types="keep") == Corrected(steps, [])
    s = gateway_run("ls", "a\nExit code: 0")
    kept = correct([s], client="claude-code", types="keep")
    assert view(kept.steps[0]).type == 28 and "type" not in [c.action for c in kept.changes]
    typed = correct([s], client="claude-code")
    assert typed.steps == [retyped(kept.steps[0], 21)]
    assert typed.changes[:-1] == kept.changes


def test_an_unknown_types_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="types"):
        correct([], types="guess")  # type: ignore[arg-type]


def test_only_the_type_bytes_change_among_steps_left_alone() -> None:
    unknown = varint_field(1, 28) + varint_field(4, DONE) + len_field(999, b"x")
    ok = raw_step("view_file", len_field(1, b"file:///a") + len_field(4, b"x"), type_=8)
    wrong = raw_step(
        "grep_search_v2", len_field(2, b"p") + len_field(15, b"a"), type_=105, extra=len_field(999, b"tail")
    )
    fixed = correct([unknown, ok, wrong], first_index=5)
    assert fixed.steps == [unknown, ok, retyped(wrong, 91)]
    assert fixed.steps[0] is unknown and fixed.steps[1] is ok
    assert [(c.index, c.action) for c in fixed.changes] == [(7, "type")]


def test_fixture_types_all_name_their_bodies_once_corrected() -> None:
    from native_bridge.cascade.steps import OFFICIAL_TYPE

    steps = parse_request(envelope_payload(fixture("grpc-turn1.bin"))).steps
    fixed = correct(steps)
    assert all(view(s).type == OFFICIAL_TYPE[view(s).body_field] for s in fixed.steps)
    assert any(view(s).type != OFFICIAL_TYPE[view(s).body_field] for s in steps)


# ---- idempotence and determinism ---------------------------------------------------------

_outputs = st.sampled_from(
    [
        "",
        "ok",
        "Exit code 1\nx",
        "Exit code: 2\nOutput:\nx",
        "[tool error] x",
        "Command timed out after 1s",
        "<tool_use_error>x</tool_use_error>",
        "File does not exist.",
        "a\n(exit code 5)",
        "Command executed successfully.",
        "x\n[Command finished with exit code 3]",
        "Command running in background with ID: b1. Output is being written to: /tmp/b1",
    ]
)
_steps = st.one_of(
    st.builds(gateway_run, st.text(max_size=8), st.one_of(st.none(), _outputs), st.integers(-3, 3)),
    st.builds(
        lambda c, s: step("view_file", status=s, absolute_path_uri="file:///a", content=c),
        _outputs,
        st.sampled_from([DONE, 8]),
    ),
    st.builds(lambda c: step("grep_search_v2", pattern="p", raw_output=c), _outputs),
    st.just(step("write_to_file", target_file_uri="file:///a")),
    st.just(UNOBSERVED["find"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_steps, max_size=8), st.sampled_from([None, "claude-code", "codex", "zed", "openhands"]))
def test_correct_is_idempotent_deterministic_and_never_adds(steps: list[bytes], client: str | None) -> None:
    once = correct(steps, client=client)
    assert correct(once.steps, client=client).steps == once.steps
    assert correct(once.steps, client=client).changes == []
    assert correct(steps, client=client) == once
    assert len(once.steps) <= len(steps)
    # every type names its body (truth rule 10); with types="keep", every type is as sent
    assert all(view(s).type == OFFICIAL_TYPE[view(s).body_field] for s in once.steps)
    kept = correct(steps, client=client, types="keep")
    assert [(c.index, c.action) for c in kept.changes] == [
        (c.index, c.action) for c in once.changes if c.action != "type"
    ]
    assert all(view(s).type in {view(t).type for t in steps} for s in kept.steps)


def test_what_the_chat_hop_observes_is_what_a_correction_takes() -> None:
    """One Observation from the chat hop's reading (core/observe.py) to the planner's match."""
    from native_bridge.core.history import History, ToolCall, ToolResult
    from native_bridge.core.observe import observations
    from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS
    from native_bridge.evidence import match_key

    history = History(
        [ToolCall(0, 1, "toolu_01A", "Bash", {"command": "npm test"})],
        [ToolResult(1, 2, "toolu_01A", "Exit code 2\nboom", is_error=True)],
        ["other", "calls", "results"],
        "claude-code",
    )
    (seen,) = observations(history, DEFAULT_TOOL_KINDS)
    assert seen.key == match_key("run_command", "npm test", "Exit code 2\nboom") and seen.exit_code == 2
    out, changes = one(gateway_run("npm test", "Exit code 2\nboom"), lambda kind, cmd, output: seen)
    assert exit_of(out) == 2 and "chat hop observed" in changes[0].reason
