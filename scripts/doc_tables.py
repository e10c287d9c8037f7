"""Print the README's generated tables (exit status formats, tool names) from the code.

    .venv/bin/python scripts/doc_tables.py            # print them
    .venv/bin/python scripts/doc_tables.py --write    # refresh README.md between the markers

tests/test_readme.py fails when README.md and the code disagree.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "addons"))

from native_bridge.core.exitstatus import NOT_RUN, RULES  # noqa: E402
from native_bridge.core.kinds import DEFAULT_TOOL_KINDS, KINDS  # noqa: E402

_WHERE = {
    "header": "header above `Output:`",
    "trailer": "closing frame lines",
    "first": "first line",
    "last": "last line",
}
_VERDICT = {
    "code": "the number",
    "success": "0",
    "failed": "1 (failure, no number)",
    "running": "no step (still running)",
    "not_run": "no step (never ran)",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def formats_table() -> str:
    rows = [
        "| rule | client | where | line (regular expression) | exit_code | source |",
        "|---|---|---|---|---|---|",
        '| json-exit-code | Codex CLI `shell`/`local_shell`; any `{"exit_code": N}` | JSON result | '
        "`metadata.exit_code` or `exit_code` | the number | openai/codex codex-rs/core/src/tools/mod.rs "
        "format_exec_output_for_model_structured |",
        '| cline-v4-json | Cline v4 `run_commands` | JSON result | `[{"success": …, "error": "Command exited with '
        'code N"}]` | the number, 0 on success | cline/cline sdk/packages/core/src/extensions/tools/definitions.ts |',
        "| (structured) | OpenAI Responses `shell_call_output` (Agents SDK) | `output[0].outcome` | "
        '`{"type": "exit", "exit_code": N}` / `{"type": "timeout"}` | the number / 1 | openai/openai-python '
        "src/openai/types/responses/response_function_shell_tool_call_output.py |",
    ]
    for r in RULES:
        rows.append(
            f"| {r.name} | {_cell(r.client)} | {_WHERE[r.where]} | `{_cell(r.pattern.pattern)}` | "
            f"{_VERDICT[r.verdict]} | {_cell(r.source)} |"
        )
    rows += [
        "| gemini-frame | Gemini CLI `run_shell_command` | frame ending `Process Group PGID:` | "
        "no `Exit Code:`/`Signal:`/`Error:` line | 0 | google-gemini/gemini-cli packages/core/src/tools/shell.ts |",
        "| error flag | Anthropic `is_error: true`; a `[tool error]` prefix | the result | no number found | "
        "1 (failure, no number) | design brief |",
    ]
    return "\n".join(rows)


def not_run_list() -> str:
    alternatives = NOT_RUN.pattern.split("(?:", 1)[1].rsplit(")", 1)[0]
    parts = [p for p in re.split(r"\|(?![^()]*\))", alternatives) if p]
    return ", ".join(f"`{_cell(p)}`" for p in parts)


def _clients() -> dict[str, str]:
    """The client named in the comment beside each entry of DEFAULT_TOOL_KINDS."""
    source = (ROOT / "addons" / "native_bridge" / "core" / "kinds.py").read_text()
    return dict(re.findall(r'^\s+"([^"]+)": "[a-z_0-9]+",\s+# (.+)$', source, re.M))


def tools_table() -> str:
    clients = _clients()
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name, kind in DEFAULT_TOOL_KINDS.items():
        by_kind[kind].append(f"`{name}` ({clients.get(name, '?')})")
    rows = ["| step kind | tool names (clients) |", "|---|---|"]
    rows += [f"| {kind} | {'; '.join(by_kind[kind])} |" for kind in KINDS]
    return "\n".join(rows)


TABLES = {"formats": formats_table, "not-run": not_run_list, "tools": tools_table}


def refresh(text: str) -> str:
    for name, make in TABLES.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no generated:{name} markers")
        text = pattern.sub(lambda m, make=make: m.group(1) + make() + "\n" + m.group(2), text)
    return text


if __name__ == "__main__":
    readme = ROOT / "README.md"
    if "--write" in sys.argv:
        readme.write_text(refresh(readme.read_text()))
        print(f"refreshed {readme.name}")
    else:
        for name, make in TABLES.items():
            print(f"## {name}\n{make()}\n")
