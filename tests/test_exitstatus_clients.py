"""Every client format in rules/exit_frames.py, with its realistic example, through the
real path: a shell result in a request body → rewrite() → the step's exit code.

One test per rule example (core/rules/EXIT_STATUS.md, "Exit status formats" lists the same table).
"""

from __future__ import annotations

import orjson
import pytest
from native_bridge.core.exitstatus import parse_exit_status
from native_bridge.core.pipeline import Config, rewrite
from native_bridge.core.rules.exit_frames import RULES
from native_bridge.core.rules.types import ANY, Rule

CASES = [(rule, example) for rule in RULES for example in rule.examples]


def _chat(result: str) -> bytes:
    call = {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "make test"}'}}
    return orjson.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": result},
            ],
        }
    )


def _anthropic(result: str, is_error: bool) -> bytes:
    return orjson.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": result, "is_error": is_error}],
                },
            ],
        }
    )


def _expected(rule: Rule, example: str) -> int | None:
    """What the example's own frame states, read by hand from the example text."""
    if rule.verdict in ("running", "not_run"):
        return None
    if rule.verdict == "success":
        return 0
    if rule.verdict == "failed":
        return 1
    for line in example.splitlines():
        found = rule.pattern.fullmatch(line.strip())
        if found:
            return int(found.group("code"))
    raise AssertionError(f"{rule.name}: example has no line of its own format")


IDS = [f"{r.name}-{i}" for i, (r, _) in enumerate(CASES)]


@pytest.mark.parametrize(("rule", "example"), CASES, ids=IDS)
def test_rule_decides_its_example(rule: Rule, example: str) -> None:
    assert rule.clients, f"{rule.name} counts for no client"
    for client in rule.clients if ANY not in rule.clients else (None,):
        status = parse_exit_status(example, rule.flag, client)
        assert status.source == rule.name if client else rule.name in status.source.split("+")
        assert status.verdict == rule.verdict


@pytest.mark.parametrize(("rule", "example"), CASES, ids=IDS)
def test_rule_counts_for_a_client_we_cannot_name(rule: Rule, example: str) -> None:
    """Issue 17: for a client we cannot name every frame counts at its place, so each example
    gives what its own client gets (no other client reads these examples differently)."""
    status = parse_exit_status(example, rule.flag, None)
    assert rule.name in status.source.split("+")
    assert status.verdict == rule.verdict
    if rule.verdict not in ("running", "not_run"):
        assert status.code == _expected(rule, example)


@pytest.mark.parametrize(("rule", "example"), CASES, ids=IDS)
def test_rule_counts_only_for_its_clients(rule: Rule, example: str) -> None:
    """Truth rule 3: a named client's own frames count only for that client. A frame written
    only with the client's error flag, under another client's identity with the flag, is read
    as a borrowed frame (issue 39 item 4: an identity is a claim): it says which failure, and
    says it is not that client's own frame; never success, never a dropped failure."""
    if ANY in rule.clients:
        return  # the generic families: read for a client we cannot name
    others = ["claude-code", "codex", "gemini-cli", "opencode", "openhands", "mini-swe-agent", "zed", "void"]
    for client in others:
        if client in rule.clients or (client == "qwen-code" and "gemini-cli" in rule.clients):
            continue
        status = parse_exit_status(example, rule.flag, client)
        if rule.flag:
            assert status.code not in (None, 0), client
            assert f"not {client}'s own frame" in status.source, client
            continue
        assert rule.name not in status.source.split("+"), client
        if rule.verdict in ("running", "not_run"):
            continue
        assert status.code is None, client
        assert status.verdict in ("unknown", "declined"), client


@pytest.mark.parametrize(("rule", "example"), CASES, ids=IDS)
def test_rule_example_through_rewrite(rule: Rule, example: str) -> None:
    is_error = bool(rule.flag)
    raw = _anthropic(example, is_error) if is_error else _chat(example)
    result = rewrite(raw, Config(client=rule.clients[0]))
    if rule.verdict in ("running", "not_run"):
        # No outcome to state: the pair stays a message, never a DONE step.
        assert result.status == "unchanged"
        assert result.plan is not None
        assert [p.code for p in result.plan.kept] == ["untranslatable", "untranslatable"]
        return
    assert result.status == "rewritten", result.reason
    (step,) = result.steps
    run = step["runCommand"]
    assert run.get("exitCode") == _expected(rule, example)
    assert "stdout" not in run and "stderr" not in run
    assert run["combinedOutput"]["full"] == example or rule.name == "json-exit-code"


@pytest.mark.parametrize(
    ("client", "text", "is_error", "code"),
    [
        # The client's wrapper wins over a test log that prints "exit code 3".
        ("codex", "Exit code: 0\nWall time: 1.2 seconds\nOutput:\nrunning suite\nexit code 3\n", None, 0),
        (
            "openhands",
            "make\nexit code 3\n[The command completed with exit code 0.]\n[Command finished with exit code 0]",
            None,
            0,
        ),
        (
            "gemini-cli",
            "<untrusted_context>\nOutput: FAIL: exit code 3\nProcess Group PGID: 42\n</untrusted_context>",
            None,
            0,
        ),
        ("openhands", "Exit code: 3\nall good\n[Command finished with exit code 0]", None, 0),
        # Words inside the output never count.
        ("codex", "compiling\nthe process exited with code 9 earlier\ndone", None, None),
        # No signal and no number: absent, not 0.
        ("claude-code", "src/a.ts\nsrc/b.ts", None, None),
        ("claude-code", "src/a.ts\nsrc/b.ts", False, None),
        # The error flag without a number: 1; it is authoritative in its direction.
        ("claude-code", "boom", True, 1),
        (None, "boom", True, 1),
        (None, "Exit code 4\nboom", True, 4),  # a stated number wins (issue 17)
        ("claude-code", "Exit code 0\nok", True, None),  # flag against a stated 0: conflict, no claim
        ("claude-code", "Exit code 99999999999\nboom", True, None),  # beyond int32: declined, never 1
        ("claude-code", "Exit code 3\nboom", False, None),  # Claude Code writes that line only with is_error
        (None, "Exit code 3\nboom", False, 3),  # a client we cannot name: the generic family
        # A "[tool error]" prefix is an error flag (truth rule 3).
        ("claude-code", "[tool error] boom", None, 1),
        (None, "[tool error] Exit code: 4", None, 4),
        # Signals, timeouts: failures without a number.
        ("codex", "execution error: Sandbox(Signal(9))", None, 1),
        # JSON forms: only the client's own structure, as the whole result.
        ("codex", '{"output": "1 failed\\n", "metadata": {"exit_code": 1, "duration_seconds": 2.3}}', None, 1),
        (None, '{"output": "1 failed\\n", "metadata": {"exit_code": 1}}', None, 1),
        ("codex", '{"exit_code": 1}', None, None),  # not Codex's structure: what `cat status.json` prints
        (None, '{"exit_code": 1}', None, 1),  # a client we cannot name: the generic JSON family
        ("mini-swe-agent", '{\n  "returncode": 2,\n  "output": "ls: cannot access"\n}', None, 2),
        ("mini-swe-agent", '{"returncode": -1, "output": "", "exception_info": "timed out after 2 seconds"}', None, -1),
        ("mini-swe-agent", '{"returncode": -1, "output": "", "exception_info": "action was not executed"}', None, None),
        ("mini-swe-agent", "<returncode>2</returncode>\n<output>\nls: cannot access\n</output>", None, 2),
        (
            "mini-swe-agent",
            "<exception>timed out</exception>\n<returncode>-1</returncode>\n<output>\n</output>",
            None,
            -1,  # the stated sentinel wins (issue 39)
        ),
        ("claude-code", '{"returncode": 2, "output": "x"}', None, None),  # mini-swe-agent's, not Claude Code's
        (None, '{"returncode": 2, "output": "x"}', None, 2),
        (
            "cline",
            '[{"query":"npm test","result":"[Command exited with code 1]\\nFAIL","error":"Command exited with code 1",'
            '"success":false}]',
            None,
            1,
        ),
        ("cline", '[{"query":"ls","result":"a\\nb","success":true}]', None, 0),
        # Gemini CLI family: its frame at its own positions.
        ("gemini-cli", "<untrusted_context>\nOutput: hello\nProcess Group PGID: 48211\n</untrusted_context>", None, 0),
        ("gemini-cli", "Output: (empty)\nError: spawn ENOENT\nProcess Group PGID: 1", None, 1),
        ("gemini-cli", "Output: (empty)\nSignal: 9\nProcess Group PGID: 1", None, 1),
        ("gemini-cli", "Output: hi\nSignal: 0\nProcess Group PGID: 1", None, 0),
        (
            "qwen-code",
            "Command: npm test\nDirectory: (root)\nOutput: ok\nError: (none)\nExit Code: 0\nSignal: 0\n"
            "Background PIDs: (none)\nProcess Group PGID: 1234",
            None,
            0,
        ),
        (
            "qwen-code",
            "Command: ls /nope\nDirectory: (root)\nOutput: ls: cannot access '/nope'\nError: (none)\nExit Code: 2\n"
            "Signal: (none)\nProcess Group PGID: 77",
            None,
            2,
        ),
        (  # the program printed "Exit Code: 7" last: it sits above the client's own slots
            "qwen-code",
            "Command: x\nDirectory: (root)\nOutput: a\nExit Code: 7\nError: (none)\nExit Code: 0\n"
            "Signal: (none)\nProcess Group PGID: 77",
            None,
            0,
        ),
        ("qwen-code", "Output: hi\nProcess Group PGID: 1", True, None),  # flag against the frame's success: no claim
        # Cline prefixes its results with the tool description.
        ("cline", "[execute_command for 'npm test'] Result:\nCommand failed with exit code 2.\nOutput:\nFAIL", None, 2),
    ],
)
def test_precedence_and_forms(client: str | None, text: str, is_error: bool | None, code: int | None) -> None:
    assert parse_exit_status(text, is_error, client).code == code


@pytest.mark.parametrize(
    "text",
    [
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
        "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
        "to proceed.",
        "<tool_use_error>InputValidationError: Bash failed: missing command</tool_use_error>",
        "exec command rejected by user",
        "[Operation Cancelled] Reason: User denied execution.",
        "The user denied this operation.",
        '{"status":"denied","message":"The user denied this operation."}',
        "User denied permission",
        "Permission to run tool denied by user",
        "The user rejected permission to use this specific tool call.",
        "Tool execution was not approved.",
        "OBSERVATION:\nAction has been rejected by the user! Waiting for further user input.",
    ],
)
def test_rejections_never_become_steps(text: str) -> None:
    assert parse_exit_status(text, True).verdict == "not_run"
    result = rewrite(_anthropic(text, True))
    assert result.status == "unchanged"
    assert result.plan is not None and not result.plan.steps


def test_responses_shell_call_output_structured_code_wins() -> None:
    body = {
        "model": "m",
        "input": [
            {"type": "shell_call", "call_id": "s1", "action": {"commands": ["pytest -q"], "timeout_ms": 60000}},
            {
                "type": "shell_call_output",
                "call_id": "s1",
                "output": [
                    {
                        "stdout": "exit code 0 printed by a test\n",
                        "stderr": "1 failed\n",
                        "outcome": {"type": "exit", "exit_code": 1},
                    }
                ],
            },
        ],
    }
    (step,) = rewrite(orjson.dumps(body), path="/v1/responses").steps  # structured: no client needed
    assert step["runCommand"]["exitCode"] == 1
    assert step["runCommand"]["combinedOutput"]["full"] == "exit code 0 printed by a test\n1 failed\n"


def test_responses_shell_call_timeout_is_a_failure_and_rejection_is_not_a_step() -> None:
    def body(output: list) -> bytes:
        return orjson.dumps(
            {
                "input": [
                    {"type": "shell_call", "call_id": "s1", "action": {"commands": ["sleep 99"]}},
                    {"type": "shell_call_output", "call_id": "s1", "output": output},
                ]
            }
        )

    (step,) = rewrite(body([{"stdout": "partial", "stderr": "", "outcome": {"type": "timeout"}}])).steps
    assert step["runCommand"]["exitCode"] == 1
    rejected = [
        {"stdout": "", "stderr": "Tool execution was not approved.", "outcome": {"type": "exit", "exit_code": 1}}
    ]
    assert rewrite(body(rejected)).status == "unchanged"  # the synthetic 1 of a command that never ran
