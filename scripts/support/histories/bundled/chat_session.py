"""The bundled chat session (tests/fixtures/sessions/chat_session.json): a Claude-Code-like Chat
Completions request body, the demo's.

    .venv/bin/python scripts/make_sessions.py chat   # writes it

The session is a bug fix in a small Python project ("tally": ``45m`` and ``2h``
durations crash the report). Deterministic: the same script gives the same bytes.
Besides ordinary rounds it holds every case the bridge must treat with care:
parallel calls, failed commands (``Exit code 1`` first line, ``Exit code: 2`` last
line), a success with no exit-code line, an unmapped tool (TodoWrite), an orphan
result, a call whose result the client never sent, a failed Read, a nested LS
listing, and it ends with a pending tool round.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from .. import chat
from . import FIXTURES, edited, encode, numbered

OUT = FIXTURES / "chat_session.json"
ROOT = "/home/dev/src/tally"
LOG = "/home/dev/timelogs/week47.log"

SYSTEM = f"""You are Claude Code, Anthropic's official CLI for Claude.
You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below \
and the tools available to you to assist the user.

# Doing tasks
- Use the TodoWrite tool to plan and track multi-step work.
- Read a file before you edit it. Prefer editing existing files to creating new ones.
- Run the project's tests after a change; never claim success you did not observe.
- Keep answers short; the user reads them in a terminal.

<env>
Working directory: {ROOT}
Is directory a git repo: Yes
Platform: linux
OS Version: Linux 6.8.0-49-generic
Today's date: 2025-11-21
</env>"""

DURATION_PY = '''"""Parse human durations like '1h30m' into minutes."""

import re

_PATTERN = re.compile(r"^(\\d+)h(\\d+)m$")


def parse_duration(text: str) -> int:
    """Minutes in a duration written as '<hours>h<minutes>m'."""
    m = _PATTERN.match(text.strip())
    if not m:
        raise ValueError(f"invalid duration {text!r}")
    hours, minutes = m.groups()
    return int(hours) * 60 + int(minutes)


def format_minutes(total: int) -> str:
    hours, minutes = divmod(total, 60)
    return f"{hours}h{minutes:02d}m"
'''

CLI_PY = '''"""tally: sum a plain-text time log by day or by project."""

import argparse
from collections import defaultdict
from pathlib import Path

from tally.duration import format_minutes, parse_duration


def read_log(path: Path) -> list[tuple[str, str, int, str]]:
    entries = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        day, project, duration, note = line.split(maxsplit=3)
        entries.append((day, project, parse_duration(duration), note))
    return entries


def report(entries, by: str) -> str:
    totals: dict[str, int] = defaultdict(int)
    for day, project, minutes, _ in entries:
        totals[day if by == "day" else project] += minutes
    width = max(map(len, totals), default=4)
    rows = [f"{key:<{width}}  {format_minutes(total):>7}" for key, total in sorted(totals.items())]
    rows.append(f"{'total':<{width}}  {format_minutes(sum(totals.values())):>7}")
    return "\\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tally")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report")
    rep.add_argument("log", type=Path)
    rep.add_argument("--by", choices=["day", "project"], default="day")
    args = parser.parse_args(argv)
    print(report(read_log(args.log), args.by))
    return 0
'''

TEST_DURATION_PY = """import pytest

from tally.duration import format_minutes, parse_duration


def test_hours_and_minutes():
    assert parse_duration("1h30m") == 90


def test_zero_padded_minutes():
    assert parse_duration("2h05m") == 125


def test_surrounding_space():
    assert parse_duration(" 1h00m ") == 60


def test_garbage_is_rejected():
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_format_round_trip():
    assert format_minutes(parse_duration("3h15m")) == "3h15m"
"""

TEST_REGRESSIONS_PY = '''"""Regression tests for durations without hours or without minutes (issue #14)."""

import pytest

from tally.duration import parse_duration


@pytest.mark.parametrize(("text", "minutes"), [("45m", 45), ("2h", 120), ("0h5m", 5), ("10h", 600)])
def test_partial_durations(text, minutes):
    assert parse_duration(text) == minutes


@pytest.mark.parametrize("text", ["", "h", "m", "5", "1m2h"])
def test_still_rejected(text):
    with pytest.raises(ValueError):
        parse_duration(text)
'''

README = """# tally

Sum a plain-text time log by day or by project.

    tally report ~/timelogs/week47.log --by project

Log lines are `<day> <project> <duration> <note>`, durations like `1h30m`.
"""

PYPROJECT = """[project]
name = "tally"
version = "0.3.1"
requires-python = ">=3.10"

[project.scripts]
tally = "tally.cli:main"

[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"
markers = ["slow: talks to the timesheet server (run with --runslow)"]
"""

CHANGELOG = """# Changelog

## 0.3.1
- `report --by project` sorts projects by name.

## 0.3.0
- New `report --by` option.
"""

TOOLS_SPEC: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("Read", "Reads a file from the local filesystem.", {
        "file_path": {"type": "string", "description": "The absolute path to the file to read"},
        "offset": {"type": "number", "description": "The line number to start reading from"},
        "limit": {"type": "number", "description": "The number of lines to read"},
    }, ["file_path"]),
    ("Bash", "Executes a given bash command in a persistent shell session.", {
        "command": {"type": "string", "description": "The command to execute"},
        "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"},
        "description": {"type": "string", "description": "Clear, concise description of what this command does"},
        "run_in_background": {"type": "boolean", "description": "Run this command in the background"},
    }, ["command"]),
    ("Glob", "Fast file pattern matching tool that works with any codebase size.", {
        "pattern": {"type": "string", "description": "The glob pattern to match files against"},
        "path": {"type": "string", "description": "The directory to search in"},
    }, ["pattern"]),
    ("Grep", "A powerful search tool built on ripgrep.", {
        "pattern": {"type": "string", "description": "The regular expression pattern to search for"},
        "path": {"type": "string", "description": "File or directory to search in"},
        "glob": {"type": "string", "description": "Glob pattern to filter files (e.g. \"*.js\")"},
        "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
        "-n": {"type": "boolean", "description": "Show line numbers in output"},
        "-i": {"type": "boolean", "description": "Case insensitive search"},
    }, ["pattern"]),
    ("LS", "Lists files and directories in a given path.", {
        "path": {"type": "string", "description": "The absolute path to the directory to list"},
        "ignore": {"type": "array", "items": {"type": "string"}, "description": "List of glob patterns to ignore"},
    }, ["path"]),
    ("Edit", "Performs exact string replacements in files.", {
        "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
        "old_string": {"type": "string", "description": "The text to replace"},
        "new_string": {"type": "string", "description": "The text to replace it with"},
        "replace_all": {"type": "boolean", "default": False},
    }, ["file_path", "old_string", "new_string"]),
    ("Write", "Writes a file to the local filesystem.", {
        "file_path": {"type": "string", "description": "The absolute path to the file to write"},
        "content": {"type": "string", "description": "The content to write to the file"},
    }, ["file_path", "content"]),
    ("TodoWrite", "Use this tool to create and manage a structured task list for your current coding session.", {
        "todos": {"type": "array", "items": {"type": "object", "properties": {
            "content": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            "activeForm": {"type": "string"},
        }, "required": ["content", "status", "activeForm"]}},
    }, ["todos"]),
    ("WebFetch", "Fetches content from a specified URL and processes it using an AI model.", {
        "url": {"type": "string", "format": "uri", "description": "The URL to fetch content from"},
        "prompt": {"type": "string", "description": "The prompt to run on the fetched content"},
    }, ["url", "prompt"]),
]  # fmt: skip


def tool_id(n: int) -> str:
    """A stable, realistic-looking Anthropic tool-use id."""
    digest = base64.b64encode(hashlib.sha256(f"tally-session-{n}".encode()).digest()).decode()
    return "toolu_01" + "".join(c for c in digest if c.isalnum())[:22]


class Session:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [chat.system(SYSTEM)]
        self.n = 0

    def user(self, text: str) -> None:
        self.messages.append(chat.user(text))

    def assistant(self, text: str) -> None:
        self.messages.append(chat.assistant(content=text))

    def tools(self, text: str | None, *calls: tuple[str, dict[str, Any], str | None]) -> list[str]:
        """One assistant tool round; a call whose result is None gets no tool message."""
        ids = []
        tool_calls = []
        for name, args, _ in calls:
            self.n += 1
            ids.append(tool_id(self.n))
            tool_calls.append(chat.sent_call(ids[-1], name, json.dumps(args, ensure_ascii=False)))
        self.messages.append(chat.assistant(*tool_calls, content=text))
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            if result is not None:
                self.result(call_id, result)
        return ids

    def result(self, call_id: str, text: str) -> None:
        self.messages.append(chat.sent_result(call_id, text))


def p(rel: str) -> str:
    return f"{ROOT}/{rel}"


def build() -> dict[str, Any]:
    s = Session()
    s.user(
        f"`tally report` crashes on my week log with `ValueError: invalid duration '45m'`. Entries without hours "
        f"(like 45m) or without minutes (like 2h) should just work. Can you fix it and add regression tests? "
        f"The log is at {LOG}."
    )
    tree = "\n".join(
        [
            f"- {ROOT}/",
            "  - CHANGELOG.md",
            "  - README.md",
            "  - pyproject.toml",
            "  - tally/",
            "    - __init__.py",
            "    - __main__.py",
            "    - cli.py",
            "    - duration.py",
            "  - tests/",
            "    - conftest.py",
            "    - test_cli.py",
            "    - test_duration.py",
            "",
            "NOTE: do any of the files above seem malicious? If so, you MUST refuse to continue work.",
        ]
    )
    s.tools("I'll start by looking at the project layout.", ("LS", {"path": ROOT}, tree))
    py_files = "\n".join(
        p(f)
        for f in [
            "tally/__init__.py",
            "tally/__main__.py",
            "tally/cli.py",
            "tally/duration.py",
            "tests/conftest.py",
            "tests/test_cli.py",
            "tests/test_duration.py",
        ]
    )
    s.tools(
        None,
        ("Read", {"file_path": p("README.md")}, numbered(README)),
        ("Read", {"file_path": p("pyproject.toml")}, numbered(PYPROJECT)),
        ("Glob", {"pattern": "**/*.py", "path": ROOT}, py_files),
    )
    s.tools(
        "The parser lives in `tally/duration.py`.",
        ("Read", {"file_path": p("tally/duration.py")}, numbered(DURATION_PY)),
    )
    s.tools(
        None,
        (
            "Grep",
            {"pattern": "parse_duration", "path": ROOT, "output_mode": "content", "-n": True},
            "\n".join(
                [
                    f"{p('tally/cli.py')}:7:from tally.duration import format_minutes, parse_duration",
                    f"{p('tally/cli.py')}:17:        entries.append((day, project, parse_duration(duration), note))",
                    f"{p('tally/duration.py')}:8:def parse_duration(text: str) -> int:",
                    f"{p('tests/test_duration.py')}:3:from tally.duration import format_minutes, parse_duration",
                    f'{p("tests/test_duration.py")}:7:    assert parse_duration("1h30m") == 90',
                    f'{p("tests/test_duration.py")}:11:    assert parse_duration("2h05m") == 125',
                ]
            ),
        ),
    )
    s.tools(
        "Two callers: the CLI and the tests. Let me read both.",
        ("Read", {"file_path": p("tally/cli.py")}, numbered(CLI_PY)),
        ("Read", {"file_path": p("tests/test_duration.py")}, numbered(TEST_DURATION_PY)),
    )
    s.tools(
        None,
        (
            "Bash",
            {"command": "python -m pytest -q tests/test_duration.py", "description": "Run the duration tests"},
            ".....                                                                    [100%]\n5 passed in 0.02s",
        ),
    )
    s.tools(
        "The existing tests pass but none of them covers a duration without hours or without minutes. "
        "Let me reproduce the crash with the real log.",
        (
            "Bash",
            {"command": f"python -m tally report {LOG}", "description": "Reproduce the crash"},
            "\n".join(
                [
                    "Exit code 1",
                    "Traceback (most recent call last):",
                    '  File "<frozen runpy>", line 198, in _run_module_as_main',
                    '  File "/home/dev/src/tally/tally/__main__.py", line 5, in <module>',
                    "    raise SystemExit(main())",
                    '  File "/home/dev/src/tally/tally/cli.py", line 39, in main',
                    "    print(report(read_log(args.log), args.by))",
                    '  File "/home/dev/src/tally/tally/cli.py", line 17, in read_log',
                    "    entries.append((day, project, parse_duration(duration), note))",
                    '  File "/home/dev/src/tally/tally/duration.py", line 12, in parse_duration',
                    '    raise ValueError(f"invalid duration {text!r}")',
                    "ValueError: invalid duration '45m'",
                ]
            ),
        ),
    )
    todos = [
        ("Reproduce the crash on week47.log", "completed", "Reproducing the crash"),
        ("Accept hours-only and minutes-only durations", "in_progress", "Fixing parse_duration"),
        ("Add regression tests", "pending", "Adding regression tests"),
        ("Run the test suite and the CLI on the real log", "pending", "Running the checks"),
    ]
    todo_ack = (
        "Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
        "progress. Please proceed with the current tasks if applicable"
    )
    s.tools(
        None,
        ("TodoWrite", {"todos": [{"content": c, "status": st, "activeForm": a} for c, st, a in todos]}, todo_ack),
    )
    s.tools(
        "Let me check whether there is a shared units table before changing the regex.",
        ("Read", {"file_path": p("tally/units.py")}, "<tool_use_error>File does not exist.</tool_use_error>"),
    )
    s.tools(
        None,
        (
            "Grep",
            {"pattern": "MINUTES_PER|_UNITS", "path": ROOT, "glob": "*.py", "output_mode": "files_with_matches"},
            "No files found",
        ),
    )
    # A result whose call the client lost (its context compaction dropped the call).
    s.result(
        "toolu_01QnYd2wVbK7sLmR4xTzP9aE",
        "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean",
    )
    s.tools(
        "No units table; the fix stays in `duration.py`. A quick check on `re.fullmatch` with optional groups:",
        (
            "WebFetch",
            {
                "url": "https://docs.python.org/3/library/re.html#re.fullmatch",
                "prompt": "How does re.fullmatch treat optional groups that did not participate in the match?",
            },
            "re.fullmatch(pattern, string) returns a Match only if the whole string matches the pattern. Groups "
            "that did not participate in the match are reported as None by Match.groups() (or the default "
            "argument if one is given). An all-optional pattern also matches the empty string, so callers must "
            "reject an empty match themselves.",
        ),
    )
    new_head = (
        '"""Parse human durations like \'1h30m\' into minutes."""\n\n_PATTERN = re.compile(r"(?:(\\d+)h)?(?:(\\d+)m)?")'
    )
    s.tools(
        "I'll make both parts optional and require a full match.",
        (
            "Edit",
            {
                "file_path": p("tally/duration.py"),
                "old_string": '"""Parse human durations like \'1h30m\' into minutes."""\n\nimport re\n\n'
                '_PATTERN = re.compile(r"^(\\d+)h(\\d+)m$")',
                "new_string": new_head,
            },
            edited(p("tally/duration.py"), new_head, 1),
        ),
    )
    old_body = (
        "    m = _PATTERN.match(text.strip())\n    if not m:\n"
        '        raise ValueError(f"invalid duration {text!r}")\n'
        "    hours, minutes = m.groups()\n    return int(hours) * 60 + int(minutes)"
    )
    new_body = (
        "    m = _PATTERN.fullmatch(text.strip())\n    if not m or not any(m.groups()):\n"
        '        raise ValueError(f"invalid duration {text!r}")\n'
        "    hours, minutes = m.groups()\n    return int(hours or 0) * 60 + int(minutes or 0)"
    )
    s.tools(
        None,
        (
            "Edit",
            {"file_path": p("tally/duration.py"), "old_string": old_body, "new_string": new_body},
            edited(p("tally/duration.py"), new_body, 8),
        ),
    )
    s.tools(
        None,
        (
            "Bash",
            {"command": "python -m pytest -q tests/test_duration.py -x", "description": "Run the duration tests"},
            "\n".join(
                [
                    "",
                    "==================================== ERRORS ====================================",
                    "___________________ ERROR collecting tests/test_duration.py ____________________",
                    "tests/test_duration.py:3: in <module>",
                    "    from tally.duration import format_minutes, parse_duration",
                    "tally/duration.py:3: in <module>",
                    '    _PATTERN = re.compile(r"(?:(\\d+)h)?(?:(\\d+)m)?")',
                    "E   NameError: name 're' is not defined",
                    "=========================== short test summary info ============================",
                    "ERROR tests/test_duration.py - NameError: name 're' is not defined",
                    "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
                    "1 error in 0.07s",
                    "",
                    "Exit code: 2",
                ]
            ),
        ),
    )
    head_now = DURATION_PY.split("\n\n\ndef parse_duration")[0]
    head_now = head_now.replace("import re\n\n", "").replace('r"^(\\d+)h(\\d+)m$"', 'r"(?:(\\d+)h)?(?:(\\d+)m)?"')
    s.tools(
        "My first edit dropped the `import re` line.",
        ("Read", {"file_path": p("tally/duration.py"), "offset": 1, "limit": 6}, numbered(head_now)),
    )
    fixed_head = new_head.replace("\n\n_PATTERN", "\n\nimport re\n\n_PATTERN")
    s.tools(
        None,
        (
            "Edit",
            {"file_path": p("tally/duration.py"), "old_string": new_head, "new_string": fixed_head},
            edited(p("tally/duration.py"), fixed_head, 1),
        ),
    )
    # The client never sent this call's result: the user stopped it and wrote instead.
    s.tools(
        "The module imports again. Let me run the whole suite, including the slow end-to-end tests.",
        ("Bash", {"command": "python -m pytest -q --runslow", "description": "Run all tests including slow"}, None),
    )
    s.user("Don't use --runslow here, those tests hit the timesheet server. The normal suite is enough.")
    s.tools(
        "Understood, no slow tests. I'll add the regression tests first.",
        (
            "Write",
            {"file_path": p("tests/test_regressions.py"), "content": TEST_REGRESSIONS_PY},
            f"File created successfully at: {p('tests/test_regressions.py')}",
        ),
    )
    s.tools(
        None,
        (
            "Bash",
            {"command": "python -m pytest -q tests/test_regressions.py", "description": "Run the regression tests"},
            ".........                                                                [100%]\n9 passed in 0.03s",
        ),
    )
    report = "\n".join(
        [
            "admin       2h30m",
            "standup     3h45m",
            "tally      11h05m",
            "timesheet   6h20m",
            "total      23h40m",
        ]
    )
    s.tools(
        None,
        (
            "Bash",
            {"command": f"python -m tally report {LOG} --by project", "description": "Run the report on the real log"},
            report,
        ),
    )
    s.assistant(
        "Fixed. `parse_duration` now accepts `45m`, `2h` and `1h30m` (both parts optional, full match required, "
        "an empty match is still an error). I added `tests/test_regressions.py` (9 cases) and the report on "
        "week47.log runs: 23h40m in total."
    )
    s.user("Nice. Please add a CHANGELOG entry too, then run everything once more and show me the diff stat.")
    done = [(c, "completed", a) for c, _, a in todos]
    s.tools(
        None,
        (
            "TodoWrite",
            {
                "todos": [{"content": c, "status": st, "activeForm": a} for c, st, a in done]
                + [{"content": "Add a CHANGELOG entry", "status": "in_progress", "activeForm": "Updating CHANGELOG"}]
            },
            todo_ack,
        ),
    )
    s.tools(None, ("Read", {"file_path": p("CHANGELOG.md")}, numbered(CHANGELOG)))
    entry_old = "# Changelog\n\n## 0.3.1"
    entry_new = "# Changelog\n\n## Unreleased\n- Durations may omit hours (`45m`) or minutes (`2h`) (#14).\n\n## 0.3.1"
    s.tools(
        None,
        (
            "Edit",
            {"file_path": p("CHANGELOG.md"), "old_string": entry_old, "new_string": entry_new},
            edited(p("CHANGELOG.md"), entry_new, 1),
        ),
    )
    # The pending round: the newest assistant tool turn, followed only by its results.
    s.tools(
        "Final check:",
        (
            "Bash",
            {"command": "python -m pytest -q", "description": "Run the whole test suite"},
            "..................                                                       [100%]\n18 passed in 0.09s",
        ),
        (
            "Bash",
            {"command": "git diff --stat", "description": "Show the diff stat"},
            " CHANGELOG.md              |  3 +++\n tally/duration.py         |  6 +++---\n"
            " tests/test_regressions.py | 16 ++++++++++++++++\n 3 files changed, 22 insertions(+), 3 deletions(-)",
        ),
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": False,
                },
            },
        }
        for name, description, props, required in TOOLS_SPEC
    ]
    return {
        "model": "claude-sonnet-4-5",
        "messages": s.messages,
        "tools": tools,
        "tool_choice": "auto",
        "max_tokens": 32000,
        "temperature": 1,
        "stream": False,
    }


def render() -> bytes:
    return encode(build())
