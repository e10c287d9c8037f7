"""End to end for every dialect: a Claude Code session (Anthropic Messages) and a Codex CLI
session (OpenAI Responses) through a real mitmdump with the bridge, next to the chat session;
each sent with its client's User-Agent (a client's words count only for that client).

What the planner received is checked against expectations read off each session by hand
(which call has a result, which tool maps to which kind, the commands that failed), never
off the bridge's own output. Also: compressed bodies in every encoding a client sends,
``previous_response_id``, the dialect chosen by body shape on a neutral path or forced by
``bridge_dialect``, and bodies the bridge does not recognise.
"""

from __future__ import annotations

import gzip
import itertools
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import brotli
import orjson
import pytest
import zstandard
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS
from native_bridge.records import writer as records
from support import reference_planner
from support.histories.bundled import generator

from .conftest import CHAT, SESSION, Bridge, Exchange

pytestmark = pytest.mark.e2e

STEPS, DELTA = "additional_steps", "additional_steps_delta_start"
MESSAGES, RESPONSES = "/v1/messages", "/v1/responses"
NEUTRAL = "/api/generate"
SESSIONS = SESSION.parent
PATHS = {"chat": CHAT, "anthropic": MESSAGES, "responses": RESPONSES}
FILES = {
    "chat": SESSION,
    "anthropic": SESSIONS / "anthropic_session.json",
    "responses": SESSIONS / "responses_session.json",
}
# The user agent of each session's client (Claude Code for the chat and Anthropic sessions, Codex CLI).
CLAUDE_UA = "claude-cli/2.1.332 (external, cli)"
CODEX_UA = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"
UA = {"chat": {"user-agent": CLAUDE_UA}, "anthropic": {"user-agent": CLAUDE_UA}, "responses": {"user-agent": CODEX_UA}}

# Claude Code src/utils/messages.ts REJECT_MESSAGE (its start).
REJECTED = "The user doesn't want to proceed with this tool use."
# The run_command steps of the Anthropic session, in order: (command line, exit code or None when absent).
A_RENDER = (
    "python -m burndown render /home/dev/src/burndown/data/sprint14.csv --start 2025-11-10 --end 2025-11-21 "
    "--out /tmp/s14.png"
)
A_TESTS = ".venv/bin/python -m pytest -q tests/test_dates.py"
A_RUN_COMMANDS = [
    ("python -m pytest -q tests/test_dates.py", None),
    (A_RENDER, 1),  # "Exit code 1" + is_error: ModuleNotFoundError
    (".venv/bin/" + A_RENDER, None),
    ("grep -E 'BD-10[1478]|^key' /home/dev/src/burndown/data/sprint14.csv", None),
    # (A_TESTS, 1) of message 33 stays a message: see A_PINNED.
    (".venv/bin/pip install -q tzdata", None),  # "(Bash completed with no output)"
    (
        ".venv/bin/python -m burndown render /home/dev/src/burndown/data/sprint15.csv --start 2025-11-24 "
        "--end 2025-12-05",
        2,  # "Exit code 2" + is_error: argparse
    ),
    (A_TESTS, None),
    (".venv/bin/" + A_RENDER, None),
    ("git diff --stat", None),
    ("git status --short", None),
]
# Pairs kept as messages for the request's validity (truth rule 6), read off the session by hand:
# message 33 (Bash: the failing test run) and its result (34) are a whole round; taking them out
# would merge assistant message 31 (text, no thinking) with 35 (thinking first): the merged turn
# would have a thinking block after other content, which the Messages API refuses.
A_PINNED = {"toolu_01Fu2Oef2vG9VwUChgpmcVnf"}
A_NOT_STEPS = {  # commands that must not become steps, and why
    "git stash && git checkout main": "rejected by the user",
    "python -m http.server 8123 -d /tmp": "run in the background",
    ".venv/bin/python -m pytest -q": "no result (the user interrupted it)",
}

# The run_command steps of the Codex session, in order.
R_RUN_COMMANDS = [
    ("bash -lc 'rg --files'", 0),  # shell: JSON metadata.exit_code
    ("bash -lc 'rg -n '\"'\"'Split\\('\"'\"' -g '\"'\"'*.go'\"'\"''", 0),
    ("go run ./cmd/ledger split 10.00 3", 0),  # shell_command: "Exit code: 0" header
    ("bash -lc 'go test ./...'", 1),
    ("./scripts/check.sh", 0),  # header 0 wins over "exit code 3" in the script's own log
    ("go test ./internal/money -run TestSplit -v", 0),  # exec_command: "Process exited with code 0"
    ("bash -lc 'curl -s '\"'\"'127.0.0.1:8089/split?amount=10.00&n=3'\"'\"''", 0),  # local_shell_call
    ("bash -lc 'go test -tags integration ./...'", 124),  # timeout
    ("bash -lc 'go vet ./... && ./bin/fuzz-split -n 200000'", 1),  # "execution error: Sandbox(Signal(9))"
    ("bash -lc 'go vet ./...'", 0),
    ("go test ./internal/money", 1),  # exec_command: "Process exited with code 1"
    ("git diff --stat", 0),
    ("go test ./internal/money -run TestSplit", 0),
]
R_NOT_STEPS = {
    "go run ./cmd/ledger serve --addr 127.0.0.1:8089": "still running (Process running with session ID)",
    "go test -race ./internal/...": "rejected by the user",
}
R_OWNED = {"function_call", "custom_tool_call", "local_shell_call", "shell_call"}
R_OWNED |= {t + "_output" for t in R_OWNED}


@pytest.fixture(scope="module", autouse=True)
def planner_reads_brotli() -> Iterator[None]:
    """The reference planner decodes gzip, deflate and zstd; teach it br for this module."""
    added = "br" not in reference_planner._DECODERS
    if added:
        reference_planner._DECODERS["br"] = brotli.decompress
    yield
    if added:
        reference_planner._DECODERS.pop("br", None)


# ---- reading the sessions ---------------------------------------------------------------


def raw_of(dialect: str) -> bytes:
    return FILES[dialect].read_bytes()


def doc_of(dialect: str) -> dict[str, Any]:
    return orjson.loads(raw_of(dialect))


def blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    c = m["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else c


def a_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages if m["role"] == "assistant" for b in blocks(m) if b["type"] == "tool_use"]


def a_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages if m["role"] == "user" for b in blocks(m) if b["type"] == "tool_result"]


def a_ids(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for c in a_calls(messages)} | {r["tool_use_id"] for r in a_results(messages)}


def a_text(result: dict[str, Any]) -> str | None:
    """A tool_result's content as text; None when a block is not text (an image)."""
    c = result["content"]
    if isinstance(c, str):
        return c
    return None if any(b["type"] != "text" for b in c) else "\n".join(b["text"] for b in c)


def a_special(doc: dict[str, Any]) -> dict[str, set[str]]:
    """The ids that must stay messages, each found from the session's own content."""
    msgs = doc["messages"]
    calls = a_calls(msgs)
    result_of = {r["tool_use_id"]: r for r in a_results(msgs)}
    text_of = {i: a_text(r) for i, r in result_of.items()}
    return {
        "unmapped": {c["id"] for c in calls if c["name"] not in DEFAULT_TOOL_KINDS},
        "unobserved": {c["id"] for c in calls if c["id"] not in result_of},
        "image": {i for i, t in text_of.items() if t is None},
        "rejected": {i for i, r in result_of.items() if r.get("is_error") and text_of[i].startswith(REJECTED)},
        "tool_use_error": {
            i for i, r in result_of.items() if r.get("is_error") and text_of[i].startswith("<tool_use_error>")
        },
        "background": {c["id"] for c in calls if c["input"].get("run_in_background")},
        "validity": set(A_PINNED),
        # No words of Claude Code say these succeeded (core/rules/CLIENTS.md, "Success evidence"): its WebFetch
        # (a model's summary of the page) and a content-mode Grep (the matching lines, bare).
        "no_words": {
            c["id"]
            for c in calls
            if c["name"] == "WebFetch" or (c["name"] == "Grep" and c["input"].get("output_mode") == "content")
        },
    }


def r_items(doc: dict[str, Any], *types: str) -> list[dict[str, Any]]:
    return [it for it in doc["input"] if it.get("type") in types]


def r_special(doc: dict[str, Any]) -> dict[str, set[str]]:
    outputs = {it["call_id"]: it["output"] for it in r_items(doc, *(t for t in R_OWNED if t.endswith("_output")))}
    calls = r_items(doc, "function_call", "custom_tool_call", "local_shell_call")
    name = lambda it: it.get("name") or "local_shell"  # noqa: E731
    return {
        "unmapped": {it["call_id"] for it in calls if name(it) not in DEFAULT_TOOL_KINDS},
        "running": {i for i, out in outputs.items() if "\nProcess running with session ID " in out},
        "rejected": {i for i, out in outputs.items() if out == "exec command rejected by user"},
        # Codex's non-shell results carry no words of success (its read_file returns the lines as
        # they are: core/rules/CLIENTS.md, "Success evidence"), so only its shell pairs become steps.
        "no_words": {
            it["call_id"]
            for it in calls
            if name(it) in DEFAULT_TOOL_KINDS and DEFAULT_TOOL_KINDS[name(it)] != "run_command"
        },
    }


def kept_ids(special: dict[str, set[str]]) -> set[str]:
    return set().union(*special.values())


def run_commands(steps: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(s["runCommand"]["commandLine"], s["runCommand"].get("exitCode")) for s in steps if "runCommand" in s]


def step_type(name: str) -> str:
    return "CORTEX_STEP_TYPE_" + DEFAULT_TOOL_KINDS[name].upper()


# ---- validity of a rewritten history, per dialect -----------------------------------------


def anthropic_problems(before: list[dict[str, Any]], after: list[dict[str, Any]], stepped: set[str]) -> list[str]:
    """Why ``after`` is not ``before`` minus the ``stepped`` tool blocks as a valid Messages history."""
    problems = []
    for i, m in enumerate(after):
        if m.get("role") not in ("user", "assistant"):
            problems.append(f"messages[{i}]: role {m.get('role')!r}")
        if m.get("content") in ("", [], None):
            problems.append(f"messages[{i}]: empty content")
    roles = [m["role"] for m in after]
    if roles != ["user", "assistant"] * (len(roles) // 2) + ["user"] * (len(roles) % 2):
        problems.append(f"roles do not alternate from user: {roles}")

    if before[-1]["role"] == "user" and roles[-1:] != ["user"]:
        problems.append("the request no longer ends on the user's turn")

    # Every block in place: the blocks of the input, minus the stepped tool blocks (and a turn that
    # held nothing else but the thinking that led to them), in order, untouched.
    def is_stepped(b: dict[str, Any]) -> bool:
        return (b["type"] == "tool_use" and b["id"] in stepped) or (
            b["type"] == "tool_result" and b["tool_use_id"] in stepped
        )

    def goes(bs: list[dict[str, Any]]) -> bool:
        def led_to(j: int) -> dict[str, Any]:
            return next((x for x in bs[j:] if x["type"] != "thinking"), {"type": "none"})

        return all(is_stepped(b) or (b["type"] == "thinking" and is_stepped(led_to(j))) for j, b in enumerate(bs))

    dropped = {i for i, m in enumerate(before) if goes(blocks(m))}
    source = [
        (i, m["role"], b) for i, m in enumerate(before) if i not in dropped for b in blocks(m) if not is_stepped(b)
    ]
    flat = [(m["role"], b) for m in after for b in blocks(m)]
    if flat != [(role, b) for _, role, b in source]:
        problems.append("the kept blocks are not the input's blocks, in order and untouched")
        return problems
    for j, m in enumerate(after):
        bs = blocks(m)
        if any(b["type"] == "thinking" for b in bs) and bs[0]["type"] != "thinking":
            problems.append(f"messages[{j}]: a thinking block after other content")
    # Merged only where a removal made two same-role turns neighbours.
    k = 0
    for j, m in enumerate(after):
        origins = sorted({source[k + n][0] for n in range(len(blocks(m)))})
        k += len(blocks(m))
        for a, b in itertools.pairwise(origins):
            if not set(range(a + 1, b)) <= dropped or a + 1 == b:
                problems.append(f"messages[{j}] merges input turns {a} and {b} that no removal brought together")
    # Pairing: a kept tool_use answered in the next turn still is, and the other way round.
    for j, m in enumerate(after):
        if m["role"] != "assistant":
            continue
        nxt = after[j + 1] if j + 1 < len(after) else {"content": []}
        answered = {b["tool_use_id"] for b in blocks(nxt) if b["type"] == "tool_result"}
        for b in blocks(m):
            if b["type"] == "tool_use" and b["id"] not in answered and answered_in_input(before, b["id"]):
                problems.append(f"kept tool_use {b['id']} lost its tool_result in the next turn")
    for j, m in enumerate(after):
        prev = after[j - 1] if j else {"content": []}
        asked = {b["id"] for b in blocks(prev) if b["type"] == "tool_use"}
        for b in blocks(m):
            if b["type"] == "tool_result" and b["tool_use_id"] not in asked:
                problems.append(f"kept tool_result {b['tool_use_id']} lost its tool_use in the previous turn")
    return problems


def answered_in_input(before: list[dict[str, Any]], call_id: str) -> bool:
    for i, m in enumerate(before[:-1]):
        if any(b["type"] == "tool_use" and b["id"] == call_id for b in blocks(m)):
            return any(b["type"] == "tool_result" and b["tool_use_id"] == call_id for b in blocks(before[i + 1]))
    return False


# ---- the main exchanges: each session through its own path --------------------------------


@pytest.fixture(scope="module")
def mains(bridge: Bridge) -> dict[str, tuple[Exchange, dict[str, Any], bytes]]:
    """Each session sent once, uncompressed: (exchange, what the planner got, its body bytes)."""
    out = {}
    for dialect, path in PATHS.items():
        ex = bridge.send("POST", path, raw_of(dialect), UA[dialect])
        got = bridge.upstream(ex)
        if ex.response.status_code != 200 or got.errors or got.body is None:
            bridge.fail(f"{dialect}: the planner answered {ex.response.status_code} {got.errors}")
        out[dialect] = (ex, orjson.loads(got.body), got.body)
    return out


@pytest.mark.parametrize("name", ["anthropic", "responses"])
def test_session_is_what_its_generator_makes(name: str) -> None:
    assert generator(name).render() == raw_of(name)
    assert len(raw_of(name)) < 80_000


def test_anthropic_session_holds_what_claude_code_sends() -> None:
    doc = doc_of("anthropic")
    msgs = doc["messages"]
    assert all(b.get("cache_control") == {"type": "ephemeral"} for b in doc["system"])
    assert doc["tools"] and all("input_schema" in t for t in doc["tools"])
    assert len([m for m in msgs if any(b["type"] == "tool_use" for b in blocks(m))]) >= 20
    assert any(len([b for b in blocks(m) if b["type"] == "tool_use"]) > 1 for m in msgs), "parallel calls"
    thinking = [b for m in msgs for b in blocks(m) if b["type"] == "thinking"]
    assert thinking and all(b["signature"] for b in thinking)
    assert {type(r["content"]) for r in a_results(msgs)} == {str, list}
    assert all(len(v) == 1 for k, v in a_special(doc).items() if k not in ("unmapped", "no_words")), a_special(doc)
    assert {c["name"] for c in a_calls(msgs) if c["id"] in a_special(doc)["no_words"]} == {"Grep", "WebFetch"}
    assert {c["name"] for c in a_calls(msgs) if c["id"] in a_special(doc)["unmapped"]} == {
        "TodoWrite",
        "BashOutput",
        "KillShell",
    }
    assert any(
        b["type"] == "text" and b["text"].startswith("<system-reminder>")
        for m in msgs
        if any(x["type"] == "tool_result" for x in blocks(m))
        for b in blocks(m)
    ), "a results turn carrying a system-reminder"
    assert msgs[-1]["role"] == "user" and blocks(msgs[-1])[-1]["cache_control"] == {"type": "ephemeral"}
    assert [b["type"] for b in blocks(msgs[-1])] == ["tool_result"] * 3 + ["text"], "ends with a pending round"


def test_responses_session_holds_what_codex_sends() -> None:
    doc = doc_of("responses")
    assert doc["instructions"] and doc["include"] == ["reasoning.encrypted_content"]
    types = [it["type"] for it in doc["input"]]
    for t in ("reasoning", "message", "function_call", "function_call_output", "custom_tool_call"):
        assert t in types
    assert "local_shell_call" in types
    assert all(it["encrypted_content"] for it in r_items(doc, "reasoning"))
    names = {it["name"] for it in r_items(doc, "function_call")}
    assert {"shell", "shell_command", "exec_command", "write_stdin", "update_plan"} <= names
    roles = {it["role"] for it in r_items(doc, "message")}
    assert roles == {"developer", "user", "assistant"}
    assert all(len(v) == 1 for k, v in r_special(doc).items() if k != "unmapped")
    pending = ["reasoning", "function_call", "reasoning", "function_call", *["function_call_output"] * 2]
    assert types[-6:] == pending, "ends with a pending round, reasoning between its calls"


# ---- Anthropic Messages ------------------------------------------------------------------------


def test_anthropic_observed_pairs_became_done_steps(mains: dict[str, Any]) -> None:
    doc, after = doc_of("anthropic"), mains["anthropic"][1]
    kept = kept_ids(a_special(doc))
    want = [c for c in a_calls(doc["messages"]) if c["id"] not in kept]
    steps = after[STEPS]
    assert reference_planner.validate_steps(after) == [], "each step decodes as a DONE CortexTrajectoryStep"
    assert [s["type"] for s in steps] == [step_type(c["name"]) for c in want]
    assert {s["status"] for s in steps} == {"CORTEX_STEP_STATUS_DONE"}
    text_of = {r["tool_use_id"]: a_text(r) for r in a_results(doc["messages"])}
    for s, c in zip(steps, want, strict=True):
        if "viewFile" in s:  # string and array content alike
            assert s["viewFile"]["absolutePathUri"] == "file://" + c["input"]["file_path"]
            assert s["viewFile"]["content"] == text_of[c["id"]]
        if "runCommand" in s:
            assert s["runCommand"]["commandLine"] == c["input"]["command"]
            assert s["runCommand"]["combinedOutput"]["full"] == text_of[c["id"]]
        if "grepSearchV2" in s:
            assert s["grepSearchV2"]["rawOutput"] == text_of[c["id"]]


def test_anthropic_failed_commands_carry_their_true_exit_code(mains: dict[str, Any]) -> None:
    steps = mains["anthropic"][1][STEPS]
    assert run_commands(steps) == A_RUN_COMMANDS
    assert [s for s in steps if "stdout" in s.get("runCommand", {})] == [], "output travels once, in combinedOutput"


def test_anthropic_no_step_for_rejected_background_or_unobserved_calls(mains: dict[str, Any]) -> None:
    doc = doc_of("anthropic")
    commands = {c for c, _ in run_commands(mains["anthropic"][1][STEPS])}
    assert not commands & set(A_NOT_STEPS)
    # Those commands are the session's rejected, backgrounded and unanswered calls.
    special = a_special(doc)
    by_id = {c["id"]: c for c in a_calls(doc["messages"])}
    ids = special["rejected"] | special["background"] | special["unobserved"]
    assert {by_id[i]["input"]["command"] for i in ids} == set(A_NOT_STEPS)


def test_anthropic_history_stays_valid(mains: dict[str, Any]) -> None:
    doc, after = doc_of("anthropic"), mains["anthropic"][1]
    special = a_special(doc)
    kept = kept_ids(special)
    assert a_ids(after["messages"]) == kept, "exactly the special cases remain as tool_use/tool_result"
    stepped = a_ids(doc["messages"]) - kept
    assert anthropic_problems(doc["messages"], after["messages"], stepped) == []
    # Every kept tool_use has its tool_result in the next user turn, but the one the client never answered.
    msgs = after["messages"]
    unanswered = {
        b["id"]
        for m, nxt in itertools.pairwise(msgs)
        if m["role"] == "assistant"
        for b in blocks(m)
        if b["type"] == "tool_use"
        and b["id"] not in {r["tool_use_id"] for r in blocks(nxt) if r["type"] == "tool_result"}
    }
    assert unanswered == special["unobserved"]
    # The system-reminder blocks all made it, untouched; the thinking blocks (with their signatures) did,
    # but for those whose turn went whole with the calls they led to.
    for pick in (
        lambda b: b["type"] == "text" and b["text"].startswith("<system-reminder>"),
        lambda b: b["type"] == "tool_result" and a_text(b) is None,  # the image result
    ):
        before_blocks = [b for m in doc["messages"] for b in blocks(m) if pick(b)]
        assert before_blocks and [b for m in after["messages"] for b in blocks(m) if pick(b)] == before_blocks
    stepped_ids = a_ids(doc["messages"]) - kept
    led = [  # thinking blocks of turns that held only them and stepped calls
        b
        for m in doc["messages"]
        if m["role"] == "assistant" and all(x["type"] == "thinking" or x.get("id") in stepped_ids for x in blocks(m))
        for b in blocks(m)
        if b["type"] == "thinking"
    ]
    thinking = [b for m in doc["messages"] for b in blocks(m) if b["type"] == "thinking"]
    assert led and [b for m in after["messages"] for b in blocks(m) if b["type"] == "thinking"] == [
        b for b in thinking if not any(b is x for x in led)
    ]
    # Everything but the messages is the client's own.
    rest = lambda d: {k: v for k, v in d.items() if k not in ("messages", STEPS, DELTA)}  # noqa: E731
    assert rest(after) == rest(doc)


def test_anthropic_delta_start_is_the_pending_round(mains: dict[str, Any]) -> None:
    steps, delta = mains["anthropic"][1][STEPS], mains["anthropic"][1][DELTA]
    # The last round: KillShell (unmapped, stays a message), git diff --stat, git status --short; its user
    # turn carries a system-reminder after the results and still counts as the round's results.
    assert steps[delta:] == [s for s in steps if "runCommand" in s][-2:]
    assert [c for c, _ in run_commands(steps[delta:])] == ["git diff --stat", "git status --short"]


def test_anthropic_record(mains: dict[str, Any], bridge: Bridge) -> None:
    ex, after, _ = mains["anthropic"]
    doc = doc_of("anthropic")
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["dialect"], rec["notes"]) == ("rewritten", "anthropic", [])
    assert rec["url"].endswith(MESSAGES)
    # (Thinking signatures aside: see test_anthropic_record_keeps_thinking_signatures.)
    assert unsigned(rec["before"]) == unsigned(doc)
    assert unsigned(records.after_doc(rec)) == unsigned(after)
    assert records.steps_of(rec) == after[STEPS]
    special = a_special(doc)
    kept = {(p["item"], p["id"]): p["kept"] for p in rec["accounting"] if "kept" in p}
    untranslatable = special["image"] | special["rejected"] | special["tool_use_error"] | special["background"]
    untranslatable |= special["no_words"]
    assert kept == (
        {(item, i): "unmapped" for i in special["unmapped"] for item in ("call", "result")}
        | {("call", i): "unobserved" for i in special["unobserved"]}
        | {(item, i): "untranslatable" for i in untranslatable for item in ("call", "result")}
        | {(item, i): "validity" for i in special["validity"] for item in ("call", "result")}
    )
    s = rec["summary"]
    assert (s["steps"], s["delta_start"], s["failed_exit_codes"]) == (
        len(after[STEPS]),
        after[DELTA],
        [c for _, c in A_RUN_COMMANDS if c],
    )


def unsigned(doc: dict[str, Any]) -> dict[str, Any]:
    """The body without the signatures of its thinking blocks (any dialect)."""
    if "messages" not in doc or not any(isinstance(m["content"], list) for m in doc["messages"]):
        return doc
    strip = lambda b: {k: v for k, v in b.items() if k != "signature"} if b["type"] == "thinking" else b  # noqa: E731
    return doc | {"messages": [m | {"content": [strip(b) for b in blocks(m)]} for m in doc["messages"]]}


def test_anthropic_record_keeps_thinking_signatures(mains: dict[str, Any], bridge: Bridge) -> None:
    ex, after, _ = mains["anthropic"]
    _, rec = bridge.record(ex)
    signatures = lambda d: [b["signature"] for m in d["messages"] for b in blocks(m) if b["type"] == "thinking"]  # noqa: E731
    assert signatures(rec["before"]) == signatures(doc_of("anthropic"))
    assert signatures(records.after_doc(rec)) == signatures(after)


# ---- OpenAI Responses (Codex CLI) ---------------------------------------------------------------


def test_responses_observed_pairs_became_done_steps(mains: dict[str, Any]) -> None:
    doc, after = doc_of("responses"), mains["responses"][1]
    kept = kept_ids(r_special(doc))
    calls = [it for it in r_items(doc, "function_call", "custom_tool_call", "local_shell_call")]
    want = [it for it in calls if it["call_id"] not in kept]
    steps = after[STEPS]
    assert reference_planner.validate_steps(after) == [], "each step decodes as a DONE CortexTrajectoryStep"
    assert [s["type"] for s in steps] == [step_type(it.get("name", "local_shell")) for it in want]
    assert {s["status"] for s in steps} == {"CORTEX_STEP_STATUS_DONE"}
    assert run_commands(steps) == R_RUN_COMMANDS
    assert [s for s in steps if "stdout" in s.get("runCommand", {})] == []
    # The `shell` JSON wrapper is the client's frame: the step carries the program's output only.
    outputs = {it["call_id"]: it["output"] for it in r_items(doc, "function_call_output")}
    for s, it in zip(steps, want, strict=True):
        out = outputs[it["call_id"]]
        if it.get("name") in ("shell", None) and out.startswith("{"):
            assert s["runCommand"]["combinedOutput"].get("full", "") == orjson.loads(out)["output"]
            assert s["runCommand"]["cwd"] == "/home/dev/src/ledger"
        elif "runCommand" in s:
            assert s["runCommand"]["combinedOutput"]["full"] == out
    # Codex's read_file: the file's lines as they are, no words of success, so it stays a message.
    assert [s for s in steps if "viewFile" in s] == []
    (read,) = [it for it in calls if it.get("name") == "read_file"]
    assert read["call_id"] in r_special(doc)["no_words"]


def test_responses_no_step_for_rejected_or_running_commands(mains: dict[str, Any]) -> None:
    commands = {c for c, _ in run_commands(mains["responses"][1][STEPS])}
    assert not {c for c in commands for bad in R_NOT_STEPS if bad in c}


def test_responses_history_stays_valid(mains: dict[str, Any]) -> None:
    doc, after = doc_of("responses"), mains["responses"][1]
    kept = kept_ids(r_special(doc))
    owned = lambda it: it.get("type") in R_OWNED  # noqa: E731
    stays = lambda it: not owned(it) or it["call_id"] in kept  # noqa: E731
    # Exactly the stepped call/output items are gone, and each reasoning item whose response's calls
    # all went (Codex sends no item ids: with some call of its response kept, a reasoning item stays,
    # followed by a call of its own); everything else stays, in order, untouched.
    items = doc["input"]
    gone_reasoning = set()
    for i, it in enumerate(items):
        if it.get("type") == "reasoning" and i + 1 < len(items) and owned(items[i + 1]):
            j = i + 1
            while j < len(items) and owned(items[j]):
                j += 1
            if not any(stays(x) for x in items[i + 1 : j]):
                gone_reasoning.add(i)
    # By hand: every response whose calls all became steps. Item 7 stays: its response (items 8-11) ends
    # with the read_file call, which stays a message.
    assert gone_reasoning == {4, 15, 18, 21, 54, 56}, "by hand: every response whose calls all became steps"
    assert after["input"] == [it for i, it in enumerate(items) if stays(it) and i not in gone_reasoning]
    for i in kept:  # every kept pair: its call, then its output
        pair = [it["type"] for it in after["input"] if owned(it) and it["call_id"] == i]
        assert len(pair) == 2 and pair[1] in (pair[0] + "_output", "function_call_output"), pair
    (patch,) = r_items(after, "custom_tool_call")
    assert patch["name"] == "apply_patch" and patch["input"].startswith("*** Begin Patch")
    rest = lambda d: {k: v for k, v in d.items() if k not in ("input", STEPS, DELTA)}  # noqa: E731
    assert rest(after) == rest(doc)


def test_responses_delta_start_is_the_pending_round(mains: dict[str, Any]) -> None:
    steps, delta = mains["responses"][1][STEPS], mains["responses"][1][DELTA]
    # The last model response: reasoning, shell_command, reasoning, exec_command; then both outputs.
    assert [c for c, _ in run_commands(steps[delta:])] == ["git diff --stat", "go test ./internal/money -run TestSplit"]
    assert delta == len(steps) - 2


def test_responses_record(mains: dict[str, Any], bridge: Bridge) -> None:
    ex, after, _ = mains["responses"]
    doc = doc_of("responses")
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["dialect"], rec["notes"]) == ("rewritten", "responses", [])
    assert rec["before"] == doc and records.after_doc(rec) == after
    special = r_special(doc)
    kept = {(p["item"], p["id"]): p["kept"] for p in rec["accounting"] if "kept" in p}
    assert kept == (
        {(item, i): "unmapped" for i in special["unmapped"] for item in ("call", "result")}
        | {
            (item, i): "untranslatable"
            for i in special["running"] | special["rejected"] | special["no_words"]
            for item in ("call", "result")
        }
    )
    assert rec["summary"]["failed_exit_codes"] == [c for _, c in R_RUN_COMMANDS if c]


def pending_items(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The session's last model response and its outputs (after the last user message)."""
    last_user = max(i for i, it in enumerate(doc["input"]) if it.get("role") == "user")
    return doc["input"][last_user + 1 :]


def test_responses_previous_response_id_input_is_the_delta(bridge: Bridge) -> None:
    doc = doc_of("responses")
    # A resumed conversation: the server holds the earlier items, the client sends the new round.
    new = {k: v for k, v in doc.items() if k != "prompt_cache_key"} | {
        "previous_response_id": "resp_0199b2f47c3e",
        "store": True,
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
            *pending_items(doc),
        ],
    }
    ex = bridge.send("POST", RESPONSES, orjson.dumps(new), UA["responses"])
    got = bridge.upstream(ex)
    after = orjson.loads(got.body)
    assert [c for c, _ in run_commands(after[STEPS])] == ["git diff --stat", "go test ./internal/money -run TestSplit"]
    assert after[DELTA] == 0, "with previous_response_id every step is new"
    assert after["previous_response_id"] == new["previous_response_id"]
    _, rec = bridge.record(ex)
    assert rec["status"] == "rewritten" and rec["summary"]["delta_start"] == 0
    assert len(rec["notes"]) == 1 and "previous_response_id" in rec["notes"][0] and "delta" in rec["notes"][0]


def test_responses_previous_response_id_with_only_outputs_passes(bridge: Bridge) -> None:
    doc = doc_of("responses")
    # The usual resumed request: only the outputs; their calls are in the server's previous response.
    outputs = r_items({"input": pending_items(doc)}, "function_call_output")
    body = orjson.dumps({"model": doc["model"], "previous_response_id": "resp_0199b2f4", "input": outputs})
    ex = bridge.send("POST", RESPONSES, body, UA["responses"])
    assert bridge.upstream(ex).raw == body, "outputs without their calls are orphans: nothing to step"
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["dialect"]) == ("unchanged", "responses")
    assert any("previous_response_id" in n for n in rec["notes"])
    assert {p["kept"] for p in rec["accounting"]} == {"orphan"}


# ---- compressed bodies ------------------------------------------------------------------------

Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes], bytes]
ENCODINGS: dict[str, Codec] = {
    "gzip": (lambda b: gzip.compress(b, mtime=0), gzip.decompress, b"\x1f\x8b"),
    "deflate": (zlib.compress, zlib.decompress, b"\x78"),
    "br": (brotli.compress, brotli.decompress, b""),
    "zstd": (
        lambda b: zstandard.ZstdCompressor().compress(b),
        lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b),
        b"\x28\xb5\x2f\xfd",
    ),
}


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("dialect", sorted(PATHS))
def test_compressed_body_is_rewritten_and_reencoded(
    dialect: str, encoding: str, bridge: Bridge, mains: dict[str, Any]
) -> None:
    compress, decompress, magic = ENCODINGS[encoding]
    ex = bridge.send("POST", PATHS[dialect], compress(raw_of(dialect)), {"content-encoding": encoding} | UA[dialect])
    assert ex.response.status_code == 200, ex.response.text
    got = bridge.upstream(ex)
    assert got.header("content-encoding") == encoding
    assert got.header("content-length") == str(len(got.raw))
    assert got.raw.startswith(magic)
    # The same rewrite as the uncompressed request, byte for byte.
    assert decompress(got.raw) == mains[dialect][2]
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["dialect"]) == ("rewritten", dialect)
    assert unsigned(rec["before"]) == unsigned(doc_of(dialect))


# ---- choosing the dialect ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def neutral(start_bridge: Callable[..., Bridge]) -> Bridge:
    """A bridge that selects only a path naming no dialect: the body's shape must decide."""
    return start_bridge("--set", f"bridge_filter=~m POST & ~u {NEUTRAL}", barrier_path=NEUTRAL)


@pytest.fixture(scope="module")
def forced(start_bridge: Callable[..., Bridge]) -> Bridge:
    return start_bridge("--set", "bridge_dialect=anthropic")


@pytest.mark.parametrize("dialect", sorted(PATHS))
def test_dialect_is_chosen_by_body_shape_on_a_neutral_path(
    dialect: str, neutral: Bridge, mains: dict[str, Any]
) -> None:
    ex = neutral.send("POST", NEUTRAL, raw_of(dialect), UA[dialect])
    got = neutral.upstream(ex)
    assert got.body == mains[dialect][2], "the same rewrite as through the dialect's own path"
    _, rec = neutral.record(ex)
    assert (rec["status"], rec["dialect"]) == ("rewritten", dialect)


def test_unrecognised_json_on_a_selected_path_passes_and_is_recorded_skipped(neutral: Bridge) -> None:
    # An Ollama /api/generate body: JSON, and it mentions a tool call, but it holds no chat history.
    body = orjson.dumps(
        {
            "model": "qwen2.5-coder:7b",
            "prompt": "Explain what a function_call item in the Responses API is.",
            "stream": False,
            "options": {"temperature": 0.2},
        }
    )
    ex = neutral.send("POST", NEUTRAL, body)
    got = neutral.upstream(ex)
    assert got.raw == body
    assert ex.response.content == got.reply
    _, rec = neutral.record(ex)
    assert (rec["status"], rec["dialect"]) == ("skipped", None)
    assert rec["reason"] == "body is not a chat request of a known dialect"
    assert records.after_doc(rec) is None and rec["steps"] == []


def test_unrecognised_json_on_a_dialect_path_passes_and_is_recorded_skipped(bridge: Bridge) -> None:
    # A legacy Text Completions body sent to /v1/messages: no 'messages' list.
    body = orjson.dumps(
        {
            "model": "claude-2.1",
            "prompt": "\n\nHuman: what is a tool_use block?\n\nAssistant:",
            "max_tokens_to_sample": 256,
        }
    )
    ex = bridge.send("POST", MESSAGES, body)
    assert bridge.upstream(ex).raw == body
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["dialect"], rec["reason"]) == ("skipped", "anthropic", "'messages' is not a list")


def test_forced_dialect_wins_over_the_path(forced: Bridge, mains: dict[str, Any]) -> None:
    # An Anthropic body on a Chat Completions path: read as Anthropic because the option says so.
    ex = forced.send("POST", CHAT, raw_of("anthropic"), UA["anthropic"])
    got = forced.upstream(ex)
    assert got.body == mains["anthropic"][2]
    assert ex.response.content == got.reply
    _, rec = forced.record(ex)
    assert (rec["status"], rec["dialect"]) == ("rewritten", "anthropic")


def test_forced_dialect_refuses_a_body_of_another_dialect(forced: Bridge) -> None:
    # The chat session read as Anthropic: its assistant turns have content null, so it is not one.
    ex = forced.send("POST", CHAT, raw_of("chat"))
    assert forced.upstream(ex).raw == raw_of("chat")
    _, rec = forced.record(ex)
    assert (rec["status"], rec["dialect"]) == ("skipped", "anthropic")
    assert re.fullmatch(r"message \d+: content is neither a string nor a list", rec["reason"]), rec["reason"]


def test_token_counting_is_not_selected(bridge: Bridge) -> None:
    # Claude Code sends the same body to count_tokens; the default filter leaves it alone.
    ex = bridge.send("POST", MESSAGES + "/count_tokens", raw_of("anthropic"))
    assert bridge.upstream(ex).raw == raw_of("anthropic")
    bridge.barrier()
    assert bridge.records_of(ex, timeout=0) == []


def test_the_files_are_where_the_generators_write_them() -> None:
    for name in ("anthropic", "responses"):
        assert FILES[name] == generator(name).OUT


# ---- Gemini API (Gemini CLI) ------------------------------------------------------------------

GEMINI = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
G_SIG = "CiQBVKhc7Mz1Q2l0aG91Z2h0c2lnbmF0dXJl"
G_HEADERS = {"user-agent": "GeminiCLI/0.9.0 (linux; x64)", "x-goog-api-client": "gl-node/22.17.0"}
G_CANCELLED = "[Operation Cancelled] Reason: User did not allow tool call"  # scheduler/state-manager.ts


def g_shell_result(command: str, output: str, code: int) -> str:
    """Gemini CLI's run_shell_command result (packages/core/src/tools/shell.ts): an Exit Code line
    only when the code is not 0."""
    exit_line = f"Exit Code: {code}\n" if code else ""
    return (
        f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\n{exit_line}"
        "Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 81234"
    )


def g_call(id: str | None, name: str, sig: str | None = None, **args: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args} | ({"id": id} if id else {})}
    return part | ({"thoughtSignature": sig} if sig else {})


def g_res(id: str | None, name: str, **response: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": response} | ({"id": id} if id else {})}


def gemini_session() -> dict[str, Any]:
    """A Gemini CLI session, as it sends it: ids on calls and responses, the turn's thought
    signature on its first call, results as {"output"} or {"error"}, same-role contents coalesced."""
    contents = [
        {"role": "user", "parts": [{"text": "Why do the tests fail?"}]},
        {"role": "model", "parts": [g_call("gc-1", "run_shell_command", G_SIG, command="npm test")]},
        {"role": "user", "parts": [g_res("gc-1", "run_shell_command",
                                         output=g_shell_result("npm test", "1 failing", 1))]},
        {"role": "model", "parts": [g_call("gc-2", "read_file", G_SIG, absolute_path="/w/src/sum.js"),
                                    g_call("gc-3", "write_todos", todos=[{"description": "fix sum"}])]},
        {"role": "user", "parts": [g_res("gc-2", "read_file", output="export const sum = (a, b) => a - b;\n"),
                                   g_res("gc-3", "write_todos", output="Todos updated")]},
        {"role": "model", "parts": [{"text": "I will check git."},
                                    g_call("gc-4", "run_shell_command", G_SIG, command="git status")]},
        {"role": "user", "parts": [g_res("gc-4", "run_shell_command", error=G_CANCELLED)]},
        {"role": "model", "parts": [g_call(None, "run_shell_command", G_SIG, command="ls")]},  # an old client: no id
        {"role": "user", "parts": [g_res(None, "run_shell_command", output=g_shell_result("ls", "src", 0))]},
        {"role": "model", "parts": [g_call("gc-6", "read_file", G_SIG, absolute_path="/w/missing.js"),
                                    g_call("gc-5", "run_shell_command", command="npx eslint src"),
                                    g_call("gc-7", "read_file", absolute_path="/w/README.md")]},
        {"role": "user", "parts": [g_res("gc-6", "read_file", error="File not found: /w/missing.js"),
                                   g_res("gc-5", "run_shell_command", error="Command failed: npx eslint src"),
                                   g_res("gc-7", "read_file", output="# sum\n")]},
    ]  # fmt: skip
    return {
        "contents": contents,
        "systemInstruction": {"role": "user", "parts": [{"text": "You are an interactive CLI agent."}]},
        "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "read_file"}]}],
        "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": True}},
    }


def test_gemini_session_through_mitmdump(bridge: Bridge) -> None:
    doc = gemini_session()
    ex = bridge.send("POST", GEMINI, orjson.dumps(doc), headers=G_HEADERS)
    got = bridge.upstream(ex)
    assert ex.response.status_code == 200 and not got.errors
    after = orjson.loads(got.body)
    steps = after[STEPS]
    # By hand: gc-1 (npm test, exit 1 in its frame), gc-5 (a flagged failure) and gc-7 (a read) are
    # observed pairs of mapped tools that can go. gc-2 is a read too, but its part carries its turn's
    # thought signature and its content keeps write_todos (unmapped, gc-3): taking it out would tear it
    # from the signature. gc-4 was cancelled (no outcome); gc-6 is a failed read (view_file cannot say
    # so); the id-less pair cannot be correlated. gc-6 carries the last turn's signature and stays.
    commands = [(s["runCommand"]["commandLine"], s["runCommand"].get("exitCode")) for s in steps if "runCommand" in s]
    assert [c for c, _ in commands] == ["npm test", "npx eslint src"]
    assert commands[0][1] == 1, "Gemini CLI's frame (its user agent names it) says exit 1"
    assert commands[1][1] == 1, "the dialect's error flag is a failure without a number"
    reads = [s["viewFile"]["absolutePathUri"] for s in steps if "viewFile" in s]
    assert reads == ["file:///w/README.md"]
    assert len(steps) == 3 and after[DELTA] == 1, "the newest round (gc-5, gc-7) is pending"
    # What stays, stays valid for the Gemini API: no empty parts, roles alternate, the user's content last.
    contents = after["contents"]
    assert all(c["parts"] for c in contents)
    roles = [c["role"] for c in contents]
    assert all(a != b for a, b in itertools.pairwise(roles)) and roles[-1] == "user", roles
    kept = orjson.dumps(contents).decode()
    for id in ("gc-2", "gc-3", "gc-4", "gc-6"):
        assert kept.count(f'"{id}"') == 2, f"{id}: both halves stay"
    for id in ("gc-1", "gc-5", "gc-7"):
        assert f'"{id}"' not in kept, f"{id}: went to a step"
    assert all(p.get("thoughtSignature") == G_SIG for c in contents for p in c["parts"][:1] if "functionCall" in p)
    other = {k: v for k, v in after.items() if k not in ("contents", STEPS, DELTA)}
    assert other == {k: v for k, v in doc.items() if k != "contents"}
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["dialect"]) == ("rewritten", "gemini")
    kept_codes = {(p["item"], p["id"]): p.get("kept") for p in rec["accounting"] if "step" not in p}
    assert kept_codes[("call", "gc-2")] == "validity"
    assert kept_codes[("call", "gc-4")] == "unobserved"
    assert kept_codes[("call", "gc-6")] == "untranslatable"
    assert kept_codes[("call", None)] == "no_id"


def test_gemini_resumed_conversation_and_compressed_body(bridge: Bridge) -> None:
    """The next turn of the same conversation, gzip-encoded: same truth, the delta is the new round."""
    doc = gemini_session()
    doc["contents"] += [
        {"role": "model", "parts": [g_call("gc-8", "run_shell_command", G_SIG, command="npm test")]},
        {"role": "user", "parts": [g_res("gc-8", "run_shell_command",
                                         output=g_shell_result("npm test", "4 passing", 0))]},
    ]  # fmt: skip
    first = bridge.send("POST", GEMINI, orjson.dumps(gemini_session()), headers=G_HEADERS)
    bridge.upstream(first)
    ex = bridge.send("POST", GEMINI, gzip.compress(orjson.dumps(doc)), headers=G_HEADERS | {"content-encoding": "gzip"})
    got = bridge.upstream(ex)
    after = orjson.loads(got.body)
    commands = [s["runCommand"]["commandLine"] for s in after[STEPS] if "runCommand" in s]
    assert commands == ["npm test", "npx eslint src", "npm test"]
    assert after[DELTA] == 3 and len(after[STEPS]) == 4
    assert after[STEPS][3]["runCommand"].get("exitCode") == 0, "Gemini CLI's frame without an Exit Code line: 0"
    assert [c["role"] for c in after["contents"]][-1] == "user"
