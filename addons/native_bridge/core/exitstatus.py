"""Reading a shell command's outcome out of the result a client sent back.

Every client frames a command's result in its own words. Each :class:`Rule`
below is one frame: where in the result it stands (``where``), what a line of it
looks like, and what it says (``verdict``). A frame counts only at its own place
(the header above an ``Output:`` line, the trailing frame lines, the first line,
the last line, the whole result as a structure), matched as a whole line, so
words that merely appear inside the program's output never count.

Whose frames count (truth rule 3):

- a named client: its own frames. A line of the generic families that the client
  never writes is its program's output (the corpus holds real ones: ``echo 'Exit
  code: 3'`` through opencode, Kilo, Claude Code, the Agents SDK's local shell);
- a client we cannot name (the planner hop never can): every frame we know, read
  as each client would read the text, and the generic families (``Exit code: N``,
  ``exited with code N``, their bracketed forms, a JSON ``exit_code``), which no
  client writes with another meaning; where two readings differ, no claim.

Precedence for one client: structure > header above ``Output:`` > trailing frame
lines > the first line > the last line > the error flag. A stated number wins: a
flagged result with a number is that number; 1 only when no known frame states a
number; a number we cannot state (beyond int32) or decline (another client's frame
under a named client) leaves the code absent, never 1. core/EXIT_STATUS.md, "Exit status
formats", lists the rules with their sources; tests/test_exitstatus_clients.py
tests each one.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from typing import Literal

import orjson

from .clients import BY_ID, counts_for

# code: the rule states the number; success: the client states success (0);
# failed: a failure with no number (encoded as 1); running: no outcome yet;
# not_run: the command never ran (rejected, denied, invalid); conflict: the client's signals
# disagree; declined: a number is stated that the step cannot carry or the rules do not read
# for this client (both no claim: the code stays absent, never 1).
Verdict = Literal["code", "success", "failed", "running", "not_run", "conflict", "declined", "unknown"]
Where = Literal["json", "header", "trailer", "first", "last"]

FAILED_WITHOUT_CODE = 1
ANY = "*"  # a rule's clients: the generic families; as a reader: every frame (the screen)
GENERIC = "(generic)"  # as a reader: the generic families alone, one of the readings for a client we cannot name


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
    where: tuple[Where, ...]  # the places it counts at
    pattern: re.Pattern[str]  # matched against one whole stripped line
    verdict: Verdict
    examples: tuple[str, ...]  # realistic results, each tested in tests/test_exitstatus_clients.py
    clients: tuple[str, ...] = ()  # the clients (ids or families, clients.py) for which the frame counts
    flag: bool | None = None  # True: the client writes it only on a result it flags as an error

    def scoped(self, clients: tuple[str, ...], flag: bool | None = None) -> Rule:
        return replace(self, clients=clients, flag=flag)


Places = Where | tuple[Where, ...]


def _r(name: str, client: str, source: str, where: Places, pattern: str, verdict: Verdict, *examples: str) -> Rule:
    places = (where,) if isinstance(where, str) else where
    return Rule(name, client, source, places, re.compile(pattern), verdict, examples)


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
        ("header", "first"),
        rf"Command failed with exit code {N}\.",
        "code",
        "[execute_command for 'npm test'] Result:\nCommand failed with exit code 1.\nOutput:\nFAIL src/a.test.ts\n",
    ).scoped(("cline",)),
    _r(
        "cline-success",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        ("header", "first"),
        r"Command executed successfully \(exit code 0\)\.",
        "success",
        "Command executed successfully (exit code 0).\nOutput:\nok\n",
    ).scoped(("cline",)),
    _r(
        "cline-signal",
        "Cline >= 3.58 execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        ("header", "first"),
        r"Command terminated by signal \w+\.",
        "failed",
        "Command terminated by signal SIGKILL.\nOutput:\nKilled\n",
    ).scoped(("cline",)),
    _r(
        "roo-exit",
        "Roo Code execute_command (success: one line with its prefix)",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts executeCommandInTerminal",
        "header",
        rf"Command executed in .*'\. Exit code: {N}",
        "code",
        "Command executed in terminal within working directory '/home/u/proj'. Exit code: 0\nOutput:\nhi\n",
        "Command executed in '/w'. Exit code: 0\n\nOutput (61.0KB) persisted. Artifact ID: cmd-17.txt\n\n"
        "Preview:\nok\n",
    ).scoped(("roo-code",)),
    _r(
        "roo-cancelled",
        "Roo Code execute_command (cancelled while running)",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts executeCommandInTerminal",
        "first",
        r"The command was cancelled by the user\..*",
        "failed",
        "The command was cancelled by the user.",
    ).scoped(("roo-code",)),
    _r(
        "void-result",
        "Void run_command",
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult.run_command",
        "first",
        rf"Terminal command executed in terminal .*\. Result \(exit code {N}\):",
        "code",
        "Terminal command executed in terminal terminal 1. Result (exit code 2):\nls: cannot access '/nope'\n",
    ).scoped(("void",)),
    _r(
        "void-interrupted",
        "Void run_command (output too long: killed)",
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult.run_command",
        "first",
        r"Terminal command executed in terminal .*\. Command was interrupted because output was too long\. Result:",
        "failed",
        "Terminal command executed in terminal terminal 1. Command was interrupted because output was too long. "
        "Result:\n[0000] compiling\n",
    ).scoped(("void",)),
    _r(
        "void-running",
        "Void run_command / run_persistent_command",
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult",
        "first",
        r"Terminal command (?:ran in terminal .*, but timed out after .*|is running in the background in .*)",
        "running",
        "Terminal command ran in terminal terminal 1, but timed out after 15 seconds. Result:\nwaiting\n",
    ).scoped(("void",)),
    _r(
        "continue-cli-error",
        "Continue CLI Bash (a failure with stderr)",
        "continuedev/continue extensions/cli/src/tools/runTerminalCommand.ts",
        "first",
        rf"(?:Error executing tool \w+: )?Error \(exit code {N}\): .*",
        "code",
        "Error executing tool Bash: Error (exit code 2): ls: cannot access '/nope': No such file or directory\n",
    ).scoped(("continue-cli",)),
    _r(
        "continue-cli-timeout",
        "Continue CLI Bash",
        "continuedev/continue extensions/cli/src/tools/runTerminalCommand.ts",
        "last",
        r"\[Command timed out after \d+ seconds of no output\]",
        "failed",
        "waiting for input\n\n[Command timed out after 180 seconds of no output]",
    ).scoped(("continue-cli",)),
    _r(
        "mini-swe-agent-timeout",
        "mini-swe-agent (timeout_template)",
        "SWE-agent/mini-swe-agent src/minisweagent/config/default.yaml timeout_template",
        "first",
        r"The last command <command>.*</command> timed out and has been killed\.",
        "failed",
        "The last command <command>sleep 600</command> timed out and has been killed.\nThe output of the command "
        "was:\n<output>\n\n</output>\nPlease try another command and make sure to avoid those requiring "
        "interactive input.",
    ).scoped(("mini-swe-agent",)),
    _r(
        "swe-agent-timeout",
        "SWE-agent (command_cancelled_timeout_template)",
        "SWE-agent/SWE-agent sweagent/agent/agents.py TemplateConfig.command_cancelled_timeout_template",
        "first",
        r"The command '.*' was cancelled because it took more than \d+ seconds\..*",
        "failed",
        "The command 'python -m http.server' was cancelled because it took more than 30 seconds. Please try a "
        "different command that completes more quickly.",
    ).scoped(("swe-agent",)),
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
        r"after \d+ seconds\. Running in background\.|Command execution timed out after \d+ seconds\. The command "
        r"may still be running.*",
        "running",
        "Command is still running in the user's terminal.\nHere's the output so far:\nListening on :3000",
        "Command execution timed out after 30 seconds. The command may still be running in the terminal.\n"
        "Output so far:\nwaiting",
    ).scoped(("cline", "roo-code")),
    _r(
        "cline-cancelled",
        "Cline execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts",
        "first",
        r"Command (?:cancelled\.|was cancelled by the user\.).*",
        "failed",
        "Command was cancelled by the user.",
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
    # ---- generic families: every client, at the header, the first line, the last line ----
    # The forms the reference fix reads for any client (design brief, truth rule 3); no
    # client writes them with another meaning, so they count named or not.
    _r(
        "generic-exit-code",
        "any client: `Exit code: N`, `Exit code N` (bracketed too)",
        "design brief, truth rule 3 (the reference fix's families)",
        ("header", "first", "last"),
        rf"(?i)(?P<o1>[\[(])?exit code:? {N}\.?(?(o1)[\])])",
        "code",
        "Exit code: 2\nOutput:\nls: cannot access /nope",
        "make: *** [all] Error 2\n[exit code: 2]",
    ).scoped((ANY,)),
    _r(
        "generic-exited",
        "any client: `… exited with code N` (bracketed too)",
        "design brief, truth rule 3 (the reference fix's families)",
        ("header", "first", "last"),
        rf"(?i)(?P<o2>[\[(])?(?:(?:the )?(?:process|command|program|script|shell|task) )?exited with (?:exit )?code "
        rf"{N}\.?(?(o2)[\])])",
        "code",
        "npm ERR! Test failed.\nProcess exited with code 1",
    ).scoped((ANY,)),
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
    r"|Your bash command contained syntax errors and was NOT executed"  # SWE-agent
    r"|Command cancelled: user denied (?:permission to run|the requested sandbox)"  # Zed
    r"|Tool execution was not approved|The user cancelled this tool call"  # OpenAI Agents SDK, Continue
    r")"
)

# A bare line, as Codex, Cline and Roo Code print it; Roo Code's saved output ends its header too.
_OUTPUT_MARKER = re.compile(r"Output:|Output \([\d.]+ ?[KMG]?B\) persisted\. Artifact ID: .*")
_HEADER_LIMIT = 12
_TRAILER_LIMIT = 8
_ERROR_PREFIX = "[tool error]"
_CLINE_PREFIX = re.compile(r"\[[\w.-]+ for .*\] Result:")
_UNTRUSTED = re.compile(r"(?s)\A<untrusted_context>\n?(.*?)\n?</untrusted_context>\Z")

_BY_WHERE: dict[str, tuple[Rule, ...]] = {
    w: tuple(r for r in RULES if w in r.where) for w in ("header", "trailer", "first", "last")
}


def _any_of(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    """One pattern that fullmatches a line exactly when one of ``rules`` does: most lines a
    rule is tried on are the program's own output, and one regex turns them down faster than
    every rule in turn. (Each rule's global flags become scoped; its ``code`` group a plain one.)"""
    parts = []
    for rule in rules:
        p = rule.pattern.pattern.replace("(?P<code>", "(?:")
        flags = re.match(r"\(\?([a-zA-Z]+)\)", p)
        parts.append(f"(?{flags.group(1)}:{p[flags.end() :]})" if flags else f"(?:{p})")
    return re.compile("|".join(parts))


def _counted(where: str, client: str | None, flagged: bool) -> tuple[Rule, ...]:
    return tuple(r for r in _BY_WHERE[where] if _counts(r, client, flagged))


def _tables() -> dict[tuple[str, str, bool], tuple[tuple[Rule, ...], re.Pattern[str] | None]]:
    """For each place, known client (and ``ANY``: every client's rules, the screen of a reading
    for a client we cannot name) and error flag: the rules that count there, in order, and one
    pattern for all of them. Most lines tried are the program's own output: a client's few
    rules turn them down faster than every client's rules (or each rule's client check) would."""
    compiled: dict[tuple[Rule, ...], re.Pattern[str]] = {}
    table = {}
    for where in _BY_WHERE:
        for client in (*BY_ID, ANY, GENERIC):
            for flagged in (False, True):
                rules = _counted(where, client, flagged)
                if rules and rules not in compiled:
                    compiled[rules] = _any_of(rules)
                table[where, client, flagged] = (rules, compiled.get(rules))
    return table


def _int32(n: int) -> int | None:
    return n if -(2**31) <= n < 2**31 else None


def _code(n: int, source: str) -> ExitStatus:
    """A stated exit code; one beyond int32 (the step's field) cannot be stated: absent, never 1."""
    code = _int32(n)
    if code is None:
        return ExitStatus(None, source, "declined")
    return ExitStatus(code, source, "code")


def _status(rule: Rule, m: re.Match[str]) -> ExitStatus:
    if rule.verdict == "code":
        return _code(int(m.group("code")), rule.name)
    if rule.verdict == "success":
        return ExitStatus(0, rule.name, "success")
    if rule.verdict == "failed":
        return ExitStatus(FAILED_WITHOUT_CODE, rule.name, "failed")
    return ExitStatus(None, rule.name, rule.verdict)


def _for(client: str, clients: tuple[str, ...]) -> bool:
    """Whether a frame of ``clients`` counts when reading for ``client``: a client's own frames,
    ``GENERIC`` the generic families, ``ANY`` every frame."""
    if client == ANY:
        return True
    if client == GENERIC:
        return ANY in clients
    return ANY not in clients and counts_for(client, clients)


def _counts(rule: Rule, client: str, is_error: bool | None) -> bool:
    return _for(client, rule.clients) and (rule.flag is None or rule.flag == bool(is_error))


_TABLES = _tables()


def _table(where: str, client: str, is_error: bool | None) -> tuple[tuple[Rule, ...], re.Pattern[str] | None]:
    found = _TABLES.get((where, client, bool(is_error)))
    if found is None:  # a name that is no client id (a family): the same rules, found the slow way
        rules = _counted(where, client, bool(is_error))
        found = (rules, _any_of(rules) if rules else None)
    return found


def _match(where: str, line: str, client: str, is_error: bool | None) -> ExitStatus | None:
    """The status the first of the client's ``where`` rules that fullmatches ``line`` says."""
    rules, any_of = _table(where, client, is_error)
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
    if "Output" not in "\n".join(lines[:_HEADER_LIMIT]):  # most results have no header
        return None
    for i, line in enumerate(lines[:_HEADER_LIMIT]):
        if _OUTPUT_MARKER.fullmatch(line.strip()):
            return i
    return None


def _header(head: list[str], client: str, is_error: bool | None) -> ExitStatus | None:
    for line in head:
        found = _match("header", line, client, is_error)
        if found:
            return found
    return None


def _trailer(lines: list[str], client: str, is_error: bool | None) -> ExitStatus | None:
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


def _generic_json(doc: dict[str, object]) -> ExitStatus | None:
    # Any client: a whole-result object with an integer exit_code / exitCode, at the top or in "metadata".
    meta = doc.get("metadata")
    for where in (doc, meta if isinstance(meta, dict) else {}):
        for key in ("exit_code", "exitCode"):
            if type(where.get(key)) is int:
                return _code(where[key], "json-exit-code")
    return None


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
    (
        "json-exit-code",
        (ANY,),
        '`{"exit_code": N}`, `{"exitCode": N}`, `{"metadata": {"exit_code": N}}` (the reference fix\'s families)',
        "design brief, truth rule 3",
    ),
)
_STRUCTURED_CLIENTS = {name: clients for name, clients, _, _ in STRUCTURED}


_NO_DOC = object()  # the result is no JSON document


def _structured(t: _Text, client: str) -> ExitStatus | None:
    """A whole result that is a client's own structure (JSON, or mini-swe-agent's tags)."""
    text = t.body
    if text[:1] == "<":
        m = _MINI_XML.match(text)
        if m and _for(client, _STRUCTURED_CLIENTS["mini-swe-agent-xml"]):
            return _mini(int(m.group("code")), m.group("info") or "", "mini-swe-agent-xml")
        return None
    doc = t.doc
    if doc is _NO_DOC:
        return None
    if isinstance(doc, dict):
        readers = (("codex-json", _codex_json), ("mini-swe-agent-json", _mini_json), ("json-exit-code", _generic_json))
        for name, read in readers:
            if _for(client, _STRUCTURED_CLIENTS[name]):
                found = read(doc)
                if found:
                    return found
    if _for(client, _STRUCTURED_CLIENTS["cline-v4-json"]):
        return _cline_json(doc)
    return None


# ---- Gemini CLI family: a fixed frame around the output -----------------------------------

GEMINI_CLIENTS = ("gemini-cli",)  # the family: Gemini CLI, Qwen Code
# The frame's closing lines, in the order the client writes them (each at most once).
_GEMINI_SLOTS = ("Error", "Exit Code", "Signal", "Background PIDs", "Process Group PGID")
_GEMINI_START = re.compile(r"\A(?:Command: .*\n)?(?:Directory: .*\n)?Output: ")
# Qwen Code appends a hint after its frame when a foreground command ran long.
_QWEN_NOTE = re.compile(r"\n\nNote: this foreground command ran for \d+s\.[^\n]*\Z")
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
    lines = _QWEN_NOTE.sub("", text).splitlines()
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


def strip_frame(text: str) -> tuple[str, bool]:
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


class _Text:
    """A result's places, found once however many clients read it: the lines a frame can stand
    on, the header's end and the JSON document the whole result may be."""

    __slots__ = ("_doc", "body", "end", "first", "head", "last", "tail")

    def __init__(self, body: str) -> None:
        self.body = body
        head, tail = _edges(body)
        self.head, self.tail = head, tail
        self.first = next((ln for ln in head if ln.strip()), "")
        self.last = next((ln for ln in reversed(tail) if ln.strip()), "")
        self.end = _header_end(head)
        self._doc: object = None

    @property
    def doc(self) -> object:
        if self._doc is None:
            self._doc = _NO_DOC
            if self.body[:1] in ("{", "["):
                with contextlib.suppress(orjson.JSONDecodeError):
                    self._doc = orjson.loads(self.body)
        return self._doc


def _frames(t: _Text, client: str, flagged: bool) -> ExitStatus | None:
    """What the frames ``client`` reads say, each at its own place; None: nothing."""
    found = _structured(t, client)
    if found:
        return found
    if _for(client, GEMINI_CLIENTS):
        found = _gemini_frame(t.body)
        if found:
            return found
    if t.end is not None and _table("header", client, flagged)[0]:
        # A client that frames the output below its header: only the header speaks. (As the
        # screen of every frame, ANY goes on where the header says nothing: a client without
        # a header reads the other places.)
        head = _header(t.head[: t.end], client, flagged)
        head = head or (_match("first", t.first, client, flagged) if t.end else None)
        if head or client != ANY:
            return head
    return (
        _trailer(t.tail, client, flagged)
        or _match("first", t.first, client, flagged)
        or _match("last", t.last, client, flagged)
    )


_CAUTION = ("not_run", "running")  # readings that make no step: they win a disagreement


def _unnamed(t: _Text, flagged: bool) -> ExitStatus | None:
    """For a client we cannot name: the text as every known client reads it, and as the generic
    families do. One reading (the readers that read nothing aside) is the answer; readings that
    differ are no claim, except that "never ran" or "still running" wins (no step is the
    cautious answer)."""
    if _frames(t, ANY, flagged) is None:  # no frame of any client at its place: nobody reads a thing
        return None
    readings: dict[tuple[int | None, str], list[str]] = {}
    for client in (*BY_ID, GENERIC):
        found = _frames(t, client, flagged)
        if found is not None:
            sources = readings.setdefault((found.code, found.verdict), [])
            if found.source not in sources:
                sources.append(found.source)
                sources.sort()
    if len(readings) == 1:
        ((code, verdict), sources), *_ = readings.items()
        return ExitStatus(code, "+".join(sources), verdict)  # type: ignore[arg-type]
    for caution in _CAUTION:
        for (code, verdict), sources in readings.items():
            if verdict == caution:
                return ExitStatus(code, "+".join(sources), verdict)  # type: ignore[arg-type]
    told = "; ".join(f"{'+'.join(src)} says {code if code is not None else v}" for (code, v), src in readings.items())
    return ExitStatus(None, f"clients read it differently ({told})", "conflict")


def parse_exit_status(text: str, is_error: bool | None = None, client: str | None = None) -> ExitStatus:
    """What a shell result says about the command's outcome, for ``client`` (an id of clients.py).

    ``client`` None: the client cannot be named, so the text is read as every known client
    would read it (:func:`_unnamed`). ``is_error`` is the dialect's error flag; a ``[tool
    error]`` prefix is one too. The flag is authoritative in its direction: a flagged result
    is never exit 0 (a frame that says 0 or success conflicts with it: no claim); with a
    number a frame states, it is that number; with none, 1; with a number the rules decline
    for this client (another client's frame), absent."""
    body, prefixed = strip_frame(text)
    if NOT_RUN.match(body):  # refusals are never claims: recognised for every client
        return ExitStatus(None, "not-run", "not_run")
    flagged = bool(is_error) or prefixed
    t = _Text(body)
    found = _frames(t, client, flagged) if client is not None else _unnamed(t, flagged)
    if found is not None and found.verdict in _CAUTION:
        return found
    if not flagged:
        return found if found is not None else ExitStatus(None, "", "unknown")
    flag = "error flag" if is_error else "[tool error] prefix"
    if found is None:
        declined = _unnamed(t, flagged) if client is not None else None
        if declined is not None and declined.verdict in ("code", "declined", "conflict"):
            why = f"{flag}; {declined.source} is not {client}'s frame"
            return ExitStatus(None, why, "declined")
        return ExitStatus(FAILED_WITHOUT_CODE, flag, "failed")
    if found.code == 0 or found.verdict in ("success", "conflict"):
        return ExitStatus(None, f"{flag} against {found.source}", "conflict")
    return found
