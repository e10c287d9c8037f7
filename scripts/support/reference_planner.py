"""A reference Cascade-style planner: an HTTP server that checks what the bridge sends.

    .venv/bin/python scripts/reference_planner.py --port 8765   # as a program; tests run it in process

It answers OpenAI Chat Completions requests (JSON, or SSE when ``"stream": true``)
after validating them strictly: every ``additional_steps`` entry must decode as a
``CortexTrajectoryStep`` (proto3 JSON, unknown fields rejected), be DONE, carry a
body that matches its type, and ``additional_steps_delta_start`` must be an int in
``0..len(steps)``. An invalid request gets a 400 with a JSON error. Every request
is recorded (raw bytes as received, and decoded); tests read them in process via
:attr:`ReferencePlanner.received`, anyone else via ``GET /_received``.

Standard library only, plus orjson and the project's own generated schema.
Loopback only: it is a test fixture, not a service.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import itertools
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format

try:
    from native_bridge._proto import cortex_pb2
except ImportError:  # run from a checkout whose package is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "addons"))
    from native_bridge._proto import cortex_pb2

STEPS_KEY = "additional_steps"
DELTA_KEY = "additional_steps_delta_start"
DONE = "CORTEX_STEP_STATUS_DONE"
PAUSE_HEADER = "x-planner-pause"  # seconds to wait after the first SSE event
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _zstd_decompress(data: bytes) -> bytes:
    # Python 3.14 has zstd in the standard library; before that use the backport
    # mitmproxy itself depends on, or the zstandard package.
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        except ImportError:
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return zstd.decompress(data)


_DECODERS = {
    "identity": lambda b: b,
    "gzip": gzip.decompress,
    "x-gzip": gzip.decompress,
    "deflate": zlib.decompress,
    "zstd": _zstd_decompress,
}


def decode_body(raw: bytes, content_encoding: str | None) -> bytes:
    """Undo every Content-Encoding, last applied first; ValueError when one fails."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    body = raw
    for coding in reversed(codings):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise ValueError(f"unsupported Content-Encoding {coding!r}")
        try:
            body = decoder(body)
        except Exception as e:
            raise ValueError(f"cannot decode {coding} body: {type(e).__name__}: {e}") from None
    return body


def validate_steps(doc: dict[str, Any]) -> list[str]:
    """Errors in ``additional_steps`` / ``additional_steps_delta_start``; empty when valid or absent."""
    if STEPS_KEY not in doc and DELTA_KEY not in doc:
        return []
    steps = doc.get(STEPS_KEY)
    if not isinstance(steps, list):
        return [f"{STEPS_KEY} must be a list"]
    errors = []
    for i, item in enumerate(steps):
        if not isinstance(item, dict):
            errors.append(f"{STEPS_KEY}[{i}] is not an object")
            continue
        step = cortex_pb2.CortexTrajectoryStep()
        try:
            json_format.ParseDict(item, step, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            errors.append(f"{STEPS_KEY}[{i}]: {e}")
            continue
        status = cortex_pb2.CortexStepStatus.Name(step.status)
        if status != DONE:
            errors.append(f"{STEPS_KEY}[{i}]: status is {status}, expected {DONE}")
        body = step.WhichOneof("step")
        want = f"CORTEX_STEP_TYPE_{(body or '').upper()}"
        if body is None:
            errors.append(f"{STEPS_KEY}[{i}]: no step body")
        elif cortex_pb2.CortexStepType.Name(step.type) != want:
            errors.append(f"{STEPS_KEY}[{i}]: type {cortex_pb2.CortexStepType.Name(step.type)} with a {body} body")
    delta = doc.get(DELTA_KEY)
    # bool is an int in Python but not in JSON: refuse it explicitly.
    if type(delta) is not int or not 0 <= delta <= len(steps):
        errors.append(f"{DELTA_KEY} must be an int in 0..{len(steps)}, got {delta!r}")
    return errors


def _message_errors(i: int, m: Any) -> list[str]:
    if not isinstance(m, dict):
        return [f"messages[{i}] is not an object"]
    role = m.get("role")
    if not isinstance(role, str) or role not in ROLES:
        return [f"messages[{i}]: unknown role {role!r}"]
    content, calls = m.get("content"), m.get("tool_calls")
    errors = []
    if role == "assistant":
        if calls is not None and (not isinstance(calls, list) or not calls):
            errors.append(f"messages[{i}]: tool_calls must be a non-empty list when present")
        if content in (None, "", []) and not calls:
            errors.append(f"messages[{i}]: an assistant message needs content or tool_calls")
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not (isinstance(fn, dict) and isinstance(call.get("id"), str) and isinstance(fn.get("name"), str)):
                errors.append(f"messages[{i}].tool_calls[{j}]: needs an id and a function name")
            elif not isinstance(fn.get("arguments"), str):
                errors.append(f"messages[{i}].tool_calls[{j}]: arguments must be a JSON string")
    elif role == "tool":
        if not isinstance(m.get("tool_call_id"), str):
            errors.append(f"messages[{i}]: a tool message needs a tool_call_id")
        if not isinstance(content, str | list):
            errors.append(f"messages[{i}]: a tool message needs content")
    elif content in (None, "", []):
        errors.append(f"messages[{i}]: a {role} message needs content")
    return errors


def validate_chat(doc: Any) -> list[str]:
    """Errors that make this body an invalid Chat Completions request for the planner."""
    if not isinstance(doc, dict):
        return ["the body is not a JSON object"]
    messages = doc.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    errors = [e for i, m in enumerate(messages) for e in _message_errors(i, m)]
    return errors + validate_steps(doc)


@dataclass(slots=True)
class Received:
    """One request as the planner saw it, and what it answered."""

    seq: int
    method: str
    path: str
    headers: list[tuple[str, str]]
    raw: bytes  # the body bytes as they arrived (still Content-Encoded)
    body: bytes | None = None  # decoded; None when decoding failed
    json: Any = None
    errors: list[str] = field(default_factory=list)
    status: int = 0
    reply: bytes = b""  # the reply body as sent (SSE: all events, unchunked)
    reply_type: str = ""
    last_event_at: float | None = None  # time.monotonic() when an SSE reply's last event was sent

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "method": self.method,
            "path": self.path,
            "headers": [list(h) for h in self.headers],
            "raw_base64": base64.b64encode(self.raw).decode(),
            "json": self.json,
            "errors": self.errors,
            "status": self.status,
            "reply_base64": base64.b64encode(self.reply).decode(),
        }


def completion(doc: dict[str, Any], seq: int) -> dict[str, Any]:
    steps = doc.get(STEPS_KEY) or []
    text = (
        f"Reference planner: {len(doc['messages'])} messages, {len(steps)} additional steps"
        f" (delta_start {doc.get(DELTA_KEY, '-')})."
    )
    return {
        "id": f"chatcmpl-ref{seq:06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": doc.get("model") or "reference-planner",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": len(doc["messages"]), "completion_tokens": 12, "total_tokens": 12},
    }


def sse_events(reply: dict[str, Any]) -> list[bytes]:
    """The same answer as chat.completion.chunk events, closed by ``[DONE]``."""
    base = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    text = reply["choices"][0]["message"]["content"]
    mid = len(text) // 2
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": ""},
        {"content": text[:mid]},
        {"content": text[mid:]},
    ]
    chunks = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as an API server would
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.planner.verbose:
            super().log_message(format, *args)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, rec: Received, status: int, payload: Any) -> None:
        rec.status, rec.reply, rec.reply_type = status, orjson.dumps(payload), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", rec.reply_type)
        self.send_header("Content-Length", str(len(rec.reply)))
        self.end_headers()
        self.wfile.write(rec.reply)

    def _send_sse(self, rec: Received, events: list[bytes]) -> None:
        rec.status, rec.reply, rec.reply_type = 200, b"".join(events), "text/event-stream"
        self.send_response(200)
        self.send_header("Content-Type", rec.reply_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # Tests may ask for a pause after the first event, to see whether a proxy streams or buffers.
        try:
            pause = min(max(float(self.headers.get(PAUSE_HEADER) or 0), 0.0), 10.0)
        except ValueError:
            pause = 0.0
        for i, event in enumerate(events):  # one chunk per event, flushed, as a streaming server does
            if i == 1 and pause:
                time.sleep(pause)
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        rec.last_event_at = time.monotonic()
        self.wfile.write(b"0\r\n\r\n")

    def _handle(self) -> None:
        planner = self.server.planner
        raw = self._read_body()
        if self.command == "GET" and self.path == "/_received":
            payload = orjson.dumps([r.to_json() for r in planner.received])
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        rec = planner._new(self.command, self.path, list(self.headers.items()), raw)
        if planner.hold is not None:  # a gateway answers its agent after its own planner call
            planner.hold.wait(30)
        try:
            rec.body = decode_body(raw, self.headers.get("Content-Encoding"))
        except ValueError as e:
            rec.errors = [str(e)]
            return self._send(rec, 415, _error(str(e), "unsupported_encoding"))
        route = self.path.split("?")[0].rstrip("/")
        if self.command == "POST" and route.endswith("/chat/completions"):
            return self._chat(rec)
        if self.command == "GET" and route.endswith("/models"):
            return self._send(rec, 200, {"object": "list", "data": [{"id": "reference-planner", "object": "model"}]})
        # Anything else is echoed, so pass-through tests can compare both directions.
        echo = {"object": "echo", "method": self.command, "path": self.path, "body_bytes": len(rec.body)}
        return self._send(rec, 200, echo)

    def _chat(self, rec: Received) -> None:
        assert rec.body is not None
        try:
            rec.json = orjson.loads(rec.body)
        except orjson.JSONDecodeError as e:
            rec.errors = [f"the body is not JSON: {e}"]
            return self._send(rec, 400, _error(rec.errors[0], "invalid_json"))
        rec.errors = validate_chat(rec.json)
        if rec.errors:
            return self._send(rec, 400, _error("; ".join(rec.errors), "invalid_request"))
        reply = completion(rec.json, rec.seq)
        if rec.json.get("stream") is True:
            return self._send_sse(rec, sse_events(reply))
        return self._send(rec, 200, reply)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # socketserver's 5 drops bursts of new connections from the proxy
    planner: ReferencePlanner


class ReferencePlanner:
    """The planner in process: ``with ReferencePlanner() as planner: ... planner.received``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, verbose: bool = False) -> None:
        self.verbose = verbose
        self._server = _Server((host, port), _Handler)
        self._server.planner = self
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._seq = itertools.count(1)
        self._thread: threading.Thread | None = None
        # Set to an Event: every request is recorded at once, answered once the event is set.
        self.hold: threading.Event | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def find(self, header: str, value: str) -> list[Received]:
        """Requests that carried ``header: value`` (tests tag each request with an id)."""
        return [r for r in self.received if r.header(header) == value]

    def _new(self, method: str, path: str, headers: list[tuple[str, str]], raw: bytes) -> Received:
        rec = Received(next(self._seq), method, path, headers, raw)
        with self._lock:
            self._received.append(rec)
        return rec

    def start(self) -> ReferencePlanner:
        self._thread = threading.Thread(target=self._server.serve_forever, name="reference-planner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ReferencePlanner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    planner = ReferencePlanner(port=args.port, verbose=args.verbose)
    print(f"reference planner listening at {planner.url} (GET /_received lists what it got)", flush=True)
    try:
        planner._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        planner._server.server_close()
    return 0
