"""Exit-status frames: each client's words for a shell command's outcome, one :class:`Rule` a frame.

A rule says who writes the frame and where its format is defined (``client``, ``source``),
the places of a result it counts at (``where``), what one whole line of it looks like and what
it says (``verdict``), realistic examples (each tested in tests/test_exitstatus_clients.py), and
the clients (ids or families of clients.py) for which it counts (``scoped``). exitstatus.py
reads them; EXIT_STATUS.md, "Exit status formats", is generated from this table. Within a
place, the order is the order of precedence.
"""

from __future__ import annotations

import re

from .types import ANY, CODE, Rule, Verdict, Where

Places = Where | tuple[Where, ...]


def _r(name: str, client: str, source: str, where: Places, pattern: str, verdict: Verdict, *examples: str) -> Rule:
    places = (where,) if isinstance(where, str) else where
    return Rule(name, client, source, places, re.compile(pattern), verdict, examples)


# mutation: frame-deleted
RULES: tuple[Rule, ...] = (
    # ---- header: lines above an "Output:" line ------------------------------------
    _r(
        "exit-code-header",
        "Codex CLI shell_command; Roo Code execute_command (Kilo Code's too)",
        "openai/codex codex-rs/core/src/"
        "tools/mod.rs format_exec_output_for_model_freeform; RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts "
        "formatExitStatus; Kilo-Org/kilocode src/core/tools/executeCommandTool.ts (4.x, user agent Kilo-Code/<v>)",
        "header",
        rf"Exit code: {CODE}",
        "code",
        "Exit code: 2\nWall time: 0.3 seconds\nOutput:\nls: cannot access '/nope': No such file or directory\n",
        "Command executed in terminal within working directory '/home/u/proj'. Command execution was not successful, "
        "inspect the cause and adjust as needed.\nExit code: 2\nOutput:\nmake: *** [all] Error 2\n",
    ).scoped(("codex", "roo-code", "kilo")),
    _r(
        "codex-exec-exited",
        "Codex CLI exec_command / write_stdin",
        "openai/codex codex-rs/core/src/tools/context.rs ExecCommandToolOutput::response_text",
        "header",
        rf"Process exited with code {CODE}",
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
        rf"Command failed with exit code {CODE}\.",
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
        "Roo Code / Kilo Code execute_command (success: one line with its prefix)",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts executeCommandInTerminal; Kilo-Org/kilocode "
        "src/core/tools/executeCommandTool.ts (4.x)",
        "header",
        rf"Command executed in .*'\. Exit code: {CODE}",
        "code",
        "Command executed in terminal within working directory '/home/u/proj'. Exit code: 0\nOutput:\nhi\n",
        "Command executed in '/w'. Exit code: 0\n\nOutput (61.0KB) persisted. Artifact ID: cmd-17.txt\n\n"
        "Preview:\nok\n",
    ).scoped(("roo-code", "kilo")),
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
        rf"Terminal command executed(?: and finished)?(?: in terminal .*)?\. Result \(exit code {CODE}\):",
        "code",
        "Terminal command executed in terminal terminal 1. Result (exit code 2):\nls: cannot access '/nope'\n",
        "Terminal command executed and finished. Result (exit code 2):\nls: cannot access '/nope'",
    ).scoped(("void",)),
    _r(
        "void-exit",
        "Void run_command / run_persistent_command (>= 1.3)",
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult.run_command "
        "(c666a5f7, 2025-04-29 → v1.4.x)",
        "last",
        rf"\(exit code {CODE}\)",
        "code",
        "ls: cannot access '/nope'\n(exit code 2)",
        "ok\n(exit code 0)",
    ).scoped(("void",)),
    _r(
        "void-inactive",
        "Void run_command (killed after a time without output, >= 1.3; the April 2025 dev builds' first line)",
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult.run_command "
        "(c666a5f7 → v1.4.x)",
        ("first", "last"),
        r"Terminal command ran, but was (?:automatically killed|interrupted)(?: by Void)? after \d+s of inactivity "
        r"and did not (?:necessarily )?finish successfully\..*",
        "failed",
        "waiting\nTerminal command ran, but was automatically killed by Void after 8s of inactivity and did not "
        "finish successfully. To try with more time, open a persistent terminal and run the command there.",
        "Terminal command ran, but was interrupted after 8s of inactivity and did not necessarily finish "
        "successfully. Full output:\nwaiting",
    ).scoped(("void",)),
    _r(
        "void-persistent-running",
        "Void run_persistent_command (>= 1.3)",
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult.run_persistent_command",
        "last",
        r"Terminal command is running in terminal .*\. The given outputs are the results after \d+ seconds\.",
        "running",
        "ready\nTerminal command is running in terminal 1. The given outputs are the results after 5 seconds.",
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
        "voideditor/void src/vs/workbench/contrib/void/browser/toolsService.ts stringOfResult (v1.0.2 `timed out "
        "after`, v1.2.x `did not complete after`)",
        "first",
        r"Terminal command (?:ran in .*, but (?:timed out|did not complete) after .*|is running in the background "
        r"in .*)",
        "running",
        "Terminal command ran in terminal terminal 1, but timed out after 15 seconds. Result:\nwaiting\n",
        "Terminal command ran in terminal 1, but did not complete after 20 seconds. Result:\nwaiting",
    ).scoped(("void",)),
    _r(
        "continue-cli-error",
        "Continue CLI Bash (a failure with stderr)",
        "continuedev/continue extensions/cli/src/tools/runTerminalCommand.ts",
        "first",
        rf"(?:Error executing tool \w+: )?Error \(exit code {CODE}\): .*",
        "code",
        "Error executing tool Bash: Error (exit code 2): ls: cannot access '/nope': No such file or directory\n",
    ).scoped(("continue-cli",)),
    _r(
        "continue-cli-signal",
        "Continue CLI Bash (killed by a signal: Node's code is null)",
        "continuedev/continue extensions/cli/src/tools/runTerminalCommand.ts",
        "first",
        r"(?:Error executing tool \w+: )?Error \(exit code null\): .*",
        "failed",
        "Error executing tool Bash: Error (exit code null): Terminated\n",
    ).scoped(("continue-cli",)),
    _r(
        "continue-cli-background",
        "Continue CLI Bash (moved to the background; the background refused, the command going on in the foreground)",
        "continuedev/continue extensions/cli/src/tools/runTerminalCommand.ts, extensions/cli/src/stream/"
        "streamChatResponse.helpers.ts (561f85e95c, 2026-02)",
        "first",
        r"Command moved to background\. Job ID: \S+|Failed to move to background \(job limit reached\)\. Command "
        r"continues in foreground\.(?: ?Output so far:.*)?",
        "running",
        'Command moved to background. Job ID: 3\nOutput so far:\nready\nUse CheckBackgroundJob("3") to check status.',
        "Failed to move to background (job limit reached). Command continues in foreground.\nOutput so far: building",
    ).scoped(("continue-cli",)),
    _r(
        "continue-cli-timeout",
        "Continue CLI Bash (its truncation note may follow: a frame line)",
        "continuedev/continue extensions/cli/src/tools/runTerminalCommand.ts; the note: "
        "extensions/cli/src/stream/streamChatResponse.helpers.ts (c754289118, 2026-01)",
        ("trailer", "last"),
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
        "Roo Code execute_command (Kilo Code's too)",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts executeCommandInTerminal (formatPersistedOutput "
        "writes `Command executed in '<cwd>'.` since v3.46.0, e7965d9b45); Kilo-Org/kilocode "
        "src/core/tools/executeCommandTool.ts (4.x)",
        "header",
        r"(?:Command executed in .*\. )?Process terminated by signal \w+.*",
        "failed",
        "Command executed in terminal within working directory '/w'. Process terminated by signal SIGKILL\n"
        "Output:\nKilled\n",
        "Command executed in '/w'. Process terminated by signal SIGTERM\n\nOutput (61.0KB) persisted. Artifact ID: "
        "cmd-18.txt\n\nPreview:\nbuilding\n\nUse read_command_output tool to view full output if needed.",
    ).scoped(("roo-code", "kilo")),
    # ---- trailer: the client's closing frame lines ----------------------------------
    _r(
        "openhands-finished",
        "OpenHands execute_bash",
        "All-Hands-AI/OpenHands openhands/events/observation/commands.py CmdOutputObservation.to_agent_observation",
        "trailer",
        rf"\[Command finished with exit code {CODE}\]",
        "code",
        "FAILED tests/test_x.py::test_a\n1 failed in 0.12s\n[The command completed with exit code 1.]\n"
        "[Current working directory: /workspace/repo]\n[Command finished with exit code 1]",
    ).scoped(("openhands",)),
    _r(
        "openhands-completed",
        "OpenHands execute_bash",
        "All-Hands-AI/OpenHands openhands/runtime/utils/bash.py",
        "trailer",
        rf"\[The command completed with exit code {CODE}\.(?: CTRL\+\w was sent\.)?\]",
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
        "Continue run_terminal_command (the non-streaming path nests its error: `Command failed with: …`)",
        "continuedev/continue core/util/messageContent.ts renderContextItemsWithStatus; "
        "core/tools/implementations/runTerminalCommand.ts (ContinueError CommandExecutionFailed, 77a8db7f63, "
        "2025-10-14 → 2026-06)",
        "trailer",
        rf"\[Status: Command failed with(?:: Command failed with)? exit code {CODE}\]",
        "code",
        "FAIL src/a.test.ts\n  x adds (3 ms)\n\n[Status: Command failed with exit code 1]",
        "npm ERR! missing script\n[Status: Command failed with: Command failed with exit code 2]",
    ).scoped(("continue",)),
    _r(
        "continue-status-failed",
        "Continue run_terminal_command (non-streaming: a signal is `exit code null`; a spawn error its message)",
        "continuedev/continue core/tools/implementations/runTerminalCommand.ts (`Command failed with: "
        "${error.message}`, 77a8db7f63, 2025-10-14 → 2026-06)",
        "trailer",
        r"\[Status: Command failed with: .*\]",
        "failed",
        "\n[Status: Command failed with: Command failed with exit code null]",
        "Error: spawn /bin/zsh ENOENT\n[Status: Command failed with: spawn /bin/zsh ENOENT]",
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
        rf"Exit code {CODE}",
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
        rf"Exit code {CODE}",
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
        r"budget .*moved to the background) with ID: .*|Command was moved to the background \(ID: .*\) so that .*",
        "running",
        "Command running in background with ID: b20hid1oz. Output is being written to: /tmp/claude/b20hid1oz.output",
        "Command was moved to the background (ID: b9) so that a message that arrived while it was running can reach "
        "you; it was not interrupted. Output is being written to: /tmp/claude/b9.output.",
    ).scoped(("claude-code",)),
    _r(
        "claude-code-timeout-background",
        "Claude Code Bash (2.1.x: a timeout moved it to the background, its output above)",
        "Claude Code (not public source): the strings of its published binary (2.1.x late)",
        "trailer",
        r"Command did not complete within its \d+s timeout and was moved to the background \(ID: .*\)\..*",
        "running",
        "Starting dev server\nCommand did not complete within its 120s timeout and was moved to the background (ID: "
        "b7x2). Output is being written to: /tmp/claude/b7x2.output.\nYou will be notified when it completes.",
    ).scoped(("claude-code",)),
    _r(
        "zed-failed",
        "Zed terminal",
        "zed-industries/zed crates/agent/src/tools/terminal_tool.rs process_content",
        "first",
        rf'Command ".*" failed with exit code {CODE}\.',
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
        "codex-aborted",
        "Codex CLI (a call the user aborted)",
        "openai/codex codex-rs/core/src/tools abort_message (`aborted by user after Ns` ~0.80; the shell family "
        "`Wall time: N seconds` then `aborted by user`, ~0.99 to 0.171.0)",
        "last",
        r"aborted by user(?: after [\d.]+ ?s(?:econds)?)?",
        "failed",
        "Wall time: 5.0 seconds\naborted by user",
        "aborted by user after 5.0s",
    ).scoped(("codex",)),
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
        "zed-interrupted-2025",
        "Zed terminal (assistant_tools, 2025: no exit status)",
        "zed-industries/zed crates/assistant_tools/src/terminal_tool.rs process_content (2025, before crates/agent)",
        "first",
        r"Command failed or was interrupted\.",
        "failed",
        "Command failed or was interrupted.\nPartial output captured:\n\n```\npartial\n```",
    ).scoped(("zed",)),
    _r(
        "opencode-aborted",
        "opencode (the processor marks an aborted call's part as an error; over Chat Completions, no flag)",
        "sst/opencode packages/opencode/src/session/processor.ts (1.x to 1.18.33)",
        "first",
        r"Tool execution aborted",
        "failed",
        "Tool execution aborted",
    ).scoped(("opencode",)),
    _r(
        "goose-spawn",
        "goose shell (a spawn error; over Chat Completions its is_error is dropped)",
        "block/goose crates/goose/src/agents/platform_extensions/developer/shell.rs ShellTool::shell_with_cwd",
        "first",
        r"Failed to spawn shell command: .*",
        "failed",
        "Failed to spawn shell command: No such file or directory (os error 2)",
    ).scoped(("goose",)),
    _r(
        "crush-go-error",
        "Crush bash (a Go error as the tool's text, over OpenAI's API)",
        "charm.land/fantasy providers/openai/language_model_hooks.go; charmbracelet/crush internal/agent/tools/bash.go",
        "first",
        r"(?:\[Job \d+\] )?error executing command: .*",
        "failed",
        '[Job 3] error executing command: exec: "bash": executable file not found in $PATH',
    ).scoped(("crush",)),
    _r(
        "agents-sdk-timeout",
        "OpenAI Agents SDK (a function tool's timeout_seconds)",
        "openai/openai-agents-python src/agents/tool.py (the default timeout message, ~v0.6 to v0.24.0)",
        "first",
        r"Tool '.*' timed out after [\d.]+ seconds\.",
        "failed",
        "Tool 'exec_command' timed out after 30 seconds.",
    ).scoped(("agents-sdk",)),
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
        "qwen-background",
        "Qwen Code run_shell_command (in the background: a shell started, a foreground command promoted; 0.12's "
        "wording)",
        "QwenLM/qwen-code packages/core/src/tools/shell.ts (captured from the npm bundles: 0.12.0; 0.2x to 0.24.4, "
        "handlePromotedForeground)",
        "first",
        r"Background shell started\.|Foreground command \".*\" promoted to background as \S+\.|Background command "
        r"started\. PID: \d+.*",
        "running",
        "Background shell started.\nid: bg_1a2b\npid: 4242\noutput file: /tmp/q/bg_1a2b.output",
        'Foreground command "npm run dev" promoted to background as bg_9.\nStatus: running. PID: 77.',
        "Background command started. PID: 4242 (Use kill <pid> to stop)",
    ).scoped(("qwen-code",)),
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
        "Cline / Roo Code / Kilo Code execute_command",
        "cline/cline src/integrations/terminal/CommandOrchestrator.ts (the timeout: `… The command may still be "
        "running …` up to v3.32, the sentence alone since v3.33.0); RooCodeInc/Roo-Code "
        "src/core/tools/ExecuteCommandTool.ts; Kilo-Org/kilocode src/core/tools/executeCommandTool.ts (4.x)",
        "first",
        r"Command is (?:still running in (?:the user's )?terminal|running in the background).*|Command timed out "
        r"after \d+ seconds\. Running in background\.|Command execution timed out after \d+ seconds\.(?: The "
        r"command may still be running.*)?",
        "running",
        "Command is still running in the user's terminal.\nHere's the output so far:\nListening on :3000",
        "Command execution timed out after 30 seconds. The command may still be running in the terminal.\n"
        "Output so far:\nwaiting",
        "Command execution timed out after 30 seconds. \nOutput so far:\nwaiting",
        "Command is still running in terminal  from '/home/u/proj'.\nHere's the output so far:\nListening on :3000\n\n"
        "You will be updated on the terminal status and new output in the future.",
    ).scoped(("cline", "roo-code", "kilo")),
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
        "Roo Code / Kilo Code execute_command",
        "RooCodeInc/Roo-Code src/core/tools/ExecuteCommandTool.ts; Kilo-Org/kilocode src/core/tools/"
        "executeCommandTool.ts (4.x)",
        "first",
        r"The command was terminated after exceeding a user-configured \d+s timeout\..*",
        "failed",
        "The command was terminated after exceeding a user-configured 60s timeout. Do not try to re-run the command.",
    ).scoped(("roo-code", "kilo")),
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
        rf"Command exited with code {CODE}",
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
    _r(
        "agents-sdk-shell-timeout",
        "OpenAI Agents SDK ShellTool (its shell_call_output rendered as text: a timeout)",
        "openai/openai-agents-python src/agents/run_internal/tool_execution.py render_shell_outputs",
        "last",
        r"status: timeout",
        "failed",
        "$ sleep 100\nstatus: timeout",
    ).scoped(("agents-sdk",)),
    # pi's success is the program's output bare (a command killed by a signal too: Node's code null),
    # so only its failure lines speak: after the output and a blank line (v0.6.0 to v0.7.17 with a
    # `Command failed` line first).
    _r(
        "pi-exited",
        "pi bash",
        "badlogic/pi-mono packages/coding-agent/src/core/tools/bash.ts (src/tools/bash.ts before v0.14; v0.6.0, "
        "2025-11-12 → 0.73.1)",
        "last",
        rf"Command exited with code {CODE}",
        "code",
        "ls: cannot access '/nope': No such file or directory\n\n\nCommand exited with code 2",
        "Command failed\n\n(no output)\n\nCommand exited with code 3",
    ).scoped(("pi",)),
    _r(
        "pi-killed",
        "pi bash (its timeout parameter; aborted by the user)",
        "badlogic/pi-mono packages/coding-agent/src/core/tools/bash.ts (v0.6.0 → 0.73.1; the timeout a parameter "
        "since v0.7.8)",
        "last",
        r"Command (?:timed out after [\d.]+ seconds|aborted)",
        "failed",
        "waiting\n\nCommand timed out after 1 seconds",
        "building\n\nCommand aborted",
    ).scoped(("pi",)),
    # ---- Kimi CLI: the message in a <system> tag, the first part of the result ----------------
    _r(
        "kimi-exit",
        "Kimi CLI Shell (Bash until 0.56)",
        "MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py, tools/utils.py ToolResultBuilder.error, "
        "soul/message.py tool_result_to_message (208f8822, 2025-09-24 → 1.49)",
        "first",
        rf"<system>ERROR: Command failed with exit code: {CODE}\.(?: Output is truncated to fit in the message\.)?"
        r"</system>",
        "code",
        "<system>ERROR: Command failed with exit code: 2.</system>\nls: cannot access '/nope': No such file or "
        "directory",
        "<system>ERROR: Command failed with exit code: 1. Output is truncated to fit in the message.</system>\nFAIL",
    ).scoped(("kimi-cli",)),
    _r(
        "kimi-success",
        "Kimi CLI Shell",
        "MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py (208f8822 → 1.49)",
        "first",
        r"<system>Command executed successfully\.(?: Output is truncated to fit in the message\.)?</system>",
        "success",
        "<system>Command executed successfully.</system>\nok",
    ).scoped(("kimi-cli",)),
    _r(
        "kimi-failed",
        "Kimi CLI Shell (timeout; the command could not be run)",
        "MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py (208f8822 → 1.49)",
        "first",
        r"<system>ERROR: Command (?:killed by timeout \(\d+s\)(?: Output is truncated to fit in the message\.)?"
        r"</system>|execution failed: .*)",
        "failed",
        "<system>ERROR: Command killed by timeout (60s)</system>\npartial",
        "<system>ERROR: Command execution failed: [Errno 2] No such file or directory</system>",
    ).scoped(("kimi-cli",)),
    _r(
        "kimi-background",
        "Kimi CLI Shell (run_in_background)",
        "MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py _run_in_background",
        "first",
        r"<system>Background task started\.</system>",
        "running",
        "<system>Background task started.</system>\ntask_id: bash-1",
    ).scoped(("kimi-cli",)),
    _r(
        "kimi-exit-2025-09",
        "Kimi CLI shell (its first release: the status appended to the output)",
        "MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py (2bdcd309, 2025-09-11 → 208f8822, 2025-09-24)",
        "last",
        rf"\(Exit code: {CODE}\)",
        "code",
        "ls: cannot access '/nope'\n(Exit code: 2)",
    ).scoped(("kimi-cli",)),
    _r(
        "kimi-timeout-2025-09",
        "Kimi CLI shell (its first release)",
        "MoonshotAI/kimi-cli src/kimi_cli/tools/shell/__init__.py (2bdcd309 → 208f8822)",
        "last",
        r"\(Command killed by timeout\)",
        "failed",
        "waiting\n(Command killed by timeout)",
    ).scoped(("kimi-cli",)),
    # ---- generic families: every client, at the header, the first line, the last line ----
    # The forms the reference fix reads for any client (design brief, truth rule 3); no
    # client writes them with another meaning, so they count named or not.
    _r(
        "generic-exit-code",
        "any client: `Exit code: N`, `Exit code N` (bracketed too)",
        "design brief, truth rule 3 (the reference fix's families)",
        ("header", "first", "last"),
        rf"(?i)(?P<o1>[\[(])?exit code:? {CODE}\.?(?(o1)[\])])",
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
        rf"{CODE}\.?(?(o2)[\])])",
        "code",
        "npm ERR! Test failed.\nProcess exited with code 1",
    ).scoped((ANY,)),
    _r(
        "python-called-process-error",
        "any client: Python's `subprocess.CalledProcessError` as the result (LangChain `BashProcess`, tools that "
        "return `str(e)`)",
        "python/cpython Lib/subprocess.py CalledProcessError.__str__; langchain-ai/langchain "
        "libs/experimental/langchain_experimental/llm_bash/bash.py BashProcess._run",
        "first",
        rf"(?:Error: )?Command '.*' returned non-zero exit status {CODE}\.",
        "code",
        "Command 'ls /nope' returned non-zero exit status 2.",
        "Command '['make', 'test']' returned non-zero exit status 2.\nmake: *** [test] Error 1",
    ).scoped((ANY,)),
    _r(
        "python-signal",
        "any client: Python's `CalledProcessError` for a signal (the signal's number is no exit code), "
        "`TimeoutExpired`",
        "python/cpython Lib/subprocess.py CalledProcessError.__str__, TimeoutExpired.__str__",
        "first",
        r"(?:Error: )?Command '.*' (?:died with (?:<Signals\.\w+: \d+>|unknown signal \d+)\.|timed out after "
        r"[\d.]+ seconds)",
        "failed",
        "Command 'sleep 100' died with <Signals.SIGKILL: 9>.",
        "Command 'sleep 100' timed out after 30 seconds",
    ).scoped((ANY,)),
    _r(
        "copilot-background",
        "any client: GitHub Copilot's run_in_terminal with isBackground (still running)",
        "microsoft/vscode src/vs/workbench/contrib/terminalContrib/chatAgentTools/browser/tools/runInTerminalTool.ts "
        "invoke (the background branch)",
        "first",
        r"Command is running in terminal with ID=\S+",
        "running",
        "Command is running in terminal with ID=3f2a\n The command is still running, with output:\nready",
    ).scoped((ANY,)),
    _r(
        "langchain-timeout",
        "any client: LangChain's shell timeouts (ShellToolMiddleware; persistent `BashProcess`)",
        "langchain-ai/langchain libs/langchain_v1/langchain/agents/middleware/shell_tool.py _run_shell_tool; "
        "libs/experimental/langchain_experimental/llm_bash/bash.py BashProcess._run_persistent",
        "first",
        r"Error: Command timed out after [\d.]+ seconds\.|Timeout error while executing command .*",
        "failed",
        "Error: Command timed out after 30.0 seconds.",
        "Timeout error while executing command sleep 100",
    ).scoped((ANY,)),
    _r(
        "langchain-exited",
        "any client: LangChain `BashProcess` (persistent)",
        "langchain-ai/langchain libs/experimental/langchain_experimental/llm_bash/bash.py BashProcess._run_persistent",
        "first",
        rf"Exited with error status: {CODE}",
        "code",
        "Exited with error status: 2",
    ).scoped((ANY,)),
)
