"""Truth rule 3: the exit code a shell result states, or the failure it signals, in its client's words."""

from __future__ import annotations

import pytest
from native_bridge.core.exitstatus import has_error_prefix, parse_exit_status


def code(text: str, is_error: bool | None = None, client: str | None = None) -> int | None:
    return parse_exit_status(text, is_error, client).code


# ---- an unknown client: only what the program's output cannot forge ------------------


@pytest.mark.parametrize(
    "text",
    [
        "Exit code: 2",
        "Exit code 1",
        "exited with code 3",
        "Process exited with code 127",
        "[exit code: 1]",
        "ls: cannot access '/nope'\n\nExit code: 2\n",
        '{"exit_code": 2}',
        '{"output": "boom", "metadata": {"exit_code": 101}}',
        '{"returncode": 2, "output": "x"}',
        "[Command finished with exit code 1]",
        "Output: hi\nExit Code: 1\nProcess Group PGID: 12",
        "[tool error] command failed",
    ],
)
def test_unknown_client_no_words_count(text: str) -> None:
    assert code(text) is None
    assert code(text, False) is None


@pytest.mark.parametrize("text", ["Exit code: 0", "Exit code: 2", "boom", '{"exit_code": 0}', ""])
def test_unknown_client_error_flag_is_a_failure_without_number(text: str) -> None:
    assert code(text, True) == 1


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
    assert code("Exit code 2\nls: cannot access '/nope'", False, "claude-code") is None


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
        '{"exit_code": 2}',  # not Codex's structure: what `cat status.json` prints
        '{"metadata": {"exit_code": true}}',
        '{"metadata": {"exit_code": "2"}}',
        '{"metadata": {"exit_code": 1.0}}',
        '{"output": "x", "metadata": {"exit_code": 1}, "extra": 1}',
        "[1, 2]",
    ],
)
def test_json_without_codex_structure_is_absent(text: str) -> None:
    assert code(text, client="codex") is None


def test_json_boolean_is_not_an_exit_code_but_error_flag_still_counts() -> None:
    assert code('{"metadata": {"exit_code": true}}', True, "codex") == 1


def test_out_of_int32_range_is_still_a_failure() -> None:
    assert code('{"output": "", "metadata": {"exit_code": 4294967296}}', client="codex") == 1
    assert code("Exit code: 9999999999\nOutput:\n", client="codex") == 1


# ---- mini-swe-agent ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "verdict"),
    [
        ('{\n  "returncode": 0,\n  "output": "hi\\n"\n}', 0, "code"),
        ('{\n  "returncode": 127,\n  "output": "sh: 1: x: not found\\n"\n}', 127, "code"),
        ('{"returncode": -1, "output": "", "exception_info": "Command timed out after 2 seconds"}', 1, "failed"),
        ('{"returncode": -1, "output": "", "exception_info": "action was not executed"}', None, "not_run"),
        ('{"returncode": 3, "output_head": "a", "output_tail": "b", "elided_chars": 9, "warning": "x"}', 3, "code"),
        ("<returncode>0</returncode>\n<output>\nhi\n</output>", 0, "code"),
        ("<exception>boom</exception>\n<returncode>-1</returncode>\n<output>\n</output>", 1, "failed"),
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
