"""Responses over WebSocket through a real mitmdump with the bridge, as Codex's built-in OpenAI
provider speaks it: a real WebSocket client (wsproto on a socket) -> mitmdump --mode reverse ->
a small Responses-over-WebSocket model server (wsproto), which keeps every client frame as it
arrived and answers each ``response.create`` with Responses stream events, one frame each.

Then the capture (``-w``) goes through ``mitmdump -nr`` with the bridge again: no frame is
rewritten twice and no record is written twice; scripts/replay_check.py reads its frames.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import wsproto
import wsproto.events as ev
from mitmproxy import http, io
from support.mitmdump import Mitmdump, mitmdump_path

from .conftest import ROOT

pytestmark = pytest.mark.e2e

BRIDGE = str(ROOT / "addons" / "bridge.py")
CODEX_UA = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"


def fc(call_id: str, script: str) -> dict[str, Any]:
    args = {"command": ["bash", "-lc", script], "workdir": "/w"}
    return {"type": "function_call", "name": "shell", "arguments": orjson.dumps(args).decode(), "call_id": call_id}


def out(call_id: str, output: str, code: int) -> dict[str, Any]:
    doc = {"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.1}}
    return {"type": "function_call_output", "call_id": call_id, "output": orjson.dumps(doc).decode()}


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def create(*items: Any, **extra: Any) -> bytes:
    doc = {"type": "response.create", "model": "gpt-5-codex", "instructions": "You are Codex.", "input": list(items)}
    return orjson.dumps({**doc, **extra})


WARMUP = create(user("build it"), generate=False)
FAILED = create(user("build it"), fc("c1", "make"), out("c1", "make: *** [all] Error 2", 2))
# Only the new items, after the server's own response: every step is the delta.
RESUMED = create(fc("c2", "ls"), out("c2", "a.txt", 0), previous_response_id="resp_2")
# Longer than mitmproxy's 4000-byte fragments, non-ASCII throughout: must arrive intact.
LONG = create(user("é✗🙂" * 1500), fc("c3", "make"), out("c3", "échec ✗", 2))
OTHER = orjson.dumps({"type": "response.cancel"})
# Codex's next frame: only the output of the call the model made in resp_4 (the server holds the call).
ANSWER = create(out("srv4", "rm: cannot remove", 2), previous_response_id="resp_4")


# ---- a Responses-over-WebSocket model server ----------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    frames: list[bytes] = field(default_factory=list)  # client text frames, as they arrived


class ModelServer:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections: list[Received] = []
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> ModelServer:
        self._accept.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        for t in self._threads:
            t.join(5)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _handle(self, conn: socket.socket) -> None:
        ws = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
        rec: Received | None = None
        text: list[str] = []
        n = 0
        with conn:
            while True:
                data = conn.recv(65536)
                ws.receive_data(data or None)
                for e in ws.events():
                    if isinstance(e, ev.Request):
                        rec = Received(e.target, {k.decode().lower(): v.decode() for k, v in e.extra_headers})
                        self.connections.append(rec)
                        conn.sendall(ws.send(ev.AcceptConnection()))
                    elif isinstance(e, ev.TextMessage):
                        text.append(e.data)
                        if not e.message_finished:
                            continue
                        assert rec is not None
                        frame = "".join(text).encode()
                        text.clear()
                        rec.frames.append(frame)
                        if orjson.loads(frame).get("type") == "response.create":
                            n += 1
                            for event in self._events(n):
                                conn.sendall(ws.send(ev.Message(data=orjson.dumps(event).decode())))
                    elif isinstance(e, ev.CloseConnection):
                        conn.sendall(ws.send(e.response()))
                        return
                    elif isinstance(e, ev.Ping):
                        conn.sendall(ws.send(e.response()))
                if not data:
                    return

    @staticmethod
    def _events(n: int) -> list[dict[str, Any]]:
        rid = f"resp_{n}"
        call = fc(f"srv{n}", "rm -rf /tmp/x")  # model output that looks like history: never touched
        return [
            {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
            {"type": "response.output_item.done", "output_index": 0, "item": call},
            {"type": "response.completed", "response": {"id": rid, "status": "completed", "output": [call]}},
        ]


# ---- a WebSocket client ----------------------------------------------------------------------------


class Client:
    """A blocking RFC 6455 client over wsproto, as Codex's would be."""

    def __init__(self, port: int, path: str = "/v1/responses", headers: dict[str, str] | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
        self.sock.sendall(self.ws.send(ev.Request(host=f"127.0.0.1:{port}", target=path, extra_headers=extra)))
        self._pending: list[ev.Event] = []
        self._text: list[str] = []
        first = self._next()
        assert isinstance(first, ev.AcceptConnection), first

    def _next(self) -> ev.Event:
        while not self._pending:
            data = self.sock.recv(65536)
            self.ws.receive_data(data or None)
            self._pending.extend(self.ws.events())
            if not data and not self._pending:
                raise EOFError("the proxy closed the connection")
        return self._pending.pop(0)

    def send(self, frame: bytes) -> None:
        self.sock.sendall(self.ws.send(ev.Message(data=frame.decode())))

    def receive(self) -> bytes:
        while True:
            e = self._next()
            if isinstance(e, ev.TextMessage):
                self._text.append(e.data)
                if e.message_finished:
                    whole = "".join(self._text).encode()
                    self._text.clear()
                    return whole
            elif isinstance(e, ev.Ping):
                self.sock.sendall(self.ws.send(e.response()))

    def close(self) -> None:
        self.sock.sendall(self.ws.send(ev.CloseConnection(code=1000)))
        try:
            while not isinstance(self._next(), ev.CloseConnection):
                pass
        except (EOFError, OSError):
            pass
        self.sock.close()


# ---- the run ------------------------------------------------------------------------------------


@dataclass
class Session:
    server: ModelServer
    replies: list[list[bytes]]  # per client frame sent: the server frames the client got
    records: Path
    flows: Path
    confdir: Path
    proxy_output: str


def records_in(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, orjson.loads(p.read_bytes())) for p in sorted(directory.glob("[!.]*.json"))]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    tmp = tmp_path_factory.mktemp("ws")
    records, flows, confdir = tmp / "records", tmp / "flows.mitm", tmp / "conf"
    with ModelServer() as server:
        proxy = Mitmdump(f"http://127.0.0.1:{server.port}", records, confdir, ["-w", str(flows)])
        with proxy:
            client = Client(proxy.port, headers={"user-agent": CODEX_UA, "authorization": "Bearer sk-e2e-secret-0123"})
            replies = []
            for frame in (WARMUP, FAILED, OTHER, RESUMED, LONG, ANSWER):
                client.send(frame)
                replies.append([client.receive() for _ in range(3)] if frame is not OTHER else [])
            client.close()
            plain = Client(proxy.port, path="/v1/realtime", headers={"user-agent": CODEX_UA})
            plain.send(FAILED)
            plain.receive()
            plain.close()
        yield Session(server, replies, records, flows, confdir, proxy.output)


def test_frames_reach_the_server_bridged_and_intact(session):
    conn = session.server.connections[0]
    assert conn.path == "/v1/responses"
    _, failed, _, resumed, long, answer = (orjson.loads(f) for f in conn.frames)
    assert conn.frames[0] == WARMUP and conn.frames[2] == OTHER  # nothing to bridge: byte for byte
    assert [s["runCommand"]["exitCode"] for s in failed["additional_steps"]] == [2]
    assert failed["type"] == "response.create" and [i["type"] for i in failed["input"]] == ["message"]
    assert resumed["previous_response_id"] == "resp_2" and resumed["additional_steps_delta_start"] == 0
    assert [s["runCommand"]["exitCode"] for s in resumed["additional_steps"]] == [0]
    # the long frame: re-fragmented by mitmproxy, every character intact
    assert long["input"][0]["content"][0]["text"] == "é✗🙂" * 1500
    assert "\ufffd" not in conn.frames[4].decode()
    assert [s["runCommand"]["exitCode"] for s in long["additional_steps"]] == [2]
    # the output answers the call the server holds: a step with its code, the call not sent again
    assert answer["input"] == [] and answer["previous_response_id"] == "resp_4"
    assert [(s["runCommand"]["commandLine"], s["runCommand"]["exitCode"]) for s in answer["additional_steps"]] == [
        ("bash -lc 'rm -rf /tmp/x'", 2)
    ]


def test_server_frames_reach_the_client_untouched(session):
    for n, replies in enumerate(r for r in session.replies if r):
        events = [orjson.loads(r) for r in replies]
        assert events == ModelServer._events(n + 1)


def test_an_unselected_websocket_passes_untouched(session):
    other = session.server.connections[1]
    assert other.path == "/v1/realtime" and other.frames == [FAILED]


def test_one_record_per_client_frame(session):
    recs = records_in(session.records)
    assert [r["websocket_message"] for _, r in recs] == [0, 4, 9, 13, 17]  # client frames, server frames between
    flow_id = recs[0][1]["flow_id"]
    assert all(name.endswith(f"-{flow_id}-m{r['websocket_message']}.json") for name, r in recs)
    assert [r["status"] for _, r in recs] == ["unchanged", "rewritten", "rewritten", "rewritten", "rewritten"]
    assert recs[4][1]["websocket_context"] == [fc("srv4", "rm -rf /tmp/x")]
    _, failed = recs[1]
    assert failed["before"] == orjson.loads(FAILED) and failed["dialect"] == "responses"
    assert [s["runCommand"]["exitCode"] for s in failed["steps"]] == [2]
    assert "previous_response_id" in " ".join(recs[2][1]["notes"])
    assert all("sk-e2e-secret" not in orjson.dumps(r).decode() for _, r in recs)
    assert "bridge: flow" in session.proxy_output and "message 4" in session.proxy_output


def test_the_capture_keeps_the_verdicts_and_the_originals(session):
    with session.flows.open("rb") as fo:
        flows = [f for f in io.FlowReader(fo).stream() if isinstance(f, http.HTTPFlow)]
    f = next(f for f in flows if f.request.path == "/v1/responses")
    assert sorted(f.metadata["bridge_ws"], key=int) == ["0", "4", "9", "13", "17"]
    assert f.metadata["bridge_ws"]["4"]["original"] == FAILED
    assert "additional_steps" in orjson.loads(f.websocket.messages[4].content)
    assert f.comment.startswith("bridge: websocket message 17:")


def test_offline_replay_never_rewrites_a_frame_twice(session, tmp_path):
    again, records = tmp_path / "again.mitm", tmp_path / "records"
    done = subprocess.run(
        [
            *(mitmdump_path(), "-nr", str(session.flows), "-s", BRIDGE, "-w", str(again)),
            *("--set", "bridge_mode=rewrite", "--set", f"bridge_records={records}"),
            *("--set", f"confdir={session.confdir}"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with session.flows.open("rb") as a, again.open("rb") as b:
        first = [f for f in io.FlowReader(a).stream() if isinstance(f, http.HTTPFlow)]
        second = [f for f in io.FlowReader(b).stream() if isinstance(f, http.HTTPFlow)]
    assert [[m.content for m in f.websocket.messages] for f in first] == [
        [m.content for m in f.websocket.messages] for f in second
    ]
    assert not records.exists() or records_in(records) == []


def test_replay_check_reads_the_frames_of_records_and_flows(session):
    for source in (session.records, session.flows):
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "replay_check.py"), str(source)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "5 checked, 5 same, 0 would change" in done.stdout
        assert "WS #4" in done.stdout


def _children_running(pid: int, marker: str) -> list[int]:
    """The child processes of ``pid`` whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and marker in cmdline:
            found.append(int(proc.name))
    return found


def test_a_large_frame_is_bridged_in_the_worker_through_mitmdump(tmp_path):
    """A frame of 512 KiB or more: mitmproxy holds it while the worker process bridges it, then
    sends it on, re-fragmented, every character intact; smaller frames keep flowing meanwhile."""
    text = "échec ✗ " * 70_000  # about 700 KB of UTF-8, beyond the offload threshold
    big = create(user("build it"), fc("c9", "make"), out("c9", text, 2))
    assert len(big) >= 512 * 1024
    with (
        ModelServer() as server,
        Mitmdump(f"http://127.0.0.1:{server.port}", tmp_path / "records", tmp_path / "conf") as proxy,
    ):
        client = Client(proxy.port, headers={"user-agent": CODEX_UA})
        client.send(big)
        replies = [client.receive() for _ in range(3)]
        client.send(FAILED)  # a small one after it, on the same connection
        replies += [client.receive() for _ in range(3)]
        assert proxy._proc is not None
        assert _children_running(proxy._proc.pid, "native_bridge.runtime.offload:Reader"), "not bridged in the worker"
        client.close()
        output = proxy.output
    got = [orjson.loads(f) for f in server.connections[0].frames]
    assert [s["runCommand"]["exitCode"] for s in got[0]["additional_steps"]] == [2]
    assert text in got[0]["additional_steps"][0]["runCommand"]["combinedOutput"]["full"]
    assert "\ufffd" not in server.connections[0].frames[0].decode()
    assert [s["runCommand"]["exitCode"] for s in got[1]["additional_steps"]] == [2]
    assert [orjson.loads(r)["type"] for r in replies] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ] * 2
    assert "message 0: 1 step (1 failed: exit 2 ×1)" in output, output
    assert len(records_in(tmp_path / "records")) == 2
