"""Step kinds: realistic arguments become the right step body; what cannot be stated is refused."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from native_bridge.core.encoder import encode_step, step_json
from native_bridge.core.history import ToolResult
from native_bridge.core.kinds import KINDS, Refusal, path_uri
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS


def kind_of(name: str):
    return KINDS[DEFAULT_TOOL_KINDS[name]]


def result(text: str | None, is_error: bool | None = None, exit_code: int | None = None) -> ToolResult:
    return ToolResult(pos=1, turn=1, call_id="c1", text=text, is_error=is_error, exit_code=exit_code)


# The client whose tool each default name is (the first client named beside it in kinds.py):
# results are read in that client's words (truth rules 3 and 5).
CLIENT_OF: dict[str, str | None] = {
    "Read": "claude-code", "Bash": "claude-code", "PowerShell": "claude-code", "Glob": "claude-code",
    "Grep": "claude-code", "Write": "claude-code", "LS": "claude-code", "Edit": "claude-code",
    "MultiEdit": "claude-code", "WebSearch": "claude-code", "WebFetch": "claude-code",
    "read_file": "gemini-cli", "run_shell_command": "gemini-cli", "glob": "gemini-cli", "grep_search": "gemini-cli",
    "search_file_content": "gemini-cli", "write_file": "gemini-cli", "list_directory": "gemini-cli",
    "replace": "gemini-cli", "google_web_search": "gemini-cli",
    "shell": "codex", "shell_command": "codex", "exec_command": "codex", "local_shell": "codex", "grep_files": "codex",
    "shell_call": None, "read": "opencode", "bash": "opencode", "grep": "opencode", "write": "opencode",
    "list": "opencode", "edit": "opencode", "multiedit": "opencode", "websearch": "opencode", "webfetch": "opencode",
    "view": "crush", "ls": "crush", "fetch": "crush",
    "execute_command": "cline", "write_to_file": "cline", "list_files": "cline", "search_files": "cline",
    "web_search": "cline", "web_fetch": "cline", "run_commands": "cline", "Shell": "kimi-cli",
    "terminal": "zed", "find_path": "zed", "execute_bash": "openhands", "developer__shell": "goose",
    "run_terminal_command": "continue", "file_glob_search": "continue", "create_new_file": "continue",
    "single_find_and_replace": "continue", "multi_edit": "continue", "search_web": "continue",
    "fetch_url_content": "continue", "run_terminal_cmd": None,
    "view_file": None, "run_command": None, "find": None, "grep_search_v2": None, "list_dir": None,
    "read_url_content": None,
}  # fmt: skip
_DEFAULT = object()


def translate(
    name: str, args: dict[str, Any] | None, text: str | None, is_error: bool | None = None, client: Any = _DEFAULT
):
    kind = kind_of(name)
    inputs = kind.inputs(args)
    observed = kind.observe(result(text, is_error), inputs, CLIENT_OF.get(name) if client is _DEFAULT else client)
    return inputs, observed


def step(
    name: str, args: dict[str, Any] | None, text: str | None, is_error: bool | None = None, client: Any = _DEFAULT
):
    kind = kind_of(name)
    inputs, observed = translate(name, args, text, is_error, client)
    return encode_step(kind, inputs, observed)


def body_json(
    name: str, args: dict[str, Any] | None, text: str | None, is_error: bool | None = None, client: Any = _DEFAULT
):
    doc = step_json(step(name, args, text, is_error, client))
    assert doc["status"] == "CORTEX_STEP_STATUS_DONE"
    kind = kind_of(name)
    assert doc["type"] == kind.step_type
    (key,) = set(doc) - {"type", "status"}
    return key, doc[key]


# name -> (arguments, result text, expected proto3 JSON body)
CASES: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "Read": (
        {"file_path": "/repo/src/app.py", "offset": 10, "limit": 50},
        "    10\tdef main():\n    11\t    pass",
        {
            "absolutePathUri": "file:///repo/src/app.py",
            "offset": 10,
            "limit": 50,
            "content": "    10\tdef main():\n    11\t    pass",
        },
    ),
    "read_file": (
        {"absolute_path": "/repo/README.md"},
        "# Title",
        {"absolutePathUri": "file:///repo/README.md", "content": "# Title"},
    ),
    "view_file": (
        {"AbsolutePath": "C:\\repo\\main.go", "toolSummary": "read main"},
        "package main",
        {"absolutePathUri": "file:///C:/repo/main.go", "content": "package main"},
    ),
    "Bash": (
        {"command": "ls -la /tmp", "description": "List files", "timeout": 120000},
        "total 0",
        {"commandLine": "ls -la /tmp", "blocking": True, "combinedOutput": {"full": "total 0"}},
    ),
    "shell": (
        {"command": ["bash", "-lc", "cargo test"], "workdir": "/repo", "timeout_ms": 600000},
        '{"output": "test result: FAILED", "metadata": {"exit_code": 101, "duration_seconds": 3.2}}',
        {
            "commandLine": "bash -lc 'cargo test'",
            "cwd": "/repo",
            "blocking": True,
            "exitCode": 101,
            "combinedOutput": {"full": "test result: FAILED"},
        },
    ),
    "run_command": (  # Cascade's own tool, no client named: every known frame counts (issue 17)
        {"CommandLine": "npm test", "Cwd": "/repo", "Blocking": False, "SafeToAutoRun": True},
        "Exit code: 0\nOutput:\nok",
        {
            "commandLine": "npm test",
            "cwd": "/repo",
            "combinedOutput": {"full": "Exit code: 0\nOutput:\nok"},
            "exitCode": 0,
        },
    ),
    "shell_command": (
        {"command": "git status", "workdir": "/repo"},
        "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nOn branch main",
        {
            "commandLine": "git status",
            "cwd": "/repo",
            "blocking": True,
            "exitCode": 0,
            "combinedOutput": {"full": "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nOn branch main"},
        },
    ),
    "exec_command": (
        {"cmd": "pytest -q", "workdir": "/repo", "yield_time_ms": 10000, "max_output_tokens": 6000},
        "Chunk ID: 1a2b\nWall time: 2.0 seconds\nProcess exited with code 1\n"
        "Original token count: 3\nOutput:\n1 failed",
        {
            "commandLine": "pytest -q",
            "cwd": "/repo",
            "blocking": True,
            "exitCode": 1,
            "combinedOutput": {
                "full": "Chunk ID: 1a2b\nWall time: 2.0 seconds\nProcess exited with code 1\n"
                "Original token count: 3\nOutput:\n1 failed"
            },
        },
    ),
    "local_shell": (
        {"command": ["ls", "-1"], "workdir": "/repo"},
        "a\nb",
        {"commandLine": "ls -1", "cwd": "/repo", "blocking": True, "combinedOutput": {"full": "a\nb"}},
    ),
    "shell_call": (
        {"commands": ["ls -la"], "timeout_ms": 1000, "max_output_length": 4096},
        "total 0",
        {"commandLine": "ls -la", "blocking": True, "combinedOutput": {"full": "total 0"}},
    ),
    "Glob": (
        {"pattern": "**/*.py", "path": "/repo"},
        "/repo/a.py\n/repo/pkg/b.py",
        {"pattern": "**/*.py", "searchDirectory": "/repo", "rawOutput": "/repo/a.py\n/repo/pkg/b.py"},
    ),
    "find": (
        {"Pattern": "*.md", "SearchDirectory": "/repo"},
        "README.md",
        {"pattern": "*.md", "searchDirectory": "/repo", "rawOutput": "README.md"},
    ),
    "Grep": (
        {
            "pattern": "def main",
            "path": "/repo",
            "glob": "*.py",
            "output_mode": "content",
            "-n": True,
            "-C": 2,
            "-i": True,
            "type": "py",
            "head_limit": 20,
            "multiline": True,
        },
        "/repo/a.py:3:def main():",
        {
            "pattern": "def main",
            "path": "/repo",
            "glob": "*.py",
            "outputMode": "content",
            "linesBoth": 2,
            "caseInsensitive": True,
            "type": "py",
            "headLimit": 20,
            "multiline": True,
            "rawOutput": "/repo/a.py:3:def main():",
        },
    ),
    "grep_search": (
        {"Query": "TODO", "SearchPath": "/repo", "Includes": ["*.py"], "MatchPerLine": True, "IsRegex": True},
        "a.py:1: # TODO",
        {"pattern": "TODO", "path": "/repo", "glob": "*.py", "rawOutput": "a.py:1: # TODO"},
    ),
    "grep_search_v2": (
        {"pattern": "x+", "path": "/repo", "-A": 1, "-B": 3},
        "a.py:2:xx",
        {"pattern": "x+", "path": "/repo", "linesAfter": 1, "linesBefore": 3, "rawOutput": "a.py:2:xx"},
    ),
    "Write": (
        {"file_path": "/repo/new.txt", "content": "hello\n"},
        "File created successfully at: /repo/new.txt",
        {"targetFileUri": "file:///repo/new.txt", "codeContent": ["hello\n"], "fileCreated": True},
    ),
    "write_to_file": (
        {"TargetFile": "/repo/x.py", "CodeContent": "print(1)", "EmptyFile": False},
        "The file /repo/x.py has been updated.",
        {"targetFileUri": "file:///repo/x.py", "codeContent": ["print(1)"]},
    ),
    "LS": (
        {"path": "/repo"},
        "a.py\nb.py\nsrc/",
        {"directoryPathUri": "file:///repo", "children": ["a.py", "b.py", "src/"]},
    ),
    "list_dir": (
        {"target_directory": "/repo/src"},
        "- main.py\n- util.py\n",
        {"directoryPathUri": "file:///repo/src", "children": ["main.py", "util.py"]},
    ),
    "list_directory": (
        {"path": "/repo/docs"},
        "index.md",
        {"directoryPathUri": "file:///repo/docs", "children": ["index.md"]},
    ),
    "Edit": (
        {"file_path": "/repo/a.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": False},
        "The file /repo/a.py has been updated.",
        {
            "actionSpec": {
                "command": {
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.py"},
                    "replacementChunks": [{"targetContent": "x = 1", "replacementContent": "x = 2"}],
                }
            }
        },
    ),
    "MultiEdit": (
        {
            "file_path": "/repo/a.py",
            "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "d", "replace_all": True},
            ],
        },
        "Applied 2 edits to /repo/a.py",
        {
            "actionSpec": {
                "command": {
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.py"},
                    "replacementChunks": [
                        {"targetContent": "a", "replacementContent": "b"},
                        {"targetContent": "c", "replacementContent": "d", "allowMultiple": True},
                    ],
                }
            }
        },
    ),
    "WebSearch": (
        {"query": "python 3.13 release", "allowed_domains": ["python.org"]},
        "Python 3.13 was released on 2024-10-07.",
        {"query": "python 3.13 release", "domain": "python.org", "summary": "Python 3.13 was released on 2024-10-07."},
    ),
    "web_search": (
        {"query": "mitmproxy addons"},
        "Addons are Python classes.",
        {"query": "mitmproxy addons", "summary": "Addons are Python classes."},
    ),
    "WebFetch": (
        {"url": "https://example.com/", "prompt": "Summarize the page"},
        "An example domain.",
        {"url": "https://example.com/", "webDocument": {"text": "An example domain."}},
    ),
}


def run(command: str, exit_code: int | None, full: str, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"commandLine": command, "blocking": True, **more, "combinedOutput": {"full": full}}
    if exit_code is not None:
        body["exitCode"] = exit_code
    return body


GEMINI_OK = (
    "Command: ls -la\nDirectory: /repo\nOutput: total 0\nError: (none)\nExit Code: 0\n"
    "Signal: 0\nBackground PIDs: (none)\nProcess Group PGID: 48230"
)
OPENHANDS_OK = (
    "1 passed in 0.01s\n[The command completed with exit code 0.]\n"
    "[Current working directory: /workspace]\n[Command finished with exit code 0]"
)
ZED_FAILED = 'Command "cargo test" failed with exit code 101.\n\n```\nerror[E0425]\n```'

# Other clients' tool names (rules/tool_names.py names the client of each).
CASES |= {
    "PowerShell": (
        {"command": "Get-ChildItem C:\\repo", "description": "List files"},
        "Mode  Name\n----  ----\n-a--  a.txt",
        run("Get-ChildItem C:\\repo", None, "Mode  Name\n----  ----\n-a--  a.txt"),
    ),
    "bash": (
        {"command": "npm test", "description": "Run tests", "timeout": 120000},
        "PASS src/a.test.ts",
        run("npm test", None, "PASS src/a.test.ts"),
    ),
    "developer__shell": ({"command": "cargo build"}, "Finished dev", run("cargo build", None, "Finished dev")),
    "execute_bash": (
        {"command": "pytest -q", "is_input": "false", "security_risk": "LOW", "timeout": 60},
        OPENHANDS_OK,
        run("pytest -q", 0, OPENHANDS_OK),
    ),
    "execute_command": (
        {"command": "npm run build", "requires_approval": False},
        "Command failed with exit code 1.\nOutput:\nerror TS2304",
        run("npm run build", 1, "Command failed with exit code 1.\nOutput:\nerror TS2304"),
    ),
    "run_commands": (
        {"commands": ["npm test"]},
        '[{"query": "npm test", "result": "ok", "success": true}]',
        run("npm test", 0, '[{"query": "npm test", "result": "ok", "success": true}]'),
    ),
    "Shell": (  # Kimi CLI 1.51.0, as captured
        {"command": "ls /nope", "timeout": 60},
        "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access '/nope'",
        run("ls /nope", 2, "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access '/nope'"),
    ),
    "run_shell_command": (
        {"command": "ls -la", "description": "List", "dir_path": "/repo"},
        GEMINI_OK,
        run("ls -la", 0, GEMINI_OK, cwd="/repo"),
    ),
    "run_terminal_cmd": (
        {"command": "git status", "is_background": False, "explanation": "check"},
        "On branch main",
        run("git status", None, "On branch main"),
    ),
    "run_terminal_command": (
        {"command": "make", "waitForCompletion": True},
        "make: *** [all] Error 2\n\n[Status: Command failed with exit code 2]",
        run("make", 2, "make: *** [all] Error 2\n\n[Status: Command failed with exit code 2]"),
    ),
    "terminal": ({"command": "cargo test", "cd": "/repo"}, ZED_FAILED, run("cargo test", 101, ZED_FAILED, cwd="/repo")),
    "read": (
        {"filePath": "/repo/a.ts", "offset": 0, "limit": 2000},
        "00001| export {}",
        {"absolutePathUri": "file:///repo/a.ts", "limit": 2000, "content": "00001| export {}"},
    ),
    "view": (
        {"file_path": "/repo/main.go", "offset": 5, "limit": 100},
        "package main",
        {"absolutePathUri": "file:///repo/main.go", "offset": 5, "limit": 100, "content": "package main"},
    ),
    "glob": (
        {"pattern": "**/*.ts", "dir_path": "/repo", "respect_git_ignore": True},
        "/repo/a.ts",
        {"pattern": "**/*.ts", "searchDirectory": "/repo", "rawOutput": "/repo/a.ts"},
    ),
    "find_path": ({"glob": "**/*.rs", "offset": 0}, "src/main.rs", {"pattern": "**/*.rs", "rawOutput": "src/main.rs"}),
    "file_glob_search": ({"pattern": "**/*.py"}, "a.py", {"pattern": "**/*.py", "rawOutput": "a.py"}),
    "grep": (
        {"pattern": "TODO", "path": "/repo", "include": "*.ts"},
        "/repo/a.ts:1: // TODO",
        {"pattern": "TODO", "path": "/repo", "glob": "*.ts", "rawOutput": "/repo/a.ts:1: // TODO"},
    ),
    "grep_files": (
        {"pattern": "fn main", "include": "*.rs", "path": "/repo"},
        "/repo/src/main.rs",
        {"pattern": "fn main", "path": "/repo", "glob": "*.rs", "rawOutput": "/repo/src/main.rs"},
    ),
    "search_file_content": (
        {"pattern": "foo", "dir_path": "/repo", "include": "*.py"},
        "a.py:3: foo()",
        {"pattern": "foo", "path": "/repo", "glob": "*.py", "rawOutput": "a.py:3: foo()"},
    ),
    "search_files": (
        {"path": "/repo", "regex": "TODO", "file_pattern": "*.ts"},
        "Found 1 result.",
        {"pattern": "TODO", "path": "/repo", "glob": "*.ts", "rawOutput": "Found 1 result."},
    ),
    "create_new_file": (
        {"filepath": "/repo/new.py", "contents": "x = 1\n"},
        "File created successfully",
        {"targetFileUri": "file:///repo/new.py", "codeContent": ["x = 1\n"], "fileCreated": True},
    ),
    "write": (
        {"filePath": "/repo/a.ts", "content": "export {}"},
        "Wrote file successfully.",
        {"targetFileUri": "file:///repo/a.ts", "codeContent": ["export {}"]},
    ),
    "write_file": (
        {"file_path": "/repo/b.md", "content": "# B"},
        "Successfully created and wrote to new file: /repo/b.md.",
        {"targetFileUri": "file:///repo/b.md", "codeContent": ["# B"]},
    ),
    "list": (
        {"path": "/repo", "ignore": []},
        "a.ts\nb.ts",
        {"directoryPathUri": "file:///repo", "children": ["a.ts", "b.ts"]},
    ),
    "ls": ({"path": "/repo"}, "- a.go\n- b.go", {"directoryPathUri": "file:///repo", "children": ["a.go", "b.go"]}),
    "list_files": (
        {"path": "/repo", "recursive": False},
        "src/\nREADME.md",
        {"directoryPathUri": "file:///repo", "children": ["src/", "README.md"]},
    ),
    "edit": (
        {"filePath": "/repo/a.ts", "oldString": "a", "newString": "b", "replaceAll": True},
        "Edit applied successfully.",
        {
            "actionSpec": {
                "command": {
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.ts"},
                    "replacementChunks": [{"targetContent": "a", "replacementContent": "b", "allowMultiple": True}],
                }
            }
        },
    ),
    "multiedit": (
        {"file_path": "/repo/a.go", "edits": [{"old_string": "a", "new_string": "b", "replace_all": False}]},
        "Applied 1 edit",
        {
            "actionSpec": {
                "command": {
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.go"},
                    "replacementChunks": [{"targetContent": "a", "replacementContent": "b"}],
                }
            }
        },
    ),
    "replace": (
        {
            "file_path": "/repo/a.py",
            "old_string": "x = 1",
            "new_string": "x = 2",
            "instruction": "bump x",
            "expected_replacements": 1,
        },
        "Successfully modified file: /repo/a.py (1 replacements).",
        {
            "actionSpec": {
                "command": {
                    "instruction": "bump x",
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.py"},
                    "replacementChunks": [{"targetContent": "x = 1", "replacementContent": "x = 2"}],
                }
            }
        },
    ),
    "single_find_and_replace": (
        {"filepath": "/repo/a.py", "old_string": "x", "new_string": "y", "replace_all": False},
        "ok",
        {
            "actionSpec": {
                "command": {
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.py"},
                    "replacementChunks": [{"targetContent": "x", "replacementContent": "y"}],
                }
            }
        },
    ),
    "multi_edit": (
        {"filepath": "/repo/a.py", "edits": [{"old_string": "x", "new_string": "y"}]},
        "ok",
        {
            "actionSpec": {
                "command": {
                    "isEdit": True,
                    "file": {"absoluteUri": "file:///repo/a.py"},
                    "replacementChunks": [{"targetContent": "x", "replacementContent": "y"}],
                }
            }
        },
    ),
    "google_web_search": (
        {"query": "rust 2024"},
        "Rust 2024 shipped.",
        {"query": "rust 2024", "summary": "Rust 2024 shipped."},
    ),
    "search_web": ({"query": "zig"}, "Zig 0.13", {"query": "zig", "summary": "Zig 0.13"}),
    "websearch": ({"query": "bun"}, "Bun 1.2", {"query": "bun", "summary": "Bun 1.2"}),
    "webfetch": (
        {"url": "https://example.com/a", "format": "markdown"},
        "# A",
        {"url": "https://example.com/a", "webDocument": {"text": "# A"}},
    ),
    "fetch": (
        {"url": "https://example.com/b"},
        "B",
        {"url": "https://example.com/b", "webDocument": {"text": "B"}},
    ),
    "fetch_url_content": (
        {"url": "https://example.com/c"},
        "C",
        {"url": "https://example.com/c", "webDocument": {"text": "C"}},
    ),
    "web_fetch": (
        {"url": "https://example.com/d"},
        "D",
        {"url": "https://example.com/d", "webDocument": {"text": "D"}},
    ),
    "read_url_content": (
        {"Url": "https://example.com/e"},
        "E",
        {"url": "https://example.com/e", "webDocument": {"text": "E"}},
    ),
}


JSON_KEYS = {
    "view_file": "viewFile",
    "run_command": "runCommand",
    "find": "find",
    "grep_search_v2": "grepSearchV2",
    "write_to_file": "writeToFile",
    "list_directory": "listDirectory",
    "propose_code": "proposeCode",
    "search_web": "searchWeb",
    "read_url_content": "readUrlContent",
}


def test_every_default_tool_name_has_a_case() -> None:
    assert set(CASES) == set(DEFAULT_TOOL_KINDS)


# The fields a step states about the result (the rest state the call's inputs).
RESULT_KEYS = {
    *("content", "rawOutput", "children", "fileCreated", "summary", "webDocument", "combinedOutput", "exitCode"),
}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w.title() for w in rest)


@pytest.mark.parametrize("name", sorted(CASES))
def test_realistic_arguments_translate(name: str) -> None:
    args, text, expected = CASES[name]
    kind = DEFAULT_TOOL_KINDS[name]
    if kind == "run_command":  # a shell result is read in its client's words: the whole body
        key, body = body_json(name, args, text)
        assert key == JSON_KEYS[kind]
        assert body == expected
        return
    # A non-shell result needs the client's own words for success (test_kinds_evidence.py):
    # here only the call's arguments are checked.
    inputs = step_json(encode_step(kind_of(name), kind_of(name).inputs(args), {}))[JSON_KEYS[kind]]
    assert inputs == {k: v for k, v in expected.items() if k not in RESULT_KEYS}


def test_empty_unknown_arguments_are_harmless() -> None:
    assert kind_of("LS").inputs({"path": "/repo", "ignore": []}) == {"directory_path_uri": "file:///repo"}
    inputs, _ = translate("Bash", {"command": "ls", "run_in_background": False}, "a")
    assert inputs["command_line"] == "ls"


def test_ignorable_arguments_do_not_refuse() -> None:
    inputs, _ = translate(
        "Bash", {"command": "make", "description": "build", "timeout": 5, "dangerouslyDisableSandbox": True}, "ok"
    )
    assert inputs == {"command_line": "make", "blocking": True}


# ---- run_command observation (truth rules 3 and 4) --------------------------------


def test_run_command_output_only_in_combined_output() -> None:
    s = step("shell_command", {"command": "ls /nope"}, "Exit code: 2\nOutput:\nls: cannot access /nope")
    rc = s.run_command
    assert rc.combined_output.full == "Exit code: 2\nOutput:\nls: cannot access /nope"
    assert rc.stdout == ""
    assert rc.stderr == ""
    doc = step_json(s)["runCommand"]
    assert "stdout" not in doc
    assert "stderr" not in doc
    assert doc["exitCode"] == 2


def test_run_command_exit_code_absent_when_unknown() -> None:
    s = step("Bash", {"command": "echo hi"}, "hi")
    assert not s.run_command.HasField("exit_code")
    assert "exitCode" not in step_json(s)["runCommand"]


def test_run_command_exit_code_zero_is_present() -> None:
    s = step("shell_command", {"command": "true"}, "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n")
    assert s.run_command.HasField("exit_code")
    assert step_json(s)["runCommand"]["exitCode"] == 0


@pytest.mark.parametrize(
    ("name", "text", "is_error", "expected"),
    [
        ("Bash", "Permission denied", True, 1),
        ("Bash", "Exit code 2\nno such file", True, 2),
        ("shell", '{"output": "", "metadata": {"exit_code": 7}}', None, 7),
        ("bash", '{"returncode": 2, "output": "x"}', None, 2),  # mini-swe-agent (client below)
    ],
)
def test_run_command_failure_stays_failure(name: str, text: str, is_error: bool | None, expected: int) -> None:
    client = "mini-swe-agent" if text.startswith('{"returncode"') else _DEFAULT
    s = step(name, {"command": "false"}, text, is_error, client)
    assert s.run_command.exit_code == expected


@pytest.mark.parametrize("client", ["claude-code", "codex", "opencode"])
def test_a_frame_of_another_client_is_no_status_for_a_named_client(client: str) -> None:
    # The program printed a status-like line or JSON; only mini-swe-agent's own wrapper is a status.
    for text in ('{"returncode": 2, "output": "x"}', "done\nExit code: 3"):
        s = step("bash", {"command": "cat status"}, text, None, client)
        assert not s.run_command.HasField("exit_code"), (client, text)


def test_for_a_client_we_cannot_name_every_frame_counts_at_its_place() -> None:
    for text, code in (('{"returncode": 2, "output": "x"}', 2), ("done\nExit code: 3", 3), ("[tool error] boom", 1)):
        s = step("bash", {"command": "cat status"}, text, None, None)
        assert s.run_command.exit_code == code, text
    s = step("bash", {"command": "cat status"}, "done\nExit code: 3\nmore", None, None)  # inside the output
    assert not s.run_command.HasField("exit_code")


@pytest.mark.parametrize("client", [None, "claude-code", "codex", "opencode"])
def test_a_tool_error_prefix_is_an_error_flag(client: str | None) -> None:
    s = step("bash", {"command": "cat status"}, "[tool error] boom", None, client)
    assert s.run_command.exit_code == 1


def test_exit_code_carried_as_data_wins_over_text() -> None:
    kind = kind_of("shell_call")
    inputs = kind.inputs({"commands": ["make"]})
    assert kind.observe(result("Exit code: 0", exit_code=3), inputs)["exit_code"] == 3


def test_several_commands_in_one_call_refused() -> None:
    with pytest.raises(Refusal, match="several commands"):
        kind_of("shell_call").inputs({"commands": ["cd /repo", "make"]})


def test_codex_json_output_unwrapped_once() -> None:
    _, observed = translate("shell", {"command": ["ls"]}, '{"output": "a\\nb", "metadata": {"exit_code": 0}}')
    assert observed == {"combined_output": {"full": "a\nb"}, "exit_code": 0}


def test_json_with_other_keys_is_kept_whole() -> None:
    text = '{"output": "a", "stderr": "b", "metadata": {"exit_code": 0}}'
    _, observed = translate("shell", {"command": ["ls"]}, text)
    assert observed["combined_output"] == {"full": text}


# ---- refusals (truth rule 5) --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("Read", {"file_path": "src/app.py"}),
        ("Read", {"file_path": "./app.py"}),
        ("read_file", {"path": "README.md"}),
        ("Write", {"file_path": "new.txt", "content": "x"}),
        ("LS", {"path": "."}),
        ("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": "a.py", "edits": [{"old_string": "a", "new_string": "b"}]}),
    ],
)
def test_relative_paths_refused(name: str, args: dict[str, Any]) -> None:
    with pytest.raises(Refusal, match="not absolute"):
        kind_of(name).inputs(args)


def test_path_uri() -> None:
    assert path_uri("/a b/c") == "file:///a%20b/c"
    assert path_uri("/a//b/./c/") == "file:///a/b/c"  # normalised as pathlib does
    assert path_uri("file:///x") == "file:///x"
    assert path_uri("D:/w/x.txt") == "file:///D:/w/x.txt"
    with pytest.raises(Refusal):
        path_uri("x/y")


# Parts that pathlib normalises away or keeps, and characters a URI must quote.
_PART = st.sampled_from(["", ".", "..", "a", "b c", "%41", "?#", "é", "日本", "~user", "x.py", ";=&+$,"])


@given(st.lists(_PART, min_size=1, max_size=6), st.booleans(), st.integers(1, 3))
def test_a_posix_path_becomes_the_uri_pathlib_makes(parts: list[str], trailing: bool, slashes: int) -> None:
    path = "/" * slashes + "/".join(parts) + ("/" if trailing else "")
    assert path_uri(path) == PurePosixPath(path).as_uri()


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("LS", {"path": "/repo", "ignore": ["*.pyc"]}),
        ("WebSearch", {"query": "q", "blocked_domains": ["spam.com"]}),
        ("Glob", {"pattern": "*.py", "exclude": "tests"}),
        ("Read", {"file_path": "/repo/a.pdf", "pages": "1-3"}),
        ("Bash", {"command": "ls", "env": {"A": "1"}}),
        ("Edit", {"file_path": "/repo/a.py", "old_string": "a", "new_string": "b", "line": 3}),
        ("MultiEdit", {"file_path": "/repo/a.py", "edits": [{"old_string": "a", "new_string": "b", "regex": True}]}),
        ("Bash", {"command": "ls", "cmd": "rm -rf /"}),
        ("grep_search", {"Query": "x", "IsRegex": False}),
        ("grep_search", {"Query": "x", "Includes": ["*.py", "*.md"]}),
    ],
)
def test_arguments_that_change_meaning_refused(name: str, args: dict[str, Any]) -> None:
    with pytest.raises(Refusal):
        kind_of(name).inputs(args)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("Read", {}),
        ("Bash", {"command": ""}),
        ("Bash", {"command": ["ls", 3]}),
        ("shell", {"command": []}),
        ("Read", {"file_path": "/a", "offset": -1}),
        ("Read", {"file_path": "/a", "limit": "10"}),
        ("Read", {"file_path": 5}),
        ("Write", {"file_path": "/a"}),
        ("MultiEdit", {"file_path": "/a", "edits": []}),
        ("MultiEdit", {"file_path": "/a", "edits": ["x"]}),
        ("Edit", {"file_path": "/a", "old_string": "x"}),
        ("WebSearch", {"query": "q", "allowed_domains": 5}),
    ],
)
def test_malformed_arguments_refused(name: str, args: dict[str, Any]) -> None:
    with pytest.raises(Refusal):
        kind_of(name).inputs(args)


@pytest.mark.parametrize("name", sorted(DEFAULT_TOOL_KINDS))
def test_undecodable_arguments_refused(name: str) -> None:
    with pytest.raises(Refusal, match="could not be decoded"):
        kind_of(name).inputs(None)


@pytest.mark.parametrize("name", ["Bash", "shell_command"])
def test_run_in_background_refused(name: str) -> None:
    with pytest.raises(Refusal, match="background"):
        kind_of(name).inputs({"command": "npm run dev", "run_in_background": True})


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("exec_command", "Process running with session ID 12\nOutput:\n"),
        ("Bash", "Command running in background with ID: bash_1"),
    ],
)
def test_still_running_command_refused(name: str, text: str) -> None:
    with pytest.raises(Refusal, match="still running"):
        translate(name, {"command": "sleep 100"}, text)


@pytest.mark.parametrize(
    ("text", "is_error"),
    [
        ("<tool_use_error>File does not exist.</tool_use_error>", None),
        ("  <tool_use_error>File does not exist.</tool_use_error>", None),
        ("[tool error] ENOENT: no such file", None),
        ("EISDIR: illegal operation on a directory", True),
    ],
)
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("Read", {"file_path": "/repo/missing.py"}),
        ("Glob", {"pattern": "*.py", "path": "/repo"}),
        ("Grep", {"pattern": "x"}),
        ("LS", {"path": "/repo"}),
        ("Write", {"file_path": "/repo/a", "content": "x"}),
        ("Edit", {"file_path": "/repo/a", "old_string": "a", "new_string": "b"}),
        ("WebSearch", {"query": "q"}),
        ("WebFetch", {"url": "https://example.com"}),
    ],
)
def test_failed_results_refused_where_the_step_cannot_say_so(
    name: str, args: dict[str, Any], text: str, is_error: bool | None
) -> None:
    with pytest.raises(Refusal, match="failed"):
        translate(name, args, text, is_error)


def test_error_words_inside_a_read_are_not_a_failure() -> None:
    text = "     1\tline 1\n     2\t[tool error] in the log\n"
    _, observed = translate("Read", {"file_path": "/repo/log.txt"}, text)
    assert observed == {"content": text}


@pytest.mark.parametrize("name", sorted(CASES))
def test_non_text_results_refused(name: str) -> None:
    args, _, _ = CASES[name]
    with pytest.raises(Refusal, match="not text"):
        translate(name, args, None)


@pytest.mark.parametrize(
    "text",
    [
        "- /repo/\n  - a.py\n  - src/\n    - b.py\n",
        "src/\n  main.py\nREADME.md",
    ],
)
def test_nested_directory_tree_refused(text: str) -> None:
    # Claude Code's LS tree has no wording that states success, nor a field for its nesting.
    with pytest.raises(Refusal):
        translate("LS", {"path": "/repo"}, text)


def test_multiple_domains_refused() -> None:
    with pytest.raises(Refusal, match="several domains"):
        kind_of("WebSearch").inputs({"query": "q", "allowed_domains": ["a.com", "b.com"]})


@pytest.mark.parametrize(
    "text",
    [
        "<tool_use_error>InputValidationError: Bash failed due to the following issue: command is missing",
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
    ],
)
def test_command_that_never_ran_is_refused(text: str) -> None:
    # A DONE run_command step would say the command ran; it did not.
    with pytest.raises(Refusal, match="did not run"):
        translate("Bash", {"command": "ls"}, text)


# ---- read_url_content: the page in the official result field ---------------------------


def test_a_fetched_page_lands_in_web_document_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Officially read_url_content has no summary (no field 5): the result is web_document (2), a
    KnowledgeBaseItem, whose text (2) is where dwgx/WindsurfAPI writes a WebFetch result too. No
    client's words count as success for a fetch today (core/rules/CLIENTS.md: Success evidence), so the evidence
    is stood in for here."""
    from native_bridge.core import encoder, kinds

    monkeypatch.setattr(kinds, "_evidence", lambda result, kind, client, text: object())  # evidence()'s own reading
    kind = KINDS["read_url_content"]
    inputs = kind.inputs({"url": "https://example.com/"})
    result = ToolResult(pos=1, turn=1, call_id="c1", text="An example domain.")
    observed = kind.observe(result, inputs, "claude-code")
    assert observed == {"web_document": {"text": "An example domain."}}
    step = encode_step(kind, inputs, observed)
    assert step.read_url_content.web_document.text == "An example domain."
    assert step.type == 31  # official READ_URL_CONTENT
    body = step.read_url_content.SerializeToString()
    assert body == b"\x0a\x14https://example.com/" + b"\x12\x14\x12\x12An example domain."
    assert (
        encoder.step_doc(kind, inputs, observed)
        == step_json(step)
        == {
            "type": "CORTEX_STEP_TYPE_READ_URL_CONTENT",
            "status": "CORTEX_STEP_STATUS_DONE",
            "readUrlContent": {"url": "https://example.com/", "webDocument": {"text": "An example domain."}},
        }
    )
