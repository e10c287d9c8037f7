"""The clients the bridge can name: id, family, the user agent and the tool sets that identify
each, and where they were read (clients.identify reads them). Clients that share their tool code
share a family (Gemini CLI and Qwen Code; opencode and Kilo CLI): a rule may name a family
instead of each member. CLIENTS.md, "Clients", is generated from this table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .types import Client


def _c(id: str, name: str, family: str, ua: str | None, tools: Iterable[Iterable[str]], source: str) -> Client:
    return Client(id, name, family, re.compile(ua) if ua else None, tuple(frozenset(t) for t in tools), source)


CLIENTS: tuple[Client, ...] = (
    _c(
        "claude-code",
        "Claude Code",
        "claude-code",
        r"claude-cli/",
        [{"Bash", "Read", "Edit", "Write"}],
        "captured requests of @anthropic-ai/claude-code 2.1.332 (user agent `claude-cli/2.1.332 (external, sdk-cli)`)",
    ),
    _c(
        "codex",
        "Codex CLI",
        "codex",
        r"codex_[a-z_]+/",
        [
            {"exec_command", "write_stdin", "update_plan"},
            {"shell", "update_plan", "apply_patch"},
            {"shell_command", "update_plan"},
        ],
        "openai/codex codex-rs/login/src/auth/default_client.rs (originator codex_cli_rs, codex_exec, ...); "
        "codex-rs/core/src/tools/spec.rs",
    ),
    _c(
        "agents-sdk",
        "OpenAI Agents SDK",
        "agents-sdk",
        r"Agents/(?:Python|JS)",
        [],
        "openai/openai-agents-python src/agents/models/openai_responses.py (_USER_AGENT)",
    ),
    _c(
        "gemini-cli",
        "Gemini CLI",
        "gemini-cli",
        r"GeminiCLI",
        [{"run_shell_command", "read_file", "replace", "write_file", "google_web_search"}],
        "google-gemini/gemini-cli packages/core/src/core/contentGenerator.ts (user agent GeminiCLI/<version>); "
        "packages/core/src/tools/tool-names.ts",
    ),
    _c(
        "qwen-code",
        "Qwen Code",
        "gemini-cli",
        r"QwenCode/",
        [{"run_shell_command", "read_file", "edit", "write_file", "todo_write"}],
        "QwenLM/qwen-code packages/core/src/core/openaiContentGenerator (user agent QwenCode/<version>); "
        "packages/core/src/tools/tool-names.ts",
    ),
    _c(
        "opencode",
        "opencode",
        "opencode",
        r"opencode/",
        [{"bash", "read", "edit", "write", "glob", "grep", "todowrite"}],
        "sst/opencode packages/opencode/src/provider (user agent opencode/<version>); packages/opencode/src/tool/",
    ),
    _c(
        "kilo",
        "Kilo CLI",
        "opencode",
        r"(?:kilo|Kilo-Code)/",
        [],
        "Kilo-Org/kilocode (an opencode fork: same tools; user agent kilo/<version> or Kilo-Code/<version>)",
    ),
    _c(
        "openhands",
        "OpenHands",
        "openhands",
        None,
        [{"terminal", "file_editor"}, {"execute_bash", "str_replace_editor"}],
        "OpenHands/software-agent-sdk openhands-tools/openhands/tools/terminal (tool terminal); "
        "All-Hands-AI/OpenHands openhands/agenthub/codeact_agent/tools (execute_bash)",
    ),
    _c(
        "mini-swe-agent",
        "mini-swe-agent",
        "mini-swe-agent",
        None,
        [{"bash(command)!"}],
        "SWE-agent/mini-swe-agent src/minisweagent/models/utils/actions_toolcall.py BASH_TOOL (its only tool)",
    ),
    _c(
        "cline",
        "Cline",
        "cline",
        None,
        [{"execute_command", "replace_in_file", "attempt_completion"}],
        "cline/cline src/core/prompts/system-prompt/tools",
    ),
    _c(
        "roo-code",
        "Roo Code",
        "roo-code",
        None,
        [{"execute_command", "apply_diff", "attempt_completion"}],
        "RooCodeInc/Roo-Code src/core/prompts/tools",
    ),
    _c(
        "goose",
        "goose",
        "goose",
        r"goose/",
        [{"developer__shell"}],
        "block/goose crates/goose/src/agents/platform_extensions/developer",
    ),
    _c(
        "crush",
        "Crush",
        "crush",
        r"[Cc]rush/",
        [{"bash", "view", "edit", "ls", "job_output"}],
        "charmbracelet/crush internal/agent/tools",
    ),
    _c(
        "continue",
        "Continue",
        "continue",
        None,
        [{"run_terminal_command", "read_file", "create_new_file"}],
        "continuedev/continue core/tools/builtIn.ts",
    ),
    _c(
        "swe-agent",
        "SWE-agent",
        "swe-agent",
        None,
        [{"bash", "str_replace_editor", "submit"}],
        "SWE-agent/SWE-agent tools/registry, tools/edit_anthropic, tools/review_on_submit_m (function-calling tools)",
    ),
    _c(
        "void",
        "Void",
        "void",
        None,
        [{"run_command", "run_persistent_command", "open_persistent_terminal"}],
        "voideditor/void src/vs/workbench/contrib/void/common/toolsServiceTypes.ts (builtin tool names)",
    ),
    _c(
        "continue-cli",
        "Continue CLI",
        "continue-cli",
        None,
        [{"Bash", "List", "Checklist", "CheckBackgroundJob"}],
        "continuedev/continue extensions/cli/src/tools/ (captured tool names of @continuedev/cli 1.5.47; its user "
        "agent is the bundled OpenAI SDK's)",
    ),
    _c(
        "kimi-cli",
        "Kimi CLI",
        "kimi-cli",
        r"KimiCLI/",
        [{"Bash", "ReadFile", "StrReplaceFile"}, {"Shell", "ReadFile", "StrReplaceFile"}],
        "MoonshotAI/kimi-cli src/kimi_cli/constant.py get_user_agent (KimiCLI/<version>); src/kimi_cli/tools/ "
        "(Shell since 0.57, 2025-11-20, Bash before)",
    ),
    _c(
        "gptme",
        "gptme",
        "gptme",
        None,
        [{"shell(command)", "save", "append", "patch"}],
        "gptme/gptme gptme/tools/ (shell, save, append, patch: enabled by default; its requests carry the OpenAI "
        "or Anthropic SDK's user agent)",
    ),
    _c(
        "pi",
        "pi",
        "pi",
        None,
        [{"bash(command,timeout)", "read(path,offset,limit)", "write(path,content)"}],
        "badlogic/pi-mono packages/coding-agent/src/core/tools/ (src/tools/ before v0.14; these parameters since "
        "v0.7.8, 2025-11-13; captured from @mariozechner/pi-coding-agent 0.73.1, whose requests carry the OpenAI "
        "SDK's user agent over Chat Completions)",
    ),
    _c(
        "zed",
        "Zed",
        "zed",
        r"Zed/",
        [{"terminal", "find_path", "read_file", "edit_file"}],
        "zed-industries/zed crates/agent/src/tools",
    ),
)
