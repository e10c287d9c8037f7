"""The bundled Anthropic session (tests/fixtures/sessions/anthropic_session.json): a Claude Code
request body for POST /v1/messages.

    .venv/bin/python scripts/make_sessions.py anthropic   # writes it

The session fixes an off-by-one-day bug in a small Python project ("burndown":
an issue closed just after midnight on Saturday, team time, counts as done on
Friday because closing dates are taken in UTC).
Deterministic: the same script gives the same bytes.

It is shaped as Claude Code sends it (research notes /tmp/research/formats-a.md §1,
from the v2.1.88 source): ``system`` as text blocks with ``cache_control``, a
``tools`` array, extended thinking (``thinking`` blocks with signatures in assistant
turns), ``tool_use`` / ``tool_result`` blocks, results as a string or as an array of
blocks, ``<system-reminder>`` text blocks after results in the same user turn, and
``cache_control`` on the last block. Besides ordinary rounds it holds the cases the
bridge must treat with care:

- a Read of a PNG whose result is an image block (no text: stays a message);
- failed Bash runs (``Exit code N`` first line with ``is_error``);
- a Bash call the user rejected (Claude Code's REJECT_MESSAGE, ``is_error``);
- an Edit answered by ``<tool_use_error>`` (``is_error``);
- a Bash ``run_in_background`` call, polled with BashOutput and stopped with KillShell;
- TodoWrite (unmapped);
- a call the client never sent a result for (the user interrupted, older builds);
- parallel calls, and a pending round at the end.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from typing import Any

from .. import anthropic
from . import FIXTURES, digest, edited, encode, numbered

OUT = FIXTURES / "anthropic_session.json"
ROOT = "/home/dev/src/burndown"
CSV = f"{ROOT}/data/sprint14.csv"
PNG_PATH = f"{ROOT}/out/sprint14.png"
BG_ID = "bash_1"

# Claude Code src/utils/messages.ts REJECT_MESSAGE.
REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the "
    "new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to "
    "proceed."
)
INTERRUPTED = "[Request interrupted by user for tool use]"

SYSTEM_INTRO = "You are Claude Code, Anthropic's official CLI for Claude."
SYSTEM = f"""
You are an interactive CLI tool that helps users with software engineering tasks. Use the instructions below and \
the tools available to you to assist the user.

IMPORTANT: Assist with defensive security tasks only.

# Tone and style
You should be concise, direct, and to the point. Your output will be displayed on a command line interface.

# Task Management
You have access to the TodoWrite tools to help you manage and plan tasks. Use these tools VERY frequently to \
ensure that you are tracking your tasks and giving the user visibility into your progress.

# Doing tasks
- Use the available search tools to understand the codebase and the user's query.
- Implement the solution using all tools available to you
- Verify the solution if possible with tests. NEVER assume specific test framework or test script.

# Tool usage policy
- You have the capability to call multiple tools in a single response. When multiple independent pieces of \
information are requested, batch your tool calls together for optimal performance.

Here is useful information about the environment you are running in:
<env>
Working directory: {ROOT}
Is directory a git repo: Yes
Platform: linux
OS Version: Linux 6.8.0-49-generic
Today's date: 2025-11-24
</env>
You are powered by the model named Sonnet 4.5. The exact model ID is claude-sonnet-4-5-20250929.

gitStatus: This is the git status at the start of the conversation.
Current branch: fix/friday-point

Main branch (you will usually use this for PRs): main

Status:
(clean)

Recent commits:
3f1c2ab Render sprint charts with matplotlib
9d84e07 Read sprint CSV exports
"""

CLAUDE_MD = f"""<system-reminder>
As you answer the user's questions, you can use the following context:
# claudeMd
Codebase and user instructions are shown below. Be sure to adhere to these instructions.

Contents of {ROOT}/CLAUDE.md (project instructions, checked into the codebase):

# burndown
- Python 3.12, no new dependencies without asking.
- Run `python -m pytest -q` before you say you are done.
- Team timezone is Europe/Berlin; sprint days are local days.

      IMPORTANT: this context may or may not be relevant to your tasks.
</system-reminder>"""

TODO_REMINDER = (
    "<system-reminder>\nThe TodoWrite tool hasn't been used recently. If you're working on tasks that would "
    "benefit from tracking progress, consider using the TodoWrite tool to track progress. Only use it if it's "
    "relevant to the current work. This is just a gentle reminder - ignore if not applicable.\n</system-reminder>"
)
MODIFIED_REMINDER = (
    "<system-reminder>\nNote: {path} was modified, either by the user or by a linter. Don't tell the user this, "
    "since they are already aware. This change was intentional, so make sure to take it into account as you "
    "proceed (ie. don't revert it unless the user asks you to).\n</system-reminder>"
)

DATES_PY = '''"""Sprint days: which calendar day a status-change timestamp belongs to."""

from datetime import date, datetime, timezone


def day_of(stamp: str) -> date:
    """The sprint day of an ISO-8601 timestamp from the tracker export."""
    moment = datetime.fromisoformat(stamp)
    return moment.astimezone(timezone.utc).date()


def sprint_days(start: date, end: date) -> list[date]:
    days = []
    current = start
    while current <= end:
        if current.weekday() < 5:
            days.append(current)
        current = date.fromordinal(current.toordinal() + 1)
    return days
'''

PLOT_PY = '''"""Draw the burndown chart."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from burndown.dates import day_of, sprint_days


def remaining_by_day(rows, start, end):
    days = sprint_days(start, end)
    remaining = {d: 0 for d in days}
    for row in rows:
        done = day_of(row["closed_at"]) if row["closed_at"] else None
        for d in days:
            if done is None or done > d:
                remaining[d] += int(row["points"])
    return remaining


def render(rows, start, end, out):
    remaining = remaining_by_day(rows, start, end)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(list(remaining), list(remaining.values()), marker="o")
    ax.set_ylabel("points remaining")
    fig.autofmt_xdate()
    fig.savefig(out, dpi=120)
'''

CLI_PY = '''"""burndown: render a sprint burndown chart from a tracker CSV export."""

import argparse
import csv
from datetime import date

from burndown.plot import render


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="burndown")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render")
    r.add_argument("csv", type=argparse.FileType("r"))
    r.add_argument("--start", type=date.fromisoformat, required=True)
    r.add_argument("--end", type=date.fromisoformat, required=True)
    r.add_argument("--out", default="out/chart.png")
    args = parser.parse_args(argv)
    rows = list(csv.DictReader(args.csv))
    render(rows, args.start, args.end, args.out)
    print(f"wrote {args.out} ({len(rows)} issues)")
    return 0
'''

TEST_DATES_PY = """from datetime import date, datetime, timedelta, timezone

from burndown.dates import day_of

BERLIN_WINTER = timezone(timedelta(hours=1))


def test_just_after_midnight_is_the_next_day():
    stamp = datetime(2025, 11, 22, 0, 30, tzinfo=BERLIN_WINTER).isoformat()
    assert day_of(stamp) == date(2025, 11, 22)


def test_utc_stamp_is_read_in_team_time():
    assert day_of("2025-11-21T23:30:00+00:00") == date(2025, 11, 22)
"""

OLD_TEST_DATES_PY = """from datetime import date

from burndown.dates import sprint_days


def test_weekends_are_skipped():
    days = sprint_days(date(2025, 11, 17), date(2025, 11, 23))
    assert len(days) == 5
"""

TOOLS_SPEC: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("Task", "Launch a new agent to handle complex, multi-step tasks autonomously.", {
        "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
        "prompt": {"type": "string", "description": "The task for the agent to perform"},
        "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
    }, ["description", "prompt", "subagent_type"]),
    ("Bash", "Executes a given bash command in a persistent shell session with optional timeout.", {
        "command": {"type": "string", "description": "The command to execute"},
        "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"},
        "description": {"type": "string", "description": "Clear, concise description of what this command does"},
        "run_in_background": {"type": "boolean", "description": "Set to true to run this command in the background."},
    }, ["command"]),
    ("Glob", "Fast file pattern matching tool that works with any codebase size.", {
        "pattern": {"type": "string", "description": "The glob pattern to match files against"},
        "path": {"type": "string", "description": "The directory to search in."},
    }, ["pattern"]),
    ("Grep", "A powerful search tool built on ripgrep.", {
        "pattern": {"type": "string", "description": "The regular expression pattern to search for"},
        "path": {"type": "string", "description": "File or directory to search in"},
        "glob": {"type": "string", "description": "Glob pattern to filter files"},
        "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
        "-n": {"type": "boolean", "description": "Show line numbers in output"},
        "-i": {"type": "boolean", "description": "Case insensitive search"},
    }, ["pattern"]),
    ("Read", "Reads a file from the local filesystem. This tool allows Claude Code to read images.", {
        "file_path": {"type": "string", "description": "The absolute path to the file to read"},
        "offset": {"type": "number", "description": "The line number to start reading from"},
        "limit": {"type": "number", "description": "The number of lines to read"},
    }, ["file_path"]),
    ("Edit", "Performs exact string replacements in files.", {
        "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
        "old_string": {"type": "string", "description": "The text to replace"},
        "new_string": {"type": "string", "description": "The text to replace it with"},
        "replace_all": {"type": "boolean", "default": False, "description": "Replace all occurences"},
    }, ["file_path", "old_string", "new_string"]),
    ("Write", "Writes a file to the local filesystem.", {
        "file_path": {"type": "string", "description": "The absolute path to the file to write"},
        "content": {"type": "string", "description": "The content to write to the file"},
    }, ["file_path", "content"]),
    ("WebFetch", "Fetches content from a specified URL and processes it using an AI model.", {
        "url": {"type": "string", "format": "uri", "description": "The URL to fetch content from"},
        "prompt": {"type": "string", "description": "The prompt to run on the fetched content"},
    }, ["url", "prompt"]),
    ("WebSearch", "Allows Claude to search the web and use the results to inform responses.", {
        "query": {"type": "string", "minLength": 2, "description": "The search query to use"},
        "allowed_domains": {"type": "array", "items": {"type": "string"}},
        "blocked_domains": {"type": "array", "items": {"type": "string"}},
    }, ["query"]),
    ("TodoWrite", "Use this tool to create and manage a structured task list for your current coding session.", {
        "todos": {"type": "array", "items": {"type": "object", "properties": {
            "content": {"type": "string", "minLength": 1},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            "activeForm": {"type": "string", "minLength": 1},
        }, "required": ["content", "status", "activeForm"]}},
    }, ["todos"]),
    ("BashOutput", "Retrieves output from a running or completed background bash shell.", {
        "bash_id": {"type": "string", "description": "The ID of the background shell to retrieve output from"},
    }, ["bash_id"]),
    ("KillShell", "Kills a running background bash shell by its ID.", {
        "shell_id": {"type": "string", "description": "The ID of the background shell to kill"},
    }, ["shell_id"]),
]  # fmt: skip


def tool_id(n: int) -> str:
    """A stable, realistic-looking Anthropic tool-use id."""
    return "toolu_01" + "".join(c for c in digest(f"burndown-{n}", 44) if c.isalnum())[:22]


def png(width: int, height: int) -> bytes:
    """A tiny, valid, deterministic PNG (a grey gradient), standing in for the chart screenshot."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes((x * 255 // max(width - 1, 1)) for x in range(width)) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def p(rel: str) -> str:
    return f"{ROOT}/{rel}"


# A result: (content, is_error); content None means the client sent no result for the call.
Result = tuple[Any, bool] | None


class Session:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.n = 0
        self.thoughts = 0

    def user(self, *blocks: str | dict[str, Any]) -> None:
        content = [anthropic.text(b) if isinstance(b, str) else b for b in blocks]
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"].extend(content)  # Claude Code sends one user turn per round
        else:
            self.messages.append({"role": "user", "content": content})

    def thinking(self, text: str) -> dict[str, Any]:
        self.thoughts += 1
        return {"type": "thinking", "thinking": text, "signature": "Eq" + digest(f"sig-{self.thoughts}", 170) + "=="}

    def assistant(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": [anthropic.text(text)]})

    def tools(
        self,
        think: str | None,
        text: str | None,
        *calls: tuple[str, dict[str, Any], Result],
        after: tuple[str, ...] = (),
    ) -> list[str]:
        """One assistant tool round and the user turn with its results (and any text blocks after them)."""
        content: list[dict[str, Any]] = []
        if think:
            content.append(self.thinking(think))
        if text:
            content.append(anthropic.text(text))
        ids = []
        for name, args, _ in calls:
            self.n += 1
            ids.append(tool_id(self.n))
            content.append(anthropic.tool_use(ids[-1], name, args))
        self.messages.append({"role": "assistant", "content": content})
        results = []
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            if result is None:
                continue
            body, is_error = result
            # tool_use_id first, as this session was written (anthropic.tool_result puts type first)
            block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": body}
            if is_error:
                block["is_error"] = True
            results.append(block)
        self.user(*results, *after)
        return ids


def ok(content: Any) -> Result:
    return (content, False)


def err(content: str) -> Result:
    return (content, True)


def build() -> dict[str, Any]:
    s = Session()
    s.user(
        CLAUDE_MD,
        f"The burndown chart for sprint 14 is off by a day: BD-107 was closed on Saturday just after midnight "
        f"(late deploy), but the chart counts it as done on Friday. Chart is {PNG_PATH}. Please fix it and add a "
        f"regression test.",
    )
    png_b64 = base64.b64encode(png(24, 12)).decode()
    py_files = "\n".join(
        p(f) for f in ["burndown/__init__.py", "burndown/cli.py", "burndown/dates.py", "burndown/plot.py"]
    ) + "\n" + "\n".join(p(f) for f in ["tests/test_cli.py", "tests/test_dates.py"])  # fmt: skip
    s.tools(
        "The user reports an off-by-one day in the chart. Look at the chart image and the layout first.",
        "I'll look at the chart and the project layout.",
        ("Read", {"file_path": PNG_PATH}, ok([{"type": "image", "source": {"type": "base64", "data": png_b64,
                                                                           "media_type": "image/png"}}])),
        ("Glob", {"pattern": "**/*.py", "path": ROOT}, ok(py_files)),
    )  # fmt: skip
    todos = [
        ("Find where status-change dates are bucketed into days", "in_progress", "Finding the day bucketing"),
        ("Fix the day calculation for the team timezone", "pending", "Fixing the day calculation"),
        ("Add a regression test for late-evening closes", "pending", "Adding a regression test"),
        ("Re-render sprint 14 and run the test suite", "pending", "Re-rendering and testing"),
    ]
    todo_ack = (
        "Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
        "progress. Please proceed with the current tasks if applicable"
    )
    s.tools(
        None,
        None,
        ("TodoWrite", {"todos": [{"content": c, "status": st, "activeForm": a} for c, st, a in todos]}, ok(todo_ack)),
    )
    s.tools(
        "The last point drops too early. Dates come from closed_at timestamps; look at dates.py.",
        None,
        ("Read", {"file_path": p("burndown/dates.py")}, ok(numbered(DATES_PY))),
    )
    grep_hits = "\n".join(
        [
            f"{p('burndown/dates.py')}:9:    return moment.astimezone(timezone.utc).date()",
            f"{p('burndown/plot.py')}:8:from burndown.dates import day_of, sprint_days",
            f'{p("burndown/plot.py")}:15:        done = day_of(row["closed_at"]) if row["closed_at"] else None',
        ]
    )
    s.tools(
        None,
        "`day_of` converts every timestamp to UTC before taking the date. Let me find every caller.",
        ("Grep", {"pattern": "day_of|astimezone", "path": ROOT, "output_mode": "content", "-n": True},
         ok([{"type": "text", "text": grep_hits}])),
    )  # fmt: skip
    s.tools(
        None,
        None,
        ("Read", {"file_path": p("burndown/plot.py"), "offset": 1, "limit": 30}, ok(numbered(PLOT_PY))),
        ("Read", {"file_path": p("tests/test_dates.py")}, ok([{"type": "text", "text": numbered(OLD_TEST_DATES_PY)}])),
        after=(TODO_REMINDER,),
    )  # fmt: skip
    s.tools(
        None,
        None,
        ("Bash", {"command": "python -m pytest -q tests/test_dates.py", "description": "Run the date tests"},
         ok(".                                                                        [100%]\n1 passed in 0.03s")),
    )  # fmt: skip
    render_cmd = f"python -m burndown render {CSV} --start 2025-11-10 --end 2025-11-21 --out /tmp/s14.png"
    s.tools(
        "Reproduce with the real export before touching code.",
        None,
        (
            "Bash",
            {"command": render_cmd, "description": "Render sprint 14 to a temp file"},
            err(
                "Exit code 1\nTraceback (most recent call last):\n"
                '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
                f'  File "{ROOT}/burndown/__main__.py", line 4, in <module>\n    raise SystemExit(main())\n'
                f'  File "{ROOT}/burndown/plot.py", line 3, in <module>\n    import matplotlib\n'
                "ModuleNotFoundError: No module named 'matplotlib'"
            ),
        ),
    )
    s.tools(
        None,
        "The virtualenv is not active. Let me switch branches to compare with main first.",
        ("Bash", {"command": "git stash && git checkout main", "description": "Stash and switch to main"},
         err(REJECT_MESSAGE)),
        after=("Don't touch git state. The venv is .venv, use that.",),
    )  # fmt: skip
    venv_render = ".venv/bin/" + render_cmd
    s.tools(
        None,
        "Understood, no git changes. Using the project venv.",
        ("Bash", {"command": venv_render, "description": "Render sprint 14 with the venv"},
         ok("wrote /tmp/s14.png (38 issues)")),
    )  # fmt: skip
    csv_rows = "\n".join(
        [
            "key,points,closed_at",
            "BD-101,3,2025-11-12T10:02:11+01:00",
            "BD-104,5,2025-11-19T16:40:00+01:00",
            "BD-107,2,2025-11-22T00:30:00+01:00",
            "BD-108,8,",
        ]
    )
    s.tools(
        None,
        None,
        ("Bash", {"command": f"grep -E 'BD-10[1478]|^key' {CSV}", "description": "Show a few rows of the export"},
         ok(csv_rows)),
    )  # fmt: skip
    s.tools(
        "BD-107 closed 00:30 +01:00 on Saturday, which is 23:30 UTC on Friday: day_of buckets it on Friday. "
        "Check how to take the date in the team timezone.",
        None,
        (
            "WebSearch",
            {"query": "python datetime astimezone date local day vs utc", "allowed_domains": ["docs.python.org"]},
            ok(
                'Web search results for query: "python datetime astimezone date local day vs utc"\n\n'
                'Links: [{"title":"datetime \u2014 Basic date and time types","url":"https://docs.python.org/3/library/'
                'datetime.html"}]\n\nastimezone(tz) converts an aware datetime to tz; .date() then gives the '
                "calendar day in that zone, so a late-evening local time can fall on the next UTC day."
            ),
        ),
    )
    s.tools(
        None,
        None,
        (
            "WebFetch",
            {
                "url": "https://docs.python.org/3/library/zoneinfo.html",
                "prompt": "How do I get a ZoneInfo for Europe/Berlin and is it in the standard library?",
            },
            ok(
                "zoneinfo is in the standard library since Python 3.9: ZoneInfo('Europe/Berlin') gives the IANA "
                "zone, including daylight saving transitions. On systems without tz data, install the tzdata package."
            ),
        ),
    )
    s.tools(
        None,
        "I'll read days in the team timezone.",
        (
            "Edit",
            {
                "file_path": p("burndown/dates.py"),
                "old_string": "from datetime import date, datetime, timezone\n\nTEAM_TZ",
                "new_string": "from datetime import date, datetime\nfrom zoneinfo import ZoneInfo\n\n"
                'TEAM_TZ = ZoneInfo("Europe/Berlin")',
            },
            err(
                "<tool_use_error>String to replace not found in file.\nString: from datetime import date, datetime, "
                "timezone\n\nTEAM_TZ</tool_use_error>"
            ),
        ),
    )
    new_head = (
        'from datetime import date, datetime\nfrom zoneinfo import ZoneInfo\n\nTEAM_TZ = ZoneInfo("Europe/Berlin")'
    )
    s.tools(
        None,
        None,
        (
            "Edit",
            {
                "file_path": p("burndown/dates.py"),
                "old_string": "from datetime import date, datetime, timezone",
                "new_string": new_head,
            },
            ok(edited(p("burndown/dates.py"), new_head, 3)),
        ),
    )
    s.tools(
        None,
        None,
        (
            "Edit",
            {
                "file_path": p("burndown/dates.py"),
                "old_string": "    return moment.astimezone(timezone.utc).date()",
                "new_string": "    return moment.astimezone(TEAM_TZ).date()",
            },
            ok(edited(p("burndown/dates.py"), "    return moment.astimezone(TEAM_TZ).date()", 12)),
        ),
        after=(MODIFIED_REMINDER.format(path=p("burndown/dates.py")),),
    )
    s.tools(
        None,
        "Now the regression test.",
        (
            "Write",
            {"file_path": p("tests/test_dates.py"), "content": TEST_DATES_PY},
            ok(f"File created successfully at: {p('tests/test_dates.py')}"),
        ),
    )
    s.tools(
        None,
        None,
        (
            "Bash",
            {"command": ".venv/bin/python -m pytest -q tests/test_dates.py", "description": "Run the date tests"},
            err(
                "Exit code 1\n.F                                                                       [100%]\n"
                "=================================== FAILURES ===================================\n"
                "___________________ test_utc_stamp_is_read_in_team_time ____________________\n"
                "tests/test_dates.py:13: in test_utc_stamp_is_read_in_team_time\n"
                "E   zoneinfo._common.ZoneInfoNotFoundError: 'No time zone found with key Europe/Berlin'\n"
                "FAILED tests/test_dates.py::test_utc_stamp_is_read_in_team_time\n1 failed, 1 passed in 0.09s"
            ),
        ),
    )
    s.tools(
        "tzdata missing in the venv; the user said no new dependencies without asking. Serve the chart to show "
        "the user meanwhile.",
        "The system has no tz database and the venv lacks `tzdata`. I'll serve the chart so you can look.",
        (
            "Bash",
            {"command": "python -m http.server 8123 -d /tmp", "description": "Serve it", "run_in_background": True},
            ok(
                f"Command running in background with ID: {BG_ID}. Output is being written to: "
                f"/tmp/claude-1000/-home-dev-src-burndown/tasks/{BG_ID}.output"
            ),
        ),
    )  # fmt: skip
    s.tools(
        None,
        None,
        (
            "BashOutput",
            {"bash_id": BG_ID},
            ok(
                "<status>running</status>\n\n<stderr>\nServing HTTP on 0.0.0.0 port 8123 (http://0.0.0.0:8123/) ...\n"
                "</stderr>\n\n<timestamp>2025-11-24T09:41:07.311Z</timestamp>"
            ),
        ),
    )
    # The user pressed Esc while this ran; this (older) client sent no tool_result for it.
    s.tools(
        None,
        "Let me run the whole suite to see what else depends on the tz database.",
        ("Bash", {"command": ".venv/bin/python -m pytest -q", "description": "Run all tests", "timeout": 600000}, None),
        after=(INTERRUPTED, "tzdata is fine to add as a dev dependency. Install it and use it."),
    )  # fmt: skip
    s.tools(
        None,
        None,
        (
            "Bash",
            {"command": ".venv/bin/pip install -q tzdata", "description": "Install tzdata into the venv"},
            ok("(Bash completed with no output)"),
        ),
    )
    s.tools(
        None,
        None,
        (
            "Bash",
            {
                "command": f".venv/bin/python -m burndown render {ROOT}/data/sprint15.csv --start 2025-11-24 "
                "--end 2025-12-05",
                "description": "Render next sprint as a smoke test",
            },
            err(
                "Exit code 2\nusage: burndown render [-h] --start START --end END [--out OUT] csv\n"
                f"burndown render: error: argument csv: can't open '{ROOT}/data/sprint15.csv': [Errno 2] No such "
                "file or directory"
            ),
        ),
    )
    s.tools(
        "sprint15 does not exist yet, fine. Run the date tests again.",
        None,
        ("Bash", {"command": ".venv/bin/python -m pytest -q tests/test_dates.py", "description": "Run the date tests"},
         ok("..                                                                       [100%]\n2 passed in 0.05s")),
    )  # fmt: skip
    s.tools(
        None,
        None,
        ("Bash", {"command": venv_render, "description": "Re-render sprint 14"}, ok("wrote /tmp/s14.png (38 issues)")),
        ("Read", {"file_path": p("burndown/cli.py")}, ok(numbered(CLI_PY))),
    )
    s.assistant(
        "Fixed: `day_of` now takes the calendar day in the team timezone (Europe/Berlin) instead of UTC, so "
        "BD-107 (closed Saturday 00:30) counts on Saturday. Added `tests/test_dates.py` cases for late-evening "
        "closes and installed `tzdata` in the venv. The re-rendered chart is at /tmp/s14.png."
    )
    s.user("Looks right now. Stop the server and show me the diff stat and status.")
    # The pending round: the newest assistant tool turn, followed only by its results (and a reminder).
    s.tools(
        "Kill the background server, then show git diff --stat and git status.",
        "Stopping the server and collecting the summary.",
        ("KillShell", {"shell_id": BG_ID}, ok(f"Successfully killed shell: {BG_ID} (python -m http.server 8123 -d "
                                             "/tmp)")),
        ("Bash", {"command": "git diff --stat", "description": "Show the diff stat"},
         ok(" burndown/dates.py   |  6 ++++--\n tests/test_dates.py | 13 ++++++++++---\n 2 files changed, 14 "
            "insertions(+), 5 deletions(-)")),
        ("Bash", {"command": "git status --short", "description": "Show the working tree status"},
         ok(" M burndown/dates.py\n M tests/test_dates.py")),
        after=(TODO_REMINDER,),
    )  # fmt: skip
    s.messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    tools = [
        {"name": name, "description": description, "input_schema": {
            "type": "object", "properties": props, "required": required, "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#"}}
        for name, description, props, required in TOOLS_SPEC
    ]  # fmt: skip
    return {
        "model": "claude-sonnet-4-5-20250929",
        "messages": s.messages,
        "system": [
            {"type": "text", "text": SYSTEM_INTRO, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": SYSTEM.strip(), "cache_control": {"type": "ephemeral"}},
        ],
        "tools": tools,
        "metadata": {"user_id": "user_" + hashlib.sha256(b"dev").hexdigest() + "_account__session_" + "4c1e" * 8},
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "stream": True,
    }


def render() -> bytes:
    return encode(build())
