"""Truth rule 3: the exit code a shell result states, or the failure it signals."""

from __future__ import annotations

import pytest
from native_bridge.core.exitstatus import has_error_prefix, parse_exit_status


def code(text: str, is_error: bool | None = None) -> int | None:
    return parse_exit_status(text, is_error).code


# ---- plain-text status lines -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Exit code: 2", 2),
        ("Exit code 1", 1),
        ("exit code: 0", 0),
        ("EXIT CODE: 9", 9),
        ("exit_code: 4", 4),
        ("Exit status 6", 6),
        ("exited with code 3", 3),
        ("Process exited with code 127", 127),
        ("Command exited with code 1.", 1),
        ("The process exited with exit code 2", 2),
        ("exited with status 130", 130),
        ("[exit code: 1]", 1),
        ("(exit code 5)", 5),
        ("[Process exited with code 2]", 2),
        ("Exit code: -1", -1),
        ("  Exit code: 7  ", 7),
    ],
)
def test_plain_status_line(text: str, expected: int) -> None:
    assert code(text) == expected


def test_status_line_above_output() -> None:
    assert code("Exit code 2\nls: cannot access '/nope': No such file or directory") == 2


def test_status_line_below_output() -> None:
    assert code("ls: cannot access '/nope'\n\nExit code: 2\n") == 2


def test_first_line_wins_over_last_line() -> None:
    assert code("Exit code: 0\nsomething\nExit code: 3") == 0


# ---- Codex-style header ------------------------------------------------------


def test_codex_header() -> None:
    text = "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nls: cannot access '/nope': No such file or directory"
    assert code(text) == 2


def test_codex_exec_header_not_on_first_line() -> None:
    text = (
        "Chunk ID: 4f2a\nWall time: 1.2 seconds\nProcess exited with code 1\n"
        "Original token count: 12\nOutput:\nFAILED tests/test_x.py::test_y\n"
    )
    assert code(text) == 1


def test_header_wins_over_words_inside_the_output() -> None:
    # The client's own status line says 0; the program merely printed "exit code 3".
    text = "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nchild process: exit code 3\nexit code 3"
    assert code(text) == 0


def test_header_wins_over_a_status_like_last_line() -> None:
    text = "Process exited with code 0\nOutput:\nsimulating failure\nExit code: 3"
    assert code(text) == 0


def test_header_without_status_does_not_read_the_programs_last_line() -> None:
    text = "Command executed.\nOutput:\nrunning the child build\nExit code: 3"
    assert code(text) is None


# ---- words in the middle never count ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "step 1\nexit code 3\nstep 2 done",
        "building\n[exit code: 4]\nall good",
        "the tool exited with code 2 on retry\nfinished",
        "exit code: 3 was expected\n",
        "warning: exit code 1 ignored",
        "Exit code: 2 (maybe)",
    ],
)
def test_words_inside_output_never_count(text: str) -> None:
    assert code(text) is None


def test_status_line_past_the_header_window_is_not_a_header() -> None:
    # Twelve lines then "Output:" is not a header; the middle status-like line is just output.
    text = "\n".join(["x"] * 5 + ["Exit code: 4"] + ["y"] * 10 + ["Output:", "z"])
    assert code(text) is None


# ---- JSON forms ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"exit_code": 2}', 2),
        ('{"exit_code": 0, "stdout": "ok"}', 0),
        ('{"output": "boom\\n", "metadata": {"exit_code": 101, "duration_seconds": 1.5}}', 101),
        ('{"output": "fine", "metadata": {"exit_code": 0}}', 0),
        ('  {"metadata": {"exit_code": 3}}  ', 3),
    ],
)
def test_json_forms(text: str, expected: int) -> None:
    assert code(text) == expected


def test_json_output_words_do_not_override_json_exit_code() -> None:
    assert code('{"output": "Exit code: 3", "metadata": {"exit_code": 0}}') == 0


@pytest.mark.parametrize(
    "text",
    [
        '{"exit_code": true}',
        '{"exit_code": false}',
        '{"metadata": {"exit_code": true}}',
        '{"exit_code": "2"}',
        '{"exit_code": 1.0}',
        '{"exit_code": null}',
        '{"metadata": "exit_code"}',
        "[1, 2]",
    ],
)
def test_json_without_an_integer_exit_code_is_absent(text: str) -> None:
    assert code(text) is None


def test_json_boolean_is_not_an_exit_code_but_error_flag_still_counts() -> None:
    assert code('{"exit_code": true}', is_error=True) == 1
    assert code('{"exit_code": false}', is_error=True) == 1


def test_out_of_int32_range_is_not_a_code() -> None:
    assert code('{"exit_code": 4294967296}') is None
    assert code("Exit code: 9999999999") is None


# ---- error flags -----------------------------------------------------------------


def test_is_error_without_number_is_one() -> None:
    assert code("Permission denied", is_error=True) == 1


def test_is_error_with_number_keeps_the_number() -> None:
    assert code("Exit code 2\nls: cannot access '/nope'", is_error=True) == 2


def test_is_error_false_is_no_signal() -> None:
    assert code("Permission denied", is_error=False) is None


@pytest.mark.parametrize("text", ["[tool error] command failed", "  [Tool Error] boom", "[TOOL ERROR]"])
def test_error_prefix_without_number_is_one(text: str) -> None:
    assert code(text) == 1


def test_error_prefix_with_number_keeps_the_number() -> None:
    assert code("[tool error] Exit code: 2\nnope") == 2
    assert code('[tool error] {"exit_code": 5}') == 5


def test_error_prefix_only_at_the_start() -> None:
    assert has_error_prefix("  [tool error] x")
    assert not has_error_prefix("log: [tool error] x")
    assert code("log line\n[tool error] seen in output\nmore") is None


# ---- no signal: absent, not 0 ---------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n  ", "hello world", "total 0\ndrwxr-xr-x 2 root root 40 .", "Output:\nfoo"])
def test_no_signal_is_absent_not_zero(text: str) -> None:
    assert code(text) is None
