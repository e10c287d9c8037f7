"""Issue 39 item 4: an identity is a claim, not a proof.

A client can present itself with another client's identity (its user agent, its tool names),
as one of our held-back real agents does to use a subscription key. Its shell results then
carry, at their place, its own frame: one the client it names never writes, but another client
does. Whatever the rules then do, a result the client flagged as failed (``is_error: true``)
never becomes a step, or a record, that says it succeeded or drops the failure (truth rule 3:
the flag is authoritative in its direction): the step states the failure, or the pair stays a
message with its flag.

- the frame of a known client states one number unambiguously (the reading of a client we
  cannot name, which the planner hop makes of the same text): the step states that number;
- a known client's words state a failure without a number: 1, the flag's;
- the frames read it differently, state 0, or a number the step cannot carry: no number can be
  stated and none may be made up (a declined number never becomes 1), so the pair stays a
  message, ``is_error`` and all.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from native_bridge.core.exitstatus import parse_exit_status
from native_bridge.core.pipeline import Config, Rewrite, rewrite
from native_bridge.core.rules.clients import CLIENTS
from native_bridge.core.rules.exit_frames import RULES
from native_bridge.core.rules.types import ANY

PATH = "/v1/messages"
CLAUDE_UA = "claude-cli/2.1.332 (external, sdk-cli)"
# Claude Code's tool declarations (rules/clients.py: its signature), as a borrowed identity sends them.
CLAUDE_TOOLS = [
    {"name": name, "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
    for name in ("Bash", "Read", "Edit", "Write")
]


def _body(result: str, is_error: bool | None = True) -> bytes:
    res: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": result}
    if is_error is not None:
        res["is_error"] = is_error
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make test"}}
    return orjson.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "tools": CLAUDE_TOOLS,
            "messages": [
                {"role": "user", "content": "run the tests"},
                {"role": "assistant", "content": [call]},
                {"role": "user", "content": [res]},
            ],
        }
    )


def _as_claude_code(result: str, is_error: bool | None = True, ua: str | None = CLAUDE_UA) -> Rewrite:
    return rewrite(_body(result, is_error), path=PATH, client_hint=ua)


# Another client's frame, at its place, under Claude Code's identity with is_error: true.
# (research row or source, text, the number it states)
STATED: list[tuple[str, str, int]] = [
    (
        "Codex exec_command header (codex-rs/core/src/tools/context.rs)",
        "Chunk ID: 3c1a9e\nWall time: 2.1000 seconds\nProcess exited with code 2\nOriginal token count: 5\nOutput:\n"
        "ls: cannot access '/nope': No such file or directory",
        2,
    ),
    (
        "Codex shell_command header (codex-rs/core/src/tools/mod.rs)",
        "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nls: cannot access '/nope': No such file or directory",
        2,
    ),
    ("goose shell's last line (developer/shell.rs)", "FAILED test_x\n1 failed\n\nCommand exited with code 7", 7),
    (
        "Kimi CLI Shell's <system> tag (kimi_cli/tools/shell)",
        "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access '/nope'",
        2,
    ),
    ("Crush's trailer (internal/agent/tools/bash.go)", "FAIL\nExit code 3\n\n<cwd>/home/u/proj</cwd>", 3),
    ("OpenHands' trailer", "FAILED tests\n[The command completed with exit code 4.]", 4),
    ("a sentinel stated by mini-swe-agent", '{"returncode": -1, "output": "", "exception_info": "timed out"}', -1),
]

# Another client's words for a failure without a number: the flag's 1.
FAILED_IN_WORDS: list[tuple[str, str]] = [
    ("goose shell's timeout", "started\n\nCommand timed out after 30 seconds"),
    ("Kimi CLI Shell's timeout", "<system>ERROR: Command killed by timeout (60s)</system>\npartial"),
]

# No number can be stated, and none may be made up: the pair stays a message with its flag.
NO_NUMBER: list[tuple[str, str]] = [
    ("another client's frame says 0 against the flag", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok"),
    ("a number beyond int32", "Chunk ID: 1\nWall time: 1 seconds\nProcess exited with code 99999999999\nOutput:\nx"),
    (
        "two clients read it differently (Codex's header 2, goose's last line 3)",
        "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nbuilding\n\nCommand exited with code 3",
    ),
]


def test_the_request_is_claude_codes_by_its_user_agent_and_by_its_tools() -> None:
    for ua in (CLAUDE_UA, None):
        result = _as_claude_code(STATED[0][1], ua=ua)
        assert result.history is not None and result.history.client == "claude-code", ua


@pytest.mark.parametrize(("where", "text", "number"), STATED, ids=[s[0] for s in STATED])
@pytest.mark.parametrize("ua", [CLAUDE_UA, None], ids=["user-agent", "tools"])
def test_a_flagged_result_in_another_clients_frame_states_its_number(
    where: str, text: str, number: int, ua: str | None
) -> None:
    result = _as_claude_code(text, ua=ua)
    assert result.status == "rewritten", result.reason
    (step,) = result.steps
    assert step["status"] == "CORTEX_STEP_STATUS_DONE"
    assert step["runCommand"]["exitCode"] == number
    summary = result.summary()
    assert (summary["failed"], summary["failed_exit_codes"]) == (1, [number])
    # The reading says whose frame it took, and that it was not the named client's.
    status = parse_exit_status(text, True, "claude-code")
    assert status.code == number and "claude-code" in status.source, status


@pytest.mark.parametrize(("where", "text"), FAILED_IN_WORDS, ids=[s[0] for s in FAILED_IN_WORDS])
def test_a_flagged_result_with_another_clients_failure_words_is_1(where: str, text: str) -> None:
    result = _as_claude_code(text)
    (step,) = result.steps
    assert step["runCommand"]["exitCode"] == 1
    assert result.summary()["failed_exit_codes"] == [1]


@pytest.mark.parametrize(("why", "text"), NO_NUMBER, ids=[s[0] for s in NO_NUMBER])
def test_a_flagged_result_whose_number_cannot_be_stated_stays_a_message_with_its_flag(why: str, text: str) -> None:
    result = _as_claude_code(text)
    assert result.status == "unchanged" and not result.steps, result.reason
    assert result.plan is not None
    kept = result.plan.kept
    assert [p.code for p in kept] == ["untranslatable", "untranslatable"]
    assert all("flagged" in (p.reason or "") for p in kept), kept
    summary = result.summary()
    assert summary["failed"] == 0 and summary["kept_by_code"] == {"untranslatable": 2}


def test_the_message_keeps_its_flag_when_other_pairs_become_steps() -> None:
    doc = orjson.loads(_body(NO_NUMBER[0][1]))
    doc["messages"][1]["content"].insert(
        0, {"type": "tool_use", "id": "t0", "name": "Bash", "input": {"command": "ls"}}
    )
    doc["messages"][2]["content"].insert(0, {"type": "tool_result", "tool_use_id": "t0", "content": "a\nb"})
    result = rewrite(orjson.dumps(doc), path=PATH, client_hint=CLAUDE_UA)
    assert result.status == "rewritten", result.reason
    after = orjson.loads(result.body or b"")
    (kept,) = after["messages"][2]["content"]
    assert kept == doc["messages"][2]["content"][1]
    assert kept["is_error"] is True


def _frames() -> list[tuple[str, str]]:
    out = []
    for rule in RULES:
        out += [(f"{rule.name}#{i}", example) for i, example in enumerate(rule.examples)]
    return out


@pytest.mark.parametrize("client", [c.id for c in CLIENTS])
def test_no_flagged_result_becomes_a_step_that_drops_the_failure(client: str) -> None:
    """Every frame we know (each rule's examples), under every client's identity, flagged: a step
    states a failure (a number other than 0) and the record counts it, or there is no step."""
    for name, example in _frames():
        result = rewrite(_body(example), Config(client=client), path=PATH)
        codes = [step["runCommand"].get("exitCode") for step in result.steps]
        assert all(code not in (None, 0) for code in codes), (name, codes)
        assert result.summary()["failed"] == len(codes), name


def test_an_unflagged_result_in_another_clients_frame_is_still_the_programs_output() -> None:
    # Without the flag there is no failure to keep: the named client's reading stands (its own
    # frames only; another client's line may be what its program printed), so no number.
    result = _as_claude_code(STATED[0][1], is_error=None)
    (step,) = result.steps
    assert "exitCode" not in step["runCommand"]


def test_generic_families_are_every_clients() -> None:
    # Sanity of the premise: the frames above are another client's, not Claude Code's own.
    claude_rules = {r.name for r in RULES if "claude-code" in r.clients and ANY not in r.clients}
    for _, text, _ in STATED:
        assert not any(n in claude_rules for n in parse_exit_status(text, True, None).source.split("+"))
