"""Print the reference pages' generated tables (clients, tool names, exit status formats) from the code.

    .venv/bin/python scripts/doc_tables.py            # print them
    .venv/bin/python scripts/doc_tables.py --write    # refresh the pages (PAGES) between the markers

The tables live beside the rules they are made from (PAGES); tests/test_readme.py fails when a
page and the code disagree.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, get_args

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "addons"))

from native_bridge.core.kinds import KINDS  # noqa: E402
from native_bridge.core.rules.clients import CLIENTS  # noqa: E402
from native_bridge.core.rules.envelopes import ENVELOPES  # noqa: E402
from native_bridge.core.rules.exit_frames import RULES  # noqa: E402
from native_bridge.core.rules.not_run import NOT_RUN  # noqa: E402
from native_bridge.core.rules.paths import NONE, PATHS  # noqa: E402
from native_bridge.core.rules.shell_shapes import (  # noqa: E402
    CODE_PARAMS,
    COMMAND_PARAMS,
    SHELL_LANGUAGES,
    SHELL_WORDS,
    SOURCES,
)
from native_bridge.core.rules.structures import STRUCTURED  # noqa: E402
from native_bridge.core.rules.success_evidence import EVIDENCE  # noqa: E402
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS  # noqa: E402
from native_bridge.core.rules.types import ANY, PathKind, States  # noqa: E402

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


def _names(clients: tuple[str, ...]) -> str:
    return "a client we cannot name" if ANY in clients else ", ".join(f"`{c}`" for c in clients)


def formats_table() -> str:
    rows = [
        "| rule | counts for | client's words | where | line (regular expression) | exit_code | source |",
        "|---|---|---|---|---|---|---|",
        "| (structured) | any client | OpenAI Responses `shell_call_output` (Agents SDK) | `output[0].outcome` | "
        '`{"type": "exit", "exit_code": N}` / `{"type": "timeout"}` | the number / 1 | openai/openai-python '
        "src/openai/types/responses/response_function_shell_tool_call_output.py |",
        "| error flag | any client | Anthropic `is_error: true` (a dialect's error flag), a `[tool error]` prefix | "
        "the result | no number from a known frame | 1 (failure, no number); a frame that says 0 or success, or a "
        "number beyond int32: no step (the pair stays a message with its flag); a named client whose own frames say "
        "nothing: the number every known client's frame states alike (an identity is a claim), else no step | "
        "design brief, truth rule 3; issue 39 item 4 |",
    ]
    for name, clients, shape, source in STRUCTURED:
        rows.append(f"| {name} | {_names(clients)} | the whole result | JSON / tags | {_cell(shape)} | the number | "
                    f"{_cell(source)} |")  # fmt: skip
    rows.append(
        "| gemini-frame | `gemini-cli` (Gemini CLI, Qwen Code) | `run_shell_command` | `[Command:][Directory:]Output:` "
        "at the start; `Error:`, `Exit Code:`, `Signal:`, `Background PIDs:`, `Process Group PGID:` closing lines in "
        "that order | `Exit Code: N`: the number; `Signal:` (not `0`/`(none)`) or `Error:` (not `(none)`): 1; "
        "Gemini CLI's frame without them: 0 | google-gemini/gemini-cli packages/core/src/tools/shell.ts; "
        "QwenLM/qwen-code packages/core/src/tools/shell.ts |"
    )
    for r in RULES:
        words = _cell(r.client) + (" (with the error flag only)" if r.flag else "")
        rows.append(
            f"| {r.name} | {_names(r.clients)} | {words} | {'; '.join(_WHERE[w] for w in r.where)} | "
            f"`{_cell(r.pattern.pattern)}` | "
            f"{_VERDICT[r.verdict]} | {_cell(r.source)} |"
        )
    return "\n".join(rows)


def _states(states: States) -> str:
    return {
        "absent": "absent (nothing stated)",
        "failed": "1 (a failure, no number; flagged: the pair stays a message)",
        "running": "no step (still running)",
        "not_run": "no step (never ran)",
    }.get(states, f"exit {states}")  # type: ignore[call-overload]


def paths_table() -> str:
    """One table a client: each way its shell tool ends, in the order of PathKind, its rows' versions
    and sources, what the text states and, where the bridge reads it otherwise, what and why."""
    out = []
    for c in CLIENTS:
        rows = [
            "| path | tool | versions | states (rule 3) | the bridge | source | example |",
            "|---|---|---|---|---|---|---|",
        ]
        for kind in get_args(PathKind):
            for r in (r for r in PATHS if r.client == c.id and r.path == kind):
                bridge = "the same" if r.reads is None else f"{_states(r.reads)}: {r.note}"
                if r.unnamed is not None:
                    bridge += f"; a client we cannot name: {_states(r.unnamed)} ({r.note})"
                elif r.reads is None and r.note:
                    bridge += f" ({r.note})"
                rows.append(
                    f"| {kind} | `{r.tool}` | {_cell(r.versions)} | {_states(r.states)} | {_cell(bridge)} | "
                    f"{_cell(r.source)} | `{r.id}` |"
                )
            why = NONE.get(c.id, {}).get(kind)
            if why:
                rows.append(f"| {kind} | - | - | none: {_cell(why)} | - | - | - |")
        out += [f"### {c.name} (`{c.id}`)", "", *rows, ""]
    return "\n".join(out).rstrip()


def envelopes_table() -> str:
    rows = [
        "| envelope | counts for | client's words | the whole result (regular expression) | the error | source |",
        "|---|---|---|---|---|---|",
    ]
    for e in ENVELOPES:
        counts = ", ".join(f"`{c}`" for c in e.clients) + " and " if e.clients else ""
        inner = f'its `"{e.inner_key}"`' if e.inner_key else "`inner`"
        rows.append(
            f"| {e.name} | {counts}a client we cannot name | {_cell(e.client)} | `{_cell(e.pattern.pattern)}` | "
            f"{inner} | {_cell(e.source)} |"
        )
    return "\n".join(rows)


def clients_table() -> str:
    rows = [
        "| client | id (family) | identified by user agent | or by declared tools | source |",
        "|---|---|---|---|---|",
    ]
    for c in CLIENTS:
        ua = f"`{_cell(c.user_agent.pattern)}`" if c.user_agent else "-"
        tools = "; or ".join(", ".join(f"`{t}`" for t in sorted(sig)) for sig in c.tools) or "-"
        family = c.id if c.family == c.id else f"{c.id} ({c.family})"
        rows.append(f"| {c.name} | `{family}` | {ua} | {tools} | {_cell(c.source)} |")
    return "\n".join(rows)


def _words(e) -> str:
    if e.unflagged:
        return 'no words: the dialect says it is no error (Gemini API `{"output": …}`, not `{"error": …}`)'
    return f"`{_cell(e.pattern.pattern)}`"


def evidence_table() -> str:
    rows = [
        "| step kind | counts for | tool | the result starts with (regular expression) | file_created | source |",
        "|---|---|---|---|---|---|",
    ]
    for e in EVIDENCE:
        created = {True: "true", False: "false", None: "absent"}[e.file_created] if e.kind == "write_to_file" else ""
        rows.append(f"| {e.kind} | {_names(e.clients)} | `{e.tool}` | {_words(e)} | {created} | {_cell(e.source)} |")
    return "\n".join(rows)


def not_run_list() -> str:
    alternatives = NOT_RUN.pattern.split("(?:", 1)[1].rsplit(")", 1)[0]
    parts = [p for p in re.split(r"\|(?![^()]*\))", alternatives) if p]
    return "\n".join(f"- `{p}`" for p in parts)  # a list, not a table: no cell escapes


def _clients() -> dict[str, str]:
    """The client named in the comment beside each entry of DEFAULT_TOOL_KINDS."""
    source = (ROOT / "addons" / "native_bridge" / "core" / "rules" / "tool_names.py").read_text()
    return dict(re.findall(r'^\s+"([^"]+)": "[a-z_0-9]+",\s+# (.+)$', source, re.M))


def tools_table() -> str:
    clients = _clients()
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name, kind in DEFAULT_TOOL_KINDS.items():
        by_kind[kind].append(f"`{name}` ({clients.get(name, '?')})")
    rows = ["| step kind | tool names (clients) |", "|---|---|"]
    rows += [f"| {kind} | {'; '.join(by_kind[kind])} |" for kind in KINDS]
    return "\n".join(rows)


# Why each client's results let the bridge state what they do (read off its captured results).
_WHY = {
    "claude-code": "`Exit code N` on the first line, only with `is_error` (Anthropic); a success is the bare "
    "output, so 0 is never stated; reads and edits in its own words",
    "codex": "`Process exited with code N` above `Output:` in every exec_command result (HTTP and WebSocket); "
    "no read or edit tool (`cat` through exec_command, `apply_patch` has no lossless step)",
    "gemini-cli": "its shell frame (`Exit Code: N` only when non-zero, `Signal: N`), `{error}` for a failed tool "
    "(the dialect's flag); its `{output}` is a successful read",
    "qwen-code": "the Gemini CLI frame with `Exit Code: N` on every run; `read_file` returns the bare content: no "
    "words say it succeeded, so it stays a message",
    "opencode": "never states a status: the exit code stays client-side, so it is absent; only a timeout note "
    "says a command failed",
    "kilo": "as opencode (a fork): never states a status",
    "continue-cli": "`Error (exit code N): <stderr>` only for a failure with stderr, else the bare output: "
    "nothing stated; identified by its tool set (its user agent is the OpenAI SDK's); no wording of its reads and "
    "edits is known evidence of success",
    "mini-swe-agent": "`returncode` in every result (JSON or `<returncode>` tags); `-1` with `exception_info` is "
    "a timeout",
    "openai-agents": "`shell_call_output`'s structured outcome; the sandbox's exec_command frame; `LocalShellTool` "
    "returns bare output: nothing stated",
    "openhands": "`[Command finished with exit code N]`; a timeout leaves the command running (no step); "
    "`file_editor` has no step kind (its kind depends on its command)",
}


def measured_table() -> str:
    """Per client and version: what the bridge stated for every real result in tests/fixtures/corpus/ (the
    same replay tests/test_corpus.py asserts)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_corpus as corpus

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for _, e, tools in corpus.ENTRIES:
        raw, path = corpus.body_for(e, tools)
        result = corpus._rewrite(raw, path, (e.get("request_headers_subset") or {}).get("user-agent"))
        step = result.steps[0] if result.steps else None
        r = rows.setdefault(
            (e["client"], e["version"]),
            {"n": 0, "dialects": set(), "stated": [0, 0], "silent": [0, 0], "failed": [0, 0], "ok": [0, 0]},
        )
        r["n"] += 1
        r["dialects"].add(e["dialect"])
        out, states = e["outcome"], e.get("client_states_status", True)
        if out["kind"] == "shell" and not out.get("running"):
            got = step["runCommand"].get("exitCode") if step and "runCommand" in step else None
            if states and out.get("exit_code") is not None:
                r["stated"][1] += 1
                r["stated"][0] += got == out["exit_code"]
            elif not states:
                r["silent"][1] += 1
                r["silent"][0] += got is None
        elif out["kind"] in ("read", "edit"):
            which = "ok" if out.get("ok") else "failed"
            r[which][1] += 1
            r[which][0] += (step is not None) if which == "ok" else (step is None)
    lines = [
        "| client (version tested) | dialects | results | code the client states → sent | no status stated → "
        "absent | failed read/edit → kept | successful read/edit → step | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (client, version), r in sorted(rows.items()):
        cells = [f"{a} of {b}" if b else "-" for a, b in (r["stated"], r["silent"], r["failed"], r["ok"])]
        why = _cell(_WHY.get(client, ""))
        lines.append(
            f"| {client} {version} | {', '.join(sorted(r['dialects']))} | {r['n']} | {' | '.join(cells)} | {why} |"
        )
    return "\n".join(lines)


def shapes_table() -> str:
    command = " or ".join(f"`{p}`" for p in COMMAND_PARAMS)
    languages = ", ".join(f"`{x}`" for x in sorted(SHELL_LANGUAGES))
    rows = [
        "| shape | the declared schema | a call becomes | tools it takes (client) | source |",
        "|---|---|---|---|---|",
        f"| command line | one required string {command}, its description matching `{_cell(SHELL_WORDS.pattern)}`"
        " (case ignored); no other required parameter but those that only steer the client | run_command, the "
        "parameter as its command line | "
        + "; ".join(f"`{tool}` ({client})" for client, tool, _ in SOURCES if "language" not in tool)
        + " | "
        + "; ".join(_cell(src) for _, tool, src in SOURCES if "language" not in tool)
        + " |",
        f"| language + code | required strings `{CODE_PARAMS[0]}` and `{CODE_PARAMS[1]}` (a declared language enum "
        f"holds a shell) | a call whose language is one of {languages}: run_command, its code as the command line; "
        "any other language: stays a message (`unmapped`) | "
        + "; ".join(f"`{tool}` ({client})" for client, tool, _ in SOURCES if "language" in tool)
        + " | "
        + "; ".join(_cell(src) for _, tool, src in SOURCES if "language" in tool)
        + " |",
    ]
    return "\n".join(rows)


TABLES = {
    "measured": measured_table,
    "formats": formats_table,
    "paths": paths_table,
    "not-run": not_run_list,
    "envelopes": envelopes_table,
    "tools": tools_table,
    "shapes": shapes_table,
    "clients": clients_table,
    "evidence": evidence_table,
}


# Which page holds which tables: each beside the rules it is generated from.
PAGES = {
    "addons/native_bridge/core/rules/CLIENTS.md": ("measured", "clients", "tools", "shapes", "evidence"),
    "addons/native_bridge/core/rules/EXIT_STATUS.md": ("formats", "paths", "envelopes", "not-run"),
}


def refresh(text: str, names: tuple[str, ...] = tuple(TABLES), page: str = "the page") -> str:
    for name in names:
        make = TABLES[name]
        pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"{page} has no generated:{name} markers")
        text = pattern.sub(lambda m, make=make: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def main() -> int:
    if "--write" in sys.argv:
        for page, names in PAGES.items():
            path = ROOT / page
            path.write_text(refresh(path.read_text(), names, page))
            print(f"refreshed {page}")
    else:
        for name, make in TABLES.items():
            print(f"## {name}\n{make()}\n")
    return 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
