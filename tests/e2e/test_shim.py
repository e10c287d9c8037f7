"""scripts/language-server-shim with a stand-in binary (scripts/fake_language_server.py).

client (grpcio, or Node's http2 framing like the gateway) -> the shim's mitmdump on the port
the "gateway" asked for -> the stand-in language server on the shim's free port. The shim
runs as the gateway starts it: the language server's flags, an allowlisted environment
(PATH without the checkout's Python, HOME with the settings file), stdin a pipe.
"""

from __future__ import annotations

import base64
import json
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
PASSWORD = "shim-test-Pw-9f3a"  # a store password in settings: never on a command line or in the shim's output
PASSWORD_ENV = "BRIDGE_STATE_PASSWORD"


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
        (f'ls_binary = "{FAKE_LS}"\nstate = "redis://u:{PASSWORD}@h:port/0"\n', "the port must be a number"),
        (f'ls_binary = "{FAKE_LS}"\nstate = "postgres://u:{PASSWORD}@h/db"\n', "the scheme must be redis://"),
        (f'ls_binary = "{FAKE_LS}"\nstate = "redis://h"\nstate_ca = "ca.pem"\n', 'for state = "rediss://..."'),
        ('ls_binary = "/nonexistent/language_server"\n', "is not an executable file"),
        (f'ls_binary = "{FAKE_LS}"\nlsbinary = "typo"\n', "unknown setting(s) lsbinary"),
        (f'ls_binary = "{FAKE_LS}"\noptions = ["--no-equals"]\n', "options entries are name=value"),
        (f'ls_binary = "{FAKE_LS}"\nstartup_timeout = "soon"\n', "startup_timeout must be a positive number"),
    ],
    ids=[
        "missing",
        "not-toml",
        "no-ls-binary",
        "redis-bad-port",
        "store-not-redis",
        "ca-not-rediss",
        "ls-binary-missing",
        "unknown-key",
        "bad-option",
        "bad-timeout",
    ],
)
def test_bad_settings_are_a_clear_error_not_a_pass_through(tmp_path: Path, settings: str, message: str):
    shim = ShimRun(tmp_path, settings).start(wait=False)
    code = shim.wait()
    assert code != 0
    assert "language-server-shim: error:" in shim.stderr
    assert message in shim.stderr
    assert str(shim.settings) in shim.stderr
    assert PASSWORD not in shim.stderr
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
    assert "address already in use" in _error_line(shim), "the shim's own error line says why"


def _error_line(shim: ShimRun) -> str:
    """The shim's last line, its own error (mitmdump's output, when it goes to stderr, comes before)."""
    last = shim.stderr.rstrip().splitlines()[-1]
    assert last.startswith("language-server-shim: error: "), shim.stderr
    return last


def _store_settings(tmp: Path, state: str, *, log: Path | None = None, **more: str) -> str:
    lines = {
        "ls_binary": str(FAKE_LS),
        "state": state,
        "records": str(tmp / "records"),
        **more,
        **({"log": str(log)} if log else {}),
    }
    settings = "".join(f"{key} = {json.dumps(value)}\n" for key, value in lines.items())
    return settings + f"options = [{json.dumps(f'confdir={tmp / "mitmproxy-conf"}')}]\n"


def _password_file(tmp: Path, password: str) -> Path:
    path = tmp / "secrets" / "redis.pass"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(password + "\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("password_in", ["url", "file"])
@pytest.mark.parametrize("log", [False, True], ids=["output-on-stderr", "output-in-log"])
def test_an_unreachable_store_is_named_in_the_shims_own_error(tmp_path: Path, password_in: str, log: bool):
    """mitmdump cannot reach the store and ends: the gateway sees its binary fail, so the shim's
    last line says why (from mitmdump's output, wherever it went), never with the password."""
    closed = free_port()  # nothing listens there
    log_path = tmp_path / "log" / "mitmdump.log" if log else None
    if password_in == "url":
        settings = _store_settings(tmp_path, f"redis://bridge:{PASSWORD}@127.0.0.1:{closed}/0", log=log_path)
    else:
        secret = _password_file(tmp_path, PASSWORD)
        settings = _store_settings(
            tmp_path, f"redis://bridge@127.0.0.1:{closed}/0", log=log_path, state_password_file=str(secret)
        )
    shim = ShimRun(tmp_path, settings).start(wait=False)
    try:
        code = shim.wait(30)
    finally:
        shim.stop()
    assert code == 1, shim.stderr
    line = _error_line(shim)
    assert "mitmdump exited with 1" in line
    assert "bridge_state: cannot" in line  # the addon's words, the URL without the password
    assert f"redis://bridge@127.0.0.1:{closed}/0" in line
    assert "refused" in line.lower()
    assert PASSWORD not in shim.stderr
    if log_path is not None:
        assert f"(mitmdump's output: {log_path})" in line
        assert PASSWORD not in log_path.read_text()
    assert STARTED not in shim.stderr, "mitmdump listens for a moment before it exits: not taken as started"


def test_a_start_up_time_out_names_what_mitmdump_said(tmp_path: Path):
    """A mitmdump that never listens (a stand-in: prints an error, echoes the password it was given
    in its environment, sleeps): the time-out names its error line, the password masked."""
    fake = tmp_path / "bin" / "mitmdump"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'echo "[10:00:00.000] bridge_state: cannot reach redis://127.0.0.1:6379/0: timed out '
        '($BRIDGE_STATE_PASSWORD)"\n'
        "exec sleep 60\n"
    )
    fake.chmod(0o755)
    secret = _password_file(tmp_path, PASSWORD)
    settings = _store_settings(
        tmp_path, "redis://127.0.0.1:6379/0", state_password_file=str(secret), mitmdump=str(fake)
    )
    shim = ShimRun(tmp_path, settings + "startup_timeout = 2\n").start(wait=False)
    try:
        code = shim.wait(30)
    finally:
        shim.stop()
    assert code == 1
    line = _error_line(shim)
    assert f"mitmdump did not listen on 127.0.0.1:{shim.port} within 2s" in line
    assert "bridge_state: cannot reach redis://127.0.0.1:6379/0: timed out (***)" in line
    assert PASSWORD not in shim.stderr, "masked in mitmdump's output as the shim passes it on, too"


def _cmdlines(pids: set[int]) -> dict[int, bytes]:
    found = {}
    for pid in pids:
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
    return found


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def _mitmdump_pid(shim: ShimRun) -> int:
    """The shim's own mitmdump (not a worker it forked, which shares its command line)."""
    assert shim.proc is not None
    [pid] = [p for p in shim.children() if procs._ppid(p) == shim.proc.pid and "bridge_planner=" in procs.cmdline(p)]
    return pid


def _used(server, timeout: float = 10) -> list[bytes]:
    """The keys the bridge wrote on the server (the planner hop's ledger once a call went through)."""
    client = server.client()
    deadline = time.monotonic() + timeout
    while not (keys := client.keys("bridge:*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    return keys


def _run_on_the_store(shim: ShimRun, server, password: str, shown: str) -> None:
    """The shim up on ``server``: the password on no command line, only in mitmdump's environment,
    and the store used (so it got there)."""
    assert shim.proc is not None
    everyone = {shim.proc.pid, *shim.children()}
    cmdlines = _cmdlines(everyone)
    assert set(cmdlines) == everyone, "every process was read"
    for pid, cmdline in cmdlines.items():
        assert password.encode() not in cmdline, f"the password is on pid {pid}'s command line: {procs.cmdline(pid)}"
    assert server.pid is not None and password.encode() not in _cmdlines({server.pid})[server.pid]
    mitmdump = _mitmdump_pid(shim)
    [ls_pid] = [pid for pid, c in cmdlines.items() if b"fake_language_server" in c]
    assert f"bridge_state={shown}".encode() in cmdlines[mitmdump]
    assert _environ(mitmdump).get(PASSWORD_ENV) == password
    assert PASSWORD_ENV not in _environ(ls_pid), "the real binary never gets it"
    assert PASSWORD_ENV not in _environ(shim.proc.pid)
    call(shim.port, message_of(fixture("grpc-turn1.bin")))
    shim.sent(1)
    assert any(key.startswith(b"bridge:ledger:") for key in _used(server)), "the ledger is on the server"
    assert password not in shim.stderr


@pytest.mark.parametrize("password_in", ["url", "file"])
def test_the_store_password_is_on_no_command_line(tmp_path: Path, redis_server, password_in: str):
    """A real redis-server (its password in its config file, so not on its command line either)."""
    password = redis_server.password
    where = f"127.0.0.1:{redis_server.port}/0"
    if password_in == "url":
        settings = _store_settings(tmp_path, f"redis://:{password}@{where}")
    else:
        secret = _password_file(tmp_path, password)
        settings = _store_settings(tmp_path, f"redis://{where}", state_password_file=str(secret))
    with ShimRun(tmp_path, settings) as shim:
        _run_on_the_store(shim, redis_server, password, f"redis://{where}")


def test_an_acl_user_over_tls_with_a_private_ca(tmp_path: Path, need_redis_server):
    """rediss:// with state_ca (a throwaway CA), the ACL user's password from a file."""
    from support.redis_server import RedisServer

    with RedisServer(tls=True, acl_user="bridge") as server:
        assert server.acl_password is not None and server.ca_file is not None
        where = f"127.0.0.1:{server.port}/0"
        secret = _password_file(tmp_path, server.acl_password)
        settings = _store_settings(
            tmp_path, f"rediss://bridge@{where}", state_password_file=str(secret), state_ca=str(server.ca_file)
        )
        with ShimRun(tmp_path, settings) as shim:
            assert shim.proc is not None
            assert f"bridge_state_ca={server.ca_file}" in procs.cmdline(_mitmdump_pid(shim))
            _run_on_the_store(shim, server, server.acl_password, f"rediss://bridge@{where}")


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
