"""What the run leaves behind, read back: the steps the language server received per turn, what
the gateway sent and the planner hop made of it (out/summary.json), and the lines printed."""

from __future__ import annotations

import base64
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from .config import ROOT
from .state import planted_key_in


def message_of(entry: dict[str, Any]) -> bytes:
    body = base64.b64decode(entry["body_b64"])
    if entry["content_type"].startswith("application/proto"):
        return body
    data = body[5 : 5 + int.from_bytes(body[1:5], "big")]
    return gzip.decompress(data) if body[0] & 1 else data


def decoded_turns(captures: Path) -> list[list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "addons"))
    from native_bridge.cascade import parse_request, to_json

    if not captures.exists():
        return []
    entries = [json.loads(line) for line in captures.read_text().splitlines() if line.strip()]
    return [[to_json(s) for s in parse_request(message_of(e)).steps] for e in entries]


def report(state: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "addons"))
    from native_bridge.records.planner import part_of

    out = state / "out"
    inner = json.loads((out / "inner.json").read_text()) if (out / "inner.json").exists() else {}
    records = [json.loads(p.read_text()) for p in sorted((state / "records" / "planner").glob("[!.]*.json"))]
    summary = {
        **inner,
        "turns": decoded_turns(out / "captures.jsonl"),
        "gateway_sent": [part_of(r)["steps_before"] for r in records if part_of(r)],
        "corrections": [r.get("reason") for r in records],
        "planted_key_in": planted_key_in(state),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def describe(step: dict[str, Any]) -> str:
    kind = next((k for k in step if k not in ("type", "status")), "?")
    body = step.get(kind, {})
    status = step.get("status", "").removeprefix("CORTEX_STEP_STATUS_")
    if kind == "runCommand":
        code = body.get("exitCode", "absent")
        stdout = {(True, True): "stdout + combined_output", (False, True): "combined_output only"}.get(
            ("stdout" in body, "combinedOutput" in body), "no output"
        )
        return f"{status:5} run_command {body.get('commandLine')!r} exit_code={code} ({stdout})"
    return f"{status:5} {kind}"


def show(summary: dict[str, Any], out: Path) -> None:
    """Each turn: what the gateway sent, what the planner hop made of it, what the language server got."""
    for i, turn in enumerate(summary["turns"], 1):
        if i <= len(summary["gateway_sent"]):
            sent = summary["gateway_sent"][i - 1]
            print(f"turn {i}: the gateway sent {len(sent)} step(s) in additional_steps")
            for step in sent:
                print(f"    {describe(step)}")
            print(f"  the planner hop: {summary['corrections'][i - 1]}")
        print(f"turn {i}: the language server received {len(turn)} step(s)")
        for step in turn:
            print(f"    {describe(step)}")
    print(f"processes left after stopping the gateway (and the chat hop): {summary.get('leftover') or 'none'}")
    print(f"the gateway's key in records/state: {summary['planted_key_in'] or 'nowhere'}")
    print(f"details: {out}")
