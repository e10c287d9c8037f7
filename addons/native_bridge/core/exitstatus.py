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
from dataclasses import dataclass, replace
from typing import Literal

import orjson

from .clients import BY_ID, counts_for

# code: the rule states the number; success: the client states success (0);
# failed: a failure with no number (encoded as 1); running: no outcome yet;
# not_run: the command never ran (rejected, denied, invalid); conflict: the client's signals
# disagree (no claim: the code stays absent).
Verdict = Literal["code", "success", "failed", "running", "not_run", "conflict", "unknown"]
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
    client: str  # who writes this frame, in words (README)
    source: str  # where the format is defined (repository and path)
    where: Where
    pattern: re.Pattern[str]  # matched against one whole stripped line
    verdict: Verdict
    examples: tuple[str, ...]  # realistic results, each tested in tests/test_exitstatus_clients.py
    clients: tuple[str, ...] = ()  # the clients (ids or families, clients.py) for which the frame counts
    flag: bool | None = None  # True: the client writes it only on a result it flags as an error

    def scoped(self, clients: tuple[str, ...], flag: bool | None = None) -> Rule:
        return replace(self, clients=clients, flag=flag)


def _r(name: str, client: str, source: str, where: Where, pattern: str, verdict: Verdict, *examples: str) -> Rule:
    return Rule(name, client, source, where, re.compile(pattern), verdict, examples)


N = r"(?P<code>-?\d{1,19})"  # wider than int32: an out-of-range code is still a failure

# Lines that only frame a result (no verdict of their own) and may sit in a trailer.
_FRAME_LINES = re.compile(
    r"\[Current working directory: .*\]|\[Python interpreter: .*\]"  # OpenHands
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
    ).scoped(("codex", "roo-code")),
    _r(
        "codex-exec-exited",
        "Codex CLI exec_command / write_stdin",
        "openai/codex codex-rs/core/src/tools/context.rs ExecCommandToolOutput::response_text",
        "header",
        rf"Process exited with code {N}",
        "code",
        "Chunk ID: 3c1a9e\nWall time: 2.1000 seconds\nProcess exited with code 1\nOriginal token count: 5\n"
        "Output:\nerror: test failed\n",
    ).scoped(("codex", "agents-sdk")),
    _r(
        "codex-exec-running",
        "Codex CLI exec_command",
        "openai/codex codex-rs/core/src/tools/context.rs",
        "header",
        r"Process running with session ID \d+",
        "running",
        "Chunk ID: f800eb\nWall time: 1.0024 seconds\nProcess running with session ID 32244\nOutput:\n[vite] ready\n",
    ).scoped(("codex", "agents-sdk")),
    _r(
        "cline-failed",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "header",
        rf"Command failed with exit code {N}\.",
        "code",
        "[execute_command for 'npm test'] Result:\nCommand failed with exit code 1.\nOutput:\nFAIL src/a.test.ts\n",
    ).scoped(("cline",)),
    _r(
        "cline-success",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "header",
        r"Command executed successfully \(exit code 0\)\.",
        "success",
        "Command executed successfully (exit code 0).\nOutput:\nok\n",
    ).scoped(("cline",)),
    _r(
        "cline-signal",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "header",
        r"Command terminated by signal \w+\.",
        "failed",
        "Command terminated by signal SIGKILL.\nOutput:\nKilled\n",
    ).scoped(("cline",)),
    _r(
        "roo-signal",
        "Roo Code execute_command",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts",
        "header",
        r"(?:Command executed in terminal .*\. )?Process terminated by signal \w+.*",
        "failed",
        "Command executed in terminal within working directory '/w'. Process terminated by signal SIGKILL\n"
        "Output:\nKilled\n",
    ).scoped(("roo-code",)),
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
    ).scoped(("openhands",)),
    _r(
        "openhands-completed",
        "OpenHands execute_bash",
        "All-Hands-AI/OpenHands openhands/runtime/utils/bash.py",
        "trailer",
        rf"\[The command completed with exit code {N}\.(?: CTRL\+\w was sent\.)?\]",
        "code",
        "hello\n[The command completed with exit code 0.]",
    ).scoped(("openhands",)),
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
    ).scoped(("openhands",)),
    _r(
        "continue-status",
        "Continue run_terminal_command",
        "continuedev/continue core/util/messageContent.ts renderContextItemsWithStatus",
        "trailer",
        rf"\[Status: Command failed with exit code {N}\]",
        "code",
        "FAIL src/a.test.ts\n  x adds (3 ms)\n\n[Status: Command failed with exit code 1]",
    ).scoped(("continue",)),
    _r(
        "continue-timeout",
        "Continue run_terminal_command",
        "continuedev/continue core/tools/implementations/runTerminalCommand.ts",
        "trailer",
        r"\[Timeout: process killed after .*\]",
        "failed",
        "waiting...\n[Timeout: process killed after 2 minutes]\n\n[Status: Command completed]",
    ).scoped(("continue",)),
    _r(
        "continue-background",
        "Continue run_terminal_command",
        "continuedev/continue core/tools/implementations/runTerminalCommand.ts",
        "trailer",
        r"\[Status: Command is running in the background.*\]",
        "running",
        "\n[Status: Command is running in the background...]",
    ).scoped(("continue",)),
    _r(
        "crush-exit",
        "Crush bash",
        "charmbracelet/crush internal/agent/tools/bash.go formatOutput",
        "trailer",
        rf"Exit code {N}",
        "code",
        "--- FAIL: TestX (0.00s)\nFAIL\nexit status 1\nExit code 1\n\n<cwd>/home/u/proj</cwd>",
    ).scoped(("crush",)),
    _r(
        "crush-aborted",
        "Crush bash",
        "charmbracelet/crush internal/agent/tools/bash.go",
        "trailer",
        r"Command was aborted before completion",
        "failed",
        "building...\nCommand was aborted before completion\n\n<cwd>/home/u/proj</cwd>",
    ).scoped(("crush",)),
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
    ).scoped(("opencode",)),
    _r(
        "opencode-timeout-old",
        "opencode bash (2025)",
        "sst/opencode packages/opencode/src/tool/bash.ts",
        "trailer",
        r"\((?:Command timed out after \d+ ms|Command was aborted)\)",
        "failed",
        "compiling\n\n(Command timed out after 120000 ms)",
    ).scoped(("opencode",)),
    # ---- first line -------------------------------------------------------------------
    _r(
        "claude-code-exit",
        "Claude Code Bash (with is_error)",
        "Claude Code src/utils/toolErrors.ts formatError (v2.1.88; not public source)",
        "first",
        rf"Exit code {N}",
        "code",
        "Exit code 1\nnpm ERR! missing script: test",
    ).scoped(("claude-code",), flag=True),
    _r(
        "claude-code-timeout",
        "Claude Code Bash (older builds)",
        "Claude Code src/utils/ShellCommand.ts",
        "first",
        r"(?:Error: )?Command timed out after .*",
        "failed",
        "Command timed out after 2m 0.0s",
    ).scoped(("claude-code",), flag=True),
    _r(
        "claude-code-background",
        "Claude Code Bash",
        "Claude Code src/tools/BashTool/BashTool.tsx",
        "first",
        r"Command (?:running in background|was manually backgrounded by user|exceeded the assistant-mode blocking "
        r"budget .*moved to the background) with ID: .*",
        "running",
        "Command running in background with ID: b20hid1oz. Output is being written to: /tmp/claude/b20hid1oz.output",
    ).scoped(("claude-code",)),
    _r(
        "zed-failed",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs process_content",
        "first",
        rf'Command ".*" failed with exit code {N}\.',
        "code",
        'Command "cargo test" failed with exit code 101.\n\n```\nerror[E0425]: cannot find value `x`\n```',
    ).scoped(("zed",)),
    _r(
        "zed-success",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs",
        "first",
        r"Command executed successfully\.",
        "success",
        "Command executed successfully.",
    ).scoped(("zed",)),
    _r(
        "zed-timeout",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs",
        "first",
        r'Command ".*" timed out\..*|Command terminated unexpectedly\..*|The user stopped this command\..*',
        "failed",
        'Command "sleep 100" timed out. No output was captured.',
    ).scoped(("zed",)),
    _r(
        "codex-exec-error",
        "Codex CLI shell (signal, sandbox error)",
        "openai/codex codex-rs/core/src/tools/events.rs ToolEmitter::finish",
        "first",
        r"execution error: .*",
        "failed",
        "execution error: Sandbox(Signal(9))",
    ).scoped(("codex",)),
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
    ).scoped(("gemini-cli",)),
    _r(
        "gemini-background",
        "Gemini CLI run_shell_command",
        "google-gemini/gemini-cli packages/core/src/tools/shell.ts",
        "first",
        r"Command (?:moved to background \(PID: \d+\)|is running in background\. PID: \d+).*",
        "running",
        "Command moved to background (PID: 4821). Output hidden. Press Ctrl+B to view.",
    ).scoped(("gemini-cli",)),
    _r(
        "qwen-timeout",
        "Qwen Code run_shell_command",
        "QwenLM/qwen-code packages/core/src/tools/shell.ts (captured with 0.24.4)",
        "first",
        r"Command timed out after \d+ms before it could complete\..*",
        "failed",
        "Command timed out after 1000ms before it could complete. There was no output before it timed out.",
    ).scoped(("qwen-code",)),
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
    ).scoped(("cline", "roo-code")),
    _r(
        "cline-cancelled",
        "Cline execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "first",
        r"Command (?:cancelled\.|was cancelled by the user\.|execution timed out after \d+ seconds\.).*",
        "failed",
        "Command execution timed out after 30 seconds. \nOutput so far:\nwaiting",
    ).scoped(("cline",)),
    _r(
        "roo-timeout",
        "Roo Code execute_command",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts",
        "first",
        r"The command was terminated after exceeding a user-configured \d+s timeout\..*",
        "failed",
        "The command was terminated after exceeding a user-configured 60s timeout. Do not try to re-run the command.",
    ).scoped(("roo-code",)),
    _r(
        "crush-background",
        "Crush bash",
        "charmbracelet/crush internal/agent/tools/bash.go",
        "first",
        r"Command is taking longer than expected and has been moved to background\.|Background shell started "
        r"with ID: .*",
        "running",
        "Background shell started with ID: 3\n\nUse job_output tool to view output or job_kill to terminate.",
    ).scoped(("crush",)),
    # ---- last line --------------------------------------------------------------------
    _r(
        "goose-exit",
        "goose shell",
        "block/goose crates/goose/src/agents/platform_extensions/developer/shell.rs",
        "last",
        rf"Command exited with code {N}",
        "code",
        "FAILED test_x\n1 failed\n\nCommand exited with code 1",
    ).scoped(("goose",)),
    _r(
        "goose-timeout",
        "goose shell",
        "block/goose crates/goose/src/agents/platform_extensions/developer/shell.rs",
        "last",
        r"Command timed out(?: after \d+ seconds)?",
        "failed",
        "started\n\nCommand timed out after 30 seconds",
    ).scoped(("goose",)),
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
    r"|Blocked: standalone sleep"  # Qwen Code (captured with 0.24.4)
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


def _counted(where: str, client: str | None, flagged: bool) -> tuple[Rule, ...]:
    return tuple(r for r in _BY_WHERE[where] if _counts(r, client, flagged))


def _tables() -> dict[tuple[str, str, bool], tuple[tuple[Rule, ...], re.Pattern[str] | None]]:
    """For each place, known client and error flag: the rules that count there, in order, and
    one pattern for all of them. Most lines tried are the program's own output: a client's few
    rules turn them down faster than every client's rules (or each rule's client check) would."""
    compiled: dict[tuple[Rule, ...], re.Pattern[str]] = {}
    table = {}
    for where in _BY_WHERE:
        for client in BY_ID:
            for flagged in (False, True):
                rules = _counted(where, client, flagged)
                if rules and rules not in compiled:
                    compiled[rules] = _any_of(rules)
                table[where, client, flagged] = (rules, compiled.get(rules))
    return table


def _int32(n: int) -> int | None:
    return n if -(2**31) <= n < 2**31 else None


def _code(n: int, source: str) -> ExitStatus:
    """A stated exit code; one beyond int32 (the step's field) is still a failure, without its number."""
    code = _int32(n)
    if code is None:
        return ExitStatus(FAILED_WITHOUT_CODE, source, "failed")
    return ExitStatus(code, source, "code")


def _status(rule: Rule, m: re.Match[str]) -> ExitStatus:
    if rule.verdict == "code":
        return _code(int(m.group("code")), rule.name)
    if rule.verdict == "success":
        return ExitStatus(0, rule.name, "success")
    if rule.verdict == "failed":
        return ExitStatus(FAILED_WITHOUT_CODE, rule.name, "failed")
    return ExitStatus(None, rule.name, rule.verdict)


def _counts(rule: Rule, client: str | None, is_error: bool | None) -> bool:
    return counts_for(client, rule.clients) and (rule.flag is None or rule.flag == bool(is_error))


_TABLES = _tables()


def _match(where: str, line: str, client: str | None, is_error: bool | None) -> ExitStatus | None:
    """The status the first of the client's ``where`` rules that fullmatches ``line`` says."""
    if client is None:
        return None  # no client: no frame counts
    found = _TABLES.get((where, client, bool(is_error)))
    if found is None:  # a name that is no client id (a family): the same rules, found the slow way
        rules = _counted(where, client, bool(is_error))
        found = (rules, _any_of(rules) if rules else None)
    rules, any_of = found
    if any_of is None:
        return None
    line = line.strip()
    if not any_of.fullmatch(line):
        return None
    for rule in rules:
        m = rule.pattern.fullmatch(line)
        if m:
            return _status(rule, m)
    return None


def _header_end(lines: list[str]) -> int | None:
    """Where a client's header ends: the index of its bare ``Output:`` line, if any."""
    if "Output:" not in "\n".join(lines[:_HEADER_LIMIT]):  # most results have no header
        return None
    for i, line in enumerate(lines[:_HEADER_LIMIT]):
        if _OUTPUT_MARKER.fullmatch(line.strip()):
            return i
    return None


def _header(head: list[str], client: str | None, is_error: bool | None) -> ExitStatus | None:
    for line in head:
        found = _match("header", line, client, is_error)
        if found:
            return found
    return None


def _trailer(lines: list[str], client: str | None, is_error: bool | None) -> ExitStatus | None:
    """The strongest verdict among the trailing frame lines (a failure beats a code)."""
    found: list[ExitStatus] = []
    seen = 0
    for line in reversed(lines):
        if not line.strip():
            continue
        if seen == _TRAILER_LIMIT:
            break
        seen += 1
        status = _match("trailer", line, client, is_error)
        if status:
            found.append(status)
        elif not _FRAME_LINES.fullmatch(line.strip()):
            break
    if not found:
        return None
    order = {"running": 0, "failed": 1, "code": 2, "success": 3}
    return min(found, key=lambda s: order.get(s.verdict, 9))


# ---- results that are JSON objects of the client's own making ------------------------------


def _codex_json(doc: dict[str, object]) -> ExitStatus | None:
    # Codex shell / local_shell (structured output): {"output": ..., "metadata": {"exit_code": N, ...}}.
    meta = doc.get("metadata")
    if set(doc) <= {"output", "metadata"} and isinstance(meta, dict) and type(meta.get("exit_code")) is int:
        return _code(meta["exit_code"], "codex-json")
    return None


_MINI_KEYS = frozenset({"returncode", "output", "exception_info"})
_MINI_LONG_KEYS = frozenset({"returncode", "output_head", "output_tail", "elided_chars", "warning", "exception_info"})
_MINI_NOT_RUN = "action was not executed"


def _mini(returncode: int, exception_info: str, source: str) -> ExitStatus:
    """mini-swe-agent: ``returncode`` -1 with ``exception_info`` is its own stand-in (a timeout or
    an error running the command: a failure; "action was not executed": it never ran)."""
    if exception_info.strip() == _MINI_NOT_RUN:
        return ExitStatus(None, source, "not_run")
    if returncode == -1 and exception_info.strip():
        return ExitStatus(FAILED_WITHOUT_CODE, source, "failed")
    return _code(returncode, source)


def _mini_json(doc: dict[str, object]) -> ExitStatus | None:
    keys = set(doc)
    if "returncode" not in keys or not (keys <= _MINI_KEYS or keys <= _MINI_LONG_KEYS):
        return None
    rc, info = doc["returncode"], doc.get("exception_info", "")
    if type(rc) is not int or not isinstance(info, str):
        return None
    return _mini(rc, info, "mini-swe-agent-json")


_MINI_XML = re.compile(
    r"\A(?:<exception>(?P<info>.*?)</exception>\s*)?<returncode>(?P<code>-?\d{1,19})</returncode>\s*"
    r"<(?:output|warning)>",
    re.S,
)


def _cline_json(doc: object) -> ExitStatus | None:
    # Cline v4 run_commands: [{"query", "result", "error"?, "success"}], one command per step.
    if not (isinstance(doc, list) and len(doc) == 1 and isinstance(doc[0], dict)):
        return None
    item = doc[0]
    if not isinstance(item.get("success"), bool):
        return None
    if item["success"]:
        return ExitStatus(0, "cline-v4-json", "success")
    m = re.fullmatch(rf"Command exited with code {N}", str(item.get("error") or ""))
    if m:
        return _code(int(m.group("code")), "cline-v4-json")
    return ExitStatus(FAILED_WITHOUT_CODE, "cline-v4-json", "failed")


# Whole-result structures: which client writes each (the result IS the structure, so its
# fields are the client's, not the program's).
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
        '`{"returncode": N, "output": …}` (`-1` with `exception_info`: failure; "action was not executed": never ran)',
        "SWE-agent/mini-swe-agent src/minisweagent/config/mini.yaml observation_template",
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
        '`[{"success": …, "error": "Command exited with code N"}]`',
        "cline/cline sdk/packages/core/src/extensions/tools/definitions.ts",
    ),
)
_STRUCTURED_CLIENTS = {name: clients for name, clients, _, _ in STRUCTURED}


def _structured(text: str, client: str | None) -> ExitStatus | None:
    """A whole result that is the client's own structure (JSON, or mini-swe-agent's tags)."""
    if text[:1] == "<":
        m = _MINI_XML.match(text)
        if m and counts_for(client, _STRUCTURED_CLIENTS["mini-swe-agent-xml"]):
            return _mini(int(m.group("code")), m.group("info") or "", "mini-swe-agent-xml")
        return None
    if text[:1] not in ("{", "["):
        return None
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    readers = (("codex-json", _codex_json), ("mini-swe-agent-json", _mini_json))
    for name, read in readers:
        if isinstance(doc, dict) and counts_for(client, _STRUCTURED_CLIENTS[name]):
            found = read(doc)
            if found:
                return found
    if counts_for(client, _STRUCTURED_CLIENTS["cline-v4-json"]):
        return _cline_json(doc)
    return None


# ---- Gemini CLI family: a fixed frame around the output -----------------------------------

GEMINI_CLIENTS = ("gemini-cli",)  # the family: Gemini CLI, Qwen Code
# The frame's closing lines, in the order the client writes them (each at most once).
_GEMINI_SLOTS = ("Error", "Exit Code", "Signal", "Background PIDs", "Process Group PGID")
_GEMINI_START = re.compile(r"\A(?:Command: .*\n)?(?:Directory: .*\n)?Output: ")
_NONE = ("(none)", "")


def _gemini_frame(text: str) -> ExitStatus | None:
    """Gemini CLI / Qwen Code ``run_shell_command``: ``[Command: …][Directory: …]Output: …`` at the
    start, then ``Error:``, ``Exit Code:``, ``Signal:``, ``Background PIDs:``, ``Process Group PGID:``
    lines at the end, each optional, in that order. Gemini CLI writes ``Exit Code`` only when it is
    not 0; Qwen Code always writes it (``(none)`` for a signal). ``Signal: 0`` or ``(none)`` is no
    signal. Only lines in the frame's own slots count: a program line that looks like one sits
    above them, in the output."""
    if not _GEMINI_START.match(text):
        return None
    lines = text.splitlines()
    frame: dict[str, str] = {}
    slot = len(_GEMINI_SLOTS)
    for line in reversed(lines[1:]):
        key, sep, value = line.partition(": ")
        if not sep or key not in _GEMINI_SLOTS[:slot]:
            break
        slot = _GEMINI_SLOTS.index(key)
        frame[key] = value.strip()
    if "Process Group PGID" not in frame and "Exit Code" not in frame:
        return None  # not the client's closing frame (it always ends on one of these)
    code_text = frame.get("Exit Code", "(none)")
    signal = frame.get("Signal", "(none)")
    error = frame.get("Error", "(none)")
    signalled = signal not in _NONE and signal != "0"
    failed = signalled or error not in _NONE
    if code_text not in _NONE:
        if not re.fullmatch(r"-?\d{1,19}", code_text):
            return None
        status = _code(int(code_text), "gemini-frame")
        if status.code == 0 and failed:
            return ExitStatus(None, "gemini-frame", "conflict")
        return status
    if failed:
        return ExitStatus(FAILED_WITHOUT_CODE, "gemini-frame", "failed")
    if "Exit Code" in frame:  # Qwen Code: "(none)" and no signal, no error: nothing stated
        return None
    return ExitStatus(0, "gemini-frame", "success")  # Gemini CLI writes no Exit Code line for 0


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


_EDGE = 1024  # characters read at each end of a long result


def _edges(text: str) -> tuple[list[str], list[str]]:
    """The lines a frame can stand on, as ``text.splitlines()`` gives them: the first ones (the
    first non-blank among them, the header) and the last ones (a trailer of up to
    ``_TRAILER_LIMIT`` non-blank lines, the last non-blank). A long result is not split whole:
    each end is read as far as it holds those lines complete; otherwise (a short result, or an
    end of blank or very long lines) it is split whole."""
    if len(text) > 2 * _EDGE:
        head = text[:_EDGE].splitlines()
        # The last line of each piece may be cut: only lines with a line break after (head) or
        # before (tail) them inside the piece are whole.
        tail = text[-_EDGE:].splitlines()[1:]
        head = head[:_HEADER_LIMIT] if len(head) > _HEADER_LIMIT else []
        if any(map(str.strip, head)) and sum(map(bool, map(str.strip, tail))) >= _TRAILER_LIMIT:
            return head, tail
    lines = text.splitlines()
    return lines, lines


def _client_status(body: str, is_error: bool | None, client: str | None) -> ExitStatus | None:
    """What the client's own frame says, at the client's own position; None when it says nothing."""
    if client is None:
        return None
    found = _structured(body, client)
    if found:
        return found
    if counts_for(client, GEMINI_CLIENTS):
        found = _gemini_frame(body)
        if found:
            return found
    head, tail = _edges(body)
    first = next((ln for ln in head if ln.strip()), "")
    end = _header_end(head)
    if end is not None:
        # The client framed the output below its header: only the header speaks.
        return _header(head[:end], client, is_error) or (_match("first", first, client, is_error) if end else None)
    last = next((ln for ln in reversed(tail) if ln.strip()), "")
    return (
        _trailer(tail, client, is_error)
        or _match("first", first, client, is_error)
        or _match("last", last, client, is_error)
    )


def parse_exit_status(text: str, is_error: bool | None = None, client: str | None = None) -> ExitStatus:
    """What a shell result says about the command's outcome, for ``client`` (an id of clients.py).

    ``client`` None: the client is unknown, so only what a program's output cannot forge
    counts (the dialect's error flag ``is_error``); every client's frame is ignored. The error
    flag is authoritative in its direction: a flagged result is never exit 0 (a frame that
    says 0 or success conflicts with it: no claim, the code stays absent)."""
    body, _ = unframe(text)
    if NOT_RUN.match(body):  # refusals are never claims: recognised for every client
        return ExitStatus(None, "not-run", "not_run")
    found = _client_status(body, is_error, client)
    if found is not None and found.verdict in ("running", "not_run"):
        return found
    if is_error:
        if found is None:
            return ExitStatus(FAILED_WITHOUT_CODE, "error flag", "failed")
        if found.code == 0 or found.verdict in ("success", "conflict"):
            return ExitStatus(None, f"error flag against {found.source}", "conflict")
        return found
    return found if found is not None else ExitStatus(None, "", "unknown")
