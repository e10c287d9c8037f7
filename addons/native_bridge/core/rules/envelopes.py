"""Error envelopes: the words a client (or its agent framework) puts around an error a tool call
raised, a spawn error, a broken session. They state a failure and, themselves, no number: a failure
flag in words, the way a ``[tool error]`` prefix is one (truth rule 3). exitstatus.py takes the
error out of its envelope and reads it as a flagged result: a number a frame states in it is that
number, a refusal in it is a command that never ran, and nothing else is 1.

An envelope counts for the clients it names (a named client's own words, as for every frame) and
for a client we cannot name (every envelope we know). Each is matched against the whole result, so
a line of a program's output that looks like one is never one.
"""

from __future__ import annotations

import re

from .types import Envelope


def _e(
    name: str, client: str, source: str, pattern: str, clients: tuple[str, ...], *examples: str, key: str | None = None
) -> Envelope:
    return Envelope(name, client, source, re.compile(pattern, re.S), examples, clients, key)


ENVELOPES: tuple[Envelope, ...] = (
    _e(
        "cline-tool-error",
        "Cline; Roo Code before 3.33.1 (Kilo Code's too): a thrown error, a refusal",
        "cline/cline apps/vscode/src/core/task/ToolExecutor.ts handleError, src/core/prompts/responses.ts toolError; "
        "RooCodeInc/Roo-Code src/core/prompts/responses.ts formatResponse.toolError (<= v3.33.0)",
        r"The tool execution failed with the following error:\s*<error>\s*(?P<inner>.*?)\s*</error>.*",
        ("cline", "roo-code", "kilo"),
        "The tool execution failed with the following error:\n<error>\nError executing execute_command: spawn "
        "/bin/zsh ENOENT\n</error>",
    ),
    _e(
        "roo-json-error",
        "Roo Code >= 3.33.1 (Kilo Code's too): a thrown error as JSON",
        "RooCodeInc/Roo-Code src/core/prompts/responses.ts formatResponse.toolError, src/core/assistant-message/"
        "presentAssistantMessage.ts handleError (v3.33.1 to v3.52.1)",
        r'\{"status":"error",.*\}',
        ("roo-code", "kilo"),
        '{"status":"error","message":"The tool execution failed","error":"Error executing command: spawn /bin/zsh '
        'ENOENT"}',
        key="error",
    ),
    _e(
        "json-error",
        'Gemini API `{"error": …}` passed on as the result text (Gemini CLI\'s functionResponse, a spawn error)',
        "google-gemini/gemini-cli packages/core/src/utils/generateContentResponseUtilities.ts "
        'convertToFunctionResponse (`{"error": message}` for a failed call), as a gateway passes it on; issue 39',
        r'\{\s*"error"\s*:\s*"(?:[^"\\]|\\.)*"\s*\}',
        ("gemini-cli",),
        '{"error": "spawn /bin/bash ENOENT"}',
        key="error",
    ),
    _e(
        "continue-tool-error",
        "Continue: a thrown error (the GUI's envelope)",
        "continuedev/continue gui/src/redux/thunks/callToolById.ts",
        r"\w+ failed with the message: (?P<inner>.*?)(?:\n\nPlease try something else or request further "
        r"instructions\.)?",
        ("continue",),
        "run_terminal_command failed with the message: spawn /bin/zsh ENOENT\n\nPlease try something else or request "
        "further instructions.",
    ),
    _e(
        "goose-tool-error",
        "goose: an extension's error, over Chat Completions (its is_error is dropped)",
        "block/goose crates/goose/src/providers/formats/openai.rs format_messages",
        r"The tool call returned the following error:\n(?P<inner>.*)",
        ("goose",),
        "The tool call returned the following error:\n-32603: Shell output from command 'cat big.log' has too many "
        "characters (500000). Maximum character count is 400000.",
    ),
    _e(
        "openhands-tool-error",
        "OpenHands: a thrown error (AgentErrorEvent; the tool's name quoted)",
        "OpenHands/software-agent-sdk openhands-sdk/openhands/sdk/agent/parallel_executor.py _run_safe (SDK 1.7 to "
        "1.58.2)",
        r"Error executing tool '[\w.-]+': (?P<inner>.*)",
        ("openhands",),
        "Error executing tool 'terminal': Unified session is not initialized",
    ),
    _e(
        "continue-cli-tool-error",
        "Continue CLI: a thrown error (the tool's name bare; its exit-status frames inside)",
        "continuedev/continue extensions/cli/src/stream/streamChatResponse.helpers.ts; "
        "extensions/cli/src/tools/runTerminalCommand.ts",
        r"Error executing tool [\w.-]+: (?P<inner>.*)",
        ("continue-cli",),
        "Error executing tool Bash: Error: spawn /bin/bash ENOENT",
    ),
    _e(
        "agents-sdk-tool-error",
        "OpenAI Agents SDK: a function tool's exception (default_tool_error_function)",
        "openai/openai-agents-python src/agents/tool.py default_tool_error_function (v0.0.x to v0.24.0)",
        r"An error occurred while running the tool\. Please try again\. Error: (?P<inner>.*)",
        ("agents-sdk",),
        "An error occurred while running the tool. Please try again. Error: sandbox exec transport failed",
    ),
    _e(
        "codex-exec-failed",
        "Codex CLI exec_command: the process could not be made (a policy's rejection is in not_run.py)",
        "openai/codex codex-rs/core/src/tools/handlers/unified_exec.rs FunctionCallError::RespondToModel (0.80.0, "
        "0.157 to 0.171.0)",
        r"exec_command failed: (?P<inner>CreateProcess \{.*\})",
        ("codex",),
        'exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create unified exec process: No such '
        'file or directory (os error 2)\\")" }',
    ),
    _e(
        "kimi-tool-error",
        "Kimi CLI: a tool's exception (its <system> message, the error and a sentence after it)",
        "MoonshotAI/kimi-cli src/kimi_cli/soul/message.py tool_result_to_message (ToolRuntimeError); kosong "
        "tooling/error.py ToolRuntimeError (1.51.0)",
        r"<system>ERROR: Error running tool: (?P<inner>.*?)\nThis is an unexpected error and the tool is probably not "
        r"working\.</system>.*",
        ("kimi-cli",),
        "<system>ERROR: Error running tool: [Errno 24] Too many open files\nThis is an unexpected error and the tool "
        "is probably not working.</system>",
    ),
    _e(
        "copilot-tool-error",
        "GitHub Copilot Chat: a thrown error (a client we do not name)",
        "microsoft/vscode-copilot-chat src/extension/prompts/node/panel/toolCalling.tsx toolCallErrorToResult",
        r"ERROR while calling tool: (?P<inner>.*?)(?:\nPlease check your input and try again\.)?",
        (),
        "ERROR while calling tool: The terminal was closed\nPlease check your input and try again.",
    ),
    _e(
        "langgraph-tool-error",
        "LangGraph ToolNode: a thrown error (a client we do not name)",
        "langchain-ai/langgraph libs/prebuilt/langgraph/prebuilt/tool_node.py TOOL_CALL_ERROR_TEMPLATE",
        r"Error: (?P<inner>\w+\(.*\))\n Please fix your mistakes\.",
        (),
        "Error: ToolException('boom')\n Please fix your mistakes.",
    ),
)
