"""A stand-in Windsurf language server (the planner) for tests and the real-gateway harness.

It speaks prior-knowledge HTTP/2 cleartext on 127.0.0.1 only and answers every
``/exa.language_server_pb.LanguageServerService/<Method>`` with a small hand-encoded
protobuf reply, in each transport the gateway (dwgx/WindsurfAPI v3.9.27) uses:

* gRPC (``application/grpc``): 5-byte frames (gzip when flagged), trailers ``grpc-status: 0``;
* Connect streaming (``application/connect+proto``): the reply is one data envelope and an
  end-stream envelope ``{}``;
* Connect unary (``application/proto``, ``content-encoding: gzip`` allowed): the bare message.

Every SendUserCascadeMessage is recorded exactly as received (path, content type, headers,
the raw body with its envelope, base64) in memory and, when ``capture_log`` is set, in a
JSONL file; ``rpc_log`` records every call.

As a program (scripts/fake_language_server.py, as ``LS_BINARY_PATH`` or behind
scripts/language-server-shim) it takes the real language server's flags (``--server_port=N``;
the others are accepted and ignored, unknown ones too) and ``--config PATH`` (default
``$HOME/.fake_ls/config.json``: the gateway passes only HOME, PATH, LANG and a few more
variables, so settings come from a file). Keys::

    {"capture_log": "...jsonl", "rpc_log": "...jsonl",   # default: next to the config file
     "cascade_prefix": "fake-cascade-", "tool_command": "cat test_x.py", "tool_cwd": "",
     "tool_preface": "", "user_input_step": true, "final_text": "..."}

It ends on SIGTERM/SIGINT, when its parent dies (PR_SET_PDEATHSIG) and when its stdin, a
pipe from the gateway, reaches EOF.

In-process (tests)::

    with FakeLanguageServer(port=0, tool_command="cat test_x.py") as ls:
        ...  # talk to 127.0.0.1:ls.port
        ls.captured()  # [{"path", "content_type", "headers", "body_b64", ...}, ...]

Planner behaviour per cascade: the first SendUserCascadeMessage whose cascade_config
allow-lists run_command gets [user_input (DONE), run_command ``tool_command`` (GENERATING)],
which the gateway surfaces to the agent as a tool call; any other send gets [user_input (DONE),
planner_response ``final_text`` (DONE)]. GetCascadeTrajectory reports RUNNING on the first
poll after a send, IDLE afterwards. ReplayGroundTruthTrajectory makes its replay_steps (2) the
cascade's (cascade_id 3) trajectory; HandleCascadeUserInteraction is accepted and executes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gzip
import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import ProtocolError

from .lifetime import die_with_parent

ROOT = Path(__file__).resolve().parents[2]

try:
    from native_bridge.cascade import wire
except ImportError:  # a checkout whose package is not installed
    sys.path.insert(0, str(ROOT / "addons"))
    from native_bridge.cascade import wire

SERVICE = "/exa.language_server_pb.LanguageServerService/"
HOST = "127.0.0.1"  # never anything else

DEFAULTS: dict[str, Any] = {
    "capture_log": None,
    "rpc_log": None,
    "cascade_prefix": "fake-cascade-",
    "tool_command": "cat test_x.py",
    "tool_cwd": "",
    "tool_preface": "",
    "user_input_step": True,
    "final_text": (
        "The test file is missing: cat test_x.py exited with code 2, so the suite fails before any assertion runs."
    ),
}

STEP_DONE = 3
STEP_GENERATING = 8
TYPE_USER_INPUT = 14  # official CortexStepType USER_INPUT; its body is oneof field 19
TYPE_PLANNER_RESPONSE = 15  # body: oneof field 20
TYPE_RUN_COMMAND = 28  # the gateway assumes type number == oneof field number
RUNNING, IDLE = 2, 1  # CascadeRunStatus as the gateway reads it


def log(message: str) -> None:
    print(f"[fake_language_server {os.getpid()}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ protobuf (wire helpers)


def _first(buf: bytes, number: int, wire_type: int) -> wire.Field | None:
    try:
        found = wire.fields(buf)
    except wire.WireError:
        return None
    return next((f for f in found if f.number == number and f.wire_type == wire_type), None)


def _string(buf: bytes, number: int) -> str:
    f = _first(buf, number, wire.LEN)
    return wire.value(buf, f).decode("utf-8", "replace") if f is not None else ""


def _int(buf: bytes, number: int) -> int:
    f = _first(buf, number, wire.VARINT)
    return wire.varint_value(buf, f) if f is not None else 0


def _text(number: int, text: str) -> bytes:
    return wire.len_field(number, text.encode())


def planner_step(text: str) -> bytes:
    """CortexTrajectoryStep{type, status, planner_response (20) {response (1)}}."""
    return (
        wire.varint_field(1, TYPE_PLANNER_RESPONSE)
        + wire.varint_field(4, STEP_DONE)
        + wire.len_field(20, _text(1, text))
    )


def user_input_step(query: str) -> bytes:
    """CortexTrajectoryStep{type, status, user_input (19) {query (1)}}.

    v3.9.27 reads "type 14 + field 19 whose field 1 looks like a path" as a view_file call,
    so only a query with whitespace in it is echoed."""
    body = _text(1, query) if any(ch.isspace() for ch in query) else b""
    return wire.varint_field(1, TYPE_USER_INPUT) + wire.varint_field(4, STEP_DONE) + wire.len_field(19, body)


def run_command_step(command: str, cwd: str = "") -> bytes:
    """A proposed command: CortexTrajectoryStep{type, GENERATING, run_command (28) {command_line (23), cwd (2)}}."""
    body = _text(23, command) + (_text(2, cwd) if cwd else b"")
    return wire.varint_field(1, TYPE_RUN_COMMAND) + wire.varint_field(4, STEP_GENERATING) + wire.len_field(28, body)


# ------------------------------------------------------------------ the planner


class Planner:
    """Per-cascade steps and poll state; one per server."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.next_id = 1
        self.cascades: dict[str, dict[str, Any]] = {}

    def cascade(self, cascade_id: str) -> dict[str, Any]:
        # An unknown id (the gateway resumed one from an earlier run) is adopted, not refused.
        return self.cascades.setdefault(cascade_id, {"steps": [], "sends": 0, "polls": 0})

    def handle(self, method: str, request: bytes) -> bytes:
        cfg = self.config
        if method == "StartCascade":
            cascade_id = f"{cfg['cascade_prefix']}{self.next_id}"
            self.next_id += 1
            self.cascade(cascade_id)
            return _text(1, cascade_id)
        if method == "SendUserCascadeMessage":
            c = self.cascade(_string(request, 1))
            c["sends"] += 1
            c["polls"] = 0
            config_field = _first(request, 5, wire.LEN)
            run_command_allowed = config_field is not None and b"run_command" in wire.value(request, config_field)
            items = _first(request, 2, wire.LEN)
            query = _string(wire.value(request, items), 1) if items is not None else ""
            if cfg["user_input_step"]:
                c["steps"].append(user_input_step(query))
            if run_command_allowed and c["sends"] == 1 and cfg["tool_command"]:
                if cfg["tool_preface"]:
                    c["steps"].append(planner_step(cfg["tool_preface"]))
                c["steps"].append(run_command_step(cfg["tool_command"], cfg["tool_cwd"]))
            else:
                c["steps"].append(planner_step(cfg["final_text"]))
            return b""
        if method == "ReplayGroundTruthTrajectory":
            # cascade_id 3, replay_steps 2: the replayed steps become the cascade's trajectory.
            c = self.cascade(_string(request, 3))
            c["steps"] = [
                wire.value(request, f) for f in wire.fields(request) if f.number == 2 and f.wire_type == wire.LEN
            ]
            c["polls"] = 0
            return b""  # ReplayGroundTruthTrajectoryResponse; its trajectory (1) is not modelled
        if method == "HandleCascadeUserInteraction":
            # cascade_id 1, interaction 2: accepted (empty reply, as officially); nothing is executed here.
            self.cascade(_string(request, 1))
            return b""
        if method == "GetCascadeTrajectorySteps":
            c = self.cascade(_string(request, 1))
            return b"".join(wire.len_field(1, s) for s in c["steps"][_int(request, 2) :])
        if method == "GetCascadeTrajectory":
            cascade_id = _string(request, 1)
            c = self.cascade(cascade_id)
            c["polls"] += 1
            trajectory = _text(1, f"traj-{cascade_id}") + _text(6, cascade_id)
            return wire.len_field(1, trajectory) + wire.varint_field(2, RUNNING if c["polls"] == 1 else IDLE)
        if method == "GetCascadeTrajectoryGeneratorMetadata":
            usage = wire.varint_field(2, 100) + wire.varint_field(3, 10)  # input / output tokens
            return wire.len_field(1, wire.len_field(1, wire.len_field(4, usage)))
        # InitializeCascadePanelState, AddTrackedWorkspace, UpdateWorkspaceTrust, Heartbeat, ...
        return b""


# ------------------------------------------------------------------ framing


def unframe(body: bytes, protocol: str, content_encoding: str) -> bytes:
    """The request message: envelopes' payloads joined (gzip when flagged), end-stream skipped."""
    if protocol == "unary":
        return gzip.decompress(body) if content_encoding == "gzip" else body
    out = bytearray()
    pos = 0
    while pos + 5 <= len(body):
        flags = body[pos]
        size = int.from_bytes(body[pos + 1 : pos + 5], "big")
        payload = body[pos + 5 : pos + 5 + size]
        pos += 5 + size
        if flags & 0x02:  # Connect end-stream
            continue
        out += gzip.decompress(payload) if flags & 0x01 else payload
    return bytes(out)


def frame(message: bytes, flags: int = 0) -> bytes:
    return bytes([flags]) + len(message).to_bytes(4, "big") + message


def protocol_of(content_type: str) -> str:
    if content_type.startswith("application/connect+"):
        return "connect"
    if content_type.startswith("application/grpc"):
        return "grpc"
    return "unary"  # application/proto (Connect unary)


# ------------------------------------------------------------------ the HTTP/2 server (sans-IO h2)


class _Protocol(asyncio.Protocol):
    def __init__(self, server: FakeLanguageServer) -> None:
        self.server = server
        self.conn = H2Connection(config=H2Configuration(client_side=False, header_encoding="utf-8"))
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, tuple[dict[str, str], bytearray]] = {}
        self.pending: dict[int, tuple[bytes, list[tuple[str, str]] | None]] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._connections.add(self)
        self.conn.initiate_connection()
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._connections.discard(self)
        self.streams.clear()
        self.pending.clear()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.conn.receive_data(data)
        except ProtocolError as e:
            log(f"HTTP/2 protocol error, closing the connection: {e!r}")
            self._flush()
            if self.transport is not None:
                self.transport.close()
            return
        for event in events:
            if isinstance(event, RequestReceived):
                self.streams[event.stream_id] = (dict(event.headers), bytearray())
            elif isinstance(event, DataReceived):
                if event.stream_id in self.streams:
                    self.streams[event.stream_id][1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                self._respond(event.stream_id)
            elif isinstance(event, StreamReset):
                self.streams.pop(event.stream_id, None)
                self.pending.pop(event.stream_id, None)
            elif isinstance(event, WindowUpdated):
                self._send_pending()
            elif isinstance(event, ConnectionTerminated) and self.transport is not None:
                self.transport.close()
        self._flush()

    def _respond(self, stream_id: int) -> None:
        entry = self.streams.pop(stream_id, None)
        if entry is None:
            return
        headers, raw = entry
        body = bytes(raw)
        path = headers.get(":path", "")
        ctype = headers.get("content-type", "")
        protocol = protocol_of(ctype)
        method = path.removeprefix(SERVICE) if path.startswith(SERVICE) else path.rsplit("/", 1)[-1]
        self.server.record(headers, body)
        if headers.get(":method") != "POST":
            self.conn.send_headers(
                stream_id,
                [
                    (":status", "200"),
                    ("content-type", "application/grpc"),
                    ("grpc-status", "12"),
                    ("grpc-message", "only POST"),
                ],
                end_stream=True,
            )
            return
        try:
            message = unframe(body, protocol, headers.get("content-encoding", ""))
        except (OSError, EOFError) as e:  # a gzip payload that does not decompress
            log(f"{method}: cannot read the request body: {e!r}")
            message = b""
        try:
            reply = self.server.planner.handle(method, message)
        except wire.WireError as e:
            log(f"{method}: malformed request message: {e}")
            reply = b""
        log(f"POST {method} content-type={ctype} in={len(body)}B out={len(reply)}B")
        if protocol == "grpc":
            self.conn.send_headers(stream_id, [(":status", "200"), ("content-type", "application/grpc")])
            self._queue(stream_id, frame(reply), [("grpc-status", "0"), ("grpc-message", "")])
        elif protocol == "connect":
            self.conn.send_headers(stream_id, [(":status", "200"), ("content-type", "application/connect+proto")])
            self._queue(stream_id, frame(reply) + frame(b"{}", 0x02), None)
        else:
            self.conn.send_headers(
                stream_id,
                [(":status", "200"), ("content-type", "application/proto"), ("content-length", str(len(reply)))],
            )
            self._queue(stream_id, reply, None)

    def _queue(self, stream_id: int, data: bytes, trailers: list[tuple[str, str]] | None) -> None:
        self.pending[stream_id] = (data, trailers)
        self._send_pending()

    def _send_pending(self) -> None:
        for stream_id in list(self.pending):
            data, trailers = self.pending[stream_id]
            while data:
                window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
                if window <= 0:
                    break
                self.conn.send_data(stream_id, data[:window])
                data = data[window:]
            if data:
                self.pending[stream_id] = (data, trailers)
                continue
            del self.pending[stream_id]
            if trailers:
                self.conn.send_headers(stream_id, trailers, end_stream=True)
            else:
                self.conn.end_stream(stream_id)
        self._flush()

    def _flush(self) -> None:
        out = self.conn.data_to_send()
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(out)


class FakeLanguageServer:
    """The stand-in language server: in a daemon thread (``start``/``stop``) or awaited (``serve``)."""

    def __init__(self, port: int = 0, **config: Any) -> None:
        unknown = set(config) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown fake language server setting(s): {', '.join(sorted(unknown))}")
        self.config = {**DEFAULTS, **config}
        self.requested_port = port
        self.port = 0
        self.planner = Planner(self.config)
        self._captured: list[dict[str, Any]] = []
        self._calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._connections: set[_Protocol] = set()
        self._error: BaseException | None = None
        for key in ("capture_log", "rpc_log"):
            if self.config[key]:
                Path(self.config[key]).parent.mkdir(parents=True, exist_ok=True)

    # -- what it received

    def record(self, headers: dict[str, str], body: bytes) -> None:
        entry = {
            "t": time.time(),
            "path": headers.get(":path", ""),
            "method": headers.get(":method"),
            "content_type": headers.get("content-type", ""),
            "headers": {k: v for k, v in headers.items() if not k.startswith(":")},
            "body_len": len(body),
            "body_b64": base64.b64encode(body).decode(),
        }
        is_send = entry["path"] == f"{SERVICE}SendUserCascadeMessage"
        with self._lock:
            self._calls.append(entry)
            if is_send:
                self._captured.append(entry)
            line = json.dumps(entry) + "\n"
            if self.config["rpc_log"]:
                with open(self.config["rpc_log"], "a") as f:
                    f.write(line)
            if is_send and self.config["capture_log"]:
                with open(self.config["capture_log"], "a") as f:
                    f.write(line)

    def note(self, event: dict[str, Any]) -> None:
        """An event that is not a call (e.g. the start, with argv and the environment's names) in rpc_log."""
        if self.config["rpc_log"]:
            with self._lock, open(self.config["rpc_log"], "a") as f:
                f.write(json.dumps({"t": time.time(), **event}) + "\n")

    def captured(self) -> list[dict[str, Any]]:
        """Every SendUserCascadeMessage received so far (path, content_type, headers, body_b64, ...)."""
        with self._lock:
            return [dict(e) for e in self._captured]

    def calls(self) -> list[dict[str, Any]]:
        """Every call received so far, in order."""
        with self._lock:
            return [dict(e) for e in self._calls]

    # -- running it

    async def serve(self, stop: asyncio.Event, on_ready: Any = None) -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Protocol(self), HOST, self.requested_port)
        self.port = server.sockets[0].getsockname()[1]
        if on_ready is not None:
            on_ready()
        try:
            await stop.wait()
        finally:
            server.close()
            for protocol in list(self._connections):  # open HTTP/2 sessions would keep wait_closed waiting
                if protocol.transport is not None:
                    protocol.transport.close()
            await server.wait_closed()

    def start(self, timeout: float = 10.0) -> FakeLanguageServer:
        self._thread = threading.Thread(target=self._run, name="fake-language-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the fake language server did not start")
        if self._error is not None:
            raise RuntimeError(f"the fake language server did not start: {self._error!r}") from self._error
        return self

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await self.serve(self._stop, self._ready.set)

        try:
            asyncio.run(main())
        except BaseException as e:  # reported by start()
            self._error = e
        finally:
            self._ready.set()

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> FakeLanguageServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ------------------------------------------------------------------ as a program


def load_config(path: Path) -> dict[str, Any]:
    """Settings from a JSON file; logs default to the file's directory."""
    config: dict[str, Any] = {
        "capture_log": str(path.parent / "captures.jsonl"),
        "rpc_log": str(path.parent / "rpc.jsonl"),
    }
    if path.exists():
        loaded = json.loads(path.read_text())
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a JSON object")
        config.update(loaded)
    return config


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(description="Stand-in Windsurf language server (HTTP/2 cleartext, 127.0.0.1)")
    ap.add_argument("--server_port", type=int, default=42100)
    ap.add_argument("--config", type=Path, default=None)
    return ap.parse_known_args(argv)  # the real binary's other flags are accepted and ignored


async def amain(argv: list[str]) -> int:
    args, ignored = parse_args(argv)
    path = args.config or Path(os.environ.get("HOME", "/tmp")) / ".fake_ls" / "config.json"
    if args.config is not None and not path.exists():
        log(f"--config {path}: no such file")
        return 2
    try:
        ls = FakeLanguageServer(args.server_port, **load_config(path))
    except (OSError, ValueError) as e:
        log(f"bad settings in {path}: {e}")
        return 2
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)

    def on_stdin() -> None:
        try:
            if not os.read(0, 4096):
                stop.set()
        except OSError:
            stop.set()

    with contextlib.suppress(OSError):
        mode = os.fstat(0).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # a pipe from the gateway: EOF means it is gone
            loop.add_reader(0, on_stdin)

    def ready() -> None:
        log(f"listening on {HOST}:{ls.port} ignored flags={ignored} env={sorted(os.environ)} config={path}")
        ls.note({"event": "start", "argv": argv, "env_keys": sorted(os.environ), "pid": os.getpid(), "port": ls.port})

    try:
        await ls.serve(stop, ready)
    except OSError as e:
        log(f"cannot listen on {HOST}:{args.server_port}: {e}")
        return 1
    log("exiting")
    return 0


def main() -> int:
    die_with_parent(signal.SIGTERM)  # a SIGKILLed parent runs no cleanup of its own
    return asyncio.run(amain(sys.argv[1:]))
