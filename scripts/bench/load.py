"""load: issue 38's load figure, the whole deployment on loopback under 16 agent conversations at once.

Two stand-in gateway instances (scripts/standin_gateway.py, each spawning scripts/language-server-shim:
its planner hop, a mitmdump, in front of the stand-in language server scripts/fake_language_server.py)
and two chat hops (mitmdump, ``bridge_mode=observe``) sharing one state; chat hop A forwards to
gateway B and chat hop B to gateway A, so every observation crosses processes through the store.
The same deployment twice, in the same run: the state on one Redis server (support.redis_server:
its password in the chat hops' environment and in the shims' ``state_password_file``), and in one
SQLite file all four mitmdumps share. Both stay up for the whole run; the rounds alternate
between them (redis first in odd rounds, sqlite first in even ones), the same workload each time.

A round: 16 new Claude Code conversations (Anthropic ``/v1/messages``, its User-Agent) at once,
conversation i through chat hop i % 2, each 6 turns, each turn one more Bash call whose command
line is the conversation's and the turn's own and whose result failed with ``is_error`` and bare
output (no ``Exit code`` line). The gateway sends exit code 0 for it (its known defect); the shim
names the client (``client = "claude-code"``), whose frames the bare output does not hold, so the
planner hop can state exit code 1 only from the chat hop's observation. Counted afterwards from
what each language server received: per turn its new command's run_command step, observed when it
carries exit code 1. Timed: each chat request, from the agent's send to the whole reply (the
gateway answers after its SendUserCascadeMessage returned, so the planner hop is on that path).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.histories.anthropic import text, tool_result, tool_use
from support.lifetime import ending_with

from .proxies import BRIDGE, ROOT, StateServer, reverse_proxy
from .timing import median, pct

VARIANTS = ("redis", "sqlite")
CONVERSATIONS = 16
TURNS = 6
ROUNDS, ROUNDS_QUICK = 10, 1  # each round: both stores, 96 chat requests each
CLAUDE_CODE_UA = "claude-cli/2.1.332 (external, cli)"
HEADERS = {
    "content-type": "application/json",
    "x-api-key": "sk-bench-agent",  # the stand-in gateway keys its conversations by it (a digest), never checks it
    "anthropic-version": "2023-06-01",
    "user-agent": CLAUDE_CODE_UA,
}
GATEWAY = ROOT / "scripts" / "standin_gateway.py"
SHIM = ROOT / "scripts" / "language-server-shim"
FAKE_LS = ROOT / "scripts" / "fake_language_server.py"
START_TIMEOUT = 90.0  # seconds: eight mitmdumps and four gateways come up at once on two cores


@dataclass(slots=True)
class LoadRow:
    """One state store's side of the run: what reached the planner hops, what failed, the chat requests' times."""

    variant: str  # redis | sqlite
    expected: int  # run_command steps the language servers must get with exit code 1 (one per turn)
    observed: int  # ... that carried it
    missing: int  # commands no language server got at all
    resent: int  # steps a language server got again (the ledger should cut them)
    missed_turns: dict[int, int]  # turn (1-based) -> steps sent without exit code 1
    failed: int  # chat requests not answered 200
    times: list[float] = field(default_factory=list)  # seconds per chat request answered
    errors: list[str] = field(default_factory=list)  # the first few failures, for the log

    @property
    def p50(self) -> float:
        return median(self.times)

    @property
    def p99(self) -> float:
        return pct(self.times, 0.99)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _secret_file(path: Path, value: str) -> Path:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return path


# ---- the deployment --------------------------------------------------------------------------


class Gateway:
    """One stand-in gateway instance, as a deployment runs it: its own HOME with the shim's settings
    (the state, the client, the stand-in language server) and the language server's cascade prefix."""

    def __init__(self, base: Path, name: str, state: str, password: str | None) -> None:
        self.name, self.dir = name, base / name
        self.home = self.dir / "home"
        self.log = self.dir / "gateway.log"
        self.planner_log = self.dir / "planner-mitmdump.log"
        self.captures = self.home / ".fake_ls" / "captures.jsonl"
        self.captures.parent.mkdir(parents=True, exist_ok=True)
        (self.captures.parent / "config.json").write_text(json.dumps({"cascade_prefix": f"{name}-"}))
        lines = [
            f"ls_binary = {json.dumps(str(FAKE_LS))}",
            f"state = {json.dumps(state)}",
            'client = "claude-code"',
            f"log = {json.dumps(str(self.planner_log))}",
            f"startup_timeout = {START_TIMEOUT:g}",
            f"options = {json.dumps([f'confdir={self.dir / "mitmproxy-conf"}', 'flow_detail=0'])}",
        ]
        if password is not None:  # a mounted secret, as in a deployment: never on a command line
            secret = _secret_file(self.dir / "secrets" / "bridge-redis.pass", password)
            lines.append(f"state_password_file = {json.dumps(str(secret))}")
        settings = self.home / ".config" / "native-bridge" / "shim.toml"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text("\n".join(lines) + "\n")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def launch(self) -> None:
        """Start it (from the thread whose lifetime its PR_SET_PDEATHSIG follows: the caller's)."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",  # the shim finds the checkout's Python itself
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "LS_BINARY_PATH": str(SHIM),
        }
        cmd = [
            sys.executable,
            str(GATEWAY),
            "--port", str(self.port),
            "--ls-port", "0",  # a free port each: the two instances never race for 42100
            "--ls-data-dir", str(self.dir / "lsdata"),
            "--ls-timeout", f"{START_TIMEOUT:g}",
        ]  # fmt: skip
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
                cwd=self.dir,
                preexec_fn=ending_with(os.getpid()),  # a killed bench leaves no gateway behind
            )

    def output(self, tail: int = 3000) -> str:
        parts = []
        for path in (self.log, self.planner_log):
            if path.exists():
                parts.append(f"--- {self.name} {path.name} ---\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    def wait_listening(self, deadline: float) -> None:
        assert self.proc is not None
        while "listening on http://" not in (self.log.read_text(errors="replace") if self.log.exists() else ""):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the {self.name} gateway did not come up (exit {self.proc.poll()}):\n{self.output()}"
                )
            time.sleep(0.05)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # it ends its shim, which ends its mitmdump and language server

    def wait(self, timeout: float = 30.0) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # its shim gets SIGTERM by PR_SET_PDEATHSIG
            self.proc.wait()

    def sent(self) -> list[bytes]:
        """Every SendUserCascadeMessage its language server received, the protobuf message of each."""
        if not self.captures.exists():
            return []
        out = []
        for line in self.captures.read_text().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            body = base64.b64decode(entry["body_b64"])
            if not entry["content_type"].startswith("application/proto"):
                data = body[5 : 5 + int.from_bytes(body[1:5], "big")]
                body = gzip.decompress(data) if body[0] & 1 else data
            out.append(body)
        return out


class Deployment:
    """Two gateway instances and two chat hops sharing one state (``state``: a path or a redis URL
    without its password; ``password``: the store's, for the chat hops' environment and the shims' file)."""

    def __init__(self, variant: str, base: Path, state: str, password: str | None) -> None:
        from native_bridge.runtime.store_url import PASSWORD_ENV

        self.variant = variant
        base.mkdir(parents=True, exist_ok=True)
        self.gateways = [Gateway(base, f"{variant}-gw{i + 1}", state, password) for i in range(2)]
        env = {PASSWORD_ENV: password} if password is not None else {}
        options = ("--set", "bridge_mode=observe", "--set", f"bridge_state={state}")
        # chat hop A -> gateway B, chat hop B -> gateway A: an observation is always another process's
        self.chat = [
            reverse_proxy(gw.url, BRIDGE, None, base / f"chat{i + 1}-conf", options, env=env)
            for i, gw in enumerate(reversed(self.gateways))
        ]
        self._launched: list[Any] = []

    def launch(self) -> None:
        for gw in self.gateways:
            gw.launch()
        for hop in self.chat:
            hop.launch()
            self._launched.append(hop)

    def ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        for hop in self.chat:
            hop.listening(max(1.0, deadline - time.monotonic()))
        for gw in self.gateways:
            gw.wait_listening(deadline)

    def url(self, conversation: int) -> str:
        return self.chat[conversation % 2].url

    def close(self) -> None:
        for hop in self._launched:
            with contextlib.suppress(Exception):
                hop.stop()
        for gw in self.gateways:
            gw.terminate()
        for gw in self.gateways:
            gw.wait()

    def output(self) -> str:
        return "\n".join(gw.output() for gw in self.gateways)


# ---- the agents ------------------------------------------------------------------------------


class Conversation:
    """A Claude Code conversation: one failed Bash call a turn, each with its own command line."""

    OUTPUT = "".join(f"  src/app/module_{i:02d}.js:{i + 3}:7  error  Unexpected token  no-undef\n" for i in range(12))

    def __init__(self, label: str) -> None:
        self.token = uuid.uuid4().hex[:10]
        self.first = f"[{label} {self.token}] The build is red. Find out why."

    def command(self, turn: int) -> str:
        return f"npx eslint --max-warnings 0 src/app --cache-location /tmp/lint-{self.token}-{turn}"

    def body(self, turns: int) -> bytes:
        """The request once ``turns`` turns are done: every earlier turn again, then the newest."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": self.first}]
        for t in range(turns):
            call = f"toolu_{self.token}_{t}"
            command = self.command(t)
            messages.append(
                {
                    "role": "assistant",
                    "content": [text("Let me run the linter."), tool_use(call, "Bash", {"command": command})],
                }
            )
            output = f"{command}\n{self.OUTPUT}\n12 problems (12 errors, 0 warnings)"  # bare: no Exit code line
            messages.append({"role": "user", "content": [tool_result(call, output, is_error=True)]})
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": "You are Claude Code.",
            "messages": messages,
        }
        return json.dumps(body).encode()


def _converse(url: str, conv: Conversation, turns: int, start: threading.Barrier) -> tuple[list[float], list[str]]:
    """The conversation's turns one after another on one keep-alive connection: (times, failures)."""
    import httpx

    times: list[float] = []
    errors: list[str] = []
    bodies = [conv.body(t + 1) for t in range(turns)]  # built before the clock starts
    with httpx.Client(base_url=url, timeout=60) as client:
        start.wait()
        for body in bodies:
            t0 = time.perf_counter()
            try:
                reply = client.post("/v1/messages", content=body, headers=HEADERS)
            except httpx.HTTPError as e:
                errors.append(f"{type(e).__name__}: {e}")
                continue
            took = time.perf_counter() - t0
            if reply.status_code == 200:
                times.append(took)
            else:
                errors.append(f"HTTP {reply.status_code}: {reply.text[:200]}")
    return times, errors


def _round(
    deployment: Deployment, label: str, conversations: int, turns: int
) -> tuple[list[Conversation], list[float], list[str]]:
    """``conversations`` new conversations at once through the deployment: (them, times, failures)."""
    convs = [Conversation(label) for _ in range(conversations)]
    start = threading.Barrier(conversations)
    with ThreadPoolExecutor(conversations) as pool:
        done = list(pool.map(lambda i: _converse(deployment.url(i), convs[i], turns, start), range(conversations)))
    return convs, [t for ts, _ in done for t in ts], [e for _, es in done for e in es]


def _count(deployment: Deployment, commands: dict[str, int]) -> tuple[int, int, int, dict[int, int]]:
    """(observed, never sent, sent again, missed by turn): per command (``commands``: command -> its turn),
    the first run_command step any of the deployment's language servers got for it carries exit code 1;
    none got one; a step got again; per turn (1-based), the steps without exit code 1."""
    from native_bridge.cascade import parse_request, to_json

    first: dict[str, int | None] = {}
    resent = 0
    for gw in deployment.gateways:
        for message in gw.sent():
            for step in parse_request(message).steps:
                rc = to_json(step).get("runCommand")
                if rc is None or (command := rc.get("commandLine", "")) not in commands:
                    continue
                if command in first:
                    resent += 1
                else:
                    first[command] = rc.get("exitCode")
    missed = Counter(commands[c] + 1 for c in commands if first.get(c) != 1)
    observed = len(commands) - sum(missed.values())
    return observed, sum(1 for c in commands if c not in first), resent, dict(sorted(missed.items()))


def load(quick: bool, log: Callable[[str], None] = print) -> list[LoadRow]:
    """The load figure (see the module's docstring): a row per state store."""
    if missing := StateServer.missing():
        log(f"  (load left out: {missing})")
        return []
    rounds = ROUNDS_QUICK if quick else ROUNDS
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp, contextlib.ExitStack() as stack:
        base = Path(tmp)
        redis = stack.enter_context(StateServer())
        deployments = {
            "redis": Deployment(
                "redis", base / "redis", f"{redis.server.url_without_password}/0", redis.server.password
            ),
            "sqlite": Deployment("sqlite", base / "sqlite", str(base / "sqlite" / "state.sqlite"), None),
        }
        t0 = time.perf_counter()
        for d in deployments.values():
            stack.callback(d.close)
            d.launch()  # from this thread: the processes' lifetime follows the thread that forks them
        try:
            for d in deployments.values():
                d.ready()
            log(
                f"  two deployments up in {time.perf_counter() - t0:.1f} s (per store: 2 gateways, "
                "2 planner hops, 2 chat hops)"
            )
            for name, d in deployments.items():  # imports, connections, the stores' first writes: not measured
                _, _, errors = _round(d, f"warm-up {name}", 4, 2)
                if errors:
                    raise RuntimeError(f"the {name} deployment fails in its warm-up: {errors[:3]}")
            commands: dict[str, dict[str, int]] = {v: {} for v in VARIANTS}  # command -> its turn
            times: dict[str, list[float]] = {v: [] for v in VARIANTS}
            errors_by: dict[str, list[str]] = {v: [] for v in VARIANTS}
            ratios = []  # per round: p99 with Redis / p99 with SQLite
            for r in range(rounds):
                shown = []
                p99: dict[str, float] = {}
                for name in VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS)):
                    started = time.perf_counter()
                    convs, ts, errs = _round(deployments[name], f"{name} round {r + 1}", CONVERSATIONS, TURNS)
                    took = time.perf_counter() - started
                    commands[name].update((c.command(t), t) for c in convs for t in range(TURNS))
                    times[name] += ts
                    errors_by[name] += errs
                    p99[name] = pct(ts, 0.99)
                    shown.append(
                        f"{name} {len(ts) + len(errs)} in {took:.1f} s, p50 {median(ts) * 1e3:.0f} / p99 "
                        f"{p99[name] * 1e3:.0f} ms" + (f", {len(errs)} failed" if errs else "")
                    )
                ratios.append(p99["redis"] / p99["sqlite"])
                log(f"  round {r + 1:2}: {'; '.join(shown)}; p99 redis ÷ sqlite {ratios[-1]:.2f}x")
            rows = []
            for name in VARIANTS:
                observed, missing_steps, resent, missed_turns = _count(deployments[name], commands[name])
                rows.append(
                    LoadRow(
                        name,
                        len(commands[name]),
                        observed,
                        missing_steps,
                        resent,
                        missed_turns,
                        len(errors_by[name]),
                        times[name],
                        errors_by[name][:5],
                    )
                )
        except BaseException:
            for d in deployments.values():
                log(d.output())
            raise
    for row in rows:
        by_turn = f", without exit code 1 by turn {row.missed_turns}" if row.missed_turns else ""
        log(
            f"  {row.variant:6}: observations reached {row.observed}/{row.expected} (steps never sent {row.missing}, "
            f"sent again {row.resent}{by_turn}), "
            f"{row.failed} of {len(row.times) + row.failed} requests failed, "
            f"p50 {row.p50 * 1e3:.1f} ms, p99 {row.p99 * 1e3:.1f} ms"
            + (f"; failures: {row.errors}" if row.errors else "")
        )
    log(
        f"  p99 redis ÷ sqlite {rows[0].p99 / rows[1].p99:.2f}x over the run (per round: median "
        f"{median(ratios):.2f}x, {min(ratios):.2f}-{max(ratios):.2f}x), p50 {rows[0].p50 / rows[1].p50:.2f}x"
    )
    return rows
