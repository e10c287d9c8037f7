"""Replay modes with real mitmdump processes: offline rewrite (-nr), client replay (-C), two bridges
chained (upstream mode), and server replay (-S) of a capture made behind the bridge.

Two captures are made once per module, through mitmdump in reverse mode in front of
the reference planner: one with the bridge switched off (what an agent really sent),
one with it on (what the planner was told). Each request carries its client's User-Agent:
the sessions are Claude Code's (over Chat Completions, where it states no exit code: no
is_error), the failed command Qwen Code's (its run_shell_command frame states exit 2).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import procs
import pytest
from mitmproxy import addons, http, io
from mitmproxy.addons import script, serverplayback
from native_bridge.core.conversation import conversation_key
from native_bridge.core.pipeline import rewrite
from support.mitmdump import Mitmdump
from support.reference_planner import ReferencePlanner

from .conftest import CHAT, ROOT, SESSION, TAG, mitmdump_batch

pytestmark = pytest.mark.e2e

BRIDGE = str(ROOT / "addons" / "bridge.py")
STEPS = "additional_steps"


def chat(*messages: dict[str, Any], stream: bool = False) -> bytes:
    return orjson.dumps({"model": "m", "stream": stream, "messages": list(messages)})


FAILED = chat(
    {"role": "user", "content": "build it"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "run_shell_command", "arguments": '{"command":"make"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Command: make\nDirectory: (root)\nOutput: make: *** [all] Error 2\nError: (none)\nExit Code: 2\n"
        "Signal: (none)\nProcess Group PGID: (none)",
    },
)
PLAIN = chat({"role": "user", "content": "hello"})
CLAUDE_UA = "claude-cli/2.1.332 (external, cli)"
QWEN_UA = "QwenCode/0.24.4 (linux; x64)"  # as captured with 0.24.4 (tests/fixtures/corpus/qwen-code.json)
USER_AGENT = {"session": CLAUDE_UA, "session-sse": CLAUDE_UA, "failed": QWEN_UA}


@dataclass(slots=True)
class Capture:
    path: Path
    records: Path
    tags: dict[str, str]  # name -> the x-e2e-tag of that request


def run(*args: str, confdir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """One batch mitmdump run (-nr, -C). The reference planner reads additional_steps: these captures
    are of the rewrite mode."""
    return mitmdump_batch([*args, *(("--set", "bridge_mode=rewrite") if "-s" in args else ())], confdir, timeout)


def proxy(mode: str, records: Path, confdir: Path, options: Sequence[str] = ()) -> Mitmdump:
    """A listening mitmdump with the bridge, in any mode (support.mitmdump.Mitmdump's reverse mode replaced)."""
    p = Mitmdump("http://unused", records, confdir, options)
    assert p.args[1:3] == ["--mode", "reverse:http://unused"]
    p.args[1:3] = ["--mode", mode]
    return p.start()


def read_flows(path: Path) -> list[http.HTTPFlow]:
    with path.open("rb") as f:
        return [x for x in io.FlowReader(f).stream() if isinstance(x, http.HTTPFlow)]


def tag_of(f: http.HTTPFlow) -> str | None:
    return f.request.headers.get(TAG)


def by_tag(flows: list[http.HTTPFlow]) -> dict[str | None, http.HTTPFlow]:
    return {tag_of(f): f for f in flows}


def exchanges() -> list[tuple[str, str, str, bytes]]:
    session = SESSION.read_bytes()
    streamed = orjson.dumps({**orjson.loads(session), "stream": True})
    return [
        ("session", "POST", CHAT, session),
        ("session-sse", "POST", CHAT, streamed),
        ("failed", "POST", CHAT, FAILED),
        ("plain", "POST", CHAT, PLAIN),
        ("models", "GET", "/v1/models", b""),
    ]


def send_all(base_url: str, tags: dict[str, str] | None = None) -> dict[str, httpx.Response]:
    out = {}
    with httpx.Client(base_url=base_url, timeout=15) as client:
        for name, method, path, body in exchanges():
            tag = (tags or {}).get(name) or f"{name}-{time.monotonic_ns()}"
            headers = {TAG: tag, "authorization": "Bearer sk-replay-SECRET"}
            if name in USER_AGENT:
                headers["user-agent"] = USER_AGENT[name]
            if body:
                headers["content-type"] = "application/json"
            out[name] = client.request(method, path, content=body or None, headers=headers)
    return out


def capture(planner: ReferencePlanner, tmp: Path, name: str, options: Sequence[str]) -> Capture:
    path, records = tmp / f"{name}.flows", tmp / f"{name}-records"
    p = Mitmdump(planner.url, records, tmp / "conf", ["-w", str(path), *options]).start()
    try:
        responses = send_all(p.url)
    finally:
        p.stop()  # SIGTERM: the save addon closes the file
    assert all(r.status_code == 200 for r in responses.values()), {k: r.text for k, r in responses.items()}
    return Capture(path, records, {n: r.request.headers[TAG] for n, r in responses.items()})


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replay")


@pytest.fixture(scope="module")
def plain_capture(planner: ReferencePlanner, tmp: Path) -> Capture:
    """What the agent sent: the bridge loaded but switched off."""
    return capture(planner, tmp, "plain", ["--set", "bridge=false"])


@pytest.fixture(scope="module")
def bridged_capture(planner: ReferencePlanner, tmp: Path) -> Capture:
    """A capture made behind the bridge: the flows hold the rewritten requests."""
    return capture(planner, tmp, "bridged", [])


def expected_body(original: bytes, user_agent: str | None = CLAUDE_UA) -> bytes:
    result = rewrite(original, path=CHAT, client_hint=user_agent)
    assert result.status == "rewritten" and result.body is not None
    return result.body


# ---- -nr: offline rewrite ------------------------------------------------------------


def test_a_live_capture_holds_what_was_made_after_forwarding(
    bridged_capture: Capture, planner: ReferencePlanner, tmp: Path
):
    """The verdict, the backup and (observe mode, state in memory) the reading are made after the
    request went upstream: they must be on every flow before mitmproxy writes it out (-w)."""
    observed = capture(planner, tmp, "observed", ["--set", "bridge_mode=observe"])
    expected = {"session": "rewritten", "session-sse": "rewritten", "failed": "rewritten", "plain": "unchanged"}
    for cap, mode in ((bridged_capture, "rewrite"), (observed, "observe")):
        flows = {name: by_tag(read_flows(cap.path))[tag] for name, tag in cap.tags.items()}
        for name, status in expected.items():
            f = flows[name]
            want = status if mode == "rewrite" or status == "unchanged" else "observed"
            assert f.metadata["bridge"]["status"] == want, (mode, name, f.metadata)
            assert f.modified() == (want == "rewritten"), (mode, name)  # backed up exactly when rewritten
        assert "bridge" not in flows["models"].metadata
    assert flows["failed"].metadata["bridge"]["failed_exit_codes"] == [2]  # what the reading found


def test_a_large_body_observed_in_the_worker_is_in_a_live_capture(planner: ReferencePlanner, tmp: Path):
    """Observe mode sends a large body (512 KiB or more) on at once and reads it in the worker;
    the reply waits for that reading, so the flow mitmproxy writes out at its reply (-w) holds
    the verdict, and the body went upstream byte for byte."""
    doc = orjson.loads(FAILED)
    doc["messages"].insert(0, {"role": "system", "content": "context line\n" * 60_000})
    large = orjson.dumps(doc)
    assert len(large) >= 600_000
    path = tmp / "large-observed.flows"
    options = ["-w", str(path), "--set", "bridge_mode=observe"]
    p = Mitmdump(planner.url, tmp / "large-records", tmp / "conf", options).start()
    try:
        tags = {}
        with httpx.Client(base_url=p.url, timeout=30) as client:
            for name, body in (("large", large), ("large-sse", orjson.dumps({**doc, "stream": True}))):
                tags[name] = f"{name}-{time.monotonic_ns()}"
                headers = {TAG: tags[name], "content-type": "application/json", "user-agent": QWEN_UA}
                r = client.post(CHAT, content=body, headers=headers)
                assert r.status_code == 200, r.text
                assert [x.body for x in planner.find(TAG, tags[name])] == [body]  # as the client sent it
        assert p._proc is not None
        workers = procs.descendants(p._proc.pid)
    finally:
        p.stop()
    assert workers, "a large body is read in the worker process"
    flows = by_tag(read_flows(path))
    for name, tag in tags.items():
        f = flows[tag]
        assert f.metadata["bridge"]["status"] == "observed", (name, f.metadata)
        assert f.metadata["bridge"]["failed_exit_codes"] == [2] and f.marked  # what the reading found
        assert not f.modified()


def test_offline_rewrite_is_deterministic_and_keeps_the_capture(plain_capture: Capture, tmp: Path):
    outs, records = [], []
    for i in (1, 2):
        out, rec = tmp / f"offline{i}.flows", tmp / f"offline{i}-records"
        run("-nr", str(plain_capture.path), "-s", BRIDGE, "-w", str(out), "--set", f"bridge_records={rec}", confdir=tmp)
        outs.append(out.read_bytes())
        records.append({p.name: p.read_bytes() for p in rec.glob("*.json")})
    assert outs[0] == outs[1], "two offline runs over the same capture wrote different flow files"
    assert records[0] == records[1] and len(records[0]) == 4  # the four POSTs were selected; GET /v1/models not

    captured = by_tag(read_flows(plain_capture.path))
    rewritten = by_tag(read_flows(tmp / "offline1.flows"))
    assert set(captured) == set(rewritten)
    for tag, f in rewritten.items():
        c = captured[tag]
        assert f.response.content == c.response.content  # replies are kept (an SSE reply too)
        # Determinism is not an accident of fresh ids or clocks: the capture's own ids and times are kept.
        assert (f.id, f.request.timestamp_start, f.response.timestamp_end) == (
            c.id,
            c.request.timestamp_start,
            c.response.timestamp_end,
        )
    t = plain_capture.tags
    for name in ("session", "session-sse", "failed"):
        f, c = rewritten[t[name]], captured[t[name]]
        assert f.metadata["bridge"]["status"] == "rewritten"
        assert f.request.content == expected_body(c.request.content, USER_AGENT[name])
        assert f._backup is not None and f._backup["request"]["content"] == c.request.content  # revertible
    assert rewritten[t["failed"]].metadata["bridge"]["failed_exit_codes"] == [2]
    assert rewritten[t["failed"]].marked
    assert rewritten[t["plain"]].metadata["bridge"]["status"] == "unchanged"
    assert rewritten[t["plain"]].request.content == captured[t["plain"]].request.content
    assert "bridge" not in rewritten[t["models"]].metadata
    assert b"sk-replay-SECRET" not in b"".join(records[0].values())


def test_offline_rewrite_of_bridged_flows_changes_nothing(plain_capture: Capture, bridged_capture: Capture, tmp: Path):
    first = tmp / "offline-once.flows"
    run("-nr", str(plain_capture.path), "-s", BRIDGE, "-w", str(first), confdir=tmp)
    again = tmp / "offline-twice.flows"
    run("-nr", str(first), "-s", BRIDGE, "-w", str(again), "--set", f"bridge_records={tmp / 'twice'}", confdir=tmp)
    # Equal flow states. (Not equal bytes: mitmproxy's flow file writer stores a dict's items in reverse
    # order and the reader keeps that order, so a stored backup comes back reversed on every round trip.)
    assert [f.get_state() for f in read_flows(again)] == [f.get_state() for f in read_flows(first)]
    assert not list((tmp / "twice").glob("*.json"))  # flows already bridged are not even looked at again

    # A capture made behind a live bridge, rewritten offline: the requests stay as the planner got them.
    live = tmp / "bridged-offline.flows"
    run("-nr", str(bridged_capture.path), "-s", BRIDGE, "-w", str(live), confdir=tmp)
    before, after = by_tag(read_flows(bridged_capture.path)), by_tag(read_flows(live))
    for tag, f in after.items():
        assert f.request.content == before[tag].request.content
        assert f.metadata == before[tag].metadata


# ---- -C: client replay -------------------------------------------------------------------


def test_client_replay_bridges_a_plain_capture_once(plain_capture: Capture, planner: ReferencePlanner, tmp: Path):
    t = plain_capture.tags
    seen = {name: len(planner.find(TAG, t[name])) for name in ("session", "failed", "plain")}
    out = tmp / "client-replay.flows"
    run("-n", "-C", str(plain_capture.path), "-s", BRIDGE, "-w", str(out), confdir=tmp)
    session = SESSION.read_bytes()
    got = planner.find(TAG, t["session"])
    assert len(got) == seen["session"] + 1
    assert got[0].body == session  # the capture run: bridge off
    assert got[-1].body == expected_body(session)  # the replay: bridged
    assert planner.find(TAG, t["failed"])[-1].json[STEPS][0]["runCommand"]["exitCode"] == 2
    assert planner.find(TAG, t["plain"])[-1].body == PLAIN

    # Replaying the replayed (now bridged) flows again sends the very same requests: no second rewrite.
    run("-n", "-C", str(out), "-s", BRIDGE, "-w", str(tmp / "client-replay-2.flows"), confdir=tmp)
    got = planner.find(TAG, t["session"])
    assert len(got) == seen["session"] + 2
    assert got[-1].body == got[-2].body
    assert len(got[-1].json[STEPS]) == 21


def test_client_replay_of_a_bridged_capture_is_not_bridged_again(
    bridged_capture: Capture, planner: ReferencePlanner, tmp: Path
):
    t = bridged_capture.tags
    first = planner.find(TAG, t["session"])
    assert len(first) == 1 and first[0].body == expected_body(SESSION.read_bytes())
    run("-n", "-C", str(bridged_capture.path), "-s", BRIDGE, confdir=tmp)
    got = planner.find(TAG, t["session"])
    assert len(got) == 2
    assert got[1].body == got[0].body


# ---- two bridges chained ----------------------------------------------------------------


def test_chained_bridges_rewrite_once(planner: ReferencePlanner, tmp: Path):
    """client -> A (upstream mode, bridge) -> B (regular proxy, bridge) -> planner."""
    rec_a, rec_b = tmp / "chain-a", tmp / "chain-b"
    b = proxy("regular", rec_b, tmp / "conf")
    try:
        a = proxy(f"upstream:http://127.0.0.1:{b.port}", rec_a, tmp / "conf")
        try:
            tag = f"chain-{time.monotonic_ns()}"
            session = SESSION.read_bytes()
            with httpx.Client(proxy=a.url, timeout=15) as client:
                headers = {"content-type": "application/json", TAG: tag, "user-agent": CLAUDE_UA}
                r = client.post(planner.url + CHAT, content=session, headers=headers)
            assert r.status_code == 200, r.text
        finally:
            a.stop()
    finally:
        b.stop()
    [got] = planner.find(TAG, tag)
    assert got.body == expected_body(session)
    [ra] = [orjson.loads(p.read_bytes()) for p in rec_a.glob("*.json")]
    [rb] = [orjson.loads(p.read_bytes()) for p in rec_b.glob("*.json")]
    assert ra["status"] == "rewritten" and ra["summary"]["steps"] == 21
    assert (rb["status"], rb["reason"]) == ("skipped", "already carries additional_steps")
    assert rb["before"] is None and rb["before_bytes"] == len(got.body)  # skipped: recorded by size
    assert got.body == expected_body(session)  # B passed on exactly what A made
    assert ra["conversation"] == rb["conversation"] and ra["conversation"].startswith("opening:")


# ---- -S: server replay ------------------------------------------------------------------


def test_bridge_hooks_run_before_server_replay_matching():
    """Why -S needs no extra step: scripts (children of ScriptLoader) get each hook before ServerPlayback,
    so serverplayback hashes the already rewritten body. If mitmproxy reorders its addons, this fails first."""
    kinds = [type(a) for a in addons.default_addons()]
    assert kinds.index(script.ScriptLoader) < kinds.index(serverplayback.ServerPlayback)


@pytest.mark.parametrize("bridge_on", [True, False], ids=["bridge-on", "bridge-off"])
def test_server_replay_of_a_bridged_capture_matches_rewritten_requests(
    bridge_on: bool, bridged_capture: Capture, planner: ReferencePlanner, tmp: Path
):
    captured = by_tag(read_flows(bridged_capture.path))
    received_before = len(planner.received)
    options = [
        "-S",
        str(bridged_capture.path),
        "--set",
        "server_replay_extra=404",  # an unmatched request gets a 404, never the planner
        "--set",
        "keepserving=true",
        "--set",
        f"bridge={str(bridge_on).lower()}",
    ]
    p = Mitmdump(planner.url, tmp / f"sreplay-{bridge_on}", tmp / "conf", options).start()
    try:
        responses = send_all(p.url)
    finally:
        p.stop()
    assert len(planner.received) == received_before, "server replay let a request through to the planner"
    t = bridged_capture.tags
    for name in ("session", "session-sse", "failed"):
        r = responses[name]
        if bridge_on:
            assert r.status_code == 200, f"{name}: no match in the capture:\n{p.output[-3000:]}"
            assert r.content == captured[t[name]].response.content  # the planner's captured answer
        else:
            # Control: the agent's original body does not match a capture of rewritten requests.
            assert r.status_code == 404, name
    # Requests the bridge leaves alone match either way.
    assert responses["plain"].status_code == 200 and responses["models"].status_code == 200


# ---- the scripts for people ---------------------------------------------------------------


def run_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_replay_check_finds_nothing_to_change_in_todays_captures(bridged_capture: Capture):
    for source in (bridged_capture.records, bridged_capture.path):
        done = run_script("replay_check.py", str(source))
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert sum(line.startswith("same ") for line in lines) == 4, done.stdout
        assert "4 checked, 4 same, 0 would change" in done.stdout
    assert "1 skipped" in run_script("replay_check.py", str(bridged_capture.path)).stdout  # GET /v1/models


def test_replay_check_reports_each_difference_and_fails(bridged_capture: Capture, tmp: Path):
    # A record whose step says the failed command succeeded (what an older, buggy build would have sent).
    edited = tmp / "edited-records"
    edited.mkdir()
    for p in bridged_capture.records.glob("*.json"):
        rec = orjson.loads(p.read_bytes())
        for step in rec["steps"]:
            if step.get("runCommand", {}).get("exitCode") == 2:
                step["runCommand"]["exitCode"] = 0
        (edited / p.name).write_bytes(orjson.dumps(rec))
    done = run_script("replay_check.py", str(edited))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "step was   #0   run_command      DONE   exit 0   $ make" in done.stdout
    assert "     now   #0   run_command      DONE   exit 2   $ make" in done.stdout
    # Only the FAILED request (Qwen Code's frame) states a code: the sessions' results (Claude Code over
    # Chat Completions, no is_error) state none, so nothing of theirs was edited.
    assert "1 would change" in done.stdout

    # Today's rules with the shell tools unmapped: every shell pair would stay a message instead.
    done = run_script("replay_check.py", str(bridged_capture.records), "--tools", "Bash=,run_shell_command=", "-q")
    assert done.returncode == 1
    assert "lost step" in done.stdout
    assert "(turn 32): step #11 -> kept [unmapped]" in done.stdout  # the failed pytest run
    assert "status: rewritten -> unchanged (no pair became a step)" in done.stdout  # FAILED: its only pair
    assert "same " not in done.stdout  # -q: only what would change


def test_replay_check_needs_something_to_check(plain_capture: Capture, tmp: Path):
    done = run_script("replay_check.py", str(plain_capture.path))  # made with the bridge off: no baseline
    assert done.returncode == 2 and "nothing to check" in done.stderr
    assert run_script("replay_check.py", str(tmp / "missing")).returncode == 2


def test_summary_groups_requests_by_conversation(bridged_capture: Capture):
    session_key = conversation_key([], SESSION.read_bytes())
    for source in (bridged_capture.records, bridged_capture.path):
        done = run_script("summary.py", str(source))
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
        # The session and its streamed twin share the opening turns: one conversation, two requests.
        block = out.split(f"conversation {session_key}: 2 requests\n", 1)[1].split("\n\n", 1)[0]
        rows = block.splitlines()[2:]
        assert len(rows) == 2
        for r in rows:  # status, items before -> after, steps, failed (none stated: no is_error), kept, unobserved
            assert re.search(r"rewritten\s+57 -> 26\s+21\s+0\s+14\s+1$", r), r
        failed = next(b for b in out.split("\n\n") if "3 -> 1" in b).splitlines()[-1]  # the FAILED request
        assert re.search(r"rewritten\s+3 -> 1\s+1\s+1 \(2\)\s+0\s+0$", failed), failed
        assert out.count("conversation ") == 3  # the session pair, FAILED, PLAIN
        assert "unchanged: no tool history" in out
        assert "4 requests, 3 rewritten, 43 steps sent, 1 failed commands" in out
