"""Which client sent a request: a client's words count only for that client (truth rule 3).

Every client frames its tool results in its own words, and the program's own output can
print any of those words. So a frame is read only for the client that writes it: the
exit-status rules (exitstatus.RULES) and the success wordings of non-shell tools
(kinds.EVIDENCE) each name the clients they belong to. A client that cannot be
identified gets every known exit-status frame read at its place, and no client's
success wording (exitstatus.py says how; truth rules 3 and 5).

A client is identified from what the request itself carries, never from a tool result
(a result's text is what a program can forge):

1. the ``User-Agent`` header, when it names the client (the shell passes it in);
2. the tools the request declares: a set of names (and, where names are shared, the
   parameters of one of them) that only that client declares together.

Clients that share their tool code share a *family* (Gemini CLI and its fork Qwen Code;
opencode and its fork Kilo CLI): a rule may name a family instead of each member.
core/CLIENTS.md, "Clients", is generated from :data:`CLIENTS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Client:
    id: str
    name: str
    family: str  # rules name a client by its id or by its family
    user_agent: re.Pattern[str] | None  # matched at the start of the User-Agent header
    # Tool-set signatures: the request declares every name of one of them. A name may carry
    # the parameters its schema must declare ("bash(command)" : a tool "bash" whose
    # parameters are exactly {"command"}).
    tools: tuple[frozenset[str], ...]
    source: str  # where the user agent and tool names were read


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
        "zed",
        "Zed",
        "zed",
        r"Zed/",
        [{"terminal", "find_path", "read_file", "edit_file"}],
        "zed-industries/zed crates/agent/src/tools",
    ),
)

BY_ID: Mapping[str, Client] = {c.id: c for c in CLIENTS}
FAMILIES: frozenset[str] = frozenset(c.family for c in CLIENTS)
# A name a rule may give for its clients: a client id or a family.
NAMES: frozenset[str] = frozenset(BY_ID) | FAMILIES


def counts_for(client: str | None, names: Iterable[str]) -> bool:
    """Whether a rule that names ``names`` (client ids or families) counts for ``client``."""
    if client is None:
        return False
    c = BY_ID.get(client)
    family = c.family if c else client
    return any(n in (client, family) for n in names)


def _declared(body: Mapping[str, Any]) -> dict[str, frozenset[str] | None]:
    """The tools a request declares: name → its parameter names (None when not an object schema)."""
    tools = body.get("tools")
    out: dict[str, frozenset[str] | None] = {}
    if not isinstance(tools, list):
        return out
    for t in tools:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t  # Chat wraps it in "function"
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        schema = fn.get("parameters", fn.get("input_schema"))
        props = schema.get("properties") if isinstance(schema, dict) else None
        out[name] = frozenset(props) if isinstance(props, dict) else None
    return out


_SIG = re.compile(r"(?P<name>[^()!]+)(?:\((?P<params>[^)]*)\))?(?P<only>!)?")


def _fits(signature: frozenset[str], declared: dict[str, frozenset[str] | None]) -> bool:
    for entry in signature:
        m = _SIG.fullmatch(entry)
        if m is None or m["name"] not in declared:
            return False
        if m["params"] is not None and declared[m["name"]] != frozenset(p for p in m["params"].split(",") if p):
            return False
        if m["only"] and len(declared) != 1:  # "!": the request declares no other tool
            return False
    return True


def identify(user_agent: str | None, body: Mapping[str, Any] | None) -> str | None:
    """The id of the client that sent ``body`` with ``user_agent``; None when it cannot be told.

    The user agent decides when it names a client; otherwise the declared tools, when
    exactly one client's signature fits them."""
    if user_agent:
        for c in CLIENTS:
            if c.user_agent is not None and c.user_agent.match(user_agent):
                return c.id
    if not isinstance(body, Mapping):
        return None
    declared = _declared(body)
    if not declared:
        return None
    fits = {c.id for c in CLIENTS if any(_fits(sig, declared) for sig in c.tools)}
    return fits.pop() if len(fits) == 1 else None
