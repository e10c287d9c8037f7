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
gateway's translation, the mitmdump runner) live in scripts/support/, shared with the tests;
its own parts (what it sends, how it reads and prints each hop) in scripts/support/demo/.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import orjson
from support import fake_language_server
from support.demo.chat import before_after, probes
from support.demo.inputs import GATEWAY_TURNS, RUN_HEADER, SESSION
from support.demo.planner import planner_hop
from support.demo.probe import reference_probe
from support.mitmdump import Mitmdump, find_records, wait_records
from support.reference_planner import STEPS_KEY, Received, ReferencePlanner, validate_steps

ROOT = Path(__file__).resolve().parents[1]
_ls_log = fake_language_server.log
# The stand-in language server logs every call to stderr; the demo's report says what it received.
fake_language_server.log = lambda message: None if message.startswith("POST ") else _ls_log(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
            planner_tag = f"{run_id}-planner-hop"
            try:
                planner_report, planner_problems = planner_hop(proxy, planner_port, ls, planner_tag)
            except (OSError, ValueError) as e:  # a send that did not get through, an unreadable body
                planner_report, planner_problems = "", [f"planner hop: {type(e).__name__}: {e}"]
            planner_found = wait_records(records, RUN_HEADER, planner_tag)
            try:
                probe, probe_problems = reference_probe(proxy, planner, planner_port, ls, f"{run_id}-probe")
            except (OSError, ValueError) as e:
                probe, probe_problems = None, [f"reference probe: {type(e).__name__}: {e}"]
            if planner_found:  # both sends are recorded, the second one last
                deadline = time.monotonic() + 10
                while len(planner_found) < len(GATEWAY_TURNS) and time.monotonic() < deadline:
                    time.sleep(0.02)
                    planner_found = find_records(records, RUN_HEADER, planner_tag)
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
    if planner_report:
        print(planner_report)
    print(f"  Records: {len(planner_found)} planner-hop file(s), the changes with their reasons:")
    for path, _ in planner_found:
        print(f"    {_rel(path)}")
    print(f"  jq '.planner.changes[] | {{index, action, reason}}' {_rel(records)}/<file>.json\n")

    errors = validate_steps(after) if STEPS_KEY in after else [f"no {STEPS_KEY} reached the planner"]
    problems = [*received.errors, *errors, *planner_problems, *probe_problems]
    if len(planner_found) != len(GATEWAY_TURNS):
        problems.append(f"{len(planner_found)} planner-hop records written, expected {len(GATEWAY_TURNS)}")
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
