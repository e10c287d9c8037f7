"""End to end: the bundled Claude-Code-like session through a real mitmdump with the bridge.

The session is Claude Code's tools and words over Chat Completions (a gateway in front of
it), sent with Claude Code's User-Agent. The expectations are derived from the session
itself (which call has a result, which tool maps to which kind) plus the few cases the
session was built to hold, named below by their command or tool, never from the bridge's
own output.

Claude Code states a failed command's code ("Exit code N" on the first line) only on a
result it flags is_error, and Chat Completions has no such flag: over this dialect no
result says whose "Exit code N" line it is, so its failed commands carry no exit code
(absent, not 0; the line is still in the output the planner reads). The same session over
the Messages API, with the flag, carries the codes (test_mitmdump_dialects.py).
"""

from __future__ import annotations

import gzip
import os
import stat
import time
from typing import Any

import orjson
import pytest
import zstandard
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS
from native_bridge.records import writer as records
from support.histories.bundled import chat_session
from support.reference_planner import PAUSE_HEADER

from .conftest import CHAT, SESSION, TAG, Bridge, Exchange

pytestmark = pytest.mark.e2e

STEPS, DELTA = "additional_steps", "additional_steps_delta_start"
SECRETS = {
    "Authorization": "Bearer sk-test-SECRET123",
    "x-api-key": "xak-test-SECRET456",
    "Cookie": "session=cookie-SECRET789; theme=dark",
}
SECRET_STRINGS = [b"sk-test-SECRET123", b"xak-test-SECRET456", b"cookie-SECRET789"]
CLAUDE_UA = {"user-agent": "claude-cli/2.1.332 (external, cli)"}  # every request of the session carries it

# The cases the session was built to hold.
UNOBSERVED_CMD = "python -m pytest -q --runslow"
# Commands that failed (their output says so), and the line each result carries about it.
FAILED_CMDS = {
    "python -m tally report /home/dev/timelogs/week47.log": "Exit code 1",
    "python -m pytest -q tests/test_duration.py -x": "Exit code: 2",
}
SUCCESS_CMD = "python -m pytest -q tests/test_duration.py"  # passes, prints no exit-code line
PENDING_CMDS = ["python -m pytest -q", "git diff --stat"]


# ---- reading the session -----------------------------------------------------------


def calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tc for m in messages if m.get("role") == "assistant" for tc in m.get("tool_calls") or []]


def results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "tool"]


def args(call: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(call["function"]["arguments"])


def ids(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for c in calls(messages)} | {r["tool_call_id"] for r in results(messages)}


def special_ids(session: dict[str, Any]) -> dict[str, set[str]]:
    """The ids that must stay messages, each found from the session's own content."""
    msgs = session["messages"]
    result_of = {r["tool_call_id"]: r["content"] for r in results(msgs)}
    call_ids = {c["id"] for c in calls(msgs)}
    by_name = lambda name: {c["id"] for c in calls(msgs) if c["function"]["name"] == name}  # noqa: E731
    grep = [c for c in calls(msgs) if c["function"]["name"] == "Grep"]
    return {
        "unmapped": by_name("TodoWrite"),
        "unobserved": {c["id"] for c in calls(msgs) if c["id"] not in result_of},
        "orphan": {r["tool_call_id"] for r in results(msgs) if r["tool_call_id"] not in call_ids},
        "failed_read": {i for i in by_name("Read") if result_of[i].startswith("<tool_use_error>")},
        # Claude Code's LS answers with a tree; a step's flat children list cannot state it.
        "nested_ls": by_name("LS"),
        # No words of Claude Code say these succeeded (core/rules/CLIENTS.md, "Success evidence"): its WebFetch
        # (a model's summary of the page) and a content-mode Grep (the matching lines, bare).
        "no_words": by_name("WebFetch") | {c["id"] for c in grep if args(c).get("output_mode") == "content"},
    }


def expected_steps(session: dict[str, Any]) -> list[dict[str, Any]]:
    """The calls that must become steps, in order: observed, mapped, and not a special case."""
    kept = set().union(*special_ids(session).values())
    return [c for c in calls(session["messages"]) if c["id"] not in kept]


def step_type(call: dict[str, Any]) -> str:
    return "CORTEX_STEP_TYPE_" + DEFAULT_TOOL_KINDS[call["function"]["name"]].upper()


def run_commands(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {s["runCommand"]["commandLine"]: s["runCommand"] for s in steps if "runCommand" in s}
    assert len(out) == sum("runCommand" in s for s in steps), "command lines are unique in the session"
    return out


def pairing(messages: list[dict[str, Any]]) -> tuple[set[str], set[str], set[str]]:
    """Chat Completions pairing: (answered call ids, unanswered call ids, stray result ids).

    A call is answered only by a tool message in the run of tool messages right after
    the assistant message that carries it; any other tool message is stray.
    """
    paired: set[str] = set()
    unanswered: set[str] = set()
    stray: set[str] = set()
    open_ids: set[str] = set()
    for m in messages:
        if m.get("role") == "tool":
            tid = m["tool_call_id"]
            if tid in open_ids:
                open_ids.discard(tid)
                paired.add(tid)
            else:
                stray.add(tid)
            continue
        unanswered |= open_ids
        open_ids = {tc["id"] for tc in m.get("tool_calls") or []} if m.get("role") == "assistant" else set()
    return paired, unanswered | open_ids, stray


# ---- the main exchange: the whole session, with credentials ------------------------


@pytest.fixture(scope="module")
def main(bridge: Bridge, session_raw: bytes) -> tuple[Exchange, dict[str, Any]]:
    ex = bridge.send("POST", CHAT, session_raw, SECRETS | CLAUDE_UA)
    got = bridge.upstream(ex)
    if ex.response.status_code != 200 or got.errors:
        bridge.fail(f"the planner refused the rewritten session: {ex.response.status_code} {got.errors}")
    return ex, got.json


def test_session_is_what_it_claims(session_doc: dict[str, Any], session_raw: bytes) -> None:
    # The checked-in file is exactly what its generator makes.
    assert chat_session.render() == session_raw and chat_session.OUT == SESSION
    msgs = session_doc["messages"]
    rounds = [m for m in msgs if m.get("tool_calls")]
    assert len(rounds) >= 20
    assert any(len(m["tool_calls"]) > 1 for m in rounds), "parallel calls"
    assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "tool"
    assert all(len(v) >= 1 for v in special_ids(session_doc).values())
    assert len(orjson.dumps(session_doc)) < 60_000


def test_observed_pairs_became_done_steps(main: tuple[Exchange, dict[str, Any]], session_doc: dict[str, Any]) -> None:
    _, after = main
    want = expected_steps(session_doc)
    steps = after[STEPS]
    assert [s["type"] for s in steps] == [step_type(c) for c in want]
    assert {s["status"] for s in steps} == {"CORTEX_STEP_STATUS_DONE"}
    # Spot-check content against the call and its result, not just the shape.
    result_of = {r["tool_call_id"]: r["content"] for r in results(session_doc["messages"])}
    for s, c in zip(steps, want, strict=True):
        if "viewFile" in s:
            assert s["viewFile"]["absolutePathUri"] == "file://" + args(c)["file_path"]
            assert s["viewFile"]["content"] == result_of[c["id"]]
        if "runCommand" in s:
            assert s["runCommand"]["commandLine"] == args(c)["command"]
            # The whole output (surrounding blank lines are not the point here).
            assert s["runCommand"]["combinedOutput"]["full"].strip() == result_of[c["id"]].strip()


def test_failed_commands_over_chat_completions_carry_no_exit_code(main: tuple[Exchange, dict[str, Any]]) -> None:
    cmds = run_commands(main[1][STEPS])
    # No error flag in this dialect: "Exit code 1" is no claim of Claude Code's here, "Exit code: 2" none
    # of any client's; a program can print either. Absent, not 0, and the output still says it.
    assert {c: cmds[c].get("exitCode") for c in FAILED_CMDS} == dict.fromkeys(FAILED_CMDS)
    assert all(line in cmds[c]["combinedOutput"]["full"].splitlines() for c, line in FAILED_CMDS.items())
    assert "exitCode" not in cmds[SUCCESS_CMD], "no exit-code line and no failure: absent, not 0"
    assert not any("exitCode" in r for r in cmds.values()), "no result of this session states a code"
    assert [c for c, r in cmds.items() if "stdout" in r] == [], "the output travels once, in combinedOutput"


def test_no_step_for_a_call_without_result(main: tuple[Exchange, dict[str, Any]], session_doc: dict[str, Any]) -> None:
    assert UNOBSERVED_CMD not in run_commands(main[1][STEPS])
    (unobserved,) = special_ids(session_doc)["unobserved"]
    assert args(next(c for c in calls(session_doc["messages"]) if c["id"] == unobserved))["command"] == UNOBSERVED_CMD


def test_what_cannot_be_a_step_stays_in_chat_form(
    main: tuple[Exchange, dict[str, Any]], session_doc: dict[str, Any]
) -> None:
    after = main[1]["messages"]
    special = special_ids(session_doc)
    kept = set().union(*special.values())
    assert ids(after) == kept, "exactly the special cases remain as tool calls/results"
    # Each remains verbatim: the client's own message objects, in the client's dialect.
    for m in session_doc["messages"]:
        carried = {tc["id"] for tc in m.get("tool_calls") or []} | {m.get("tool_call_id")}
        if carried & kept:
            assert m in after, f"message carrying {carried & kept} was changed or lost"


def test_delta_start_is_the_pending_round(main: tuple[Exchange, dict[str, Any]]) -> None:
    steps, delta = main[1][STEPS], main[1][DELTA]
    assert delta == len(steps) - len(PENDING_CMDS)
    assert [s["runCommand"]["commandLine"] for s in steps[delta:]] == PENDING_CMDS


def test_messages_are_still_valid_chat_completions(
    main: tuple[Exchange, dict[str, Any]], session_doc: dict[str, Any]
) -> None:
    before, after = session_doc["messages"], main[1]["messages"]
    b_paired, b_unanswered, b_stray = pairing(before)
    a_paired, a_unanswered, a_stray = pairing(after)
    stepped = ids(before) - ids(after)
    assert a_paired == b_paired - stepped, "a kept call lost its result, or a kept result its call"
    # The only unpaired items are the ones the client sent unpaired.
    assert (a_unanswered, a_stray) == (b_unanswered, b_stray)
    assert (a_unanswered, a_stray) == (special_ids(session_doc)["unobserved"], special_ids(session_doc)["orphan"])
    # Text turns are untouched and in order; no message became empty.
    text = lambda ms: [(m["role"], m["content"]) for m in ms if m["role"] != "tool" and m.get("content")]  # noqa: E731
    assert text(after) == text(before)
    assert all(m.get("content") or m.get("tool_calls") for m in after)
    assert {k: v for k, v in main[1].items() if k not in ("messages", STEPS, DELTA)} == {
        k: v for k, v in session_doc.items() if k != "messages"
    }


def test_the_planner_reply_comes_back_unchanged(main: tuple[Exchange, dict[str, Any]], bridge: Bridge) -> None:
    ex, _ = main
    got = bridge.upstream(ex)
    assert ex.response.status_code == got.status == 200
    assert ex.response.content == got.reply
    assert ex.response.headers["content-type"] == got.reply_type
    assert ex.response.json()["object"] == "chat.completion"


def test_one_record_per_request(
    main: tuple[Exchange, dict[str, Any]], bridge: Bridge, session_doc: dict[str, Any]
) -> None:
    ex, after = main
    path, rec = bridge.record(ex)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert rec["status"] == "rewritten" and rec["dialect"] == "chat"
    assert rec["method"] == "POST" and rec["url"].endswith(CHAT)
    assert rec["before"] == session_doc
    assert records.after_doc(rec) == after
    assert records.steps_of(rec) == after[STEPS]

    # Accounting: every call and every result exactly once, each step backed by one call and its result.
    msgs = session_doc["messages"]
    items = sorted((p["item"], p["id"]) for p in rec["accounting"])
    assert items == sorted(
        [("call", c["id"]) for c in calls(msgs)] + [("result", r["tool_call_id"]) for r in results(msgs)]
    )
    by_step: dict[int, list[str]] = {}
    for p in rec["accounting"]:
        if "step" in p:
            by_step.setdefault(p["step"], []).append(p["item"])
    assert by_step == {i: ["call", "result"] for i in range(len(after[STEPS]))}
    special = special_ids(session_doc)
    kept = {(p["item"], p["id"]): p["kept"] for p in rec["accounting"] if "kept" in p}
    assert kept == (
        {("call", i): "unmapped" for i in special["unmapped"]}
        | {("result", i): "unmapped" for i in special["unmapped"]}
        | {("call", i): "unobserved" for i in special["unobserved"]}
        | {("result", i): "orphan" for i in special["orphan"]}
        | {
            (item, i): "untranslatable"
            for i in special["failed_read"] | special["nested_ls"] | special["no_words"]
            for item in ("call", "result")
        }
    )
    assert all(p["reason"] for p in rec["accounting"] if "kept" in p)

    kept_codes: dict[str, int] = {}
    for code in kept.values():
        kept_codes[code] = kept_codes.get(code, 0) + 1
    assert rec["summary"] == {
        "steps": len(after[STEPS]),
        "delta_start": len(after[STEPS]) - len(PENDING_CMDS),
        "failed": 0,  # no code stated (see test_failed_commands_over_chat_completions_carry_no_exit_code)
        "failed_exit_codes": [],
        "kept": len(kept),
        "kept_by_code": dict(sorted(kept_codes.items())),
        "unobserved": len(special["unobserved"]),
    }


def test_records_hold_no_secrets(main: tuple[Exchange, dict[str, Any]], bridge: Bridge) -> None:
    ex, _ = main
    # The credentials do reach the planner: redaction is for what we write, not for traffic.
    assert bridge.upstream(ex).header("authorization") == SECRETS["Authorization"]
    path, rec = bridge.record(ex)
    headers = {k.lower(): v for k, v in rec["request_headers"]}
    assert {headers[k.lower()] for k in SECRETS} == {"<redacted>"}
    files = list(bridge.records.iterdir())
    assert path in files
    for f in files:
        data = f.read_bytes()
        assert not [s for s in SECRET_STRINGS if s in data], f"{f.name} holds a secret"


# ---- compressed bodies ----------------------------------------------------------------

ENCODINGS = {
    "gzip": (lambda b: gzip.compress(b, mtime=0), gzip.decompress, b"\x1f\x8b"),
    "zstd": (
        lambda b: zstandard.ZstdCompressor().compress(b),
        lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b),
        b"\x28\xb5\x2f\xfd",
    ),
}


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_compressed_body_is_rewritten_and_reencoded(
    encoding: str, bridge: Bridge, main: tuple[Exchange, dict[str, Any]], session_raw: bytes, session_doc: dict
) -> None:
    compress, decompress, magic = ENCODINGS[encoding]
    ex = bridge.send("POST", CHAT, compress(session_raw), {"content-encoding": encoding} | CLAUDE_UA)
    assert ex.response.status_code == 200, ex.response.text
    got = bridge.upstream(ex)
    assert got.header("content-encoding") == encoding
    assert got.header("transfer-encoding") is None
    assert got.header("content-length") == str(len(got.raw))
    assert got.raw.startswith(magic)
    # Deterministic: the same rewrite as the uncompressed request, byte for byte.
    assert decompress(got.raw) == bridge.upstream(main[0]).body
    _, rec = bridge.record(ex)
    assert rec["status"] == "rewritten"
    assert rec["before"] == session_doc


# ---- traffic the bridge must not touch --------------------------------------------------


def test_non_selected_traffic_passes_byte_identical(bridge: Bridge, session_raw: bytes) -> None:
    get = bridge.send("GET", "/v1/models?limit=5")
    other = bridge.send("POST", "/v1/embeddings", session_raw)  # JSON with tool calls, but not chat
    for ex, method, path in ((get, "GET", "/v1/models?limit=5"), (other, "POST", "/v1/embeddings")):
        got = bridge.upstream(ex)
        assert (got.method, got.path, got.raw) == (method, path, ex.body)
        assert ex.response.status_code == got.status == 200
        assert ex.response.content == got.reply
    bridge.barrier()
    assert bridge.records_of(get, timeout=0) == []
    assert bridge.records_of(other, timeout=0) == []


def test_malformed_json_passes_through_and_is_recorded_as_skipped(bridge: Bridge, session_raw: bytes) -> None:
    body = session_raw[: len(session_raw) // 2]  # a truncated upload: tool calls, but no valid JSON
    ex = bridge.send("POST", CHAT, body)
    got = bridge.upstream(ex)
    assert got.raw == body
    assert ex.response.status_code == got.status == 400  # the planner's verdict, passed back
    assert ex.response.content == got.reply
    _, rec = bridge.record(ex)
    assert rec["status"] == "skipped"
    assert "not JSON" in rec["reason"]
    # skipped: recorded by size, not content (bridge_records_skipped_bodies records the content)
    assert rec["before"] is None and "before_text" not in rec and rec["before_bytes"] == len(body)
    assert "bridge_records_skipped_bodies" in rec["body_omitted"]
    assert records.after_doc(rec) is None and rec["steps"] == []


def test_malformed_json_without_tool_markers_is_not_parsed(bridge: Bridge) -> None:
    # By design the bridge does not parse a body that cannot hold tool history (issue 5: do not
    # parse what does not need rewriting); the record says so instead of "skipped".
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}'
    ex = bridge.send("POST", CHAT, body)
    assert bridge.upstream(ex).raw == body
    _, rec = bridge.record(ex)
    assert (rec["status"], rec["reason"]) == ("unchanged", "the body is not JSON (no tool history)")


def test_already_bridged_request_passes_byte_identical(bridge: Bridge, main: tuple[Exchange, dict[str, Any]]) -> None:
    rewritten = bridge.upstream(main[0]).body
    assert rewritten is not None
    ex = bridge.send("POST", CHAT, rewritten)
    got = bridge.upstream(ex)
    assert got.raw == rewritten
    assert ex.response.status_code == 200, ex.response.text
    _, rec = bridge.record(ex)
    assert rec["status"] == "skipped" and "already carries" in rec["reason"]


def test_streaming_reply_comes_through(bridge: Bridge, session_doc: dict[str, Any]) -> None:
    body = orjson.dumps(session_doc | {"stream": True})
    ex = bridge.send("POST", CHAT, body, {"accept": "text/event-stream"} | CLAUDE_UA)
    got = bridge.upstream(ex)
    assert got.json[STEPS] and got.json["stream"] is True, "the streaming request was rewritten too"
    assert ex.response.status_code == 200
    assert ex.response.headers["content-type"] == "text/event-stream"
    assert ex.response.content == got.reply
    events = [line.removeprefix("data: ") for line in ex.response.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_streaming_reply_is_not_held_back(bridge: Bridge, session_doc: dict[str, Any]) -> None:
    body = orjson.dumps(session_doc | {"stream": True})
    tag = "stream-" + os.urandom(8).hex()
    headers = {"content-type": "application/json", TAG: tag, PAUSE_HEADER: "0.5"} | CLAUDE_UA
    arrivals = []
    with bridge.client.stream("POST", CHAT, content=body, headers=headers) as response:
        for chunk in response.iter_raw():
            arrivals.append((time.monotonic(), chunk))
    (got,) = bridge.planner.find(TAG, tag)
    assert b"".join(c for _, c in arrivals) == got.reply and got.last_event_at
    first_at = arrivals[0][0]
    # The planner pauses after its first event; a streaming proxy delivers that event before the pause ends.
    assert first_at < got.last_event_at, f"first event arrived {first_at - got.last_event_at:.3f}s after the last"


# ---- the planner is a strict judge, not a rubber stamp ----------------------------------

_RUN = {"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": "CORTEX_STEP_STATUS_DONE", "runCommand": {"commandLine": "x"}}


@pytest.mark.parametrize(
    ("steps", "delta", "complaint"),
    [
        ([_RUN | {"runCommand": {"commandLine": "x", "output": "y"}}], 0, 'no field named "output"'),
        ([_RUN | {"status": "CORTEX_STEP_STATUS_GENERATING"}], 0, "expected CORTEX_STEP_STATUS_DONE"),
        ([_RUN | {"type": "CORTEX_STEP_TYPE_VIEW_FILE"}], 0, "with a run_command body"),
        ([_RUN], 2, "must be an int in 0..1"),
        ([_RUN], True, "must be an int in 0..1"),
    ],
)
def test_planner_refuses_invalid_steps(
    bridge: Bridge, session_doc: dict[str, Any], steps: list[dict[str, Any]], delta: Any, complaint: str
) -> None:
    body = orjson.dumps(session_doc | {STEPS: steps, DELTA: delta})
    ex = bridge.send("POST", CHAT, body)
    got = bridge.upstream(ex)
    assert got.raw == body, "a body that already carries steps passes the bridge untouched"
    assert ex.response.status_code == 400
    assert complaint in ex.response.json()["error"]["message"]
