"""pi (npm @mariozechner/pi-coding-agent): a program's own output is never its exit status.

pi's bash tool returns a successful command's output bare (``(no output)`` when empty), and a
killed one (Node's code null) the same way; a failure ends on its own status line (``Command
exited with code N``, ``Command timed out after N seconds``, ``Command aborted``). Over Chat
Completions its requests carry the OpenAI SDK's user agent, so the client is named by its tools.
Read as a client we cannot name, a program that prints ``Exit code: 3`` or ``{"exit_code": 1}``
as its whole output (both exited 0) stated 3 and 1: the generic families at their place. Named,
only pi's own frames count, and its bare output states nothing.

The texts are pi 0.73.1's, captured through mitmdump by the interop suite (tests/interop,
scenario ``shell``).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from native_bridge.core.clients import identify
from native_bridge.core.exitstatus import parse_exit_status
from native_bridge.core.pipeline import rewrite

UA = "OpenAI/JS 6.26.0"  # captured: pi's requests over openai-completions
# pi 0.73.1's tool declarations as captured (their parameter names; descriptions left out).
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {k: {} for k in p}}}}
    for n, p in (
        ("read", ("path", "offset", "limit")),
        ("bash", ("command", "timeout")),
        ("edit", ("path", "edits")),
        ("write", ("path", "content")),
    )
]

# (command, pi's result text as captured, the exit status it states: None is absent)
SHELL: list[tuple[str, str, int | None]] = [
    ("echo hi", "hi\n", None),
    ("ls /nope", "ls: cannot access '/nope': No such file or directory\n\n\nCommand exited with code 2", 2),
    ("sh -c 'exit 3'", "(no output)\n\nCommand exited with code 3", 3),
    (
        "nonexistent_cmd_interop",
        "/bin/bash: line 1: nonexistent_cmd_interop: command not found\n\n\nCommand exited with code 127",
        127,
    ),
    ("false", "(no output)\n\nCommand exited with code 1", 1),
    ("echo 'Exit code: 3'", "Exit code: 3\n", None),  # the trap: exited 0
    ("printf '{\"exit_code\": 1}\\n'", '{"exit_code": 1}\n', None),  # the trap: exited 0
    ("sh -c 'echo out; echo err >&2; exit 4'", "out\nerr\n\n\nCommand exited with code 4", 4),
]


def _chat(tools: list[dict[str, Any]]) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, (cmd, text, _) in enumerate(SHELL):
        args = orjson.dumps({"command": cmd}).decode()
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": args}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": text},
        ]
    return orjson.dumps({"model": "fake-model", "messages": messages, "tools": tools})


def test_pi_is_named_by_its_tools() -> None:
    assert identify(UA, {"tools": TOOLS}) == "pi"


@pytest.mark.parametrize(("cmd", "text", "code"), SHELL, ids=[s[0] for s in SHELL])
def test_pi_result_states_its_code_and_nothing_else(cmd: str, text: str, code: int | None) -> None:
    assert parse_exit_status(text, None, "pi").code == code


def test_pi_shell_results_through_rewrite() -> None:
    """As the interop run sends them: the program's output states nothing, pi's line its number."""
    result = rewrite(_chat(TOOLS), path="/v1/chat/completions", client_hint=UA)
    assert [s["runCommand"].get("exitCode") for s in result.steps] == [code for _, _, code in SHELL]


@pytest.mark.parametrize(
    "text",
    [
        # pi bash.ts since v0.37.2 (2026-01-05): the working directory is gone, nothing spawned
        "Working directory does not exist: /home/u/gone\nCannot execute bash commands.",
        # pi utils/shell.ts getShellConfig: no shell to spawn (the settings' shellPath; Windows without bash)
        "Custom shell path not found: /opt/bin/zsh",
        "No bash shell found. Options:\n  1. Install Git for Windows: https://git-scm.com/download/win\n",
    ],
)
@pytest.mark.parametrize("client", ["pi", None])
def test_pi_command_that_never_spawned_makes_no_step(text: str, client: str | None) -> None:
    for is_error in (None, True):  # pi flags them; Chat Completions drops the flag
        status = parse_exit_status(text, is_error, client)
        assert (status.code, status.verdict) == (None, "not_run"), status
