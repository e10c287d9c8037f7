"""Truth rule 3: the exit code a shell result states, or the failure it signals, in its client's words."""

from __future__ import annotations

import pytest
from native_bridge.core.exitstatus import has_error_prefix, parse_exit_status


def code(text: str, is_error: bool | None = None, client: str | None = None) -> int | None:
    return parse_exit_status(text, is_error, client).code


# ---- a client we cannot name: every frame we know, at its own place (issue 17) -------

# The reference fix's probe, exactly as it states it (Chat Completions, no client named).
PROBE = "Exit code: 2\nOutput:\nls: cannot access /nope"


def test_the_reference_fix_probe_is_exit_2() -> None:
    assert code(PROBE) == 2
    assert code(PROBE, False) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Exit code: 2", 2),
        ("Exit code 1", 1),
        ("exited with code 3", 3),
        ("Process exited with code 127", 127),
        ("[exit code: 1]", 1),
        ("(Exit code 4)", 4),
        ("[Command exited with code 5]", 5),
        ("ls: cannot access '/nope'\n\nExit code: 2\n", 2),  # the last line
        ('{"exit_code": 2}', 2),
        ('{"exitCode": 3, "stdout": "", "stderr": "boom"}', 3),
        ('{"output": "boom", "metadata": {"exit_code": 101}}', 101),  # Codex structured
        ('{"returncode": 2, "output": "x"}', 2),  # mini-swe-agent
        ("<returncode>2</returncode>\n<output>\nls: cannot access\n</output>", 2),
        ("[Command finished with exit code 1]", 1),  # OpenHands
        ("FAIL src/a.test.ts\n\n[Status: Command failed with exit code 1]", 1),  # Continue
        ("Output: hi\nExit Code: 1\nProcess Group PGID: 12", 1),  # Gemini CLI
        ("Output: hi\nProcess Group PGID: 12", 0),  # Gemini CLI writes no Exit Code for 0
        ('Command "cargo test" failed with exit code 101.\n\n```\nerror\n```', 101),  # Zed
        ("Command failed with exit code 2.\nOutput:\nFAIL", 2),  # Cline
        ("--- FAIL: TestX\nExit code 1\n\n<cwd>/home/u/proj</cwd>", 1),  # Crush
        ("FAILED test_x\n1 failed\n\nCommand exited with code 1", 1),  # goose
        ("Chunk ID: 3c\nWall time: 2.1 seconds\nProcess exited with code 1\nOutput:\nerror", 1),  # Codex exec
        ("Exit code: 2\nWall time: 0.2 seconds\nOutput:\nls: cannot access '/nope'", 2),  # Codex shell_command
        ("execution error: Sandbox(Signal(9))", 1),  # Codex: killed, no number
        ("Command executed successfully.", 0),  # Zed
    ],
)
def test_unnamed_client_every_frame_counts_at_its_place(text: str, expected: int) -> None:
    assert code(text) == expected
    assert code(text, False) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A stated number wins: Claude Code's frame with is_error, no client named.
        ("Exit code 128\nfatal: not a git repository (or any of the parent directories): .git", 128),
        ("Exit code 137\nKilled", 137),
        ("Exit code: 2", 2),
        ("boom", 1),  # no number stated anywhere: 1
        ("", 1),
        ("Exit code 99999999999\nboom", None),  # stated, but beyond int32: absent, never 1
        ("Exit code: 0", None),  # the flag against a stated 0: no claim
        ('{"exit_code": 0}', None),
        ("Output: hi\nProcess Group PGID: 1", None),  # against Gemini CLI's stated success
    ],
)
def test_unnamed_client_with_the_error_flag(text: str, expected: int | None) -> None:
    assert code(text, True) == expected


def test_a_tool_error_prefix_is_an_error_flag() -> None:
    assert code("[tool error] command failed") == 1
    assert code("[tool error] Exit code: 4") == 4
    assert code("[tool error] Exit code 0\nok") is None  # against a stated 0
    assert code("[tool error] boom", None, "claude-code") == 1


def test_unnamed_client_readings_that_differ_are_no_claim() -> None:
    # OpenHands' trailer says 0; the generic first line (any other client) says 3.
    status = parse_exit_status("Exit code 3\nall good\n[Command finished with exit code 0]")
    assert status.code is None
    assert status.verdict == "conflict"
    assert "0" in status.source and "3" in status.source
    # With the error flag, a disagreement is still no claim: never the made-up 1.
    assert code("Exit code 3\nall good\n[Command finished with exit code 0]", True) is None


def test_unnamed_client_still_running_or_never_run_wins_a_disagreement() -> None:
    status = parse_exit_status("Process running with session ID 5\nOutput:\n[vite] ready")
    assert (status.code, status.verdict) == (None, "running")
    status = parse_exit_status("Command running in background with ID: b2. Output is being written to: /tmp/x")
    assert status.verdict == "running"


@pytest.mark.parametrize(
    "text",
    [
        "step 1\nexit code 3\nstep 2 done",
        "building\n[exit code: 4]\nall good",
        "compiling\nthe process exited with code 9 earlier\ndone",
        "warning: exit code 1 ignored",
        "a\n[Command finished with exit code 2]\nb",
        "x\nOutput: y\nExit Code: 1\nz",
    ],
)
@pytest.mark.parametrize("is_error", [None, False])
def test_unnamed_client_words_inside_the_output_never_count(text: str, is_error: bool | None) -> None:
    assert code(text, is_error) is None


def test_named_client_reads_another_clients_number_only_for_a_flagged_result() -> None:
    # Continue's trailer is not Codex's frame: unflagged, for Codex it is the program's output.
    text = "FAIL src/a.test.ts\n\n[Status: Command failed with exit code 4]"
    assert parse_exit_status(text, None, "codex").code is None
    # Flagged, the failure is the flag's, and an identity is a claim (issue 39 item 4): the frame
    # at its place says which failure, the number it states, never the flag's 1.
    status = parse_exit_status(text, True, "codex")
    assert (status.code, status.verdict) == (4, "code")
    assert "not codex's own frame" in status.source
    assert parse_exit_status(text, True, "continue").code == 4
    assert parse_exit_status(text, True).code == 4


# ---- Codex-style header ------------------------------------------------------


def test_codex_header() -> None:
    text = "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nls: cannot access '/nope': No such file or directory"
    assert code(text, client="codex") == 2


def test_codex_exec_header_not_on_first_line() -> None:
    text = (
        "Chunk ID: 4f2a\nWall time: 1.2 seconds\nProcess exited with code 1\n"
        "Original token count: 12\nOutput:\nFAILED tests/test_x.py::test_y\n"
    )
    assert code(text, client="codex") == 1
    assert code(text, client="agents-sdk") == 1  # the Agents SDK's exec_command writes Codex's frame


def test_header_wins_over_words_inside_the_output() -> None:
    # The client's own status line says 0; the program merely printed "exit code 3".
    text = "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nchild process: exit code 3\nexit code 3"
    assert code(text, client="codex") == 0


def test_header_wins_over_a_status_like_last_line() -> None:
    text = "Process exited with code 0\nOutput:\nsimulating failure\nExit code: 3"
    assert code(text, client="codex") == 0


def test_header_without_status_does_not_read_the_programs_last_line() -> None:
    text = "Command executed.\nOutput:\nrunning the child build\nExit code: 3"
    assert code(text, client="codex") is None


# ---- Claude Code: "Exit code N" on the first line, only with is_error -----------------


def test_claude_code_status_line_above_output() -> None:
    assert code("Exit code 2\nls: cannot access '/nope': No such file or directory", True, "claude-code") == 2


def test_claude_code_line_without_the_flag_is_the_programs() -> None:
    # A named client reads its own frames only: Claude Code writes this line only with is_error.
    assert code("Exit code 2\nls: cannot access '/nope'", False, "claude-code") is None
    assert code("Process exited with code 3", None, "opencode") is None  # opencode never states a code
    assert code("Process exited with code 3") == 3  # a client we cannot name: the generic family


def test_flag_against_a_stated_zero_is_no_claim() -> None:
    status = parse_exit_status("Exit code 0\nok", True, "claude-code")
    assert status.code is None
    assert status.verdict == "conflict"


# ---- words in the middle never count ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "step 1\nexit code 3\nstep 2 done",
        "building\n[exit code: 4]\nall good",
        "the tool exited with code 2 on retry\nfinished",
        "warning: exit code 1 ignored",
    ],
)
@pytest.mark.parametrize("client", ["claude-code", "codex", "openhands", "goose", "crush", "zed"])
def test_words_inside_output_never_count(text: str, client: str) -> None:
    assert code(text, None, client) is None


def test_status_line_past_the_header_window_is_not_a_header() -> None:
    # Twelve lines then "Output:" is not a header; the middle status-like line is just output.
    text = "\n".join(["x"] * 5 + ["Exit code: 4"] + ["y"] * 10 + ["Output:", "z"])
    assert code(text, client="codex") is None


# ---- JSON forms: the client's own structure, as the whole result --------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"output": "boom\\n", "metadata": {"exit_code": 101, "duration_seconds": 1.5}}', 101),
        ('{"output": "fine", "metadata": {"exit_code": 0}}', 0),
        ('  {"metadata": {"exit_code": 3}}  ', 3),
    ],
)
def test_codex_json_forms(text: str, expected: int) -> None:
    assert code(text, client="codex") == expected


def test_json_output_words_do_not_override_json_exit_code() -> None:
    assert code('{"output": "Exit code: 3", "metadata": {"exit_code": 0}}', client="codex") == 0


@pytest.mark.parametrize(
    "text",
    [
        '{"metadata": {"exit_code": true}}',
        '{"metadata": {"exit_code": "2"}}',
        '{"metadata": {"exit_code": 1.0}}',
        '{"status": {"exit_code": 1}}',
        "[1, 2]",
    ],
)
@pytest.mark.parametrize("client", ["codex", "claude-code", None])
def test_json_without_an_integer_exit_code_is_absent(text: str, client: str | None) -> None:
    assert code(text, client=client) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"exit_code": 2}', 2),
        ('{"exitCode": 0, "stdout": "ok"}', 0),
        ('{"output": "x", "metadata": {"exit_code": 1}, "extra": 1}', 1),
    ],
)
def test_generic_json_exit_code_counts_for_a_client_we_cannot_name(text: str, expected: int) -> None:
    assert code(text) == expected
    # A named client's own structure only: `cat status.json` through opencode is its program's output.
    assert code(text, client="opencode") is None
    assert code(text, client="claude-code") is None


def test_json_boolean_is_not_an_exit_code_but_error_flag_still_counts() -> None:
    assert code('{"metadata": {"exit_code": true}}', True, "codex") == 1


def test_out_of_int32_range_is_declined_never_1() -> None:
    # A stated number the step's int32 cannot carry: absent, not the made-up 1 (issue 17).
    for text in ('{"output": "", "metadata": {"exit_code": 4294967296}}', "Exit code: 9999999999\nOutput:\n"):
        for is_error in (None, True):
            status = parse_exit_status(text, is_error, "codex")
            assert (status.code, status.verdict) == (None, "declined")


# ---- mini-swe-agent ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "verdict"),
    [
        ('{\n  "returncode": 0,\n  "output": "hi\\n"\n}', 0, "code"),
        ('{\n  "returncode": 127,\n  "output": "sh: 1: x: not found\\n"\n}', 127, "code"),
        # A stated sentinel is that number, never 1 (issue 39): -1 beside its exception_info.
        ('{"returncode": -1, "output": "", "exception_info": "Command timed out after 2 seconds"}', -1, "code"),
        ('{"returncode": -1, "output": "", "exception_info": "action was not executed"}', None, "not_run"),
        ('{"returncode": 3, "output_head": "a", "output_tail": "b", "elided_chars": 9, "warning": "x"}', 3, "code"),
        ("<returncode>0</returncode>\n<output>\nhi\n</output>", 0, "code"),
        ("<exception>boom</exception>\n<returncode>-1</returncode>\n<output>\n</output>", -1, "code"),
        ('{"returncode": 0, "output": "", "extra": 1}', None, "unknown"),
    ],
)
def test_mini_swe_agent(text: str, expected: int | None, verdict: str) -> None:
    status = parse_exit_status(text, None, "mini-swe-agent")
    assert (status.code, status.verdict) == (expected, verdict)


# ---- error flags -----------------------------------------------------------------


def test_is_error_without_number_is_one() -> None:
    assert code("Permission denied", True, "claude-code") == 1


def test_is_error_with_number_keeps_the_number() -> None:
    assert code("Exit code 2\nls: cannot access '/nope'", True, "claude-code") == 2


def test_is_error_false_is_no_signal() -> None:
    assert code("Permission denied", False, "claude-code") is None


def test_error_prefix_only_at_the_start() -> None:
    assert has_error_prefix("  [tool error] x")
    assert not has_error_prefix("log: [tool error] x")


# ---- no signal: absent, not 0 ---------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n  ", "hello world", "total 0\ndrwxr-xr-x 2 root root 40 .", "Output:\nfoo"])
@pytest.mark.parametrize("client", [None, "claude-code", "codex", "opencode"])
def test_no_signal_is_absent_not_zero(text: str, client: str | None) -> None:
    assert code(text, None, client) is None
