"""Small valid agent histories with every hard case in them: the fuzzer's seeds (scripts/fuzz damages
them), the soak's traffic and the fuzz tests' property inputs.

A seed is a dialect-neutral script of rounds (user text, assistant text, tool calls and their
results, each call with a fate: answered now, later, twice, never, by an orphan, before the call,
without an id) from one client (Claude Code or Codex CLI, with its tools and its words; or a client
nobody can identify, with any tools), rendered in one dialect. Calls carry ``KK<n>`` tokens and
results ``RR<n>`` tokens, so an oracle can tell whose content a step holds. The same random state
gives the same document: the fuzzer's case numbers depend on it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import anthropic, chat, responses

# The clients a seed comes from, and the User-Agent each sends (None: a client nobody can identify).
CLIENT_UA: dict[str | None, str | None] = {
    "claude-code": "claude-cli/2.1.332 (external, cli)",
    "codex": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)",
    None: None,
}
_CLAUDE, _CODEX, _ANY = ("claude-code", None), ("codex", None), ("claude-code", "codex", None)

# Result texts: the clients' own frames and words, and words any program can print.
_BASH_OUT = [
    "{r} ok",
    "Exit code: 1\n{r} failed",
    "Exit code 2\n{r} failed",  # Claude Code (with is_error)
    "Exit code: 2\nWall time: 0.1 seconds\nOutput:\n{r}",  # Codex shell_command
    "[tool error] {r}",
    '{{"output": "{r}", "metadata": {{"exit_code": 3}}}}',  # Codex shell
    "Process exited with code 127\nOutput:\n{r}: command not found",  # Codex exec_command
    "Process running with session ID 5\nOutput:\n{r}",
    "{r}\nexit code 7",
    "{r}\n\nExit code: 0",
    "Command: ls\nDirectory: (root)\nOutput: {r}\nError: (none)\nExit Code: 4\nSignal: (none)\nProcess Group PGID: 9",
    "The user doesn't want to proceed with this tool use. {r}",
    "Error: Exit code 2\n{r}",
]
_READ_OUT = [
    "     1\t{r} text",  # Claude Code's Read
    "<tool_use_error>File does not exist. {r}</tool_use_error>",
    "[tool error] {r}",
    "",
]
_PLAIN_OUT = ["{r} result", "{r}", "[tool error] {r}", ""]
# Claude Code's own words of success, as often as the rest together.
_GLOB_OUT = ["/w/{r}.txt\n/w/b.txt", "/w/{r}.txt", "No files found", "{r}", "[tool error] {r}", ""]
_GREP_OUT = ["Found 1 file\n/w/{r}.py", "Found 2 files\n/w/{r}.py\n/w/b.py", "{r}", "[tool error] {r}"]
_EDIT_OUT = ["The file /w/{r} has been updated successfully.", "The file /w/{r} has been updated.", *_PLAIN_OUT[1:]]
_SEARCH_OUT = ['Web search results for query: "{r}"\n\nLinks: []', "{r}", "[tool error] {r}"]
_LS_OUT = ["{r}.txt\nb.txt", "- /w/\n  - {r}.txt"]
# (tool name, arguments from the call token, result texts from the result token, the clients that have it)
TOOLS: list[tuple[str, Callable[[str], Any], list[str], tuple[str | None, ...]]] = [
    ("Bash", lambda k: {"command": f"echo {k}", "description": "echo"}, _BASH_OUT, _CLAUDE),
    ("Bash", lambda k: {"command": f"serve {k}", "run_in_background": True}, _BASH_OUT, _CLAUDE),
    ("shell", lambda k: {"command": ["bash", "-lc", f"test {k}"], "workdir": "/w"}, _BASH_OUT, _CODEX),
    ("exec_command", lambda k: {"cmd": f"make {k}", "yield_time_ms": 100}, _BASH_OUT, _CODEX),
    ("shell_command", lambda k: {"command": f"ls {k}", "workdir": "/w"}, _BASH_OUT, _CODEX),
    ("Read", lambda k: {"file_path": f"/w/{k}.txt", "offset": 3, "limit": 10}, _READ_OUT, _CLAUDE),
    ("Read", lambda k: {"file_path": f"/w/{k}.txt"}, _READ_OUT, _CLAUDE),
    ("Read", lambda k: {"file_path": f"w/{k}.txt"}, _READ_OUT, _CLAUDE),
    ("Glob", lambda k: {"pattern": f"*{k}*", "path": "/w"}, _GLOB_OUT, _CLAUDE),
    ("Grep", lambda k: {"pattern": k, "path": "/w", "-i": True, "output_mode": "content"}, _PLAIN_OUT, _CLAUDE),
    ("Grep", lambda k: {"pattern": k, "path": "/w", "output_mode": "files_with_matches"}, _GREP_OUT, _CLAUDE),
    (
        "Write",
        lambda k: {"file_path": f"/w/{k}.py", "content": f"print('{k}')"},
        ["File created successfully at: /w/{r}.py", "File created at {r}", "ok {r}"],
        _CLAUDE,
    ),
    ("LS", lambda k: {"path": f"/w/{k}"}, _LS_OUT, _CLAUDE),
    ("Edit", lambda k: {"file_path": f"/w/{k}", "old_string": "a", "new_string": "b"}, _EDIT_OUT, _CLAUDE),
    (
        "MultiEdit",
        lambda k: {"file_path": f"/w/{k}", "edits": [{"old_string": "a", "new_string": "b"}]},
        _EDIT_OUT,
        _CLAUDE,
    ),
    ("WebSearch", lambda k: {"query": f"what is {k}"}, _SEARCH_OUT, _CLAUDE),
    ("WebFetch", lambda k: {"url": f"https://example.com/{k}", "prompt": "sum"}, _PLAIN_OUT, _CLAUDE),
    ("TodoWrite", lambda k: {"todos": [{"content": k, "status": "pending"}]}, _PLAIN_OUT, _CLAUDE),
    ("apply_patch", lambda k: {"input": f"*** Begin Patch {k}"}, _PLAIN_OUT, _CODEX),
    ("mcp__acme__thing", lambda k: {"x": k}, _PLAIN_OUT, _ANY),
]
FATES = ["now"] * 8 + ["missing", "later", "twice", "orphan", "early", "noid"]


@dataclass
class Seed:
    dialect: str
    doc: dict[str, Any]
    client: str | None  # who sent it (CLIENT_UA)

    @property
    def user_agent(self) -> str | None:
        return CLIENT_UA[self.client]


class Tokens:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n:03d}"


def _pick_tool(rng: random.Random, tok: Tokens, client: str | None) -> tuple[str, dict[str, Any], str, str]:
    name, args, outs, _ = rng.choice([t for t in TOOLS if client in t[3]])
    k = tok("KK")
    r = tok("RR")
    return name, args(k), rng.choice(outs).format(r=r), r


def _rounds(rng: random.Random, tok: Tokens, client: str | None = None) -> Iterator[tuple[str, Any]]:
    """A dialect-neutral script: ("user", text) / ("text", text) / ("calls", [call]) / ("results", [result]).

    A call is (id, name, args); a result is (id, text, is_error, exit_code)."""
    yield "user", "fix the build"
    pending: list[tuple[str | None, str, bool | None, int | None]] = []
    early: list[str] = []
    for _ in range(rng.randint(0, 6)):
        event = rng.choice(["round"] * 6 + ["user", "text", "flush"])
        if event == "user":
            yield "user", f"go on {tok('UU')}"
            continue
        if event == "text":
            yield "text", f"thinking {tok('TT')}"
            continue
        if event == "flush" and pending:
            yield "results", pending
            pending = []
            continue
        calls, now = [], []
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
            name, args, text, _r = _pick_tool(rng, tok, client)
            fate = rng.choice(FATES)
            cid: str | None = f"call_{tok('id')}"
            if fate == "early" and early:
                cid = early.pop()
            elif fate == "noid":
                cid = None
            is_error = rng.choice([None, None, True, False])
            code = rng.choice([None, None, None, 0, 1, 2, 130])
            res = (cid, text, is_error, code)
            calls.append((cid, name, args))
            if fate in ("now", "twice", "noid"):
                now.append(res)
            if fate == "twice":
                now.append((cid, text + " again", is_error, code))
            elif fate == "later":
                pending.append(res)
            elif fate == "orphan":
                now.append((f"orphan_{tok('id')}", text, is_error, code))
            elif fate == "early":
                eid = f"early_{tok('id')}"
                early.append(eid)
                yield "results", [(eid, text, is_error, code)]
        yield "calls", calls
        rng.shuffle(now)
        if now:
            yield "results", now
    if pending and rng.random() < 0.5:
        yield "results", pending
    tail = rng.choice(["none", "none", "user", "text"])
    if tail == "user":
        yield "user", "what now?"
    elif tail == "text":
        yield "text", "done"


def _content(rng: random.Random, text: str, part: str) -> Any:
    shape = rng.choice(["str", "str", "str", "parts", "image"])
    if shape == "str":
        return text
    parts: list[Any] = [{"type": part, "text": text}]
    if shape == "image":
        parts.append({"type": "image_url" if part == "text" else "image", "image_url": {"url": "data:,"}})
    return parts


def seed_chat(rng: random.Random, tok: Tokens, client: str | None = None) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        messages.append(chat.system())
    for what, x in _rounds(rng, tok, client):
        if what == "user":
            messages.append(chat.user(x))
        elif what == "text":
            messages.append(chat.assistant(content=x))
        elif what == "calls":
            tcs = [chat.call(cid, name, json.dumps(args)) for cid, name, args in x]
            messages.append(chat.assistant(*tcs, content=rng.choice([None, "", "Running."])))
        else:
            messages += [chat.tool(cid, _content(rng, text, "text")) for cid, text, _e, _c in x]
    return {"model": "gpt-test", "stream": rng.random() < 0.5, "messages": messages}


def seed_anthropic(rng: random.Random, tok: Tokens, client: str | None = None) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[Any]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for what, x in _rounds(rng, tok, client):
        if what == "user":
            add("user", [anthropic.text(x)])
        elif what == "text":
            add("assistant", [anthropic.text(x)])
        elif what == "calls":
            blocks: list[Any] = [anthropic.text("Running.")] if rng.random() < 0.3 else []
            for cid, name, args in x:
                b: dict[str, Any] = {"type": "tool_use", "name": name, "input": args}
                if cid is not None:
                    b["id"] = cid
                blocks.append(b)
            add("assistant", blocks)
        else:
            blocks = []
            for cid, text, is_error, _c in x:
                b = {"type": "tool_result", "content": _content(rng, text, "text")}
                if cid is not None:
                    b["tool_use_id"] = cid
                if is_error is not None:
                    b["is_error"] = is_error
                blocks.append(b)
            if rng.random() < 0.2:
                blocks.append(anthropic.text("<system-reminder>keep going</system-reminder>"))
            add("user", blocks)
    # String content for plain turns, as clients often send it.
    for m in messages:
        if len(m["content"]) == 1 and m["content"][0].get("type") == "text" and rng.random() < 0.5:
            m["content"] = m["content"][0]["text"]
    doc: dict[str, Any] = {"model": "claude-test", "max_tokens": 1024, "messages": messages}
    if rng.random() < 0.5:
        doc["system"] = "You are Claude Code."
    return doc


def seed_responses(rng: random.Random, tok: Tokens, client: str | None = None) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for what, x in _rounds(rng, tok, client):
        if what == "user":
            items.append(responses.message("user", x))
        elif what == "text":
            if rng.random() < 0.5:
                items.append({"type": "reasoning", "summary": [], "encrypted_content": tok("EE")})
            items.append(responses.message("assistant", x))
        elif what == "calls":
            for cid, name, args in x:
                form = rng.choice(["function", "function", "custom", "local_shell", "shell"])
                it: dict[str, Any]
                if form == "custom" or name == "apply_patch":
                    it = responses.custom_tool_call(name, json.dumps(args))
                elif form == "local_shell":
                    cmd = ["bash", "-lc", json.dumps(args)]
                    it = {"type": "local_shell_call", "action": {"type": "exec", "command": cmd}, "status": "completed"}
                elif form == "shell":
                    it = {"type": "shell_call", "action": {"commands": [json.dumps(args)]}, "status": "completed"}
                else:
                    it = responses.function_call(name, json.dumps(args))
                if cid is not None:
                    it["call_id"] = cid
                items.append(it)
        else:
            for cid, text, _e, code in x:
                # The output type follows the call's, when the call is in the history.
                call = next((i for i in items if i.get("call_id") == cid and i["type"].endswith("_call")), None)
                ctype = call["type"] if call else rng.choice(["function_call", "shell_call", "custom_tool_call"])
                out: dict[str, Any] = {"type": ctype + "_output"}
                if ctype == "shell_call":
                    outcome = {"type": "exit", "exit_code": code if code is not None else 0}
                    if rng.random() < 0.1:
                        outcome = {"type": "timeout"}
                    out["output"] = [{"stdout": text, "stderr": "", "outcome": outcome}]
                elif rng.random() < 0.2:
                    out["output"] = [{"type": "input_text", "text": text}]
                else:
                    out["output"] = text
                if cid is not None:
                    out["call_id"] = cid
                items.append(out)
    doc: dict[str, Any] = {"model": "gpt-5-codex", "input": items, "store": False}
    if rng.random() < 0.15:
        doc["previous_response_id"] = "resp_" + tok("PP")
    return doc


SEEDS = {"chat": seed_chat, "anthropic": seed_anthropic, "responses": seed_responses}


def make_seed(dialect: str, rng: random.Random) -> Seed:
    """A valid history of ``dialect`` from one client (drawn from CLIENT_UA), its tools and its words."""
    client = rng.choice(list(CLIENT_UA))
    return Seed(dialect, SEEDS[dialect](rng, Tokens(), client), client)
