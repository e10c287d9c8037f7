"""Property tests of the truth rules over all three dialects.

One neutral random history (calls of mapped and unmapped tools, duplicated and missing
ids, missing results, orphans, results before their calls, parallel calls, text turns,
failing and succeeding shell results, error flags, image results) is rendered into a
Chat Completions, an Anthropic Messages, an OpenAI Responses and a Gemini API body, and each goes
through ``rewrite()``. Every call carries a unique token KK### and every result a unique
token RR###, so where each item ended (a step, or the rewritten body) is read off the
actual output bytes, not off the builder's own accounting.

Each history has one client, and each body is sent with that client's User-Agent (Claude
Code or Codex CLI), or with none (a client nobody can identify: its tools are any of them).
A named client's own frames count only for that client, and for a client nobody can name
every known frame counts at its place (truth rule 3), so what a result must give is a
function of the client and of the dialect: the model (``truth``) says it for each result
variant, following clients.py and exitstatus.py. The client's error flag is rendered as each
dialect has it: ``is_error`` in Anthropic, ``{"error": …}`` in Gemini; Chat Completions and
Responses have none, so there a flagged result arrives without it.

Where taking a pair out would leave the request invalid for its API, the writer pins it
(it stays messages, code ``validity``); the tests check the output against each API's
rules with their own model of them, and that the steps are the expected pairs minus
the pinned ones.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import orjson
import pytest
from bench.golden import outcome_digest
from chatkit import assert_valid_rewrite, build_pending
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from native_bridge import rewrite
from native_bridge.chat_hop.jobs import observed
from native_bridge.core.builder import build
from native_bridge.core.dialects import anthropic, chat, gemini, responses
from native_bridge.core.encoder import step_json
from native_bridge.core.memo.store import Memo
from native_bridge.core.pipeline import Config
from support.histories.encodings import ENCODINGS

DIALECTS: dict[str, tuple[ModuleType, str]] = {
    "chat": (chat, "/v1/chat/completions"),
    "anthropic": (anthropic, "/v1/messages"),
    "responses": (responses, "/v1/responses"),
    "gemini": (gemini, "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"),
}
STEPS, DELTA = "additional_steps", "additional_steps_delta_start"
K = re.compile(r"KK\d{3}")
R = re.compile(r"RR\d{3}")
REJECT = "The user doesn't want to proceed with this tool use. The tool use was rejected."

# The clients a history can come from: the User-Agent each sends (None: no client can be told).
CLIENT_UA: dict[str | None, str | None] = {
    "claude-code": "claude-cli/2.1.332 (external, cli)",
    "codex": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)",
    None: None,
}
CLAUDE, CODEX = "claude-code", "codex"

# What a result must give, from (client, whether the dialect carried the client's error flag):
# (the pair becomes a step, the exit code the step carries).
Expect = Callable[[str | None, bool], tuple[bool, int | None]]
# result variants: (template, the client flags it as an error, what it must give)
Variant = tuple[str, bool, Expect]


def _never(client: str | None, carried: bool) -> tuple[bool, int | None]:
    return False, None


def _flag_or(number: int | None = None, client: str | None = None) -> Expect:
    """A flagged failure. No number: 1 where the flag arrived, else absent. ``number`` stated by
    ``client``'s frame (written only with the flag, as Claude Code writes ``Exit code N``): every
    client gets it with the flag (for another named client a borrowed frame, issue 39 item 4: an
    identity is a claim, and the flag says it failed); a client we cannot name gets it always
    (every known frame counts, and the line is the generic family too); without the flag another
    named client never (another client's frame: the program's output)."""

    def expect(cl: str | None, carried: bool) -> tuple[bool, int | None]:
        if number is None:
            return True, 1 if carried else None
        return True, number if carried or cl is None else None

    return expect


def _frame(client: str, number: int) -> Expect:
    """A frame only ``client`` writes, not flagged: its number for that client and for a client we
    cannot name (every known frame counts for it), absent for any other named client."""
    return lambda cl, carried: (True, number if cl in (client, None) else None)


BASH_RESULTS: list[Variant] = [
    ("{r} ok", False, lambda cl, carried: (True, None)),
    ("Exit code 1\n{r} failed", True, _flag_or(1, CLAUDE)),  # Claude Code's frame, written with is_error
    ("Exit code 2\n{r}", True, _flag_or(2, CLAUDE)),
    ("{r} boom", True, _flag_or()),  # a failure flag without a number
    ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{r}\nexit code 3", False, _frame(CODEX, 0)),  # the header wins
    # Codex's header says 0 while the dialect's flag says failure: conflicting signals, and no
    # failing code to state, so no step (a DONE step would drop the flagged failure, issue 39).
    (
        "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{r}",
        True,
        lambda cl, carried: (False, None) if carried else (True, 0 if cl in (CODEX, None) else None),
    ),
    ('{{"output": "{r}", "metadata": {{"exit_code": 2, "duration_seconds": 0.1}}}}', False, _frame(CODEX, 2)),
    ("Process exited with code 127\nOutput:\n{r}: command not found", False, _frame(CODEX, 127)),
    # Codex's "still running": no outcome yet, no step (for a client we cannot name too); for another
    # named client it is the program's output.
    ("Process running with session ID 5\nOutput:\n{r}", False, lambda cl, carried: (cl == CLAUDE, None)),
    (REJECT + " {r}", True, _never),  # never ran: recognised whoever the client is
    ("<tool_use_error>{r}</tool_use_error>", True, _never),
]
# Non-shell steps need the client's own words for success (truth rule 5): Claude Code's Read
# gives the file in numbered lines, its Glob the paths found.
READ_RESULTS: list[Variant] = [
    ("     1\t{r} text", False, lambda cl, carried: (cl == CLAUDE, None)),
    ("<tool_use_error>{r} does not exist</tool_use_error>", True, _never),
    ("{r} oops", True, _never),  # a failed read: view_file has no field to say so
]
GLOB_RESULTS: list[Variant] = [
    ("/w/{r}.txt", False, lambda cl, carried: (cl == CLAUDE, None)),
    ("{r} failed", True, _never),
]
# No client's words for these (Claude Code's WebFetch and LS have none): never a step.
PLAIN_RESULTS: list[Variant] = [("{r} result", False, _never), ("{r} failed", True, _never)]
LS_RESULTS: list[Variant] = [("{r}.txt", False, _never), ("- /w/\n  - {r}.txt", False, _never)]

_BOTH = (CLAUDE, CODEX, None)
# (tool name, arguments from the call token, the call can be translated, result variants, Responses forms,
#  the clients that have the tool: None is a client nobody can identify, whose tools are any)
TOOLS: list[tuple[str, Any, bool, list[Variant], tuple[str, ...], tuple[str | None, ...]]] = [
    (
        "Bash",
        lambda k: {"command": f"echo {k}", "description": "echo"},
        True,
        BASH_RESULTS,
        ("function",),
        (CLAUDE, None),
    ),
    (
        "Bash",
        lambda k: {"command": f"serve {k}", "run_in_background": True},
        False,
        BASH_RESULTS,
        ("function",),
        (CLAUDE, None),
    ),
    (
        "shell",
        lambda k: {"command": ["bash", "-lc", f"test {k}"], "workdir": "/w"},
        True,
        BASH_RESULTS,
        ("function", "local_shell"),
        (CODEX, None),
    ),
    ("exec_command", lambda k: {"cmd": f"make {k}"}, True, BASH_RESULTS, ("function",), (CODEX, None)),
    ("Read", lambda k: {"file_path": f"/w/{k}.txt"}, True, READ_RESULTS, ("function",), (CLAUDE, None)),
    ("Read", lambda k: {"file_path": f"w/{k}.txt"}, False, READ_RESULTS, ("function",), (CLAUDE, None)),
    ("Glob", lambda k: {"pattern": f"*{k}*", "path": "/w"}, True, GLOB_RESULTS, ("function",), (CLAUDE, None)),
    (
        "WebFetch",
        lambda k: {"url": f"https://example.com/{k}", "prompt": "summary"},
        True,
        PLAIN_RESULTS,
        ("function",),
        (CLAUDE, None),
    ),
    ("LS", lambda k: {"path": f"/w/{k}"}, True, LS_RESULTS, ("function",), (CLAUDE, None)),
    (
        "TodoWrite",
        lambda k: {"todos": [{"content": k, "status": "pending"}]},
        False,
        PLAIN_RESULTS,
        ("function",),
        (CLAUDE, None),
    ),
    ("apply_patch", lambda k: {"input": f"*** Begin Patch {k}"}, False, PLAIN_RESULTS, ("function", "custom"), _BOTH),
]


# ---- the neutral history --------------------------------------------------------------------------


@dataclass
class Call:
    token: str
    id: str | None
    tool: str
    args: dict[str, Any]
    translatable: bool
    form: str  # how Responses carries it: function_call, local_shell_call or custom_tool_call
    turn: int = -1


@dataclass
class Result:
    token: str
    id: str | None
    text: str
    flag: bool  # the client flags it as an error (carried only where the dialect has a flag)
    expect: Expect
    shape: str  # "str", "parts" (text blocks) or "image" (text plus an image: not text)
    out_type: str  # the Responses item type
    explicit_false: bool  # Anthropic: is_error: false written out
    turn: int = -1


@dataclass
class Turn:
    kind: str  # "user", "assistant" (text), "calls", "results"
    text: str | None = None
    calls: list[Call] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    thinking: bool = False  # Anthropic: a thinking block first; Responses: a reasoning item first
    interleave: bool = False  # Responses: a reasoning item between the calls
    reminder: bool = False  # Anthropic: a <system-reminder> text block after the results


@dataclass
class Case:
    turns: list[Turn]
    client: str | None = None  # who sent it (CLIENT_UA): the request carries its User-Agent

    @property
    def calls(self) -> list[Call]:
        return [c for t in self.turns for c in t.calls]

    @property
    def results(self) -> list[Result]:
        return [r for t in self.turns for r in t.results]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    client = draw(st.sampled_from(list(CLIENT_UA)))
    tools = [t for t in TOOLS if client in t[5]]
    turns: list[Turn] = [Turn("user", "start")]
    deferred: list[Result] = []
    early_ids: list[str] = []
    used: list[str] = []
    counter = itertools.count(1)

    def result(id: str | None, variants: list[Variant], out_type: str = "function_call_output") -> Result:
        token = f"RR{next(counter):03d}"
        template, flag, expect = draw(st.sampled_from(variants))
        shape = draw(st.sampled_from(["str", "str", "parts", "image"]))
        return Result(
            token,
            id,
            template.format(r=token),
            flag,
            expect,
            shape,
            out_type,
            draw(st.booleans()),
        )

    def results_turn(rs: list[Result]) -> None:
        if rs:
            turns.append(Turn("results", results=list(rs), reminder=draw(st.booleans())))

    for _ in range(draw(st.integers(0, 6))):
        event = draw(st.sampled_from(["round"] * 5 + ["user", "text", "orphan", "early", "early", "flush"]))
        if event == "user":
            turns.append(Turn("user", "hello"))
        elif event == "text":
            turns.append(Turn("assistant", "thinking aloud", thinking=draw(st.booleans())))
        elif event == "orphan":
            results_turn([result(f"orphan_{next(counter)}", PLAIN_RESULTS)])
        elif event == "early":
            id = f"early_{next(counter)}"
            early_ids.append(id)
            results_turn([result(id, PLAIN_RESULTS[:1])])
        elif event == "flush":
            results_turn(deferred)
            deferred.clear()
        else:
            made: list[tuple[Call, list[Variant]]] = []
            answers_early: set[str] = set()
            for _ in range(draw(st.integers(1, 3))):
                # A result sent before its call is answered by the next call that reuses its id, often.
                how = (
                    "early"
                    if early_ids and draw(st.booleans())
                    else draw(st.sampled_from(["fresh"] * 6 + ["dup", "none"]))
                )
                if how == "dup" and used:
                    id: str | None = draw(st.sampled_from(used))
                elif how == "early":
                    id = early_ids.pop(0)
                    answers_early.add(id)
                elif how == "none":
                    id = None
                else:
                    id = f"call_{next(counter)}"
                if id:
                    used.append(id)
                name, args, translatable, variants, forms, _ = draw(st.sampled_from(tools))
                token = f"KK{next(counter):03d}"
                form = draw(st.sampled_from(forms))
                made.append((Call(token, id, name, args(token), translatable, form), variants))
            text = draw(st.sampled_from([None, "", "Running tools."]))
            turns.append(
                Turn(
                    "calls",
                    text,
                    [c for c, _ in made],
                    thinking=draw(st.booleans()),
                    interleave=draw(st.booleans()),
                )
            )
            answered: list[Result] = []
            for c, variants in made:
                out_type = {
                    "custom": "custom_tool_call_output",
                    "local_shell": draw(st.sampled_from(["function_call_output", "local_shell_call_output"])),
                }.get(c.form, "function_call_output")
                fates = (
                    ["missing", "missing", "now"]
                    if c.id in answers_early
                    else ["now"] * 4 + ["missing", "later", "twice"]
                )
                fate = draw(st.sampled_from(fates))
                for _ in range({"now": 1, "twice": 2}.get(fate, 0)):
                    answered.append(result(c.id, variants, out_type))
                if fate == "later":
                    deferred.append(result(c.id, variants, out_type))
            results_turn(draw(st.permutations(answered)))
    if draw(st.booleans()):
        results_turn(deferred)
    tail = draw(st.sampled_from(["none", "none", "user", "text"]))
    if tail == "user":
        turns.append(Turn("user", "what now?"))
    elif tail == "text":
        turns.append(Turn("assistant", "done"))
    for i, t in enumerate(turns):
        for item in (*t.calls, *t.results):
            item.turn = i
    return Case(turns, client)


# ---- rendering it in each dialect --------------------------------------------------------------------


@dataclass
class Unit:
    """One turn as the dialect's reader must see it: what the builder's delta_start depends on."""

    kind: str  # "calls", "results", "other"
    calls: list[Call] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    more: bool = False  # Responses: model output that starts with a call right after outputs (same response)


def render_chat(case: Case) -> tuple[dict[str, Any], list[Unit]]:
    messages: list[dict[str, Any]] = []
    units: list[Unit] = []
    for t in case.turns:
        if t.kind in ("user", "assistant"):
            messages.append({"role": t.kind, "content": t.text})
            units.append(Unit("other"))
        elif t.kind == "calls":
            tool_calls = []
            for c in t.calls:
                tc: dict[str, Any] = {
                    "type": "function",
                    "function": {"name": c.tool, "arguments": orjson.dumps(c.args).decode()},
                }
                if c.id is not None:
                    tc["id"] = c.id
                tool_calls.append(tc)
            messages.append({"role": "assistant", "content": t.text, "tool_calls": tool_calls})
            units.append(Unit("calls", t.calls))
        else:
            for r in t.results:
                text = r.text  # Chat Completions has no error flag
                content: Any = {
                    "str": text,
                    "parts": [{"type": "text", "text": text}],
                    "image": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:,"}}],
                }[r.shape]
                m: dict[str, Any] = {"role": "tool", "content": content}
                if r.id is not None:
                    m["tool_call_id"] = r.id
                messages.append(m)
                units.append(Unit("results", results=[r]))
    return {"model": "gpt-test", "messages": messages, "temperature": 0}, units


THINKING = {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCkYIBxgCKkB0c2lnbmF0dXJl"}
REMINDER = {"type": "text", "text": "<system-reminder>\nThis is a reminder.\n</system-reminder>"}


def render_anthropic(case: Case) -> tuple[dict[str, Any], list[Unit]]:
    messages: list[dict[str, Any]] = []
    units: list[Unit] = []
    for t in case.turns:
        blocks: list[dict[str, Any]] = []
        if t.thinking:
            blocks.append(THINKING)
        if t.text:
            blocks.append({"type": "text", "text": t.text})
        for c in t.calls:
            b: dict[str, Any] = {"type": "tool_use", "name": c.tool, "input": c.args}
            if c.id is not None:
                b["id"] = c.id
            blocks.append(b)
        for r in t.results:
            content: Any = {
                "str": r.text,
                "parts": [{"type": "text", "text": r.text}],
                "image": [
                    {"type": "text", "text": r.text},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                ],
            }[r.shape]
            b = {"type": "tool_result", "content": content}
            if r.id is not None:
                b["tool_use_id"] = r.id
            if r.flag or r.explicit_false:
                b["is_error"] = r.flag
            blocks.append(b)
        if t.reminder:
            blocks.append(REMINDER)
        role = "user" if t.kind in ("user", "results") else "assistant"
        if messages and messages[-1]["role"] == role:  # the client keeps user/assistant alternation
            messages[-1]["content"].extend(blocks)
            units[-1].calls += t.calls
            units[-1].results += t.results
        else:
            messages.append({"role": role, "content": blocks})
            units.append(Unit("other", list(t.calls), list(t.results)))
    for u in units:
        u.kind = "calls" if u.calls else "results" if u.results else "other"
    # Breakpoints as Claude Code sets them: the last block of the last message, and one earlier.
    for m in (messages[-1], messages[2] if len(messages) > 3 else None):
        if m is not None and m["content"]:
            m["content"][-1] = {**m["content"][-1], "cache_control": {"type": "ephemeral"}}
    system = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]
    return {"model": "claude-test", "max_tokens": 1024, "system": system, "messages": messages}, units


def render_responses(case: Case) -> tuple[dict[str, Any], list[Unit]]:
    items: list[dict[str, Any]] = []
    units: list[Unit] = []
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAABoZW5j"}

    def unit(cls: str, starts_with_call: bool = False) -> Unit:
        """The current turn: one per run of model output, one per run of outputs, one per input item."""
        if cls == "input" or not units or units[-1].kind != cls:
            more = cls == "model" and starts_with_call and bool(units) and units[-1].kind == "results"
            units.append(Unit(cls, more=more))
        return units[-1]

    for t in case.turns:
        if t.kind == "user":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t.text}]})
            unit("input")
        elif t.kind in ("assistant", "calls"):
            u = unit("model", starts_with_call=bool(t.calls) and not t.thinking and not t.text)
            if t.thinking:
                items.append(reasoning)
            if t.text:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t.text}]}
                )
            for i, c in enumerate(t.calls):
                if i and t.interleave:
                    items.append(reasoning | {"id": f"rs_{c.token[2:]}"})  # with an id: the API checks what follows
                if c.form == "local_shell":
                    it: dict[str, Any] = {
                        "type": "local_shell_call",
                        "status": "completed",
                        "action": {
                            "type": "exec",
                            "command": c.args["command"],
                            "working_directory": c.args["workdir"],
                        },
                    }
                elif c.form == "custom":
                    it = {"type": "custom_tool_call", "name": c.tool, "input": c.args["input"]}
                else:
                    it = {"type": "function_call", "name": c.tool, "arguments": orjson.dumps(c.args).decode()}
                if c.id is not None:
                    it["call_id"] = c.id
                items.append(it)
                u.calls.append(c)
        else:
            u = unit("results")
            for r in t.results:
                text = r.text  # Responses has no error flag
                output: Any = {
                    "str": text,
                    "parts": [{"type": "input_text", "text": text}],
                    "image": [{"type": "input_text", "text": text}, {"type": "input_image", "image_url": "data:,"}],
                }[r.shape]
                it = {"type": r.out_type, "output": output}
                if r.id is not None:
                    it["call_id"] = r.id
                items.append(it)
                u.results.append(r)
    for u in units:
        u.kind = "calls" if u.calls else "results" if u.kind == "results" else "other"
    return {"model": "gpt-5-codex", "instructions": "You are Codex.", "input": items, "store": False}, units


SIGNATURE = "CiQBVKhc7Mz1Q2l0aG91Z2h0"


def render_gemini(case: Case) -> tuple[dict[str, Any], list[Unit]]:
    contents: list[dict[str, Any]] = []
    units: list[Unit] = []
    for t in case.turns:
        parts: list[dict[str, Any]] = []
        if t.thinking:
            parts.append({"text": "Let me think.", "thought": True})
        if t.text:
            parts.append({"text": t.text})
        for i, c in enumerate(t.calls):
            fc: dict[str, Any] = {"name": c.tool, "args": c.args}
            if c.id is not None:
                fc["id"] = c.id
            part: dict[str, Any] = {"functionCall": fc}
            if i == 0 and t.interleave:  # the turn's thought signature, on its first call
                part["thoughtSignature"] = SIGNATURE
            parts.append(part)
        for r in t.results:
            response = {"error": r.text} if r.flag else {"output": r.text}
            fr: dict[str, Any] = {"name": "tool", "response": response}
            if r.shape == "image":
                fr["parts"] = [{"inlineData": {"mimeType": "image/png", "data": "iVBO"}}]
            if r.id is not None:
                fr["id"] = r.id
            parts.append({"functionResponse": fr})
        role = "user" if t.kind in ("user", "results") else "model"
        if contents and contents[-1]["role"] == role:  # Gemini CLI coalesces same-role neighbours
            contents[-1]["parts"].extend(parts)
            units[-1].calls += t.calls
            units[-1].results += t.results
            if t.kind == "user":
                units[-1].kind = "spoke"
        else:
            contents.append({"role": role, "parts": parts})
            units.append(Unit("spoke" if t.kind == "user" else "other", list(t.calls), list(t.results)))
    for u in units:
        # A user content with function responses and the user's words ends the round.
        u.kind = "calls" if u.calls else "other" if u.kind == "spoke" else "results" if u.results else "other"
    doc = {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI."}]},
        "generationConfig": {"temperature": 0},
    }
    return doc, units


RENDER = {"chat": render_chat, "anthropic": render_anthropic, "responses": render_responses, "gemini": render_gemini}


# ---- the model: what the truth rules say must happen ---------------------------------------------------


FLAGGED = {"anthropic", "gemini"}  # the dialects that carry a result's error flag


def truth(r: Result, client: str | None, dialect: str) -> tuple[bool, int | None]:
    """What ``r`` must give for ``client`` in ``dialect``: whether its pair becomes a step, and
    the exit code the step carries (None: absent)."""
    statable, code = r.expect(client, r.flag and dialect in FLAGGED)
    return statable and r.shape != "image", code  # an image is content no step field can hold


def expected_steps(case: Case, dialect: str) -> list[tuple[str, str, int | None]]:
    """(call token, result token, exit code) for each pair that must become a step, in call order."""
    n_calls = Counter(c.id for c in case.calls)
    n_results = Counter(r.id for r in case.results)
    out = []
    for c in case.calls:
        if not c.id or n_calls[c.id] != 1 or n_results[c.id] != 1:
            continue
        (r,) = [r for r in case.results if r.id == c.id]
        statable, code = truth(r, case.client, dialect)
        if r.turn > c.turn and c.translatable and statable:
            out.append((c.token, r.token, code))
    return out


def expected_delta(units: list[Unit], steps: list[tuple[str, str, int | None]]) -> int:
    """The newest tool turn is pending when only results for its own calls follow it."""
    last = max((i for i, u in enumerate(units) if u.kind == "calls"), default=None)
    if last is None:
        return len(steps)
    if any(u.kind != "results" for u in units[last + 1 :]):
        return len(steps)
    # Calls and outputs that interleave within one model response are one round.
    while units[last].more and last >= 2 and units[last - 1].kind == "results" and units[last - 2].kind == "calls":
        last -= 2
    ids = {c.id for u in units[last:] for c in u.calls}
    after = units[last + 1 :]
    if any(r.id not in ids for u in after for r in u.results):
        return len(steps)
    before = {c.token for u in units[:last] for c in u.calls}
    return sum(1 for k, _, _ in steps if k in before)


# ---- running it -------------------------------------------------------------------------------------------


def tokens(doc: Any, pattern: re.Pattern[str]) -> list[str]:
    return pattern.findall(orjson.dumps(doc).decode())


@dataclass
class Outcome:
    body: dict[str, Any]  # the input body
    units: list[Unit]
    items: list[Any]  # the rewritten history (the input's, when nothing was rewritten)
    steps: list[dict[str, Any]]
    delta: int | None
    pinned: set[str] = field(default_factory=set)  # call tokens of the pairs the writer kept for validity


def outcome(dialect: str, case: Case) -> Outcome:
    module, path = DIALECTS[dialect]
    doc, units = RENDER[dialect](case)
    r = rewrite(orjson.dumps(doc), path=path, client_hint=CLIENT_UA[case.client])
    assert r.status in ("rewritten", "unchanged"), r.reason
    assert r.dialect == dialect
    ids = {p.id for p in (r.plan.accounting if r.plan else []) if p.code == "validity"}
    pinned = {c.token for c in case.calls if c.id in ids}
    assert not pinned or dialect != "chat"
    if r.status == "unchanged":
        assert r.body is None and r.steps == []
        return Outcome(doc, units, doc[module.ITEMS], [], None, pinned)
    out = orjson.loads(r.body or b"")
    rest = {k: v for k, v in out.items() if k not in (module.ITEMS, STEPS, DELTA)}
    assert rest == {k: v for k, v in doc.items() if k != module.ITEMS}, "only the history changes"
    return Outcome(doc, units, out[module.ITEMS], out[STEPS], out[DELTA], pinned)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
each_dialect = pytest.mark.parametrize("dialect", list(DIALECTS))


@each_dialect
@SETTINGS
@given(case=cases())
def test_conservation_every_item_ends_in_exactly_one_place(dialect: str, case: Case) -> None:
    o = outcome(dialect, case)
    for pattern, given_ in ((K, [c.token for c in case.calls]), (R, [r.token for r in case.results])):
        in_steps = [t for s in o.steps for t in set(tokens(s, pattern))]
        in_body = tokens(o.items, pattern)
        assert len(in_steps) == len(set(in_steps)), "an item is in two steps"
        assert len(in_body) == len(set(in_body)), "an item is twice in the body"
        assert not set(in_steps) & set(in_body), "an item is both a step and in the body"
        assert sorted(in_steps + in_body) == sorted(given_), "an item was lost or invented"


@each_dialect
@SETTINGS
@given(case=cases())
def test_steps_are_exactly_the_correlated_statable_pairs(dialect: str, case: Case) -> None:
    o = outcome(dialect, case)
    got = []
    for s in o.steps:
        assert s["status"] == "CORTEX_STEP_STATUS_DONE"
        assert "stdout" not in s.get("runCommand", {}), "the output travels once, in combinedOutput"
        (k,) = tokens(s, K)
        (r,) = set(tokens(s, R))
        got.append((k, r, s.get("runCommand", {}).get("exitCode")))
    assert got == [e for e in expected_steps(case, dialect) if e[0] not in o.pinned]


@each_dialect
@SETTINGS
@given(case=cases())
def test_no_step_without_a_correlated_result(dialect: str, case: Case) -> None:
    o = outcome(dialect, case)
    calls = {c.token: c for c in case.calls}
    results = {r.token: r for r in case.results}
    for s in o.steps:
        (k,) = tokens(s, K)
        (r,) = set(tokens(s, R))
        c, res = calls[k], results[r]
        assert c.id is not None and res.id == c.id
        assert [x.id for x in case.calls].count(c.id) == 1
        assert [x.id for x in case.results].count(c.id) == 1
        assert res.turn > c.turn


@each_dialect
@SETTINGS
@given(case=cases())
def test_deterministic(dialect: str, case: Case) -> None:
    _, path = DIALECTS[dialect]
    data = orjson.dumps(RENDER[dialect](case)[0])
    memo, ua = Memo(), CLIENT_UA[case.client]
    first = rewrite(data, path=path, memo=memo, client_hint=ua)
    again = rewrite(orjson.dumps(orjson.loads(data)), path=path, memo=memo, client_hint=ua)
    assert (first.status, first.body, first.steps) == (again.status, again.body, again.steps)
    assert orjson.dumps(RENDER[dialect](case)[0]) == data


@each_dialect
@SETTINGS
@given(case=cases())
def test_idempotent(dialect: str, case: Case) -> None:
    module, path = DIALECTS[dialect]
    doc, _ = RENDER[dialect](case)
    memo, ua = Memo(), CLIENT_UA[case.client]
    first = rewrite(orjson.dumps(doc), path=path, memo=memo, client_hint=ua)
    if first.body is None:
        return
    second = rewrite(first.body, path=path, memo=memo, client_hint=ua)
    assert second.status in ("skipped", "unchanged") and second.body is None
    # The rewritten history on its own: nothing left to step but the pairs kept for validity,
    # nothing to take out.
    items = orjson.loads(first.body)[module.ITEMS]
    alone = doc | {module.ITEMS: items}
    h = module.read(alone)
    h.client = case.client
    again = build(h)
    pinned = {p.id for p in first.plan.accounting if p.code == "validity"} if first.plan else set()
    assert {c.id for c in again.step_calls} <= pinned
    if not pinned:
        assert module.write(alone, again.stepped) == items
    r = rewrite(orjson.dumps(alone), path=path, memo=memo, client_hint=ua)
    assert r.status == "unchanged" and r.body is None


@each_dialect
@SETTINGS
@given(case=cases())
def test_delta_slice(dialect: str, case: Case) -> None:
    module, _ = DIALECTS[dialect]
    o = outcome(dialect, case)
    h = module.read(o.body)
    h.client = case.client
    plan = build(h)
    assert 0 <= plan.delta_start <= len(plan.steps)
    tail = [step_json(s) for s in plan.steps[plan.delta_start :]]
    assert [step_json(s) for s in build_pending(h)] == tail
    expected = expected_steps(case, dialect)
    assert plan.delta_start == expected_delta(o.units, expected)
    if o.steps:
        assert o.delta == expected_delta(o.units, [e for e in expected if e[0] not in o.pinned])
    if o.steps and not o.pinned:
        assert o.delta == plan.delta_start
        assert o.steps[o.delta :] == tail


# ---- the rewritten history stays valid for its dialect --------------------------------------------------


def blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    c = m["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else c


def _thinking_led(bs: list[dict[str, Any]], kind: str, call: str, thinking: Any) -> dict[int, int]:
    """Thinking parts that lead straight to a call in the same turn: index -> the call's index."""
    out: dict[int, int] = {}
    run: list[int] = []
    for j, b in enumerate(bs):
        if thinking(b):
            run.append(j)
            continue
        if b.get(kind) == call if kind == "type" else kind in b:
            out.update((t, j) for t in run)
        run = []
    return out


def _strip_cc(b: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in b.items() if k != "cache_control"}


def assert_valid_anthropic(
    before: list[dict[str, Any]], after: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> None:
    stepped = {t for s in steps for t in tokens(s, K) + tokens(s, R)}

    def is_stepped(b: dict[str, Any]) -> bool:
        return b["type"] in ("tool_use", "tool_result") and bool(set(tokens(b, K) + tokens(b, R)) & stepped)

    def is_thinking(b: dict[str, Any]) -> bool:
        return b["type"] in ("thinking", "redacted_thinking")

    # A turn goes whole when all it holds is stepped pairs and the thinking that led to them.
    gone: set[int] = set()
    for i, m in enumerate(before):
        bs = blocks(m)
        led = _thinking_led(bs, "type", "tool_use", is_thinking) if m["role"] == "assistant" else {}
        if bs and all(is_stepped(b) or (j in led and is_stepped(bs[led[j]])) for j, b in enumerate(bs)):
            gone.add(i)
        elif led:
            # A thinking block that led to a call stays with it when its turn stays.
            assert not any(is_stepped(bs[c]) for c in led.values()), "thinking torn from its call"

    # No empty turn, and strict user/assistant alternation (the input had it).
    assert all(m["content"] not in ("", []) for m in after), "empty content"
    roles = [m["role"] for m in after]
    assert all(a != b for a, b in itertools.pairwise(roles)), f"roles do not alternate: {roles}"
    assert not after or roles[0] == "user"
    # A request that ended on the user's turn still does (never on a prefill, never on nothing).
    if before[-1]["role"] == "user":
        assert after and roles[-1] == "user", roles
    # Every block in place: the input's blocks minus the stepped ones (and the turns gone whole),
    # in order, untouched but for where a breakpoint moved.
    source = [(i, b) for i, m in enumerate(before) if i not in gone for b in blocks(m) if not is_stepped(b)]
    assert [_strip_cc(b) for m in after for b in blocks(m)] == [_strip_cc(b) for _, b in source]
    # Turns merged only where a removal brought them together; never thinking after other content.
    k = 0
    for m in after:
        n = len(blocks(m))
        origins = sorted({source[k + x][0] for x in range(n)})
        firsts = [x for x in range(n) if source[k + x][1] is blocks(before[source[k + x][0]])[0]]
        k += n
        assert all(b > a + 1 and set(range(a + 1, b)) <= gone for a, b in itertools.pairwise(origins)), origins
        if any(is_thinking(blocks(m)[x]) for x in firsts):
            assert is_thinking(blocks(m)[0]), "a merge put thinking after other content"
    # Breakpoints: never more, and only on blocks that can carry one.
    count = orjson.dumps(before).count(b"cache_control")
    assert orjson.dumps(after).count(b"cache_control") <= count
    for m in after:
        for b in blocks(m):
            if "cache_control" in b:
                assert not is_thinking(b) and not (b["type"] == "text" and not b["text"])

    # Pairing: what the input answered in the next turn, the output still does.
    def pairs(messages: list[dict[str, Any]]) -> set[tuple[str, str]]:
        out = set()
        for m, nxt in itertools.pairwise(messages):
            for u in (b for b in blocks(m) if m["role"] == "assistant" and b["type"] == "tool_use"):
                for r in blocks(nxt):
                    if nxt["role"] == "user" and r["type"] == "tool_result" and r.get("tool_use_id") == u.get("id"):
                        out.add((tokens(u, K)[0], tokens(r, R)[0]))
        return out

    kept = {t for m in after for b in blocks(m) for t in tokens(b, K) + tokens(b, R)}
    assert {(c, r) for c, r in pairs(before) if c in kept or r in kept} <= pairs(after)


def assert_valid_responses(before: list[dict[str, Any]], after: list[dict[str, Any]], steps: list[Any]) -> None:
    """Only stepped call/output items go, and a reasoning item whose calls all went; the rest stays in order."""
    stepped = {t for s in steps for t in tokens(s, K) + tokens(s, R)}
    owned = responses.CALLS | responses.RESULTS

    def is_stepped(it: dict[str, Any]) -> bool:
        return it["type"] in owned and bool(set(tokens(it, K) + tokens(it, R)) & stepped)

    expected = []
    for i, it in enumerate(before):
        if is_stepped(it):
            continue
        if it["type"] == "reasoning":
            j = i + 1
            while j < len(before) and before[j]["type"] == "reasoning":
                j += 1
            run = []
            while j < len(before) and before[j]["type"] in owned:
                run.append(before[j])
                j += 1
            calls = [x for x in run if x["type"] in responses.CALLS]
            if run and run[0]["type"] in responses.CALLS:
                if all(is_stepped(c) for c in calls):
                    continue  # it went with its calls
                if "id" in it:
                    assert not is_stepped(run[0]), "a reasoning item with an id lost the item it was followed by"
        expected.append(it)
    assert after == expected


def assert_valid_gemini(before: list[dict[str, Any]], after: list[dict[str, Any]], steps: list[Any]) -> None:
    stepped = {t for s in steps for t in tokens(s, K) + tokens(s, R)}

    def is_stepped(p: dict[str, Any]) -> bool:
        return ("functionCall" in p or "functionResponse" in p) and bool(set(tokens(p, K) + tokens(p, R)) & stepped)

    gone = set()
    for i, c in enumerate(before):
        if c["parts"] and all(is_stepped(p) or p.get("thought") is True for p in c["parts"]):
            gone.add(i)
        else:
            assert not any(is_stepped(p) and "thoughtSignature" in p for p in c["parts"]), "a signature torn away"
    assert all(c["parts"] for c in after), "a content without parts"
    roles = [c["role"] for c in after]
    assert all(a != b for a, b in itertools.pairwise(roles)), f"roles do not alternate: {roles}"
    if before[-1]["role"] == "user":
        assert after and roles[-1] == "user", roles
    source = [p for i, c in enumerate(before) if i not in gone for p in c["parts"] if not is_stepped(p)]
    assert [p for c in after for p in c["parts"]] == source


@each_dialect
@SETTINGS
@given(case=cases())
def test_rewritten_history_stays_valid_for_its_dialect(dialect: str, case: Case) -> None:
    o = outcome(dialect, case)
    module, _ = DIALECTS[dialect]
    before = o.body[module.ITEMS]
    if dialect == "chat":
        assert_valid_rewrite(o.items, before)
    elif dialect == "anthropic":
        assert_valid_anthropic(before, o.items, o.steps)
    elif dialect == "responses":
        assert_valid_responses(before, o.items, o.steps)
    else:
        assert_valid_gemini(before, o.items, o.steps)


# ---- a process rewrites many conversations ---------------------------------------------------------------


def _bash_call(token: str, id: str) -> Call:
    return Call(token, id, "Bash", {"command": f"echo {token}"}, True, "function")


def _ok(token: str, id: str) -> Result:
    return Result(token, id, f"{token} ok", False, BASH_RESULTS[0][2], "str", "function_call_output", False)


# A regression example (found by this test against an early memo.py): a result sent before any call with
# its id ("x"), then a call "x" answered again later. Alone, "x" is ambiguous (two results) and no step;
# after another conversation that shares the first two messages, the memo cut between them and stepped "x".
_SHARED = [Turn("user", "start"), Turn("results", results=[_ok("RR001", "x")])]
MEMO_A = Case([*_SHARED, Turn("calls", calls=[_bash_call("KK002", "x")])], CLAUDE)
MEMO_C = Case(
    [
        Turn("user", "start"),
        Turn("calls", calls=[_bash_call("KK003", "y")]),
        Turn("results", results=[_ok("RR004", "y")]),
        Turn("calls", calls=[_bash_call("KK005", "x")]),
        Turn("results", results=[_ok("RR006", "x")]),
    ],
    CLAUDE,
)


@each_dialect
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(a=MEMO_A, c=MEMO_C, cut=2)
@given(a=cases(), c=cases(), cut=st.integers(1, 12))
def test_a_conversation_rewrites_as_if_alone(dialect: str, a: Case, c: Case, cut: int) -> None:
    """A body that continues, or forks from, one rewritten before gives what it gives alone;
    also when it comes from another client than the first (the memo keeps decisions per client:
    one client's words must not decide for another)."""
    _, path = DIALECTS[dialect]
    first = orjson.dumps(RENDER[dialect](a)[0])
    b = orjson.dumps(RENDER[dialect](Case(a.turns[:cut] + c.turns[1:]))[0])
    memo = Memo()
    rewrite(first, path=path, memo=memo, client_hint=CLIENT_UA[a.client])
    after_a = rewrite(b, path=path, memo=memo, client_hint=CLIENT_UA[c.client])
    memo = Memo()
    alone = rewrite(b, path=path, memo=memo, client_hint=CLIENT_UA[c.client])
    assert (after_a.status, after_a.body, after_a.steps) == (alone.status, alone.body, alone.steps)


@each_dialect
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(a=MEMO_A, c=MEMO_C, cut=2)
@given(a=cases(), c=cases(), cut=st.integers(1, 12))
def test_a_conversation_reads_as_if_alone_through_a_light_memo(dialect: str, a: Case, c: Case, cut: int) -> None:
    """Observe mode (a light memo: no parsed history kept): the verdict on a body that continues,
    or forks from, one read before is the verdict it gets alone, and what it hands over is part
    of what a full read hands over."""
    _, path = DIALECTS[dialect]
    first = orjson.dumps(RENDER[dialect](a)[0])
    b = orjson.dumps(RENDER[dialect](Case(a.turns[:cut] + c.turns[1:]))[0])
    memo = Memo(light=True)
    rewrite(first, path=path, memo=memo, client_hint=CLIENT_UA[a.client], emit=False)
    after_a = rewrite(b, path=path, memo=memo, client_hint=CLIENT_UA[c.client], emit=False)
    alone = rewrite(b, path=path, memo=None, client_hint=CLIENT_UA[c.client], emit=False)
    assert (after_a.status, after_a.reason, after_a.summary()) == (alone.status, alone.reason, alone.summary())
    tools = Config().tool_kinds
    assert set(observed(after_a, tools)) <= set(observed(alone, tools))
    assert memo.errors == 0


@each_dialect
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(a=MEMO_A, c=MEMO_C, cut=2, style="python", light=False)
@example(a=MEMO_A, c=MEMO_C, cut=2, style="pretty", light=True)
@given(a=cases(), c=cases(), cut=st.integers(1, 12), style=st.sampled_from(sorted(ENCODINGS)), light=st.booleans())
def test_a_conversation_reads_as_if_alone_in_every_encoding(
    dialect: str, a: Case, c: Case, cut: int, style: str, light: bool
) -> None:
    """Issue 40: written in any client's style (Python's json.dumps, Go's escapes, pretty, a proxy
    that re-encodes some fields), a body that continues one read before, or forks from it, is
    resumed from its own bytes and gives what it gives alone: rewriting, the same body, steps,
    plan, accounting and summary (the golden digest); observing, the same verdict and no
    observation a full read does not make."""
    _, path = DIALECTS[dialect]
    encode = ENCODINGS[style]
    first = encode(RENDER[dialect](a)[0])
    grown = encode(RENDER[dialect](Case(a.turns + c.turns[1:]))[0])  # the same conversation, later
    forked = encode(RENDER[dialect](Case(a.turns[:cut] + c.turns[1:]))[0])
    tools = Config().tool_kinds
    for body in (grown, forked):
        memo = Memo(light=light)
        rewrite(first, path=path, memo=memo, client_hint=CLIENT_UA[a.client], emit=not light)
        after = rewrite(body, path=path, memo=memo, client_hint=CLIENT_UA[c.client], emit=not light)
        alone = rewrite(body, path=path, memo=None, client_hint=CLIENT_UA[c.client], emit=not light)
        if light:
            assert (after.status, after.reason, after.summary()) == (alone.status, alone.reason, alone.summary())
            assert set(observed(after, tools)) <= set(observed(alone, tools))
        else:
            assert outcome_digest(after) == outcome_digest(alone)
        assert memo.errors == 0
