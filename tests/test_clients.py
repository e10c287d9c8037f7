"""Issue 10: each client's own words decide, for that client only.

Client identification (clients.py), positive evidence of non-shell success (rules/success_evidence.py,
truth rule 5), and the false claims issue 10 lists, each with the real result text captured
from the client named (interop runs through mitmdump, client version in the comment).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from native_bridge.core.clients import identify
from native_bridge.core.exitstatus import parse_exit_status
from native_bridge.core.history import ToolResult
from native_bridge.core.kinds import KINDS, Refusal, signals_failure
from native_bridge.core.pipeline import Config, rewrite
from native_bridge.core.rules.clients import CLIENTS
from native_bridge.core.rules.success_evidence import EVIDENCE

CHAT = "/v1/chat/completions"


def _result(text: str, is_error: bool | None = None) -> ToolResult:
    return ToolResult(pos=1, turn=1, call_id="c1", text=text, is_error=is_error)


def observe(kind: str, inputs: dict[str, Any], text: str, client: str | None, is_error: bool | None = None):
    return KINDS[kind].observe(_result(text, is_error), inputs, client)


# ---- identification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ua", "client"),
    [
        ("claude-cli/2.1.332 (external, sdk-cli)", "claude-code"),  # captured
        ("codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)", "codex"),  # captured
        ("codex_cli_rs/0.171.0 (Mac OS 15.0.0; arm64) iTerm.app/3.5", "codex"),
        ("Agents/Python 0.24.0", "agents-sdk"),  # captured
        ("GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)", "gemini-cli"),
        ("QwenCode/0.24.4 (linux; x64)", "qwen-code"),
        ("opencode/1.18.33", "opencode"),
        ("kilo/7.7.7", "kilo"),
        ("OpenAI/Python 3.57.0", None),  # mini-swe-agent and OpenHands go through a generic SDK
        ("curl/8.5.0", None),
        (None, None),
    ],
)
def test_user_agent_names_the_client(ua: str | None, client: str | None) -> None:
    assert identify(ua, None) == client


def _chat_tools(*tools: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": p}}}
            for n, p in tools
        ]
    }


MINI_TOOLS = _chat_tools(("bash", {"command": {"type": "string"}}))  # captured (mini-swe-agent 2.4.6)


def test_declared_tools_name_the_client() -> None:
    assert identify("OpenAI/Python 3.57.0", MINI_TOOLS) == "mini-swe-agent"
    # One bash tool with more parameters, or beside other tools, is not mini-swe-agent's.
    assert identify(None, _chat_tools(("bash", {"command": {}, "timeout": {}}))) is None
    assert identify(None, _chat_tools(("bash", {"command": {}}), ("read", {"path": {}}))) is None
    openhands = _chat_tools(("terminal", {"command": {}}), ("file_editor", {"command": {}}), ("finish", {}))
    assert identify("OpenAI/Python 2.26.0", openhands) == "openhands"  # captured tool names (openhands-sdk 1.58.2)
    claude = {"tools": [{"name": n, "input_schema": {"type": "object"}} for n in ("Bash", "Read", "Edit", "Write")]}
    assert identify(None, claude) == "claude-code"


def test_every_client_is_identifiable() -> None:
    for c in CLIENTS:
        assert c.user_agent is not None or c.tools, c.id


def test_rewrite_identifies_the_client_from_the_user_agent_or_the_tools() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls /nope"}'}}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": '{\n  "returncode": 2,\n  "output": "ls: cannot access \'/nope\': No such file"\n}'},
    ]  # fmt: skip
    body = {"model": "m", "messages": messages}
    unknown = rewrite(orjson.dumps(body), path=CHAT)
    assert unknown.steps[0]["runCommand"]["exitCode"] == 2  # mini-swe-agent's frame counts for any client
    mini = rewrite(orjson.dumps({**body, **MINI_TOOLS}), path=CHAT, client_hint="OpenAI/Python 3.57.0")
    assert mini.steps[0]["runCommand"]["exitCode"] == 2
    forced = rewrite(orjson.dumps(body), Config(client="mini-swe-agent"), path=CHAT)
    assert forced.steps[0]["runCommand"]["exitCode"] == 2


# ---- the false claims of issue 10, with real results ------------------------------------------


QWEN_OK = (  # Qwen Code 0.24.4 run_shell_command (Gemini CLI family)
    "Command: echo hi\nDirectory: (root)\nOutput: hi\nError: (none)\nExit Code: 0\nSignal: 0\n"
    "Background PIDs: (none)\nProcess Group PGID: 51234"
)


@pytest.mark.parametrize("client", ["gemini-cli", "qwen-code"])
def test_gemini_family_success_is_exit_0_not_1(client: str) -> None:
    assert parse_exit_status(QWEN_OK, None, client).code == 0


@pytest.mark.parametrize(
    "text",
    [
        "File not found: /w/missing.txt",  # Gemini CLI family read_file, no error flag over Chat
        "Error: File not found: /w/missing.txt",  # opencode
        "File does not exist. Note: your current working directory is /w.",  # Claude Code 2.1.332 (captured)
    ],
)
@pytest.mark.parametrize("client", [None, "claude-code", "gemini-cli", "qwen-code", "opencode", "kilo"])
def test_a_failed_read_in_words_is_never_a_view_file_step(text: str, client: str | None) -> None:
    with pytest.raises(Refusal):
        observe("view_file", {"absolute_path_uri": "file:///w/missing.txt"}, text, client)
    assert signals_failure(_result(text))  # the planner hop drops such a step too


@pytest.mark.parametrize(
    ("kind", "text", "client"),
    [
        (
            "list_directory",
            "Error listing directory: ENOENT: no such file or directory, scandir '/w/nope'",
            "gemini-cli",
        ),
        ("propose_code", "Error: oldString not found in content", "opencode"),
        ("propose_code", "Failed to edit, could not find the string to replace.", "gemini-cli"),
        ("write_to_file", "Error writing file: EACCES", "opencode"),
    ],
)
def test_failed_list_and_edit_results_are_never_steps(kind: str, text: str, client: str) -> None:
    assert signals_failure(_result(text))
    with pytest.raises(Refusal):
        observe(kind, {}, text, client)


def test_listing_header_is_not_a_child() -> None:
    text = "Directory listing for /w:\n[DIR] src\nhello.txt (26 bytes)"
    assert observe("list_directory", {}, text, "gemini-cli") == {"children": ["src", "hello.txt"]}
    qwen = "Listed 2 item(s) in /w:\n---\n[DIR] src\nhello.txt"
    assert observe("list_directory", {}, qwen, "qwen-code") == {"children": ["src", "hello.txt"]}
    with pytest.raises(Refusal):  # some entries left out: the children would misstate the directory
        observe("list_directory", {}, text + "\n\n(3 ignored)", "gemini-cli")


@pytest.mark.parametrize(
    ("text", "client", "created"),
    [
        ("File created successfully at: /w/new.txt", "claude-code", True),
        ("The file /w/hello.txt has been updated successfully.", "claude-code", False),
        ("Successfully created and wrote to new file: /w/new.txt.", "qwen-code", True),
        ("Successfully overwrote file: /w/hello.txt.", "gemini-cli", False),
        ("Wrote file successfully.", "opencode", None),  # opencode does not say: absent
    ],
)
def test_file_created_only_when_the_client_says_so(text: str, client: str, created: bool | None) -> None:
    observed = observe("write_to_file", {}, text, client)
    assert observed == ({} if created is None else {"file_created": created})


def test_codex_aborted_stand_in_over_chat_is_no_observation() -> None:
    body = {
        "messages": [
            {"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": ["ls"]}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "aborted"},
        ]
    }  # fmt: skip
    r = rewrite(orjson.dumps(body), path=CHAT, client_hint="codex_exec/0.171.0")
    assert r.steps == []
    assert r.plan is not None and {p.code for p in r.plan.kept} == {"unobserved"}


# ---- positive evidence (truth rule 5) --------------------------------------------------------


@pytest.mark.parametrize("e", EVIDENCE, ids=[e.name for e in EVIDENCE])
def test_each_wording_is_evidence_for_its_clients_only(e: Any) -> None:
    inputs: dict[str, Any] = {}
    clients = [c.id for c in CLIENTS if c.id in e.clients or c.family in e.clients]
    assert clients, e.name
    flag = False if e.unflagged else None  # Gemini API {"output": …}: the dialect says "not an error"
    for c in clients:
        observe(e.kind, inputs, e.example, c, flag)  # a step
    for c in [None] + [c.id for c in CLIENTS if c.id not in clients]:
        try:
            observe(e.kind, inputs, e.example, c, flag)
        except Refusal:
            continue
        # Another client's own wording may match too (shared shapes such as a path list); never an unknown one.
        assert c is not None, e.name


@pytest.mark.parametrize("e", EVIDENCE, ids=[e.name for e in EVIDENCE])
def test_evidence_with_an_error_flag_is_no_step(e: Any) -> None:
    client = next(c.id for c in CLIENTS if c.id in e.clients or c.family in e.clients)
    with pytest.raises(Refusal, match="failed"):
        observe(e.kind, {}, e.example, client, is_error=True)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("view_file", "hello interop\nsecond line\n"),  # a read that returns the file as it is: no words
        ("find", "a.py\nb.py"),
        ("grep_search_v2", "a.py:1:hello"),
        ("search_web", "Zig 0.13 was released"),
        ("read_url_content", "Example Domain"),
        ("propose_code", "ok"),
    ],
)
@pytest.mark.parametrize("client", [None, "claude-code", "gemini-cli", "opencode", "codex"])
def test_an_unknown_wording_is_not_success(kind: str, text: str, client: str | None) -> None:
    with pytest.raises(Refusal, match="no words"):
        observe(kind, {}, text, client)


def test_gemini_cli_read_output_is_a_step_and_error_is_not() -> None:
    # Gemini CLI 0.61.0 over the Gemini API (captured): {"output": …} / {"error": "File not found: …"}.
    assert observe("view_file", {}, "hello interop\n", "gemini-cli", False) == {"content": "hello interop\n"}
    with pytest.raises(Refusal):
        observe("view_file", {}, "File not found: /w/missing.txt", "gemini-cli", True)
    with pytest.raises(Refusal):  # Qwen Code over Chat Completions: no flag, no words
        observe("view_file", {}, "hello interop\n", "qwen-code", None)
    with pytest.raises(Refusal):  # Claude Code's is_error: false is no success wording
        observe("view_file", {}, "hello interop\n", "claude-code", False)


def test_claude_code_read_as_captured_is_a_step() -> None:
    # Claude Code 2.1.332 Read of an existing file (captured), with the reminder it appends.
    reminder = "<system-reminder>\n<total_tokens>14999985 tokens left</total_tokens>\n</system-reminder>"
    text = "1\thello interop\n2\tsecond line\n3\n\n" + reminder
    assert observe("view_file", {}, text, "claude-code") == {"content": text}
    with pytest.raises(Refusal):
        observe("view_file", {}, text, None)
