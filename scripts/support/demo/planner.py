"""The planner hop's part of the demo: the real gateway's two sends, each after the agent's chat
request that produced it, through the planner listener to the stand-in language server, and the
gateway's four defects before and after."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

import httpx
import orjson
from native_bridge.cascade.framing import unframe
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.steps import STDOUT, run_command, view
from native_bridge.cascade.wire import fields
from native_bridge.records import redact

from .. import fake_language_server
from ..mitmdump import Mitmdump
from .h2_client import grpc_post
from .inputs import CLAUDE_CODE_UA, GATEWAY_TURNS, RUN_HEADER, SEND
from .table import table


def message_of(body: bytes) -> bytes:
    return unframe(body, "application/grpc", {}, 1 << 24).payload


def run_steps(message: bytes) -> list[dict[str, Any]]:
    """The run_command steps of a SendUserCascadeMessage: command, exit code, stdout twice, output."""
    out = []
    for step in parse_request(message).steps:
        v = view(step)
        if v.kind != "run_command" or v.body is None:
            continue
        rc = run_command(v.body)
        twice = any(f.number == STDOUT for f in fields(v.body)) and rc.stdout == rc.full and rc.combined_output
        out.append(
            {
                "command": rc.command_line,
                "exit_code": rc.exit_code,
                "stdout_twice": bool(twice),
                "observed": rc.combined_output or rc.stdout is not None,
                "done": v.done,
            }
        )
    return out


_CLIENT_EXIT = re.compile(r"^Exit code (\d+)")


def chat_truth(chat_bodies: Sequence[bytes]) -> tuple[dict[str, int], list[str]]:
    """From the agent's own (Anthropic) requests: the failed commands with their codes, and the
    commands that never got a result. Ground truth read without the bridge."""
    failed: dict[str, int] = {}
    unanswered: list[str] = []
    for raw in chat_bodies:
        blocks = [b for m in orjson.loads(raw)["messages"] if isinstance(m["content"], list) for b in m["content"]]
        results = {b["tool_use_id"]: b for b in blocks if b.get("type") == "tool_result"}
        for b in blocks:
            if b.get("type") != "tool_use" or b.get("name") != "Bash":
                continue
            command = b["input"]["command"]
            r = results.get(b["id"])
            if r is None:
                if command not in unanswered:
                    unanswered.append(command)
            elif r.get("is_error") and (m := _CLIENT_EXIT.match(str(r.get("content")))):
                failed[command] = int(m.group(1))
    return failed, unanswered


def planner_hop(
    proxy: Mitmdump, planner_port: int, ls: fake_language_server.FakeLanguageServer, tag: str
) -> tuple[str, list[str]]:
    """Send both turns (chat request, then the gateway's gRPC send) and compare the gateway's
    steps with what the language server received. (The report, problems.)"""
    problems: list[str] = []
    sent: list[bytes] = []
    chats: list[bytes] = []
    for chat_path, grpc_path in GATEWAY_TURNS:
        chat = chat_path.read_bytes()
        chats.append(chat)
        # The agent's request reaches the gateway through the chat listener: the chat hop observes
        # its results (is_error, the client's own "Exit code N"), which the gateway then drops.
        r = httpx.post(
            f"{proxy.url}/v1/messages",
            content=chat,
            headers={"content-type": "application/json", "user-agent": CLAUDE_CODE_UA, RUN_HEADER: tag + "-chat"},
            timeout=30,
        )
        if r.status_code != 200:
            problems.append(f"chat request {chat_path.name}: HTTP {r.status_code}")
        body = grpc_path.read_bytes()
        sent.append(message_of(body))
        status, grpc_status, _ = grpc_post(planner_port, SEND, body, [(RUN_HEADER, tag)])
        if (status, grpc_status) != ("200", "0"):
            problems.append(f"{grpc_path.name}: HTTP {status or '-'}, grpc-status {grpc_status or '-'}")
    received = [message_of(base64.b64decode(c["body_b64"])) for c in ls.captured() if c["path"] == SEND]
    if len(received) != len(sent):
        problems.append(f"the language server received {len(received)} sends, expected {len(sent)}")
        return "", problems

    failed, unanswered = chat_truth(chats)
    g_runs = [run_steps(m) for m in sent]
    r_runs = [run_steps(m) for m in received]

    def code_of(runs: list[list[dict[str, Any]]], command: str) -> str:
        codes = [s["exit_code"] for turn in runs for s in turn if s["command"] == command]
        if not codes:
            return "no step"
        return "absent" if codes[0] is None else str(codes[0])

    def codes(values: Sequence[Any]) -> str:
        return ", ".join(map(str, values)) or "-"

    g_observed = [s for turn in g_runs for s in turn if s["observed"]]
    r_observed = [s for turn in r_runs for s in turn if s["observed"]]
    g_twice = sum(s["stdout_twice"] for s in g_observed)
    r_twice = sum(s["stdout_twice"] for s in r_observed)
    g_unans = [sum(s["command"] == c and s["done"] for s in g_runs[0]) for c in unanswered]
    r_unans = [sum(s["command"] == c for turn in r_runs for s in turn) for c in unanswered]
    g_total, r_total = len(parse_request(sent[-1]).steps), len(parse_request(received[-1]).steps)
    new = [s["command"] for s in r_runs[-1]]
    rows = [
        (
            f"failed command -> exit_code (truth: {codes(failed.values())})",
            codes([code_of(g_runs, c) for c in failed]),
            codes([code_of(r_runs, c) for c in failed]),
        ),
        (
            "output: stdout (4) repeats combined_output",
            f"{g_twice} of {len(g_observed)} run_command steps",
            f"{r_twice} of {len(r_observed)} run_command steps",
        ),
        (
            f"call with no result ({codes(redact.text(c) for c in unanswered)})",
            f"{sum(g_unans)} x DONE step" if any(g_unans) else "no step",
            "no step" if not any(r_unans) else f"{sum(r_unans)} step(s)",
        ),
        (
            "resumed cascade (turn 2) -> steps",
            f"all {g_total} again",
            f"{r_total} (only the new: {codes(redact.text(c or '') for c in new)})",
        ),
    ]
    expect = {
        "exit codes": [code_of(r_runs, c) for c in failed] == [str(v) for v in failed.values()],
        "one copy of the output": r_twice == 0,
        "no step for a call without a result": not any(r_unans),
        "only the new step on the resumed cascade": r_total < g_total,
    }
    problems += [f"planner hop: {name} not corrected" for name, ok in expect.items() if not ok]
    table_text = table(("defect", "the gateway sent", "the language server received"), rows)
    return table_text, problems
