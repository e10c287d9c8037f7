"""The example of every result path of core/rules/paths.py, by the row's id: the text as the model
receives it and the dialect's error flag (None: the dialect carries none, as Chat Completions).

Texts are the clients' as their sources write them (the research in tests/fixtures/paths/ gives the
templates: a number, a path, an output filled in; where a template elides words that no frame reads,
plausible ones stand in); where a test of a reader already holds the research row's text, it is
taken from there (``_case``), so each text is written once.
tests/test_result_paths.py reads each one for its client and for a client we cannot name.
"""

from __future__ import annotations

import test_exitstatus_paths
import test_exitstatus_words

_CASES = {c[0]: c for c in (*test_exitstatus_words.CASES, *test_exitstatus_paths.CASES)}


def _case(name: str) -> tuple[str, bool | None]:
    _, _, text, is_error, _ = _CASES[name]
    return text, is_error


EXIT_HEADER = (
    "Chunk ID: 3c1a9e\nWall time: 0.2000 seconds\nProcess exited with code {}\nOriginal token count: 9\nOutput:\n"
)
GEMINI_OLD = (
    "Command: {cmd}\nDirectory: (root)\nOutput: {out}\nError: {err}\nExit Code: {code}\nSignal: {sig}\n"
    "Background PIDs: (none)\nProcess Group PGID: 4242"
)
QWEN = (
    "Command: {cmd}\nDirectory: (root)\nOutput: {out}\nError: (none)\nExit Code: {code}\nSignal: {sig}\n"
    "Background PIDs: (none)\nProcess Group PGID: 4242"
)
ROO = "Command executed in terminal within working directory '/home/u/proj'. "
KIMI_OK = "<system>Command executed successfully.</system>"

EXAMPLES: dict[str, tuple[str, bool | None]] = {
    # ---- Claude Code ----
    "CC-01": ("hi\n", False),
    "CC-03": ("Exit code 2\nls: cannot access '/nope': No such file or directory", True),
    "CC-04": ("ls: cannot access '/nope': No such file or directory", True),
    "CC-08": ("Exit code 137\nKilled", True),
    "CC-06": ("Exit code 143\nCommand timed out after 2m 0.0s", True),
    "CC-07": ("Command timed out after 2m 0.0s", True),
    "CC-09": ("Exit code 137\n[Request interrupted by user for tool use]\nbuilding", True),
    "CC-22": (
        "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is "
        "unknown. Re-run it if still needed.]",
        True,
    ),
    "CC-17": (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
        "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
        "to proceed.",
        True,
    ),
    "CC-24": ("spawn /bin/bash ENOENT", True),
    "CC-15": (
        "<persisted-output>\nOutput too large (61.2KB). Full output saved to: /tmp/claude/out-1.txt\n\nPreview "
        "(first 2KB):\n1\n2\n3\n</persisted-output>",
        False,
    ),
    "CC-12": (
        "Command running in background with ID: b20hid1oz. Output is being written to: /tmp/claude/b20hid1oz.output",
        False,
    ),
    "CC-13": (
        "Starting dev server\nCommand did not complete within its 120s timeout and was moved to the background (ID: "
        "b7x2). Output is being written to: /tmp/claude/b7x2.output.\nYou will be notified when it completes.",
        False,
    ),
    # ---- Codex CLI ----
    "CX-01": (EXIT_HEADER.format(2) + "ls: cannot access '/nope': No such file or directory\n", None),
    "CX-01.0": (EXIT_HEADER.format(0) + "hi\n", None),
    "CX-14": (
        '{"output":"ls: cannot access \'/nope\': No such file or directory\\n","metadata":{"exit_code":2,'
        '"duration_seconds":0.1}}',
        None,
    ),
    "CX-02": (EXIT_HEADER.format(137) + "Killed\n", None),
    "CX-16": ("execution error: Sandbox(Signal(9))", None),
    "CX-12": ("Exit code: 124\nWall time: 10.0 seconds\nOutput:\ncommand timed out after 10000 milliseconds\n", None),
    "CX-08": _case("CX-08 codex aborted by user"),
    "CX-07": ("exec command rejected by user", None),
    "CX-17": ('execution error: Io(Os { code: 2, kind: NotFound, message: "No such file or directory" })', None),
    "CX-13": (
        "Exit code: 1\nWall time: 0.5 seconds\nTotal output lines: 5000\nOutput:\nline 1\n…4990 tokens truncated…\n"
        "line 5000\n",
        None,
    ),
    "CX-03": (
        "Chunk ID: f800eb\nWall time: 1.0024 seconds\nProcess running with session ID 32244\nOutput:\nready\n",
        None,
    ),
    "CX-04": _case("CX-04 codex exec_command spawn error"),
    # ---- OpenAI Agents SDK ----
    "AS-01": ("Chunk ID: 1a2b3c\nWall time: 0.2000 seconds\nProcess exited with code 2\nOutput:\nls: nope\n", None),
    "AS-01.0": ("Chunk ID: 1a2b3c\nWall time: 0.2000 seconds\nProcess exited with code 0\nOutput:\nhi\n", None),
    "AS-02": ("Chunk ID: 1a2b3c\nWall time: 30.0000 seconds\nOutput:\nCommand timed out after 30.000 seconds.", None),
    "AS-13": (
        "Chunk ID: 1a2b3c\nWall time: 0.5000 seconds\nProcess exited with code 1\nOriginal token count: 12500\n"
        "Output:\nTotal output lines: 5000\n\nline 1\nline 2…12000 tokens truncated…line 4999\nline 5000",
        None,
    ),
    "AS-06": _case("AS-06 agents sdk tool timeout"),
    "AS-07": ("Tool execution was not approved.", None),
    "AS-03": ("Chunk ID: 1a2b3c\nWall time: 1.0000 seconds\nProcess running with session ID 7\nOutput:\nready\n", None),
    "AS-05": _case("AS-05 agents sdk default_tool_error_function"),
    # ---- Gemini CLI ----
    "GM-05": ("Output: hi\nProcess Group PGID: 4242", None),
    "GM-06": (
        "<untrusted_context>\nOutput: ls: cannot access '/nope'\nExit Code: 2\nProcess Group PGID: 4242\n"
        "</untrusted_context>",
        None,
    ),
    "GM-02": (
        GEMINI_OLD.format(cmd="ls /nope", out="ls: cannot access '/nope'", err="(none)", code=2, sig="(none)"),
        None,
    ),
    "GM-07": ("<untrusted_context>\nOutput: building\nSignal: 9\nProcess Group PGID: 4242\n</untrusted_context>", None),
    "GM-10": (
        "<untrusted_context>\nCommand was automatically cancelled because it exceeded the timeout of 5.0 minutes "
        "without output. There was no output before it was cancelled.\n</untrusted_context>",
        None,
    ),
    "GM-11": (
        "<untrusted_context>\nCommand was cancelled by user before it could complete. Below is the output before it "
        "was cancelled:\nbuilding\n</untrusted_context>",
        True,
    ),
    "GM-16": ("Tool execution denied by policy.", True),
    "GM-13": ("spawn /bin/bash ENOENT", True),
    "GM-20": _case("GM-20 truncated, wrapper inside (>= v0.49)"),
    "GM-18": ("Command moved to background (PID: 4821). Output hidden. Press Ctrl+B to view.", None),
    "GM-25": ('{"error": "spawn /bin/bash ENOENT"}', None),
    # ---- Qwen Code ----
    "QW-01": (QWEN.format(cmd="echo hi", out="hi", code=0, sig=0), None),
    "QW-02": (QWEN.format(cmd="ls /nope", out="ls: cannot access '/nope'", code=2, sig=0), None),
    "QW-03": (QWEN.format(cmd="sleep 100", out="(empty)", code="(none)", sig=9), None),
    "QW-04": (
        "Command timed out after 1000ms before it could complete. There was no output before it timed out.",
        None,
    ),
    "QW-05": (
        "Command was cancelled by user before it could complete. Below is the output before it was cancelled:\n"
        "building",
        None,
    ),
    "QW-06": ("Blocked: standalone sleep commands are not allowed. Use a background command instead.", None),
    "QW-12": (
        "Command: make\nDirectory: (root)\nOutput: (empty)\nError: spawn /bin/bash ENOENT\nExit Code: (none)\n"
        "Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: (none)",
        None,
    ),
    "QW-08": _case("QW-08 qwen code truncated"),
    "QW-09": ("Background shell started.\nid: bg_1a2b\npid: 4242\noutput file: /tmp/q/bg_1a2b.output", None),
    # ---- opencode ----
    "OC-01": ("hi\n", None),
    "OC-01.1": ("ls: cannot access '/nope': No such file or directory\n", None),
    "OC-02": (
        "(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms. If this "
        "command is expected to take longer and is not waiting for interactive input, retry with a larger timeout "
        "value in milliseconds.\n</shell_metadata>",
        None,
    ),
    "OC-03": (
        "compiling\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout 120000 ms\n"
        "</bash_metadata>",
        None,
    ),
    "OC-04": ("compiling\n\n(Command timed out after 120000 ms)", None),
    "OC-07": _case("OC-07 opencode aborted"),
    "OC-10": ("The user rejected permission to use this specific tool call.", None),
    "OC-13": ("Error: spawn /bin/bash ENOENT", None),
    "OC-12": (
        "...output truncated...\nFull output saved to: /home/u/.local/share/opencode/tool-output/t1\n9998\n9999\n",
        None,
    ),
    # ---- Kilo ----
    "KL-02": ("hi\n", None),
    "KL-04": _case("KL-04 kilo code non-zero exit"),
    "KL-03": _case("KL-03 kilo code success"),
    "KL-05": _case("KL-05 kilo code signal"),
    "KL-06": _case("KL-06 kilo code timeout"),
    "KL-01": (
        "(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms. If this "
        "command is expected to take longer and is not waiting for interactive input, retry with a larger timeout "
        "value in milliseconds.\n</shell_metadata>",
        None,
    ),
    "KL-08": ("Command failed to execute in terminal due to a shell integration error.", None),
    "KL-07": _case("KL-07 kilo code still running"),
    # ---- OpenHands ----
    "OH-01": ("FAILED tests/test_x.py::test_a\n[The command completed with exit code 2.]", None),
    "OH-01.0": ("hello\n[The command completed with exit code 0.]", None),
    "OH-02": ("^C\n[The command completed with exit code 130. CTRL+C was sent.]", None),
    "OH-03": (
        "Starting server...\n[The command has no new output after 30 seconds. You may wait longer to see additional "
        "output by sending empty command '', send other commands to interact with the current process, or send keys "
        "to interrupt/kill the command.]",
        None,
    ),
    "OH-04": (
        "Starting server...\n[The command timed out after 120 seconds. You may wait longer to see additional output.]",
        None,
    ),
    "OH-11": ("Action rejected: the security policy does not allow rm -rf /", None),
    "OH-12": (
        "1\n2\n<response clipped><NOTE>Observations should not exceed 30000 characters; the full output is saved to "
        "/tmp/openhands/out-1.log.</NOTE>9999\n[The command completed with exit code 3.]",
        None,
    ),
    "OH-09": _case("OH-09 openhands AgentErrorEvent"),
    # ---- mini-swe-agent ----
    "MS-01": ('{"returncode": 2, "output": "ls: cannot access \'/nope\': No such file or directory\\n"}', None),
    "MS-01.0": ('{"returncode": 0, "output": "hi\\n"}', None),
    "MS-02": ('{"returncode": -9, "output": ""}', None),
    "MS-03": _case("MS-03 mini-swe-agent timeout"),
    "MS-08": ('{"returncode": -1, "output": "", "exception_info": "action was not executed"}', None),
    "MS-05": _case("MS-05 mini-swe-agent error"),
    "MS-06": (
        '{"returncode": 2, "output_head": "1\\n2\\n", "output_tail": "9999\\n", "elided_chars": 48000, '
        '"warning": "Output too long."}',
        None,
    ),
    # ---- Cline ----
    "B1": (
        "[execute_command for 'echo hi'] Result:\nCommand executed successfully (exit code 0).\nOutput:\nhi\n",
        None,
    ),
    "B2": ("[execute_command for 'ls /nope'] Result:\nCommand failed with exit code 2.\nOutput:\nls: nope\n", None),
    "B4": ("Command terminated by signal SIGKILL.\nOutput:\nKilled\n", None),
    "B5": ("Command executed.\nOutput:\nhi\n", None),
    "B9": ("Command execution timed out after 30 seconds. \nOutput so far:\nwaiting", None),
    "B11": ("Command was cancelled by the user.", None),
    "B13": ("The user denied this operation.", None),
    "B16": _case("B16 cline envelope, spawn error"),
    "B6": (
        "Command failed with exit code 1.\nOutput:\nFAIL a\n\n... (4000 lines written to /tmp/cline/cmd-1.log) ...\n\n"
        "FAIL z\nFull output saved to: /tmp/cline/cmd-1.log",
        None,
    ),
    "B8": (
        "Command is running in the background. You can proceed with other tasks.\nLog file: /tmp/cline/bg-1.log\n"
        "Output so far:\nready",
        None,
    ),
    "B18": ('[{"query":"ls /nope","result":"","error":"Command exited with code 2","success":false}]', None),
    "B19": ('[{"query":"echo hi","result":"hi\\n","success":true}]', None),
    "B23": ('[{"query":"make","result":"","error":"spawn /bin/zsh ENOENT","success":false}]', None),
    "B25": _case("B25 cline v4 background detached"),
    # ---- Roo Code ----
    "B29": (ROO + "Exit code: 0\nOutput:\nhi\n", None),
    "B30": (
        ROO + "Command execution was not successful, inspect the cause and adjust as needed.\nExit code: 2\nOutput:\n"
        "ls: nope\n",
        None,
    ),
    "B31": (ROO + "Process terminated by signal SIGKILL\nOutput:\nKilled\n", None),
    "B36": (
        "The command was terminated after exceeding a user-configured 60s timeout. Do not try to re-run the command.",
        None,
    ),
    "B37": (
        "Command is still running in terminal  from '/home/u/proj'.\nHere's the output so far:\nListening on :3000",
        None,
    ),
    "B41": ('{"status":"denied","message":"The user denied this operation."}', None),
    "B39": ("Working directory '/home/u/gone' does not exist.", None),
    "B34": (
        "Command executed in '/w'. Exit code: 1\n\nOutput (61.0KB) persisted. Artifact ID: cmd-17.txt\n\nPreview:\n"
        "FAIL\n\nUse read_command_output tool to view full output if needed.",
        None,
    ),
    "B43": _case("B43 roo code >= 3.33.1, JSON status error"),
    # ---- goose ----
    "B48": ("hi\n", None),
    "B49": ("FAILED test_x\n1 failed\n\nCommand exited with code 7", None),
    "B50": ("building\n", None),
    "B51": ("started\n\nCommand timed out after 30 seconds", None),
    "B58": _case("B58 goose empty command"),
    "B56": _case("B56 goose spawn error"),
    "B53": (
        "FAIL z\n\n[Output exceeded 2000 line limit (5000 lines total). Full output saved to /tmp/goose-1.txt. Read "
        "it with shell commands like `head`, `tail`, or `sed -n '100,200p'` up to 2000 lines at a time.]\n\nCommand "
        "exited with code 1",
        None,
    ),
    "B60": _case("B60 goose tool error over Chat Completions"),
    # ---- Crush ----
    "B65": ("no output", None),
    "B62": ("--- FAIL: TestX (0.00s)\nFAIL\nexit status 1\nExit code 1\n\n<cwd>/home/u/proj</cwd>", None),
    "B63": ("building\nsignal: killed\nExit code 137\n\n<cwd>/home/u/proj</cwd>", None),
    "B64": ("building...\nCommand was aborted before completion\n\n<cwd>/home/u/proj</cwd>", None),
    "B68": ("User denied permission", None),
    "B70": _case("B70 crush job error over OpenAI"),
    "B74": ("1\n2\n\n... [9000 lines truncated] ...\n\n9999\nExit code 2\n\n<cwd>/home/u/proj</cwd>", None),
    "B66": (
        "Background shell started with ID: 3\n\nUse job_output tool to view output or job_kill to terminate.",
        None,
    ),
    # ---- Continue ----
    "B76": ("hi\n", None),
    "B77": ("FAIL src/a.test.ts\n  x adds (3 ms)\n\n[Status: Command failed with exit code 2]", None),
    "B82": _case("B82 continue non-streaming status"),
    "B83": _case("B83 continue non-streaming signal"),
    "B79": ("waiting...\n[Timeout: process killed after 2 minutes]\n\n[Status: Command completed]", None),
    "B87": ("The user cancelled this tool call.", None),
    "B85": _case("B85 continue non-streaming spawn error"),
    "B80": ("\n[Status: Command is running in the background...]", None),
    "B86": _case("B86 continue thrown"),
    # ---- Continue CLI ----
    "B90": ("hi\n", None),
    "B91": (
        "Error executing tool Bash: Error (exit code 2): ls: cannot access '/nope': No such file or directory\n",
        None,
    ),
    "B92": ("(no output)", None),
    "B93": _case("B93 continue cli signal"),
    "B94": ("waiting for input\n\n[Command timed out after 180 seconds of no output]", None),
    "B99": _case("B99 continue cli denied"),
    "B96": _case("B96 continue cli spawn"),
    "B95": _case("B95 continue cli timeout under a truncation note"),
    "B97": (
        'Command moved to background. Job ID: 3\nOutput so far:\nready\nUse CheckBackgroundJob("3") to check status.',
        None,
    ),
    # ---- SWE-agent ----
    "B102": ("OBSERVATION:\nhi\n", None),
    "B102.1": ("OBSERVATION:\nls: cannot access '/nope': No such file or directory\n", None),
    "B105": (
        "The command 'python -m http.server' was cancelled because it took more than 30 seconds. Please try a "
        "different command that completes more quickly.",
        None,
    ),
    "B106": ("Your bash command contained syntax errors and was NOT executed. Please fix the syntax errors.", None),
    # ---- Void ----
    "B109": ("ok\n(exit code 0)", None),
    "B108": ("ls: cannot access '/nope'\n(exit code 2)", None),
    "B113": (
        "Terminal command executed in terminal terminal 1. Result (exit code 2):\nls: cannot access '/nope'\n",
        None,
    ),
    "B110": (
        "waiting\nTerminal command ran, but was automatically killed by Void after 8s of inactivity and did not "
        "finish successfully. To try with more time, open a persistent terminal and run the command there.",
        None,
    ),
    "B114": ("Terminal command ran in terminal 1, but did not complete after 20 seconds. Result:\nwaiting", None),
    "B117": _case("B117 void rejected"),
    "B112": (
        "ready\nTerminal command is running in terminal 1. The given outputs are the results after 5 seconds.",
        None,
    ),
    # ---- Kimi CLI ----
    "B137": (KIMI_OK + "\nhi\n", None),
    "B135": _case("B135 kimi cli failed"),
    "B141": ("ls: cannot access '/nope'\n(Exit code: 2)", None),
    "B138": _case("B138 kimi cli timeout"),
    "B139": _case("B139 kimi cli spawn error"),
    "B136": _case("B136 kimi cli failed, truncated"),
    "B140": _case("B140 kimi cli background"),
    "KM-01": (
        "<system>ERROR: The tool call is rejected by the user. Stop what you are doing and wait for the user to tell "
        "you how to proceed.</system>",
        None,
    ),
    "KM-02": (
        "<system>ERROR: Error validating JSON arguments: 1 validation error for Params\ncommand\n  Field required "
        "[type=missing, input_value={}, input_type=dict]</system>",
        None,
    ),
    "KM-03": (
        "<system>ERROR: Error running tool: [Errno 24] Too many open files\nThis is an unexpected error and the tool "
        "is probably not working.</system>",
        None,
    ),
    # ---- gptme ----
    "GP-01": ("Ran command: `echo hi`\n\n```stdout\nhi\n```\n", None),
    "GP-02": ("Ran command: `ls /nope`\n\n```stderr\nls: cannot access '/nope'\n```\n\nReturn code: 2", None),
    "GP-03": ("Command timed out (after 60s): `sleep 100`\n\nNo output before timeout", None),
    "GP-04": ("Command interrupted: `make`\n\n```stdout\nbuilding\n```\n\nProcess interrupted", None),
    # ---- pi ----
    "PI-01": ("hi\n", None),
    "PI-02": ("ls: cannot access '/nope': No such file or directory\n\n\nCommand exited with code 2", True),
    "PI-03": ("Command failed\n\n(no output)\n\nCommand exited with code 3", None),
    "PI-04": ("(no output)", None),
    "PI-05": ("waiting\n\nCommand timed out after 1 seconds", None),
    "PI-06": ("building\n\nCommand aborted", None),
    "PI-07": ("Working directory does not exist: /home/u/gone\nCannot execute bash commands.", True),
    "PI-08": (
        "9999\n10000\n\n[Showing lines 8001-10000 of 10000. Full output: /tmp/pi-bash-1a2b.log]\n\nCommand exited "
        "with code 2",
        None,
    ),
    "PI-09": ("Tool execution was blocked", None),
    "PI-10": (
        "Validation failed for tool \"bash\":\n  - command: must have required property 'command'\n\nReceived "
        "arguments:\n{}",
        None,
    ),
    # ---- Zed ----
    "B119": ("Command executed successfully.", None),
    "B120": ("```\nhi\n```", None),
    "B121": ('Command "cargo test" failed with exit code 101.\n\n```\nerror[E0425]: cannot find value `x`\n```', None),
    "B124": ("Command terminated unexpectedly. Output captured:\n\n```\nbuilding\n```", None),
    "B122": ('Command "sleep 100" timed out. No output was captured.', None),
    "B123": (
        "The user stopped this command. Output captured before stopping:\n\n```\nbuilding\n```\n\nSince the user "
        "intentionally interrupted this command, ask them what they would like to do next.",
        None,
    ),
    "B128": ("Command cancelled: user denied permission to run outside the sandbox (network access).", None),
    "B126": (
        'Command "make" failed with exit code 2.\n\nCommand output too long. The first 16384 bytes:\n\n```\nFAIL\n```',
        None,
    ),
    "B127": _case("B127 zed 2025 interrupted"),
}
