"""Every client exit-status format (exitstatus.RULES, README "Exit status formats")
through a real mitmdump, in the dialect that client speaks: Claude Code rules as
Anthropic tool_result blocks with is_error, Codex rules as Responses function_call
outputs, the others as Chat Completions tool messages. What the planner received is
the judge: the true exit code, or no step at all for a command that never ran or
is still running.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from native_bridge.core.exitstatus import RULES, Rule

from .conftest import CHAT, Bridge

pytestmark = pytest.mark.e2e

STEPS = "additional_steps"
CASES = [(rule, example) for rule in RULES for example in rule.examples]


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


def _request(rule: Rule, example: str) -> tuple[str, dict[str, Any]]:
    if rule.name.startswith("claude-code"):
        return "/v1/messages", {
            "model": "claude",
            "messages": [
                {"role": "user", "content": "run it"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": example, "is_error": True}],
                },
            ],
        }
    if rule.name.startswith("codex"):
        return "/v1/responses", {
            "model": "gpt",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "shell_command",
                    "arguments": orjson.dumps({"command": "make test", "workdir": "/w"}).decode(),
                },
                {"type": "function_call_output", "call_id": "c1", "output": example},
            ],
        }
    return CHAT, {
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
                        "function": {"name": "Bash", "arguments": '{"command": "make test"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": example},
        ],
    }


@pytest.mark.parametrize(("rule", "example"), CASES, ids=[f"{r.name}-{i}" for i, (r, _) in enumerate(CASES)])
def test_client_format_through_mitmdump(bridge: Bridge, rule: Rule, example: str) -> None:
    path, body = _request(rule, example)
    raw = orjson.dumps(body)
    ex = bridge.send("POST", path, raw)
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
