"""Replays of planner-hop flows with real mitmdump processes: offline correction (-nr),
client replay (-C), server replay (-S) and two bridges chained.

The captures are made once per module as a user runs both hops: grpcio (framing as the
gateway does) -> mitmdump -w with a chat listener (observe mode, in front of the reference
planner standing in for the gateway's chat endpoint) and a planner listener (prior-knowledge
HTTP/2, ``bridge_planner``) -> a grpcio server standing in for the language server. Each
capture holds, in order: the agent's turn-1 chat request, the gateway's turn-1
SendUserCascadeMessage, turn 2's chat request, turn 2's SendUserCascadeMessage (resumed
cascade). The bodies are the real gateway's, shipped in tests/fixtures/sessions/.

What mitmproxy 12.3 does with these flows (checked in its source and here):
- a saved flow keeps ``client_conn.proxy_mode`` (Client.get_state stores its full spec), so
  a flow captured on the planner listener is a planner flow again under ``-nr`` when the same
  spec is given with ``--mode`` and ``bridge_planner``;
- ``-C`` replays h2c flows: the replay's server connection goes through the ``server_connect``
  hook with the flow's own client (its proxy_mode), where the addon states ``h2``, so the
  request goes out as prior-knowledge HTTP/2 and gRPC's trailers come back;
- ``-S`` answers gRPC over h2c from the capture; with the language server gone, mitmdump
  needs ``connection_strategy=lazy`` (a reverse listener otherwise connects upstream before
  the first request, fails, and drops the client).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import orjson
import pytest
from mitmproxy import http, io
from native_bridge.cascade.request import parse_request
from native_bridge.planner_hop.addon import HANDLED_HEADER
from support.mitmdump import Mitmdump
from support.reference_planner import ReferencePlanner

from .conftest import ROOT, mitmdump_batch
from .grpckit import SEND, LanguageServer, call, free_ports
from .test_planner_hop import commands, outside_field_9

pytestmark = pytest.mark.e2e

BRIDGE = str(ROOT / "addons" / "bridge.py")
SESSIONS = ROOT / "tests" / "fixtures" / "sessions"
CLAUDE_CODE = "claude-cli/2.1.332 (external, cli)"
TURNS = (
    ("gateway-chat-turn1.json", "gateway-grpc-turn1.bin"),
    ("gateway-chat-turn2.json", "gateway-grpc-turn2-resumed.bin"),
)


def message(name: str) -> bytes:
    """The protobuf message inside a shipped gRPC body (uncompressed 5-byte envelope)."""
    body = (SESSIONS / name).read_bytes()
    assert body[0] == 0
    return body[5 : 5 + int.from_bytes(body[1:5], "big")]


def unframed(body: bytes) -> bytes:
    assert body[0] == 0 and int.from_bytes(body[1:5], "big") == len(body) - 5
    return body[5:]


@dataclass(slots=True)
class Listeners:
    """The two listeners of one mitmdump, by mode spec (a saved flow keeps its spec)."""

    chat: str
    planner: str
    port: int  # the planner listener's port
    chat_port: int

    def options(self) -> list[str]:
        # The chat listener comes first (support.mitmdump.Mitmdump's reverse mode is replaced by it).
        return ["--mode", self.planner, "--set", f"bridge_planner={self.planner}", "--set", "bridge_mode=observe"]


@dataclass(slots=True)
class Capture:
    path: Path
    records: Path
    listeners: Listeners
    received: list[bytes] = field(default_factory=list)  # what the language server got, per SendUserCascadeMessage


def listeners(planner: ReferencePlanner, upstream_port: int) -> Listeners:
    port, chat_port = free_ports(2)
    return Listeners(
        f"reverse:{planner.url}@{chat_port}", f"reverse:http://127.0.0.1:{upstream_port}@{port}", port, chat_port
    )


def start(ls: Listeners, tmp: Path, name: str, options: Sequence[str] = ()) -> Mitmdump:
    p = Mitmdump("http://unused", tmp / f"{name}-records", tmp / "conf", [*ls.options(), *options])
    assert p.args[1:3] == ["--mode", "reverse:http://unused"]
    p.args[1:3] = ["--mode", ls.chat]
    return p.start()


def chat(port: int, name: str) -> None:
    headers = {"user-agent": CLAUDE_CODE, "content-type": "application/json"}
    r = httpx.post(f"http://127.0.0.1:{port}/v1/messages", content=(SESSIONS / name).read_bytes(), headers=headers)
    assert r.status_code == 200, r.text


def converse(ls: Listeners, *, grpc_only: bool = False) -> None:
    """The two turns as agent and gateway make them: each chat request, then the gateway's send."""
    for chat_name, grpc_name in TURNS:
        if not grpc_only:
            chat(ls.chat_port, chat_name)
        call(ls.port, message(grpc_name))


def run(*args: str, confdir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """One batch mitmdump run (-nr, -C) with the addon and a private confdir."""
    return mitmdump_batch([*args, "-s", BRIDGE], confdir, timeout)


def batch_modes(ls: Listeners) -> list[str]:
    return ["--mode", ls.chat, *ls.options()]


def read_flows(path: Path) -> list[http.HTTPFlow]:
    with path.open("rb") as f:
        return [x for x in io.FlowReader(f).stream() if isinstance(x, http.HTTPFlow)]


def sends(flows: list[http.HTTPFlow]) -> list[http.HTTPFlow]:
    return [f for f in flows if f.request.path == SEND]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replay-planner")


@pytest.fixture(scope="module")
def language_server():
    ls = LanguageServer().start()
    yield ls
    ls.stop()


def capture(planner: ReferencePlanner, ls: LanguageServer, tmp: Path, name: str, options: Sequence[str]) -> Capture:
    lis = listeners(planner, ls.port)
    path = tmp / f"{name}.flows"
    seen = len(ls.sends())
    p = start(lis, tmp, name, ["-w", str(path), *options])
    try:
        converse(lis)
    finally:
        p.stop()  # SIGTERM: the save addon closes the file
    return Capture(path, tmp / f"{name}-records", lis, [r.body for r in ls.sends()[seen:]])


@pytest.fixture(scope="module")
def plain(planner: ReferencePlanner, language_server: LanguageServer, tmp: Path) -> Capture:
    """What the gateway really sent: the addon loaded but switched off."""
    return capture(planner, language_server, tmp, "plain", ["--set", "bridge=false"])


@pytest.fixture(scope="module")
def bridged(planner: ReferencePlanner, language_server: LanguageServer, tmp: Path) -> Capture:
    """Captured behind the bridge: the flows hold what the language server was sent."""
    return capture(planner, language_server, tmp, "bridged", [])


def test_the_live_bridge_corrected_what_the_gateway_sent(plain: Capture, bridged: Capture):
    """The baseline the replays are compared with (test_planner_hop.py has the details)."""
    assert plain.received == [message(g) for _, g in TURNS]
    first, second = bridged.received
    assert commands(first) == [("npm test", 1, False)]
    assert commands(second) == [("cat test_x.py", 2, False)]
    assert len(parse_request(second).steps) == 1, "the resumed cascade gets only the new step"
    flows = sends(read_flows(bridged.path))
    assert [unframed(f.request.raw_content) for f in flows] == bridged.received
    # Made after the request went upstream, on the flow before mitmproxy wrote it out (-w):
    assert all(f.metadata["bridge"]["status"] == "corrected" and f.modified() for f in flows)
    assert all(f.client_conn.proxy_mode.full_spec == bridged.listeners.planner for f in flows), "the spec is kept"


# ---- -nr: offline correction --------------------------------------------------------------


def test_offline_correction_is_deterministic_and_equals_the_live_bridge(plain: Capture, bridged: Capture, tmp: Path):
    outs = []
    for i in (1, 2):
        out = tmp / f"offline{i}.flows"
        run("-nr", str(plain.path), *batch_modes(plain.listeners), "-w", str(out), confdir=tmp)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1], "two offline runs over the same capture wrote different flow files"

    captured, corrected = read_flows(plain.path), read_flows(tmp / "offline1.flows")
    assert [f.id for f in corrected] == [f.id for f in captured]  # capture order, the capture's own flows
    got = sends(corrected)
    # The ledger is rebuilt in capture order (turn 2 gets only its new step) and the chat flows'
    # observations with it (npm test's exit 1): the same bytes the live bridge sent.
    assert [unframed(f.request.raw_content) for f in got] == bridged.received
    for f, c in zip(got, sends(captured), strict=True):
        assert f.metadata["bridge"]["status"] == "corrected" and f.metadata["bridge"]["dialect"] == "cascade"
        assert f._backup is not None and f._backup["request"]["content"] == c.request.raw_content  # revertible
        assert f.request.headers[HANDLED_HEADER] == "corrected"
        assert outside_field_9(unframed(f.request.raw_content)) == outside_field_9(unframed(c.request.raw_content))
    assert got[1].metadata["bridge"]["delta_start"] == 4
    chats = [f for f in corrected if f.request.path == "/v1/messages"]
    assert [f.metadata["bridge"]["status"] for f in chats] == ["observed", "observed"]


def test_offline_correction_of_corrected_flows_changes_nothing(plain: Capture, bridged: Capture, tmp: Path):
    once = tmp / "offline-once.flows"
    run("-nr", str(plain.path), *batch_modes(plain.listeners), "-w", str(once), confdir=tmp)
    twice = tmp / "offline-twice.flows"
    run("-nr", str(once), *batch_modes(plain.listeners), "-w", str(twice), confdir=tmp)
    # Equal states (not bytes: mitmproxy's writer stores a backup dict reversed on every round trip).
    assert [f.get_state() for f in read_flows(twice)] == [f.get_state() for f in read_flows(once)]

    # A capture made behind the live bridge: its requests stay as the language server got them.
    live = tmp / "bridged-offline.flows"
    run("-nr", str(bridged.path), *batch_modes(bridged.listeners), "-w", str(live), confdir=tmp)
    before, after = read_flows(bridged.path), read_flows(live)
    for a, b in zip(after, before, strict=True):
        assert a.request.raw_content == b.request.raw_content
        assert a.metadata == b.metadata


def test_offline_replay_without_the_planner_listener_leaves_planner_flows_alone(plain: Capture, tmp: Path):
    """A flow is a planner flow only on a planner listener: the capture's spec must be given."""
    out = tmp / "offline-no-planner.flows"
    run(
        "-nr",
        str(plain.path),
        "--mode",
        plain.listeners.chat,
        "--set",
        "bridge_mode=observe",
        "-w",
        str(out),
        confdir=tmp,
    )
    for f, c in zip(sends(read_flows(out)), sends(read_flows(plain.path)), strict=True):
        assert f.request.raw_content == c.request.raw_content and "bridge" not in f.metadata


# ---- -C: client replay -----------------------------------------------------------------------


def test_client_replay_corrects_a_plain_capture_once(
    plain: Capture, bridged: Capture, language_server: LanguageServer, tmp: Path
):
    seen = len(language_server.sends())
    out = tmp / "client-replay.flows"
    run("-n", "-C", str(plain.path), *batch_modes(plain.listeners), "-w", str(out), confdir=tmp)
    got = [r.body for r in language_server.sends()[seen:]]
    assert got == bridged.received, "replayed over h2c, corrected as the live bridge did (chat flows replayed too)"
    assert all(f.metadata["bridge"]["status"] == "corrected" for f in sends(read_flows(out)))

    # Replaying the replayed (now corrected) flows sends the very same requests: no second correction.
    run("-n", "-C", str(out), *batch_modes(plain.listeners), confdir=tmp)
    assert [r.body for r in language_server.sends()[seen + 2 :]] == bridged.received


def test_client_replay_of_a_bridged_capture_is_not_corrected_again(
    bridged: Capture, language_server: LanguageServer, tmp: Path
):
    seen = len(language_server.sends())
    run("-n", "-C", str(bridged.path), *batch_modes(bridged.listeners), confdir=tmp)
    got = language_server.sends()[seen:]
    assert [r.body for r in got] == bridged.received
    assert all(r.metadata.get(HANDLED_HEADER) == "corrected" for r in got)


# ---- -S: server replay -----------------------------------------------------------------------


@pytest.mark.parametrize("bridge_on", [True, False], ids=["bridge-on", "bridge-off"])
def test_server_replay_of_a_bridged_capture_matches_corrected_requests(
    bridge_on: bool, bridged: Capture, planner: ReferencePlanner, language_server: LanguageServer, tmp: Path
):
    """The addon corrects (and keeps its ledger) before serverplayback hashes the request, so the
    gateway's own bodies find the capture's corrected ones; nothing reaches the language server."""
    lis = listeners(planner, language_server.port)  # the capture's upstream: request host and port match
    seen = len(language_server.received)
    options = [
        "-S",
        str(bridged.path),
        "--set",
        "server_replay_extra=404",  # an unmatched request gets a 404, never the language server
        "--set",
        "connection_strategy=lazy",
        "--set",
        f"bridge={str(bridge_on).lower()}",
    ]
    p = start(lis, tmp, f"sreplay-{bridge_on}", options)
    try:
        if bridge_on:
            converse(lis)
        else:
            # Control: the gateway's original bodies do not match a capture of corrected requests.
            with pytest.raises(grpc.RpcError):
                call(lis.port, message(TURNS[0][1]))
    finally:
        p.stop()
    assert len(language_server.received) == seen, "server replay let a request through to the language server"


# ---- two bridges chained --------------------------------------------------------------------


def test_chained_bridges_correct_once(planner: ReferencePlanner, language_server: LanguageServer, tmp: Path):
    """gateway -> A (chat hop observing + planner hop) -> B (planner hop) -> language server.

    B lacks A's observation of the chat hop: correcting again it would take back A's exit 1
    (no signal a program cannot forge states it) and hold its own ledger of A's output."""
    b = listeners(planner, language_server.port)
    proxy_b = start(b, tmp, "chain-b")
    try:
        a = listeners(planner, b.port)
        proxy_a = start(a, tmp, "chain-a")
        try:
            seen = len(language_server.sends())
            converse(a)
            got = [r.body for r in language_server.sends()[seen:]]
        finally:
            proxy_a.stop()
    finally:
        proxy_b.stop()
    assert commands(got[0]) == [("npm test", 1, False)], "A's observed exit code survives B"
    assert commands(got[1]) == [("cat test_x.py", 2, False)]
    assert len(parse_request(got[1]).steps) == 1
    assert "already corrected by a bridge upstream" in proxy_b.output
    assert proxy_a.output.count("bridge: planner flow") == 2


# ---- the scripts for people ---------------------------------------------------------------------


def run_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def planner_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "SendUserCascadeMessage" in line]


def test_replay_check_finds_nothing_to_change_in_planner_captures(bridged: Capture):
    """Today's corrections of the gateway's bodies (a flow's backup, a record's redacted body_hex),
    with the ledger and the chat hop's observations as they were, equal what was sent."""
    for source in (bridged.records, bridged.path):
        done = run_script("replay_check.py", str(source))
        assert done.returncode == 0, done.stdout + done.stderr
        lines = planner_lines(done.stdout)
        assert len(lines) == 2 and all(line.startswith("same ") for line in lines), done.stdout
        assert "recorded: corrected, 4 -> 3 steps" in done.stdout
        assert "recorded: corrected, 5 -> 1 steps (4 already_delivered" in done.stdout
        assert "wsk-FIXTURE-KEY" not in done.stdout


def test_replay_check_reports_a_planner_change_and_fails(bridged: Capture, tmp: Path):
    # A record whose send kept the gateway's exit code 0 and its stdout copy (an older, buggy build).
    edited = tmp / "edited-planner-records"
    edited.mkdir()
    for p in bridged.records.glob("*.json"):
        rec = orjson.loads(p.read_bytes())
        if rec.get("dialect") == "cascade":
            part = rec["planner"]
            for step in part["steps_after"]:
                if step.get("runCommand", {}).get("exitCode") == 1:
                    step["runCommand"]["exitCode"] = 0
            part["changes"] = [c for c in part["changes"] if c["action"] != "stdout_deduplicated"]
        (edited / p.name).write_bytes(orjson.dumps(rec))
    done = run_script("replay_check.py", str(edited))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "step was   #0   run_command      DONE   exit 0   $ npm test" in done.stdout
    assert "     now   #0   run_command      DONE   exit 1   $ npm test" in done.stdout
    assert "new change   step 0: stdout_deduplicated" in done.stdout
    assert "2 would change" in done.stdout

    # Without the chat hop's requests the same sends state the same codes: with no client named
    # the results' own frames ("Exit code 1", "Exit code 2") count (issue 17).
    alone = tmp / "planner-records-alone"
    alone.mkdir()
    for p in bridged.records.glob("*.json"):
        if orjson.loads(p.read_bytes()).get("dialect") == "cascade":
            (alone / p.name).write_bytes(p.read_bytes())
    done = run_script("replay_check.py", str(alone), "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 checked, 2 same, 0 would change" in done.stdout


def test_replay_check_of_a_corrected_body_changed_by_hand(bridged: Capture, tmp: Path):
    """A flow file: the bytes sent are compared too, not only the decoded steps."""
    flows = read_flows(bridged.path)
    f = sends(flows)[0]
    f.request.headers["content-type"] = "application/grpc"  # unchanged; the body gets one byte more
    body = bytearray(f.request.raw_content)
    body[4] += 1
    f.request.raw_content = bytes(body) + b"\x00"
    out = tmp / "hand-edited.flows"
    with out.open("wb") as fh:
        w = io.FlowWriter(fh)
        for x in flows:
            w.add(x)
    done = run_script("replay_check.py", str(out), "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CHANGED" in done.stdout


def test_summary_counts_planner_sends_by_cascade(bridged: Capture):
    for source in (bridged.records, bridged.path):
        done = run_script("summary.py", str(source))
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
        block = out.split("conversation cascade ", 1)[1].split("\n\n", 1)[0]
        assert block.splitlines()[0].endswith(": 2 requests"), out
        rows = planner_lines(block)
        assert "corrected (1 dropped)" in rows[0] and "4 -> 3" in rows[0] and "1 (1)" in rows[0], out
        assert "5 -> 1 (4 delivered before)" in rows[1] and "1 (2)" in rows[1], out
        assert "2 planner-hop sends in 1 cascade, 2 corrected, 9 steps from the gateway -> 4 sent" in out
        assert "already_delivered 4, dropped 1, exit_code 2, stdout_deduplicated 2" in out
