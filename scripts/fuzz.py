"""Fuzz the bridge's core and addon with hostile request bodies, and check the truth rules on every one.

    .venv/bin/python scripts/fuzz.py --cases 100000            # the full run (a few minutes on 2 cores)
    .venv/bin/python scripts/fuzz.py --cases 2000 --seed 7      # a quick one
    .venv/bin/python scripts/fuzz.py --seed 7 --case 1234 --show   # one case again, in full

Every case is a valid history of one of the three dialects (Chat Completions, Anthropic
Messages, OpenAI Responses) built from a random seed, from one client (Claude Code or Codex
CLI with its tools and its words, sent with its User-Agent; or a client nobody can identify,
with any tools and no User-Agent), then damaged by 0 to 4 mutations:
wrong types at every level, null where a list is expected, deleted and duplicated items,
results moved before their calls, unparseable arguments, huge strings, deep nesting,
invalid UTF-8 and lone surrogates, enormous numbers of tool calls, another dialect's shape
or path, broken compression. Each case goes through the core (``rewrite``) and, for a
share of them, through the addon under mitmproxy's test context (``taddons``/``tflow``).

For every input: no exception escapes, and either the body was rewritten and the truth
rules hold, or it goes upstream byte-identical with a reason:

- conservation: every call and result of the input ends in exactly one place, a step or
  the rewritten history, read off the output bytes with a reader independent of the
  dialect modules; nothing outside the tool history changes;
- a step only for a pair correlated by id (one call, one result, result after call), and
  the step holds only that call's and that result's content;
- exit codes only from the result, never 0 (nor absent without a frame saying 0) for a
  result flagged is_error; one copy of the output (no ``stdout``);
- every step decodes strictly as a DONE ``CortexTrajectoryStep``; ``delta_start`` in range;
- the rewritten history stays valid for its dialect (no emptied messages, Anthropic
  alternation kept);
- determinism (same bytes twice) and idempotence (a rewritten body, or its history on
  its own, yields nothing new);
- addon: a body that is not rewritten leaves with the same bytes and headers, the flow says
  why, and its record renders in full with no planted secret in it.

A failure prints its case number, what broke and the command to see it again. Open bugs
that are already reported (``KNOWN``) are counted apart and do not fail the run unless
``--strict``; each has a strict xfail test in tests/test_fuzz.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import copy
import itertools
import json
import logging
import math
import multiprocessing
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
try:
    import native_bridge  # noqa: F401
except ImportError:  # a checkout whose package is not installed
    sys.path.insert(0, str(ROOT / "addons"))

from native_bridge.core.encoder import parse_step_json  # noqa: E402
from native_bridge.core.kinds import DEFAULT_TOOL_KINDS, KINDS  # noqa: E402
from native_bridge.core.pipeline import DELTA_KEY, STEPS_KEY, Config, rewrite  # noqa: E402

PATHS = {"chat": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}
OTHER_PATHS = [None, "/v1/models", "/v1/messages/count_tokens", "/v1/embeddings", "/", "/v1/chat/completions/x"]
STATUSES = {"rewritten", "unchanged", "skipped", "error"}
K = re.compile(r"KK\d+")  # a call's token, in its arguments
R = re.compile(r"RR\d+")  # a result's token, in its content
SECRET = "SECRETFUZZ"  # planted secrets carry this, and no record may

# ---- the seed: a valid history ---------------------------------------------------------------

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


class _Tokens:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n:03d}"


def _pick_tool(rng: random.Random, tok: _Tokens, client: str | None) -> tuple[str, dict[str, Any], str, str]:
    name, args, outs, _ = rng.choice([t for t in TOOLS if client in t[3]])
    k = tok("KK")
    r = tok("RR")
    return name, args(k), rng.choice(outs).format(r=r), r


def _rounds(rng: random.Random, tok: _Tokens, client: str | None = None) -> Iterator[tuple[str, Any]]:
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


def seed_chat(rng: random.Random, tok: _Tokens, client: str | None = None) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        messages.append({"role": "system", "content": "You are a coding agent."})
    for what, x in _rounds(rng, tok, client):
        if what == "user":
            messages.append({"role": "user", "content": x})
        elif what == "text":
            messages.append({"role": "assistant", "content": x})
        elif what == "calls":
            tcs = []
            for cid, name, args in x:
                tc: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                if cid is not None:
                    tc["id"] = cid
                tcs.append(tc)
            messages.append({"role": "assistant", "content": rng.choice([None, "", "Running."]), "tool_calls": tcs})
        else:
            for cid, text, _e, _c in x:
                m: dict[str, Any] = {"role": "tool", "content": _content(rng, text, "text")}
                if cid is not None:
                    m["tool_call_id"] = cid
                messages.append(m)
    return {"model": "gpt-test", "stream": rng.random() < 0.5, "messages": messages}


def seed_anthropic(rng: random.Random, tok: _Tokens, client: str | None = None) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[Any]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for what, x in _rounds(rng, tok, client):
        if what == "user":
            add("user", [{"type": "text", "text": x}])
        elif what == "text":
            add("assistant", [{"type": "text", "text": x}])
        elif what == "calls":
            blocks: list[Any] = [{"type": "text", "text": "Running."}] if rng.random() < 0.3 else []
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
                blocks.append({"type": "text", "text": "<system-reminder>keep going</system-reminder>"})
            add("user", blocks)
    # String content for plain turns, as clients often send it.
    for m in messages:
        if len(m["content"]) == 1 and m["content"][0].get("type") == "text" and rng.random() < 0.5:
            m["content"] = m["content"][0]["text"]
    doc: dict[str, Any] = {"model": "claude-test", "max_tokens": 1024, "messages": messages}
    if rng.random() < 0.5:
        doc["system"] = "You are Claude Code."
    return doc


def seed_responses(rng: random.Random, tok: _Tokens, client: str | None = None) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for what, x in _rounds(rng, tok, client):
        if what == "user":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": x}]})
        elif what == "text":
            if rng.random() < 0.5:
                items.append({"type": "reasoning", "summary": [], "encrypted_content": tok("EE")})
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": x}]})
        elif what == "calls":
            for cid, name, args in x:
                form = rng.choice(["function", "function", "custom", "local_shell", "shell"])
                it: dict[str, Any]
                if form == "custom" or name == "apply_patch":
                    it = {"type": "custom_tool_call", "name": name, "input": json.dumps(args)}
                elif form == "local_shell":
                    cmd = ["bash", "-lc", json.dumps(args)]
                    it = {"type": "local_shell_call", "action": {"type": "exec", "command": cmd}, "status": "completed"}
                elif form == "shell":
                    it = {"type": "shell_call", "action": {"commands": [json.dumps(args)]}, "status": "completed"}
                else:
                    it = {"type": "function_call", "name": name, "arguments": json.dumps(args)}
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
    return Seed(dialect, SEEDS[dialect](rng, _Tokens(), client), client)


# ---- mutations ---------------------------------------------------------------------------


def _nodes(doc: Any, limit: int = 400) -> list[tuple[Any, Any]]:
    """(container, key) of every node under the root, breadth first, at most ``limit``."""
    out: list[tuple[Any, Any]] = []
    queue = [doc]
    while queue and len(out) < limit:
        node = queue.pop(0)
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for k in keys:
            out.append((node, k))
            if isinstance(node[k], dict | list):
                queue.append(node[k])
    return out


def _lists(doc: Any) -> list[list[Any]]:
    return [c[k] for c, k in _nodes(doc) if isinstance(c[k], list)] + ([doc] if isinstance(doc, list) else [])


def _wrong(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            False,
            0,
            -1,
            2**31,
            2**63 - 1,
            -(2**63),
            1.5,
            -0.0,
            1e308,
            "",
            "x",
            "null",
            "{",
            "[]",
            "\u0000",
            "\u202e\ufeff",
            "🙂" * 3,
            [],
            [None],
            [[]],
            {},
            {"type": None},
            {"role": "tool"},
            {"type": "tool_use"},
            {"type": "function_call"},
        ]
    )


_ID_KEYS = ("id", "tool_call_id", "tool_use_id", "call_id")
_DEPTHS = [10, 100, 250, 252, 253, 254, 255, 300, 600, 1000, 1022, 1023, 1024, 1030]


def _m_wrong_type(doc: Any, rng: random.Random) -> None:
    nodes = _nodes(doc)
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = _wrong(rng)


def _m_null_list(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc) if isinstance(c[k], list)]
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = rng.choice([None, {}, "", 0, "[]"])


def _m_delete(doc: Any, rng: random.Random) -> None:
    nodes = _nodes(doc)
    if nodes:
        c, k = rng.choice(nodes)
        del c[k]


def _m_duplicate(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if x]
    if lists:
        lst = rng.choice(lists)
        i = rng.randrange(len(lst))
        lst.insert(rng.randrange(len(lst) + 1), copy.deepcopy(lst[i]))


def _m_swap(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if len(x) > 1]
    if lists:
        lst = rng.choice(lists)
        i, j = rng.randrange(len(lst)), rng.randrange(len(lst))
        lst[i], lst[j] = lst[j], lst[i]


def _m_move(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if len(x) > 1]
    if lists:
        lst = rng.choice(lists)
        lst.insert(rng.randrange(len(lst)), lst.pop(rng.randrange(len(lst))))


def _m_reverse(doc: Any, rng: random.Random) -> None:
    lists = [x for x in _lists(doc) if len(x) > 1]
    if lists:
        rng.choice(lists).reverse()


def _m_ids(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc, 2000) if k in _ID_KEYS]
    if not nodes:
        return
    c, k = rng.choice(nodes)
    other = rng.choice(nodes)
    value = rng.choice([other[0][other[1]], None, "", 7, ["x"], {"id": "x"}, "../../etc/passwd", "c" * 300])
    # A copy: another id's value can be a container holding c itself, and a document that contains
    # itself has no JSON (seed 20261130 case 44618: "Recursion limit reached" ended the run).
    c[k] = copy.deepcopy(value) if isinstance(value, dict | list) else value
    if rng.random() < 0.3:
        del c[k]


def _m_arguments(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc, 2000) if k in ("arguments", "input", "action", "output", "content")]
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = rng.choice(["{", "", "null", "[1,2]", '{"command": 1}', '"str"', "{}", '{"a":' * 50, 1, None, []])


def _m_deep(doc: Any, rng: random.Random) -> None:
    """A value nested ``depth`` levels deep, spliced in as bytes (no recursion on this side)."""
    nodes = _nodes(doc)
    marker = f"__DEEP_{rng.choice(_DEPTHS)}_{rng.choice('lo')}__"
    if nodes and rng.random() < 0.8:
        c, k = rng.choice(nodes)
        c[k] = marker
    elif isinstance(doc, dict):
        doc["metadata"] = marker


def _splice_deep(raw: bytes) -> bytes:
    def deep(m: re.Match[bytes]) -> bytes:
        depth, shape = int(m.group(1)), m.group(2)
        if shape == b"l":
            return b"[" * depth + b'"x"' + b"]" * depth
        return b'{"x":' * depth + b"1" + b"}" * depth

    return re.sub(rb'"__DEEP_(\d+)_([lo])__"', deep, raw)


def _m_big_int(doc: Any, rng: random.Random) -> None:
    """Numbers at the edges of int32/int64 where the seed has a number (exit codes, offsets, limits)."""
    nodes = [(c, k) for c, k in _nodes(doc, 2000) if type(c[k]) is int or k in ("exit_code", "offset", "limit")]
    if nodes:
        c, k = rng.choice(nodes)
        c[k] = rng.choice([2**31 - 1, 2**31, -(2**31) - 1, 2**32, 2**63 - 1, -(2**63), 2**64 - 1, -1, 1.0, 1e300])


def _m_huge_string(doc: Any, rng: random.Random) -> None:
    nodes = [(c, k) for c, k in _nodes(doc) if isinstance(c[k], str)]
    if nodes:
        c, k = rng.choice(nodes)
        size = rng.choice([70_000, 1 << 20, 3 << 20])
        filler = rng.choice(["a", "Exit code: 1\n", "\n", "🙂", "\\", "[", " ", "exit code 1 "])
        c[k] = c[k] + filler * (size // len(filler.encode()))


def _m_many_calls(doc: Any, rng: random.Random) -> None:
    """Thousands of tool calls: one call/result pair of the seed copied under fresh ids."""
    lists = [x for x in _lists(doc) if x and all(isinstance(i, dict) for i in x)]
    if not lists:
        return
    lst = max(lists, key=len)
    n = rng.choice([1000, 5000, 20000])
    base = copy.deepcopy(lst)
    size = len(_splice_deep(_key(base)))  # at most ~8 MB in all: the point is the count, not the size
    for i in range(min(n // max(1, len(base)), (8 << 20) // max(1, size))):
        for item in base:
            item = copy.deepcopy(item)
            for c, k in _nodes([item], 10_000):
                if k in _ID_KEYS and isinstance(c[k], str):
                    c[k] += f"_{i}"
            lst.append(item)


def _m_foreign(doc: Any, rng: random.Random) -> None:
    """Shapes of another dialect: keys and items that make a body look like something else."""
    if not isinstance(doc, dict):
        return
    choice = rng.randrange(6)
    if choice == 0:
        doc["input"] = doc.pop("messages", "x") if rng.random() < 0.5 else "hello"
    elif choice == 1:
        doc["messages"] = doc.pop("input", []) if rng.random() < 0.5 else [{"role": "user", "content": "x"}]
    elif choice == 2:
        doc["system"] = rng.choice(["s", [{"type": "text", "text": "s"}], None])
    elif choice == 3:
        items = doc.get("messages") or doc.get("input")
        if isinstance(items, list):
            items.append(
                rng.choice(
                    [
                        {"role": "assistant", "content": [{"type": "tool_use", "id": "x1", "name": "Bash"}]},
                        {"role": "tool", "tool_call_id": "x1", "content": "ok"},
                        {"type": "function_call_output", "call_id": "x1", "output": "ok"},
                        {"role": "assistant", "tool_calls": [{"id": "x1", "function": {"name": "Bash"}}]},
                    ]
                )
            )
    elif choice == 4:
        doc[STEPS_KEY] = rng.choice([[], None, [{"type": "x"}], "x"])
    else:
        doc[DELTA_KEY] = rng.choice([0, -1, "x", None])


DOC_MUTATIONS: list[tuple[str, Callable[[Any, random.Random], None], float]] = [
    ("wrong_type", _m_wrong_type, 10),
    ("null_list", _m_null_list, 6),
    ("delete", _m_delete, 8),
    ("duplicate", _m_duplicate, 8),
    ("swap", _m_swap, 6),
    ("move", _m_move, 6),
    ("reverse", _m_reverse, 2),
    ("ids", _m_ids, 10),
    ("arguments", _m_arguments, 6),
    ("deep", _m_deep, 2),
    ("big_int", _m_big_int, 3),
    ("huge_string", _m_huge_string, 0.25),
    ("many_calls", _m_many_calls, 0.15),
    ("foreign", _m_foreign, 5),
]


def _b_truncate(raw: bytes, rng: random.Random) -> bytes:
    return raw[: rng.randrange(len(raw) + 1)]


def _b_flip(raw: bytes, rng: random.Random) -> bytes:
    if not raw:
        return raw
    i = rng.randrange(len(raw))
    return raw[:i] + bytes([rng.randrange(256)]) + raw[i + 1 :]


def _in_string(raw: bytes, rng: random.Random, insert: bytes) -> bytes:
    quotes = [m.start() for m in re.finditer(rb'(?<!\\)"', raw[:200_000])]
    i = rng.choice(quotes) + 1 if quotes else 0
    return raw[:i] + insert + raw[i:]


def _b_invalid_utf8(raw: bytes, rng: random.Random) -> bytes:
    return _in_string(raw, rng, rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]))


def _b_surrogate(raw: bytes, rng: random.Random) -> bytes:
    return _in_string(raw, rng, rng.choice([rb"\ud800", rb"\udfff", rb"\udc00\ud800", rb"\ud83d\ude00", rb"\u0000"]))


def _b_escape_markers(raw: bytes, rng: random.Random) -> bytes:
    """Markers written with \\u escapes: the cheap pre-check must not skip them."""
    for m in (b"tool_calls", b"tool_use", b"tool_result", b"_call"):
        raw = raw.replace(b'"' + m, b'"\\u00' + f"{m[0]:02x}".encode() + m[1:], 1 if rng.random() < 0.5 else -1)
    return raw


def _b_numbers(raw: bytes, rng: random.Random) -> bytes:
    value = rng.choice([b"18446744073709551616", b"-9223372036854775809", b"1e400", b"NaN", b"-Infinity", b"1.0e5"])
    if raw.startswith(b"{") and len(raw) > 1:
        return b'{"n":' + value + b"," + raw[1:]
    return raw + value


def _b_dup_key(raw: bytes, rng: random.Random) -> bytes:
    if raw.startswith(b"{") and len(raw) > 1:
        return b'{"messages":null,"input":7,' + raw[1:]
    return raw


def _b_wrap(raw: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"\xef\xbb\xbf" + raw, b"  \n" + raw + b"\n ", raw + b" x", raw + b"\x00", b"[" + raw + b"]"])


def _b_replace(raw: bytes, rng: random.Random) -> bytes:
    return rng.choice([b"", b"null", b"[]", b"{}", b'"x"', b"\xff\xfe", b"{" * 2000, b"[" * 1023 + b"]" * 1023])


BYTE_MUTATIONS: list[tuple[str, Callable[[bytes, random.Random], bytes], float]] = [
    ("truncate", _b_truncate, 3),
    ("flip", _b_flip, 3),
    ("invalid_utf8", _b_invalid_utf8, 3),
    ("surrogate", _b_surrogate, 3),
    ("escape_markers", _b_escape_markers, 2),
    ("numbers", _b_numbers, 1),
    ("dup_key", _b_dup_key, 1),
    ("wrap", _b_wrap, 1),
    ("replace", _b_replace, 0.5),
]


def _weighted(rng: random.Random, table: list[tuple[str, Any, float]]) -> tuple[str, Any]:
    name, fn, _ = rng.choices(table, weights=[w for *_, w in table])[0]
    return name, fn


# ---- one case --------------------------------------------------------------------------------


@dataclass
class Case:
    index: int
    dialect: str  # of the seed
    raw: bytes
    path: str | None
    config: Config
    mutations: list[str]
    user_agent: str | None = None  # the seed's client's (None: a client nobody can identify)
    secrets: list[tuple[str, str]] = field(default_factory=list)  # planted headers
    encoding: str | None = None  # Content-Encoding for the addon
    encoded: bytes | None = None  # the body as sent, when an encoding is set
    query: str = ""


TOO_DEEP = "too-deep-to-encode"  # a case whose document orjson cannot write (over 254 levels): written here


def _dumps(doc: Any) -> bytes:
    return _splice_deep(orjson.dumps(doc))


_CLOSE = object()  # marks the end of a container on the encoder's stack


def _dumps_any_depth(doc: Any, limit: int = 256 * 1024 * 1024) -> bytes:
    """The JSON of ``doc`` at any depth, byte for byte what orjson would write if it could (it stops
    at 254 levels with "Recursion limit reached"): containers without recursion, leaves by orjson.
    A document that contains itself, or would be larger than ``limit``, raises ValueError."""
    out: list[bytes] = []
    size = 0
    open_: set[int] = set()  # the containers being written: meeting one again is a cycle
    stack: list[Any] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple) and node and node[0] is _CLOSE:
            open_.discard(node[1])
            continue
        if isinstance(node, dict | list):
            if id(node) in open_:
                raise ValueError("the document contains itself")
            open_.add(id(node))
            stack.append((_CLOSE, id(node)))
        if isinstance(node, bytes):  # a piece of syntax pushed below
            out.append(node)
            size += len(node)
        elif isinstance(node, dict):
            parts: list[Any] = [b"{"]
            for i, (k, v) in enumerate(node.items()):
                parts += [b"," if i else b"", orjson.dumps(k) + b":", v]
            parts.append(b"}")
            stack.extend(reversed(parts))
        elif isinstance(node, list):
            parts = [b"["]
            for i, v in enumerate(node):
                parts += [b"," if i else b"", v]
            parts.append(b"]")
            stack.extend(reversed(parts))
        else:
            out.append(orjson.dumps(node))
            size += len(out[-1])
        if size > limit:
            raise ValueError(f"the document would be over {limit} bytes")
    return _splice_deep(b"".join(out))


def _config(rng: random.Random) -> Config:
    x = rng.random()
    if x < 0.85:
        return Config()
    if x < 0.9:
        return Config(dialect=rng.choice(["chat", "anthropic", "responses"]))
    if x < 0.95:
        return Config(kinds=frozenset(rng.sample(list(KINDS), rng.randint(0, len(KINDS)))))
    tools = dict(DEFAULT_TOOL_KINDS)
    tools["TodoWrite"] = "run_command"
    tools["mcp__acme__thing"] = "view_file"
    tools.pop("Bash", None)
    return Config(tool_kinds=tools)


def make_case(seed: int, index: int) -> Case:
    rng = random.Random(f"{seed}:{index}")
    dialect = rng.choice(list(SEEDS))
    sd = make_seed(dialect, rng)
    doc: Any = sd.doc
    mutations: list[str] = []
    n = rng.choice([0, 1, 1, 2, 2, 3, 4])
    for _ in range(n):
        name, fn = _weighted(rng, DOC_MUTATIONS)
        fn(doc, rng)
        mutations.append(name)
    if isinstance(doc, dict) and rng.random() < 0.2:  # secret-looking body fields, which records must not show
        doc["api_key"] = f"sk-{SECRET}-body"
        doc["metadata"] = {"user_id": "u1", "token": f"{SECRET}-meta"}
    try:
        raw = _dumps(doc)
    except orjson.JSONEncodeError:  # mutations nested it past orjson's 254 levels: still a case, counted
        raw = _dumps_any_depth(doc)
        mutations.append(TOO_DEEP)
    if rng.random() < 0.25:
        name, fn = _weighted(rng, BYTE_MUTATIONS)
        raw = fn(raw, rng)
        mutations.append(name)
    x = rng.random()
    if x < 0.75:
        path = PATHS[dialect]
    elif x < 0.9:
        path = rng.choice([p for d, p in PATHS.items() if d != dialect])
    else:
        path = rng.choice(OTHER_PATHS)
    case = Case(index, dialect, raw, path, _config(rng), mutations, sd.user_agent)
    if rng.random() < 0.3:
        case.secrets = [
            ("Authorization", f"Bearer {SECRET}-auth"),
            ("x-api-key", f"{SECRET}-xkey"),
            ("api-key", f"{SECRET}-apikey"),
            ("Cookie", f"session={SECRET}-cookie; theme=dark"),
            ("Proxy-Authorization", f"Basic {SECRET}-proxy"),
        ]
        case.query = rng.choice([f"?key={SECRET}-q1", f"?api_key={SECRET}-q2&x=1", f"?x=1&access_token={SECRET}-q3"])
    if rng.random() < 0.2:
        case.encoding = rng.choice(["gzip", "deflate", "br", "zstd", "identity", "gzip, zstd", "x-unknown", "GZIP"])
        case.encoded = _encode(case.raw, case.encoding, rng)
    return case


def _encode(raw: bytes, encoding: str, rng: random.Random) -> bytes:
    from mitmproxy.net import encoding as enc

    data = raw
    with contextlib.suppress(ValueError):
        for e in [x.strip() for x in encoding.split(",")]:
            data = enc.encode(data, e.lower()) if e.lower() not in ("x-unknown",) else data
    if rng.random() < 0.3:  # broken: truncated, or not compressed at all
        data = rng.choice([data[: len(data) // 2], raw, b"\x1f\x8b" + raw[:20], b""])
    return data


# ---- the oracle: an independent reader of tool items -----------------------------------------

RESP_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "shell_call"}
RESP_RESULTS = {t + "_output" for t in RESP_CALLS}


def _key(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # deeper than orjson writes (the input may be): the stdlib, with room to recurse
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            return json.dumps(obj, sort_keys=True).encode("utf-8", "surrogatepass")
        finally:
            sys.setrecursionlimit(limit)


def tool_items(dialect: str, doc: dict[str, Any]) -> tuple[list[tuple[str, Any, Any]], list[Any]]:
    """([(item, id, obj)] in history order, [other items in order]) as the wire says."""
    items: list[tuple[str, Any, Any]] = []
    other: list[Any] = []
    if dialect == "responses":
        inp = doc.get("input")
        for it in inp if isinstance(inp, list) else []:
            t = it.get("type") if isinstance(it, dict) else None
            if isinstance(t, str) and t in RESP_CALLS:
                items.append(("call", it.get("call_id"), it))
            elif isinstance(t, str) and t in RESP_RESULTS:
                cid = it.get("call_id")
                if t == "local_shell_call_output" and not isinstance(cid, str):
                    cid = it.get("id")
                items.append(("result", cid, it))
            else:
                other.append(it)
        return items, other
    for m in doc.get("messages") or []:
        role = m.get("role")
        if dialect == "chat":
            calls = m.get("tool_calls") if role == "assistant" else None
            if calls:
                items.extend(("call", tc.get("id"), tc) for tc in calls)
                rest = {k: v for k, v in m.items() if k != "tool_calls"}
                if any(v not in (None, "", []) for k, v in rest.items() if k not in ("role", "name")):
                    other.append(rest)
            elif role == "tool":
                items.append(("result", m.get("tool_call_id"), m))
            else:
                other.append(m)
        else:
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for b in blocks:
                if role == "assistant" and b.get("type") == "tool_use":
                    items.append(("call", b.get("id"), b))
                elif role == "user" and b.get("type") == "tool_result":
                    items.append(("result", b.get("tool_use_id"), b))
                else:
                    other.append((role, b))
    return items, other


def _numbers(obj: Any) -> set[int]:
    return {int(x) for x in re.findall(rb"-?\d+", _key(obj))}


def _empty_chat(m: Any) -> bool:
    return isinstance(m, dict) and all(v in (None, "", []) for k, v in m.items() if k not in ("role", "name"))


def check_rewrite(raw: bytes, path: str | None, config: Config, user_agent: str | None = None) -> tuple[list[str], Any]:
    """Problems with the core's answer to one body sent with ``user_agent`` (empty: every rule holds)."""
    try:
        r = rewrite(raw, config, path, client_hint=user_agent)
    except BaseException as e:  # the point: nothing escapes
        return [f"raised {type(e).__name__}: {str(e)[:200]}"], None
    problems: list[str] = []
    if r.status not in STATUSES:
        problems.append(f"unknown status {r.status!r}")
    if r.status != "rewritten":
        if r.body is not None:
            problems.append(f"status {r.status} but a new body")
        if not (isinstance(r.reason, str) and r.reason):
            problems.append(f"status {r.status} without a reason")
        return problems, r
    if r.dialect not in PATHS or not r.body:
        return [f"rewritten with dialect {r.dialect!r} and body {r.body!r:.40}"], r
    try:
        doc_in, doc_out = orjson.loads(raw), orjson.loads(r.body)
    except orjson.JSONDecodeError as e:
        return [f"rewritten, but a body does not parse: {e}"], r
    problems += _check_rewritten(r, raw, doc_in, doc_out, path, config, user_agent)
    return problems, r


def _check_rewritten(
    r: Any, raw: bytes, doc_in: Any, doc_out: Any, path: str | None, config: Config, user_agent: str | None = None
) -> list[str]:
    problems: list[str] = []
    dialect = r.dialect
    items_key = "input" if dialect == "responses" else "messages"
    # Nothing outside the tool history changes, not even a number (stdlib json keeps big ints exact).
    if set(doc_out) != set(doc_in) | {STEPS_KEY, DELTA_KEY}:
        problems.append(f"keys changed: {sorted(set(doc_out) ^ set(doc_in))}")
    for k in doc_in:  # the bridge owns additional_steps_delta_start: a client's own is replaced
        if k not in (items_key, DELTA_KEY) and doc_out.get(k) != doc_in[k]:
            problems.append(f"field {k!r} changed")
    with contextlib.suppress(ValueError, RecursionError):
        exact_in, exact_out = json.loads(raw), json.loads(r.body)
        for k in exact_in:
            if k not in (items_key, DELTA_KEY) and exact_out.get(k) != exact_in[k]:
                problems.append(f"field {k!r} changed value (exact number lost in re-encoding)")
    steps, delta = doc_out.get(STEPS_KEY), doc_out.get(DELTA_KEY)
    if not isinstance(steps, list) or not steps or steps != r.steps:
        return [*problems, "additional_steps missing, empty, or not the steps reported"]
    if type(delta) is not int or not 0 <= delta <= len(steps):
        problems.append(f"delta_start {delta!r} out of 0..{len(steps)}")
    for i, s in enumerate(steps):
        try:
            step = parse_step_json(s)
        except Exception as e:
            problems.append(f"step {i} does not decode strictly: {e}")
            continue
        if s.get("status") != "CORTEX_STEP_STATUS_DONE":
            problems.append(f"step {i} is not DONE")
        body = step.WhichOneof("step")
        if body is None or s.get("type") != f"CORTEX_STEP_TYPE_{body.upper()}":
            problems.append(f"step {i}: type {s.get('type')} with body {body}")
        rc = s.get("runCommand")
        if rc is not None and ("stdout" in rc or "stderr" in rc):
            problems.append(f"step {i}: run_command output in stdout/stderr (one copy, in combinedOutput)")
    # Conservation, read off the bytes.
    try:
        items_in, other_in = tool_items(dialect, doc_in)
        items_out, other_out = tool_items(dialect, doc_out)
    except (AttributeError, TypeError) as e:
        return [*problems, f"rewritten, but the oracle cannot read the history: {e}"]
    left = Counter(_key(o) for _, _, o in items_out)
    removed: list[tuple[int, str, Any, Any]] = []
    for pos, (item, iid, obj) in enumerate(items_in):
        k = _key(obj)
        if left[k]:
            left[k] -= 1
        else:
            removed.append((pos, item, iid, obj))
    if +left:
        problems.append(f"{sum(left.values())} tool item(s) in the output that the input does not hold")
    calls_removed = [x for x in removed if x[1] == "call"]
    results_removed = [x for x in removed if x[1] == "result"]
    if not (len(calls_removed) == len(results_removed) == len(steps)):
        problems.append(
            f"{len(steps)} steps, but {len(calls_removed)} calls and {len(results_removed)} results left the history"
        )
        return problems
    n_calls = Counter(iid for item, iid, _ in items_in if item == "call" and isinstance(iid, str))
    n_results = Counter(iid for item, iid, _ in items_in if item == "result" and isinstance(iid, str))
    result_of = {x[2]: x for x in results_removed if isinstance(x[2], str)}
    for i, (pos, _, cid, call) in enumerate(calls_removed):
        if not (isinstance(cid, str) and cid):
            problems.append(f"step {i}: its call has no id")
            continue
        if n_calls[cid] != 1 or n_results[cid] != 1:
            problems.append(f"step {i}: id {cid!r} is on {n_calls[cid]} calls and {n_results[cid]} results")
            continue
        res = result_of.get(cid)
        if res is None:
            problems.append(f"step {i}: its call left the history but its result did not")
            continue
        if res[0] < pos:
            problems.append(f"step {i}: result before call")
        # The step states this call and this result, nothing of another pair.
        own = _key(call) + _key(res[3])
        tokens = lambda b: set(K.findall(b.decode())) | set(R.findall(b.decode()))  # noqa: E731
        foreign = tokens(_key(steps[i])) - tokens(own)
        if foreign:
            problems.append(f"step {i} holds content of another pair: {sorted(foreign)[:4]}")
        if "runCommand" in steps[i]:
            problems += _exit_code_problems(i, steps[i]["runCommand"].get("exitCode"), res[3], dialect)
        elif _flagged_failure(res[3]):
            problems.append(f"step {i}: a failed {next(iter(steps[i]), '?')} became a step (nothing in it says so)")
    # Truth rule 7: a history that ends with the user's own message has no pending round.
    if steps and type(delta) is int and delta != len(steps) and _ends_with_user_text(dialect, doc_in):
        problems.append(f"delta_start {delta} with a user message last (expected {len(steps)})")
    # The history stays valid for its dialect.
    if dialect == "responses":  # a reasoning item goes with the calls that followed it, when all became steps
        other_in = _without_spent_reasoning(doc_in, {id(x[3]) for x in removed}, other_in)
    if other_out != other_in:
        problems.append("items outside the tool history changed, moved or vanished")
    problems += _dialect_shape(dialect, doc_in, doc_out)
    # Determinism, idempotence.
    again = rewrite(raw, config, path, client_hint=user_agent)
    if again.body != r.body or again.status != r.status:
        problems.append("not deterministic: the same bytes gave another answer")
    twice = rewrite(r.body, config, path, client_hint=user_agent)
    if twice.status == "rewritten" or twice.body is not None:
        problems.append("not idempotent: the rewritten body was rewritten again")
    alone = {k: v for k, v in doc_out.items() if k not in (STEPS_KEY, DELTA_KEY)}
    after = rewrite(orjson.dumps(alone), config, path, client_hint=user_agent)
    if after.status == "rewritten":
        problems.append("not idempotent: the rewritten history on its own gave new steps")
    return problems


def _without_spent_reasoning(doc_in: dict[str, Any], removed: set[int], other: list[Any]) -> list[Any]:
    """``other`` without the reasoning items whose response's calls all left the history: the
    calls (and their outputs) straight after the item and the reasoning items next to it
    (OpenAI rejects a reasoning item without the item it was followed by: it goes with them)."""
    items = doc_in.get("input")
    spent: set[int] = set()
    for i, it in enumerate(items if isinstance(items, list) else []):
        if not (isinstance(it, dict) and it.get("type") == "reasoning"):
            continue
        j = i + 1
        while j < len(items) and isinstance(items[j], dict) and items[j].get("type") == "reasoning":
            j += 1
        run = []
        while j < len(items) and isinstance(items[j], dict) and _resp_type(items[j]) in RESP_CALLS | RESP_RESULTS:
            run.append(items[j])
            j += 1
        calls = [x for x in run if _resp_type(x) in RESP_CALLS]
        if run and _resp_type(run[0]) in RESP_CALLS and all(id(c) in removed for c in calls):
            spent.add(id(it))
    return [x for x in other if id(x) not in spent]


def _resp_type(it: dict[str, Any]) -> str | None:
    t = it.get("type")
    return t if isinstance(t, str) else None


def _result_text(result: Any) -> str:
    content = result.get("content", result.get("output")) if isinstance(result, dict) else None
    if isinstance(content, list):
        content = next((p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)), "")
    return content if isinstance(content, str) else ""


def _flagged_failure(result: Any) -> bool:
    """The client's own failure marks on a result (Anthropic is_error, a [tool error] prefix)."""
    if isinstance(result, dict) and result.get("is_error") is True:
        return True
    return _result_text(result).lstrip().lower().startswith(("[tool error]", "<tool_use_error>"))


def _ends_with_user_text(dialect: str, doc: dict[str, Any]) -> bool:
    items = doc.get("input" if dialect == "responses" else "messages")
    last = items[-1] if isinstance(items, list) and items else None
    if not isinstance(last, dict) or last.get("role") != "user":
        return False
    if dialect == "responses" and doc.get("previous_response_id"):
        return False  # the server holds the earlier items: every step is the delta
    if dialect == "responses":
        return last.get("type") in (None, "message")
    if dialect == "anthropic":
        content = last.get("content")
        return isinstance(content, str) or not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content or []
        )
    return True


def _exit_code_problems(i: int, code: Any, result: Any, dialect: str = "anthropic") -> list[str]:
    """Truth rule 3, as far as the result's own data says it: the code comes from the result; a
    result flagged is_error is never exit 0, and its code is absent only where it states a number
    the rules may decline or read as a conflict (a 0 against the flag; one beyond int32; another
    client's frame; frames that disagree) on a line that speaks of an exit code."""
    numbers = _numbers(result)
    if code not in (None, 0, 1) and code not in numbers:
        return [f"step {i}: exit code {code} is not in its result"]
    flagged = dialect == "anthropic" and isinstance(result, dict) and result.get("is_error") is True
    framed = bool(numbers) and re.search(rb"(?i)exit|returncode", _key(result)) is not None
    if flagged and (code == 0 or (code is None and not framed)):
        return [f"step {i}: the result is flagged is_error, the step says exit {code}"]
    out = result.get("output") if isinstance(result, dict) and result.get("type") == "shell_call_output" else None
    if isinstance(out, list) and len(out) == 1 and isinstance(out[0], dict) and isinstance(out[0].get("outcome"), dict):
        outcome = out[0]["outcome"]
        n = outcome.get("exit_code")
        if outcome.get("type") == "exit" and type(n) is int and -(2**31) <= n < 2**31 and code != n:
            return [f"step {i}: shell_call_output says exit {n}, the step says {code}"]
    return []


def _dialect_shape(dialect: str, doc_in: Any, doc_out: Any) -> list[str]:
    problems = []
    if dialect == "chat":
        before = {_key(m) for m in doc_in["messages"]}
        for m in doc_out["messages"]:
            if _key(m) in before:
                continue
            if m.get("tool_calls") == []:
                problems.append("an assistant message with an empty tool_calls list")
            if _empty_chat(m):
                problems.append("an emptied message")
    elif dialect == "anthropic":
        msgs_in, msgs_out = doc_in["messages"], doc_out["messages"]
        if any(m.get("content") == [] for m in msgs_out) > any(m.get("content") == [] for m in msgs_in):
            problems.append("a message with empty content")
        roles_in = [m.get("role") for m in msgs_in]
        roles_out = [m.get("role") for m in msgs_out]
        alternating = lambda roles: all(a != b for a, b in itertools.pairwise(roles))  # noqa: E731
        if alternating(roles_in) and not alternating(roles_out):
            problems.append("user/assistant alternation broken")
    return problems


# ---- the addon under mitmproxy's test context -------------------------------------------------


class _Jobs:
    """Stands in for the Recorder: keeps the jobs, renders them as the writer thread would."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []

    def submit(self, job: Any) -> None:
        self.jobs.append(job)

    def close(self, timeout: float = 0) -> None:
        pass


class AddonHarness:
    def __init__(self) -> None:
        from mitmproxy import hooks
        from mitmproxy.test import taddons
        from native_bridge.shell.chat_addon import NativeBridge

        self.nb = NativeBridge()
        self._ctx = taddons.context(self.nb)
        self.tctx = self._ctx.__enter__()
        self.tctx.master.addons.invoke_addon_sync(self.nb, hooks.ConfigureHook(set(self.tctx.options.keys())))
        self.tctx.configure(self.nb, bridge_mode="rewrite", bridge_max_body=2 * 1024 * 1024)
        self.jobs = _Jobs()
        self.nb.recorder = self.jobs  # type: ignore[assignment]

    def close(self) -> None:
        self.nb.recorder = None
        self.nb.done()  # the offload worker, if a big body started one
        self._ctx.__exit__(None, None, None)

    def check(self, case: Case) -> list[str]:
        from mitmproxy import io
        from mitmproxy.test import tflow
        from native_bridge.shell import META, records

        f = tflow.tflow()
        req = f.request
        req.method = "POST" if case.index % 13 else "GET"
        req.path = (case.path or "/v1/chat/completions") + case.query
        req.headers["content-type"] = "application/json"
        if case.user_agent:
            req.headers["user-agent"] = case.user_agent
        for k, v in case.secrets:
            req.headers[k] = v
        if case.index % 17 == 0:
            req.headers[b"x-undecodable"] = b"\xff\xfe../\x00"
        if case.encoding:
            req.headers["content-encoding"] = case.encoding
            req.raw_content = case.encoded
        else:
            req.raw_content = case.raw
        raw_before, headers_before = req.raw_content, req.headers.fields
        try:
            decoded = req.get_content()
        except ValueError:
            decoded = None
        selected = bool(self.nb.filter and self.nb.filter(f))
        self.nb.config = case.config
        self.jobs.jobs.clear()
        try:
            pending = self.nb.request(f)
            if pending is not None:  # a big body is bridged in a worker: mitmproxy awaits the hook
                asyncio.run(pending)  # type: ignore[arg-type]
        except BaseException as e:
            return [f"addon raised {type(e).__name__}: {str(e)[:200]}"]
        problems: list[str] = []
        meta = f.metadata.get(META)
        if not selected:
            if meta is not None or self.jobs.jobs or req.raw_content != raw_before:
                problems.append("a flow the filter does not select was touched")
            return problems
        if not isinstance(meta, dict) or meta.get("status") not in STATUSES:
            return [f"selected flow without a verdict: {meta!r}"]
        status = meta["status"]
        if status != "rewritten":
            if req.raw_content != raw_before or req.headers.fields != headers_before:
                problems.append(f"status {status} but the request changed")
            if not meta.get("reason"):
                problems.append(f"status {status} without a reason")
            if status == "error":  # the fail-open caught an exception of the core: a bug unless known
                reason = str(meta.get("reason", ""))
                problems.append(
                    f"raised {reason[:160]}" if known(f"raised {reason}") else f"addon error: {reason[:160]}"
                )
        else:
            if req.headers.get("content-encoding") != (case.encoding or None):
                problems.append("content-encoding changed")
            expect = rewrite(decoded or b"", case.config, req.path, client_hint=case.user_agent)
            if req.get_content() != expect.body:
                problems.append("the body sent is not the core's rewrite")
        if len(self.jobs.jobs) != 1:
            problems.append(f"{len(self.jobs.jobs)} record jobs for one flow")
        else:
            job = self.jobs.jobs[0]
            data = records._render(job)
            rec = orjson.loads(data)
            if "record_error" in rec:
                problems.append(f"record kept short: {rec['record_error'][:120]}")
            if rec.get("status") != status:
                problems.append("record status differs from the flow's")
            leaked = _planted(data, case)
            if leaked:
                problems.append(f"planted secret in the record: {leaked}")
        # The flow stays writable to a -w file (metadata serializable).
        try:
            io.FlowWriter(_Sink()).add(f)
        except Exception as e:
            problems.append(f"flow no longer serializable: {type(e).__name__}: {e}")
        return problems


class _Sink:
    def write(self, data: bytes) -> int:
        return len(data)


def _planted(data: bytes, case: Case) -> list[str]:
    """Planted secrets that are still readable in a record (only where redaction is promised)."""
    text = data.decode("utf-8", "replace")
    found = [m for m in re.findall(SECRET + r"-[a-z0-9]+", text)]
    if not found:
        return []
    # Body fields are promised only when the body still is the JSON object they were planted in.
    try:
        doc = orjson.loads(case.raw)
    except orjson.JSONDecodeError:
        doc = None
    promised = {"auth", "xkey", "apikey", "cookie", "proxy", "q1", "q2", "q3"}
    if isinstance(doc, dict) and doc.get("api_key") == f"sk-{SECRET}-body":
        promised.add("body")
    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict) and doc["metadata"].get("token"):
        promised.add("meta")
    return sorted({f for f in found if f.split("-", 1)[1] in promised})


# ---- running -----------------------------------------------------------------------------------

# Open bugs outside this script's reach, reported with reproductions (see tests/test_fuzz.py).
# A failure whose text starts with one of these prefixes is counted as known, not as new.
KNOWN: dict[str, str] = {}
# Fixed since they were found here (each has a regression test in tests/test_fuzz.py): a body nested
# 255..1024 deep raised out of rewrite(); integers beyond 64 bits became floats in a rewritten body;
# a shell_call_output exit_code beyond int32 raised out of rewrite(); a Responses input item whose
# type is a list or object raised out of rewrite(). A new open bug goes here, e.g.
# "raised TypeError: unhashable type": "dialects/responses.py: an input item whose type is a list".


def known(problem: str) -> str | None:
    return next((k for k in KNOWN if problem.startswith(k)), None)


@dataclass
class Outcome:
    index: int
    seconds: float
    status: str
    problems: list[str]
    mutations: list[str]
    dialect: str
    path: str | None


def run_case(case: Case, addon: AddonHarness | None) -> Outcome:
    t = time.perf_counter()
    problems, r = check_rewrite(case.raw, case.path, case.config, case.user_agent)
    if addon is not None:
        problems += addon.check(case)
    return Outcome(
        case.index,
        time.perf_counter() - t,
        r.status if r is not None else "raised",
        problems,
        case.mutations,
        case.dialect,
        case.path,
    )


def _case_outcome(seed: int, index: int, addon: AddonHarness | None) -> Outcome:
    """One case's outcome; a case the generator itself cannot build is a failure of the fuzzer, reported
    with its number like any other, never the end of the run."""
    try:
        case = make_case(seed, index)
    except Exception as e:
        problem = f"fuzzer: the case generator raised {type(e).__name__}: {e}"
        return Outcome(index, 0.0, "generator-error", [problem], [], "?", None)
    return run_case(case, addon)


def _worker(args: tuple[int, int, int, int]) -> list[Outcome]:
    seed, start, stop, addon_every = args
    logging.disable(logging.CRITICAL)  # the addon's fail-open lines; failures are counted here
    addon = AddonHarness() if addon_every else None
    try:
        return [
            _case_outcome(seed, i, addon if addon_every and i % addon_every == 0 else None) for i in range(start, stop)
        ]
    finally:
        if addon is not None:
            addon.close()


@dataclass
class Report:
    cases: int = 0
    addon_cases: int = 0
    seconds: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    failures: list[Outcome] = field(default_factory=list)  # new problems
    known: Counter[str] = field(default_factory=Counter)
    known_examples: dict[str, int] = field(default_factory=dict)
    slowest: list[tuple[float, int]] = field(default_factory=list)


def run(cases: int, seed: int = 0, workers: int = 1, addon_every: int = 4, start: int = 0) -> Report:
    rep = Report()
    t0 = time.perf_counter()
    chunk = 250
    jobs = [(seed, i, min(i + chunk, start + cases), addon_every) for i in range(start, start + cases, chunk)]
    if workers > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            results: Iterator[list[Outcome]] = pool.imap_unordered(_worker, jobs)
            _collect(rep, results, addon_every)
    else:
        _collect(rep, map(_worker, jobs), addon_every)
    rep.seconds = time.perf_counter() - t0
    rep.failures.sort(key=lambda o: o.index)
    rep.slowest.sort(reverse=True)
    rep.slowest = rep.slowest[:5]
    return rep


def _collect(rep: Report, results: Iterator[list[Outcome]], addon_every: int) -> None:
    for batch in results:
        for o in batch:
            rep.cases += 1
            rep.addon_cases += bool(addon_every and o.index % addon_every == 0)
            rep.statuses[o.status] += 1
            rep.mutations.update(o.mutations or ["none"])
            rep.slowest.append((o.seconds, o.index))
            if len(rep.slowest) > 50:
                rep.slowest.sort(reverse=True)
                del rep.slowest[5:]
            new = [p for p in o.problems if known(p) is None]
            for p in o.problems:
                if (k := known(p)) is not None:
                    rep.known[k] += 1
                    rep.known_examples.setdefault(k, o.index)
            if new:
                o.problems = new
                rep.failures.append(o)


def show(seed: int, index: int) -> None:
    case = make_case(seed, index)
    print(f"case {index} (seed {seed}): dialect {case.dialect}, path {case.path}, mutations {case.mutations}")
    print(f"user agent: {case.user_agent}")
    print(f"config: {case.config}")
    print(f"headers: {case.secrets}  query: {case.query!r}  encoding: {case.encoding}")
    preview = case.raw if len(case.raw) < 4000 else case.raw[:2000] + b" ... " + case.raw[-500:]
    print(f"body ({len(case.raw)} bytes): {preview!r}")
    addon = AddonHarness()
    try:
        o = run_case(case, addon)
    finally:
        addon.close()
    print(f"status {o.status} in {o.seconds:.3f}s")
    for p in o.problems:
        print(f"  - {p}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10000, help="number of cases (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="run seed: the same seed gives the same cases")
    parser.add_argument("--start", type=int, default=0, help="first case number")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    parser.add_argument("--addon-every", type=int, default=4, help="every Nth case also through the addon (0: none)")
    parser.add_argument("--case", type=int, help="show one case in full (with --seed)")
    parser.add_argument("--show", action="store_true", help="with --case: print the body and every problem")
    parser.add_argument("--strict", action="store_true", help="count known open bugs as failures too")
    parser.add_argument("--save", type=Path, help="write each failing body to this directory")
    args = parser.parse_args(argv)
    if args.case is not None:
        show(args.seed, args.case)
        return 0
    rep = run(args.cases, args.seed, max(1, args.workers), args.addon_every, args.start)
    rate = rep.cases / rep.seconds if rep.seconds else math.inf
    print(
        f"fuzz: {rep.cases} cases ({rep.addon_cases} also through the addon) in {rep.seconds:.1f}s "
        f"({rate:.0f}/s, {args.workers} workers, seed {args.seed})"
    )
    print("  statuses:  " + ", ".join(f"{k} {v}" for k, v in sorted(rep.statuses.items())))
    print("  mutations: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.mutations.items())))
    print("  slowest:   " + ", ".join(f"case {i} {s:.2f}s" for s, i in rep.slowest))
    if rep.mutations[TOO_DEEP]:
        print(f"  generator: {rep.mutations[TOO_DEEP]} cases nested past orjson's 254 levels (written by fuzz.py)")
    for k, n in sorted(rep.known.items()):
        print(f"  known open bug ({n} cases, e.g. --case {rep.known_examples[k]}): {KNOWN[k]}")
    failed = rep.failures
    print(f"  failures:  {len(failed)}")
    for o in failed[:20]:
        print(f"  case {o.index} [{o.dialect} -> {o.path}, {'+'.join(o.mutations) or 'no mutation'}]:")
        for p in o.problems[:5]:
            print(f"      {p}")
        print(f"      again: {Path(sys.argv[0]).name} --seed {args.seed} --case {o.index} --show")
    if args.save and failed:
        args.save.mkdir(parents=True, exist_ok=True)
        for o in failed:
            case = make_case(args.seed, o.index)
            meta = {"path": case.path, "mutations": case.mutations, "problems": o.problems}
            (args.save / f"case-{o.index}.json").write_text(json.dumps(meta, indent=2))
            (args.save / f"case-{o.index}.b64").write_text(base64.b64encode(case.raw).decode())
    bad = len(failed) + (sum(rep.known.values()) if args.strict else 0)
    return 1 if bad else 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
