"""What the bench runs its traffic through: real mitmdumps in reverse mode in front of one minimal
local planner, the addons measured beside the bridge (a null addon, the naive peer), the client
that sends agent requests and times them, and the proxies' memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import wsproto
import wsproto.events as wsevents
from support.histories.agent import CLIENT_HINTS, Session, no_history_doc, session_for_size
from support.lifetime import ending_with

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = str(ROOT / "addons" / "bridge.py")

# ---- the upstream: a minimal planner in its own process ----------------------------------

_CHOICE = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
_PLANNER_REPLY = orjson.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "choices": [_CHOICE]})


async def serve_planner(port_out: Any) -> None:
    """A minimal planner: reads each request whole, answers a small fixed JSON (keep-alive)."""

    async def websocket(handshake: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Responses over WebSocket: each whole text message is answered with one small frame."""
        ws = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
        ws.receive_data(handshake)
        while True:
            for e in ws.events():
                if isinstance(e, wsevents.Request):
                    writer.write(ws.send(wsevents.AcceptConnection()))
                elif isinstance(e, wsevents.TextMessage) and e.message_finished:
                    writer.write(ws.send(wsevents.Message(data='{"type":"response.completed"}')))
                elif isinstance(e, wsevents.CloseConnection):
                    writer.write(ws.send(e.response()))
                    await writer.drain()
                    return
            await writer.drain()
            data = await reader.read(1 << 20)
            if not data:
                return
            ws.receive_data(data)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(_PLANNER_REPLY)
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                if b"\r\nupgrade: websocket" in headers.lower():
                    await websocket(headers, reader, writer)
                    return
                length, chunked = 0, False
                for line in headers.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                    elif name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                        chunked = True
                if chunked:
                    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                        await reader.readexactly(size + 2)
                    await reader.readuntil(b"\r\n")
                elif length:
                    await reader.readexactly(length)
                writer.write(head + _PLANNER_REPLY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
    print(server.sockets[0].getsockname()[1], file=port_out, flush=True)
    async with server:
        await server.serve_forever()


class Planner:
    """The minimal planner in its own process (it must not share the client's interpreter)."""

    def __enter__(self) -> Planner:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "bench"), "--serve-planner"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=ending_with(os.getpid()),  # a SIGKILLed bench leaves no planner behind
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# ---- addons measured beside the bridge -----------------------------------------------------

# What any addon that rewrites a request body pays mitmproxy, with no rewriting logic at
# all: decode, back up the flow (mitmweb's revert), set the body, annotate. Measured next
# to the bridge, it splits the bridge's cost into mitmproxy's part and the bridge's own.
NULL_ADDON = """
class Null:
    def request(self, flow):
        if flow.request.method == "POST" and flow.request.path.endswith("/chat/completions"):
            raw = flow.request.get_content()
            flow.backup()
            flow.request.set_content(raw)
            flow.comment = "null"
            flow.metadata["bridge"] = {"status": "rewritten"}

addons = [Null()]
"""


# The naive peer: what a 40-line addon does with the same histories (no memo, no truth rules):
# orjson parse, results by id, every Bash/Read pair with a result a step with the first
# "Exit code: N" line as its code, the pairs taken out, orjson dump.
NAIVE_ADDON = r"""
import re
import orjson

EXIT = re.compile(r"^Exit code:? (-?\d+)", re.M)
DONE = "CORTEX_STEP_STATUS_DONE"


class Naive:
    def request(self, flow):
        req = flow.request
        if req.method != "POST" or not req.path.endswith("/chat/completions"):
            return
        doc = orjson.loads(req.get_content())
        msgs = doc.get("messages") or []
        results = {m["tool_call_id"]: m for m in msgs if m.get("role") == "tool" and "tool_call_id" in m}
        steps, used = [], set()
        for m in msgs:
            for tc in m.get("tool_calls") or ():
                fn, res = tc.get("function") or {}, results.get(tc.get("id"))
                if res is None or fn.get("name") not in ("Bash", "Read") or not isinstance(res.get("content"), str):
                    continue
                args, out = orjson.loads(fn.get("arguments") or "{}"), res["content"]
                if fn["name"] == "Bash":
                    rc = {"commandLine": args.get("command", ""), "combinedOutput": {"full": out}}
                    if code := EXIT.search(out):
                        rc["exitCode"] = int(code.group(1))
                    steps.append({"type": "CORTEX_STEP_TYPE_RUN_COMMAND", "status": DONE, "runCommand": rc})
                else:
                    view = {"absolutePathUri": "file://" + args.get("file_path", ""), "content": out}
                    steps.append({"type": "CORTEX_STEP_TYPE_VIEW_FILE", "status": DONE, "viewFile": view})
                used.add(tc["id"])
        if not steps:
            return
        kept = []
        for m in msgs:
            if m.get("role") == "tool" and m.get("tool_call_id") in used:
                continue
            if m.get("tool_calls"):
                m = {**m, "tool_calls": [tc for tc in m["tool_calls"] if tc.get("id") not in used]}
                if not m["tool_calls"] and not m.get("content"):
                    continue
            kept.append(m)
        doc["messages"], doc["additional_steps"] = kept, steps
        req.set_content(orjson.dumps(doc))


addons = [Naive()]
"""


# ---- mitmdump ---------------------------------------------------------------------------------


def logged_mitmdump() -> type:
    """support.mitmdump.Mitmdump with its output in a file, not a pipe: a pipe needs a reader thread in this
    process, whose wake-ups on every log line (the bridge logs one per flow) would cost the
    measuring client GIL hand-offs that plain mitmdump, which logs nothing, never causes."""
    from support.mitmdump import LISTENING, Mitmdump
    from support.mitmdump import ROOT as DEMO_ROOT

    class Logged(Mitmdump):
        def start(self, timeout: float = 20.0) -> Logged:
            self.launch()
            return self.listening(timeout)

        def launch(self) -> None:
            """Start the process (it comes up while the caller starts others: ``listening``)."""
            log = Path(tempfile.mkstemp(prefix="bench-mitmdump-", suffix=".log")[1])
            self._log = log
            with log.open("wb") as out:
                self._proc = subprocess.Popen(
                    self.args,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=DEMO_ROOT,
                    env=dict(os.environ, **self.env),  # a store's password: never on the command line
                    preexec_fn=ending_with(os.getpid()),  # a SIGKILLed bench leaves no proxy behind
                )

        def listening(self, timeout: float = 20.0) -> Logged:
            """Wait until the launched process listens (its port read from its log)."""
            assert self._proc is not None
            log = self._log
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self._proc.poll() is None:
                text = log.read_text(errors="replace")
                m = next((m for ln in text.splitlines() if (m := LISTENING.search(ln))), None)
                if m:
                    self.port = int(m.group(1))
                    return self
                time.sleep(0.05)
            self.lines = log.read_text(errors="replace").splitlines()
            code = self.stop()
            raise RuntimeError(f"mitmdump did not start listening in {timeout}s (exit {code}):\n{self.output}")

        def stop(self, timeout: float = 10.0) -> int | None:
            code = super().stop(timeout)
            with contextlib.suppress(OSError, AttributeError):
                self._log.unlink()
            return code

    return Logged


def reverse_proxy(
    upstream: str,
    addon: str | None,
    records: Path | None,
    confdir: Path,
    options: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Any:
    """A real mitmdump in reverse mode: plain, with the bridge (records on or off), or with
    the null addon (a script path); ``env``: more environment (``StateServer.env``)."""
    from support.mitmdump import mitmdump_path

    proxy = logged_mitmdump()(upstream, records or confdir, confdir, env=env)
    args = [mitmdump_path(), "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1", "--listen-port", "0"]
    args += ["--set", f"confdir={confdir}", "--set", "flow_detail=0"]
    if addon:
        args += ["-s", addon]
        if records is not None:
            args += ["--set", f"bridge_records={records}"]
    proxy.args = [*args, *options]
    return proxy


def records_written(records: Path, count: int, timeout: float = 30.0) -> None:
    """Wait until the records directory holds ``count`` records (a record appears whole: the
    writer renames it into place), polling every half millisecond."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if records.exists() and sum(1 for f in records.iterdir() if not f.name.startswith(".")) >= count:
            return
        time.sleep(0.0005)
    raise RuntimeError(f"{records}: {count} records not written in {timeout}s")


def drain_records(records: Path, timeout: float = 120.0) -> None:
    """Wait until the record writer is idle (no file appears for a while), then empty the directory."""
    deadline, seen, quiet = time.monotonic() + timeout, -1, 0
    while time.monotonic() < deadline and quiet < 3:
        n = sum(1 for _ in records.glob("*")) if records.exists() else 0
        quiet = quiet + 1 if n == seen else 0
        seen = n
        time.sleep(0.1)
    if records.exists():  # keep the disk from filling up
        for f in records.iterdir():
            with contextlib.suppress(FileNotFoundError):  # a write in progress
                f.unlink()


def rss_tree(pid: int) -> int:
    """Resident bytes of a process and its children (the bridge's worker process)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmRSS:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def cpu_ns(pid: int) -> int:
    """The CPU time a process and its children (the bridge's workers) have used, in ns: each
    thread's ``schedstat`` (ns, unlike ``stat``'s 10 ms ticks)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    total += int((task / "schedstat").read_text().split()[0])
                    todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


def settled(pid: int, quiet: float = 0.001, timeout: float = 5.0) -> float:
    """Wait until a process tree has used no CPU for ``quiet`` seconds (its work after a reply:
    a reading left to its worker, a record, a log line), at most ``timeout``; the seconds waited.
    An agent thinks for seconds between turns, so in use that work is done before the next request;
    here it would land on the next turn, another proxy's (plain's too) as much as its own."""
    t0 = time.monotonic()
    deadline, last, still = t0 + timeout, cpu_ns(pid), t0
    while (now := time.monotonic()) < deadline:
        time.sleep(quiet / 4)
        used = cpu_ns(pid)
        if used != last:
            last, still = used, time.monotonic()
        elif now - still >= quiet:
            break
    return time.monotonic() - t0


class PeakRSS:
    """The peak growth of a process tree's resident memory while the ``with`` block runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.growth, self._stop = pid, 0, threading.Event()

    def __enter__(self) -> PeakRSS:
        self.base = rss_tree(self.pid)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.growth = max(self.growth, rss_tree(self.pid) - self.base)
            time.sleep(0.005)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ---- the shared state on a Redis server (bridge_state=redis://) ------------------------------


@dataclass(slots=True)
class StoreSize:
    """The keys of one kind the bench's proxies wrote to the server: ``MEMORY USAGE`` summed."""

    what: str  # observation | delivered step
    keys: int
    items: int  # observations (fixed-size records) or delivered steps (digests) in those keys
    bytes: int

    @property
    def per_item(self) -> float:
        return self.bytes / self.items if self.items else float("nan")


def store_line(sizes: Sequence[StoreSize]) -> str:
    """What the keys of each kind take on the server, per item (the kinds the run wrote)."""
    return "  redis MEMORY USAGE: " + "; ".join(
        f"{s.per_item:.0f} B per {s.what} ({s.keys} keys, {s.items} {s.what}s)" for s in sizes if s.keys
    )


class StateServer:
    """One real redis-server on loopback for the proxies with ``bridge_state=redis://``
    (support.redis_server: a free port, a random password; it ends with the bench, also when the
    bench is killed). A proxy gets ``options`` on its command line and ``env``: the password never
    goes on a command line (``ps`` shows it)."""

    @staticmethod
    def missing() -> str | None:
        """None when a server can be started here, else why not."""
        from support.redis_server import available

        return available()

    def __enter__(self) -> StateServer:
        from support.redis_server import RedisServer

        self.server = RedisServer().__enter__()
        self.client = self.server.client()
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.server.close()

    @property
    def options(self) -> tuple[str, ...]:
        return ("--set", f"bridge_state={self.server.url_without_password}/0")

    @property
    def env(self) -> dict[str, str]:
        from native_bridge.runtime.store_url import PASSWORD_ENV

        return {PASSWORD_ENV: self.server.password}

    def flush(self) -> None:
        """Every key gone: a new set of proxies starts on an empty store, as on a new SQLite file."""
        self.client.flushdb()

    def sizes(self, prefix: str = "bridge:") -> list[StoreSize]:
        """What the observations and the ledgers under ``prefix`` take on the server, and how many
        they hold (an obs key is a run of fixed-size records, a ledger one digest per step)."""
        from native_bridge.cascade.ledger import DIGEST_SIZE
        from native_bridge.runtime import redis_store

        out = []
        for what, kind, unit in (
            ("observation", "obs", redis_store._RECORD.size),
            ("delivered step", "ledger", DIGEST_SIZE),
        ):
            keys = list(self.client.scan_iter(match=f"{prefix}{kind}:*", count=1000))
            items = sum(self.client.strlen(k) // unit for k in keys)
            used = sum(self.client.memory_usage(k, samples=0) or 0 for k in keys)
            out.append(StoreSize(what, len(keys), items, used))
        return out


# ---- the client: agent requests, timed --------------------------------------------------------

AGENT_UA = CLIENT_HINTS["chat"].encode()  # Claude Code: the bridge knows whose words count
CODEX_UA = b"codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"  # Codex over WebSocket


@dataclass(slots=True)
class Workload:
    """Request bodies for ``clients`` concurrent clients, each its own agent session.

    ``warm``: per client one conversation of about ``size`` bytes, resumed on every request
    with one more round (a different one each time, so the size stays put: the memo resumes
    from the conversation's cut before the newest round, as when a client edits its last
    message); ``cold``: a new conversation every request (first sight, the worst case);
    ``nohist``: requests without tool history."""

    size: int
    clients: int
    kind: str = "warm"  # warm | cold | nohist
    bodies: list[list[bytes]] = field(default_factory=list)
    gap: float = 0.0  # seconds each client waits between its requests (0: back to back)

    def build(self, per_client: int) -> Workload:
        for c in range(self.clients):
            if self.kind == "nohist":
                doc = no_history_doc(self.size)
                self.bodies.append([orjson.dumps({**doc, "user": f"c{c}-{i}"}) for i in range(per_client)])
                continue
            s, rounds = session_for_size("chat", self.size, 1, seed=100 + c)
            base = s.doc(max(1, rounds - 1))
            extra = Session("chat", 1, seed=10_000 + c).grow(per_client)
            msgs = []
            for i in range(per_client):
                new = extra.items[extra.ends[i - 1] if i else 2 : extra.ends[i]]  # one round, its own ids
                msgs.append(orjson.dumps({**base, "messages": base["messages"] + new}))
            self.bodies.append(msgs)
        return self

    def batch(self, rep: int) -> Workload:
        """The bodies of one measured batch: for ``cold``, conversations never sent before."""
        if self.kind != "cold":
            return self
        other = Workload(self.size, self.clients, self.kind, gap=self.gap)
        for c, bodies in enumerate(self.bodies):
            other.bodies.append([retag(b, f"[{c}.{rep}.{i}] ") for i, b in enumerate(bodies)])
        return other


def retag(body: bytes, tag: str) -> bytes:
    """The body with ``tag`` put before its first user message: the same size, another conversation."""
    head, sep, rest = body.partition(b'{"role":"user","content":"')
    return head + sep + tag.encode() + rest


async def _client(url: str, bodies: list[bytes], latencies: list[float], gap: float = 0.0, ua: bytes = b"") -> None:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    agent = b"user-agent: %s\r\n" % ua if ua else b""
    try:
        for body in bodies:
            req = (
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: planner\r\ncontent-type: application/json\r\n"
                b"%scontent-length: %d\r\n\r\n" % (agent, len(body))
            )
            t0 = time.perf_counter()
            writer.write(req + body)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(v)
                for k, _, v in (ln.partition(b":") for ln in head.split(b"\r\n"))
                if k.lower() == b"content-length"
            )
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"proxy answered {head.splitlines()[0]!r}")
            if gap:  # an agent reads the reply and runs its tools before the next turn
                await asyncio.sleep(gap)
    finally:
        writer.close()


class Connection:
    """One keep-alive connection to a proxy, as an agent's client holds one, and blocking: ``post``
    sends a chat request and returns the seconds until its whole reply is read (the request is
    built before the clock starts; no event loop between the clock and the socket)."""

    def __init__(self, url: str, ua: bytes = AGENT_UA) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.ua, self.rest = ua, b""

    def post(self, body: bytes) -> float:
        req = (
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: planner\r\ncontent-type: application/json\r\n"
            b"user-agent: %s\r\ncontent-length: %d\r\n\r\n" % (self.ua, len(body))
        ) + body
        t0 = time.perf_counter()
        self.sock.sendall(req)
        buf = self.rest
        while (end := buf.find(b"\r\n\r\n")) < 0:
            buf += self._recv()
        head = buf[:end]
        length = next(
            int(v) for k, _, v in (ln.partition(b":") for ln in head.split(b"\r\n")) if k.lower() == b"content-length"
        )
        while len(buf) < end + 4 + length:
            buf += self._recv()
        took = time.perf_counter() - t0
        self.rest = buf[end + 4 + length :]
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"proxy answered {head.splitlines()[0]!r}")
        return took

    def _recv(self) -> bytes:
        data = self.sock.recv(1 << 16)
        if not data:
            raise RuntimeError("the proxy closed the connection")
        return data

    def close(self) -> None:
        self.sock.close()


def send_batch(url: str, w: Workload, ua: bytes = b"") -> tuple[list[float], float]:
    """Every client sends its bodies in turn; (latencies, requests per second)."""
    latencies: list[float] = []

    async def run() -> None:
        await asyncio.gather(*(_client(url, bodies, latencies, w.gap, ua) for bodies in w.bodies))

    t0 = time.perf_counter()
    asyncio.run(run())
    return latencies, len(latencies) / (time.perf_counter() - t0)
