"""Kimi CLI (PyPI kimi-cli): its shell tool ``Shell`` is a shell tool by its name.

Since kimi-cli 1.29.0 (33af66dd, 2026-03-31) ``Shell``'s ``command`` is described as "The command
to execute." (the shell's name moved to the system prompt), so its schema no longer has the shape
of a command line (rules/shell_shapes.py: "command" alone is no shell's) and every shell pair stayed
a message, its stated code with it. Kimi CLI is a client we name: its tool is in the name table.

The texts are kimi-cli 1.51.0's, captured through mitmdump by the interop suite (tests/interop,
scenarios ``shell`` and ``timeout``): a ``<system>`` part first, the program's output after it.
"""

from __future__ import annotations

from typing import Any

import orjson
from native_bridge.core.clients import identify
from native_bridge.core.pipeline import rewrite

UA = "AsyncOpenAI/Python 2.14.0"  # captured: Kimi CLI's requests through its openai_legacy provider


def _tool(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props,
                                                                          "required": required}}}  # fmt: skip


# kimi-cli 1.51.0's declarations as captured (Shell's whole; the others by their parameter names).
SHELL = _tool(
    "Shell",
    {
        "command": {"description": "The command to execute.", "type": "string"},
        "timeout": {"default": 60, "type": "integer", "minimum": 1, "maximum": 86400},
        "run_in_background": {"default": False, "type": "boolean"},
        "description": {"default": "", "type": "string"},
    },
    ["command"],
)
TOOLS = [
    SHELL,
    _tool("ReadFile", {"path": {}, "line_offset": {}, "n_lines": {}}, ["path"]),
    _tool("StrReplaceFile", {"path": {}, "edit": {}}, ["path", "edit"]),
]


def _parts(system: str, output: str = "") -> list[dict[str, str]] | str:
    return [{"type": "text", "text": system}, {"type": "text", "text": output}] if output else system


OK, FAILED = (
    "<system>Command executed successfully.</system>",
    "<system>ERROR: Command failed with exit code: {}.</system>",
)
# (command, Kimi CLI's result as captured, the exit status it states)
CASES: list[tuple[str, Any, int | None]] = [
    ("echo hi", _parts(OK, "hi\n"), 0),
    ("false", _parts(FAILED.format(1)), 1),
    ("ls /nope", _parts(FAILED.format(2), "ls: cannot access '/nope': No such file or directory\n"), 2),
    (
        "nonexistent_cmd_interop",
        _parts(FAILED.format(127), "/bin/bash: line 1: nonexistent_cmd_interop: not found\n"),
        127,
    ),
    ("echo 'Exit code: 3'", _parts(OK, "Exit code: 3\n"), 0),  # the program's words: its exit was 0
    ("sh -c 'echo \"Exit code: 0\"; exit 1'", _parts(FAILED.format(1), "Exit code: 0\n"), 1),
    ("printf '{\"exit_code\": 1}\\n'", _parts(OK, '{"exit_code": 1}\n'), 0),
    ("sleep 30", "<system>ERROR: Command killed by timeout (2s)</system>", 1),  # a kill, no number: 1
]


def _chat() -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, (cmd, content, _) in enumerate(CASES):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "Shell", "arguments": orjson.dumps({"command": cmd}).decode()},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": content},
        ]
    return orjson.dumps({"model": "fake-model", "messages": messages, "tools": TOOLS})


def test_kimi_cli_is_named_by_its_tools() -> None:
    assert identify(UA, {"tools": TOOLS}) == "kimi-cli"


def test_kimi_cli_shell_states_its_code_as_a_step() -> None:
    result = rewrite(_chat(), path="/v1/chat/completions", client_hint=UA)
    runs = [s["runCommand"] for s in result.steps]
    assert [(r["commandLine"], r.get("exitCode")) for r in runs] == [(cmd, code) for cmd, _, code in CASES]
