"""Helpers for the language-server-shim and real-gateway tests: reading what the stand-in
language server captured (scripts/fake_language_server.py) as the planner received it."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from native_bridge.cascade import fields, parse_request, to_json

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "gateway-3.9.27"
SHIM = ROOT / "scripts" / "language-server-shim"
FAKE_LS = ROOT / "scripts" / "fake_language_server.py"
PLANTED_KEY = b"wsk-FIXTURE-KEY"  # the gateway's key in the fixtures (and in the real-gateway run)


def message_of(body: bytes, content_type: str = "application/grpc") -> bytes:
    """The protobuf message inside a request body (gRPC or Connect envelope, gzip when flagged)."""
    if content_type.startswith("application/proto"):
        return body
    data = body[5 : 5 + int.from_bytes(body[1:5], "big")]
    return gzip.decompress(data) if body[0] & 1 else data


def captured_messages(entries: list[dict[str, Any]]) -> list[bytes]:
    return [message_of(base64.b64decode(e["body_b64"]), e["content_type"]) for e in entries]


def read_captures(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def steps(message: bytes) -> list[dict[str, Any]]:
    """field 9 decoded to proto3 JSON, one dict per step."""
    return [to_json(s) for s in parse_request(message).steps]


def commands(message: bytes) -> list[tuple[str, int | None, bool]]:
    """(command line, exit code or None when absent, stdout present) per run_command step."""
    out = []
    for s in steps(message):
        rc = s.get("runCommand")
        if rc is not None:
            out.append((rc.get("commandLine", ""), rc.get("exitCode"), "stdout" in rc))
    return out


def outside_field_9(message: bytes) -> list[bytes]:
    """Every top-level field but additional_steps, as raw bytes (what must pass unchanged)."""
    return [message[f.start : f.end] for f in fields(message) if f.number != 9]
