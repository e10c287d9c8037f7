"""Realistic agent sessions, generated in memory from a seed: the bench's histories (and the tests'
that need large or many of them).

One "world" (a project, its files, its commands) and a seeded random stream give the
rounds; each dialect renders them the way its clients do (Claude Code over Chat
Completions and Anthropic Messages, Codex over Responses). Request k of a session is
the request k-1 plus one round, as an agent resends its history, so a warm rewrite
sees exactly the prefix it saw before. The same seed gives the same bytes: the bench's
golden digests are taken over them.

    Session("chat", parallel=4, seed=3).body(26)   # the request after 26 rounds
    AgentConversation(200_000, seed=600, turns=40).body(t)   # the agent loop's turn t, about 200 KB

``AgentConversation`` is the bench's agent loop (and the memo tests'); ``CLIENT_HINTS`` the
User-Agent each dialect's sessions are sent with.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from . import anthropic, chat, claude_read, responses

PROJ = "/home/dev/src/ledger"
_WORDS = (  # noqa: SIM905 (a sentence reads better than 48 quoted words)
    "account balance entry ledger posting amount currency total report parse value item line "
    "record import export config path result error status commit branch module test fixture "
    "cache index query filter order sum rate period journal invoice client server token batch"
).split()
_KEYWORDS = ("def", "return", "if", "for", "with", "assert", "raise", "import", "from", "class", "yield")


def _line_pool(rng: random.Random, n: int = 4000) -> list[str]:
    """Code-like lines: the bulk of what tool results carry."""
    pool = []
    for _ in range(n):
        indent = " " * rng.choice((0, 4, 4, 8, 8, 12))
        kw = rng.choice(_KEYWORDS)
        words = [rng.choice(_WORDS) for _ in range(rng.randint(2, 9))]
        call = f"{words[0]}_{words[1]}({', '.join(words[2:])})"
        pool.append(f"{indent}{kw} {call}" + (":" if kw in ("def", "if", "for", "with", "class") else ""))
    return pool


@dataclass(slots=True)
class Call:
    """One tool call and its result, in neutral form; dialects render it."""

    tool: str  # neutral tool: read, bash, grep, glob, edit, write, todo, fetch
    args: dict[str, Any]
    output: str
    failed: bool = False
    code: int | None = None  # the exit code a shell result states


# What ``marks`` adds to every third code line, in turn: the characters Go's encoder escapes.
_MARKS = (" -> list[Entry]", " if total < limit else None", " & mask")


class World:
    def __init__(
        self,
        seed: int,
        tools: Sequence[str] | None = None,
        out: tuple[int, int] = (1000, 5000),
        marks: bool = False,
    ) -> None:
        """``marks``: code lines and shell commands also hold ``<``, ``>`` and ``&`` (a return type, a
        comparison, a shell's ``2>&1``), the characters some clients' encoders escape (Go's)."""
        self.tools, self.out, self.marks = tools, out, marks  # the tools a round picks from (None: all); output sizes
        self.rng = random.Random(seed)
        self.pool = _line_pool(self.rng)
        if marks:  # the pool drawn from the same random stream: only its lines' ends differ
            self.pool = [ln + _MARKS[i // 3 % 3] if i % 3 == 0 else ln for i, ln in enumerate(self.pool)]
        self.files = [f"{PROJ}/{d}/{w}_{v}.py" for d in ("ledger", "tests", "tools") for w in _WORDS[:12] for v in "ab"]

    def text(self, size: int) -> list[str]:
        out, n = [], 0
        while n < size:
            line = self.rng.choice(self.pool)
            out.append(line)
            n += len(line) + 1
        return out

    def size(self) -> int:
        return self.rng.randint(*self.out)  # outputs of 1-5 KB unless told

    def call(self, tool: str) -> Call:
        rng = self.rng
        path = rng.choice(self.files)
        if tool == "read":
            lines = self.text(self.size())
            # Claude Code's Read: right-aligned numbers and an arrow (non-ASCII, as in the wild)
            return Call("read", {"file_path": path}, claude_read(lines))
        if tool == "bash":
            target = path.removeprefix(PROJ + "/")
            cmd = rng.choice((f"python -m pytest -q {target}", f"ruff check {target}", f"git diff --stat -- {target}"))
            cmd += " 2>&1" if self.marks else ""
            lines = self.text(self.size())
            if rng.random() < 0.25:
                code = rng.choice((1, 2, 127))
                return Call("bash", {"command": cmd, "description": "Run the check"}, "\n".join(lines), True, code)
            return Call("bash", {"command": cmd, "description": "Run the check"}, "\n".join(lines), False, 0)
        if tool == "grep":
            word = rng.choice(_WORDS)
            lines = [f"{rng.choice(self.files)}:{rng.randint(1, 400)}:{ln}" for ln in self.text(self.size() - 400)]
            args = {"pattern": word, "path": PROJ, "output_mode": "content", "-n": True}
            return Call("grep", args, "\n".join(lines))
        if tool == "glob":
            n = self.size() // 48
            names = [f"{PROJ}/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}_{i}.py" for i in range(n)]
            return Call("glob", {"pattern": "**/*.py", "path": PROJ}, "\n".join(names))
        if tool == "edit":
            old = "\n".join(self.text(rng.randint(200, 800)))
            new = "\n".join(self.text(rng.randint(200, 800)))
            snippet = claude_read(self.text(self.size() - 1000), 40)
            out = f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet:\n{snippet}"
            return Call("edit", {"file_path": path, "old_string": old, "new_string": new}, out)
        if tool == "write":
            content = "\n".join(self.text(self.size()))
            return Call("write", {"file_path": path, "content": content}, f"File created successfully at: {path}")
        if tool == "fetch":
            url = f"https://docs.example.org/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.html"
            summary = " ".join(rng.choice(_WORDS) for _ in range(self.size() // 7))
            return Call("fetch", {"url": url, "prompt": "Summarise the API"}, summary)
        if tool == "todo":  # unmapped: stays a message
            todos = [
                {"content": " ".join(self.text(60)), "status": "pending", "activeForm": "Working"} for _ in range(3)
            ]
            return Call("todo", {"todos": todos}, "Todos have been modified successfully. " * 30)
        raise ValueError(tool)

    def round(self, parallel: int) -> list[Call]:
        tools = self.tools or ("read", "bash", "grep", "bash", "glob", "edit", "read", "write", "fetch", "todo")
        if parallel == 1:
            return [self.call(self.rng.choice(tools))]
        # parallel rounds mix kinds, as an agent exploring fans out
        picked = self.rng.sample(("read", "grep", "glob", "bash", "read", "fetch"), parallel)
        return [self.call(t) for t in picked]


# Tool names per dialect's typical client.
_CLAUDE = {t: t.title() for t in ("read", "bash", "grep", "glob", "edit", "write")}
_CLAUDE |= {"fetch": "WebFetch", "todo": "TodoWrite"}

SYSTEM = (
    "You are a coding agent working in a terminal. Read files before editing them, run the tests "
    "after a change, and never claim success you did not observe.\n" * 40
)


def _tool_id(prefix: str, seed: int, n: int) -> str:
    return prefix + hashlib.sha256(f"{seed}-{n}".encode()).hexdigest()[:24]


class Session:
    """A generated agent session in one dialect: ``body(k)`` is the request after k rounds."""

    def __init__(
        self,
        dialect: str,
        parallel: int = 1,
        seed: int = 1,
        tools: Sequence[str] | None = None,
        out: tuple[int, int] = (1000, 5000),
        marks: bool = False,
    ) -> None:
        self.dialect, self.parallel, self.seed = dialect, parallel, seed
        self.world = World(seed, tools, out, marks)
        self.items: list[Any] = []  # messages (chat, anthropic) or input items (responses)
        self.ends: list[int] = []  # len(items) after each round
        self.n = 0
        self._start()

    def _start(self) -> None:
        task = "The ledger report double-counts postings that span two periods. Find out why and fix it, with tests."
        if self.dialect == "chat":
            self.items += [chat.system(SYSTEM), chat.user(task)]
        else:
            self._user(task)

    def grow(self, rounds: int) -> Session:
        while len(self.ends) < rounds:
            self._round(self.world.round(self.parallel))
        return self

    def _round(self, calls: list[Call]) -> None:
        r = len(self.ends)
        note = "Let me look at that." if r % 3 == 0 else None
        ids = []
        for _ in calls:
            self.n += 1
            ids.append(_tool_id({"responses": "call_"}.get(self.dialect, "toolu_01"), self.seed, self.n))
        getattr(self, f"_{self.dialect}")(calls, ids, note)
        if r % 25 == 24:  # now and then the user steers, which ends a tool round
            self._user(f"Good. Keep going, and keep the diff small (round {r}).")
        self.ends.append(len(self.items))

    def _user(self, text: str) -> None:
        if self.dialect == "chat":
            self.items.append(chat.user(text))
        elif self.dialect == "anthropic":
            self.items.append({"role": "user", "content": [anthropic.text(text)]})
        else:
            self.items.append(responses.message("user", text))

    def _chat(self, calls: list[Call], ids: list[str], note: str | None) -> None:
        tcs = [chat.sent_call(i, _CLAUDE[c.tool], json.dumps(c.args)) for c, i in zip(calls, ids, strict=True)]
        self.items.append(chat.assistant(*tcs, content=note))
        for c, i in zip(calls, ids, strict=True):
            self.items.append(chat.sent_result(i, f"Exit code {c.code}\n{c.output}" if c.failed else c.output))

    def _anthropic(self, calls: list[Call], ids: list[str], note: str | None) -> None:
        blocks = [anthropic.text(note)] if note else []
        blocks += [anthropic.tool_use(i, _CLAUDE[c.tool], c.args) for c, i in zip(calls, ids, strict=True)]
        self.items.append({"role": "assistant", "content": blocks})
        results: list[dict[str, Any]] = []
        for c, i in zip(calls, ids, strict=True):
            if c.failed:  # Claude Code: is_error, "Exit code N" first
                results.append(anthropic.tool_result(i, f"Exit code {c.code}\n{c.output}", is_error=True))
            elif c.tool == "read":
                results.append(anthropic.tool_result(i, [anthropic.text(c.output)]))
            else:
                results.append(anthropic.tool_result(i, c.output))
        self.items.append({"role": "user", "content": results})

    def _responses(self, calls: list[Call], ids: list[str], note: str | None) -> None:
        # Codex: reasoning, then function calls; shell results as {"output", "metadata"} JSON.
        enc = hashlib.sha256(f"{self.seed}-{self.n}".encode()).hexdigest() * 12
        self.items.append({"type": "reasoning", "summary": [], "content": None, "encrypted_content": enc})
        if note:
            self.items.append(responses.message("assistant", note))
        outs = []
        for c, i in zip(calls, ids, strict=True):
            if c.tool == "bash":
                args = {"command": ["bash", "-lc", c.args["command"]], "workdir": PROJ}
                item = responses.function_call("shell", json.dumps(args), i)
                meta = {"exit_code": c.code, "duration_seconds": 0.4}
                output = json.dumps({"output": c.output, "metadata": meta})
            elif c.tool == "read":
                args = {"file_path": c.args["file_path"], "offset": 1, "limit": 400}
                item = responses.function_call("read_file", json.dumps(args), i)
                output = c.output
            elif c.tool == "grep":
                args = {"pattern": c.args["pattern"], "path": PROJ}
                item = responses.function_call("grep_files", json.dumps(args), i)
                output = c.output
            elif c.tool in ("edit", "write"):  # apply_patch has no lossless step: stays a message
                old, new = c.args.get("old_string", ""), c.args.get("new_string", c.args.get("content", ""))
                patch = f"*** Begin Patch\n*** Update File: {c.args['file_path']}\n@@\n-{old}\n+{new}\n*** End Patch"
                done = "Success. Updated the following files:\nM " + c.args["file_path"]
                outs.append(responses.output(i, done, "custom_tool_call_output"))
                self.items.append(responses.custom_tool_call("apply_patch", patch, i))
                continue
            else:  # glob, fetch, todo: Codex runs them as shell_command
                cmd = {"glob": f"rg --files -g '*.py' {PROJ}", "fetch": f"curl -s {c.args.get('url', '')}"}.get(
                    c.tool, "cat TODO.md"
                )
                item = responses.function_call("shell_command", json.dumps({"command": cmd, "workdir": PROJ}), i)
                output = f"Exit code: 0\nWall time: 0.2 seconds\nOutput:\n{c.output}"
            self.items.append(item)
            outs.append(responses.output(i, output))
        self.items += outs

    def doc(self, rounds: int) -> dict[str, Any]:
        self.grow(rounds)
        items = self.items[: self.ends[rounds - 1]]
        if self.dialect == "chat":
            return {
                "model": "claude-sonnet-4-5",
                "messages": items,
                "tools": _TOOLS_SPEC,
                "stream": True,
                "max_tokens": 32000,
            }
        if self.dialect == "anthropic":
            return {
                "model": "claude-sonnet-4-5",
                "system": SYSTEM,
                "messages": items,
                "tools": _TOOLS_SPEC_A,
                "stream": True,
                "max_tokens": 32000,
            }
        return {
            "model": "gpt-5-codex",
            "instructions": SYSTEM,
            "input": items,
            "tools": _TOOLS_SPEC_R,
            "stream": True,
            "store": False,
        }

    def body(self, rounds: int) -> bytes:
        return orjson.dumps(self.doc(rounds))


_PARAMS = {"type": "object", "properties": {"file_path": {"type": "string"}, "command": {"type": "string"}}}
_TOOLS_SPEC = [
    {"type": "function", "function": {"name": n, "description": f"The {n} tool. " * 20, "parameters": _PARAMS}}
    for n in _CLAUDE.values()
]
_TOOLS_SPEC_A = [{"name": n, "description": f"The {n} tool. " * 20, "input_schema": _PARAMS} for n in _CLAUDE.values()]
_TOOLS_SPEC_R = [
    {"type": "function", "name": n, "description": f"The {n} tool. " * 20, "parameters": _PARAMS}
    for n in ("shell", "shell_command", "read_file", "grep_files")
]


def no_history_doc(size: int) -> dict[str, Any]:
    """A chat request with no tool history (a first turn, a title request): only text."""
    w = World(3)
    messages = [chat.system(SYSTEM)]
    while sum(len(m["content"]) for m in messages) < size:
        messages.append(chat.user("Explain this code \u2192 " + "\n".join(w.text(1500))))
        messages.append(chat.assistant(content="It sums the postings per period: " + "\n".join(w.text(1500))))
    return {"model": "claude-sonnet-4-5", "messages": messages, "stream": True}


def session_for_size(dialect: str, target: int, parallel: int, seed: int = 7) -> tuple[Session, int]:
    """A session and the round count whose body is closest to ``target`` bytes."""
    s = Session(dialect, parallel, seed)
    rounds = 1
    while len(s.body(rounds)) < target:
        rounds = max(rounds + 1, int(rounds * target / max(len(s.body(rounds)), 1)))
    while rounds > 1 and len(s.body(rounds - 1)) >= target:
        rounds -= 1
    return s, rounds


# The User-Agent of the client each dialect's sessions imitate (Claude Code; Codex for Responses):
# with it the bridge knows the client before parsing (whose words count), as it does for theirs.
CLIENT_HINTS = {
    "chat": "claude-cli/2.1.332 (external, cli)",
    "anthropic": "claude-cli/2.1.332 (external, cli)",
    "responses": "codex_cli_rs/0.50.0 (Ubuntu 24.4.0; x86_64) xterm-256color",
}


def _agent_out(size: int) -> tuple[int, int]:
    """Tool output sizes that let a 40-turn conversation stay near ``size``."""
    return (60, 240) if size < 50_000 else (1000, 5000)


class AgentConversation:
    """A Claude Code session over Chat Completions of Bash and Read rounds: turn t is the
    history after ``first + t`` rounds, so each request is the previous one plus one round.
    ``encode``: how the client writes its JSON (``encodings.ENCODINGS``; orjson's compact bytes
    unless told); the middle turn is about ``size`` bytes as that client writes it. ``marks``: the
    outputs and commands also hold ``<``, ``>``, ``&`` (``World``), which Go's encoder escapes."""

    def __init__(
        self,
        size: int,
        seed: int,
        turns: int,
        encode: Callable[[dict[str, Any]], bytes] = orjson.dumps,
        marks: bool = False,
    ) -> None:
        self.s = Session("chat", 1, seed, tools=("bash", "read"), out=_agent_out(size), marks=marks)
        self.encode = encode
        mid = 1
        while len(self.body_at(mid)) < size:
            mid = max(mid + 1, int(mid * size / max(len(self.body_at(mid)), 1)))
        self.first = max(1, mid - turns // 2)

    def body_at(self, rounds: int) -> bytes:
        return self.encode(self.s.doc(rounds))

    def body(self, turn: int) -> bytes:
        return self.body_at(self.first + turn)


# ---- variants: the truth rules' hard cases -----------------------------------------------


def mutations(
    doc: dict[str, Any], dialect: str, rng: random.Random, tail: int | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Variants of a generated history that exercise the truth rules' hard cases
    (``tail``: touch only the last items, where a resumed conversation is cut)."""
    key = "input" if dialect == "responses" else "messages"
    items = doc[key]

    def variant(fn: Callable[[list[Any]], None]) -> dict[str, Any]:
        new = orjson.loads(orjson.dumps(doc))
        fn(new[key])
        return new

    def id_fields(it: Any) -> list[tuple[dict[str, Any], str]]:
        """(holder, key) of every call/result id in one item."""
        out = []
        if dialect == "chat":
            out += [(tc, "id") for tc in it.get("tool_calls") or []]
            if "tool_call_id" in it:
                out.append((it, "tool_call_id"))
        elif dialect == "anthropic":
            for b in it["content"] if isinstance(it.get("content"), list) else []:
                if b.get("type") == "tool_use":
                    out.append((b, "id"))
                elif b.get("type") == "tool_result":
                    out.append((b, "tool_use_id"))
        elif "call_id" in it:
            out.append((it, "call_id"))
        return out

    n = len(items)
    if n < 4:
        return
    i, j = sorted(rng.sample(range(max(1, n - tail) if tail else 1, n), 2))

    def drop(xs: list[Any]) -> None:  # a lost result, or a lost call (orphan result)
        del xs[j]

    def dup(xs: list[Any]) -> None:  # one id carried twice
        a, b = id_fields(xs[i]), id_fields(xs[j])
        if a and b:
            b[0][0][b[0][1]] = a[0][0][a[0][1]]

    def swap(xs: list[Any]) -> None:  # results before calls
        xs[i], xs[j] = xs[j], xs[i]

    def noid(xs: list[Any]) -> None:
        for holder, k in id_fields(xs[j]):
            del holder[k]

    yield "drop", variant(drop)
    yield "dup", variant(dup)
    yield "swap", variant(swap)
    yield "noid", variant(noid)
    yield "truncated", variant(lambda xs: xs.__delitem__(slice(j, None)))
