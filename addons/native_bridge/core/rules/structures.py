"""Whole-result structures: a shell result that IS a client's own structure (JSON, or tags), so
its fields are the client's, not the program's. One row per structure: its name (the reader in
exitstatus.py that reads it), the clients that write it, its shape (for EXIT_STATUS.md) and the
source of the format.
"""

from __future__ import annotations

import re

from .types import ANY

STRUCTURED: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    # (name, clients, shape, source)
    (
        "codex-json",
        ("codex",),
        '`{"output": …, "metadata": {"exit_code": N}}`',
        "openai/codex codex-rs/core/src/tools/mod.rs format_exec_output_for_model_structured",
    ),
    (
        "mini-swe-agent-json",
        ("mini-swe-agent",),
        '`{"returncode": N, "output": …}` (its sentinel `-1` beside `exception_info`, a timeout or an error: -1; '
        '"action was not executed": never ran)',
        "SWE-agent/mini-swe-agent src/minisweagent/config/mini.yaml observation_template; "
        "src/minisweagent/environments/local.py execute (every exception is returncode -1, 23e7a21f, v2.0 to v2.4.6)",
    ),
    (
        "mini-swe-agent-xml",
        ("mini-swe-agent",),
        "`<returncode>N</returncode>` then `<output>` (an `<exception>` first: as above)",
        "SWE-agent/mini-swe-agent src/minisweagent/config/default.yaml observation_template",
    ),
    (
        "cline-v4-json",
        ("cline",),
        '`[{"success": …, "error": "[Command failed: ]Command exited with code N"}]` ("success": true for a command '
        "left running, its result saying so: no step)",
        "cline/cline sdk/packages/core/src/extensions/tools/definitions.ts executeShellCommands (the SDK before "
        "6c52bdc177, 2026-06-12: `Command failed: ` + the executor's error); apps/vscode/src/sdk/"
        "vscode-run-commands-tool.ts formatDetachedResult and sdk/packages/core/src/extensions/tools/executors/bash.ts "
        "detach (v4.0.0 to v4.1.12)",
    ),
    (
        "gptme-frame",
        ("gptme",),
        "`Ran command: `…`` (or `Command timed out …`, `Command interrupted: …`) first, the output fenced, then "
        "`Return code: N` last when N is not 0 (no line: 0; `Process interrupted`: 1)",
        "gptme/gptme gptme/tools/shell.py _format_shell_output (`Return code` since 9b54cec03, 2023-09; "
        "`Command interrupted` since d5e89b6d0, v0.28.0, 2025-06; `Command timed out` since 06d85f943, 2025-08; "
        "through v0.33)",
    ),
    (
        "agents-sdk-timeout-frame",
        ("agents-sdk",),
        "`Chunk ID: …`, `Wall time: …` and `Output:` with no exit line, then only `Command timed out after N "
        "seconds.` (1)",
        "openai/openai-agents-python src/agents/sandbox/capabilities/tools/shell_tool.py ExecCommandTool.run (except "
        "ExecTimeoutError: no exit code, its sentence as the output; v0.14.0 to v0.24.0)",
    ),
    (
        "amazonq-json",
        (ANY,),
        '`{"exit_status": "N", "stdout": …, "stderr": …}` (`"0"` is no claim: a signal is written 0 too); its '
        'newer `"exit status: N"` (0 included) and `"signal: N (…)"` (1)',
        "aws/amazon-q-developer-cli crates/chat-cli/src/cli/chat/tools/execute/mod.rs (exit_status: "
        "status.code().unwrap_or(0) as a string); crates/agent/src/agent/tools/execute_cmd.rs (Rust's ExitStatus "
        "Display)",
    ),
    (
        "json-exit-code",
        (ANY,),
        '`{"exit_code": N}`, `{"exitCode": N}`, `{"metadata": {"exit_code": N}}` (the reference fix\'s families); '
        '`{"returncode": N}` at the top (Python\'s `subprocess` name, the hand-written tools\' `{"stdout", "stderr", '
        '"returncode"}`)',
        "design brief, truth rule 3; issue 39 (returncode)",
    ),
)

# mini-swe-agent's observation, as its templates write it (the sources of its two rows above):
# the keys of its JSON object (long output: head and tail), its stand-in for a command it did
# not run, and its tagged form.
MINI_KEYS: frozenset[str] = frozenset({"returncode", "output", "exception_info"})
MINI_LONG_KEYS: frozenset[str] = frozenset(
    {"returncode", "output_head", "output_tail", "elided_chars", "warning", "exception_info"}
)
MINI_NOT_RUN = "action was not executed"
# Cline v4 run_commands: a command left running is "success": true, its result saying so (the user
# or the 30-second auto-proceed detached it; the background executor detached it).
CLINE_V4_RUNNING: re.Pattern[str] = re.compile(
    r"\A(?:The command was still starting or running after \d+ seconds, so Cline automatically proceeded"
    r"|The user chose to proceed while the command is starting or still running"
    r"|\[Command is still running\. Output will continue in )"
)
# Its error: the executor's "Command exited with code N", behind "Command failed: " in the SDK before
# 2026-06-12 (the stderr text instead, when there was any: no number).
CLINE_V4_EXITED: re.Pattern[str] = re.compile(r"(?:Command failed: )?Command exited with code (?P<code>-?\d{1,19})")
# gptme shell: its header (first line) and its closing line (last), gptme/tools/shell.py.
GPTME_HEADER: re.Pattern[str] = re.compile(
    r"(?P<ran>Ran (?:allowlisted )?command)(?:: `.*`|:)|(?:Command timed out(?: \(after .*\))?|Command interrupted)"
    r"(?:: `.*`|:)"
)
GPTME_CODE: re.Pattern[str] = re.compile(
    r"Return code: (?P<code>-?\d{1,19})|Process interrupted \(return code: (?P<icode>-?\d{1,19})\)"
)
GPTME_FAILED: re.Pattern[str] = re.compile(r"Process interrupted|No output before (?:timeout|interruption)")
MINI_XML: re.Pattern[str] = re.compile(
    r"\A(?:<exception>(?P<info>.*?)</exception>\s*)?<returncode>(?P<code>-?\d{1,19})</returncode>\s*"
    r"<(?:output|warning)>",
    re.S,
)
# Amazon Q CLI's execute_bash / execute_cmd result: its keys, and its exit_status string's forms.
AMAZONQ_KEYS: frozenset[str] = frozenset({"exit_status", "stdout", "stderr"})
AMAZONQ_STATUS: re.Pattern[str] = re.compile(
    r"(?P<bare>-?\d{1,19})|exit status: (?P<code>-?\d{1,19})|(?P<signal>signal: \d+(?: \(\w+\))?)"
)
# The Agents SDK sandbox's exec_command on a timeout: its header with no exit line (every run of a
# program states one), its own sentence as the whole output.
AGENTS_SDK_TIMEOUT: re.Pattern[str] = re.compile(
    r"Chunk ID: [0-9a-f]+\nWall time: [\d.]+ seconds\nOutput:\nCommand timed out after [\d.]+ seconds\."
)
