"""The planner hop through a real mitmdump, with a real gRPC stack on both ends.

grpcio client (or Node's http2, framing like the gateway) -> mitmdump -s addons/bridge.py
(prior-knowledge HTTP/2 listener named by bridge_planner) -> grpcio server standing in
for the language server. The bodies are the real gateway's (shared/fixtures).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
import pytest
from native_bridge.cascade.framing import unframe
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.steps import EXIT_CODE, STDOUT, run_command, to_json, view
from native_bridge.cascade.wire import fields
from support.fake_language_server import FakeLanguageServer
from support.reference_planner import ReferencePlanner

from .conftest import Mitmdump
from .grpckit import SEND, LanguageServer, call, fixture, free_ports, node_post, wait_for

pytestmark = pytest.mark.e2e
# The fixtures' agent is Claude Code (shared/fixtures README): with that client named, its own
# "Exit code N" line counts; unnamed, only what a program cannot forge does.
CLAUDE = ("--set", "bridge_planner_client=claude-code")
# What gateway 3.9.27 (connect-es) sends with its gzip envelopes: no connect-content-encoding.
CONNECT_HEADERS = {"connect-protocol-version": "1", "connect-accept-encoding": "gzip"}
BOMB = gzip.compress(b"\0" * (64 * 2**20))  # 64 MiB of zeros in about 64 KB


def payload(name: str) -> bytes:
    """The message inside a captured body (its gRPC or Connect envelope removed)."""
    body = fixture(name)
    data = body[5 : 5 + int.from_bytes(body[1:5], "big")]
    return gzip.decompress(data) if body[0] & 1 else data


def outside_field_9(message: bytes) -> list[bytes]:
    return [message[f.start : f.end] for f in fields(message) if f.number != 9]


def commands(message: bytes) -> list[tuple[str | None, int | None, bool]]:
    """(command line, exit code, stdout present) per run_command step of a request."""
    out = []
    for step in parse_request(message).steps:
        v = view(step)
        if v.body_field == 28 and v.body is not None:
            rc = run_command(v.body)
            has_stdout = any(f.number == STDOUT for f in fields(v.body))
            code = rc.exit_code if any(f.number == EXIT_CODE for f in fields(v.body)) else None
            out.append((rc.command_line, code, has_stdout))
    return out


class Planner:
    """A language server and one mitmdump in front of it (the planner listener), which also
    fronts the gateway's chat endpoint (the chat hop, observing) as a user may run both hops."""

    def __init__(
        self,
        tmp: Path,
        state: Path | str | None = None,
        extra: tuple[str, ...] = (),
        upstream_port: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.ls = LanguageServer().start()
        self.chat_upstream = ReferencePlanner().start()  # stands in for the gateway's chat endpoint
        self.port, self.chat_port = free_ports(2)
        spec = f"reverse:http://127.0.0.1:{upstream_port or self.ls.port}@{self.port}"
        self.records = tmp / "records"
        options = ["--mode", spec, "--set", f"bridge_planner={spec}", "--set", "bridge_mode=observe", *extra]
        if state is not None:
            options += ["--set", f"bridge_state={state}"]
        self.proxy = Mitmdump(f"{self.chat_upstream.url}@{self.chat_port}", self.records, tmp / "conf", options, env)

    def chat(self, name: str) -> None:
        """The agent's Anthropic request, through the chat hop (observe: it goes upstream untouched)."""
        body = fixture(name)
        # The fixtures' agent is Claude Code: it says so in its user agent (core/clients.py).
        headers = {"user-agent": "claude-cli/2.1.332 (external, cli)", "content-type": "application/json"}
        reply = httpx.post(f"http://127.0.0.1:{self.chat_port}/v1/messages", content=body, headers=headers, timeout=10)
        assert reply.status_code < 500
        [got] = [r for r in self.chat_upstream.received if r.raw == body] or [None]
        assert got is not None, "observe mode sends the chat body byte for byte"

    def __enter__(self) -> Planner:
        self.proxy.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.proxy.stop()
        self.ls.stop()
        self.chat_upstream.stop()

    def sent(self) -> list[bytes]:
        return [r.body for r in self.ls.sends()]

    def records_json(self, expect: int = 1) -> list[dict]:
        """The records so far, once at least ``expect`` are written (they are written off the request path)."""
        wait_for(lambda: len(list(self.records.glob("[!.]*.json"))) >= expect, 15)
        return [orjson.loads(p.read_bytes()) for p in sorted(self.records.glob("[!.]*.json"))]


@pytest.mark.parametrize(
    ("options", "chat_hop", "exit_code"),
    [((), True, 1), (CLAUDE, False, None), ((), False, 1)],
    ids=["both-hops", "planner-only-client-named", "planner-only"],
)
def test_turn_one_is_corrected_and_everything_else_is_byte_identical(tmp_path: Path, options, chat_hop, exit_code):
    """Claude Code states "Exit code 1" only with its is_error flag, which the gateway drops. Named
    as the client, the planner hop alone cannot state the code (absent, never the gateway's 0: the
    line without the flag is the program's); unnamed, it reads every known frame (issue 17), and
    the line is Claude Code's frame and the generic family: 1; with the chat hop's observation of
    the same call, 1 either way."""
    message = payload("grpc-turn1.bin")
    with Planner(tmp_path, extra=options) as p:
        if chat_hop:
            p.chat("chat-turn1.json")
        call(p.port, message)
        [got] = p.sent()
    assert outside_field_9(got) == outside_field_9(message)
    cmds = commands(got)
    assert ("npm run dev", None, False) not in cmds, "a call without a result is not a DONE step"
    # npm test failed with exit 1. The gateway's 0 is gone either way; the 1 is stated where a
    # frame may count. One copy of the output.
    [(line, code, has_stdout)] = cmds
    assert (line, code, has_stdout) == ("npm test", exit_code, False)
    before = parse_request(message).steps
    after = parse_request(got).steps
    # view_file and grep: byte for byte but for the type (the gateway's 14 and 105 name other kinds)
    assert before[1][:2] == b"\x08\x0e" and before[3][:2] == b"\x08\x69"
    assert b"\x08\x08" + before[1][2:] in after and b"\x08\x5b" + before[3][2:] in after
    assert len(after) == 3


def test_a_planner_call_begins_the_chat_reading_that_waits_for_its_reply(tmp_path: Path):
    """Headless mitmdump with both hops and no shared state: an observed chat request's reading
    waits for its reply (STATE.md, "When the chat hop reads"). A gateway answers its agent only
    after its own planner call, so that call begins the reading and waits for it: with Claude Code
    named, npm test's exit 1 is stated by the chat request's is_error alone (without it, absent:
    test_turn_one_is_corrected_and_everything_else_is_byte_identical)."""
    body = fixture("chat-turn1.json")
    headers = {"user-agent": "claude-cli/2.1.332 (external, cli)", "content-type": "application/json"}
    with Planner(tmp_path, extra=CLAUDE) as p, ThreadPoolExecutor(1) as pool:
        p.chat_upstream.hold = threading.Event()
        sending = pool.submit(
            httpx.post, f"http://127.0.0.1:{p.chat_port}/v1/messages", content=body, headers=headers, timeout=30
        )
        try:
            wait_for(lambda: any(r.raw == body for r in p.chat_upstream.received), 15)  # gone upstream, as it came
            time.sleep(0.3)  # no reply yet: the reading has not begun by itself (its verdict line follows it)
            assert not [ln for ln in p.proxy.lines if "bridge: flow " in ln], p.proxy.output
            call(p.port, message := payload("grpc-turn1.bin"))
            [got] = p.sent()
            assert [ln for ln in p.proxy.lines if "bridge: flow " in ln and ": observed " in ln], p.proxy.output
        finally:
            p.chat_upstream.hold.set()
        assert sending.result().status_code < 500
    assert outside_field_9(got) == outside_field_9(message)
    assert commands(got) == [("npm test", 1, False)]


def test_the_evidence_of_a_large_chat_request_still_being_read_counts(tmp_path: Path):
    """Observe mode sends a chat body of 512 KiB or more upstream at once and reads it in the
    bridge's worker. The gateway may call the language server before that reading ends (here:
    as soon as the chat body arrived upstream, while the worker is still starting and reading):
    the planner hop waits for it, so npm test's exit 1, which only the chat request states,
    reaches the step."""
    doc = orjson.loads(fixture("chat-turn1.json"))
    doc["system"] = "You are Claude Code.\n" + "project context line\n" * 30_000
    body = orjson.dumps(doc)
    assert len(body) >= 600_000
    message = payload("grpc-turn1.bin")
    headers = {"user-agent": "claude-cli/2.1.332 (external, cli)", "content-type": "application/json"}
    with Planner(tmp_path) as p, ThreadPoolExecutor(1) as pool:
        sending = pool.submit(
            httpx.post, f"http://127.0.0.1:{p.chat_port}/v1/messages", content=body, headers=headers, timeout=30
        )
        wait_for(lambda: any(r.raw == body for r in p.chat_upstream.received), 15)  # gone upstream, as it came
        call(p.port, message)
        assert sending.result().status_code < 500
        [got] = p.sent()
    assert commands(got) == [("npm test", 1, False)]


def test_a_reading_in_another_proxy_sharing_the_state_file_is_waited_for(tmp_path: Path):
    """Two mitmdumps share a state file, as the shim's planner hop and the chat hop in front of
    the gateway do. The chat hop sends a large body upstream at once and reads it in its worker;
    the gateway's planner call, through the other mitmdump, comes before that reading ends and
    waits for it, so npm test's exit 1 reaches the step (with Claude Code named as the planner
    hop's client, only the chat request states it)."""
    state = tmp_path / "state" / "bridge.sqlite"
    doc = orjson.loads(fixture("chat-turn1.json"))
    doc["system"] = "You are Claude Code.\n" + "project context line\n" * 30_000
    body = orjson.dumps(doc)
    headers = {"user-agent": "claude-cli/2.1.332 (external, cli)", "content-type": "application/json"}
    with Planner(tmp_path / "planner", state, extra=CLAUDE) as p, ThreadPoolExecutor(1) as pool:
        options = ["--set", "bridge_mode=observe", "--set", f"bridge_state={state}"]
        chat = Mitmdump(p.chat_upstream.url, tmp_path / "chat" / "records", tmp_path / "chat" / "conf", options)
        chat.start()
        try:
            url = f"http://127.0.0.1:{chat.port}/v1/messages"
            sending = pool.submit(httpx.post, url, content=body, headers=headers, timeout=30)
            wait_for(lambda: any(r.raw == body for r in p.chat_upstream.received), 15)  # gone, as it came
            call(p.port, payload("grpc-turn1.bin"))
            assert sending.result().status_code < 500
        finally:
            chat.stop()
        [got] = p.sent()
    assert commands(got) == [("npm test", 1, False)]


def test_resumed_cascade_gets_only_the_new_step(tmp_path: Path):
    with Planner(tmp_path) as p:
        p.chat("chat-turn1.json")
        call(p.port, payload("grpc-turn1.bin"))
        p.chat("chat-turn2.json")
        call(p.port, payload("grpc-turn2-resumed.bin"))
        _first, second = p.sent()
    assert commands(second) == [("cat test_x.py", 2, False)]
    assert len(parse_request(second).steps) == 1
    assert outside_field_9(second) == outside_field_9(payload("grpc-turn2-resumed.bin"))


def test_a_refused_send_is_not_in_the_ledger(tmp_path: Path):
    import grpc

    with Planner(tmp_path) as p:
        p.ls.fail_next = 1
        with pytest.raises(grpc.RpcError):
            call(p.port, payload("grpc-turn1.bin"))
        call(p.port, payload("grpc-turn2-resumed.bin"))
        _, resumed = p.sent()
    # Nothing of turn 1 reached the planner: the resumed turn carries every step again.
    assert [c[0] for c in commands(resumed)] == ["npm test", "cat test_x.py"]


def test_ledger_survives_a_restart_with_a_state_file(tmp_path: Path):
    state = tmp_path / "state" / "bridge.sqlite"
    with Planner(tmp_path / "a", state) as p:
        p.chat("chat-turn1.json")
        call(p.port, payload("grpc-turn1.bin"))
    with Planner(tmp_path / "b", state) as p:
        p.chat("chat-turn2.json")
        call(p.port, payload("grpc-turn2-resumed.bin"))
        [resumed] = p.sent()
    assert commands(resumed) == [("cat test_x.py", 2, False)]
    assert state.stat().st_mode & 0o077 == 0, "the state file is the owner's only"


def test_without_a_state_file_a_restart_sends_everything_again(tmp_path: Path):
    with Planner(tmp_path / "a") as p:
        call(p.port, payload("grpc-turn1.bin"))
    with Planner(tmp_path / "b") as p:
        call(p.port, payload("grpc-turn2-resumed.bin"))
        [resumed] = p.sent()
    assert [c[0] for c in commands(resumed)] == ["npm test", "cat test_x.py"]


def test_grpc_gzip_request_is_corrected_and_stays_gzip(tmp_path: Path):
    message = payload("grpc-turn1.bin")
    with Planner(tmp_path) as p:
        call(p.port, message, gzip=True)
        [got] = p.sent()
    assert outside_field_9(got) == outside_field_9(message)
    assert [c[0] for c in commands(got)] == ["npm test"]


class RawPlanner(Planner):
    """The same, with the stand-in language server that keeps every body as it arrived
    (envelope and compression included): Connect and malformed bodies reach it too."""

    def __init__(self, tmp: Path, extra: tuple[str, ...] = ()) -> None:
        self.raw = FakeLanguageServer().start()
        super().__init__(tmp, extra=extra, upstream_port=self.raw.port)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.raw.stop()

    def bodies(self) -> list[bytes]:
        return [base64.b64decode(c["body_b64"]) for c in self.raw.calls() if c["path"] == SEND]


node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (the gateway's runtime)")


@node
def test_connect_gzip_envelope_as_the_gateway_sends_it(tmp_path: Path):
    body = fixture("connect-turn1.bin")
    with RawPlanner(tmp_path) as p:
        p.chat("chat-turn1.json")
        reply = json.loads(node_post(p.port, SEND, "application/connect+proto", body, CONNECT_HEADERS))
        [got] = p.bodies()
    assert str(reply["status"]) == "200"
    assert got[0] == 1, "still one gzip-compressed Connect envelope"
    message = gzip.decompress(got[5:])
    assert outside_field_9(message) == outside_field_9(payload("connect-turn1.bin"))
    assert commands(message) == [("npm test", 1, False)]


@node
@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        pytest.param("application/grpc", b"\x00\x00\x00\x10\x00abc", id="truncated"),
        pytest.param("application/grpc", b"\x00\x7f\xff\xff\xff" + b"x" * 10, id="length-lies"),
        pytest.param("application/grpc", b"\x00\x00\x00\x00\x03\x4a\x01\xff", id="field-9-not-a-step"),
        pytest.param("application/grpc", b"\x00\x00\x00\x00\x00" * 2, id="two-envelopes"),
        pytest.param("application/connect+proto", b"\x01\x00\x00\x00\x05abcde", id="not-gzip"),
        pytest.param(
            "application/connect+proto",
            b"\x01" + len(BOMB).to_bytes(4, "big") + BOMB,
            id="gzip-bomb",
        ),
    ],
)
def test_bad_input_passes_byte_identical_and_is_recorded(tmp_path: Path, content_type: str, body: bytes):
    with RawPlanner(tmp_path) as p:
        node_post(p.port, SEND, content_type, body, CONNECT_HEADERS if "connect" in content_type else {})
        [got] = p.bodies()
        recs = [r for r in p.records_json() if r.get("dialect") == "cascade"]
        assert p.proxy.alive(), "the proxy keeps serving"
    assert got == body, "the request passes byte for byte"
    [rec] = recs
    assert rec["status"] == "skipped" and rec["reason"]
    assert f"passed through untouched: {rec['reason']}" in "\n".join(p.proxy.lines)


def test_other_methods_and_listeners_pass_untouched(tmp_path: Path):
    message = payload("grpc-turn1.bin")
    other = SEND.replace("SendUserCascadeMessage", "GetCascadeTrajectorySteps")
    with Planner(tmp_path) as p:
        call(p.port, message, method=other)
        [r] = [r for r in p.ls.received if r.method == other]
    assert r.body == message


def test_records_hold_the_corrections_and_no_key(tmp_path: Path):
    with Planner(tmp_path) as p:
        call(p.port, payload("grpc-turn1.bin"))
        [rec] = [r for r in p.records_json() if r.get("dialect") == "cascade"]
    part = rec["planner"]
    actions = sorted(c["action"] for c in part["changes"])
    assert "dropped" in actions and "stdout_deduplicated" in actions
    assert all(c["reason"] for c in part["changes"])
    assert len(part["steps_before"]) == 4 and len(part["steps_after"]) == 3
    raw = b"".join(f.read_bytes() for f in p.records.rglob("*") if f.is_file())
    assert b"wsk-FIXTURE-KEY" not in raw
    assert b"wsk-FIXTURE-KEY" not in bytes.fromhex(part["body_hex"])
    framed = unframe(bytes.fromhex(part["body_hex"]), "application/grpc", {}, 1 << 20)
    # the gateway's body, with its type 28 (officially COMMAND_STATUS); sent on as RUN_COMMAND
    assert next(to_json(s)["type"] for s in parse_request(framed.payload).steps) == "CORTEX_STEP_TYPE_COMMAND_STATUS"
    assert part["steps_after"][0]["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    assert "type" in actions


# ---- bridge_state on a Redis server: the hops in two processes that share no file ----


def on_server(server) -> tuple[str, dict[str, str]]:
    """bridge_state for ``server`` as a deployment passes it: the URL on the command line, the
    password in the environment."""
    return server.url_without_password + "/0", {"BRIDGE_STATE_PASSWORD": server.password}


def test_is_error_alone_reaches_the_planner_through_the_server(tmp_path: Path, redis_server):
    """Claude Code states npm test's failure only by is_error (with Claude Code named, its "Exit code 1"
    line alone is the program's): the chat hop (one mitmdump) observes it, the planner hop (another,
    sharing nothing but the server) states exit code 1."""
    state, env = on_server(redis_server)
    with Planner(tmp_path / "planner", state, extra=CLAUDE, env=env) as p:
        options = ["--set", "bridge_mode=observe", "--set", f"bridge_state={state}"]
        chat = Mitmdump(p.chat_upstream.url, tmp_path / "chat" / "records", tmp_path / "chat" / "conf", options, env)
        chat.start()
        try:
            headers = {"user-agent": "claude-cli/2.1.332 (external, cli)", "content-type": "application/json"}
            reply = httpx.post(f"{chat.url}/v1/messages", content=fixture("chat-turn1.json"), headers=headers)
            assert reply.status_code < 500
            call(p.port, payload("grpc-turn1.bin"))
        finally:
            chat.stop()
        [got] = p.sent()
        output = p.proxy.output + chat.output
    assert commands(got) == [("npm test", 1, False)]
    assert redis_server.password not in output


def test_a_reading_in_another_proxy_on_the_server_is_waited_for(tmp_path: Path, redis_server):
    """As with a shared state file: the chat hop's large body goes upstream at once and is read in its
    worker; the planner call comes before the reading ends, waits for it (woken by the server)."""
    state, env = on_server(redis_server)
    doc = orjson.loads(fixture("chat-turn1.json"))
    doc["system"] = "You are Claude Code.\n" + "project context line\n" * 30_000
    body = orjson.dumps(doc)
    headers = {"user-agent": "claude-cli/2.1.332 (external, cli)", "content-type": "application/json"}
    with Planner(tmp_path / "planner", state, extra=CLAUDE, env=env) as p, ThreadPoolExecutor(1) as pool:
        options = ["--set", "bridge_mode=observe", "--set", f"bridge_state={state}"]
        chat = Mitmdump(p.chat_upstream.url, tmp_path / "chat" / "records", tmp_path / "chat" / "conf", options, env)
        chat.start()
        try:
            url = f"http://127.0.0.1:{chat.port}/v1/messages"
            sending = pool.submit(httpx.post, url, content=body, headers=headers, timeout=30)
            wait_for(lambda: any(r.raw == body for r in p.chat_upstream.received), 15)
            call(p.port, payload("grpc-turn1.bin"))
            assert sending.result().status_code < 500
        finally:
            chat.stop()
        [got] = p.sent()
    assert commands(got) == [("npm test", 1, False)]


def test_ledger_on_the_server_survives_a_restart_on_an_empty_disk(tmp_path: Path, redis_server):
    state, env = on_server(redis_server)
    with Planner(tmp_path / "a", state, env=env) as p:
        call(p.port, payload("grpc-turn1.bin"))
    with Planner(tmp_path / "b", state, env=env) as p:  # another directory, nothing kept on disk
        call(p.port, payload("grpc-turn2-resumed.bin"))
        [resumed] = p.sent()
    assert [c[0] for c in commands(resumed)] == ["cat test_x.py"]
    assert not list(tmp_path.rglob("*redis*")), "a URL is never taken for a file name"


def test_a_password_in_the_url_works_and_leaves_the_option(tmp_path: Path, redis_server):
    """The URL with its password (as a user may type it): it works, and no log line holds the password
    (the option's value: tests/test_state.py)."""
    with Planner(tmp_path, redis_server.url + "/0", extra=("--set", "termlog_verbosity=debug")) as p:
        call(p.port, payload("grpc-turn1.bin"))
        output = p.proxy.output
    assert f"state on {redis_server.url_without_password}/0" in output
    assert redis_server.password not in output


def test_a_server_that_is_away_at_start_up_stops_mitmdump_with_the_reason(tmp_path: Path, redis_server):
    state, env = on_server(redis_server)
    redis_server.stop()
    proxy = Mitmdump("http://127.0.0.1:9", tmp_path / "r", tmp_path / "c", ["--set", f"bridge_state={state}"], env)
    with contextlib.suppress(RuntimeError):  # it may exit before or after it says it listens
        proxy.start(timeout=15)
    wait_for(lambda: not proxy.alive(), 10)
    assert proxy.stop() == 1
    assert f"bridge_state: cannot use {state}" in proxy.output
    assert redis_server.password not in proxy.output


def test_a_server_that_goes_away_leaves_the_corrections_of_the_steps_own_text(tmp_path: Path, redis_server):
    """Truth rule 9: the store away is missing evidence, not a reason to forward the gateway's lies.
    Unnamed client: "Exit code 1" in the step's own text is read (1), the gateway's 0 never goes."""
    state, env = on_server(redis_server)
    with Planner(tmp_path, state, env=env, extra=("--set", "bridge_state_timeout_ms=200")) as p:
        redis_server.stop()
        call(p.port, payload("grpc-turn1.bin"))
        call(p.port, payload("grpc-turn1.bin"))
        redis_server.start()  # empty: what was written before is gone too
        time.sleep(0.6)  # the first retry's backoff
        call(p.port, payload("grpc-turn2-resumed.bin"))
        first, again, resumed = p.sent()
        output = p.proxy.output
    assert commands(first) == [("npm test", 1, False)]
    assert len(parse_request(again).steps) == 0 or again == first or commands(again) == commands(first)
    assert commands(resumed) == [("cat test_x.py", 2, False)], "what this process delivered, the server lost"
    assert output.count("is away") == 1 and output.count("is back") == 1, "one line per outage, not per call"
