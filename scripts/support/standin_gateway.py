"""A stand-in for the known gateway (dwgx/WindsurfAPI v3.9.27) as a process, for deployments
tested where its Node code may not be committed or run (CI): it behaves like the gateway on
both of its wires and nowhere else.

Agent side (HTTP/1.1, JSON): ``POST /v1/messages`` (Anthropic Messages) and
``POST /v1/chat/completions`` (Chat Completions); ``GET /health`` for load balancers. Every
chat request is answered with a minimal valid reply in its dialect (assistant text ``ok``;
a minimal SSE stream when the request says ``"stream": true``). The agent's credential is
accepted as given and never checked, logged or forwarded.

Planner side: at start-up it spawns its language server as the gateway does (``LS_BINARY_PATH``,
``--api_server_url=... --server_port=42100 --csrf_token=... --register_user_url=...
--codeium_dir=DATA/default --database_dir=DATA/default/db --detect_proxy=false``, stdin,
stdout and stderr pipes, only the gateway's allowlisted environment: HOME, PATH, LANG, LC_ALL,
TMPDIR/TMP/TEMP, proxy and CA variables), walks to the next free port when 42100 is taken
("NEVER adopt", src/langserver.js), and waits until that port listens. Per chat request it
translates the whole history with the known defective translation (support/known_gateway.py:
every mapped call a DONE step, run_command exit_code 0 and its output twice, is_error and
unmapped items dropped; a call without a result its arguments only, no output and no exit code,
as src/cascade-native-bridge.js buildAdditionalStepsFromHistory writes it), types each step by
its body's field number as the gateway does
(run_command 28), and sends one ``SendUserCascadeMessage`` (gRPC, prior-knowledge HTTP/2
cleartext, 5-byte frame, ``x-codeium-csrf-token``) with the steps in field 9 and a planted fake
``api_key`` in Metadata. The cascade comes from ``StartCascade`` on the first turn of a
conversation and is reused for its later turns, which get every step again (no delta), as the
gateway's conversation pool does; the key here is simpler than the gateway's fingerprint: a
digest of the caller's credential, the system prompt and the first user message. The pool is
this process's memory: two instances behind a load balancer each start their own cascades on
their own language server, as the real ones do. (The stand-in language server numbers its
cascades ``fake-cascade-N`` per process: instances sharing one store need distinct
``cascade_prefix`` values in each HOME's ``.fake_ls/config.json``; the real one hands out UUIDs.)
Not modelled: the panel/workspace calls before the first cascade, polling the trajectory,
turning the planner's steps into the reply, restarting a language server that died (the
stand-in exits instead, so a health check sees it).

Lifetime: it ends with its parent (PR_SET_PDEATHSIG), and its language server runs in a process
group of its own that ends with it: SIGTERM to the group on the way out (SIGKILL after a grace
period), PR_SET_PDEATHSIG and stdin EOF when it is killed outright.

``--ls-attach PORT`` is for tests only and unlike the gateway (which never adopts a listener):
no language server is spawned; every call goes to whatever listens on 127.0.0.1:PORT, and a
listener that goes away and comes back (a planner hop restarted in front of a language server
that runs on) is simply called again. The stand-in then never exits on its own.

    scripts/standin_gateway.py [--host 127.0.0.1] [--port 3003] [--ls-port 42100]
        [--ls-binary PATH (default $LS_BINARY_PATH)] [--ls-data-dir DIR] [--ls-env NAME ...]
        [--ls-attach PORT]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
    TrailersReceived,
    WindowUpdated,
)
from native_bridge._proto import cortex_pb2
from native_bridge.cascade import wire

from . import known_gateway
from .lifetime import die_with_parent, ending_with

SERVICE = "/exa.language_server_pb.LanguageServerService/"
ANTHROPIC = "/v1/messages"
CHAT = "/v1/chat/completions"

# src/langserver.js (v3.9.27): defaults, flags and the environment allowlist.
DEFAULT_LS_PORT = 42100
DEFAULT_BINARY = "/opt/windsurf/language_server_linux_x64"
DEFAULT_API_URL = "https://server.self-serve.windsurf.com"
DEFAULT_DATA_ROOT = "/opt/windsurf/data"
CSRF_TOKEN = "windsurf-api-csrf-fixed-token"  # the gateway's fixed token, not a secret
LS_ENV_ALLOWLIST = (
    "HOME", "PATH", "LANG", "LC_ALL", "TMPDIR", "TMP", "TEMP",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
)  # fmt: skip
# Metadata as the gateway fills it (ide and extension version from the captures in shared/fixtures).
IDE_NAME = "windsurf"
IDE_VERSION = "2.0.67"
# A planted fake key in the gateway's format: no record, log or state file of the bridge may contain it.
PLANTED_API_KEY = "wsk-FIXTURE-KEY-standin-0123456789"
# A run_command body's fields as the gateway writes them (the captures): command_line, blocking, stdout,
# exit_code, combined_output.
RUN_COMMAND_ORDER = (23, 11, 4, 6, 21)
GRACE = 10.0  # seconds the language server gets to end after SIGTERM (the shim's mitmdump flushes records)


def log(message: str) -> None:
    print(f"[standin_gateway {os.getpid()}] {message}", file=sys.stderr, flush=True)


class GatewayError(Exception):
    """A request the gateway cannot serve (bad body, the language server failed): its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------ the agent's history


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return ""


def chat_messages(path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The history in Chat Completions form, what the known translation reads. Anthropic becomes
    it as the gateway converts it: system first, tool_use as tool_calls, each tool_result a tool
    message (its is_error dropped: one of the gateway's defects)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise GatewayError(400, "messages: expected a list of objects")
    if path == CHAT:
        return messages
    out: list[dict[str, Any]] = []
    if system := _text(body.get("system")):
        out.append({"role": "system", "content": system})
    for m in messages:
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _text(content)}]
        blocks = [b for b in blocks if isinstance(b, dict)]
        if m.get("role") == "assistant":
            calls = [
                {
                    "id": b.get("id"),
                    "type": "function",
                    "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            msg: dict[str, Any] = {"role": "assistant", "content": _text(blocks)}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))})
        if text := _text(blocks):
            out.append({"role": m.get("role", "user"), "content": text})
    return out


def conversation_key(messages: list[dict[str, Any]], caller: str) -> str:
    """Which cascade a request continues: the caller, the system prompt, the first user message.
    (The gateway's pool keys on a fingerprint of every prior turn; this is the simple equivalent.)"""
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    first = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    digest = hashlib.sha256()
    for part in (caller, system, first):
        digest.update(hashlib.sha256(part.encode()).digest())  # fixed-size parts: no ambiguity between them
    return digest.hexdigest()


def prompt(text_path: list[dict[str, Any]], resumed: bool) -> str:
    """items[0].text: a fresh cascade gets the conversation so far, a resumed one the newest user text."""
    turns = [m for m in text_path if m.get("role") in ("user", "assistant") and _text(m.get("content"))]
    users = [m for m in turns if m.get("role") == "user"]
    if resumed or len(turns) <= 1:
        return _text(users[-1].get("content")) if users else ""
    tag = {"user": "human", "assistant": "assistant"}
    return "".join(f"<{tag[m['role']]}>\n{_text(m.get('content'))}\n</{tag[m['role']]}>\n\n" for m in turns)


# ------------------------------------------------------------------ the planner's wire


def metadata(api_key: str, request_id: int, session_id: str) -> bytes:
    """Metadata (request field 3) with the gateway's fields: ide_name 1, extension_version 2,
    api_key 3, locale 4, os 5, ide_version 7, hardware 8, request_id 9, session_id 10,
    extension_name 12."""
    return b"".join(
        [
            wire.len_field(1, IDE_NAME.encode()),
            wire.len_field(2, IDE_VERSION.encode()),
            wire.len_field(3, api_key.encode()),
            wire.len_field(4, b"en"),
            wire.len_field(5, b"linux"),
            wire.len_field(7, IDE_VERSION.encode()),
            wire.len_field(8, b"x86_64"),
            wire.varint_field(9, request_id),
            wire.len_field(10, session_id.encode()),
            wire.len_field(12, IDE_NAME.encode()),
        ]
    )


def cascade_config(model: str) -> bytes:
    """CascadeConfig (request field 5) in the shape the gateway sends with its tool bridge
    (WINDSURFAPI_NATIVE_TOOL_BRIDGE) on: the planner config with the model twice, a token budget,
    and run_command allow-listed (the stand-in language server proposes a command only when it
    sees that name)."""
    tools = wire.len_field(8, b"") + wire.len_field(32, b"run_command")
    planner = b"".join(
        [
            wire.len_field(2, wire.varint_field(4, 1)),
            wire.len_field(35, model.encode()),
            wire.len_field(34, model.encode()),
            wire.varint_field(6, 32768),
            wire.len_field(11, wire.varint_field(1, 1) + wire.len_field(2, b"")),
            wire.len_field(13, tools),
        ]
    )
    return wire.len_field(1, planner) + wire.len_field(7, wire.varint_field(1, 1))


# What the gateway overlays on a step when its call has a result (src/cascade-native-bridge.js,
# buildAdditionalStepsFromHistory), by the step body's proto3 JSON name: without a result the body
# holds the call's arguments only (e.g. run_command: command_line and blocking; no exit_code).
RESULT_FIELDS = {
    "runCommand": ("stdout", "exitCode", "combinedOutput"),
    "viewFile": ("content",),
    "grepSearchV2": ("rawOutput",),
    "find": ("rawOutput",),
    "listDirectory": ("children",),
    "searchWeb": ("summary",),
}


def without_result(step_json: Mapping[str, Any]) -> dict[str, Any]:
    """A step of the known translation as the gateway writes it for a call that has no result."""
    out = dict(step_json)
    for name, fields in RESULT_FIELDS.items():
        if isinstance(out.get(name), dict):
            out[name] = {k: v for k, v in out[name].items() if k not in fields}
    if isinstance(out.get("readUrlContent"), dict) and isinstance(out["readUrlContent"].get("webDocument"), dict):
        doc = {k: v for k, v in out["readUrlContent"]["webDocument"].items() if k != "text"}
        out["readUrlContent"] = {**out["readUrlContent"], "webDocument": doc}
    return out


def gateway_step(step_json: Mapping[str, Any]) -> bytes:
    """One step of the known translation (proto3 JSON) as the gateway writes it: typed by its body's
    field number (run_command 28, officially COMMAND_STATUS), not by the official type, and a
    run_command body's fields in the gateway's order."""
    step = cortex_pb2.CortexTrajectoryStep()
    json_format.ParseDict(step_json, step)
    name = step.WhichOneof("step")
    if name is None:
        return step.SerializeToString()
    number = step.DESCRIPTOR.fields_by_name[name].number
    step.type = number  # type: ignore[assignment]
    body = getattr(step, name).SerializeToString()
    if name == "run_command":
        found = wire.fields(body)
        rank = {n: i for i, n in enumerate(RUN_COMMAND_ORDER)}
        found.sort(key=lambda f: rank.get(f.number, len(rank)))  # stable: unknown fields keep their order, last
        body = b"".join(body[f.start : f.end] for f in found)
    step.ClearField(name)
    return step.SerializeToString() + wire.len_field(number, body)


def send_request(cascade_id: str, text: str, meta: bytes, config: bytes, steps: Iterable[bytes]) -> bytes:
    """SendUserCascadeMessageRequest in the gateway's field order: cascade_id 1, items 2, metadata 3,
    cascade_config 5, additional_steps 9."""
    head = wire.len_field(1, cascade_id.encode()) + wire.len_field(2, wire.len_field(1, text.encode()))
    return head + wire.len_field(3, meta) + wire.len_field(5, config) + b"".join(wire.len_field(9, s) for s in steps)


def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


def grpc_call(port: int, method: str, message: bytes, timeout: float = 30.0) -> bytes:
    """One unary gRPC call to 127.0.0.1:port as the gateway makes it (prior-knowledge HTTP/2, no TLS,
    the gateway's headers); the reply message. A connection per call (the gateway keeps one per
    port: either is the same to the planner hop). Raises GatewayError on any failure."""
    conn = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    body = grpc_frame(message)
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", f"127.0.0.1:{port}"),
        (":path", SERVICE + method),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("user-agent", "grpc-node/1.108.2"),
        ("x-codeium-csrf-token", CSRF_TOKEN),
    ]
    status, grpc_status, grpc_message, data = "", "", "", bytearray()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            conn.initiate_connection()
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, headers)
            sent, ended = 0, False
            while not ended:
                # Send what the peer's flow-control window allows; then read (window updates, the reply).
                while sent < len(body):
                    room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, len(body) - sent)
                    if room <= 0:
                        break
                    conn.send_data(sid, body[sent : sent + room], end_stream=sent + room == len(body))
                    sent += room
                sock.sendall(conn.data_to_send())
                chunk = sock.recv(65536)
                if not chunk:
                    break
                for event in conn.receive_data(chunk):
                    if isinstance(event, ResponseReceived | TrailersReceived):
                        h = dict(event.headers)
                        status = h.get(":status", status)
                        grpc_status = h.get("grpc-status", grpc_status)
                        grpc_message = h.get("grpc-message", grpc_message)
                    elif isinstance(event, DataReceived):
                        data += event.data
                        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, StreamEnded | StreamReset | ConnectionTerminated):
                        ended = True
                    elif isinstance(event, WindowUpdated):
                        pass  # the loop sends more
                sock.sendall(conn.data_to_send())
            with contextlib.suppress(OSError):
                conn.close_connection()
                sock.sendall(conn.data_to_send())
    except (OSError, ValueError) as e:  # h2's errors are ValueErrors too
        raise GatewayError(502, f"language server {method}: {type(e).__name__}: {e}") from e
    if status != "200" or grpc_status != "0":
        raise GatewayError(502, f"language server {method}: HTTP {status or '-'}, grpc-status {grpc_status or '-'} "
                           f"{grpc_message}".rstrip())  # fmt: skip
    if len(data) < 5:
        return b""
    if data[0] & 1:
        raise GatewayError(502, f"language server {method}: a compressed reply (not asked for)")
    return bytes(data[5 : 5 + int.from_bytes(data[1:5], "big")])


def first_string(message: bytes, number: int) -> str:
    try:
        found = wire.fields(message)
    except wire.WireError:
        return ""
    f = next((f for f in found if f.number == number and f.wire_type == wire.LEN), None)
    return wire.value(message, f).decode("utf-8", "replace") if f is not None else ""


# ------------------------------------------------------------------ the language server process


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ls_environment(source: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """Only the allowlisted variables (and ``extra`` names), HOME at least, as the gateway passes them."""
    env = {k: source[k] for k in (*LS_ENV_ALLOWLIST, *extra) if source.get(k)}
    env.setdefault("HOME", source.get("HOME") or "/root")
    return env


@dataclass
class LanguageServer:
    binary: str
    port: int
    data_dir: Path
    api_server_url: str = DEFAULT_API_URL
    extra_env: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    _pumps: list[threading.Thread] = field(default_factory=list)

    def args(self) -> list[str]:
        return [
            f"--api_server_url={self.api_server_url}",
            f"--server_port={self.port}",
            f"--csrf_token={CSRF_TOKEN}",
            "--register_user_url=https://api.codeium.com/register_user/",
            f"--codeium_dir={self.data_dir}",
            f"--database_dir={self.data_dir}/db",
            "--detect_proxy=false",
        ]

    def start(self, timeout: float, stop: threading.Event | None = None) -> None:
        """Spawn it (from the thread that lives as long as this process: PR_SET_PDEATHSIG follows the
        thread) and wait until its port listens, it exits, or ``stop`` is set."""
        if port_in_use(self.port):
            # The gateway never adopts a listener on its port: it walks to the next free one.
            taken = self.port
            while port_in_use(self.port):
                self.port += 1
            log(f"language server port {taken} already in use; starting it on {self.port} instead of adopting")
        try:
            (self.data_dir / "db").mkdir(parents=True, exist_ok=True)
        except OSError as e:
            log(f"mkdir {self.data_dir}/db: {e}")  # as the gateway: a warning, the binary may cope
        if not os.path.exists(self.binary):
            log(f"language server binary not found at {self.binary} (set LS_BINARY_PATH or --ls-binary)")
        log(f"starting the language server {self.binary} on 127.0.0.1:{self.port}")
        self.proc = subprocess.Popen(
            [self.binary, *self.args()],
            stdin=subprocess.PIPE,  # held open: its EOF tells the language server we are gone
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ls_environment(os.environ, self.extra_env),
            start_new_session=True,  # its own process group, ended as a whole with us
            preexec_fn=ending_with(os.getpid()),
        )
        for stream, name in ((self.proc.stdout, "LS"), (self.proc.stderr, "LS:stderr")):
            t = threading.Thread(target=self._pump, args=(stream, name), daemon=True)
            t.start()
            self._pumps.append(t)
        deadline = time.monotonic() + timeout
        while not port_in_use(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the language server exited before it listened (exit {self.proc.returncode})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the language server did not listen on 127.0.0.1:{self.port} in {timeout:g}s")
            if stop is not None and stop.is_set():
                raise RuntimeError("stopped while it was starting")
            time.sleep(0.05)

    def attach(self, timeout: float, stop: threading.Event | None = None) -> None:
        """``--ls-attach``: spawn nothing; wait until something listens on the port (``proc`` stays None,
        so nothing here ends with it or ends it)."""
        deadline = time.monotonic() + timeout
        while not port_in_use(self.port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{self.port} to attach to ({timeout:g}s)")
            if stop is not None and stop.is_set():
                raise RuntimeError("stopped while it was waiting")
            time.sleep(0.05)
        log(f"attached to the language server already listening on 127.0.0.1:{self.port} (tests only)")

    @staticmethod
    def _pump(stream: Any, name: str) -> None:
        """Its output into our stderr, line by line (the gateway logs it the same way)."""
        for line in iter(stream.readline, b""):
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                print(f"[{name}] {text}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after the grace period."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(GRACE)
            except subprocess.TimeoutExpired:
                log("the language server did not end after SIGTERM: SIGKILL")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left in its group
        proc.wait()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        for t in self._pumps:
            t.join(2)


# ------------------------------------------------------------------ the gateway


@dataclass
class Gateway:
    """Per-request work, independent of the HTTP server (so tests can drive it directly)."""

    ls_port: int
    api_key: str = PLANTED_API_KEY
    reply: str = "ok"
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    cascades: dict[str, str] = field(default_factory=dict)  # conversation key -> cascade_id
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _request_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def _meta(self) -> bytes:
        return metadata(self.api_key, next(self._request_ids), self.session_id)

    def cascade_for(self, key: str) -> tuple[str, bool]:
        """(cascade_id, resumed): the conversation's cascade, started on its first turn."""
        with self._lock:
            if key in self.cascades:
                return self.cascades[key], True
            # Held across the call: a second request of a new conversation waits instead of starting another.
            reply = grpc_call(self.ls_port, "StartCascade", wire.len_field(1, self._meta()))
            cascade_id = first_string(reply, 1)
            if not cascade_id:
                raise GatewayError(502, "language server StartCascade: no cascade_id")
            self.cascades[key] = cascade_id
            return cascade_id, False

    def chat(self, path: str, body: dict[str, Any], caller: str) -> dict[str, Any]:
        """One chat request: the known translation to the language server; a summary for the log."""
        messages = chat_messages(path, body)
        known = known_gateway.translate({"messages": messages})
        answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
        steps = [
            gateway_step(s if call in answered else without_result(s))
            for s, call in zip(known.steps, known.step_calls, strict=True)
        ]
        cascade_id, resumed = self.cascade_for(conversation_key(messages, caller))
        model = str(body.get("model") or "")
        request = send_request(cascade_id, prompt(known.messages, resumed), self._meta(), cascade_config(model), steps)
        grpc_call(self.ls_port, "SendUserCascadeMessage", request)
        return {"cascade_id": cascade_id, "resumed": resumed, "steps": len(steps)}


def _sse(events: Iterable[tuple[str | None, dict[str, Any]]], done: bool = False) -> bytes:
    out = b"".join(
        (f"event: {name}\n" if name else "").encode() + b"data: " + json.dumps(data).encode() + b"\n\n"
        for name, data in events
    )
    return out + (b"data: [DONE]\n\n" if done else b"")


def answer(path: str, model: str, text: str, stream: bool) -> tuple[str, bytes]:
    """(content type, body): a minimal valid assistant reply in the request's dialect."""
    rid = uuid.uuid4().hex[:24]
    if path == ANTHROPIC:
        usage = {"input_tokens": 0, "output_tokens": 1}
        message = {
            "id": f"msg_{rid}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not stream:
            return "application/json", json.dumps(message).encode()
        start = {**message, "content": [], "stop_reason": None}
        return "text/event-stream", _sse(
            [
                ("message_start", {"type": "message_start", "message": start}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": text}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                   "stop_sequence": None}, "usage": {"output_tokens": 1}}),
                ("message_stop", {"type": "message_stop"}),
            ]
        )  # fmt: skip
    created = int(time.time())
    if not stream:
        completion = {
            "id": f"chatcmpl-{rid}",
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
        }
        return "application/json", json.dumps(completion).encode()
    chunk = {"id": f"chatcmpl-{rid}", "object": "chat.completion.chunk", "created": created, "model": model}
    return "text/event-stream", _sse(
        [
            (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                          "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        done=True,
    )  # fmt: skip


def error_body(path: str, status: int, message: str) -> bytes:
    if path == ANTHROPIC:
        kind = "invalid_request_error" if status < 500 else "api_error"
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps(
        {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error"}}
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as behind a load balancer
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # the default logs every request line
        pass

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/health":
            self._send(200, "application/json", b'{"status":"ok"}')
        else:
            self._send(404, "application/json", error_body(CHAT, 404, f"no route GET {self.path}"))

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if path not in (ANTHROPIC, CHAT):
            self._send(404, "application/json", error_body(CHAT, 404, f"no route POST {path}"))
            return
        # The caller's credential only keys its conversations (as a digest): never logged or sent on.
        caller = self.headers.get("x-api-key") or self.headers.get("authorization") or ""
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise GatewayError(400, "the body is not a JSON object")
            done = self.server.gateway.chat(path, body, hashlib.sha256(caller.encode()).hexdigest())
        except (ValueError, GatewayError) as e:
            status = e.status if isinstance(e, GatewayError) else 400
            log(f"POST {path} -> {status}: {e}")
            self._send(status, "application/json", error_body(path, status, str(e)))
            return
        except Exception as e:  # a history the known translation cannot take (e.g. a tool argument's shape)
            log(f"POST {path} -> 500: {type(e).__name__}: {e}")
            self._send(500, "application/json", error_body(path, 500, f"{type(e).__name__}: {e}"))
            return
        resumed = "resumed" if done["resumed"] else "new"
        log(f"POST {path} -> cascade {done['cascade_id']} ({resumed}), {done['steps']} step(s) sent")
        content_type, reply = answer(
            path, str(body.get("model") or ""), self.server.gateway.reply, body.get("stream") is True
        )
        self._send(200, content_type, reply)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], gateway: Gateway) -> None:
        super().__init__(address, _Handler)
        self.gateway = gateway


# ------------------------------------------------------------------ as a program


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="A stand-in for dwgx/WindsurfAPI v3.9.27 (see the module's docstring)")
    ap.add_argument("--host", default="127.0.0.1", help="where the agent side listens (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=3003, help="the agent side's port (default 3003; 0: any free port)")
    ap.add_argument(
        "--ls-port",
        type=int,
        default=DEFAULT_LS_PORT,
        help=f"the language server's --server_port (default {DEFAULT_LS_PORT}; 0: a free port)",
    )
    ap.add_argument(
        "--ls-binary",
        default=os.environ.get("LS_BINARY_PATH") or DEFAULT_BINARY,
        help="the language server to spawn, e.g. scripts/language-server-shim (default $LS_BINARY_PATH)",
    )
    ap.add_argument(
        "--ls-data-dir",
        type=Path,
        default=Path(os.environ.get("LS_DATA_DIR") or DEFAULT_DATA_ROOT),
        help="its data root; --codeium_dir is DIR/default (default $LS_DATA_DIR or /opt/windsurf/data)",
    )
    ap.add_argument(
        "--ls-api-server-url",
        default=os.environ.get("CODEIUM_API_URL") or DEFAULT_API_URL,
        help="its --api_server_url (default $CODEIUM_API_URL or the gateway's)",
    )
    ap.add_argument(
        "--ls-env",
        action="append",
        default=[],
        metavar="NAME",
        help="also pass this variable to the language server, beyond the gateway's allowlist "
        "(the tests: their leftover-process marker)",
    )
    ap.add_argument("--ls-timeout", type=float, default=60.0, help="seconds to wait for its port (default 60)")
    ap.add_argument(
        "--ls-attach",
        type=int,
        default=None,
        metavar="PORT",
        help="tests only (the gateway never adopts a listener): spawn no language server, call the one "
        "listening on 127.0.0.1:PORT (waits up to --ls-timeout for it at start-up)",
    )
    ap.add_argument("--reply", default="ok", help="the assistant text of every reply (default ok)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    die_with_parent(signal.SIGTERM, parent=os.getppid())  # a parent that is init (a container's) is no death
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    ls = LanguageServer(
        args.ls_binary,
        args.ls_attach or args.ls_port or free_port(),
        args.ls_data_dir / "default",
        args.ls_api_server_url,
        tuple(args.ls_env),
    )
    try:
        try:
            if args.ls_attach:
                ls.attach(args.ls_timeout, stop)
            else:
                ls.start(args.ls_timeout, stop)
        except (OSError, RuntimeError) as e:
            log(f"cannot start the language server: {e}")
            return 1
        try:
            server = _Server((args.host, args.port), Gateway(ls.port, reply=args.reply))
        except OSError as e:
            log(f"cannot listen on {args.host}:{args.port}: {e}")
            return 1
        serving = threading.Thread(target=server.serve_forever, name="http", daemon=True)
        serving.start()
        log(f"listening on http://{args.host}:{server.server_address[1]} (language server on 127.0.0.1:{ls.port})")
        code = 0
        while not stop.wait(0.2):
            if ls.proc is not None and ls.proc.poll() is not None:
                log(f"the language server exited (code {ls.proc.returncode}): ending")
                code = 1
                break
        server.shutdown()
        server.server_close()
        return code
    finally:
        ls.stop()
        log("exiting")


if __name__ == "__main__":
    from .cli import run

    run(main)
