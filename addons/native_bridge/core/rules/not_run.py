"""Results that say the command (or tool) never ran: rejected by the user or a policy, or invalid.
Each wording is beside the client that writes it.

Recognised for every client (a refusal is never a claim): no step, whatever number the result
carries. exitstatus.py and kinds.signals_failure read it; EXIT_STATUS.md lists it.
"""

from __future__ import annotations

import re

# Matched against the start of the result (after the client's prefix lines).
NOT_RUN: re.Pattern[str] = re.compile(
    r"(?is)\A(?:"
    r"<tool_use_error>"  # Claude Code: validation error, the tool did not run
    r"|The user doesn't want to (?:proceed with this tool use|take this action)"  # Claude Code
    # Claude Code (a permission rule; auto-denied in dontAsk mode or without prompts, 2.0.x+), Zed
    r"|Permission (?:to use \S+ (?:with command .*? )?has been (?:auto-)?denied|for this tool use was denied"
    r"|to run tool denied by user)"
    # Claude Code 2.1.x stand-ins for a call that did not run (the turn ended first; an approval expired)
    r"|\[Tool call (?:skipped: .*? before this call ran|not completed: .*? did not run)"
    r"|(?:exec command|patch) rejected by user|approval policy is|failed to parse function arguments"  # Codex
    r"|exec_command failed for|unified exec is unavailable|aborted before dispatch"  # Codex (0.16x to 0.171.0)
    # Codex 0.80, 0.157+: unified_exec.rs, a policy's rejection inside its CreateProcess error
    r'|exec_command failed: CreateProcess \{ message: "Rejected\(\\?"approval required by policy'
    r"|\[Operation Cancelled\]|Command was cancelled by user before it could start|Tool execution denied by policy"
    r"|Command injection detected"  # Gemini CLI
    # Gemini CLI: packages/core/src/config/config.ts validatePathAccess (v0.28+); tools/shell.ts
    # SANDBOX_EXPANSION_REQUIRED (v0.35+: the confirmation's JSON as the error)
    r'|Path not in workspace: |\{"type":"sandbox_expansion"'
    r"|Blocked: standalone sleep"  # Qwen Code (captured with 0.24.4)
    r"|(?:OBSERVATION:\s*)?Action has been rejected by the user|\[Your command \".*\" is NOT executed"  # OpenHands
    r"|ERROR: (?:Cannot execute multiple commands|No previous running command)"  # OpenHands
    # OpenHands SDK 1.0+: openhands-tools/openhands/tools/terminal/terminal/terminal_session.py under
    # tool/schema.py ERROR_MESSAGE_HEADER; openhands-sdk/openhands/sdk/agent/parallel_executor.py
    # _cancelled_error (v1.23+); event/llm_convertible/observation.py UserRejectObservation
    r"|\[An error occurred during execution\.\]\s*(?:\[Below is the output of the previous command\.\].*?\[Your "
    r"command \".*?\" is NOT executed|No previous running command|Cannot execute multiple commands)"
    r"|Tool call cancelled by interrupt\.|Action rejected: "
    r"|The user denied this operation|Skipping tool due to user rejecting|Tool was interrupted and not executed"
    # Cline
    r"|Missing value for required parameter|User denied the tool execution|Tool execution was cancelled because"
    r"|\{\s*\"status\"\s*:\s*\"denied\"|Working directory '.*' does not exist"  # Roo Code
    # Roo Code and Kilo Code (executeCommandTool.ts): the terminal could not run it
    r"|Command failed to execute in terminal due to a shell integration error\."
    # Roo Code >= 3.33.1: responses.ts rooIgnoreError as JSON
    r'|\{\s*"status"\s*:\s*"error"\s*,\s*"type"\s*:\s*"access_denied"'
    # Cline's refusals (inside its error envelope, rules/envelopes.py): ExecuteCommandToolHandler.ts,
    # responses.ts permissionDeniedError and clineIgnoreError (Roo Code's .rooignore the same, before 3.33.1)
    r"|Command execution blocked by CLINE_COMMAND_PERMISSIONS|Access to .* is blocked by the \.(?:cline|roo)ignore "
    r"file settings"
    # Crush
    r"|User denied permission|Error: user cancelled assistant tool calling|Tool call failed: arguments were not"
    r"|The user rejected permission to use this specific tool call|The user has specified a rule which prevents"
    r"|Tool call blocked by hook\."  # Crush internal/agent/hooked_tool.go (dc003bf72, 2026-04-26)
    r"|\[Tool execution was interrupted\]"  # opencode
    # goose developer shell.rs (an empty command), developer/mod.rs call_tool (its arguments unread)
    r"|Command cannot be empty\.|Error: Failed to parse arguments: "
    # Continue CLI: streamChatResponse.helpers.ts handlePermissionDenied; runTerminalCommand.ts (its policy)
    r"|Permission denied by user|Command blocked by security policy"
    # SWE-agent: sweagent/tools/tools.py blocklist_error_template
    r"|Operation '.*?' is not supported by this environment\."
    r"|Tool call was rejected by the user\."  # Void chatThreadService.ts toolErrMsgs.rejected
    r"|`cd` directory \".*?\" was not in any of the project's worktrees\."  # Zed terminal_tool.rs working_dir
    r"|Your bash command contained syntax errors and was NOT executed"  # SWE-agent
    r"|Command cancelled: user denied (?:permission to run|the requested sandbox)"  # Zed
    r"|Tool execution was not approved|The user cancelled this tool call"  # OpenAI Agents SDK, Continue
    # Kimi CLI (1.51.0): soul/approval.py rejection_error; kosong tooling/error.py ToolParseError, ToolValidateError
    r"|<system>ERROR: (?:The tool call is rejected by the user\.|Error (?:parsing|validating) JSON arguments: )"
    # pi: core/tools/bash.ts (v0.37.2+), utils/shell.ts getShellConfig: no directory, no shell to spawn in
    r"|Working directory does not exist: .*?\nCannot execute bash commands\.|Custom shell path not found: "
    r"|No bash shell found\. Options:"
    # pi: agent-loop.ts prepareToolCall (a hook's block without a reason; v0.58.0+), ai/utils/validation.ts
    r"|Tool execution was blocked\Z|Validation failed for tool \"[\w.-]+\":\n"
    # Anthropic's computer-use bash tool (Open Interpreter's copy too): the session's shell had
    # exited before this call (the number is that shell's, not this command's), so it never ran.
    r"|(?:<system>tool must be restarted</system>\s*|Error: tool must be restarted\.\s*)?bash has exited with "
    r"returncode -?\d+"
    r")"
)
