"""End to end across hosts (issue 38): the hops on different machines share what they know through a
real Redis server, and nothing else.

Each host is a network namespace (support.hosts) with a directory of its own; they have nothing in
common but the switch between them:

    chat  (10.231.0.x)  the agent (a small client process) -> the chat hop: mitmdump, bridge_mode=observe,
                        bridge_state=redis://REDIS/0 (the password in its environment), listening on 127.0.0.1
    lb                  nginx: round robin to gw1 and gw2 (``hash $http_x_conversation``: a conversation the
                        agent names stays on one instance; none named: round robin); ``x-gateway: gw3``
                        (or ``real``) reaches that instance alone
    gw1, gw2            the stand-in gateway (scripts/standin_gateway.py, dwgx/WindsurfAPI on the wire), its
                        language server LS_BINARY_PATH = scripts/language-server-shim (shim.toml: the stand-in
                        language server, state = the Redis URL, the password in a file of that host's),
                        the shim's mitmdump the planner hop
    gw3                 the stand-in gateway attached (--ls-attach) to a planner hop run without the shim
                        (mitmdump --mode reverse:...@42100 --set bridge_planner=...) in front of a stand-in
                        language server: the planner hop is restarted on an empty disk while the language
                        server runs on
    redis               redis-server with a password, bound to its host's address
    real                the REAL gateway (dwgx/WindsurfAPI 3.9.27) with the shim, where a copy is present
                        (/work/gateway/WindsurfAPI or $BRIDGE_GATEWAY_DIR; skipped otherwise)

The module skips, saying why, without root, network namespaces, redis-server or nginx; in CI (CI=true,
as root) it fails instead.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import procs
import pytest
from native_bridge.cascade import parse_request
from native_bridge.cascade.ledger import DIGEST_SIZE
from realgateway import FAKE_LS, FIXTURES, ROOT, SHIM, captured_messages, commands, read_captures
from support import hosts as hosts_support
from support import real_gateway, standin_gateway
from support import redis_server as redis_support
from support.histories.anthropic import text, tool_result, tool_use
from support.hosts import Host, Hosts
from support.mitmdump import Mitmdump
from support.redis_server import RedisServer

pytestmark = pytest.mark.e2e

HOSTS = ["redis", "chat", "lb", "gw1", "gw2", "gw3", "real"]
SHIMMED = ("gw1", "gw2")  # behind the load balancer's round robin, each with its own shim
GATEWAY_PORT = 3003
LB_PORT = 8080
LS_PORT = 42100  # the port the gateway asks its language server for: the planner hop's
GW3_LS_PORT = 42101  # gw3's stand-in language server, behind its planner hop on LS_PORT
GW3_SPEC = f"reverse:http://127.0.0.1:{GW3_LS_PORT}@{LS_PORT}"
PASSWORD_ENV = "BRIDGE_STATE_PASSWORD"
CLAUDE_CODE_UA = "claude-cli/2.1.332 (external, cli)"
AGENT_KEY = "sk-agent-key-hosts-0123456789"  # the agent's own credential, a secret to look for too
PLANTED = standin_gateway.PLANTED_API_KEY  # the stand-in gateway's key in Metadata
EPHEMERAL_PORTS = real_gateway.EPHEMERAL_PORTS  # "45000 60999": above the language server's ports
TIMEOUT_MS = 250  # bridge_state_timeout_ms's default
AWAY, BACK = "is away", "is back"


# ---------------------------------------------------------------- availability


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str, required: bool) -> NoReturn:
    if required:
        pytest.fail(f"{reason} (CI=true: this must run in CI)")
    pytest.skip(reason)


def nginx_path() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.access(p, os.X_OK)), None)


def require_hosts() -> None:
    if (reason := hosts_support.available()) is not None:
        unavailable(reason, in_ci() and os.geteuid() == 0)
    if (reason := redis_support.available()) is not None:
        unavailable(reason, in_ci())
    if nginx_path() is None:
        unavailable("nginx is not installed (Debian: apt-get install nginx-light)", in_ci())


# ---------------------------------------------------------------- the agent's histories


@dataclass(frozen=True)
class Call:
    """One Bash call and its result as Claude Code sends it (``output`` None: it never got a result)."""

    id: str
    command: str
    output: str | None
    is_error: bool = False


class Conversation:
    """An Anthropic Messages conversation, one round of calls a turn. ``sticky``: the agent names it
    (``x-conversation``) and the load balancer keeps it on one instance; ``pin``: to that instance."""

    def __init__(self, label: str, *, sticky: bool = False, pin: str | None = None) -> None:
        self.token = uuid.uuid4().hex[:12]
        self.first = f"[{label} {self.token}] The build is red. Find out why."
        self.rounds: list[list[Call]] = []
        self.headers = {
            "content-type": "application/json",
            "x-api-key": AGENT_KEY,
            "anthropic-version": "2023-06-01",
            "user-agent": CLAUDE_CODE_UA,
        }
        if sticky:
            self.headers["x-conversation"] = self.token
        if pin:
            self.headers["x-gateway"] = pin
        self._ids = 0

    def _call(self, command: str, output: str | None, is_error: bool) -> Call:
        self._ids += 1
        return Call(f"toolu_{self.token}_{self._ids}", command, output, is_error)

    def bare_failure(self, command: str) -> Call:
        """A failure stated only by ``is_error``: bare output, no ``Exit code`` line."""
        return self._call(
            command, f"{command}: 3 problems found (run {self.token})\n  src/a.js: unexpected token", True
        )

    def exit_2(self, command: str) -> Call:
        """Claude Code's own frame: ``Exit code 2`` first, then the output."""
        return self._call(command, f"Exit code 2\n{command}: No such file or directory (run {self.token})", True)

    def never_ran(self, command: str) -> Call:
        return self._call(command, None, False)

    def turn(self, *calls: Call) -> bytes:
        """The request body once this round's calls are added (every earlier round again)."""
        self.rounds.append(list(calls))
        messages: list[dict[str, Any]] = [{"role": "user", "content": self.first}]
        for round_ in self.rounds:
            uses = [tool_use(c.id, "Bash", {"command": c.command, "description": "run it"}) for c in round_]
            messages.append({"role": "assistant", "content": [text("Let me look."), *uses]})
            results = [tool_result(c.id, c.output, c.is_error) for c in round_ if c.output is not None]
            messages.append({"role": "user", "content": results or "Go on."})
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": "You are Claude Code.",
            "messages": messages,
        }
        return json.dumps(body).encode()


def expected(*calls: Call, code: dict[str, int | None] | None = None) -> list[tuple[str, int | None, bool]]:
    """What the language server must get for these calls: a step for each that has a result, the true
    exit code (``code`` overrides by command), one copy of the output (no stdout)."""
    out = []
    for c in calls:
        if c.output is None:
            continue  # it never ran: no DONE step
        if code is not None and c.command in code:
            out.append((c.command, code[c.command], False))
        elif c.output.startswith("Exit code 2"):
            out.append((c.command, 2, False))
        else:
            out.append((c.command, 1, False))
    return out


# ---------------------------------------------------------------- processes on the hosts

AGENT = r"""
import base64, http.client, json, sys, time
for line in sys.stdin:
    req = json.loads(line)
    t0 = time.monotonic()
    try:
        conn = http.client.HTTPConnection(req["host"], req["port"], timeout=req["timeout"])
        body = base64.b64decode(req["body"]) if req["body"] else None
        conn.request(req["method"], req["path"], body=body, headers=req["headers"])
        r = conn.getresponse()
        out = {"status": r.status, "body": base64.b64encode(r.read()).decode()}
        conn.close()
    except Exception as e:
        out = {"status": 0, "body": "", "error": f"{type(e).__name__}: {e}"}
    out["elapsed"] = time.monotonic() - t0
    print(json.dumps(out), flush=True)
"""


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    elapsed: float
    error: str | None = None


class Agent:
    """The agent, on the chat host (the chat hop listens on that host's loopback only): one process,
    a request a line on its stdin, its reply and the time it took (measured there) a line on its stdout."""

    def __init__(self, host: Host, port: int) -> None:
        self.port = port
        self.proc = host.popen(
            [sys.executable, "-c", AGENT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), procs.MARKER_VAR: os.environ[procs.MARKER_VAR]},
        )
        self._lock = threading.Lock()

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None, timeout: float = 30
    ) -> Reply:
        req = {
            "host": "127.0.0.1",
            "port": self.port,
            "method": method,
            "path": path,
            "body": base64.b64encode(body).decode(),
            "headers": headers or {},
            "timeout": timeout,
        }
        with self._lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the agent process ended (exit {self.proc.poll()})")
        got = json.loads(line)
        return Reply(got["status"], base64.b64decode(got["body"]), got["elapsed"], got.get("error"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def nginx_conf(d: Path, lb: Host, pools: dict[str, list[str]]) -> str:
    """A minimal nginx.conf: in the foreground, one process, everything it writes in ``d``; round robin to
    the ``gateways`` pool unless the agent names its conversation (then by its hash); ``x-gateway: NAME``
    picks the pool NAME."""
    upstreams = []
    for name, servers in pools.items():
        lines = [f"upstream {name} {{"]
        if name == "gateways":
            lines.append("    hash $http_x_conversation;  # empty (none named): round robin")
        lines += [f"    server {s} max_fails=0;" for s in servers]
        lines += ["    keepalive 8;", "}"]
        upstreams.append("\n".join(lines))
    picks = "\n".join(f"        {name} {name};" for name in pools if name != "gateways")
    return f"""daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log notice;
events {{ worker_connections 256; }}
http {{
    log_format lb '$remote_addr "$request" $status conversation="$http_x_conversation" '
                  'pin="$http_x_gateway" upstream=$upstream_addr time=$request_time';
    access_log {d}/access.log lb;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    client_max_body_size 64m;
    client_body_buffer_size 1m;
{chr(10).join(upstreams)}
    map $http_x_gateway $pool {{
        default gateways;
{picks}
    }}
    server {{
        listen {lb.addr}:{LB_PORT};
        location / {{
            proxy_pass http://$pool;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 120s;
            proxy_next_upstream off;  # a request goes to one instance only
        }}
    }}
}}
"""


class Nginx:
    def __init__(self, host: Host, d: Path, pools: dict[str, list[str]]) -> None:
        self.host = host
        self.dir = d
        d.mkdir(parents=True, exist_ok=True)
        self.conf = d / "nginx.conf"
        self.conf.write_text(nginx_conf(d, host, pools))
        self.log = d / "nginx.out"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        path = nginx_path()
        assert path is not None
        with open(self.log, "wb") as out:
            self.proc = self.host.popen(
                [path, "-p", str(self.dir), "-c", str(self.conf), "-e", str(self.dir / "error.log")],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = 15) -> None:
        """It writes its pid file once its listener is bound."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while not (self.dir / "nginx.pid").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start (exit {self.proc.poll()}):\n{self.output()}")
            time.sleep(0.02)

    def output(self) -> str:
        parts = []
        for p in (self.log, self.dir / "error.log", self.dir / "access.log"):
            if p.exists():
                parts.append(f"--- {p.name} ---\n{p.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def host_env(home: Path, **more: str) -> dict[str, str]:
    """A host's process environment: nothing of this process's but PATH and the suite's marker."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        procs.MARKER_VAR: os.environ[procs.MARKER_VAR],
        **more,
    }


@dataclass
class Instance:
    """One gateway instance on its host: the gateway, its planner hop, its language server."""

    name: str
    host: Host
    dir: Path
    proc: subprocess.Popen[bytes] | None = None
    planner: Mitmdump | None = None  # gw3: the planner hop run without the shim (the current one)
    planners: list[Mitmdump] = field(default_factory=list)  # gw3: every one started, in order
    ls: subprocess.Popen[bytes] | None = None  # gw3: the stand-in language server

    @property
    def home(self) -> Path:
        return self.dir / "home"

    @property
    def captures(self) -> Path:
        return self.home / ".fake_ls" / "captures.jsonl"

    @property
    def gateway_log(self) -> Path:
        return self.dir / "gateway.log"

    @property
    def planner_log(self) -> Path:
        return self.dir / "planner-mitmdump.log"

    def sent(self) -> list[bytes]:
        """Every SendUserCascadeMessage its language server received, as received."""
        return captured_messages(read_captures(self.captures))

    def planner_output(self) -> str:
        if self.planners:
            return "\n".join(p.output for p in self.planners)
        return self.planner_log.read_text(errors="replace") if self.planner_log.exists() else ""

    def records(self) -> list[dict[str, Any]]:
        """The planner hop's records (every directory it had)."""
        found = []
        for p in sorted(self.dir.glob("records*/[!.]*.json")):
            with contextlib.suppress(ValueError):
                found.append(json.loads(p.read_text()))
        return found

    def wait_listening(self, timeout: float = 60) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while "listening on http://" not in self.output():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the {self.name} gateway did not come up (exit {self.proc.poll()}):\n{self.output()}"
                )
            time.sleep(0.05)

    def output(self) -> str:
        return self.gateway_log.read_text(errors="replace") if self.gateway_log.exists() else ""

    def stop(self) -> None:
        for proc in (self.proc, self.ls):
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in (self.proc, self.ls):
            if proc is not None:
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for p in self.planners:
            p.stop()


class Deployment:
    """Everything on its hosts; :meth:`close` ends it all (also when :meth:`start` failed half way)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.hosts = Hosts(HOSTS)
        self.redis: RedisServer | None = None
        self.chat: Mitmdump | None = None
        self.agent: Agent | None = None
        self.nginx: Nginx | None = None
        self.instances: dict[str, Instance] = {}
        self.extra_logs: list[Path] = []  # more files the secret scan reads (the real gateway's)

    # -- where --------------------------------------------------------------------------------

    def dir(self, host: str) -> Path:
        d = self.base / host
        d.mkdir(parents=True, exist_ok=True)
        return d

    @property
    def state(self) -> str:
        """bridge_state as a deployment passes it: the URL without the password."""
        assert self.redis is not None
        return f"{self.redis.url_without_password}/0"

    @property
    def password(self) -> str:
        assert self.redis is not None
        return self.redis.password

    # -- start --------------------------------------------------------------------------------

    def start(self) -> None:
        self.hosts.start()
        for host in self.hosts:
            # The ephemeral ports above the language server's: a gateway (and the shim) probes 42100 until
            # it listens, and a probe that draws 42100 as its own local port connects to itself and holds
            # it, so the planner hop cannot bind it (seen here; scripts/real_gateway.py does the same).
            set_range = f"echo '{EPHEMERAL_PORTS}' > /proc/sys/net/ipv4/ip_local_port_range"
            done = host.run(["sh", "-c", set_range], text=True)
            assert done.returncode == 0, done.stderr
        redis_host = self.hosts["redis"]
        self.redis = RedisServer(bind=redis_host.addr, prefix=redis_host.prefix).start()
        # What only spawns goes first, so that it comes up while the mitmdumps start (from this thread:
        # their lifetime follows the thread that forks them).
        for name in SHIMMED:
            self.instances[name] = self._start_shimmed(name)
        gw3 = self.instances["gw3"] = Instance("gw3", self.hosts["gw3"], self.dir("gw3"))
        self._write_fake_ls_config(gw3)
        with open(gw3.dir / "ls.log", "wb") as out:
            gw3.ls = gw3.host.popen(
                [sys.executable, str(FAKE_LS), f"--server_port={GW3_LS_PORT}"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=host_env(gw3.home),
            )
        pools = {
            "gateways": [f"{self.hosts[n].addr}:{GATEWAY_PORT}" for n in SHIMMED],
            "gw3": [f"{self.hosts['gw3'].addr}:{GATEWAY_PORT}"],
            "real": [f"{self.hosts['real'].addr}:{GATEWAY_PORT}"],
        }
        self.nginx = Nginx(self.hosts["lb"], self.dir("lb"), pools)
        self.nginx.start()
        chat_dir = self.dir("chat")
        self.chat = Mitmdump(
            f"http://{self.hosts['lb'].addr}:{LB_PORT}",
            chat_dir / "records",
            chat_dir / "mitmproxy-conf",
            [
                "--set", "bridge_mode=observe",
                "--set", f"bridge_state={self.state}",
                "-w", str(chat_dir / "flows.mitm"),
            ],
            env={PASSWORD_ENV: self.password, "HOME": str(chat_dir)},
            prefix=self.hosts["chat"].prefix,
        )  # fmt: skip
        self.chat.start()
        self.start_gw3_planner()
        gw3.proc = self._start_gateway(gw3, ["--ls-attach", str(LS_PORT)])
        self.nginx.wait_ready()
        for instance in self.instances.values():
            instance.wait_listening()
        assert self.chat.port is not None
        self.agent = Agent(self.hosts["chat"], self.chat.port)
        for pin in (None, "gw3"):  # the whole path answers (nginx has just bound its listener)
            headers = {"x-gateway": pin} if pin else {}
            reply = self.agent.request("GET", "/health", headers=headers)
            assert reply.status == 200, (reply, self.context())

    def _write_fake_ls_config(self, instance: Instance) -> None:
        """Its stand-in language server's cascade ids: ``<instance>-N`` (each process counts from 1)."""
        config = instance.home / ".fake_ls" / "config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"cascade_prefix": f"{instance.name}-"}))

    def _start_shimmed(self, name: str) -> Instance:
        instance = Instance(name, self.hosts[name], self.dir(name))
        self._write_fake_ls_config(instance)
        write_shim_settings(instance, self.state, self.password)
        instance.proc = self._start_gateway(instance, [])
        return instance

    def _start_gateway(self, instance: Instance, extra: list[str]) -> subprocess.Popen[bytes]:
        cmd = [
            sys.executable,
            str(ROOT / "scripts" / "standin_gateway.py"),
            "--host", instance.host.addr,
            "--port", str(GATEWAY_PORT),
            "--ls-port", str(LS_PORT),
            "--ls-data-dir", str(instance.dir / "lsdata"),
            "--ls-env", procs.MARKER_VAR,
            *extra,
        ]  # fmt: skip
        with open(instance.gateway_log, "ab") as err:
            return instance.host.popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=host_env(instance.home, LS_BINARY_PATH=str(SHIM)),
                cwd=instance.dir,
            )

    def start_gw3_planner(self) -> Mitmdump:
        """gw3's planner hop, on a disk of its own each time: a new records directory and confdir."""
        gw3 = self.instances["gw3"]
        n = len(gw3.planners) + 1
        planner = Mitmdump(
            f"http://127.0.0.1:{GW3_LS_PORT}@{LS_PORT}",
            gw3.dir / f"records-{n}",
            gw3.dir / f"mitmproxy-conf-{n}",
            [
                "--set", f"bridge_planner={GW3_SPEC}",
                "--set", "bridge_mode=observe",
                "--set", f"bridge_state={self.state}",
            ],
            env={PASSWORD_ENV: self.password, "HOME": str(gw3.dir / f"planner-home-{n}")},
            prefix=gw3.host.prefix,
        )  # fmt: skip
        gw3.planners.append(planner)
        planner.start()
        gw3.planner = planner
        return planner

    # -- the agent's side ---------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        return {name: len(read_captures(i.captures)) for name, i in self.instances.items()}

    def send(self, conversation: Conversation, body: bytes) -> tuple[Reply, str, bytes]:
        """One turn through the whole path: the reply, the instance whose language server got the
        one SendUserCascadeMessage it caused, and that message."""
        assert self.agent is not None
        before = self.counts()
        reply = self.agent.request("POST", "/v1/messages", body, conversation.headers)
        assert reply.status == 200, (reply, self.context())
        deadline = time.monotonic() + 10
        while True:
            now = self.counts()
            new = {n: now[n] - before[n] for n in now if now[n] != before[n]}
            if sum(new.values()) >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert list(new.values()) == [1], (f"one language server gets the turn, got {new}", self.context())
        [name] = new
        return reply, name, self.instances[name].sent()[-1]

    # -- what they logged ---------------------------------------------------------------------

    def store_users(self) -> dict[str, str]:
        """Each running process that uses the store, and its output so far."""
        assert self.chat is not None
        out = {"chat": self.chat.output}
        for name, instance in self.instances.items():
            out[name] = instance.planner.output if instance.planner is not None else instance.planner_output()
        return out

    def context(self) -> str:
        """Tails of every log, for a failure's message."""
        parts = []
        if self.chat is not None:
            parts.append(f"=== chat hop ===\n{self.chat.output[-4000:]}")
        for name, i in self.instances.items():
            parts.append(f"=== {name} gateway ===\n{i.output()[-3000:]}")
            parts.append(f"=== {name} planner hop ===\n{i.planner_output()[-4000:]}")
        if self.nginx is not None:
            parts.append(f"=== lb ===\n{self.nginx.output()}")
        if self.redis is not None and self.redis.dir is not None:
            parts.append(f"=== redis ===\n{self.redis.output(20)}")
        return "\n".join(parts)

    def close(self) -> None:
        steps = [
            lambda: self.agent and self.agent.stop(),
            *(instance.stop for instance in self.instances.values()),
            lambda: self.chat and self.chat.stop(),
            lambda: self.nginx and self.nginx.stop(),
            lambda: self.redis and self.redis.close(),
            self.hosts.close,  # whatever still runs on a host is ended with it
        ]
        for step in steps:
            try:
                step()
            except Exception as e:  # every step runs; the first problem is not hidden by the rest
                print(f"test_hosts: cleanup: {type(e).__name__}: {e}", file=sys.stderr)


def write_shim_settings(instance: Instance, state: str, password: str) -> None:
    """The instance's shim.toml: the stand-in language server, the store's URL (no password), its
    records and log in the instance's own directory; the password in a file of its own (0600)."""
    secret = instance.dir / "secrets" / "bridge-redis.pass"
    secret.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(password + "\n")
    settings = instance.home / ".config" / "native-bridge" / "shim.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        f"ls_binary = {json.dumps(str(FAKE_LS))}\n"
        f"state = {json.dumps(state)}\n"
        f"state_password_file = {json.dumps(str(secret))}\n"
        f"records = {json.dumps(str(instance.dir / 'records'))}\n"
        f"log = {json.dumps(str(instance.planner_log))}\n"
        f"options = [{json.dumps('confdir=' + str(instance.dir / 'mitmproxy-conf'))}]\n"
    )


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    require_hosts()
    d = Deployment(tmp_path_factory.mktemp("hosts"))
    try:
        try:
            d.start()
        except Exception as e:
            pytest.fail(f"the deployment did not come up: {type(e).__name__}: {e}\n{d.context()}")
        yield d
    finally:
        d.close()


def since(logs: dict[str, str], marks: dict[str, int]) -> dict[str, str]:
    return {name: log[marks.get(name, 0) :] for name, log in logs.items()}


def marks_of(logs: dict[str, str]) -> dict[str, int]:
    return {name: len(log) for name, log in logs.items()}


def planner_records(directory: Path, cascade_id: str, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    """A planner hop's records of this cascade, in order, once ``count`` are there (written off the
    request path)."""
    deadline = time.monotonic() + timeout
    while True:
        found = []
        for p in sorted(directory.glob("[!.]*.json")):
            with contextlib.suppress(ValueError, OSError):
                rec = json.loads(p.read_text())
                if (rec.get("planner") or {}).get("cascade_id") == cascade_id:
                    found.append(rec)
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) == count, (
                f"{len(found)} planner-hop records of {cascade_id} in {directory}, expected {count}"
            )
            return found
        time.sleep(0.05)


def parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def ledger_key(cascade_id: str) -> str:
    """The key its ledger has on the server (runtime/redis_store.py)."""
    return "bridge:ledger:" + hashlib.sha256(cascade_id.encode()).hexdigest()[: 2 * DIGEST_SIZE]


# ---------------------------------------------------------------- (a) (b) (c): across the load balancer


def test_a_failure_stated_only_by_is_error_reaches_the_language_server_as_1_on_either_instance(deployment):
    """Claude Code's is_error with bare output (no Exit code line): the gateway drops the flag and sends
    exit 0; only the chat hop saw the failure, on another host. Round robin: one request per instance."""
    got: dict[str, list[tuple[str, int | None, bool]]] = {}
    for i in range(2):
        conversation = Conversation(f"a{i}")
        call = conversation.bare_failure(f"npm run lint --workspace=w{i}")
        _, instance, message = deployment.send(conversation, conversation.turn(call))
        got[instance] = commands(message)
        assert got[instance] == expected(call), (instance, deployment.context())
    assert sorted(got) == ["gw1", "gw2"], f"round robin: each instance got one of the two ({got})"


def test_b_a_result_with_exit_code_2_reaches_the_language_server_as_2(deployment):
    for i in range(2):
        conversation = Conversation(f"b{i}")
        call = conversation.exit_2(f"cat test_b{i}.py")
        _, instance, message = deployment.send(conversation, conversation.turn(call))
        assert commands(message) == [(call.command, 2, False)], (instance, deployment.context())


def test_c_a_resumed_cascade_gets_only_its_new_steps(deployment):
    """The agent names its conversation: the load balancer keeps it on one instance, whose gateway
    resumes the cascade and sends every step again; its planner hop passes only the new ones."""
    conversation = Conversation("c", sticky=True)
    first = [conversation.bare_failure("npm test"), conversation.never_ran("npm run dev")]
    _, where1, turn1 = deployment.send(conversation, conversation.turn(*first))
    second = [conversation.exit_2("ls /nope"), conversation.bare_failure("npm run build")]
    _, where2, turn2 = deployment.send(conversation, conversation.turn(*second))
    assert where1 == where2, "the load balancer kept the conversation on one instance"
    cascade = parse_request(turn1).cascade_id
    assert parse_request(turn2).cascade_id == cascade and cascade.startswith(f"{where1}-"), "resumed"
    assert commands(turn1) == expected(*first), deployment.context()
    assert commands(turn2) == expected(*second), deployment.context()
    # What the gateway itself sent the second time: every step again, run_command exit 0 (its lie).
    sent = planner_records(deployment.instances[where1].dir / "records", cascade, 2)
    before = [s["runCommand"] for s in sent[-1]["planner"]["steps_before"]]
    assert [(s["commandLine"], s.get("exitCode")) for s in before] == [
        ("npm test", 0), ("npm run dev", None), ("ls /nope", 0), ("npm run build", 0)
    ]  # fmt: skip


# ---------------------------------------------------------------- (d): the planner hop restarted, the ledger kept


def test_d_after_its_planner_hop_restarts_on_an_empty_disk_a_resumed_cascade_still_gets_only_its_new_steps(
    deployment,
):
    gw3 = deployment.instances["gw3"]
    conversation = Conversation("d", pin="gw3")
    first = [conversation.bare_failure("make build")]
    _, where, turn1 = deployment.send(conversation, conversation.turn(*first))
    assert where == "gw3" and commands(turn1) == expected(*first), deployment.context()
    cascade = parse_request(turn1).cascade_id
    # The ledger is on the server once the turn is delivered (written off the request path).
    server = deployment.redis.client(unix=True)
    deadline = time.monotonic() + 5
    while not server.exists(ledger_key(cascade)):
        assert time.monotonic() < deadline, f"no ledger of {cascade} on the server"
        time.sleep(0.02)
    # The planner hop dies (SIGKILL: no flush on the way out), the language server runs on.
    old = gw3.planner
    assert old is not None and old._proc is not None
    ls_pid = gw3.ls.pid if gw3.ls is not None else None
    old._proc.kill()
    old.stop()
    assert gw3.ls is not None and gw3.ls.poll() is None and gw3.ls.pid == ls_pid
    new = deployment.start_gw3_planner()
    assert new is not old and not list((gw3.dir / f"records-{len(gw3.planners)}").glob("*.json"))
    second = [conversation.bare_failure("make test"), conversation.exit_2("make lint")]
    _, where, turn2 = deployment.send(conversation, conversation.turn(*second))
    assert where == "gw3" and parse_request(turn2).cascade_id == cascade
    # Only the new steps; the bare failure's 1 from the chat hop's observation, on the server too.
    assert commands(turn2) == expected(*second), deployment.context()
    [record] = planner_records(gw3.dir / f"records-{len(gw3.planners)}", cascade, 1)
    assert len(record["planner"]["steps_before"]) == 3, "the gateway sent every step again"
    assert [c["action"] for c in record["planner"]["changes"]].count("already_delivered") == 1


# ---------------------------------------------------------------- (e): the server away, then slow


def _round(deployment: Deployment, label: str) -> list[tuple[Reply, str, Call, bytes]]:
    """One request through each instance (round robin twice, then gw3): a new conversation each, one
    failure stated only by is_error."""
    out = []
    for pin in (None, None, "gw3"):
        conversation = Conversation(label, pin=pin)
        call = conversation.bare_failure(f"make check-{conversation.token}")
        reply, instance, message = deployment.send(conversation, conversation.turn(call))
        out.append((reply, instance, call, message))
    return out


def _no_false_claim(results: list[tuple[Reply, str, Call, bytes]], context: str) -> None:
    """A failure stated only by is_error: 1 (the chat hop's observation arrived) or absent (it did not);
    never the gateway's 0, never another number."""
    for reply, instance, call, message in results:
        assert reply.status == 200
        assert commands(message) in ([(call.command, 1, False)], [(call.command, None, False)]), (instance, context)


def _until_back(deployment: Deployment, marks: dict[str, int], timeout: float = 20) -> list[float]:
    """Rounds of requests until every process that uses the store said it is back; their times."""
    deadline = time.monotonic() + timeout
    elapsed: list[float] = []
    while True:
        logs = since(deployment.store_users(), marks)
        if all(BACK in log for log in logs.values()):
            return elapsed
        assert time.monotonic() < deadline, (f"not back: {[n for n, t in logs.items() if BACK not in t]}", logs)
        results = _round(deployment, "warm")
        _no_false_claim(results, deployment.context())
        elapsed += [r.elapsed for r, *_ in results]
        time.sleep(0.2)


def test_e_the_server_stopped_then_restarted_requests_go_on_and_nothing_false_is_claimed(deployment):
    redis = deployment.redis
    assert redis is not None
    marks = marks_of(deployment.store_users())

    # A conversation begun while the server answers ...
    conversation = Conversation("e", sticky=True)
    first = [conversation.bare_failure("npm ci")]
    _, where, turn1 = deployment.send(conversation, conversation.turn(*first))
    assert commands(turn1) == expected(*first)

    # ... goes on while it is stopped: every process that uses it notices (a request through each).
    redis.stop()
    second = [
        conversation.bare_failure("npm run lint"),  # only is_error says it failed: nobody can know now
        conversation.exit_2("cat missing.txt"),  # the text states 2
        conversation.never_ran("npm run dev"),  # no result: no DONE step
    ]
    _, where2, turn2 = deployment.send(conversation, conversation.turn(*second))
    assert where2 == where
    assert commands(turn2) == expected(*second, code={"npm run lint": None}), deployment.context()
    during = _round(deployment, "away")
    for _, instance, call, message in during:
        assert commands(message) == [(call.command, None, False)], (instance, deployment.context())

    # Back (empty: nothing persisted): each process says so once it has tried again.
    redis.start()
    _until_back(deployment, marks)
    third = [conversation.bare_failure("npm test")]
    _, where3, turn3 = deployment.send(conversation, conversation.turn(*third))
    assert where3 == where
    # Only the new step (the ledger this process delivered, the server having lost it), and the chat
    # hop's evidence again.
    assert commands(turn3) == expected(*third), deployment.context()
    logs = since(deployment.store_users(), marks)
    for name, log in logs.items():
        assert (log.count(AWAY), log.count(BACK)) == (1, 1), (name, log[-3000:])


def _slack(normal: float) -> float:
    """The most a request may take with the server slow: normal, the store's timeout, and some noise."""
    return normal + TIMEOUT_MS / 1000 + 0.5


def test_e_the_server_slowed_requests_complete_delayed_by_about_the_timeout(deployment):
    """SIGSTOP for ~2 s: connections are accepted, nothing answers. A request through each instance
    meanwhile completes, the planner hop waiting no more than bridge_state_timeout_ms; one line each
    that the store is away and one that it is back."""
    redis = deployment.redis
    assert redis is not None
    normal = max(r.elapsed for r, *_ in _round(deployment, "normal"))
    marks = marks_of(deployment.store_users())
    redis.pause()
    paused_at = time.monotonic()
    try:
        slowed = _round(deployment, "slow")
        time.sleep(max(0.0, 2.0 - (time.monotonic() - paused_at)))
    finally:
        redis.resume()
    for reply, instance, call, message in slowed:
        assert reply.status == 200
        assert commands(message) == [(call.command, None, False)], (instance, deployment.context())
        assert reply.elapsed <= _slack(normal), (instance, reply.elapsed, normal)
    _until_back(deployment, marks, timeout=30)
    logs = since(deployment.store_users(), marks)
    for name, log in logs.items():
        assert (log.count(AWAY), log.count(BACK)) == (1, 1), (name, log[-3000:])


def test_e_after_a_stall_no_planner_call_waits_for_a_reading_the_stall_orphaned(deployment):
    """One request through gw1 or gw2 while the server is stopped (SIGSTOP, 2.5 s) long enough for the
    chat hop's write and its retry to time out (1 s each); right after it resumes, a request to gw3
    (another host, which saw nothing of the stall) must take about as long as normal."""
    redis = deployment.redis
    assert redis is not None
    normal = max(r.elapsed for r, *_ in _round(deployment, "normal"))
    redis.pause()
    paused_at = time.monotonic()
    try:
        conversation = Conversation("stall")
        call = conversation.bare_failure("make stall")
        reply, instance, message = deployment.send(conversation, conversation.turn(call))
        assert instance in SHIMMED and commands(message) == [(call.command, None, False)]
        time.sleep(max(0.0, 2.5 - (time.monotonic() - paused_at)))
    finally:
        redis.resume()
    conversation = Conversation("after-stall", pin="gw3")
    call = conversation.bare_failure("make after-stall")
    reply, instance, message = deployment.send(conversation, conversation.turn(call))
    assert instance == "gw3" and commands(message) in ([(call.command, 1, False)], [(call.command, None, False)])
    in_flight = redis.client(unix=True).zrange("bridge:readings", 0, -1)
    assert reply.elapsed <= _slack(normal), (
        f"{reply.elapsed:.2f} s (normal {normal:.2f} s); readings in flight on the server: {in_flight}"
    )


# ---------------------------------------------------------------- the real gateway on its own host


def real_turn(name: str, token: str) -> bytes:
    """A fixture turn (shared/fixtures/gateway-3.9.27) made this run's own: its first message tagged, and
    npm test's failure stated only by is_error (the fixture's "Exit code 1" line removed: bare output)."""
    doc = json.loads((FIXTURES / name).read_text())
    doc["messages"][0]["content"] += f" ({token})"
    npm_test = doc["messages"][2]["content"][0]
    assert npm_test["tool_use_id"] == "toolu_01A" and npm_test["content"].startswith("Exit code 1\n")
    npm_test["content"] = f"FAIL src/cart.test.js\n  expected 90, received 100\n(run {token})"
    return json.dumps(doc).encode()


def test_real_gateway_a_failure_stated_only_by_is_error_reaches_its_language_server_as_1(deployment):
    """The chat hop on one host, the REAL gateway (dwgx/WindsurfAPI 3.9.27) and its shim on another,
    Redis on a third: the fixture's Claude Code conversation, npm test's failure stated only by is_error.
    Turn 2 resumes the cascade: only the new step."""
    gateway = real_gateway.gateway_dir(None)
    if gateway is None:
        pytest.skip("no copy of dwgx/WindsurfAPI (v3.9.27) at $BRIDGE_GATEWAY_DIR or /work/gateway/WindsurfAPI")
    if shutil.which("node") is None or shutil.which("unshare") is None:
        pytest.skip("node (the gateway's runtime) or unshare (util-linux) is not installed")
    assert deployment.agent is not None
    headers = {**real_gateway.SCENARIOS["anthropic"].headers, "content-type": "application/json", "x-gateway": "real"}
    token = uuid.uuid4().hex[:12]
    real = RealGateway(deployment, gateway)
    try:
        real.start()
        for n, name in enumerate(("chat-turn1.json", "chat-turn2.json"), 1):
            reply = deployment.agent.request("POST", "/v1/messages", real_turn(name, token), headers, timeout=90)
            assert reply.status == 200, (reply, real.output())
            deadline = time.monotonic() + 10
            while len(sent := real.instance.sent()) < n and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(sent) == n, real.output()
    finally:
        real.stop()
    first, second = sent
    # npm test failed: 1, from the chat hop on another host through Redis (the shim names no client, the
    # text has no frame: without the observation the code would be absent); npm run dev never ran; one
    # copy of the output. The gateway's own key reaches its language server (it needs it).
    assert commands(first) == [("npm test", 1, False)], real.output()
    assert real_gateway.CODEIUM_API_KEY.encode() in first
    # Turn 2: the gateway resumed the cascade and sent every step again; the language server gets the new one.
    assert parse_request(second).cascade_id == parse_request(first).cascade_id, real.output()
    assert commands(second) == [("cat test_x.py", 2, False)], real.output()


class RealGateway:
    """node src/index.js on the ``real`` host (private /home and /opt, as scripts/real_gateway.py runs
    it), LS_BINARY_PATH = the shim, its settings naming the stand-in language server and the store."""

    def __init__(self, deployment: Deployment, checkout: Path) -> None:
        self.deployment = deployment
        self.checkout = checkout
        self.instance = Instance("real", deployment.hosts["real"], deployment.dir("real"))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        d, inst = self.instance.dir, self.instance
        for name in ("home", "opt", "tmp", "data", "lsdata"):
            (d / name).mkdir(parents=True, exist_ok=True)
        self.deployment._write_fake_ls_config(inst)
        write_shim_settings(inst, self.deployment.state, self.deployment.password)
        self.deployment.extra_logs += [inst.gateway_log, inst.planner_log]
        env = host_env(
            inst.home,
            TEMP=str(d / "tmp"),
            TMPDIR=str(d / "tmp"),
            PORT=str(GATEWAY_PORT),
            HOST=inst.host.addr,
            API_KEY=real_gateway.API_KEY,
            CODEIUM_API_KEY=real_gateway.CODEIUM_API_KEY,
            DATA_DIR=str(d / "data"),
            LS_DATA_DIR=str(d / "lsdata"),
            LS_BINARY_PATH=str(SHIM),
            WINDSURFAPI_SKIP_DOTENV="1",
            WINDSURFAPI_NO_OPEN="1",
            WINDSURFAPI_NATIVE_TOOL_BRIDGE="1",
            CASCADE_REUSE_ALLOW_SHARED_API_KEY="1",
            CASCADE_POLL_INTERVAL_MS="50",
        )
        # Its own mount namespace: /home and /opt from this host's directory (the gateway writes there);
        # the ephemeral ports above the language server's (scripts/real_gateway.py says why).
        # (Its ephemeral ports were set for every host when they were made.)
        script = 'mount --bind "$1" /home && mount --bind "$2" /opt && exec node src/index.js'
        unshare = ["unshare", "--mount", "--propagation", "private", "--"]
        with open(inst.gateway_log, "ab") as log:
            self.proc = inst.host.popen(
                [*unshare, "sh", "-c", script, "sh", str(d / "home"), str(d / "opt")],
                cwd=self.checkout,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        inst.proc = self.proc
        assert self.deployment.agent is not None
        deadline = time.monotonic() + 60
        while True:
            reply = self.deployment.agent.request("GET", "/health", headers={"x-gateway": "real"}, timeout=5)
            if reply.status == 200:
                return
            assert self.proc.poll() is None and time.monotonic() < deadline, (reply, self.output())
            time.sleep(0.2)

    def output(self) -> str:
        return f"{self.instance.output()[-5000:]}\n--- planner hop ---\n{self.instance.planner_output()[-5000:]}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        left = self.instance.host.pids()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- (f): nothing secret anywhere


def test_f_nothing_secret_in_logs_records_flows_command_lines_or_the_store(deployment):
    d = deployment
    password = d.password.encode()
    # Command lines of every process on the machine (the hosts' too), now that everything runs.
    for pid in procs.pids():
        with contextlib.suppress(OSError):
            assert password not in Path(f"/proc/{pid}/cmdline").read_bytes(), procs.cmdline(pid)
    # Its environment is how a mitmdump gets it (and the record worker it starts inherits it): no other
    # process's (not the gateways', the shims', the language servers', nginx's).
    holders = []
    for pid in procs.pids():
        with contextlib.suppress(OSError):
            if password in Path(f"/proc/{pid}/environ").read_bytes():
                holders.append(pid)
    assert holders, "the mitmdumps got the password"
    strangers = [procs.cmdline(p) for p in holders if not any("mitmdump" in procs.cmdline(q) for q in (p, parent(p)))]
    assert not strangers, strangers
    # Every file the hosts wrote but the password files themselves: logs, records, flows, confdirs.
    assert d.redis is not None and d.chat is not None
    files = [p for p in d.base.rglob("*") if p.is_file() and p.parent.name != "secrets"]
    files += [p for p in (*d.extra_logs, d.redis.log_file) if p.is_file()]
    assert any(p.suffix == ".json" and "records" in str(p) for p in files), "records were written"
    assert (d.base / "chat" / "flows.mitm").stat().st_size > 0, "the chat hop wrote its flow file"
    leaked = [str(p) for p in files if password in p.read_bytes()]
    assert not leaked, leaked
    outputs = [d.chat.output, *(p.output for i in d.instances.values() for p in i.planners)]
    assert not any(d.password in o for o in outputs)
    assert all(f"state on {d.state}" in o for o in outputs), "the store is named, without its password"
    # The gateways' keys for their language servers: in no planner-hop record or log.
    keys_of_gateways = [PLANTED.encode(), real_gateway.CODEIUM_API_KEY.encode()]
    planner_files = [p for p in files if p.parent.name.startswith("records") or p.name == "planner-mitmdump.log"]
    assert planner_files and not [str(p) for p in planner_files if any(k in p.read_bytes() for k in keys_of_gateways)]
    assert not any(k.decode() in o for k in keys_of_gateways for o in outputs)
    # The server holds only our keys, and nothing a secret or a command could hide in.
    server = d.redis.client(unix=True)
    secrets = [AGENT_KEY.encode(), real_gateway.API_KEY.encode(), *keys_of_gateways, password]
    words = [b"npm ", b"make ", b"cat ", b"run ", b"No such file", b"problems found", b"Exit code", b"FAIL "]
    keys = list(server.scan_iter(count=1000))
    assert keys, "the hops wrote to the server"
    assert all(k.startswith(b"bridge:") for k in keys), [k for k in keys if not k.startswith(b"bridge:")]
    for key in keys:
        kind = server.type(key)
        if kind == b"string":
            values = [server.get(key) or b""]
        elif kind == b"zset":
            values = [m for m, _ in server.zrange(key, 0, -1, withscores=True)]
        elif kind == b"stream":
            values = [b"".join(k + v for k, v in fields.items()) for _, fields in server.xrange(key)]
        else:
            pytest.fail(f"{key!r}: a {kind!r} (the store writes strings, a sorted set and a stream)")
        for value in [key, *values]:
            assert not any(s in value for s in secrets + words), (key, value[:200])
