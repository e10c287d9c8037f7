"""Issue 39: shell result paths the reader got wrong, from the research in tests/fixtures/paths/
(clients-a.md, clients-b.md: every path of each client read from its source). Each case is the
research's text (or the source's, where the research's text missed a part of it), read for the
named client and for a client we cannot name, with what rule 3 says it states.

- false claims first: a command still running read as exit 0, a stated number read as another;
- a stated number wins, any number: negative sentinels are that number, never 1;
- numbers stated in frames the reader did not read (nested statuses, Python's own error text,
  a client's ``<system>`` tag, a trailer behind the client's header);
- the Gemini CLI family's frame behind a gateway's JSON, a truncation preface or a hook's note;
- the Kilo Code extension (named ``kilo``) writes Roo Code's frames.

Rules' own examples are tested in tests/test_exitstatus_clients.py; these are the paths around
them (wrappers, JSON, versions) that the rules alone do not show.
"""

from __future__ import annotations

import orjson
import pytest
from native_bridge.core.exitstatus import parse_exit_status
from native_bridge.core.pipeline import Config, rewrite

RUNNING, NOT_RUN = "running", "not_run"

# (research id, client, text, is_error, what the text states: a code, None (absent), or a verdict
# that makes no step). The unnamed reading must say the same, unless UNNAMED says otherwise.
CASES: list[tuple[str, str | None, str, bool | None, int | str | None]] = [
    # ---- 1. false claims: Cline v4 run_commands, a command left running is "success": true ----------
    (
        "B24 cline v4 auto-proceed",
        "cline",
        '[{"query":"npm run dev","result":"The command was still starting or running after 30 seconds, so Cline '
        "automatically proceeded while leaving it running in the terminal.\\nThis is partial output; further output "
        "is being redirected to this file, which you can read to check progress: /tmp/cline/run-1.log\\nOutput so "
        'far:\\nready","success":true}]',
        None,
        RUNNING,
    ),
    (
        "B24 cline v4 user proceed",
        "cline",
        '[{"query":"npm run dev","result":"The user chose to proceed while the command is starting or still running '
        "in their terminal.\\nThis is partial output; further output is being redirected to this file, which you can "
        'read to check progress: /tmp/cline/run-3.log\\nNo output so far.","success":true}]',
        None,
        RUNNING,
    ),
    (
        "B25 cline v4 background detached",
        "cline",
        '[{"query":"npm run dev","result":"[Command is still running. Output will continue in /tmp/cline/run-2.log]'
        '\\nready","success":true}]',
        None,
        RUNNING,
    ),
    (
        "B27 cline sdk before 2026-06-12, no stderr",
        "cline",
        '[{"query":"exit 2","result":"","error":"Command failed: Command exited with code 2","success":false}]',
        None,
        2,
    ),
    # Open Interpreter's computer-use bash (Anthropic's demo tool): the session's shell had exited
    # before this call, so this command never ran; the number is the dead shell's, not this command's.
    (
        "B157 open interpreter, session exited",
        None,
        "<system>tool must be restarted</system>\nbash has exited with returncode 2",
        True,
        NOT_RUN,
    ),
    ("B157 as researched", None, "bash has exited with returncode 2", True, NOT_RUN),
    # ---- 2. a stated number wins, any number -------------------------------------------------------
    (
        "MS-03 mini-swe-agent timeout",
        "mini-swe-agent",
        '{\n  "returncode": -1,\n  "output": "",\n  "exception_info": "An error occurred while executing the '
        "command: Command 'sleep 100' timed out after 30 seconds\"\n}",
        None,
        -1,
    ),
    (
        "MS-04 mini-swe-agent timeout, tags",
        "mini-swe-agent",
        "<exception>An error occurred while executing the command: Command 'sleep 100' timed out after 30 seconds"
        "</exception>\n<returncode>-1</returncode>\n<output>\n</output>",
        None,
        -1,
    ),
    (
        "MS-05 mini-swe-agent error",
        "mini-swe-agent",
        '{\n  "returncode": -1,\n  "output": "",\n  "exception_info": "An error occurred while executing the '
        "command: [Errno 2] No such file or directory: '/nope'\"\n}",
        None,
        -1,
    ),
    # A tool's own {"stdout", "stderr", "returncode"} (the common hand-written shell tool).
    (
        "generic returncode",
        None,
        '{"stdout": "", "stderr": "ls: cannot access \'/nope\': No such file or directory", "returncode": 2}',
        None,
        2,
    ),
    ("generic returncode, sentinel", None, '{"stdout": "", "stderr": "timed out", "returncode": -9}', None, -9),
    ("generic exit code, sentinel", None, "Exit code: -1\nOutput:\ntimed out", None, -1),
    # ---- 3. numbers in frames the reader did not read ----------------------------------------------
    (
        "B82 continue non-streaming status",
        "continue",
        "npm ERR! missing script\n[Status: Command failed with: Command failed with exit code 2]",
        None,
        2,
    ),
    (
        "B83 continue non-streaming signal",
        "continue",
        "\n[Status: Command failed with: Command failed with exit code null]",
        None,
        1,
    ),
    (
        "B85 continue non-streaming spawn error",
        "continue",
        "Error: spawn /bin/zsh ENOENT\n[Status: Command failed with: spawn /bin/zsh ENOENT]",
        None,
        1,
    ),
    ("B93 continue cli signal", "continue-cli", "Error executing tool Bash: Error (exit code null): Killed\n", None, 1),
    (
        "B135 kimi cli failed",
        "kimi-cli",
        "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access '/nope': No such file or "
        "directory",
        None,
        2,
    ),
    (
        "B136 kimi cli failed, truncated",
        "kimi-cli",
        "<system>ERROR: Command failed with exit code: 1. Output is truncated to fit in the message.</system>\nFAIL",
        None,
        1,
    ),
    ("B137 kimi cli success", "kimi-cli", "<system>Command executed successfully.</system>\nok", None, 0),
    ("B138 kimi cli timeout", "kimi-cli", "<system>ERROR: Command killed by timeout (60s)</system>\npartial", None, 1),
    (
        "B139 kimi cli spawn error",
        "kimi-cli",
        "<system>ERROR: Command execution failed: [Errno 2] No such file or directory</system>",
        None,
        1,
    ),
    ("B140 kimi cli background", "kimi-cli", "<system>Background task started.</system>\ntask_id: b1", None, RUNNING),
    ("B142 kimi cli 2025-09 timeout", "kimi-cli", "waiting\n(Command killed by timeout)", None, 1),
    ("B145 python CalledProcessError", None, "Command 'ls /nope' returned non-zero exit status 2.", None, 2),
    (
        "python CalledProcessError, argv, first line",
        None,
        "Command '['make', 'test']' returned non-zero exit status 2.\nmake: *** [test] Error 1",
        None,
        2,
    ),
    # A signal is no exit code: Python's text names the signal (9), which must never become the code.
    ("B146 python CalledProcessError, signal", None, "Command 'sleep 100' died with <Signals.SIGKILL: 9>.", None, 1),
    ("B147 langchain persistent bash", None, "Exited with error status: 2", None, 2),
    (
        "gptme failed",
        "gptme",
        "Ran command: `ls /nope`\n\n`ls: cannot access '/nope': No such file or directory`\n\nReturn code: 2\n",
        None,
        2,
    ),
    (
        "gptme failed, blocks",
        "gptme",
        "Ran command:\n```bash\ncd /w\nmake test\n```\n\n```stdout\ncc -c a.c\n```\n\n```stderr\nmake: *** [test] "
        "Error 1\n```\n\nReturn code: 2\n",
        None,
        2,
    ),
    ("gptme success", "gptme", "Ran allowlisted command: `ls`\n\n```stdout\na.txt\nb.txt\n```\n\n", None, 0),
    (
        "gptme timeout",
        "gptme",
        "Command timed out (after 30.0s): `sleep 100`\n\nNo output before timeout\nReturn code: -124\n",
        None,
        -124,
    ),
    (
        "gptme interrupted",
        "gptme",
        "Command interrupted: `sleep 100`\n\nNo output before interruption\nProcess interrupted\n",
        None,
        1,
    ),
    # ---- 4. the Gemini CLI family's frame where the reader missed it -------------------------------
    (
        "GM-08 gateway JSON, wrapper inside",
        "gemini-cli",
        '{"output": "<untrusted_context>\\nOutput: FAIL\\nExit Code: 2\\nProcess Group PGID: 12562\\n'
        '</untrusted_context>"}',
        None,
        2,
    ),
    ("GM-09 gateway JSON", "gemini-cli", '{"output": "Output: FAIL\\nExit Code: 2\\nProcess Group PGID: 1"}', None, 2),
    (
        "GM-19 truncated (v0.26-v0.48)",
        "gemini-cli",
        "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "
        "/home/u/.gemini/tmp/x/tool-outputs/run_shell_command_1.txt\nOutput: line 1\nline 2\n\n... [120,000 "
        "characters omitted] ...\n\nFAILED tests\nExit Code: 2\nProcess Group PGID: 4242",
        None,
        2,
    ),
    (
        "GM-20 truncated, wrapper inside (>= v0.49)",
        "gemini-cli",
        "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "
        "/home/u/.gemini/tmp/x/tool-outputs/run_shell_command_1.txt\n<untrusted_context>\nOutput: line 1\n\n... "
        "[120,000 characters omitted] ...\n\nFAILED tests\nExit Code: 2\nProcess Group PGID: 4242\n"
        "</untrusted_context>",
        None,
        2,
    ),
    (
        "GM-21 truncated (<= v0.25, full frame)",
        "gemini-cli",
        "Tool output was too large and has been truncated.\nThe full output has been saved to: /tmp/x.output\nTo read "
        "the complete output, use the read_file tool with the absolute file path above.\nTruncated part of the "
        "output:\nCommand: make test\nDirectory: (root)\nOutput: line 1\n... [CONTENT TRUNCATED] ...\nFAILED\nError: "
        "(none)\nExit Code: 2\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242",
        None,
        2,
    ),
    (
        "GM-24 hook note after the wrapper",
        "gemini-cli",
        "<untrusted_context>\nOutput: FAIL\nExit Code: 2\nProcess Group PGID: 12562\n</untrusted_context>\n\n"
        "[System] Tool input parameters were modified by a hook before execution.",
        None,
        2,
    ),
    (
        "GM-24 hook note naming the keys",
        "gemini-cli",
        "Output: FAIL\nExit Code: 2\nProcess Group PGID: 12562\n\n[System] Tool input parameters (command) were "
        "modified by a hook before execution.",
        None,
        2,
    ),
    (
        "QW-08 qwen code truncated",
        "qwen-code",
        "Tool output was too large and has been truncated.\nThe full output has been saved to: "
        "/tmp/q/run_shell_command_ab12.output\nTo read the complete output, use the read_file tool with the absolute "
        "file path above.\nThe truncated output below shows the beginning and end of the content. The marker '... "
        "[CONTENT TRUNCATED] ...' indicates where content was removed.\n\nTruncated part of the output:\nCommand: "
        "make test\nDirectory: (root)\nOutput: line 1\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\nFAILED\nError: "
        "(none)\nExit Code: 2\nSignal: (none)\nProcess Group PGID: 77",
        None,
        2,
    ),
    # ---- 5. Kilo Code (a Roo Code fork, named kilo) writes Roo Code's frames ------------------------
    (
        "KL-03 kilo code success",
        "kilo",
        "Command executed in terminal  within working directory '/home/u/proj'. Exit code: 0\nOutput:\nhi",
        None,
        0,
    ),
    (
        "KL-04 kilo code non-zero exit",
        "kilo",
        "Command executed in terminal  within working directory '/home/u/proj'. Command execution was not "
        "successful, inspect the cause and adjust as needed.\nExit code: 2\nOutput:\nls: cannot access '/nope'",
        None,
        2,
    ),
    (
        "KL-05 kilo code signal",
        "kilo",
        "Command executed in terminal  within working directory '/home/u/proj'. Process terminated by signal SIGKILL"
        "\nOutput:\nKilled",
        None,
        1,
    ),
    (
        "KL-06 kilo code timeout",
        "kilo",
        "The command was terminated after exceeding a user-configured 30s timeout. Do not try to re-run the command.",
        None,
        1,
    ),
    (
        "KL-07 kilo code still running",
        "kilo",
        "Command is still running in terminal  from '/home/u/proj'.\nHere's the output so far:\nListening on :3000\n\n"
        "You will be updated on the terminal status and new output in the future.",
        None,
        RUNNING,
    ),
    # ---- other paths of named clients whose number or outcome was not read -------------------------
    ("B108 void >= 1.3", "void", "ls: cannot access '/nope'\n(exit code 2)", None, 2),
    ("B109 void >= 1.3, success", "void", "ok\n(exit code 0)", None, 0),
    (
        "B115 void 2025-04 dev builds",
        "void",
        "Terminal command executed and finished. Result (exit code 2):\nls: cannot access '/nope'",
        None,
        2,
    ),
    (
        "B35 roo code persisted output, signal",
        "roo-code",
        "Command executed in '/w'. Process terminated by signal SIGTERM\n\nOutput (61.0KB) persisted. Artifact ID: "
        "cmd-18.txt\n\nPreview:\nbuilding\n\nUse read_command_output tool to view full output if needed.",
        None,
        1,
    ),
    (
        "B10 cline >= 3.33 timeout, left running",
        "cline",
        "Command execution timed out after 30 seconds. \nOutput so far:\nwaiting",
        None,
        RUNNING,
    ),
]

IDS = [c[0] for c in CASES]


def _check(status, expected: int | str | None) -> None:
    if expected in (RUNNING, NOT_RUN):
        assert (status.code, status.verdict) == (None, expected), status
    else:
        assert status.code == expected, status


# A case without a client is read only as a client we cannot name (the test below).
NAMED = [c for c in CASES if c[1] is not None]


@pytest.mark.parametrize(("case", "client", "text", "is_error", "expected"), NAMED, ids=[c[0] for c in NAMED])
def test_named_client_reads_what_the_text_states(
    case: str, client: str | None, text: str, is_error: bool | None, expected: int | str | None
) -> None:
    _check(parse_exit_status(text, is_error, client), expected)


@pytest.mark.parametrize(("case", "client", "text", "is_error", "expected"), CASES, ids=IDS)
def test_unnamed_client_reads_what_the_text_states(
    case: str, client: str | None, text: str, is_error: bool | None, expected: int | str | None
) -> None:
    _check(parse_exit_status(text, is_error, None), expected)


def _chat(result: str) -> bytes:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "make test"}'}}
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


@pytest.mark.parametrize(("case", "client", "text", "is_error", "expected"), CASES, ids=IDS)
def test_through_rewrite(case: str, client: str | None, text: str, is_error: bool | None, expected: object) -> None:
    """The step says what the text states; a command still running or never run makes no step."""
    if is_error:
        return  # Chat Completions carries no error flag
    for config in (Config(client=client), Config()):
        result = rewrite(_chat(text), config)
        if expected in (RUNNING, NOT_RUN):
            assert result.status == "unchanged", (config, result.reason)
            assert result.plan is not None and not result.plan.steps
            continue
        (step,) = result.steps
        assert step["runCommand"].get("exitCode") == expected, config


def test_a_signal_number_never_becomes_the_exit_code() -> None:
    for client in (None, "claude-code"):
        for is_error in (None, True):
            assert parse_exit_status("Command 'x' died with <Signals.SIGKILL: 9>.", is_error, client).code != 9


def test_gemini_frame_behind_json_counts_only_as_the_whole_result() -> None:
    # A JSON object with more than the gateway's "output" is a program's output, not the frame.
    text = '{"output": "Output: FAIL\\nExit Code: 2\\nProcess Group PGID: 1", "other": 1}'
    assert parse_exit_status(text, None, "gemini-cli").code is None
    # The truncation preface is Gemini CLI's, at the start only.
    text = "hello\nOutput too large. Showing first 1 and last 2 characters. For full output see: /x\nOutput: a\n"
    assert parse_exit_status(text + "Exit Code: 2\nProcess Group PGID: 1", None, "gemini-cli").code is None


def test_generic_returncode_is_the_whole_result_only() -> None:
    # Not a named client's own structure: its program's output (as for exit_code).
    assert parse_exit_status('{"stdout": "", "stderr": "", "returncode": 2}', None, "opencode").code is None
    # Inside the output, or nested, it is the program's.
    assert parse_exit_status('ok\n{"returncode": 2}', None, None).code is None
    assert parse_exit_status('{"result": {"returncode": 2}}', None, None).code is None


def test_gptme_trailer_counts_only_below_gptmes_header() -> None:
    # A program that prints "Return code: 1" last, through a client that writes no such frame.
    assert parse_exit_status("running child\nReturn code: 1", None, None).code is None
    assert parse_exit_status("running child\nReturn code: 1", None, "claude-code").code is None
    # gptme fences the program's output: a "Return code" line inside it is the program's.
    text = "Ran command: `./check.sh`\n\n```stdout\nchild failed\nReturn code: 1\n```\n\n"
    assert parse_exit_status(text, None, "gptme").code == 0


AS_HEADER = "Chunk ID: 1a2b3c\nWall time: {} seconds\n"
AS_TIMEOUT = "Command timed out after 30.000 seconds."


@pytest.mark.parametrize("client", ["agents-sdk", None])
def test_agents_sdk_sandbox_timeout_is_its_whole_frame_only(client: str | None) -> None:
    """AS-02: on a timeout the sandbox's exec_command writes its header with no exit line and its own
    sentence as the whole output (openai-agents-python shell_tool.py ExecCommandTool.run). A program that
    prints the sentence runs under a header that states its exit: that number, never the sentence."""
    status = parse_exit_status(AS_HEADER.format("30.0021") + "Output:\n" + AS_TIMEOUT, None, client)
    assert (status.code, status.verdict) == (1, "failed")
    printed = AS_HEADER.format("0.0100") + "Process exited with code 0\nOutput:\n" + AS_TIMEOUT
    assert parse_exit_status(printed, None, client).code == 0
