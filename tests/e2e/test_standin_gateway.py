"""The stand-in gateway (scripts/standin_gateway.py, dwgx/WindsurfAPI v3.9.27 on the wire) as a process.

agent (httpx) -> the stand-in gateway -> LS_BINARY_PATH = scripts/language-server-shim -> the shim's
mitmdump (the planner hop) -> scripts/fake_language_server.py. The gateway spawns the shim as the
real one spawns its language server (its flags, an allowlisted environment, stdio pipes) and sends
the known defective translation (exit_code 0, the output twice) in SendUserCascadeMessage field 9;
the shim names no client and there is no chat hop, so the codes the language server gets come from
the result frames inside the gateway's own steps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import procs
import pytest
from native_bridge.cascade import parse_request
from realgateway import FAKE_LS, ROOT, SHIM, captured_messages, commands, read_captures
from support import standin_gateway
from support.histories.anthropic import text, tool_result, tool_use

from .grpckit import free_port

pytestmark = pytest.mark.e2e

PROGRAM = ROOT / "scripts" / "standin_gateway.py"
PLANTED = standin_gateway.PLANTED_API_KEY.encode()
CLAUDE_CODE_UA = "claude-cli/2.1.332 (external, cli)"


class GatewayRun:
    """One stand-in gateway process, started as a deployment starts the real one."""

    def __init__(self, tmp: Path, ls_binary: Path = SHIM, cascade_prefix: str | None = None) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.state = tmp / "state" / "bridge.sqlite"
        self.records = tmp / "records"
        settings = self.home / ".config" / "native-bridge" / "shim.toml"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(
            f'ls_binary = "{FAKE_LS}"\nstate = "{self.state}"\nrecords = "{self.records}"\n'
            f'options = ["confdir={tmp / "mitmproxy-conf"}"]\n'
        )
        self.captures = self.home / ".fake_ls" / "captures.jsonl"
        if cascade_prefix is not None:  # the stand-in language server's cascade ids (its default: fake-cascade-N)
            self.captures.parent.mkdir(parents=True, exist_ok=True)
            (self.captures.parent / "config.json").write_text(json.dumps({"cascade_prefix": cascade_prefix}))
        self.rpc_log = self.home / ".fake_ls" / "rpc.jsonl"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stderr_path = tmp / "gateway.stderr"
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",  # the shim finds the checkout's Python itself
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "LS_BINARY_PATH": str(ls_binary),
            "NOT_FOR_THE_LS": "x",  # outside the allowlist: the language server must not see it
            procs.MARKER_VAR: os.environ[procs.MARKER_VAR],  # the suite's leftover check
        }
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    str(PROGRAM),
                    "--port",
                    str(self.port),
                    "--ls-port",
                    "0",
                    "--ls-data-dir",
                    str(tmp / "lsdata"),
                    "--ls-env",
                    procs.MARKER_VAR,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        deadline = time.monotonic() + 60
        while "listening on http://" not in self.stderr:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the stand-in gateway did not come up (exit {self.proc.returncode}):\n{self.stderr}")
            time.sleep(0.05)
        self.client = httpx.Client(base_url=self.url, timeout=30)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        return self.client.post(path, json=body, headers=headers)

    def sent(self, count: int, timeout: float = 10) -> list[bytes]:
        """What the language server received (SendUserCascadeMessage), once ``count`` have arrived."""
        deadline = time.monotonic() + timeout
        while len(got := read_captures(self.captures)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(got) == count, f"the language server got {len(got)} sends, expected {count}\n{self.stderr}"
        return captured_messages(got)

    def gateway_steps(self, cascade_id: str, count: int = 1) -> list[list[dict[str, Any]]]:
        """What the gateway put in field 9, per send of this cascade (the planner hop's records, written
        off the request path: waits for ``count`` of them)."""
        deadline = time.monotonic() + 10
        found: list[dict[str, Any]] = []
        while len(found) < count and time.monotonic() < deadline:
            time.sleep(0.05)
            found = [json.loads(p.read_text()) for p in sorted(self.records.glob("[!.]*.json"))]
            found = [r for r in found if (r.get("planner") or {}).get("cascade_id") == cascade_id]
        assert len(found) == count, f"{len(found)} planner-hop records of {cascade_id}, expected {count}"
        return [r["planner"]["steps_before"] for r in found]

    def children(self) -> set[int]:
        return procs.descendants(self.proc.pid)

    def stop(self) -> None:
        if hasattr(self, "client"):
            self.client.close()
        if self.proc.poll() is not None:
            return
        left = self.children()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pid in procs.wait_gone(left, 10):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayRun]:
    run = GatewayRun(tmp_path_factory.mktemp("standin-gateway"))
    try:
        yield run
    finally:
        run.stop()


def claude_code_turn(first: str, results: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "system": "You are Claude Code.",
        "messages": [
            {"role": "user", "content": first},
            {"role": "assistant", "content": [text("Let me look."), *calls]},
            {"role": "user", "content": results},
        ],
    }


ANTHROPIC_HEADERS = {"x-api-key": "sk-agent-key", "anthropic-version": "2023-06-01", "user-agent": CLAUDE_CODE_UA}


def test_a_failed_command_reaches_the_language_server_with_its_exit_code(gateway: GatewayRun):
    """Claude Code's `Exit code 2` result (is_error, which the gateway drops): the gateway sends exit 0
    and the output twice; the planner hop states 2 and keeps one copy."""
    before = len(read_captures(gateway.captures))
    body = claude_code_turn(
        "Why is the build red?",
        [tool_result("toolu_1", "Exit code 2\ncat: test_x.py: No such file or directory", is_error=True)],
        [tool_use("toolu_1", "Bash", {"command": "cat test_x.py", "description": "Show the test"})],
    )
    reply = gateway.post("/v1/messages", body, ANTHROPIC_HEADERS)
    assert reply.status_code == 200, reply.text
    assert reply.json()["content"] == [{"type": "text", "text": "ok"}]
    assert reply.json()["type"] == "message" and reply.json()["stop_reason"] == "end_turn"
    got = gateway.sent(before + 1)[-1]
    assert commands(got) == [("cat test_x.py", 2, False)], gateway.stderr
    request = parse_request(got)
    [sent] = gateway.gateway_steps(request.cascade_id)
    # What the gateway itself sent: the known translation, typed by the body's field number (28).
    assert [(s["type"], s["status"]) for s in sent] == [("CORTEX_STEP_TYPE_COMMAND_STATUS", "CORTEX_STEP_STATUS_DONE")]
    assert sent[0]["runCommand"]["exitCode"] == 0 and "stdout" in sent[0]["runCommand"]
    assert PLANTED in got, "Metadata.api_key reached the language server"


def test_a_resumed_conversation_reuses_its_cascade_and_the_planner_gets_only_the_new_step(gateway: GatewayRun):
    """Turn 2 of a conversation: the gateway reuses the cascade and sends every step again; the
    planner hop's ledger passes only the one the cascade does not hold yet."""
    before = len(read_captures(gateway.captures))
    calls = [tool_use("toolu_a", "Bash", {"command": "npm test"})]
    results = [tool_result("toolu_a", "Exit code 1\nFAIL src/cart.test.js", is_error=True)]
    turn1 = claude_code_turn("The build is red. Find out why.", results, calls)
    assert gateway.post("/v1/messages", turn1, ANTHROPIC_HEADERS).status_code == 200
    turn2 = json.loads(json.dumps(turn1))
    turn2["messages"] += [
        {"role": "assistant", "content": [tool_use("toolu_b", "Bash", {"command": "ls /nope"})]},
        {"role": "user", "content": [tool_result("toolu_b", "Exit code 2\nls: cannot access '/nope'", True)]},
    ]
    assert gateway.post("/v1/messages", turn2, ANTHROPIC_HEADERS).status_code == 200
    first, second = gateway.sent(before + 2)[-2:]
    assert parse_request(first).cascade_id == parse_request(second).cascade_id
    assert commands(first) == [("npm test", 1, False)]
    assert commands(second) == [("ls /nope", 2, False)]
    sent = gateway.gateway_steps(parse_request(first).cascade_id, 2)
    assert [[s["runCommand"]["commandLine"] for s in turn] for turn in sent] == [["npm test"], ["npm test", "ls /nope"]]
    assert "(resumed)" in gateway.stderr


def test_chat_completions_codex_frames_and_a_stream(gateway: GatewayRun):
    """Codex CLI over Chat Completions (no User-Agent), `"stream": true`: an SSE reply; Codex's own frame
    `Exit code: 2` gives 2. Another conversation: another cascade."""
    before = len(read_captures(gateway.captures))
    body = {
        "model": "gpt-5-codex",
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are Codex."},
            {"role": "user", "content": "List /nope"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "shell", "arguments": json.dumps({"command": "ls /nope"})},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": "Exit code: 2\nWall time: 0.1 seconds\nOutput:\nls: cannot access '/nope'",
            },
        ],
    }
    reply = gateway.post("/v1/chat/completions", body, {"authorization": "Bearer sk-agent-key"})
    assert reply.status_code == 200 and reply.headers["content-type"] == "text/event-stream"
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: {")]
    assert events[0]["choices"][0]["delta"]["content"] == "ok" and reply.text.endswith("data: [DONE]\n\n")
    got = gateway.sent(before + 1)[-1]
    assert commands(got) == [("ls /nope", 2, False)], gateway.stderr
    earlier = {parse_request(m).cascade_id for m in gateway.sent(before + 1)[:-1]}
    assert parse_request(got).cascade_id not in earlier


def test_bad_requests_get_errors_in_their_dialect(gateway: GatewayRun):
    bad = gateway.client.post("/v1/messages", content=b"[1]", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["type"] == "error"
    assert gateway.client.post("/v1/responses", json={}).status_code == 404
    assert gateway.client.get("/health").json() == {"status": "ok"}


def test_no_key_in_the_planner_hops_records_or_state(gateway: GatewayRun):
    files = [*gateway.records.rglob("*"), *gateway.state.parent.glob("*")]
    assert any(p.suffix == ".json" for p in files), "the planner hop wrote records"
    leaked = [str(p) for p in files if p.is_file() and PLANTED in p.read_bytes()]
    assert not leaked, leaked
    assert PLANTED.decode() not in gateway.stderr, "the gateway's log (with the shim's and mitmdump's)"


def test_two_instances_behind_a_load_balancer_each_start_their_own_cascade(tmp_path: Path):
    """The pool is an instance's memory: turn 2 of a conversation that turn 1 sent to instance A,
    arriving at instance B, starts a cascade on B's language server with every step (the real
    gateway does the same; distinct cascade ids stand for the real language server's UUIDs)."""
    a = GatewayRun(tmp_path / "a", cascade_prefix="a-cascade-")
    b = GatewayRun(tmp_path / "b", cascade_prefix="b-cascade-")
    try:
        calls = [tool_use("toolu_a", "Bash", {"command": "npm test"})]
        results = [tool_result("toolu_a", "Exit code 1\nFAIL src/cart.test.js", is_error=True)]
        turn1 = claude_code_turn("The build is red.", results, calls)
        turn2 = json.loads(json.dumps(turn1))
        turn2["messages"] += [
            {"role": "assistant", "content": [tool_use("toolu_b", "Bash", {"command": "ls /nope"})]},
            {"role": "user", "content": [tool_result("toolu_b", "Exit code 2\nls: cannot access '/nope'", True)]},
        ]
        assert a.post("/v1/messages", turn1, ANTHROPIC_HEADERS).status_code == 200
        assert b.post("/v1/messages", turn2, ANTHROPIC_HEADERS).status_code == 200
        [on_a], [on_b] = a.sent(1), b.sent(1)
    finally:
        a.stop()
        b.stop()
    assert parse_request(on_a).cascade_id == "a-cascade-1" and parse_request(on_b).cascade_id == "b-cascade-1"
    assert commands(on_a) == [("npm test", 1, False)]
    assert commands(on_b) == [("npm test", 1, False), ("ls /nope", 2, False)]


def test_the_language_server_is_spawned_like_the_gateway_spawns_it(tmp_path: Path):
    """The gateway's flags and only its allowlisted environment (the stand-in language server, no shim,
    logs what it was started with)."""
    run = GatewayRun(tmp_path, ls_binary=FAKE_LS)
    try:
        [start] = [e for e in read_captures(run.rpc_log) if e.get("event") == "start"]
    finally:
        run.stop()
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in start["argv"])
    assert flags == {
        "api_server_url": standin_gateway.DEFAULT_API_URL,
        "server_port": str(start["port"]),
        "csrf_token": standin_gateway.CSRF_TOKEN,
        "register_user_url": "https://api.codeium.com/register_user/",
        "codeium_dir": str(tmp_path / "lsdata" / "default"),
        "database_dir": str(tmp_path / "lsdata" / "default" / "db"),
        "detect_proxy": "false",
    }
    assert start["env_keys"] == sorted(["HOME", "LANG", "PATH", procs.MARKER_VAR])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_the_language_server_ends_with_the_gateway(tmp_path: Path, sig: signal.Signals):
    run = GatewayRun(tmp_path)
    try:
        children = run.children()
        assert len(children) >= 3, "the shim, its mitmdump and the language server run below the gateway"
        run.proc.send_signal(sig)
        code = run.proc.wait(30)
        assert code == (0 if sig == signal.SIGTERM else -signal.SIGKILL)
        left = procs.wait_gone(children, 15)
        assert not left, [procs.cmdline(p) for p in left]
    finally:
        run.stop()
