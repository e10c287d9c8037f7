"""Issue 39 item 3: failures stated in words, without a number, at their place.

A command killed by a timeout, aborted, or a tool call that raised (the framework's error envelope,
a spawn error, a JSON ``{"error": …}`` or ``{"status": "error", …}``) states a failure and no number:
1 (truth rule 3), never a DONE step with no code. Where a number is stated beside the words, that
number. Each text is the research's (tests/fixtures/paths/clients-a.md, clients-b.md: the row id
says which), read for its client when we name it and for a client we cannot name; refusals inside
an envelope say the command never ran (no step).
"""

from __future__ import annotations

import orjson
import pytest
from native_bridge.core.clients import counts_for
from native_bridge.core.exitstatus import parse_exit_status
from native_bridge.core.pipeline import Config, rewrite
from native_bridge.core.rules.envelopes import ENVELOPES
from native_bridge.core.rules.types import Envelope

NOT_RUN, RUNNING = "not_run", "running"

# (research row, client (None: one we do not name), text, is_error, what it states)
CASES: list[tuple[str, str | None, str, bool | None, int | str]] = [
    # ---- framework error envelopes: the tool call raised ------------------------------------------
    (
        "B16 cline envelope, spawn error",
        "cline",
        "The tool execution failed with the following error:\n<error>\nError executing execute_command: spawn "
        "/bin/zsh ENOENT\n</error>",
        None,
        1,
    ),
    (
        "B47 roo code before 3.33.1, envelope",
        "roo-code",
        'The tool execution failed with the following error:\n<error>\nError executing command: {"name":"Error",'
        '"message":"spawn ENOENT"}\n</error>',
        None,
        1,
    ),
    (
        "B43 roo code >= 3.33.1, JSON status error",
        "roo-code",
        '{"status":"error","message":"The tool execution failed","error":"Error executing command: {\\"name\\":'
        '\\"Error\\",\\"message\\":\\"spawn /bin/zsh ENOENT\\"}"}',
        None,
        1,
    ),
    (
        "B60 goose tool error over Chat Completions",
        "goose",
        "The tool call returned the following error:\n-32603: Shell output from command 'cat big.log' has too many "
        "characters (500000). Maximum character count is 400000.",
        None,
        1,
    ),
    (
        "B56 goose spawn error",
        "goose",
        "Failed to spawn shell command: No such file or directory (os error 2)",
        None,
        1,
    ),
    (
        "B86 continue thrown",
        "continue",
        "run_terminal_command failed with the message: spawn /bin/zsh ENOENT\n\nPlease try something else or request "
        "further instructions.",
        None,
        1,
    ),
    ("B96 continue cli spawn", "continue-cli", "Error executing tool Bash: Error: spawn /bin/bash ENOENT", None, 1),
    (
        "OH-09 openhands AgentErrorEvent",
        "openhands",
        "Error executing tool 'terminal': Unified session is not initialized",
        None,
        1,
    ),
    (
        "AS-05 agents sdk default_tool_error_function",
        "agents-sdk",
        "An error occurred while running the tool. Please try again. Error: sandbox exec transport failed",
        None,
        1,
    ),
    (
        "B70 crush job error over OpenAI",
        "crush",
        '[Job 3] error executing command: exec: "bash": executable file not found in $PATH',
        None,
        1,
    ),
    (
        "CX-04 codex exec_command spawn error",
        "codex",
        'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create unified exec process: No such '
        'file or directory (os error 2)\\")" }',
        None,
        1,
    ),
    (
        "B133 copilot envelope",
        None,
        "ERROR while calling tool: The terminal was closed\nPlease check your input and try again.",
        None,
        1,
    ),
    ("B149 langgraph ToolNode", None, "Error: ToolException('boom')\n Please fix your mistakes.", None, 1),
    (
        "B152 agents sdk, unnamed",
        None,
        "An error occurred while running the tool. Please try again. Error: boom",
        None,
        1,
    ),
    ("spawn error as a JSON error object", None, '{"error": "spawn /bin/bash ENOENT"}', None, 1),
    # ---- a number beside the words: that number ----------------------------------------------------
    (
        "B96 continue cli, a code beside the envelope",
        "continue-cli",
        "Error executing tool Bash: Error (exit code 2): ls: cannot access '/nope'",
        None,
        2,
    ),
    (
        "cline envelope around a stated code",
        None,
        "The tool execution failed with the following error:\n<error>\nCommand failed with exit code 3.\n</error>",
        None,
        3,
    ),
    # Amazon Q CLI's execute_bash JSON (a client we do not name): the status as a string.
    (
        "B153 amazon q execute_bash",
        None,
        '{"exit_status":"2","stdout":"","stderr":"ls: cannot access \'/nope\'"}',
        None,
        2,
    ),
    ("B154 amazon q execute_cmd", None, '{"exit_status":"exit status: 2","stdout":"","stderr":"ls"}', None, 2),
    (
        "B155 amazon q execute_cmd, signal",
        None,
        '{"exit_status":"signal: 9 (SIGKILL)","stdout":"","stderr":""}',
        None,
        1,
    ),
    # ---- timeouts, aborts, in words ------------------------------------------------------------------
    ("AS-06 agents sdk tool timeout", "agents-sdk", "Tool 'exec_command' timed out after 30 seconds.", None, 1),
    ("B151 agents sdk shell render, timeout", None, "$ sleep 100\nstatus: timeout", None, 1),
    ("B144 langchain v1 shell timeout", None, "Error: Command timed out after 30.0 seconds.", None, 1),
    ("B148 langchain persistent timeout", None, "Timeout error while executing command sleep 100", None, 1),
    ("CX-08 codex aborted by user", "codex", "Wall time: 5.0 seconds\naborted by user", None, 1),
    ("CX-09 codex aborted by user, older", "codex", "aborted by user after 5.0s", None, 1),
    ("OC-07 opencode aborted", "opencode", "Tool execution aborted", None, 1),
    (
        "B127 zed 2025 interrupted",
        "zed",
        "Command failed or was interrupted.\nPartial output captured:\n\n```\npartial\n```",
        None,
        1,
    ),
    (
        "B95 continue cli timeout under a truncation note",
        "continue-cli",
        "(previous 20 lines truncated)\n\nwaiting\n\n[Command timed out after 120 seconds of no output]\n\n(Note: "
        "output limit reduced due to 3 parallel tool calls. Single-tool limit: 50,000 characters or 1,000 lines.)",
        None,
        1,
    ),
    # ---- refusals inside an envelope: the command never ran ----------------------------------------
    (
        "B14 cline permission blocked",
        "cline",
        "The tool execution failed with the following error:\n<error>\nCommand execution blocked by "
        'CLINE_COMMAND_PERMISSIONS: Command "rm -rf build" was denied by CLINE_COMMAND_PERMISSIONS. Reason: matches '
        "deny rule. You must try a different approach or ask the user to update the permission settings.\n</error>",
        None,
        NOT_RUN,
    ),
    (
        "B15 cline .clineignore",
        "cline",
        "The tool execution failed with the following error:\n<error>\nAccess to .env is blocked by the .clineignore "
        "file settings. You must try to continue in the task without using this file, or ask the user to update the "
        ".clineignore file.\n</error>",
        None,
        NOT_RUN,
    ),
    (
        "B17 cline missing parameter",
        "cline",
        "The tool execution failed with the following error:\n<error>\nMissing value for required parameter "
        "'command'. Please retry with complete response.\n</error>",
        None,
        NOT_RUN,
    ),
    (
        "B44 roo .rooignore",
        "roo-code",
        '{"status":"error","type":"access_denied","message":"Access blocked by .rooignore","path":".env",'
        '"suggestion":"Try to continue without this file, or ask the user to update the .rooignore file"}',
        None,
        NOT_RUN,
    ),
    # ---- refusals and stand-ins of calls that never ran (until now a DONE step, exit 1 or no code) ----
    (
        "CC-19 claude code permission rule",
        "claude-code",
        "Permission to use Bash with command rm -rf build has been denied.",
        True,
        NOT_RUN,
    ),
    (
        "CC-19b claude code auto-denied",
        "claude-code",
        "Permission to use Bash has been auto-denied in dontAsk mode.",
        True,
        NOT_RUN,
    ),
    (
        "CC-19b claude code auto-denied, no prompts",
        "claude-code",
        "Permission to use Bash has been auto-denied (prompts unavailable).",
        True,
        NOT_RUN,
    ),
    (
        "CC-20 claude code skipped call",
        "claude-code",
        "[Tool call skipped: the turn ended to deliver the message that follows before this call ran. Re-run it if "
        "still needed.]",
        True,
        NOT_RUN,
    ),
    (
        "CC-23 claude code approval expired",
        "claude-code",
        "[Tool call not completed: an approval request expired with no answer, so the action awaiting approval did "
        "not run. Re-run it if still needed.]",
        True,
        NOT_RUN,
    ),
    (
        "GM-14 gemini cli path outside the workspace",
        "gemini-cli",
        '{"error": "Path not in workspace: Attempted path \\"/etc\\" resolves outside the allowed workspace '
        'directories: /home/u/proj or the project temp directory: /home/u/.gemini/tmp/x"}',
        True,
        NOT_RUN,
    ),
    (
        "GM-23 gemini cli sandbox expansion",
        "gemini-cli",
        '{"error": "{\\"type\\":\\"sandbox_expansion\\",\\"title\\":\\"Sandbox Expansion Request\\",'
        '\\"command\\":\\"npm install\\"}"}',
        True,
        NOT_RUN,
    ),
    ("B58 goose empty command", "goose", "Command cannot be empty.", None, NOT_RUN),
    ("B59 goose bad arguments", "goose", "Error: Failed to parse arguments: missing field `command`", None, NOT_RUN),
    ("B72 crush hook", "crush", "Tool call blocked by hook. Reason: rm is not allowed", None, NOT_RUN),
    ("B99 continue cli denied", "continue-cli", "Permission denied by user", None, NOT_RUN),
    ("B100 continue cli policy", "continue-cli", "Command blocked by security policy", None, NOT_RUN),
    ("B107 swe-agent blocklist", "swe-agent", "Operation 'vim' is not supported by this environment.", None, NOT_RUN),
    ("B117 void rejected", "void", "Tool call was rejected by the user.", None, NOT_RUN),
    (
        "B129 zed cd outside the worktrees",
        "zed",
        '`cd` directory "foo" was not in any of the project\'s worktrees.',
        None,
        NOT_RUN,
    ),
    # ---- still running: no outcome yet ------------------------------------------------------------
    (
        "B97 continue cli moved to the background",
        "continue-cli",
        'Command moved to background. Job ID: 3\nOutput so far:\nready\nUse CheckBackgroundJob("3") to check status.',
        None,
        RUNNING,
    ),
    (
        "B98 continue cli left in the foreground",
        "continue-cli",
        "Failed to move to background (job limit reached). Command continues in foreground.\nOutput so far: building",
        None,
        RUNNING,
    ),
    (
        "B132 copilot background",
        None,
        "Command is running in terminal with ID=3f2a\n The command is still running, with output:\nready",
        None,
        RUNNING,
    ),
    (
        "CC-13 claude code timeout moved it to the background",
        "claude-code",
        "Starting dev server\nCommand did not complete within its 120s timeout and was moved to the background (ID: "
        "b7x2). Output is being written to: /tmp/claude/b7x2.output.\nYou will be notified when it completes.",
        None,
        RUNNING,
    ),
    (
        "CC-14 claude code moved to deliver a message",
        "claude-code",
        "Command was moved to the background (ID: b9) so that a message that arrived while it was running can reach "
        "you; it was not interrupted. Output is being written to: /tmp/claude/b9.output.",
        None,
        RUNNING,
    ),
    (
        "QW-09 qwen code background shell",
        "qwen-code",
        "Background shell started.\nid: bg_1a2b\npid: 4242\noutput file: /tmp/q/bg_1a2b.output\nstatus file: "
        "/tmp/q/bg_1a2b.status\nTo inspect: /tasks (text)",
        None,
        RUNNING,
    ),
    (
        "QW-10 qwen code promoted to background",
        "qwen-code",
        'Foreground command "npm run dev" promoted to background as bg_9.\nStatus: running. PID: 77.\nOutput '
        "snapshot at promote time saved to: /tmp/q/bg_9.output",
        None,
        RUNNING,
    ),
    (
        "QW-11 qwen code background, 0.12",
        "qwen-code",
        "Background command started. PID: 4242 (Use kill <pid> to stop)",
        None,
        RUNNING,
    ),
    ("CX-21 codex aborted before dispatch", "codex", "aborted before dispatch", None, NOT_RUN),
    (
        "KL-08 kilo shell integration error",
        "kilo",
        "Command failed to execute in terminal due to a shell integration error.",
        None,
        NOT_RUN,
    ),
    (
        "OH-05 openhands previous command still running",
        "openhands",
        "[An error occurred during execution.]\n\n[Below is the output of the previous command.]\nserver up\n[Your "
        'command "ls" is NOT executed. The previous command is still running - You CANNOT send new commands until the '
        "previous command is completed.]",
        None,
        NOT_RUN,
    ),
    (
        "OH-07 openhands no previous command",
        "openhands",
        "[An error occurred during execution.]\n\nNo previous running command to retrieve logs from.",
        None,
        NOT_RUN,
    ),
    (
        "OH-08 openhands multiple commands",
        "openhands",
        "[An error occurred during execution.]\n\nCannot execute multiple commands at once.\nPlease run each command "
        "separately OR chain them into a single command via && or ;\nProvided commands:\n(1) ls\n(2) pwd",
        None,
        NOT_RUN,
    ),
    ("OH-10 openhands cancelled by interrupt", "openhands", "Tool call cancelled by interrupt.", None, NOT_RUN),
    ("OH-11 openhands rejected", "openhands", "Action rejected: User rejected the action.", None, NOT_RUN),
    # ---- an observation prefix before the client's frame -------------------------------------------
    (
        "B104 swe-agent timeout, default config",
        "swe-agent",
        "OBSERVATION:\nThe command 'sleep 100' was cancelled because it took more than 30 seconds. Please try a "
        "different command that completes more quickly.",
        None,
        1,
    ),
    (
        "B105 swe-agent timeout, TemplateConfig",
        "swe-agent",
        "Observation: The command 'sleep 100' was cancelled because it took more than 30 seconds. Please try a "
        "different command that completes more quickly.",
        None,
        1,
    ),
    (
        "CX-05 codex rejected by policy",
        "codex",
        'exec_command failed: CreateProcess { message: "Rejected(\\"approval required by policy, but '
        'AskForApproval is set to Never\\")" }',
        None,
        NOT_RUN,
    ),
]
IDS = [c[0] for c in CASES]


def _check(status, expected: int | str) -> None:
    if expected in (NOT_RUN, RUNNING):
        assert (status.code, status.verdict) == (None, expected), status
    else:
        assert status.code == expected, status


@pytest.mark.parametrize(("case", "client", "text", "is_error", "expected"), CASES, ids=IDS)
def test_named(case: str, client: str | None, text: str, is_error: bool | None, expected: int | str) -> None:
    if client is None:
        pytest.skip("a client we do not name")
    _check(parse_exit_status(text, is_error, client), expected)


@pytest.mark.parametrize(("case", "client", "text", "is_error", "expected"), CASES, ids=IDS)
def test_unnamed(case: str, client: str | None, text: str, is_error: bool | None, expected: int | str) -> None:
    _check(parse_exit_status(text, is_error, None), expected)


@pytest.mark.parametrize(("case", "client", "text", "is_error", "expected"), CASES, ids=IDS)
def test_never_a_done_step_without_its_failure(
    case: str, client: str | None, text: str, is_error: bool | None, expected: int | str
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "make"}'}}
    raw = orjson.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": text},
            ],
        }
    )
    for config in (Config(client=client), Config()):
        result = rewrite(raw, config)
        if expected in (NOT_RUN, RUNNING):
            assert not result.steps, config
            continue
        (step,) = result.steps
        assert step["runCommand"].get("exitCode") == expected, config
        assert result.summary()["failed_exit_codes"] == [expected]


@pytest.mark.parametrize(
    ("client", "text"),
    [
        # Words inside the program's output, not at their place.
        ("opencode", "building\nTool execution aborted\ndone"),
        (None, "step 1\nAn error occurred while running the tool. Please try again. Error: x\nstep 2"),
        (None, "log:\nError: Command timed out after 30.0 seconds.\nretrying... ok"),
        # Another client's words under a named client: its program's output (truth rule 3).
        ("claude-code", "An error occurred while running the tool. Please try again. Error: boom"),
        ("claude-code", "Tool execution aborted"),
        ("codex", "The tool execution failed with the following error:\n<error>\nboom\n</error>"),
        # A JSON object that is more than an error: a program's output.
        (None, '{"error": "not found", "items": []}'),
        (None, '{"status": "error-free", "count": 2}'),
    ],
)
def test_words_elsewhere_or_of_another_client_are_no_claim(client: str | None, text: str) -> None:
    status = parse_exit_status(text, None, client)
    assert status.code is None and status.verdict not in ("failed", "not_run"), status


ENVELOPE_CASES = [(env, example) for env in ENVELOPES for example in env.examples]


@pytest.mark.parametrize(
    ("env", "example"), ENVELOPE_CASES, ids=[f"{e.name}-{i}" for i, (e, _) in enumerate(ENVELOPE_CASES)]
)
def test_each_envelope_is_a_failure_for_its_clients_and_no_other(env: Envelope, example: str) -> None:
    """An envelope's example states a failure (no number: 1) for its clients and for a client we
    cannot name; for another named client it is that client's program output (truth rule 3)."""
    for client in (*env.clients, None):
        status = parse_exit_status(example, None, client)
        assert (status.code, status.flagged) == (1, True), (client, status)
        assert env.name in status.source, (client, status)
    for client in ("claude-code", "codex", "gemini-cli", "opencode", "zed", "goose"):
        if counts_for(client, env.clients):
            continue
        status = parse_exit_status(example, None, client)
        assert not status.flagged and status.code is None, (client, status)


def test_amazon_q_writes_0_for_a_signal_so_its_0_is_no_claim() -> None:
    # execute/mod.rs: exit_status = status.code().unwrap_or(0): a signal reads "0" too. Its newer
    # execute_cmd writes Rust's ExitStatus ("exit status: 0" or "signal: 9 (SIGKILL)"): that 0 is one.
    assert parse_exit_status('{"exit_status":"0","stdout":"ok","stderr":""}').code is None
    assert parse_exit_status('{"exit_status":"exit status: 0","stdout":"ok","stderr":""}').code == 0
    # Another shape, or a named client: a program's output.
    assert parse_exit_status('{"exit_status":"2","stdout":"","stderr":"","x":1}').code is None
    assert parse_exit_status('{"exit_status":"2","stdout":"","stderr":""}', None, "claude-code").code is None
