"""The reference fix's probe on both hops, no client named: a failed ``ls /nope`` (exit 2) that
the known gateway sends as exit 0."""

from __future__ import annotations

import base64

import httpx
import orjson
from native_bridge._proto import cortex_pb2 as pb

from .. import fake_language_server
from ..mitmdump import Mitmdump
from ..reference_planner import STEPS_KEY, ReferencePlanner
from .h2_client import grpc_post
from .inputs import PROBE_COMMAND, PROBE_RESULT, RUN_HEADER, SEND
from .planner import message_of, run_steps


def _probe_chat_body() -> bytes:
    call = {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls /nope"}'}}
    messages = [
        {"role": "user", "content": "list /nope"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": PROBE_RESULT},
    ]
    return orjson.dumps({"model": "m", "messages": messages})  # no tools declared: no client can be named


def _probe_grpc_body(cascade_id: str) -> bytes:
    """The known gateway's send for the probe: a DONE run_command with exit 0 and the output twice."""
    run = pb.CortexStepRunCommand(
        command_line=PROBE_COMMAND,
        stdout=PROBE_RESULT,
        exit_code=0,
        combined_output=pb.RunCommandOutput(full=PROBE_RESULT),
    )
    step = pb.CortexTrajectoryStep(
        type=pb.CORTEX_STEP_TYPE_RUN_COMMAND, status=pb.CORTEX_STEP_STATUS_DONE, run_command=run
    )
    message = pb.SendUserCascadeMessageRequest(
        cascade_id=cascade_id, items=[pb.TextOrScopeItem(text="go on")], additional_steps=[step]
    ).SerializeToString()
    return b"\x00" + len(message).to_bytes(4, "big") + message


def reference_probe(
    proxy: Mitmdump, planner: ReferencePlanner, planner_port: int, ls: fake_language_server.FakeLanguageServer, tag: str
) -> tuple[tuple[str, str, str], list[str]]:
    """The reference fix's probe on both hops, no client named: (the probe row, problems). The
    planner hop alone goes first, so no observation of the chat hop can decide it."""
    problems: list[str] = []
    status, grpc_status, _ = grpc_post(planner_port, SEND, _probe_grpc_body(f"probe-{tag}"), [(RUN_HEADER, tag)])
    if (status, grpc_status) != ("200", "0"):
        problems.append(f"probe send: HTTP {status or '-'}, grpc-status {grpc_status or '-'}")
    received = [message_of(base64.b64decode(c["body_b64"])) for c in ls.captured() if c["path"] == SEND]
    alone = [s["exit_code"] for s in run_steps(received[-1])] if received else []
    r = httpx.post(
        f"{proxy.url}/v1/chat/completions",
        content=_probe_chat_body(),
        headers={"content-type": "application/json", RUN_HEADER: tag + "-chat"},
        timeout=30,
    )
    got = planner.find(RUN_HEADER, tag + "-chat")
    steps = got[0].json.get(STEPS_KEY, []) if got and isinstance(got[0].json, dict) else []
    chat = [s["runCommand"].get("exitCode") for s in steps if "runCommand" in s]
    if r.status_code != 200 or chat != [2]:
        problems.append(f"the reference probe on the chat hop: HTTP {r.status_code}, exit codes {chat}")
    if alone != [2]:
        problems.append(f"the reference probe on the planner hop alone: exit codes {alone}")

    def shown(codes: list[int | None]) -> str:
        return ", ".join("absent" if c is None else str(c) for c in codes) or "no step"

    row = ("reference probe, no client (truth: 2)", "0", f"chat hop {shown(chat)}; planner hop alone {shown(alone)}")
    return row, problems
