"""Every client exit-status format (rules/exit_frames.py, core/rules/EXIT_STATUS.md, "Exit status formats")
through a real mitmdump, from the client that writes it, in the dialect that client
speaks, and identified the way that client identifies itself: its User-Agent where one
was captured from the real client (tests/fixtures/corpus), otherwise the tool set it declares
(clients.py). Claude Code rules as Anthropic tool_result blocks (is_error where Claude
Code sets it), Codex rules as Responses function_call outputs, Gemini CLI rules as
Gemini API function responses, the others as Chat Completions tool messages. What the
planner received is the judge: the true exit code, or no step at all for a command
that never ran or is still running. The same result from a client nobody can identify
gives the same code (issue 17: every known frame counts at its place for such a client);
the generic families are sent that way only.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from native_bridge.core.clients import BY_ID
from native_bridge.core.rules.exit_frames import RULES
from native_bridge.core.rules.types import ANY, Rule

from .conftest import CHAT, Bridge

pytestmark = pytest.mark.e2e

STEPS = "additional_steps"
CASES = [(rule, example) for rule in RULES for example in rule.examples]
OWN = [(rule, example) for rule, example in CASES if ANY not in rule.clients]  # a named client's frames
GEMINI = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"

# The user agents captured from the real clients (tests/fixtures/corpus/*.json request_headers_subset).
USER_AGENT = {
    "claude-code": "claude-cli/2.1.332 (external, sdk-cli)",
    "codex": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)",
    "agents-sdk": "Agents/Python 0.24.0",
    "gemini-cli": "GeminiCLI-tui/0.61.0/gemini-2.5-flash (linux; x64; terminal)",
    "qwen-code": "QwenCode/0.24.4 (linux; x64)",
    "opencode": "opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14",
    "kilo": "Kilo-Code/7.7.7 ai-sdk/provider-utils/4.0.27 runtime/bun/1.3.14",
}
# Each client's shell tool (rules/tool_names.py maps it to run_command).
SHELL_TOOL = {
    "claude-code": "Bash",
    "codex": "shell_command",
    "agents-sdk": "exec_command",  # its sandbox's shell tool
    "gemini-cli": "run_shell_command",
    "qwen-code": "run_shell_command",
    "opencode": "bash",
    "openhands": "execute_bash",
    "cline": "execute_command",
    "roo-code": "execute_command",
    "continue": "run_terminal_command",
    "crush": "bash",
    "zed": "terminal",
    "goose": "developer__shell",
    "mini-swe-agent": "bash",
    "swe-agent": "bash",
    "continue-cli": "Bash",
    "void": "run_command",
    "kimi-cli": "Bash",  # Kimi CLI 0.3x to 0.56 (Shell since 0.57, in rules/tool_names.py too)
    "pi": "bash",
}


def _client(rule: Rule) -> str:
    """The client that writes the rule's frame (a rule that names a family: its first member;
    a generic family: any client that writes no frame of its own, opencode)."""
    name = rule.clients[0]
    if name == ANY:
        return "opencode"
    return name if name in BY_ID else next(c for c in BY_ID.values() if c.family == name).id


def _declared(client: str) -> list[tuple[str, list[str]]]:
    """The tool set the client declares (its first signature in clients.py), with each tool's parameters."""
    tools = []
    for entry in sorted(BY_ID[client].tools[0]):
        m = re.fullmatch(r"(?P<name>[^()!]+)(?:\((?P<params>[^)]*)\))?!?", entry)
        assert m is not None, entry
        tools.append((m["name"], [p for p in (m["params"] or "command").split(",") if p]))
    return tools


def _expected(rule: Rule, example: str) -> int | None:
    if rule.verdict == "success":
        return 0
    if rule.verdict == "failed":
        return 1
    for line in example.splitlines():
        m = rule.pattern.fullmatch(line.strip())
        if m:
            return int(m.group("code"))
    raise AssertionError(f"{rule.name}: the example has no line of its own format")


def _request(rule: Rule, example: str, client: str) -> tuple[str, dict[str, Any]]:
    tool = SHELL_TOOL[client]
    if client == "claude-code":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": example}
        if rule.flag:
            result["is_error"] = True  # Claude Code writes this frame only on a result it flags
        return "/v1/messages", {
            "model": "claude",
            "messages": [
                {"role": "user", "content": "run it"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"command": "make test"}}],
                },
                {"role": "user", "content": [result]},
            ],
        }
    if client == "codex":
        return "/v1/responses", {
            "model": "gpt",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": tool,
                    "arguments": orjson.dumps({"command": "make test", "workdir": "/w"}).decode(),
                },
                {"type": "function_call_output", "call_id": "c1", "output": example},
            ],
        }
    if client == "gemini-cli":
        call = {"functionCall": {"id": "g1", "name": tool, "args": {"command": "make test"}}}
        response = {"functionResponse": {"id": "g1", "name": tool, "response": {"output": example}}}
        return GEMINI, {
            "contents": [
                {"role": "user", "parts": [{"text": "run it"}]},
                {"role": "model", "parts": [call]},
                {"role": "user", "parts": [response]},
            ],
        }
    body: dict[str, Any] = {
        "model": "gpt",
        "messages": [
            {"role": "user", "content": "run it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": tool, "arguments": '{"command": "make test"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": example},
        ],
    }
    if client not in USER_AGENT:  # a client told by the tools it declares
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in params}},
                },
            }
            for name, params in _declared(client)
        ]
    return CHAT, body


@pytest.mark.parametrize(("rule", "example"), OWN, ids=[f"{r.name}-{i}" for i, (r, _) in enumerate(OWN)])
def test_client_format_through_mitmdump(bridge: Bridge, rule: Rule, example: str) -> None:
    client = _client(rule)
    path, body = _request(rule, example, client)
    raw = orjson.dumps(body)
    ua = USER_AGENT.get(client)
    ex = bridge.send("POST", path, raw, headers={"user-agent": ua} if ua else None)
    got = bridge.upstream(ex)
    assert ex.response.status_code == 200, ex.response.text
    if rule.verdict in ("running", "not_run"):
        assert got.raw == raw, "a command with no outcome must reach the planner as the client sent it"
        return
    assert got.body is not None
    (step,) = orjson.loads(got.body)[STEPS]
    run = step["runCommand"]
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert run.get("exitCode") == _expected(rule, example)
    assert "stdout" not in run


@pytest.mark.parametrize(("rule", "example"), CASES, ids=[f"{r.name}-{i}" for i, (r, _) in enumerate(CASES)])
def test_the_same_format_from_an_unidentified_client_states_the_same_code(
    bridge: Bridge, rule: Rule, example: str
) -> None:
    """No user agent, no tool set (issue 17): every known frame counts at its place, so the
    planner gets what the client itself would have got."""
    client = _client(rule)
    path, body = _request(rule, example, client)
    body.pop("tools", None)
    raw = orjson.dumps(body)
    ex = bridge.send("POST", path, raw)
    got = bridge.upstream(ex)
    assert ex.response.status_code == 200, ex.response.text
    if rule.verdict in ("running", "not_run"):
        assert got.raw == raw, "a command with no outcome must reach the planner as the client sent it"
        return
    assert got.body is not None, "a shell result with an output is a step, whoever sent it"
    (step,) = orjson.loads(got.body)[STEPS]
    assert step["runCommand"].get("exitCode") == _expected(rule, example)
