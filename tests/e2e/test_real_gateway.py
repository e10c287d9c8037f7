"""Both hops in front of the REAL gateway (dwgx/WindsurfAPI v3.9.27), through the shim.

scripts/real_gateway.py runs, inside private mount/net/pid namespaces (only ``lo`` up):
agent (the fixture chat turns, as Claude Code) -> chat hop (mitmdump, bridge_mode=observe)
-> the gateway (node) -> LS_BINARY_PATH = scripts/language-server-shim -> the shim's mitmdump
(the planner hop) -> scripts/fake_language_server.py. The two mitmdumps share one SQLite
state file; the shim's settings name no client, so a stated exit code can only come from
what the chat hop observed.

A second scenario runs the planner hop alone (``--scenario codex --no-chat-hop``): Codex CLI
over Chat Completions, no User-Agent, straight to the gateway; its ``shell_command`` results
in Codex's own frame (``Exit code: N\\nWall time: ...\\nOutput:\\n...``). Nothing observed them
but the gateway, which stamps every run_command exit 0: the codes the language server gets
(2, then 1) can only come from the frames inside the gateway's own steps.

Skipped, with the reason, when no copy of the gateway is present ($BRIDGE_GATEWAY_DIR or
/work/gateway/WindsurfAPI), when node is missing, or when namespaces cannot be created.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import procs
import pytest
from native_bridge.cascade import fields, parse_request, to_json
from native_bridge.cascade.wire import value
from realgateway import FIXTURES, PLANTED_KEY, ROOT, captured_messages, commands, message_of, read_captures
from support import real_gateway

pytestmark = pytest.mark.e2e

SCRIPT = ROOT / "scripts" / "real_gateway.py"

VOLATILE_METADATA = (9, 10)  # Metadata fields that change per request (a counter, a session id)
TURN1 = {"grpc": "grpc-turn1.bin", "connect": "connect-turn1.bin"}
TURN2 = "grpc-turn2-resumed.bin"  # the message of turn 2 is the same in both transports


class Run:
    def __init__(self, state: Path, transport: str, done: subprocess.CompletedProcess[str]) -> None:
        self.state = state
        self.transport = transport
        self.done = done
        self.output = done.stdout + done.stderr
        self.entries = read_captures(state / "out" / "captures.jsonl")
        self.sent = captured_messages(self.entries)
        summary = state / "out" / "summary.json"
        self.summary: dict[str, Any] = json.loads(summary.read_text()) if summary.exists() else {}

    def fail(self, message: str) -> None:
        logs = []
        for name in ("gateway.log", "chat-mitmdump.log", "planner-mitmdump.log"):
            p = self.state / "out" / name
            logs.append(f"--- {name} ---\n{p.read_text(errors='replace')[-6000:] if p.exists() else '(none)'}")
        pytest.fail(f"{message}\n--- real_gateway.py ---\n{self.output[-6000:]}\n" + "\n".join(logs))

    def untouched(self) -> list[str]:
        """The planner hop's log lines for requests it let through uncorrected (and why)."""
        log = self.state / "out" / "planner-mitmdump.log"
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        return [line for line in lines if "passed through untouched" in line]

    def planner_records(self) -> list[dict[str, Any]]:
        paths = sorted((self.state / "records" / "planner").glob("[!.]*.json"))
        return [json.loads(p.read_text()) for p in paths]


def launch(tmp_path_factory: pytest.TempPathFactory, name: str, transport: str, *extra: str) -> Run:
    """scripts/real_gateway.py once, in a state directory of its own; two turns must reach the planner."""
    gateway = real_gateway.gateway_dir(None)
    reason = real_gateway.why_not(gateway)
    if reason is not None:
        pytest.skip(f"the real gateway cannot run here: {reason}")
    state = tmp_path_factory.mktemp(f"{name}-{transport}")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--state", str(state), "--transport", transport, "--timeout", "240", *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    r = Run(state, transport, done)
    if done.returncode != 0 or len(r.sent) != 2:
        r.fail(f"the run failed (exit {done.returncode}, {len(r.sent)} SendUserCascadeMessage received, expected 2)")
    return r


@pytest.fixture(scope="module", params=["grpc", "connect"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return launch(tmp_path_factory, "real-gateway", request.param)


@pytest.fixture(scope="module", params=["grpc", "connect"])
def codex_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Codex CLI frames, the planner hop alone: no chat hop, no client named, no shared state."""
    return launch(tmp_path_factory, "real-gateway-codex", request.param, "--scenario", "codex", "--no-chat-hop")


def fixture_message(name: str) -> bytes:
    body = (FIXTURES / name).read_bytes()
    return message_of(body, "application/connect+proto" if name.startswith("connect") else "application/grpc")


def all_but_steps(message: bytes) -> list[Any]:
    """Every top-level field but additional_steps, raw; Metadata without its per-request fields."""
    out: list[Any] = []
    for f in fields(message):
        if f.number == 9:
            continue
        if f.number == 3:
            md = value(message, f)
            out.append([md[g.start : g.end] for g in fields(md) if g.number not in VOLATILE_METADATA])
        else:
            out.append(message[f.start : f.end])
    return out


def corrected(step: bytes, exit_code: int) -> dict[str, Any]:
    """The gateway's run_command step as the planner must receive it: the true exit code, one copy,
    and the official type (the gateway's 28 is officially COMMAND_STATUS)."""
    return corrected_json(to_json(step), exit_code)


def retyped(step: bytes, type_: int) -> bytes:
    """The gateway's step with the official type of its body in place of its own, all else as sent."""
    assert step[0] == 0x08 and step[1] < 0x80  # the type first, in one byte (14, 105)
    return bytes([0x08, type_]) + step[2:]


def assert_transport(run: Run) -> None:
    want = "application/connect+proto" if run.transport == "connect" else "application/grpc"
    assert [e["content_type"] for e in run.entries] == [want, want]
    assert [r["status"] for r in run.summary["responses"]] == [200, 200], "the agent got its replies"


def assert_no_key(run: Run) -> None:
    files = [
        *(run.state / "records").rglob("*"),
        *run.state.glob("*.sqlite*"),
        *(run.state / "out").glob("*mitmdump.log"),
    ]
    assert any(p.suffix == ".json" for p in files), "records were written"
    leaked = [str(p) for p in files if p.is_file() and PLANTED_KEY in p.read_bytes()]
    assert not leaked, leaked
    assert run.summary["planted_key_in"] == []
    assert all(PLANTED_KEY in m for m in run.sent), (
        "the language server itself gets the gateway's key (it needs it), so there was one to leak"
    )


def assert_no_leftover(run: Run) -> None:
    assert run.summary["leftover"] == [], "alive in the namespace after the gateway (and the chat hop) stopped"
    state = str(run.state)
    alive = [p for p in procs.pids() if procs.alive(p) and state in procs.cmdline(p)]
    assert not alive, [procs.cmdline(p) for p in alive]


def test_the_transport_is_the_one_asked_for(run: Run):
    assert_transport(run)


def test_turn_one_the_language_server_gets_the_truth(run: Run):
    got = run.sent[0]
    gateway = fixture_message(TURN1[run.transport])  # what the gateway sends for this turn (shared/fixtures)
    before = parse_request(gateway).steps
    after = parse_request(got).steps
    # npm test failed with exit 1 (is_error + "Exit code 1" from Claude Code, observed by the chat
    # hop); its output once; `npm run dev` never got a result: no DONE step for it.
    assert commands(got) == [("npm test", 1, False)], (commands(got), run.untouched())
    assert len(after) == 3
    assert to_json(after[0]) == corrected(before[0], 1)
    # view_file and grep: byte for byte but for the type (14 -> VIEW_FILE 8, 105 -> GREP_SEARCH_V2 91)
    assert after[1:] == [retyped(before[1], 8), retyped(before[3], 91)]
    assert all_but_steps(got) == all_but_steps(gateway), "every other field as the gateway sent it"


def test_turn_two_the_resumed_cascade_gets_only_the_new_step(run: Run):
    got = run.sent[1]
    gateway = fixture_message(TURN2)
    before = parse_request(gateway).steps
    after = parse_request(got).steps
    assert parse_request(got).cascade_id == parse_request(run.sent[0]).cascade_id, "the gateway resumed the cascade"
    assert commands(got) == [("cat test_x.py", 2, False)], (commands(got), run.untouched())
    assert [to_json(s) for s in after] == [corrected(before[4], 2)]
    assert all_but_steps(got) == all_but_steps(gateway)


def test_the_exit_codes_came_from_the_chat_hop_through_the_shared_state(run: Run):
    """The shim names no client: without the chat hop's observations in the state file's logs
    the planner hop could not state these codes (the field would be absent)."""
    shim_toml = (run.state / "gwhome" / ".config" / "native-bridge" / "shim.toml").read_text()
    assert "client" not in shim_toml
    changes = [c for r in run.planner_records() for c in r["planner"]["changes"]]
    reasons = [c["reason"] for c in changes if c["action"] == "exit_code"]
    assert len(reasons) == 2, (reasons, run.untouched())
    assert all("the chat hop observed" in reason for reason in reasons), reasons
    assert (run.state / "bridge.sqlite").exists() and list(run.state.glob("bridge.sqlite-obs-*"))


def test_no_key_in_any_record_or_state_file(run: Run):
    assert_no_key(run)


def test_no_process_is_left_behind(run: Run):
    assert_no_leftover(run)


# ------------------------------------------------------------------ Codex frames, the planner hop alone

CODEX_TURNS = [json.loads(p.read_bytes()) for p in real_gateway.SCENARIOS["codex"].turns]


def codex_result(turn: int, call_id: str) -> str:
    """The tool result exactly as the agent sent it (Codex's own frame)."""
    return next(m["content"] for m in CODEX_TURNS[turn]["messages"] if m.get("tool_call_id") == call_id)


def corrected_json(step: dict[str, Any], exit_code: int) -> dict[str, Any]:
    """The gateway's run_command step (proto3 JSON) as the planner must receive it."""
    j = json.loads(json.dumps(step))
    assert j["type"] == "CORTEX_STEP_TYPE_COMMAND_STATUS"
    j["type"] = "CORTEX_STEP_TYPE_RUN_COMMAND"
    j["runCommand"].pop("stdout")
    j["runCommand"]["exitCode"] = exit_code
    return j


def test_codex_the_planner_hop_ran_alone(codex_run: Run):
    """No chat hop: the agent posted to the gateway itself, no client named, no shared state."""
    assert_transport(codex_run)
    assert codex_run.summary["chat_hop"] is False
    assert codex_run.summary["scenario"] == "codex"
    shim_toml = (codex_run.state / "gwhome" / ".config" / "native-bridge" / "shim.toml").read_text()
    assert "client" not in shim_toml
    assert str(codex_run.state / "planner.sqlite") in shim_toml, "the planner hop's state is its own"
    assert not (codex_run.state / "bridge.sqlite").exists()
    assert not (codex_run.state / "records" / "chat").exists()
    assert not (codex_run.state / "out" / "chat-mitmdump.log").exists()


def test_codex_the_agent_sends_no_user_agent():
    """The harness's agent stays unnamed: no User-Agent (not even urllib's own) on the wire."""
    heard: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as srv:

        def answer() -> None:
            conn, _ = srv.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                heard.append(data.split(b"\r\n\r\n")[0])
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")

        t = threading.Thread(target=answer, daemon=True)
        t.start()
        sc = real_gateway.SCENARIOS["codex"]
        status, _ = real_gateway.post(srv.getsockname()[1], sc.path, sc.turns[0].read_bytes(), sc.headers)
        t.join(10)
    assert status == 200
    head = heard[0].decode().lower()
    assert head.startswith("post /v1/chat/completions ")
    assert "\r\nuser-agent:" not in head, head
    assert "\r\nauthorization: bearer " in head


def test_codex_turn_one_the_language_server_gets_exit_2(codex_run: Run):
    got = codex_run.sent[0]
    before = codex_run.summary["gateway_sent"][0]
    after = parse_request(got).steps
    # The gateway's own step: exit 0, the output twice; the planner hop states the frame's 2, once.
    assert [(s["runCommand"].get("exitCode"), "stdout" in s["runCommand"]) for s in before] == [(0, True)]
    assert commands(got) == [("ls /nope", 2, False)], (commands(got), codex_run.untouched())
    assert [to_json(s) for s in after] == [corrected_json(before[0], 2)]
    assert to_json(after[0])["runCommand"]["combinedOutput"]["full"] == codex_result(0, "call_ls_nope")


def test_codex_turn_two_the_resumed_cascade_gets_exit_1_only(codex_run: Run):
    got = codex_run.sent[1]
    before = codex_run.summary["gateway_sent"][1]
    after = parse_request(got).steps
    assert parse_request(got).cascade_id == parse_request(codex_run.sent[0]).cascade_id, "the gateway resumed"
    # The gateway re-sends `ls /nope` with the new step; the ledger keeps only the new one.
    assert [s["runCommand"]["commandLine"] for s in before] == ["ls /nope", "npm test"]
    assert commands(got) == [("npm test", 1, False)], (commands(got), codex_run.untouched())
    assert [to_json(s) for s in after] == [corrected_json(before[1], 1)]
    assert to_json(after[0])["runCommand"]["combinedOutput"]["full"] == codex_result(1, "native:run_command:1")


def test_codex_the_exit_codes_came_from_the_frames(codex_run: Run):
    """Nothing observed the results but the gateway: the codes are read from its own steps."""
    changes = [c for r in codex_run.planner_records() for c in r["planner"]["changes"]]
    reasons = [c["reason"] for c in changes if c["action"] == "exit_code"]
    assert len(reasons) == 2, (reasons, codex_run.untouched())
    assert [r.split(":")[0] for r in reasons] == ["exit_code 0 -> 2", "exit_code 0 -> 1"], reasons
    assert not any("the chat hop observed" in r for r in reasons), reasons


def test_codex_no_key_in_any_record_or_state_file(codex_run: Run):
    assert_no_key(codex_run)


def test_codex_no_process_is_left_behind(codex_run: Run):
    assert_no_leftover(codex_run)
