"""Issue 39 item 7: shell tools by their shape, not only their name.

A tool the request declares whose schema is a command line to run (a single required string
`command` or `cmd`, described as a shell's, terminal's or bash command line) is a shell tool
whatever its name; so is a `language` + `code` pair, for the calls whose language is a shell.
Anything else stays unmapped, and no command line is ever made from code in another language.
The schemas are the clients' own, as tests/fixtures/paths/clients-b.md ("Shell tools we do not
map") reads them from their sources; the accounting says which tools were taken by shape, and why.
"""

from __future__ import annotations

import pickle
from typing import Any

import orjson
import pytest
from bench.golden import outcome_digest
from native_bridge.chat_hop.jobs import observed
from native_bridge.core.kinds import tool_map
from native_bridge.core.memo.store import Memo
from native_bridge.core.pipeline import Config, Rewrite, rewrite

CHAT = "/v1/chat/completions"

# GitHub Copilot (microsoft/vscode src/vs/workbench/contrib/terminalContrib/chatAgentTools/browser/tools/
# runInTerminalTool.ts): its schema as sent.
RUN_IN_TERMINAL = {
    "name": "run_in_terminal",
    "description": "This tool allows you to execute shell commands in a persistent bash/zsh/fish/PowerShell "
    "terminal session, preserving environment variables, working directory, and other context across multiple "
    "commands.",
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to run in the terminal."},
            "explanation": {"type": "string", "description": "A one-sentence description of what the command does."},
            "isBackground": {"type": "boolean", "description": "Whether the command starts a background process."},
        },
        "required": ["command", "explanation", "isBackground"],
    },
}
# Kimi CLI up to 1.28 (MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py Params; its description from
# bash.md): a command line by its shape. Since 1.29 its command is "The command to execute.", no shape: `Shell`
# maps by its name (rules/tool_names.py, tests/test_exitstatus_kimi.py).
KIMI_SHELL = {
    "name": "Shell",
    "description": "Execute a bash (`/bin/bash`) command. Use this tool to explore the filesystem, edit files, run "
    "scripts, get system information, etc.",
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command to execute."},
            "timeout": {"type": "integer", "default": 60, "minimum": 1, "maximum": 300},
        },
        "required": ["command"],
    },
}
# Open Interpreter (OpenInterpreter/open-interpreter interpreter/core/llm/run_tool_calling_llm.py tool_schema).
EXECUTE = {
    "name": "execute",
    "description": "Executes code on the user's machine **in the users local environment** and returns the output",
    "parameters": {
        "type": "object",
        "properties": {
            "language": {
                "type": "string",
                "description": "The programming language (required parameter to the `execute` function)",
                "enum": ["python", "R", "shell", "applescript", "javascript", "html", "powershell"],
            },
            "code": {"type": "string", "description": "The code to execute (required)"},
        },
        "required": ["language", "code"],
    },
}


def _chat(tool: dict[str, Any], arguments: dict[str, Any], result: str, *more: dict[str, Any]) -> bytes:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": tool["name"], "arguments": orjson.dumps(arguments).decode()},
    }
    return orjson.dumps(
        {
            "model": "m",
            "tools": [{"type": "function", "function": t} for t in (tool, *more)],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": result},
            ],
        }
    )


def _call_entry(result: Rewrite) -> dict[str, Any]:
    assert result.plan is not None
    (entry,) = [p.to_json() for p in result.plan.accounting if p.item == "call"]
    return entry


def _step(result: Rewrite) -> dict[str, Any]:
    assert result.status == "rewritten", result.reason
    (step,) = result.steps
    return step["runCommand"]


def test_copilot_run_in_terminal_is_a_shell_tool_by_its_shape() -> None:
    args = {"command": "ls /nope", "explanation": "List it.", "isBackground": False}
    result = rewrite(_chat(RUN_IN_TERMINAL, args, "ls: cannot access '/nope'\n\nCommand exited with code 2"), path=CHAT)
    run = _step(result)
    assert (run["commandLine"], run["exitCode"]) == ("ls /nope", 2)
    entry = _call_entry(result)
    assert entry["step"] == 0
    assert "shape" in entry["mapped"] and "command" in entry["mapped"]
    assert result.summary()["failed_exit_codes"] == [2]


def test_a_background_run_of_a_shape_mapped_tool_stays_a_message() -> None:
    args = {"command": "npm run dev", "explanation": "Serve.", "isBackground": True}
    result = rewrite(_chat(RUN_IN_TERMINAL, args, "Command is running in terminal with ID=3f2a"), path=CHAT)
    assert result.status == "unchanged" and not result.steps
    entry = _call_entry(result)
    assert entry["kept"] == "untranslatable" and "background" in entry["reason"]
    assert "mapped" in entry  # it was taken as a shell tool; the call itself says nothing it could state


def test_kimi_cli_shell_states_its_code() -> None:
    # By its name now; the shape of its schema until 1.28 takes the same tool under another name.
    assert _step(rewrite(_chat({**KIMI_SHELL, "name": "kimi_shell"}, {"command": "ls"}, "a"), path=CHAT))
    text = "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access '/nope'"
    result = rewrite(
        _chat(KIMI_SHELL, {"command": "ls /nope", "timeout": 60}, text), path=CHAT, client_hint="KimiCLI/1.4"
    )
    run = _step(result)
    assert (run["commandLine"], run["exitCode"]) == ("ls /nope", 2)


@pytest.mark.parametrize("language", ["shell", "bash", "sh", "zsh", "powershell", "Shell"])
def test_execute_with_a_shell_language_is_a_command_line(language: str) -> None:
    result = rewrite(_chat(EXECUTE, {"language": language, "code": "ls -la"}, "total 0"), path=CHAT)
    run = _step(result)
    assert run["commandLine"] == "ls -la" and "exitCode" not in run
    assert "language" in _call_entry(result)["mapped"]


@pytest.mark.parametrize("language", ["python", "javascript", "R", "applescript", "html", None, 3])
def test_execute_with_another_language_stays_a_message(language: object) -> None:
    code = "import os\nprint(os.listdir('.'))"
    result = rewrite(_chat(EXECUTE, {"language": language, "code": code}, "['a']"), path=CHAT)
    assert result.status == "unchanged" and not result.steps
    entry = _call_entry(result)
    assert entry["kept"] == "unmapped"
    assert "no command line" in entry["reason"]


def _tool(name: str, properties: dict[str, Any], required: list[str], description: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
    }


NOT_SHELL = [
    # "command" alone is no shell's: a git subcommand, an editor's command.
    _tool("git", {"command": {"type": "string", "description": "The git subcommand to run."}}, ["command"], "Run git."),
    _tool(
        "run_vscode_command",
        {"command": {"type": "string", "description": "The ID of the command to execute."}},
        ["command"],
        "Run a VS Code command.",
    ),
    # The tool's description is free text: a slash command's list of the user's commands says anything.
    _tool(
        "SlashCommand",
        {"command": {"type": "string", "description": 'The slash command to execute with its arguments, e.g. "/x 1"'}},
        ["command"],
        "Execute a slash command.\nAvailable Commands:\n- /deploy: runs the deploy shell script in a bash terminal",
    ),
    # A command line somewhere else: another required argument says where.
    _tool(
        "browser_execute",
        {
            "sessionId": {"type": "string"},
            "command": {"type": "string", "description": "The bash command to run in the session's sandbox."},
        },
        ["sessionId", "command"],
    ),
    # Not required, not a string, or both names: no single command line.
    _tool("maybe", {"command": {"type": "string", "description": "A shell command."}}, [], "Run a shell command."),
    _tool("argv", {"command": {"type": "array", "description": "The shell command's argv."}}, ["command"]),
    _tool(
        "both",
        {"command": {"type": "string", "description": "shell"}, "cmd": {"type": "string", "description": "shell"}},
        ["command", "cmd"],
    ),
    # Code in a language that is never a shell's (AutoGen's Python executor).
    _tool(
        "run_code",
        {
            "language": {"type": "string", "enum": ["python"]},
            "code": {"type": "string", "description": "The contents of the Python code block."},
        },
        ["language", "code"],
    ),
    _tool("CodeExecutor", {"code": {"type": "string", "description": "The Python code to run."}}, ["code"]),
]


@pytest.mark.parametrize("tool", NOT_SHELL, ids=[t["name"] for t in NOT_SHELL])
def test_anything_else_stays_unmapped(tool: dict[str, Any]) -> None:
    args = {k: "ls" for k in tool["parameters"]["properties"]}
    if "language" in args:
        args["language"] = "python"
    result = rewrite(_chat(tool, args, "ok"), path=CHAT)
    assert result.status == "unchanged" and not result.steps
    entry = _call_entry(result)
    assert entry["kept"] == "unmapped" and "mapped" not in entry


def test_a_name_that_has_a_kind_keeps_it() -> None:
    # Codex's `shell` maps by its name (its command is an argv), whatever its schema says.
    shell = _tool("shell", {"command": {"type": "array", "items": {"type": "string"}}}, ["command"])
    result = rewrite(_chat(shell, {"command": ["ls"]}, "a"), path=CHAT)
    assert _step(result)["commandLine"] == "ls"
    assert "mapped" not in _call_entry(result)


def test_undeclared_tools_are_taken_by_name_only() -> None:
    doc = orjson.loads(_chat(RUN_IN_TERMINAL, {"command": "ls", "explanation": "x", "isBackground": False}, "a"))
    del doc["tools"]
    result = rewrite(orjson.dumps(doc), path=CHAT)
    assert _call_entry(result)["kept"] == "unmapped"


def _anthropic() -> bytes:
    schema = RUN_IN_TERMINAL["parameters"]
    tool = {"name": "run_in_terminal", "description": RUN_IN_TERMINAL["description"], "input_schema": schema}
    args = {"command": "make", "explanation": "x", "isBackground": False}
    use = {"type": "tool_use", "id": "t1", "name": "run_in_terminal", "input": args}
    res = {"type": "tool_result", "tool_use_id": "t1", "content": "Exit code 2\nboom", "is_error": True}
    return orjson.dumps(
        {
            "model": "claude",
            "max_tokens": 10,
            "tools": [tool],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [res]},
            ],
        }
    )


def _responses() -> bytes:
    tool = {"type": "function", **RUN_IN_TERMINAL}
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "run_in_terminal",
        "arguments": orjson.dumps({"command": "make", "explanation": "x", "isBackground": False}).decode(),
    }
    out = {"type": "function_call_output", "call_id": "c1", "output": "boom\n\nCommand exited with code 2"}
    return orjson.dumps({"model": "m", "tools": [tool], "input": [{"role": "user", "content": "go"}, call, out]})


def _gemini() -> bytes:
    decl = {"name": "execute", "description": EXECUTE["description"], "parameters": EXECUTE["parameters"]}
    call = {"functionCall": {"id": "g1", "name": "execute", "args": {"language": "shell", "code": "make"}}}
    response = {"functionResponse": {"id": "g1", "name": "execute", "response": {"output": "Exit code: 2"}}}
    return orjson.dumps(
        {
            "tools": [{"functionDeclarations": [decl]}],
            "contents": [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [call]},
                {"role": "user", "parts": [response]},
            ],
        }
    )


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (_anthropic(), "/v1/messages"),
        (_responses(), "/v1/responses"),
        (_gemini(), "/v1beta/models/g:generateContent"),
    ],
    ids=["anthropic", "responses", "gemini"],
)
def test_every_dialects_declarations(raw: bytes, path: str) -> None:
    run = _step(rewrite(raw, path=path))
    assert (run["commandLine"], run["exitCode"]) == ("make", 2)


def _turns(declared: tuple[bool, ...] = (True, True, False)) -> list[bytes]:
    """A conversation of Copilot's run_in_terminal, growing by a round a turn, declaring the tool on
    the turns ``declared`` says (the same bytes a memo holds, another mapping)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    bodies = []
    for i, declares in enumerate(declared):
        args = {"command": f"make t{i}", "explanation": "x", "isBackground": False}
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "run_in_terminal", "arguments": orjson.dumps(args).decode()},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"t{i}\n\nCommand exited with code {i}"},
        ]
        tools = [{"type": "function", "function": RUN_IN_TERMINAL}] if declares else []
        bodies.append(orjson.dumps({"model": "m", "messages": messages, "tools": tools}))
    return bodies


@pytest.mark.parametrize("hint", [None, "KimiCLI/1.4"], ids=["unnamed", "named"])
@pytest.mark.parametrize("declared", [(True, True, False), (False, True, True)], ids=["dropped", "added"])
@pytest.mark.parametrize("light", [False, True], ids=["full", "light"])
def test_a_memo_resumes_to_what_a_full_read_gives(hint: str | None, declared: tuple[bool, ...], light: bool) -> None:
    memo = Memo(light=light)
    for raw in _turns(declared):
        if light:  # observe mode: no body written; the verdict and what the planner hop is handed agree
            remembered = rewrite(raw, Config(), CHAT, memo, hint, emit=False)
            alone = rewrite(raw, Config(), CHAT, None, hint, emit=False)
            assert remembered.summary() == alone.summary()
            assert set(observed(remembered, Config().tool_kinds)) <= set(observed(alone, Config().tool_kinds))
            continue
        remembered = rewrite(raw, Config(), CHAT, memo, hint)
        alone = rewrite(raw, Config(), CHAT, None, hint)
        assert outcome_digest(remembered) == outcome_digest(alone)
    assert memo.errors == 0 and memo.hits >= 1
    steps = [len(rewrite(raw, Config(), CHAT).steps) for raw in _turns(declared)]
    assert steps == ([1, 2, 0] if declared[0] else [0, 2, 3])


def test_the_planner_hop_gets_the_observation_of_a_shape_mapped_pair() -> None:
    # The chat hop hands what it saw to the planner hop with the addon's own tool table (no shapes):
    # the decision knows the tool is a shell tool.
    args = {"command": "ls /nope", "explanation": "x", "isBackground": False}
    result = rewrite(_chat(RUN_IN_TERMINAL, args, "ls: nope\n\nCommand exited with code 2"), path=CHAT)
    (seen,) = observed(result, Config().tool_kinds)
    assert (seen.exit_code, seen.failed) == (2, True)


def test_a_name_the_operator_unmapped_is_not_mapped_by_its_shape_either() -> None:
    args = {"command": "ls", "explanation": "x", "isBackground": False}
    raw = _chat(RUN_IN_TERMINAL, args, "a\n\nCommand exited with code 0")
    config = Config(tool_kinds=tool_map(["run_in_terminal="]))
    assert _call_entry(rewrite(raw, config, CHAT))["kept"] == "unmapped"
    assert pickle.loads(pickle.dumps(config)) == config
    # Mapped again by name, the operator's kind stands.
    config = Config(tool_kinds=tool_map(["run_in_terminal=", "run_in_terminal=run_command"]))
    assert _step(rewrite(raw, config, CHAT))["exitCode"] == 0
    assert "mapped" not in _call_entry(rewrite(raw, config, CHAT))
