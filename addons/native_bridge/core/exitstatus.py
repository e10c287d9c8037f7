"""Reading a shell command's outcome out of the result a client sent back.

Every client frames a command's result in its own words. Each :class:`Rule`
below is one client's frame: where in the result it stands (``where``), what a
line of it looks like, and what it says (``verdict``). Only a client's own frame
counts: a rule matches a whole line at its place (the header above an
``Output:`` line, the first line, the trailing frame lines, the last line), so
words that merely appear inside the program's output never count.

Precedence: structured data (JSON) > a header above ``Output:`` > trailing frame
lines > the first line > the last line > the client's error flag. With an
Anthropic ``is_error`` flag the first line is read before the trailer (Claude
Code states ``Exit code N`` there). README, "Exit status formats", lists the
rules with their sources; tests/test_exitstatus_clients.py tests each one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import orjson

# code: the rule states the number; success: the client states success (0);
# failed: a failure with no number (encoded as 1); running: no outcome yet;
# not_run: the command never ran (rejected, denied, invalid).
Verdict = Literal["code", "success", "failed", "running", "not_run", "unknown"]
Where = Literal["json", "header", "trailer", "first", "last"]

FAILED_WITHOUT_CODE = 1


@dataclass(frozen=True, slots=True)
class ExitStatus:
    code: int | None  # None: no number and no failure signal (absent, not 0)
    source: str  # the rule that decided, for the record
    verdict: Verdict = "unknown"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    client: str
    source: str  # where the format is defined (repository and path)
    where: Where
    pattern: re.Pattern[str]  # matched against one whole stripped line
    verdict: Verdict
    examples: tuple[str, ...]  # realistic results, each tested in tests/test_exitstatus_clients.py


def _r(name: str, client: str, source: str, where: Where, pattern: str, verdict: Verdict, *examples: str) -> Rule:
    return Rule(name, client, source, where, re.compile(pattern), verdict, examples)


N = r"(?P<code>-?\d{1,10})"
# "Exit code: N", "exit status N", "Process exited with code N", optionally in [] or ().
_GENERIC = (
    rf"(?i)[\[(]?(?:exit[ _](?:code|status):?\s*"
    rf"|(?:(?:the )?(?:process|command|program|shell|script) )?exited with (?:exit )?(?:code|status):?\s*){N}\.?[\])]?"
)

# Lines that only frame a result (no verdict of their own) and may sit in a trailer.
_FRAME_LINES = re.compile(
    r"\[Current working directory: .*\]|\[Python interpreter: .*\]"  # OpenHands
    r"|Process Group PGID: .*|Background PIDs: .*|(?:Error|Signal|Exit Code): \(none\)"  # Gemini CLI
    r"|<cwd>.*</cwd>"  # Crush
    r"|</?(?:shell|bash)_metadata>"  # opencode
    r"|\[Status: .*\]"  # Continue (statuses with a verdict are rules, matched first)
)

RULES: tuple[Rule, ...] = (
    # ---- header: lines above an "Output:" line ------------------------------------
    _r(
        "exit-code-header",
        "Codex CLI shell_command; Roo Code execute_command",
        "openai/codex codex-rs/core/src/"
        "tools/mod.rs format_exec_output_for_model_freeform; RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts "
        "formatExitStatus",
        "header",
        rf"Exit code: {N}",
        "code",
        "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nls: cannot access '/nope': No such file or directory\n",
        "Command executed in terminal within working directory '/home/u/proj'. Command execution was not successful, "
        "inspect the cause and adjust as needed.\nExit code: 2\nOutput:\nmake: *** [all] Error 2\n",
    ),
    _r(
        "codex-exec-exited",
        "Codex CLI exec_command / write_stdin",
        "openai/codex codex-rs/core/src/tools/context.rs ExecCommandToolOutput::response_text",
        "header",
        rf"Process exited with code {N}",
        "code",
        "Chunk ID: 3c1a9e\nWall time: 2.1000 seconds\nProcess exited with code 1\nOriginal token count: 5\n"
        "Output:\nerror: test failed\n",
    ),
    _r(
        "codex-exec-running",
        "Codex CLI exec_command",
        "openai/codex codex-rs/core/src/tools/context.rs",
        "header",
        r"Process running with session ID \d+",
        "running",
        "Chunk ID: f800eb\nWall time: 1.0024 seconds\nProcess running with session ID 32244\nOutput:\n[vite] ready\n",
    ),
    _r(
        "cline-failed",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "header",
        rf"Command failed with exit code {N}\.",
        "code",
        "[execute_command for 'npm test'] Result:\nCommand failed with exit code 1.\nOutput:\nFAIL src/a.test.ts\n",
    ),
    _r(
        "cline-success",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "header",
        r"Command executed successfully \(exit code 0\)\.",
        "success",
        "Command executed successfully (exit code 0).\nOutput:\nok\n",
    ),
    _r(
        "cline-signal",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "header",
        r"Command terminated by signal \w+\.",
        "failed",
        "Command terminated by signal SIGKILL.\nOutput:\nKilled\n",
    ),
    _r(
        "roo-signal",
        "Roo Code execute_command",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts",
        "header",
        r"(?:Command executed in terminal .*\. )?Process terminated by signal \w+.*",
        "failed",
        "Command executed in terminal within working directory '/w'. Process terminated by signal SIGKILL\n"
        "Output:\nKilled\n",
    ),
    # ---- trailer: the client's closing frame lines ----------------------------------
    _r(
        "openhands-finished",
        "OpenHands execute_bash",
        "All-Hands-AI/OpenHands openhands/events/observation/commands.py CmdOutputObservation.to_agent_observation",
        "trailer",
        rf"\[Command finished with exit code {N}\]",
        "code",
        "FAILED tests/test_x.py::test_a\n1 failed in 0.12s\n[The command completed with exit code 1.]\n"
        "[Current working directory: /workspace/repo]\n[Command finished with exit code 1]",
    ),
    _r(
        "openhands-completed",
        "OpenHands execute_bash",
        "All-Hands-AI/OpenHands openhands/runtime/utils/bash.py",
        "trailer",
        rf"\[The command completed with exit code {N}\.(?: CTRL\+\w was sent\.)?\]",
        "code",
        "hello\n[The command completed with exit code 0.]",
    ),
    _r(
        "openhands-no-output",
        "OpenHands execute_bash",
        "All-Hands-AI/OpenHands openhands/runtime/utils/bash.py",
        "trailer",
        r"\[The command (?:has no new output after|timed out after) .*\]",
        "running",
        "Starting server...\n[The command has no new output after 30 seconds. You may wait longer to see additional "
        "output by sending empty command '', send other commands to interact with the current process, send keys "
        '("C-c", "C-z", "C-d") to interrupt/kill the previous command before sending your new command, or use the '
        "timeout parameter in execute_bash for future commands.]",
    ),
    _r(
        "continue-status",
        "Continue run_terminal_command",
        "continuedev/continue core/util/messageContent.ts renderContextItemsWithStatus",
        "trailer",
        rf"\[Status: Command failed with exit code {N}\]",
        "code",
        "FAIL src/a.test.ts\n  x adds (3 ms)\n\n[Status: Command failed with exit code 1]",
    ),
    _r(
        "continue-timeout",
        "Continue run_terminal_command",
        "continuedev/continue core/tools/implementations/runTerminalCommand.ts",
        "trailer",
        r"\[Timeout: process killed after .*\]",
        "failed",
        "waiting...\n[Timeout: process killed after 2 minutes]\n\n[Status: Command completed]",
    ),
    _r(
        "continue-background",
        "Continue run_terminal_command",
        "continuedev/continue core/tools/implementations/runTerminalCommand.ts",
        "trailer",
        r"\[Status: Command is running in the background.*\]",
        "running",
        "\n[Status: Command is running in the background...]",
    ),
    _r(
        "gemini-exit",
        "Gemini CLI run_shell_command",
        "google-gemini/gemini-cli packages/core/src/tools/shell.ts",
        "trailer",
        rf"Exit Code: {N}",
        "code",
        "<untrusted_context>\nOutput: FAILED tests/test_x.py::test_a\nExit Code: 1\nProcess Group PGID: 48230\n"
        "</untrusted_context>",
    ),
    _r(
        "gemini-signal",
        "Gemini CLI run_shell_command",
        "google-gemini/gemini-cli packages/core/src/tools/shell.ts",
        "trailer",
        r"Signal: \d+",
        "failed",
        "<untrusted_context>\nOutput: (empty)\nSignal: 9\nProcess Group PGID: 48250\n</untrusted_context>",
    ),
    _r(
        "crush-exit",
        "Crush bash",
        "charmbracelet/crush internal/agent/tools/bash.go formatOutput",
        "trailer",
        rf"Exit code {N}",
        "code",
        "--- FAIL: TestX (0.00s)\nFAIL\nexit status 1\nExit code 1\n\n<cwd>/home/u/proj</cwd>",
    ),
    _r(
        "crush-aborted",
        "Crush bash",
        "charmbracelet/crush internal/agent/tools/bash.go",
        "trailer",
        r"Command was aborted before completion",
        "failed",
        "building...\nCommand was aborted before completion\n\n<cwd>/home/u/proj</cwd>",
    ),
    _r(
        "opencode-timeout",
        "opencode bash",
        "sst/opencode packages/opencode/src/tool/shell.ts",
        "trailer",
        r"(?:shell|bash) tool terminated command after exceeding timeout .*|User aborted the command",
        "failed",
        "(no output)\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout 120000 ms. If this "
        "command is expected to take longer and is not waiting for interactive input, retry with a larger timeout "
        "value in milliseconds.\n</shell_metadata>",
    ),
    _r(
        "opencode-timeout-old",
        "opencode bash (2025)",
        "sst/opencode packages/opencode/src/tool/bash.ts",
        "trailer",
        r"\((?:Command timed out after \d+ ms|Command was aborted)\)",
        "failed",
        "compiling\n\n(Command timed out after 120000 ms)",
    ),
    # ---- first line -------------------------------------------------------------------
    _r(
        "claude-code-exit",
        "Claude Code Bash (with is_error)",
        "Claude Code src/utils/toolErrors.ts formatError (v2.1.88; not public source)",
        "first",
        rf"Exit code {N}",
        "code",
        "Exit code 1\nnpm ERR! missing script: test",
    ),
    _r(
        "claude-code-timeout",
        "Claude Code Bash (older builds)",
        "Claude Code src/utils/ShellCommand.ts",
        "first",
        r"(?:Error: )?Command timed out after .*",
        "failed",
        "Command timed out after 2m 0.0s",
    ),
    _r(
        "claude-code-background",
        "Claude Code Bash",
        "Claude Code src/tools/BashTool/BashTool.tsx",
        "first",
        r"Command (?:running in background|was manually backgrounded by user|exceeded the assistant-mode blocking "
        r"budget .*moved to the background) with ID: .*",
        "running",
        "Command running in background with ID: b20hid1oz. Output is being written to: /tmp/claude/b20hid1oz.output",
    ),
    _r(
        "zed-failed",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs process_content",
        "first",
        rf'Command ".*" failed with exit code {N}\.',
        "code",
        'Command "cargo test" failed with exit code 101.\n\n```\nerror[E0425]: cannot find value `x`\n```',
    ),
    _r(
        "zed-success",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs",
        "first",
        r"Command executed successfully\.",
        "success",
        "Command executed successfully.",
    ),
    _r(
        "zed-timeout",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs",
        "first",
        r'Command ".*" timed out\..*|Command terminated unexpectedly\..*|The user stopped this command\..*',
        "failed",
        'Command "sleep 100" timed out. No output was captured.',
    ),
    _r(
        "codex-exec-error",
        "Codex CLI shell (signal, sandbox error)",
        "openai/codex codex-rs/core/src/tools/events.rs ToolEmitter::finish",
        "first",
        r"execution error: .*",
        "failed",
        "execution error: Sandbox(Signal(9))",
    ),
    _r(
        "gemini-timeout",
        "Gemini CLI run_shell_command",
        "google-gemini/gemini-cli packages/core/src/tools/shell.ts",
        "first",
        r"Command was (?:automatically cancelled because it exceeded the timeout|cancelled by user before it "
        r"could complete).*",
        "failed",
        "<untrusted_context>\nCommand was automatically cancelled because it exceeded the timeout of 5.0 minutes "
        "without output. There was no output before it was cancelled.\n</untrusted_context>",
    ),
    _r(
        "gemini-background",
        "Gemini CLI run_shell_command",
        "google-gemini/gemini-cli packages/core/src/tools/shell.ts",
        "first",
        r"Command (?:moved to background \(PID: \d+\)|is running in background\. PID: \d+).*",
        "running",
        "Command moved to background (PID: 4821). Output hidden. Press Ctrl+B to view.",
    ),
    _r(
        "cline-running",
        "Cline / Roo Code execute_command",
        "cline/cline src/integrations/terminal/"
        "CommandOrchestrator.ts; RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts",
        "first",
        r"Command is (?:still running in (?:the user's )?terminal|running in the background).*|Command timed out "
        r"after \d+ seconds\. Running in background\.",
        "running",
        "Command is still running in the user's terminal.\nHere's the output so far:\nListening on :3000",
    ),
    _r(
        "cline-cancelled",
        "Cline execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "first",
        r"Command (?:cancelled\.|was cancelled by the user\.|execution timed out after \d+ seconds\.).*",
        "failed",
        "Command execution timed out after 30 seconds. \nOutput so far:\nwaiting",
    ),
    _r(
        "roo-timeout",
        "Roo Code execute_command",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts",
        "first",
        r"The command was terminated after exceeding a user-configured \d+s timeout\..*",
        "failed",
        "The command was terminated after exceeding a user-configured 60s timeout. Do not try to re-run the command.",
    ),
    _r(
        "crush-background",
        "Crush bash",
        "charmbracelet/crush internal/agent/tools/bash.go",
        "first",
        r"Command is taking longer than expected and has been moved to background\.|Background shell started "
        r"with ID: .*",
        "running",
        "Background shell started with ID: 3\n\nUse job_output tool to view output or job_kill to terminate.",
    ),
    # ---- last line --------------------------------------------------------------------
    _r(
        "goose-exit",
        "goose shell",
        "block/goose crates/goose/src/agents/platform_extensions/developer/shell.rs",
        "last",
        rf"Command exited with code {N}",
        "code",
        "FAILED test_x\n1 failed\n\nCommand exited with code 1",
    ),
    _r(
        "goose-timeout",
        "goose shell",
        "block/goose crates/goose/src/agents/platform_extensions/developer/shell.rs",
        "last",
        r"Command timed out(?: after \d+ seconds)?",
        "failed",
        "started\n\nCommand timed out after 30 seconds",
    ),
    # ---- generic forms (brief): first or last line, optionally bracketed ---------------
    _r(
        "generic-exit",
        "generic (any client)",
        "design brief: plain-text and bracketed forms",
        "first",
        _GENERIC,
        "code",
        "[exit code: 3]\nboom",
    ),
    _r(
        "generic-exit-last",
        "generic (any client)",
        "design brief: plain-text and bracketed forms",
        "last",
        _GENERIC,
        "code",
        "boom\n(exit code 5)",
    ),
)

# Results that say the command never ran: rejected by the user or a policy, or invalid.
# Matched against the start of the result (after the client's prefix lines).
NOT_RUN = re.compile(
    r"(?is)\A(?:"
    r"<tool_use_error>"  # Claude Code: validation error, the tool did not run
    r"|The user doesn't want to (?:proceed with this tool use|take this action)"  # Claude Code
    r"|Permission (?:to use \S+ has been denied|for this tool use was denied|to run tool denied by user)"  # Claude, Zed
    r"|(?:exec command|patch) rejected by user|approval policy is|failed to parse function arguments"  # Codex
    r"|exec_command failed for|unified exec is unavailable"  # Codex
    r"|\[Operation Cancelled\]|Command was cancelled by user before it could start|Tool execution denied by policy"
    r"|Command injection detected"  # Gemini CLI
    r"|(?:OBSERVATION:\s*)?Action has been rejected by the user|\[Your command \".*\" is NOT executed"  # OpenHands
    r"|ERROR: (?:Cannot execute multiple commands|No previous running command)"  # OpenHands
    r"|The user denied this operation|Skipping tool due to user rejecting|Tool was interrupted and not executed"
    # Cline
    r"|Missing value for required parameter|User denied the tool execution|Tool execution was cancelled because"
    r"|\{\s*\"status\"\s*:\s*\"denied\"|Working directory '.*' does not exist"  # Roo Code
    # Crush
    r"|User denied permission|Error: user cancelled assistant tool calling|Tool call failed: arguments were not"
    r"|The user rejected permission to use this specific tool call|The user has specified a rule which prevents"
    r"|\[Tool execution was interrupted\]"  # opencode
    r"|Tool execution was not approved|The user cancelled this tool call"  # OpenAI Agents SDK, Continue
    r")"
)

_OUTPUT_MARKER = re.compile(r"Output:")  # a bare line, as Codex, Cline and Roo Code print it
_HEADER_LIMIT = 12
_TRAILER_LIMIT = 8
_ERROR_PREFIX = "[tool error]"
_CLINE_PREFIX = re.compile(r"\[[\w.-]+ for .*\] Result:")
_UNTRUSTED = re.compile(r"(?s)\A<untrusted_context>\n?(.*?)\n?</untrusted_context>\Z")

_BY_WHERE: dict[str, tuple[Rule, ...]] = {
    w: tuple(r for r in RULES if r.where == w) for w in ("header", "trailer", "first", "last")
}


def _any_of(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    """One pattern that fullmatches a line exactly when one of ``rules`` does: most lines a
    rule is tried on are the program's own output, and one regex turns them down faster than
    every rule in turn. (Each rule's global flags become scoped; its named group a plain one.)"""
    parts = []
    for rule in rules:
        p = rule.pattern.pattern.replace("(?P<code>", "(?:")
        flags = re.match(r"\(\?([a-zA-Z]+)\)", p)
        parts.append(f"(?{flags.group(1)}:{p[flags.end() :]})" if flags else f"(?:{p})")
    return re.compile("|".join(parts))


_ANY_BY_WHERE = {w: _any_of(rules) for w, rules in _BY_WHERE.items()}


def _int32(n: int) -> int | None:
    return n if -(2**31) <= n < 2**31 else None


def _status(rule: Rule, m: re.Match[str]) -> ExitStatus | None:
    if rule.verdict == "code":
        code = _int32(int(m.group("code")))
        return None if code is None else ExitStatus(code, rule.name, "code")
    if rule.verdict == "success":
        return ExitStatus(0, rule.name, "success")
    if rule.verdict == "failed":
        return ExitStatus(FAILED_WITHOUT_CODE, rule.name, "failed")
    return ExitStatus(None, rule.name, rule.verdict)


def _match(where: str, line: str) -> ExitStatus | None:
    """The status the first of the ``where`` rules that fullmatches ``line`` says."""
    line = line.strip()
    if not _ANY_BY_WHERE[where].fullmatch(line):
        return None
    for rule in _BY_WHERE[where]:
        m = rule.pattern.fullmatch(line)
        if m:
            return _status(rule, m)
    return None


def _header_end(lines: list[str]) -> int | None:
    """Where a client's header ends: the index of its bare ``Output:`` line, if any."""
    if not any("Output:" in line for line in lines[:_HEADER_LIMIT]):  # most results have no header
        return None
    for i, line in enumerate(lines[:_HEADER_LIMIT]):
        if _OUTPUT_MARKER.fullmatch(line.strip()):
            return i
    return None


def _header(head: list[str]) -> ExitStatus | None:
    for line in head:
        found = _match("header", line)
        if found:
            return found
    return None


def _trailer(lines: list[str]) -> ExitStatus | None:
    """The strongest verdict among the trailing frame lines (a failure beats a code)."""
    found: list[ExitStatus] = []
    seen = 0
    for line in reversed(lines):
        if not line.strip():
            continue
        if seen == _TRAILER_LIMIT:
            break
        seen += 1
        status = _match("trailer", line)
        if status:
            found.append(status)
        elif not _FRAME_LINES.fullmatch(line.strip()):
            break
    if not found:
        return None
    order = {"running": 0, "failed": 1, "code": 2, "success": 3}
    return min(found, key=lambda s: order.get(s.verdict, 9))


def _json(text: str) -> ExitStatus | None:
    if text[:1] not in ("{", "["):
        return None
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(doc, dict):
        # Codex shell / local_shell: {"output": ..., "metadata": {"exit_code": N}}; or a plain exit_code.
        for holder in (doc, doc.get("metadata")):
            if isinstance(holder, dict) and type(holder.get("exit_code")) is int:
                code = _int32(holder["exit_code"])
                if code is not None:
                    return ExitStatus(code, "json-exit-code", "code")
        return None
    # Cline v4 run_commands: [{"query", "result", "error"?, "success"}], one command per step.
    if isinstance(doc, list) and len(doc) == 1 and isinstance(doc[0], dict) and isinstance(doc[0].get("success"), bool):
        item = doc[0]
        if item["success"]:
            return ExitStatus(0, "cline-v4-json", "success")
        m = re.fullmatch(rf"Command exited with code {N}", str(item.get("error") or ""))
        if m:
            return ExitStatus(_int32(int(m.group("code"))), "cline-v4-json", "code")
        return ExitStatus(FAILED_WITHOUT_CODE, "cline-v4-json", "failed")
    return None


def has_error_prefix(text: str) -> bool:
    return text.lstrip()[: len(_ERROR_PREFIX)].lower() == _ERROR_PREFIX


def unframe(text: str) -> tuple[str, bool]:
    """The result without client framing that carries no status; and whether it had an error prefix."""
    text = text.strip()
    flagged = has_error_prefix(text)
    if flagged:
        text = text[len(_ERROR_PREFIX) :].strip()
    m = _UNTRUSTED.match(text)  # Gemini CLI wraps results since 2026-06
    if m:
        text = m.group(1).strip()
    nl = text.find("\n")  # the first line only: no copy of the rest unless it is kept
    first = text if nl < 0 else text[:nl]
    if _CLINE_PREFIX.fullmatch(first.strip()):  # Cline: "[execute_command for '...'] Result:"
        text = "" if nl < 0 else text[nl + 1 :].strip()
    return text, flagged


def _gemini_frame(lines: list[str]) -> ExitStatus | None:
    """Gemini CLI prints ``Exit Code``/``Signal`` only on failure (read as trailer rules
    before this): its frame without them is a success, unless it carries an ``Error:`` line."""
    if not lines or not lines[-1].strip().startswith("Process Group PGID:"):
        return None
    for line in reversed(lines):
        if line.startswith(("Output:", "Command:")):
            return ExitStatus(0, "gemini-frame", "success")
        if line.startswith("Error: ") and line.strip() != "Error: (none)":
            return ExitStatus(FAILED_WITHOUT_CODE, "gemini-error", "failed")
    return None


def parse_exit_status(text: str, is_error: bool | None = None) -> ExitStatus:
    """What a shell result says about the command's outcome."""
    body, flagged = unframe(text)
    if NOT_RUN.match(body):
        return ExitStatus(None, "not-run", "not_run")
    found = _json(body)
    if found:
        return found
    lines = body.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    last = next((ln for ln in reversed(lines) if ln.strip()), "")
    end = _header_end(lines)
    if end is not None:
        # The client framed the output below its header: only the header speaks.
        probes = (lambda: _header(lines[:end]), lambda: _match("first", first) if end else None)
    elif is_error:
        probes = (
            lambda: _match("first", first),
            lambda: _trailer(lines),
            lambda: _match("last", last),
        )
    else:
        probes = (
            lambda: _trailer(lines),
            lambda: _match("first", first),
            lambda: _match("last", last),
        )
    for probe in probes:
        found = probe()
        if found:
            return found
    found = _gemini_frame(lines)
    if found:
        return found
    if is_error:
        return ExitStatus(FAILED_WITHOUT_CODE, "error flag", "failed")
    if flagged:
        return ExitStatus(FAILED_WITHOUT_CODE, "error prefix", "failed")
    return ExitStatus(None, "", "unknown")
