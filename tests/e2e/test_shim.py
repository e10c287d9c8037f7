"""scripts/language-server-shim with a stand-in binary (scripts/fake_language_server.py).

client (grpcio, or Node's http2 framing like the gateway) -> the shim's mitmdump on the port
the "gateway" asked for -> the stand-in language server on the shim's free port. The shim
runs as the gateway starts it: the language server's flags, an allowlisted environment
(PATH without the checkout's Python, HOME with the settings file), stdin a pipe.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import procs
import pytest
from realgateway import (
    FIXTURES,
    PLANTED_KEY,
    ROOT,
    SHIM,
    captured_messages,
    commands,
    message_of,
    outside_field_9,
    read_captures,
)

from .grpckit import SEND, call, free_port, node_post

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (FIXTURES / "grpc-turn1.bin").exists(), reason=f"no gateway fixtures at {FIXTURES}"),
]

FAKE_LS = ROOT / "scripts" / "fake_language_server.py"
STARTED = "planner hop on"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixture_or_empty(name: str) -> bytes:
    """For parameters, read at collection time (the module is skipped when the fixtures are absent)."""
    path = FIXTURES / name
    return path.read_bytes() if path.exists() else b""


class ShimRun:
    """One shim process started like the gateway starts its language server."""

    def __init__(self, tmp: Path, settings: str | None = None, *, port: int | None = None) -> None:
        self.home = tmp / "home"
        self.settings = self.home / ".config" / "native-bridge" / "shim.toml"
        self.settings.parent.mkdir(parents=True, exist_ok=True)
        self.state = tmp / "state" / "bridge.sqlite"
        self.records = tmp / "records"
        if settings is None:
            settings = (
                f'ls_binary = "{FAKE_LS}"\nstate = "{self.state}"\nrecords = "{self.records}"\n'
                f'options = ["confdir={tmp / "mitmproxy-conf"}"]\n'
            )
        if settings != "<none>":
            self.settings.write_text(settings)
        self.captures = self.home / ".fake_ls" / "captures.jsonl"
        self.port = port or free_port()
        self.stderr_path = tmp / "shim.stderr"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> ShimRun:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",  # as the gateway's: python3 may be older than 3.12
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            procs.MARKER_VAR: os.environ[procs.MARKER_VAR],  # the suite's leftover check
        }
        flags = [
            "--api_server_url=https://server.codeium.com",
            f"--server_port={self.port}",
            "--csrf_token=shim-test-csrf",
            "--register_user_url=https://api.codeium.com/register_user/",
            f"--codeium_dir={self.home / '.codeium'}",
            f"--database_dir={self.home / 'db'}",
            "--detect_proxy=false",
        ]
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [str(SHIM), *flags], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env
            )
        if wait:
            deadline = time.monotonic() + 30
            while STARTED not in self.stderr:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"the shim did not come up (exit {self.proc.returncode}):\n{self.stderr}")
                time.sleep(0.05)
        return self

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def children(self) -> set[int]:
        assert self.proc is not None
        return procs.descendants(self.proc.pid)

    def wait(self, timeout: float = 20) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        left = self.children()
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pid in procs.wait_gone(left, 5):
            os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> ShimRun:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sent(self, count: int, timeout: float = 10) -> list[bytes]:
        """What the language server received, once ``count`` sends have arrived."""
        deadline = time.monotonic() + timeout
        while len(got := read_captures(self.captures)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(got) == count, f"the language server got {len(got)} sends, expected {count}\n{self.stderr}"
        return captured_messages(got)


def test_a_grpc_client_reaches_the_language_server_corrected(tmp_path: Path):
    turn1 = message_of(fixture("grpc-turn1.bin"))
    turn2 = message_of(fixture("grpc-turn2-resumed.bin"))
    with ShimRun(tmp_path) as shim:
        call(shim.port, turn1)
        call(shim.port, turn2)
        first, second = shim.sent(2)
    # Turn 1: `npm run dev` never got a result, so its DONE step is gone; npm test's output once;
    # the gateway's exit_code 0 is not evidence; with no client named the result's own frame
    # ("Exit code 1", Claude Code's words and the generic family) states the code (issue 17).
    assert commands(first) == [("npm test", 1, False)]
    assert outside_field_9(first) == outside_field_9(turn1)
    # Turn 2 on the same cascade: only the step not delivered before (the ledger is in `state`).
    assert [c[0] for c in commands(second)] == ["cat test_x.py"]
    assert outside_field_9(second) == outside_field_9(turn2)
    assert shim.state.exists()
    records = list(shim.records.glob("*.json"))
    assert records, "the planner hop records its corrections"
    for path in [*records, *shim.state.parent.iterdir()]:
        assert PLANTED_KEY not in path.read_bytes(), f"the gateway's key is in {path}"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (the gateway's runtime)")
def test_connect_framed_like_the_gateway_reaches_the_language_server_corrected(tmp_path: Path):
    body = fixture("connect-turn1.bin")
    with ShimRun(tmp_path) as shim:
        node_post(shim.port, SEND, "application/connect+proto", body, {"connect-content-encoding": "gzip"})
        [got] = shim.sent(1)
        [entry] = read_captures(shim.captures)
    assert entry["content_type"] == "application/connect+proto"
    assert commands(got) == [("npm test", 1, False)]
    assert outside_field_9(got) == outside_field_9(message_of(body, "application/connect+proto"))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("<none>", "no settings file at"),
        ("ls_binary = [", "cannot read it as TOML"),
        ('records = "/tmp/x"\n', "ls_binary (the real language server) is required"),
        ('ls_binary = "/nonexistent/language_server"\n', "is not an executable file"),
        (f'ls_binary = "{FAKE_LS}"\nlsbinary = "typo"\n', "unknown setting(s) lsbinary"),
        (f'ls_binary = "{FAKE_LS}"\noptions = ["--no-equals"]\n', "options entries are name=value"),
        (f'ls_binary = "{FAKE_LS}"\nstartup_timeout = "soon"\n', "startup_timeout must be a positive number"),
    ],
    ids=["missing", "not-toml", "no-ls-binary", "ls-binary-missing", "unknown-key", "bad-option", "bad-timeout"],
)
def test_bad_settings_are_a_clear_error_not_a_pass_through(tmp_path: Path, settings: str, message: str):
    shim = ShimRun(tmp_path, settings).start(wait=False)
    code = shim.wait()
    assert code != 0
    assert "language-server-shim: error:" in shim.stderr
    assert message in shim.stderr
    assert str(shim.settings) in shim.stderr
    assert not read_captures(shim.captures), "nothing was started"


def test_sigterm_to_the_shim_ends_everything(tmp_path: Path):
    with ShimRun(tmp_path) as shim:
        children = shim.children()
        assert len(children) >= 2, "the language server and mitmdump run below the shim"
        assert shim.proc is not None
        shim.proc.send_signal(signal.SIGTERM)
        shim.wait()
        assert not procs.wait_gone(children, 5)
        assert not _listening(shim.port)


def test_sigkill_to_the_shim_leaves_no_child_behind(tmp_path: Path):
    with ShimRun(tmp_path) as shim:
        children = shim.children()
        assert len(children) >= 2
        assert shim.proc is not None
        shim.proc.kill()
        shim.wait()
        left = procs.wait_gone(children, 8)
        assert not left, [procs.cmdline(p) for p in left]


def test_the_real_binary_exiting_ends_the_shim(tmp_path: Path):
    with ShimRun(tmp_path) as shim:
        children = shim.children()
        [ls_pid] = [p for p in children if "fake_language_server" in procs.cmdline(p)]
        os.kill(ls_pid, signal.SIGKILL)
        code = shim.wait()
        assert code == 128 + signal.SIGKILL, "the exit code is the first child's"
        assert not procs.wait_gone(children, 8)
        assert "language server exited" in shim.stderr


def test_stdin_eof_from_the_gateway_ends_the_shim(tmp_path: Path):
    """The gateway's pipe to the language server closes: the real binary ends, so the shim ends."""
    with ShimRun(tmp_path) as shim:
        children = shim.children()
        assert shim.proc is not None and shim.proc.stdin is not None
        shim.proc.stdin.close()
        assert shim.wait() == 0
        assert not procs.wait_gone(children, 8)


def test_mitmdump_failing_to_listen_ends_the_shim(tmp_path: Path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        shim = ShimRun(tmp_path, port=busy.getsockname()[1]).start(wait=False)
        try:
            code = shim.wait(30)
        finally:
            shim.stop()
    assert code != 0
    assert "mitmdump exited" in shim.stderr


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed (the gateway's runtime)")
@pytest.mark.parametrize(
    ("content_type", "headers", "body"),
    [
        ("application/grpc", {}, fixture_or_empty("grpc-turn1.bin")),
        ("application/connect+proto", {}, fixture_or_empty("connect-turn1.bin")),
        ("application/proto", {"content-encoding": "gzip"}, None),
    ],
    ids=["grpc", "connect-streaming", "connect-unary-gzip"],
)
def test_the_stand_in_answers_each_transport_and_captures_the_body_as_received(content_type, headers, body):
    """scripts/support/fake_language_server.py in process: the reply is framed for the transport, and
    the capture is the raw body (envelope included)."""
    import gzip
    import json

    from support.fake_language_server import FakeLanguageServer

    if body is None:  # Connect unary: the bare message, compressed per content-encoding
        body = gzip.compress(message_of(fixture("grpc-turn1.bin")), mtime=0)
    with FakeLanguageServer() as ls:
        reply = json.loads(node_post(ls.port, SEND, content_type, body, headers))
        start_cascade = SEND.replace("SendUserCascadeMessage", "StartCascade")
        start = json.loads(node_post(ls.port, start_cascade, content_type, b""))
        [entry] = ls.captured()
    assert str(reply["status"]) == "200"
    assert entry["content_type"] == content_type
    assert entry["body_b64"] == base64.b64encode(body).decode()
    cascade = bytes.fromhex(start["body"])
    if content_type == "application/grpc":
        assert reply["trailers"].get("grpc-status") == "0"
        assert cascade[5:] == b"\n\x0efake-cascade-1"
    elif content_type == "application/connect+proto":
        assert bytes.fromhex(reply["body"]) == b"\x00\x00\x00\x00\x00" + b"\x02\x00\x00\x00\x02{}"
        assert cascade[5:21] == b"\n\x0efake-cascade-1"
    else:
        assert reply["body"] == ""
        assert cascade == b"\n\x0efake-cascade-1"
