"""The loopback demo: an agent session -> mitmdump with the bridge -> reference planner.

    .venv/bin/python scripts/demo.py [--records DIR] [--session FILE]

Starts the reference planner in process and a real ``mitmdump -s addons/bridge.py``
in reverse-proxy mode in front of it (127.0.0.1 only, ephemeral ports), sends the
bundled Claude-Code-like session through it, and prints what changed, how the
known gateway would have translated the same history, and where the records went.
Exit status 0: the planner accepted the rewritten request and its steps validated.

The same mitmdump also opens a planner listener (``bridge_planner``, prior-knowledge
HTTP/2) in front of a stand-in language server (support/fake_language_server.py, in
process), and a client framing like the gateway sends the real gateway's two
SendUserCascadeMessage bodies through it (tests/fixtures/sessions/gateway-grpc-*.bin: turn 1,
then the resumed cascade's turn 2), each after the agent's chat request that produced it
(gateway-chat-*.json, through the chat listener: the chat hop's observation). Part (d)
shows the four defects of the gateway's steps before and after: exit code 0 for a failed
command, stdout written twice, a DONE step for a call that never got a result, and the
whole history sent again on a resumed cascade.

The stand-ins it runs (the reference planner, the stand-in language server, the known
gateway's translation, the mitmdump runner) live in scripts/support/, shared with the tests.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent
FIXTURES = ROOT / "tests" / "fixtures" / "sessions"  # the bundled sessions and the gateway's captures
SESSION = FIXTURES / "chat_session.json"
# The real gateway's (dwgx/WindsurfAPI 3.9.27) SendUserCascadeMessage bodies and the agent's chat
# requests that produced them; Metadata.api_key is a planted fake key.
GATEWAY_TURNS = (
    (FIXTURES / "gateway-chat-turn1.json", FIXTURES / "gateway-grpc-turn1.bin"),
    (FIXTURES / "gateway-chat-turn2.json", FIXTURES / "gateway-grpc-turn2-resumed.bin"),
)
SEND = "/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage"
CLAUDE_CODE_UA = "claude-cli/2.1.332 (external, cli)"  # the agent behind the gateway: its own frames count
# The reference fix's probe, exactly as it states it: a failed Bash over Chat Completions, no client named.
PROBE_COMMAND = "ls /nope"
PROBE_RESULT = "Exit code: 2\nOutput:\nls: cannot access /nope"

from native_bridge._proto import cortex_pb2 as pb  # noqa: E402
from native_bridge.cascade.framing import unframe  # noqa: E402
from native_bridge.cascade.request import parse_request  # noqa: E402
from native_bridge.cascade.steps import STDOUT, run_command, view  # noqa: E402
from native_bridge.cascade.wire import fields  # noqa: E402
from native_bridge.records import redact  # noqa: E402
from support import fake_language_server, known_gateway  # noqa: E402
from support.mitmdump import Mitmdump, find_records, wait_records  # noqa: E402
from support.reference_planner import STEPS_KEY, Received, ReferencePlanner, validate_steps  # noqa: E402

DELTA_KEY = "additional_steps_delta_start"
_ls_log = fake_language_server.log
# The stand-in language server logs every call to stderr; the demo's report says what it received.
fake_language_server.log = lambda message: None if message.startswith("POST ") else _ls_log(message)
RUN_HEADER = "x-bridge-run"


# ---- the report ----------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> str:
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(indent + line for line in lines)


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tc for m in messages if m.get("role") == "assistant" for tc in m.get("tool_calls") or []]


def _results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "tool"]


def _args(call: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(call["function"]["arguments"] or "{}")


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


_EXIT = re.compile(r"(?i)^exit code:? (-?\d+)$")


def session_facts(session: dict[str, Any]) -> dict[str, Any]:
    """Ground truth read straight from the session, without the bridge."""
    messages = session["messages"]
    calls, results = _calls(messages), _results(messages)
    call_ids = {c["id"] for c in calls}
    result_of = {r["tool_call_id"]: r["content"] for r in results}
    failed_bash = {}
    for c in calls:
        text = result_of.get(c["id"])
        if c["function"]["name"] == "Bash" and isinstance(text, str) and text.strip():
            lines = text.strip().splitlines()
            m = _EXIT.match(lines[0].strip()) or _EXIT.match(lines[-1].strip())
            if m and int(m.group(1)) != 0:
                failed_bash[c["id"]] = (_args(c)["command"], int(m.group(1)))
    return {
        "unanswered": [c for c in calls if c["id"] not in result_of],
        "orphans": [r["tool_call_id"] for r in results if r["tool_call_id"] not in call_ids],
        "unmapped": [c["id"] for c in calls if c["function"]["name"] not in known_gateway.TOOL_KINDS],
        "failed_read": [
            c["id"]
            for c in calls
            if c["function"]["name"] == "Read" and "<tool_use_error>" in str(result_of.get(c["id"], ""))
        ],
        "failed_bash": failed_bash,
    }


def _ids_in(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for c in _calls(messages)} | {r["tool_call_id"] for r in _results(messages)}


def _run_commands(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s["runCommand"] for s in steps if "runCommand" in s]


def before_after(session: dict[str, Any], after: dict[str, Any], record: dict[str, Any] | None) -> str:
    before_m, after_m = session["messages"], after["messages"]
    steps = after.get(STEPS_KEY, [])
    rows = [
        ("messages", len(before_m), len(after_m)),
        ("tool calls (in messages)", len(_calls(before_m)), len(_calls(after_m))),
        ("tool results (in messages)", len(_results(before_m)), len(_results(after_m))),
        (STEPS_KEY, "-", len(steps)),
        (DELTA_KEY, "-", after.get(DELTA_KEY, "-")),
    ]
    out = [table(("", "before", "after"), rows)]
    failed = [
        (i, _short(redact.text(s["runCommand"].get("commandLine", "")), 56), s["runCommand"]["exitCode"])
        for i, s in enumerate(steps)
        if s.get("runCommand", {}).get("exitCode") not in (None, 0)
    ]
    if failed:
        out += [
            "",
            "  Failed steps, with their true exit codes:",
            table(("step", "command", "exit_code"), failed, "    "),
        ]
    else:
        out += ["", "  No step states a failure: this client's words state no exit code here (see the probe below)."]
    if record is not None:
        kept = [
            (p["item"], p["name"] or "?", p["id"], p["kept"], _short(p["reason"] or "", 60))
            for p in record["accounting"]
            if "kept" in p
        ]
        out += ["", "  Kept as messages (from the record's accounting):"]
        out.append(table(("item", "tool", "id", "code", "reason"), kept, "    "))
    return "\n".join(out)


def probes(session: dict[str, Any], after: dict[str, Any], probe: tuple[str, str, str] | None = None) -> str:
    facts = session_facts(session)
    known = known_gateway.translate(session)
    known_by_call = dict(zip(known.step_calls, known.steps, strict=True))
    steps = after.get(STEPS_KEY, [])
    bridge_cmds = _run_commands(steps)

    unanswered = [_args(c).get("command", c["function"]["name"]) for c in facts["unanswered"]]
    k_unans = [
        known_by_call[c["id"]]["status"].removeprefix("CORTEX_STEP_STATUS_") if c["id"] in known_by_call else "no"
        for c in facts["unanswered"]
    ]
    b_unans = [sum(r.get("commandLine") == cmd for r in bridge_cmds) for cmd in unanswered]

    failed = facts["failed_bash"]
    k_codes = [known_by_call[i]["runCommand"].get("exitCode", "absent") for i in failed]
    b_codes = [
        next((r.get("exitCode", "absent") for r in bridge_cmds if r.get("commandLine") == cmd), "no step")
        for cmd, _ in failed.values()
    ]
    truth = [code for _, code in failed.values()]

    # proto3 JSON omits an empty string, so a no-result step shows no stdout even at the gateway.
    k_runs = _run_commands(known.steps)
    k_stdout = sum("stdout" in r for r in k_runs)
    b_stdout = sum("stdout" in r for r in bridge_cmds)

    lost = set(facts["unmapped"]) | set(facts["orphans"])
    k_kept = len(lost & _ids_in(known.messages))
    b_kept = len(lost & _ids_in(after["messages"]))

    reads = facts["failed_read"]
    k_reads = [known_by_call[i]["status"].removeprefix("CORTEX_STEP_STATUS_") for i in reads if i in known_by_call]
    b_reads = sum(i in _ids_in(after["messages"]) for i in reads)

    def codes(values: list[Any]) -> str:
        return ", ".join(map(str, values)) or "-"

    rows = [
        (
            "call with no result -> steps",
            f"{len(k_unans)} x {codes(k_unans)} step (empty output)",
            "no step" if not any(b_unans) else f"{sum(b_unans)} step(s)",
        ),
        (f"failed Bash -> exit_code (truth: {codes(truth)})", codes(k_codes), codes(b_codes)),
        (
            "separate stdout field",
            f"{'present' if k_stdout else 'absent'} ({k_stdout} of {len(k_runs)} run_command steps)",
            f"{'present' if b_stdout else 'absent'} ({b_stdout} of {len(bridge_cmds)} run_command steps)",
        ),
        (
            f"unmapped/orphan items ({len(lost)} ids)",
            f"dropped ({len(lost) - k_kept} of {len(lost)})",
            f"kept as messages ({b_kept} of {len(lost)})",
        ),
        ("failed Read -> steps", f"{codes(k_reads)} view_file step", "kept as message" if b_reads else "lost"),
        (
            "steps sent on a resumed turn",
            f"all {len(known.steps)} again",
            f"steps[{after[DELTA_KEY]}:] = {len(steps) - after[DELTA_KEY]}" if DELTA_KEY in after else "-",
        ),
        *([probe] if probe else []),
    ]
    text = table(("probe", "the known gateway", "bridge (what the planner received)"), rows)
    if truth and all(c == "absent" for c in b_codes):
        text += (
            "\n  absent, not 0: the session's client is Claude Code (named by its tools), which writes 'Exit code N'"
            "\n  only with is_error, and Chat Completions cannot carry it: that line is the program's (truth rule 3)."
            "\n  Through both hops, (d) below, the chat hop sees is_error and the planner gets the true codes. A"
            "\n  client we cannot name gets every known frame read at its place: the reference probe's 2."
        )
    return text


# ---- the planner hop -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def grpc_post(port: int, path: str, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> tuple[str, str, bytes]:
    """One unary gRPC call as the gateway makes it: prior-knowledge HTTP/2 (no TLS, no upgrade),
    the body sent as given (already framed). (HTTP status, grpc-status, response body)."""
    from h2.config import H2Configuration
    from h2.connection import H2Connection
    from h2.events import DataReceived, ResponseReceived, StreamEnded, StreamReset, TrailersReceived

    conn = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    status, grpc_status, data = "", "", bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        conn.initiate_connection()
        sid = conn.get_next_available_stream_id()
        request_headers = [
            (":method", "POST"),
            (":scheme", "http"),
            (":authority", f"127.0.0.1:{port}"),
            (":path", path),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            *headers,
        ]
        conn.send_headers(sid, request_headers)
        step = conn.max_outbound_frame_size  # the bodies here are far below the initial window
        for i in range(0, len(body), step):
            conn.send_data(sid, body[i : i + step], end_stream=i + step >= len(body))
        sock.sendall(conn.data_to_send())
        ended = False
        while not ended:
            chunk = sock.recv(65536)
            if not chunk:
                break
            for event in conn.receive_data(chunk):
                if isinstance(event, ResponseReceived | TrailersReceived):
                    h = dict(event.headers)
                    status = h.get(":status", status)
                    grpc_status = h.get("grpc-status", grpc_status)
                elif isinstance(event, DataReceived):
                    data += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, StreamEnded | StreamReset):
                    ended = True
            sock.sendall(conn.data_to_send())
        conn.close_connection()
        sock.sendall(conn.data_to_send())
    return status, grpc_status, bytes(data)


def _message(body: bytes) -> bytes:
    return unframe(body, "application/grpc", {}, 1 << 24).payload


def _run_steps(message: bytes) -> list[dict[str, Any]]:
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
        sent.append(_message(body))
        status, grpc_status, _ = grpc_post(planner_port, SEND, body, [(RUN_HEADER, tag)])
        if (status, grpc_status) != ("200", "0"):
            problems.append(f"{grpc_path.name}: HTTP {status or '-'}, grpc-status {grpc_status or '-'}")
    received = [_message(base64.b64decode(c["body_b64"])) for c in ls.captured() if c["path"] == SEND]
    if len(received) != len(sent):
        problems.append(f"the language server received {len(received)} sends, expected {len(sent)}")
        return "", problems

    failed, unanswered = chat_truth(chats)
    g_runs = [_run_steps(m) for m in sent]
    r_runs = [_run_steps(m) for m in received]

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
    received = [_message(base64.b64decode(c["body_b64"])) for c in ls.captured() if c["path"] == SEND]
    alone = [s["exit_code"] for s in _run_steps(received[-1])] if received else []
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


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run(session_path: Path, records: Path) -> int:
    raw = session_path.read_bytes()
    session = orjson.loads(raw)
    run_id = uuid.uuid4().hex
    print(f"native_bridge demo: {_rel(session_path)} -> mitmdump -s addons/bridge.py -> reference planner")
    with (
        tempfile.TemporaryDirectory(prefix="bridge-demo-") as confdir,
        ReferencePlanner() as planner,
        fake_language_server.FakeLanguageServer() as ls,
    ):
        # The planner hop: a second listener of the same mitmdump, in front of the language server.
        planner_port = free_port()
        spec = f"reverse:http://127.0.0.1:{ls.port}@{planner_port}"
        proxy = Mitmdump(planner.url, records, Path(confdir), ["--mode", spec, "--set", f"bridge_planner={spec}"])
        try:
            proxy.start()
        except (RuntimeError, OSError) as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 2
        try:
            print(f"planner {planner.url}   proxy {proxy.url}   records {_rel(records)}/\n")
            reply = httpx.post(
                f"{proxy.url}/v1/chat/completions",
                content=raw,
                headers={"content-type": "application/json", RUN_HEADER: run_id},
                timeout=30,
            )
            found = wait_records(records, RUN_HEADER, run_id)
            native_tag = f"{run_id}-planner-hop"
            try:
                native_report, native_problems = planner_hop(proxy, planner_port, ls, native_tag)
            except (OSError, ValueError) as e:  # a send that did not get through, an unreadable body
                native_report, native_problems = "", [f"planner hop: {type(e).__name__}: {e}"]
            native_found = wait_records(records, RUN_HEADER, native_tag)
            try:
                probe, probe_problems = reference_probe(proxy, planner, planner_port, ls, f"{run_id}-probe")
            except (OSError, ValueError) as e:
                probe, probe_problems = None, [f"reference probe: {type(e).__name__}: {e}"]
            if native_found:  # both sends are recorded, the second one last
                deadline = time.monotonic() + 10
                while len(native_found) < len(GATEWAY_TURNS) and time.monotonic() < deadline:
                    time.sleep(0.02)
                    native_found = find_records(records, RUN_HEADER, native_tag)
        finally:
            proxy.stop()
        got: list[Received] = planner.find(RUN_HEADER, run_id)
    if len(got) != 1 or not isinstance(got[0].json, dict):
        print(f"FAIL: the planner received {len(got)} requests; mitmdump said:\n{proxy.output}", file=sys.stderr)
        return 1
    received, after = got[0], got[0].json
    record = found[0][1] if found else None

    print("(a) Before / after: what the client sent, what the planner received")
    print(before_after(session, after, record))
    print("\n(b) Probes: the same session through the known gateway and through the bridge")
    print(probes(session, after, probe))
    print(f"\n(c) Records: {len(found)} file(s) in {_rel(records)}/")
    for path, _ in found:
        print(f"  {_rel(path)}")
    jq = "{status, summary, kept: [.accounting[] | select(.kept) | {item, name, kept, reason}]}"
    print(f"  jq '{jq}' {_rel(records)}/*.json\n")

    print("(d) Planner hop: the real gateway's SendUserCascadeMessage (gRPC, prior-knowledge HTTP/2)")
    print("    -> the same mitmdump's planner listener -> a stand-in language server")
    print("  Each turn's agent request (Claude Code, Anthropic) went through the chat listener first: the chat")
    print("  hop observed its results, which the gateway drops (in front of a stock gateway: bridge_mode=observe).")
    if native_report:
        print(native_report)
    print(f"  Records: {len(native_found)} planner-hop file(s), the changes with their reasons:")
    for path, _ in native_found:
        print(f"    {_rel(path)}")
    print(f"  jq '.native.changes[] | {{index, action, reason}}' {_rel(records)}/<file>.json\n")

    errors = validate_steps(after) if STEPS_KEY in after else [f"no {STEPS_KEY} reached the planner"]
    problems = [*received.errors, *errors, *native_problems, *probe_problems]
    if len(native_found) != len(GATEWAY_TURNS):
        problems.append(f"{len(native_found)} planner-hop records written, expected {len(GATEWAY_TURNS)}")
    if reply.status_code != 200 or received.status != 200:
        problems.append(f"HTTP {reply.status_code} from the proxy, {received.status} from the planner")
    if record is None:
        problems.append("no record was written")
    if problems:
        print("FAIL: " + "; ".join(problems), file=sys.stderr)
        return 1
    n = len(after[STEPS_KEY])
    print(f"OK: the planner accepted the rewritten request (HTTP 200) and all {n} steps validated.")
    print("OK: the language server accepted both corrected sends (grpc-status 0), the four defects corrected.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Loopback demo of the native bridge.")
    parser.add_argument("--records", type=Path, help="record directory (default: demo-records/<timestamp>/)")
    parser.add_argument("--session", type=Path, default=SESSION, help="Chat Completions request body to send")
    args = parser.parse_args(argv)
    records = args.records
    if records is None:
        records = ROOT / "demo-records" / time.strftime("%Y%m%dT%H%M%S")
        if records.exists():  # two runs in one second
            records = records.with_name(f"{records.name}-{os.getpid()}")
    return run(args.session, records)


if __name__ == "__main__":
    from support import cli

    cli.run(main)
