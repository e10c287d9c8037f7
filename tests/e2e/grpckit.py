"""A real gRPC stack on both ends of the planner hop: a grpcio server standing in for the
language server, and the ways tests call it (grpcio as client, raw bodies over HTTP/2)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "gateway-3.9.27"
SERVICE = "exa.language_server_pb.LanguageServerService"
SEND = f"/{SERVICE}/SendUserCascadeMessage"


def fixture(name: str) -> bytes:
    path = FIXTURES / name
    if not path.exists():
        import pytest

        pytest.skip(f"the gateway fixtures are not here ({FIXTURES}): they come with the shared folder")
    return path.read_bytes()


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free right now (all held open until each is known)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


@dataclass
class Received:
    method: str
    body: bytes  # the message as the server's gRPC stack decoded it (no envelope)
    metadata: dict[str, str]


@dataclass
class LanguageServer:
    """grpcio server answering every method of the service with an empty message."""

    received: list[Received] = field(default_factory=list)
    fail_next: int = 0  # answer this many calls with UNAVAILABLE (a refused send)
    port: int = 0
    _server: grpc.Server | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> LanguageServer:
        def handle(request: bytes, context: grpc.ServicerContext, method: str = "") -> bytes:
            with self._lock:
                self.received.append(Received(method, request, dict(context.invocation_metadata())))
                if self.fail_next:
                    self.fail_next -= 1
                    context.abort(grpc.StatusCode.UNAVAILABLE, "planner busy")
            return b""

        class Generic(grpc.GenericRpcHandler):
            def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
                method = details.method
                if not method.startswith(f"/{SERVICE}/"):
                    return None
                return grpc.unary_unary_rpc_method_handler(lambda r, c: handle(r, c, method))

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers([Generic()])
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5)

    def sends(self) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.method == SEND]


def call(port: int, message: bytes, *, gzip: bool = False, method: str = SEND, timeout: float = 10) -> bytes:
    """One unary call by grpcio (it frames, and with ``gzip`` compresses, as a gRPC client does)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
        compression = grpc.Compression.Gzip if gzip else None
        return stub(message, timeout=timeout, compression=compression)


NODE_CLIENT = r"""
// Frames like the gateway: one HTTP/2 session, prior knowledge, the body given as is.
const http2 = require('http2');
const [url, path, ctype, extra, bodyHex] = process.argv.slice(1);
const session = http2.connect(url);
session.on('error', (e) => { console.error('session', e.message); process.exit(3); });
const headers = Object.assign({':method': 'POST', ':path': path, 'content-type': ctype, 'te': 'trailers',
  'user-agent': 'connect-es/2.0.0'}, JSON.parse(extra));
const req = session.request(headers);
const chunks = [];
let status = 0, trailers = {};
req.on('response', (h) => { status = h[':status']; });
req.on('trailers', (t) => { trailers = t; });
req.on('data', (c) => chunks.push(c));
req.on('end', () => {
  console.log(JSON.stringify({status, trailers, body: Buffer.concat(chunks).toString('hex')}));
  session.close();
});
req.end(Buffer.from(bodyHex, 'hex'));
"""


def node_post(port: int, path: str, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> str:
    """POST a raw body over prior-knowledge HTTP/2 with Node's http2, as the gateway does; Node's stdout."""
    import json

    done = subprocess.run(
        [
            "node",
            "-e",
            NODE_CLIENT,
            f"http://127.0.0.1:{port}",
            path,
            content_type,
            json.dumps(headers or {}),
            body.hex(),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(predicate, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


__all__ = ["LanguageServer", "call", "fixture", "free_port", "free_ports", "node_post", "sys"]
