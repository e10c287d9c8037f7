"""Benchmark of the bridge, measured side by side against its floor and against plain mitmdump.

    .venv/bin/python scripts/bench.py            # the full bench (about five minutes)
    .venv/bin/python scripts/bench.py --quick    # seconds: the CI smoke (tests/test_bench_smoke.py)
    .venv/bin/python scripts/bench.py --only shapes,stall,planner

Every figure that decides a target is a ratio of two things measured in the same
run, interleaved, as medians: timings on a shared, noisy 2-core machine mean
little alone, their ratios are stable. See scripts/BENCH.md.

Sections:
  core    rewrite() of generated agent histories (3 dialects; single calls and 4
          parallel mixed calls per round; 10..10,000 rounds; outputs 1-5 KB) against
          the floor: orjson loads + dumps of the same body. Cold (first sight of
          the history) and warm (the conversation's previous turn was rewritten
          before: the steady state of an agent session). Peak memory per rewrite
          (tracemalloc) as a multiple of the body size. Scaling exponent.
  nohist  a request with no tool history: rewrite() against the floor.
  shapes  agent traffic through five mitmdumps in one run (plain, a naive orjson peer
          addon, the bridge in rewrite mode, in observe mode, observe with records):
          the same body again and again, the agent loop (each request the previous
          history plus one round, 40-turn conversations), new conversations, 8
          conversations at once; 10 KB / 200 KB / 2 MB; p50 and throughput vs plain.
  stall   a 32 MB history never seen before while small requests run: their p99
          alone and during, and peak RSS growth of each proxy (worker included).
  planner the planner hop: grpcio -> mitmdump (prior-knowledge HTTP/2 listener) ->
          grpcio, plain (h2c listener only) against -s addons/bridge.py with
          bridge_planner; a 200 KB SendUserCascadeMessage, first and resumed turn.
  e2e     (not in the default run) the older mitmdump cases: 10 KB / 200 KB / 2 MB,
          1 and 8 clients, a null addon; the CI smoke runs it with --quick.
  golden  the output of rewrite() is byte-identical to the reference path
          (protobuf encoder, no caches) over the bundled session and generated
          histories; --golden-save/--golden-check compare against stored digests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import wsproto
import wsproto.events as wsevents

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent
sys.path.insert(0, str(ROOT / "addons"))
sys.path.insert(0, str(SCRIPTS))

from native_bridge.core.pipeline import rewrite  # noqa: E402
from support.histories import DIALECT_PATHS  # noqa: E402
from support.histories.agent import Session, mutations, no_history_doc, session_for_size  # noqa: E402
from support.histories.bundled import SESSION, SESSIONS, session_dialect  # noqa: E402
from support.histories.cascade import SEND_PATH, CascadeBodies  # noqa: E402

rewrite_mod = sys.modules["native_bridge.core.pipeline"]  # the module (the package exports the function)

# The User-Agent each generated dialect's client sends (Claude Code; Codex for Responses): with
# it the client is known before parsing and the memo resumes from raw bytes (core, memory).
# ``--no-client-hint`` measures the core as for an unidentified client.
CLIENT_HINTS = {
    "chat": "claude-cli/2.1.332 (external, cli)",
    "anthropic": "claude-cli/2.1.332 (external, cli)",
    "responses": "codex_cli_rs/0.50.0 (Ubuntu 24.4.0; x86_64) xterm-256color",
}
USE_HINTS = True


def _hint(dialect: str) -> str | None:
    return CLIENT_HINTS[dialect] if USE_HINTS else None


# ---- golden: the optimised paths give the bytes the reference path gives --------------


def golden_cases(quick: bool = False) -> Iterator[tuple[str, bytes, str | None, Any]]:
    """(name, raw body, path, config) over the bundled session and generated histories."""
    from native_bridge.core.pipeline import Config

    for path in SESSIONS:
        dialect = session_dialect(path)
        yield path.stem, path.read_bytes(), DIALECT_PATHS[dialect], None
    raw = SESSION.read_bytes()
    yield "session", raw, DIALECT_PATHS["chat"], None
    yield "session-nopath", raw, None, None
    yield "session-kinds", raw, DIALECT_PATHS["chat"], Config(kinds=frozenset({"run_command", "view_file"}))
    yield "session-ascii", json.dumps(orjson.loads(raw)).encode(), DIALECT_PATHS["chat"], None
    plain = no_history_doc(40_000)
    yield "nohist", orjson.dumps(plain), DIALECT_PATHS["chat"], None
    yield "nohist-ascii", json.dumps(plain).encode(), DIALECT_PATHS["chat"], None
    yield "nohist-ascii-nopath", json.dumps(plain).encode(), None, None
    yield "notjson", raw[:-40], DIALECT_PATHS["chat"], None
    yield "notjson-ascii", json.dumps(plain).encode()[:-3], DIALECT_PATHS["chat"], None
    yield "has-steps", orjson.dumps({**orjson.loads(raw), "additional_steps": []}), DIALECT_PATHS["chat"], None
    yield "wrong-path", raw, DIALECT_PATHS["responses"], None
    rng = random.Random(5)
    for dialect in DIALECT_PATHS:
        for parallel in (1, 4):
            s = Session(dialect, parallel, seed=11 + parallel)
            rounds = (1, 2, 3, 7, 26, 60) if quick else (*range(1, 31), 60, 200)
            for r in rounds:
                doc = s.doc(r)
                name = f"{dialect}-p{parallel}-r{r}"
                yield name, orjson.dumps(doc), DIALECT_PATHS[dialect], None
                if r in (3, 26, 60, 200):
                    yield name + "-nopath", orjson.dumps(doc), None, None
                    yield name + "-indent", json.dumps(doc, indent=1).encode(), DIALECT_PATHS[dialect], None
                    for label, mutated in mutations(doc, dialect, rng):
                        yield f"{name}-{label}", orjson.dumps(mutated), DIALECT_PATHS[dialect], None


def outcome_digest(result: Any) -> str:
    """Everything a rewrite reports, as one digest: body bytes, steps, plan, accounting."""
    plan = result.plan
    summary = orjson.dumps(result.summary(), option=orjson.OPT_NON_STR_KEYS)
    parts = [result.status, result.reason, result.dialect, result.body, orjson.dumps(result.steps)]
    parts += [orjson.dumps(result.notes), summary]
    if plan is not None:
        parts += [
            orjson.dumps([p.to_json() for p in plan.accounting]),
            orjson.dumps([plan.delta_start, sorted(plan.stepped), [c.pos for c in plan.step_calls]]),
            b"".join(s.SerializeToString(deterministic=True) for s in plan.steps),
        ]
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, bytes) else repr(p).encode()
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


def golden_digests(quick: bool = False) -> dict[str, str]:
    from native_bridge.core.pipeline import Config

    out = {}
    for name, raw, path, config in golden_cases(quick):
        out[name] = outcome_digest(rewrite(raw, config or Config(), path))
    return out


def golden_check(quick: bool = False) -> list[str]:
    """Where the fast paths disagree with the reference paths; empty when they all agree.

    Every case is rewritten with no memo (the reference), then through one shared memo
    after the cases before it (resumed conversations, forks, unrelated bodies), and every
    step's JSON is compared with protobuf's own (MessageToDict of the message)."""
    from native_bridge.core.encoder import step_json
    from native_bridge.core.memo import Memo
    from native_bridge.core.pipeline import Config

    memo, problems = Memo(), []
    for name, raw, path, config in golden_cases(quick):
        ref = rewrite(raw, config or Config(), path, memo=None)
        fast = rewrite(raw, config or Config(), path, memo=memo)
        if outcome_digest(fast) != outcome_digest(ref):
            problems.append(f"{name}: the memo changed the result")
        if ref.plan is not None and ref.plan.docs != [step_json(s) for s in ref.plan.steps]:
            problems.append(f"{name}: step JSON differs from protobuf's MessageToDict")
    if memo.errors:
        problems.append(f"the memo raised {memo.errors} times (the full rewrite covered for it)")
    if not memo.hits:
        problems.append("the memo never resumed a conversation")
    return problems


# ---- measuring -------------------------------------------------------------------------


def _median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _p(xs: Sequence[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def interleave(
    jobs: dict[str, Callable[[], float | None]], reps: int, min_time: float = 0.002
) -> dict[str, list[float]]:
    """Time each job ``reps`` times, rotating the order every round (drift and noise hit all
    alike). A job returns its own duration, or None to be timed here; a job shorter than
    ``min_time`` is repeated within a measurement (timer and cache effects stay small)."""
    inner = {}
    for name, job in jobs.items():  # calibrate: how many calls make one measurement
        t0 = time.perf_counter()
        own = job()
        took = own if isinstance(own, float) else time.perf_counter() - t0
        inner[name] = max(1, min(1000, int(min_time / max(took, 1e-7))))
    times: dict[str, list[float]] = {k: [] for k in jobs}
    names = list(jobs)
    for r in range(reps):
        gc.collect()
        for name in names[r % len(names) :] + names[: r % len(names)]:
            total = 0.0
            for _ in range(inner[name]):
                t0 = time.perf_counter()
                own = jobs[name]()
                total += own if isinstance(own, float) else time.perf_counter() - t0
            times[name].append(total / inner[name])
    return times


@dataclass(slots=True)
class CoreRow:
    dialect: str
    parallel: int
    rounds: int
    size: int
    floor: float  # seconds, medians
    cold: float
    warm: float
    mem_cold: float | None = None  # peak live memory / body size
    mem_warm: float | None = None
    mem_floor: float | None = None


def _core_jobs(dialect: str, s: Session, rounds: int) -> tuple[bytes, dict[str, Callable[[], float | None]]]:
    from native_bridge.core.memo import Memo

    path = DIALECT_PATHS[dialect]
    cur, prev = s.body(rounds), s.body(rounds - 1) if rounds > 1 else None
    primed = Memo(max_bytes=2**31)  # the series goes past the default budget (memo.MAX_BYTES)
    if prev is not None:
        rewrite(prev, path=path, memo=primed, client_hint=_hint(dialect))  # the conversation's previous turn

    def floor() -> None:
        orjson.dumps(orjson.loads(cur))

    def cold() -> None:
        rewrite(cur, path=path, memo=Memo(max_bytes=2**31), client_hint=_hint(dialect))

    def warm() -> float:
        m = primed.copy()
        t0 = time.perf_counter()
        rewrite(cur, path=path, memo=m, client_hint=_hint(dialect))
        return time.perf_counter() - t0

    return cur, {"floor": floor, "cold": cold, "warm": warm}


def _reps(size: int, quick: bool) -> int:
    if quick:
        return 5 if size < 1_000_000 else 3
    return 15 if size < 1_000_000 else 7 if size < 10_000_000 else 3


def core(quick: bool, log: Callable[[str], None]) -> list[CoreRow]:
    rows = []
    rounds_list = (10, 100) if quick else (10, 100, 1000, 10_000)
    for dialect in DIALECT_PATHS:
        for parallel in (1, 4):
            s = Session(dialect, parallel, seed=21)
            for rounds in rounds_list:
                cur, jobs = _core_jobs(dialect, s, rounds)
                t = interleave(jobs, _reps(len(cur), quick))
                rows.append(
                    CoreRow(dialect, parallel, rounds, len(cur), *(_median(t[k]) for k in ("floor", "cold", "warm")))
                )
                log(_core_line(rows[-1]))
            s = None  # free the big session before the next
    return rows


def core_at_sizes(sizes: Sequence[int], quick: bool, log: Callable[[str], None]) -> list[CoreRow]:
    """The target sizes (about 200 KB and 2 MB), every dialect and shape, with memory."""
    rows = []
    for size in sizes:
        for dialect in DIALECT_PATHS:
            for parallel in (1, 4):
                s, rounds = session_for_size(dialect, size, parallel)
                cur, jobs = _core_jobs(dialect, s, rounds)
                t = interleave(jobs, _reps(len(cur), quick) + (4 if size < 1_000_000 else 2))
                row = CoreRow(dialect, parallel, rounds, len(cur), *(_median(t[k]) for k in ("floor", "cold", "warm")))
                row.mem_floor, row.mem_cold, row.mem_warm = memory(dialect, s, rounds)
                rows.append(row)
                log(_core_line(row))
    return rows


def _core_line(r: CoreRow) -> str:
    mem = f"  mem x{r.mem_cold:.2f}/x{r.mem_warm:.2f} (floor x{r.mem_floor:.2f})" if r.mem_cold is not None else ""
    return (
        f"  {r.dialect:9} {'single' if r.parallel == 1 else f'{r.parallel} parallel':10} {r.rounds:>6} rounds "
        f"{_size(r.size):>8}  floor {r.floor * 1e3:8.2f} ms  "
        f"cold {r.cold / r.floor:5.2f}x  warm {r.warm / r.floor:5.2f}x{mem}"
    )


def _size(n: float) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.0f} KB"


class _Sampling:
    """orjson, noting live traced memory after every call (bench only).

    tracemalloc's own peak counts the JSON library's scratch buffers: orjson reserves a
    parse arena of about 12x the input (mostly untouched; RSS grows by ~1.2x) and grows its
    output buffer by doubling. The floor needs those as much as the rewrite does, so the
    figure that tells the rewrite's cost is the memory it keeps alive at once: the parsed
    body, what it derives, the output. Sampling right after each encode/decode sees it at
    its largest."""

    JSONDecodeError = orjson.JSONDecodeError
    JSONEncodeError = orjson.JSONEncodeError
    Fragment = getattr(orjson, "Fragment", None)

    def __init__(self) -> None:
        self.peak = 0

    def _sample(self) -> None:
        self.peak = max(self.peak, tracemalloc.get_traced_memory()[0])

    def loads(self, *a: Any, **k: Any) -> Any:
        out = orjson.loads(*a, **k)
        self._sample()
        return out

    def dumps(self, *a: Any, **k: Any) -> Any:
        out = orjson.dumps(*a, **k)
        self._sample()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(orjson, name)


def _live_peak(fn: Callable[[], Any], modules: Sequence[Any]) -> float:
    """Peak live traced memory (bytes above the start) while ``fn`` runs, sampled as _Sampling says."""
    sampler = _Sampling()
    saved = [m.orjson for m in modules]
    gc.collect()
    tracemalloc.start()
    try:
        for m in modules:
            m.orjson = sampler
        base = tracemalloc.get_traced_memory()[0]
        sampler.peak = base
        result = fn()
        sampler._sample()
        del result
        return sampler.peak - base
    finally:
        for m, o in zip(modules, saved, strict=True):
            m.orjson = o
        tracemalloc.stop()


def memory(dialect: str, s: Session, rounds: int) -> tuple[float, float, float]:
    """Peak live memory of floor, cold and warm rewrite, each as a multiple of the body size."""
    from native_bridge.core import memo as memo_mod
    from native_bridge.core.memo import Memo

    path = DIALECT_PATHS[dialect]
    cur, prev = s.body(rounds), s.body(rounds - 1)
    mods = [rewrite_mod, memo_mod]

    class _Floor:
        orjson = orjson

    floor = _live_peak(lambda: _Floor.orjson.dumps(_Floor.orjson.loads(cur)), [_Floor])
    cold = _live_peak(lambda: rewrite(cur, path=path, memo=Memo(), client_hint=_hint(dialect)), mods)
    primed = Memo()
    rewrite(prev, path=path, memo=primed, client_hint=_hint(dialect))
    warm = _live_peak(lambda: rewrite(cur, path=path, memo=primed.copy(), client_hint=_hint(dialect)), mods)
    return floor / len(cur), cold / len(cur), warm / len(cur)


def exponent(rows: Sequence[CoreRow], attr: str) -> float:
    """The slope of log(time) over log(size): 1.0 is linear."""
    xs = [math.log(r.size) for r in rows]
    ys = [math.log(getattr(r, attr)) for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def no_history(sizes: Sequence[int], quick: bool, log: Callable[[str], None]) -> list[tuple[int, float, float]]:
    """(size, floor, rewrite) of requests with no tool history (a first turn, a title request)."""
    from native_bridge.core.memo import Memo

    out = []
    for size in sizes:
        raw = orjson.dumps(no_history_doc(size))
        t = interleave(
            {
                "floor": lambda raw=raw: orjson.dumps(orjson.loads(raw)),
                "rewrite": lambda raw=raw: rewrite(raw, path=DIALECT_PATHS["chat"], memo=Memo()),
            },
            _reps(len(raw), quick) * 2,
        )
        out.append((len(raw), _median(t["floor"]), _median(t["rewrite"])))
        log(
            f"  no tool history {_size(len(raw)):>8}: floor {out[-1][1] * 1e3:.3f} ms, "
            f"rewrite {out[-1][2] / out[-1][1]:.3f}x"
        )
    return out


# ---- end to end: real mitmdump, with and without the addon ------------------------------

_CHOICE = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
_PLANNER_REPLY = orjson.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "choices": [_CHOICE]})


async def _serve_planner(port_out: Any) -> None:
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
            [sys.executable, __file__, "--serve-planner"], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


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


def _logged_mitmdump() -> type:
    """support.mitmdump.Mitmdump with its output in a file, not a pipe: a pipe needs a reader thread in this
    process, whose wake-ups on every log line (the bridge logs one per flow) would cost the
    measuring client GIL hand-offs that plain mitmdump, which logs nothing, never causes."""
    from support.mitmdump import LISTENING, Mitmdump
    from support.mitmdump import ROOT as DEMO_ROOT

    class Logged(Mitmdump):
        def start(self, timeout: float = 20.0) -> Logged:
            log = Path(tempfile.mkstemp(prefix="bench-mitmdump-", suffix=".log")[1])
            self._log = log
            with log.open("wb") as out:
                self._proc = subprocess.Popen(
                    self.args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=DEMO_ROOT
                )
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


def _proxy(upstream: str, addon: str | None, records: Path | None, confdir: Path, options: Sequence[str] = ()) -> Any:
    """A real mitmdump in reverse mode: plain, with the bridge (records on or off), or with
    the null addon (a script path)."""
    from support.mitmdump import mitmdump_path

    proxy = _logged_mitmdump()(upstream, records or confdir, confdir)
    args = [mitmdump_path(), "--mode", f"reverse:{upstream}", "--listen-host", "127.0.0.1", "--listen-port", "0"]
    args += ["--set", f"confdir={confdir}", "--set", "flow_detail=0"]
    if addon:
        args += ["-s", addon]
        if records is not None:
            args += ["--set", f"bridge_records={records}"]
    proxy.args = [*args, *options]
    return proxy


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
            other.bodies.append([_retag(b, f"[{c}.{rep}.{i}] ") for i, b in enumerate(bodies)])
        return other


def _retag(body: bytes, tag: str) -> bytes:
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


def _batch(url: str, w: Workload, ua: bytes = b"") -> tuple[list[float], float]:
    """Every client sends its bodies in turn; (latencies, requests per second)."""
    latencies: list[float] = []

    async def run() -> None:
        await asyncio.gather(*(_client(url, bodies, latencies, w.gap, ua) for bodies in w.bodies))

    t0 = time.perf_counter()
    asyncio.run(run())
    return latencies, len(latencies) / (time.perf_counter() - t0)


@dataclass(slots=True)
class E2ERow:
    label: str
    size: int
    clients: int
    kind: str
    stats: dict[str, dict[str, float]]  # proxy -> p50, p99 (s), rps


E2E_PLAN: list[tuple[str, int, int, str, int, bool]] = [
    ("200 KB", 200_000, 1, "warm", 20, True),
    ("200 KB", 200_000, 8, "warm", 6, False),
    ("10 KB", 10_000, 1, "warm", 40, True),
    ("10 KB", 10_000, 8, "warm", 12, False),
    ("2 MB", 2_000_000, 1, "warm", 6, False),
    ("2 MB", 2_000_000, 8, "warm", 2, False),
    ("200 KB cold", 200_000, 1, "cold", 10, False),
    ("200 KB no history", 200_000, 1, "nohist", 20, False),
]  # (label, size, clients, workload, requests per client per batch, also through records-on)
E2E_QUICK = [("200 KB", 200_000, 1, "warm", 10, False)]


def e2e(
    quick: bool,
    log: Callable[[str], None],
    plan: Sequence[tuple[str, int, int, str, int, bool]] | None = None,
    reps: int | None = None,
) -> list[E2ERow]:
    """Interleaved batches through plain mitmdump and mitmdump with the bridge."""
    plan = plan or (E2E_QUICK if quick else E2E_PLAN)
    reps = reps or (3 if quick else 7)
    with_records = any(p[5] for p in plan)
    rows = []
    with Planner() as planner, tempfile.TemporaryDirectory(prefix="bridge-bench-") as tmp:
        records = Path(tmp) / "records"
        bridge = str(ROOT / "addons" / "bridge.py")
        null = Path(tmp) / "null_addon.py"
        null.write_text(NULL_ADDON)
        proxies = {
            "plain": _proxy(planner.url, None, None, Path(tmp) / "c1"),
            "null addon": _proxy(planner.url, str(null), None, Path(tmp) / "c4"),
            "bridge": _proxy(planner.url, bridge, None, Path(tmp) / "c2"),
        }
        if quick:
            del proxies["null addon"]
        if with_records:
            proxies["bridge+records"] = _proxy(planner.url, bridge, records, Path(tmp) / "c3")
        for p in proxies.values():
            p.start()
        try:
            for label, size, clients, kind, per_client, with_records, *more in plan:
                gap = more[0] if more else 0.0
                w = Workload(size, clients, kind).build(per_client)
                names = [n for n in proxies if with_records or n != "bridge+records"]
                for n in names:  # each proxy meets the conversations once before measuring
                    _batch(proxies[n].url, Workload(size, clients, kind, [b[:1] for b in w.bodies]))
                w.gap = gap
                lat: dict[str, list[float]] = {n: [] for n in names}
                rps: dict[str, list[float]] = {n: [] for n in names}
                for r in range(reps):
                    batch = w.batch(r)
                    for n in names[r % len(names) :] + names[: r % len(names)]:
                        got, per_s = _batch(proxies[n].url, batch)
                        lat[n] += got
                        rps[n].append(per_s)
                        if n == "bridge+records":
                            # Its writer catches up before anything else is measured: on two
                            # cores a backlog would slow down the next proxy's batch too.
                            _drain(records)
                stats = {n: {"p50": _median(lat[n]), "p99": _p(lat[n], 0.99), "rps": _median(rps[n])} for n in names}
                rows.append(E2ERow(label, size, clients, kind, stats))
                log(_e2e_line(rows[-1]))
        finally:
            for p in proxies.values():
                p.stop()
    return rows


def _drain(records: Path, timeout: float = 120.0) -> None:
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


def _e2e_line(r: E2ERow) -> str:
    base = r.stats["plain"]
    who = f"{r.label:18} {r.clients} client{'s' if r.clients > 1 else ' '}"
    parts = [f"  {who}  plain p50 {base['p50'] * 1e3:6.2f} ms p99 {base['p99'] * 1e3:6.2f} ms {base['rps']:6.0f}/s"]
    for n, st in r.stats.items():
        if n != "plain":
            parts.append(
                f"| {n}: p50 {st['p50'] / base['p50']:.2f}x p99 {st['p99'] / base['p99']:.2f}x "
                f"rps {st['rps'] / base['rps']:.2f}x"
            )
    return " ".join(parts)


# ---- agent traffic shapes (issue 11): what agents send, side by side with a naive peer ----------
#
# Real agents send a different body every turn: the previous history plus one round, and
# many conversations at once. Every shape below goes through five mitmdumps in one run,
# batches interleaved: plain, the naive peer, the bridge in rewrite mode, in observe mode
# (the default), and observe mode with records on.

AGENT_UA = b"claude-cli/2.1.332 (external, cli)"  # Claude Code: the bridge knows whose words count
CODEX_UA = b"codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"  # Codex over WebSocket

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

# Plain mitmdump with the planner listener speaking prior-knowledge HTTP/2, and nothing else.
H2C_ADDON = """
import sys
sys.path.insert(0, {addons!r})
from mitmproxy.proxy import mode_specs
from native_bridge.planner_hop.h2c import H2CListener

h2c = H2CListener()
h2c.specs = frozenset({{mode_specs.ProxyMode.parse({spec!r}).full_spec}})
addons = [h2c]
"""


def _agent_out(size: int) -> tuple[int, int]:
    """Tool output sizes that let a 40-turn conversation stay near ``size``."""
    return (60, 240) if size < 50_000 else (1000, 5000)


class AgentConversation:
    """A Claude Code session over Chat Completions of Bash and Read rounds: turn t is the
    history after ``first + t`` rounds, so each request is the previous one plus one round."""

    def __init__(self, size: int, seed: int, turns: int) -> None:
        self.s = Session("chat", 1, seed, tools=("bash", "read"), out=_agent_out(size))
        # the middle turn is about ``size``
        mid = 1
        while len(self.s.body(mid)) < size:
            mid = max(mid + 1, int(mid * size / max(len(self.s.body(mid)), 1)))
        self.first = max(1, mid - turns // 2)

    def body(self, turn: int) -> bytes:
        return self.s.body(self.first + turn)


@dataclass(slots=True)
class Shape:
    label: str
    size: int
    kind: str  # same | loop | new
    clients: int
    per_client: int  # requests per client per batch
    reps: int
    records: bool = False  # also through observe + records on
    state: bool = False  # also through observe with bridge_state (read before the request goes on)

    def batch(self, rep: int) -> list[list[bytes]]:
        out = []
        for c in range(self.clients):
            if self.kind == "same":  # one conversation per client, the same body again and again
                conv = AgentConversation(self.size, 500 + c, 2)
                out.append([conv.body(1)] * self.per_client)
            elif self.kind == "loop":  # a new conversation each batch, turn after turn
                conv = AgentConversation(self.size, 1000 * rep + 600 + c, self.per_client)
                out.append([conv.body(t) for t in range(self.per_client)])
            else:  # every request a conversation never seen before
                base = AgentConversation(self.size, 700 + c, 2).body(1)
                out.append([_retag(base, f"[{self.label} {c}.{rep}.{i}] ") for i in range(self.per_client)])
        return out


SHAPES = [
    Shape("10 KB same body", 10_000, "same", 1, 40, 5),
    Shape("10 KB agent loop", 10_000, "loop", 1, 40, 5),
    Shape("10 KB new conversations", 10_000, "new", 1, 40, 5),
    Shape("200 KB same body", 200_000, "same", 1, 30, 5),
    Shape("200 KB agent loop", 200_000, "loop", 1, 40, 5, records=True, state=True),
    Shape("200 KB new conversations", 200_000, "new", 1, 30, 5),
    Shape("200 KB 8 conversations", 200_000, "loop", 8, 10, 3),
    Shape("2 MB same body", 2_000_000, "same", 1, 10, 3),
    Shape("2 MB agent loop", 2_000_000, "loop", 1, 40, 3, state=True),
    Shape("2 MB new conversations", 2_000_000, "new", 1, 10, 3),
    Shape("10 MB agent loop", 10_000_000, "loop", 1, 20, 3, state=True),
]
SHAPES_QUICK = [Shape("200 KB agent loop", 200_000, "loop", 1, 10, 2)]
SHAPE_PROXIES = ("plain", "naive", "rewrite", "observe", "observe+records", "observe+state")


@dataclass(slots=True)
class ShapeRow:
    shape: Shape
    stats: dict[str, dict[str, float]]  # proxy -> p50, p99 (s), rps


def _shape_proxies(upstream: str, tmp: Path, quick: bool) -> dict[str, Any]:
    bridge = str(ROOT / "addons" / "bridge.py")
    naive = tmp / "naive_addon.py"
    naive.write_text(NAIVE_ADDON)
    proxies = {
        "plain": _proxy(upstream, None, None, tmp / "p1"),
        "naive": _proxy(upstream, str(naive), None, tmp / "p2"),
        "rewrite": _proxy(upstream, bridge, None, tmp / "p3", ("--set", "bridge_mode=rewrite")),
        "observe": _proxy(upstream, bridge, None, tmp / "p4", ("--set", "bridge_mode=observe")),
        "observe+records": _proxy(upstream, bridge, tmp / "records", tmp / "p5", ("--set", "bridge_mode=observe")),
        # The documented both-hops setup: the reading is stored before the request goes on.
        "observe+state": _proxy(
            upstream, bridge, None, tmp / "p6", ("--set", "bridge_mode=observe", "--set", f"bridge_state={tmp}/st.db")
        ),
    }
    if quick:
        del proxies["observe+records"], proxies["observe+state"]
    return proxies


def shapes(quick: bool, log: Callable[[str], None], plan: Sequence[Shape] | None = None) -> list[ShapeRow]:
    """Every traffic shape through every proxy, batches interleaved (rotating order)."""
    plan = plan or (SHAPES_QUICK if quick else SHAPES)
    rows = []
    with Planner() as planner, tempfile.TemporaryDirectory(prefix="bridge-shapes-") as tmp:
        proxies = _shape_proxies(planner.url, Path(tmp), quick)
        for p in proxies.values():
            p.start()
        try:
            for shape in plan:
                names = [
                    n
                    for n in proxies
                    if (shape.records or n != "observe+records") and (shape.state or n != "observe+state")
                ]
                warm = Workload(shape.size, shape.clients, bodies=[b[:1] for b in shape.batch(10_000)])
                for n in names:  # connections, imports and caches warmed before measuring
                    _batch(proxies[n].url, warm, AGENT_UA)
                lat: dict[str, list[float]] = {n: [] for n in names}
                rps: dict[str, list[float]] = {n: [] for n in names}
                for r in range(shape.reps):
                    w = Workload(shape.size, shape.clients, bodies=shape.batch(r))
                    for n in names[r % len(names) :] + names[: r % len(names)]:
                        got, per_s = _batch(proxies[n].url, w, AGENT_UA)
                        lat[n] += got
                        rps[n].append(per_s)
                        if n == "observe+records":
                            _drain(Path(tmp) / "records")
                    del w
                stats = {n: {"p50": _median(lat[n]), "p99": _p(lat[n], 0.99), "rps": _median(rps[n])} for n in names}
                rows.append(ShapeRow(shape, stats))
                log(_shape_line(rows[-1]))
        finally:
            for p in proxies.values():
                p.stop()
    return rows


def _shape_line(r: ShapeRow) -> str:
    base = r.stats["plain"]
    parts = [f"  {r.shape.label:26} plain p50 {base['p50'] * 1e3:7.2f} ms {base['rps']:5.0f}/s"]
    for n, st in r.stats.items():
        if n != "plain":
            parts.append(f"| {n} {st['p50'] / base['p50']:.2f}x")
    if r.shape.clients > 1:
        parts.append("| rps " + " ".join(f"{n} {st['rps'] / base['rps']:.2f}x" for n, st in r.stats.items()))
    return " ".join(parts)


# ---- a 32 MB cold body while small requests run; memory ------------------------------------


def _rss_tree(pid: int) -> int:
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


class _PeakRSS:
    """The peak growth of a process tree's resident memory while the ``with`` block runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.growth, self._stop = pid, 0, threading.Event()

    def __enter__(self) -> _PeakRSS:
        self.base = _rss_tree(self.pid)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.growth = max(self.growth, _rss_tree(self.pid) - self.base)
            time.sleep(0.005)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass(slots=True)
class StallRow:
    proxy: str
    big: int  # body bytes
    big_s: float  # median seconds of the big request
    p99_alone: float
    p99_during: float
    worst_during: float
    n_during: int
    mem_peak: float  # peak RSS growth of the proxy (and its children) / body size


def stall(quick: bool, log: Callable[[str], None], size: int = 32_000_000) -> list[StallRow]:
    """p99 of small requests alone, then while a cold body of ``size`` is bridged (three times,
    each a new conversation); peak RSS growth of each proxy over the whole time."""
    if quick:
        size = 4_000_000
    small = AgentConversation(10_000, 42, 2).body(1)
    conv = AgentConversation(size, 43, 2)
    big = conv.body(1)
    bigs = [_retag(big, f"[big {i}] ") for i in range(3)]
    warm_big = AgentConversation(600_000, 44, 2).body(1)
    rows = []
    with Planner() as planner, tempfile.TemporaryDirectory(prefix="bridge-stall-") as tmp:
        bridge = str(ROOT / "addons" / "bridge.py")
        naive = Path(tmp) / "naive_addon.py"
        naive.write_text(NAIVE_ADDON)
        specs = {
            "plain": (None, ()),
            "naive": (str(naive), ()),
            "rewrite": (bridge, ("--set", "bridge_mode=rewrite")),
            "observe": (bridge, ("--set", "bridge_mode=observe")),
            # Codex's Responses over WebSocket: the large history as one response.create frame.
            "ws plain": (None, ()),
            "ws rewrite": (bridge, ("--set", "bridge_mode=rewrite")),
            "ws observe": (bridge, ("--set", "bridge_mode=observe")),
        }
        ws_bigs = [_ws_frame(b) for b in _responses_bigs(size)]
        for name, (addon, opts) in specs.items():
            proxy = _proxy(planner.url, addon, None, Path(tmp) / name, opts)
            proxy.start()
            try:
                pid = proxy._proc.pid
                # Warm-up: small requests, and one large body (the bridge starts its worker process
                # for it: a fixed cost, in the baseline like every other process start-up cost).
                _batch(proxy.url, Workload(10_000, 1, bodies=[[small] * 20, [warm_big]]), AGENT_UA)
                alone = _small_for(proxy.url, small, 3.0 if not quick else 1.0)
                peak = _PeakRSS(pid)
                frames = name.startswith("ws ")
                with peak:
                    during, big_times = _small_during_big(
                        proxy.url, small, ws_bigs if frames else bigs, _ws_send if frames else _http_send
                    )
                rows.append(
                    StallRow(
                        name,
                        len(ws_bigs[0] if frames else big),
                        _median(big_times),
                        _p(alone, 0.99),
                        _p(during, 0.99),
                        max(during) if during else float("nan"),
                        len(during),
                        peak.growth / len(big),
                    )
                )
                log(_stall_line(rows[-1]))
            finally:
                proxy.stop()
    return rows


@dataclass(slots=True)
class LoopMemRow:
    size: int  # the conversation's middle body
    turns: int
    growth: dict[str, int]  # proxy -> peak RSS over the turns after the first, beyond its idle RSS


LOOP_MEM_PROXIES = {
    "plain": (False, ()),
    "observe": (True, ("--set", "bridge_mode=observe")),
    "observe+state": (True, ("--set", "bridge_mode=observe")),  # bridge_state added per run
    "rewrite": (True, ("--set", "bridge_mode=rewrite")),
}


def loop_memory(quick: bool, log: Callable[[str], None]) -> list[LoopMemRow]:
    """Peak memory in the agent loop: one conversation, each request the previous one plus a
    round. A proxy's figure is its process tree's peak RSS over the turns after the first, less
    its idle RSS before the conversation (after a warm-up that starts the bridge's worker): what
    the conversation costs it, the body it keeps between turns included. The first turn is a
    first sight (the worker reads it; the stall section measures that) and is left out."""
    plan = ((2_000_000, 4),) if quick else ((2_000_000, 20), (30_000_000, 6))
    small = AgentConversation(10_000, 42, 2).body(1)
    warm_big = AgentConversation(600_000, 44, 2).body(1)
    rows = []
    with Planner() as planner, tempfile.TemporaryDirectory(prefix="bridge-loopmem-") as tmp:
        bridge = str(ROOT / "addons" / "bridge.py")
        for size, turns in plan:
            conv = AgentConversation(size, 46, turns)
            bodies = [conv.body(t) for t in range(turns)]
            growth = {}
            for name, (bridged, opts) in LOOP_MEM_PROXIES.items():
                if name == "observe+state":
                    opts = (*opts, "--set", f"bridge_state={tmp}/{size}.db")
                proxy = _proxy(planner.url, bridge if bridged else None, None, Path(tmp) / f"{name}-{size}", opts)
                proxy.start()
                try:
                    _batch(proxy.url, Workload(10_000, 1, bodies=[[small] * 10, [warm_big]]), AGENT_UA)
                    time.sleep(0.5)
                    base = _rss_tree(proxy._proc.pid)
                    _batch(proxy.url, Workload(size, 1, bodies=[bodies[:1]]), AGENT_UA)
                    peak = _PeakRSS(proxy._proc.pid)
                    with peak:
                        peak.base = base
                        _batch(proxy.url, Workload(size, 1, bodies=[bodies[1:]]), AGENT_UA)
                    growth[name] = peak.growth
                finally:
                    proxy.stop()
            rows.append(LoopMemRow(len(bodies[turns // 2]), turns, growth))
            log(_loop_mem_line(rows[-1]))
    return rows


def _loop_mem_line(r: LoopMemRow) -> str:
    parts = [f"  {_size(r.size):>7} agent loop, {r.turns} turns: peak RSS growth"]
    parts += [f"{n} {g / r.size:.2f}x" for n, g in r.growth.items()]
    return " | ".join(parts)


def _small_for(url: str, body: bytes, seconds: float) -> list[float]:
    out: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        got, _ = _batch(url, Workload(len(body), 1, bodies=[[body] * 20]), AGENT_UA)
        out += got
    return out


def _responses_bigs(size: int) -> list[bytes]:
    """Three Responses histories of about ``size`` bytes (three conversations never seen)."""
    s = Session("responses", 1, seed=45, tools=("bash", "read"), out=(1000, 5000))
    rounds = 1
    while len(s.body(rounds)) < size:
        rounds = max(rounds + 1, int(rounds * size / max(len(s.body(rounds)), 1)))
    doc = s.doc(rounds)
    return [orjson.dumps({**doc, "instructions": f"[big {i}] {doc.get('instructions', '')}"}) for i in range(3)]


def _ws_frame(body: bytes) -> bytes:
    return orjson.dumps({"type": "response.create", **orjson.loads(body)})


def _http_send(url: str, body: bytes) -> float:
    got, _ = _batch(url, Workload(len(body), 1, bodies=[[body]]), AGENT_UA)
    return got[0]


def _ws_send(url: str, frame: bytes) -> float:
    """One response.create frame over a new WebSocket on /v1/responses, until the reply frame."""
    import socket

    host, port = url.removeprefix("http://").split(":")
    ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        headers = [(b"user-agent", CODEX_UA)]
        sock.sendall(ws.send(wsevents.Request(host=f"{host}:{port}", target="/v1/responses", extra_headers=headers)))
        t0 = None
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise RuntimeError("the proxy closed the WebSocket")
            ws.receive_data(data)
            for e in ws.events():
                if isinstance(e, wsevents.AcceptConnection):
                    t0 = time.perf_counter()
                    sock.sendall(ws.send(wsevents.Message(data=frame.decode())))
                elif isinstance(e, wsevents.TextMessage) and e.message_finished and t0 is not None:
                    took = time.perf_counter() - t0
                    sock.sendall(ws.send(wsevents.CloseConnection(code=1000)))
                    return took


def _small_during_big(
    url: str, small: bytes, bigs: list[bytes], send: Callable[[str, bytes], float] = _http_send
) -> tuple[list[float], list[float]]:
    """Small requests back to back on one connection while the big ones go, one after another,
    on another (its own thread and event loop); only the small requests that overlap count."""
    big_times: list[float] = []
    windows: list[tuple[float, float]] = []
    done = threading.Event()

    def big_sender() -> None:
        try:
            for b in bigs:
                t0 = time.perf_counter()
                big_times.append(send(url, b))
                windows.append((t0, time.perf_counter()))
                time.sleep(0.3)
        finally:
            done.set()

    stamped: list[tuple[float, float]] = []  # (start, latency)

    async def smalls() -> None:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        req = (
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: planner\r\ncontent-type: application/json\r\n"
            b"user-agent: %s\r\ncontent-length: %d\r\n\r\n" % (AGENT_UA, len(small))
        ) + small
        try:
            while not done.is_set():
                t0 = time.perf_counter()
                writer.write(req)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                stamped.append((t0, time.perf_counter() - t0))
        finally:
            writer.close()

    t = threading.Thread(target=big_sender)
    t.start()
    asyncio.run(smalls())
    t.join()
    during = [lat for t0, lat in stamped if any(a <= t0 + lat and t0 <= b for a, b in windows)]
    return during, big_times


def _stall_line(r: StallRow) -> str:
    return (
        f"  {r.proxy:10} {_size(r.big)} body {r.big_s:6.2f} s | small requests p99 alone {r.p99_alone * 1e3:6.1f} ms, "
        f"during {r.p99_during * 1e3:6.1f} ms (worst {r.worst_during * 1e3:6.1f} ms, n={r.n_during}) | "
        f"peak RSS +{r.mem_peak:.2f}x body"
    )


# ---- the planner hop: SendUserCascadeMessage through mitmdump's HTTP/2 listener ---------------


class _LanguageServer:
    """grpcio server answering every call with an empty message (the planner stand-in)."""

    def __enter__(self) -> _LanguageServer:
        from concurrent import futures

        import grpc

        class Generic(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                return grpc.unary_unary_rpc_method_handler(lambda request, context: b"")

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers([Generic()])
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None).wait(5)


@dataclass(slots=True)
class PlannerRow:
    label: str
    size: int
    stats: dict[str, dict[str, float]]


def planner_hop(quick: bool, log: Callable[[str], None]) -> list[PlannerRow]:
    """grpcio client -> mitmdump (h2c listener) -> grpcio server: plain against the bridge."""
    import socket

    import grpc
    from support.mitmdump import mitmdump_path

    n_steps = 50  # about 200 KB
    reps, per = (2, 8) if quick else (5, 20)
    rows = []
    with _LanguageServer() as ls, tempfile.TemporaryDirectory(prefix="bridge-planner-") as tmp:
        proxies: dict[str, Any] = {}
        for name in ("plain", "bridge"):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            spec = f"reverse:http://127.0.0.1:{ls.port}@{port}"
            args = [mitmdump_path(), "--mode", spec, "--listen-host", "127.0.0.1"]
            args += ["--set", f"confdir={Path(tmp) / name}", "--set", "flow_detail=0"]
            if name == "plain":
                script = Path(tmp) / "h2c_addon.py"
                script.write_text(H2C_ADDON.format(addons=str(ROOT / "addons"), spec=spec))
                args += ["-s", str(script)]
            else:
                args += ["-s", str(ROOT / "addons" / "bridge.py"), "--set", f"bridge_planner={spec}"]
            proxy = _logged_mitmdump()("http://unused", Path(tmp) / name, Path(tmp) / name)
            proxy.args = args
            proxy.start()
            proxies[name] = (proxy, port)
        channels = {n: grpc.insecure_channel(f"127.0.0.1:{port}") for n, (_, port) in proxies.items()}
        try:
            stubs = {
                n: ch.unary_unary(SEND_PATH, request_serializer=None, response_deserializer=None)
                for n, ch in channels.items()
            }
            warm = CascadeBodies(1).message("warm", 3)
            for stub in stubs.values():
                for _ in range(3):
                    stub(warm, timeout=30)
            names = list(stubs)
            for label in ("first turn (new cascade)", "resumed turn (same cascade, one more step)"):
                lat: dict[str, list[float]] = {n: [] for n in names}
                size = 0
                for r in range(reps):
                    src = CascadeBodies(100 + r)
                    if label.startswith("first"):
                        src2 = [CascadeBodies(1000 * r + i) for i in range(per)]
                        bodies = [b.message(f"cascade-{r}-{i}", n_steps) for i, b in enumerate(src2)]
                    else:
                        bodies = [src.message(f"resumed-{r}", n_steps - per // 2 + i) for i in range(per)]
                    size = len(bodies[len(bodies) // 2])
                    for n in names[r % len(names) :] + names[: r % len(names)]:
                        for b in bodies:
                            t0 = time.perf_counter()
                            stubs[n](b, timeout=30)
                            lat[n].append(time.perf_counter() - t0)
                stats = {n: {"p50": _median(lat[n]), "p99": _p(lat[n], 0.99)} for n in names}
                rows.append(PlannerRow(label, size, stats))
                base = stats["plain"]
                log(
                    f"  {label:44} {_size(size)}  plain p50 {base['p50'] * 1e3:6.2f} ms | bridge "
                    f"{stats['bridge']['p50'] / base['p50']:.2f}x (p99 {stats['bridge']['p99'] / base['p99']:.2f}x)"
                )
        finally:
            for ch in channels.values():
                ch.close()
            for proxy, _ in proxies.values():
                proxy.stop()
    return rows


# ---- targets, report, command line -------------------------------------------------------


@dataclass(slots=True)
class Target:
    name: str
    measured: str
    ok: bool | None  # None: informational


def _worst(rows: Sequence[CoreRow], attr: str) -> CoreRow:
    return max(rows, key=lambda r: getattr(r, attr) / r.floor)


def targets(
    sized: Sequence[CoreRow],
    series: Sequence[CoreRow],
    nohist: Sequence[tuple[int, float, float]],
    e2e_rows: Sequence[E2ERow],
    golden: list[str] | None,
    quick: bool,
    shape_rows: Sequence[ShapeRow] = (),
    stall_rows: Sequence[StallRow] = (),
    planner_rows: Sequence[PlannerRow] = (),
    loop_mem_rows: Sequence[LoopMemRow] = (),
) -> list[Target]:
    out: list[Target] = []

    def add(name: str, measured: str, ok: bool | None) -> None:
        out.append(Target(name, measured, ok))

    # Quick mode (CI) fails only on gross regressions: noise must never turn CI red.
    # The worst resumed row (Responses, four calls a round) is 2.4-2.6x on an idle machine; a memo that
    # no longer resumes gives its first-sight 7x. 4.5x catches that and not a noisy moment.
    core_limit, cold_limit = (4.5, 15.0) if quick else (1.3, None)
    for label, lo, hi in (("200 KB", 0, 1_000_000), ("2 MB", 1_000_000, 10**9)):
        rows = [r for r in sized if lo <= r.size < hi]
        if not rows:
            continue
        w, c = _worst(rows, "warm"), _worst(rows, "cold")
        warm, cold = w.warm / w.floor, c.cold / c.floor
        add(
            f"core rewrite <= {core_limit}x floor at {label} (resumed conversation)",
            f"{warm:.2f}x ({w.dialect}, {w.parallel} per round)",
            warm <= core_limit,
        )
        add(
            f"core rewrite at {label}, first sight of the conversation",
            f"{cold:.2f}x ({c.dialect}, {c.parallel} per round)",
            None if cold_limit is None else cold <= cold_limit,
        )
    big = [r for r in series if r.rounds >= 100]
    if len({r.size for r in big}) > 2:
        # At tens of MB even parse+serialize grows faster than the size (caches, allocator):
        # linear here means close to 1, and no steeper than the floor itself.
        keys = {(r.dialect, r.parallel) for r in big}
        floor_exp = max(exponent([r for r in big if (r.dialect, r.parallel) == k], "floor") for k in keys)
        limit = max(1.1, floor_exp + 0.1)
        for attr, label in (("warm", "resumed"), ("cold", "first sight")):
            worst = max(exponent([r for r in big if (r.dialect, r.parallel) == k], attr) for k in keys)
            add(
                f"linear scaling, {label} (time ~ size^e, e <= {limit:.2f}: the floor's + 0.1)",
                f"e = {worst:.2f} (floor {floor_exp:.2f})",
                worst <= limit,
            )
    mem = [r for r in sized if r.mem_warm is not None]
    if mem:
        w = max(mem, key=lambda r: r.mem_warm or 0)
        c = max(mem, key=lambda r: r.mem_cold or 0)
        add("peak memory per rewrite <= 3x body (resumed)", f"{w.mem_warm:.2f}x", (w.mem_warm or 0) <= 3)
        add(
            "peak memory per rewrite, first sight (floor: parse + serialize alone)",
            f"{c.mem_cold:.2f}x (floor {c.mem_floor:.2f}x)",
            (c.mem_cold or 0) <= 8 if quick else None,
        )
    for size, floor, cost in nohist:
        # Proving that a body has no tool history is a byte scan (no parse): far below the
        # floor for big bodies, about the floor for tiny ones (orjson parses 12 KB in ~10 us).
        add(
            f"no tool history: core cost ({_size(size)}; a scan, no parse)",
            f"{cost * 1e6:.0f} us = {cost / floor:.2f}x floor",
            (cost / floor <= 2.0) if quick else None,
        )
    for r in e2e_rows:
        plain, bridge = r.stats["plain"], r.stats["bridge"]
        null = r.stats.get("null addon")  # what mitmproxy charges any addon that rewrites a body
        p50 = bridge["p50"] / plain["p50"]
        limit = 3.0 if quick else {"10 KB": 1.1, "200 KB": 1.3, "2 MB": 2.0, "200 KB no history": 1.1}.get(r.label)
        who = f"{r.label}, {r.clients} client{'s' if r.clients > 1 else ''}"
        measured = f"{p50:.2f}x" + (f" (null addon {null['p50'] / plain['p50']:.2f}x)" if null else "")
        add(
            f"mitmdump p50 with bridge{'' if limit is None else f' <= {limit}x'} plain ({who})",
            measured,
            None if limit is None else p50 <= limit,
        )
        if r.label == "200 KB" and r.clients > 1:
            rps = bridge["rps"] / plain["rps"]
            measured = f"{rps:.2f}x" + (f" (null addon {null['rps'] / plain['rps']:.2f}x)" if null else "")
            add(f"mitmdump throughput with bridge >= 0.75x plain ({who})", measured, rps >= 0.75)
        if "bridge+records" in r.stats:
            rec = r.stats["bridge+records"]["p50"] / bridge["p50"]
            add(f"records off the critical path: p50 records on <= 1.05x off ({who})", f"{rec:.2f}x", rec <= 1.05)
    _shape_targets(shape_rows, stall_rows, planner_rows, quick, add, loop_mem_rows)
    if golden is not None:
        differ = f"{len(golden)} differ: {golden[:3]}"
        add(
            "output identical to the reference paths (memo off, protobuf encoder)",
            differ if golden else "identical",
            not golden,
        )
    return out


# Issue 11's limits: p50 with the bridge / p50 of plain mitmdump, per shape.
SHAPE_LIMITS = {
    "10 KB same body": 1.15,
    "10 KB agent loop": 1.15,
    "10 KB new conversations": 1.15,
    "200 KB new conversations": 1.35,
}
# Issue 20's: the agent loop in observe mode (with and without bridge_state); rewriting, ahead of
# the naive peer.
LOOP_LIMITS = {"200 KB agent loop": 1.25, "2 MB agent loop": 1.15, "10 MB agent loop": 1.1}


def _shape_targets(
    shape_rows: Sequence[ShapeRow],
    stall_rows: Sequence[StallRow],
    planner_rows: Sequence[PlannerRow],
    quick: bool,
    add: Callable[[str, str, bool | None], None],
    loop_mem_rows: Sequence[LoopMemRow] = (),
) -> None:
    for r in shape_rows:
        st, label = r.stats, r.shape.label
        plain = st["plain"]["p50"]
        loop = LOOP_LIMITS.get(label)
        for mode in ("observe", "observe+state", "rewrite"):
            if mode not in st:
                continue
            by_limit = loop is not None and mode != "rewrite"  # issue 20: a limit, no peer to beat
            limit = None if quick else loop if by_limit else SHAPE_LIMITS.get(label)
            ratio = st[mode]["p50"] / plain
            ahead = st[mode]["p50"] < st["naive"]["p50"]
            add(
                f"{label}: {mode} p50{'' if limit is None else f' <= {limit}x'} plain"
                + ("" if by_limit else ", ahead of the naive peer"),
                f"{ratio:.2f}x (naive {st['naive']['p50'] / plain:.2f}x)",
                None if quick else (limit is None or ratio <= limit) and (by_limit or ahead),
            )
        if r.shape.clients > 1:
            for mode in ("observe", "rewrite"):
                rps = st[mode]["rps"] / st["plain"]["rps"]
                add(
                    f"{label}: {mode} throughput >= 0.8x plain",
                    f"{rps:.2f}x (naive {st['naive']['rps'] / st['plain']['rps']:.2f}x)",
                    None if quick else rps >= 0.8,
                )
        if "observe+records" in st:
            rec = st["observe+records"]["p50"] / st["observe"]["p50"]
            add(f"{label}: records on <= 1.05x records off (p50)", f"{rec:.2f}x", None if quick else rec <= 1.05)
    plain = {r.proxy: r for r in stall_rows if r.proxy.removeprefix("ws ") == "plain"}
    plain_mem = {name: r.mem_peak for name, r in plain.items()}
    for r in stall_rows:
        ws = "ws " if r.proxy.startswith("ws ") else ""  # WebSocket rows are compared with plain's WebSocket row
        baseline = r.proxy.removeprefix("ws ") in ("plain", "naive")
        rise = r.p99_during - r.p99_alone
        measured = (
            f"+{rise * 1e3:.1f} ms (p99 {r.p99_alone * 1e3:.1f} -> {r.p99_during * 1e3:.1f} ms, "
            f"worst {r.worst_during * 1e3:.0f} ms; the body took {r.big_s:.2f} s)"
        )
        if ws and not baseline and "ws plain" in plain:
            # mitmproxy reads and re-sends a large WebSocket message on its loop itself (plain's own
            # rise): what the bridge may add to that is the target.
            ref = plain["ws plain"]
            beyond = rise - (ref.p99_during - ref.p99_alone)
            add(
                f"{_size(r.big)} cold frame through {r.proxy}: p99 of concurrent small requests rises < 20 ms "
                "beyond plain mitmdump's own",
                f"{beyond * 1e3:+.1f} ms beyond plain's {(ref.p99_during - ref.p99_alone) * 1e3:+.1f} ms; {measured}",
                None if quick else beyond < 0.020,
            )
        else:
            add(
                f"{_size(r.big)} cold body through {r.proxy}: p99 of concurrent small requests rises < 20 ms",
                measured,
                None if quick or baseline else rise < 0.020,
            )
        base_mem = plain_mem.get(ws + "plain", 0.0)
        extra = r.mem_peak - base_mem
        add(
            f"{_size(r.big)} cold bodies through {r.proxy}: peak memory beyond plain mitmdump's <= 3x the body",
            f"{extra:+.2f}x (the proxy's whole growth {r.mem_peak:.2f}x, plain's {base_mem:.2f}x)",
            None if quick or baseline else extra <= 3,
        )
    for m in loop_mem_rows:
        plain_growth = m.growth["plain"]
        for name, g in m.growth.items():
            if name == "plain":
                continue
            beyond = (g - plain_growth) / m.size
            limit = 1.0 if name.startswith("observe") else None  # issue 20: observe mode
            add(
                f"{_size(m.size)} agent loop through {name}: peak memory beyond plain mitmdump's"
                + ("" if limit is None else f" <= {limit:g}x the body"),
                f"{beyond:+.2f}x (growth {g / m.size:.2f}x, plain's {plain_growth / m.size:.2f}x)",
                None if quick or limit is None else beyond <= limit,
            )
    for r in planner_rows:
        ratio = r.stats["bridge"]["p50"] / r.stats["plain"]["p50"]
        add(
            f"planner hop, {r.label}, {_size(r.size)}: p50 <= 1.2x plain mitmdump (same h2c listener)",
            f"{ratio:.2f}x (plain {r.stats['plain']['p50'] * 1e3:.2f} ms)",
            None if quick else ratio <= 1.2,
        )


def _table(ts: Sequence[Target]) -> str:
    width = max(len(t.name) for t in ts)
    lines = []
    for t in ts:
        verdict = "info" if t.ok is None else "PASS" if t.ok else "FAIL"
        lines.append(f"  {verdict:4}  {t.name:{width}}  {t.measured}")
    return "\n".join(lines)


SECTIONS = ("golden", "core", "nohist", "shapes", "stall", "loopmem", "planner")


def run(quick: bool = False, only: Sequence[str] = SECTIONS, log: Callable[[str], None] = print) -> list[Target]:
    t0 = time.perf_counter()
    golden = series = sized = nohist = e2e_rows = None
    shape_rows: list[ShapeRow] = []
    stall_rows: list[StallRow] = []
    planner_rows: list[PlannerRow] = []
    loop_mem_rows: list[LoopMemRow] = []
    if "golden" in only:
        log("golden: fast paths against reference paths")
        golden = golden_check(quick)
        log(f"  {golden or 'identical'}")
    if "core" in only:
        log("core: rewrite() against orjson loads+dumps of the same body (cold: first sight; warm: resumed)")
        sized = core_at_sizes((200_000,) if quick else (200_000, 2_000_000), quick, log)
        series = [] if quick else core(quick, log)
    if "nohist" in only:
        log("no tool history:")
        nohist = no_history((200_000,) if quick else (10_000, 200_000, 2_000_000), quick, log)
    if "e2e" in only:
        log("end to end: mitmdump --mode reverse, plain against -s addons/bridge.py, same local planner")
        e2e_rows = e2e(quick, log)
    if "shapes" in only:
        log("traffic shapes: mitmdump plain / naive peer / bridge rewrite / observe / observe+records, p50 vs plain")
        shape_rows = shapes(quick, log)
    if "stall" in only:
        log("a cold body bridged while small requests run (p99), and peak memory")
        stall_rows = stall(quick, log)
    if "loopmem" in only:
        log("peak memory in the agent loop (turns after the first), beyond each proxy's idle memory")
        loop_mem_rows = loop_memory(quick, log)
    if "planner" in only:
        log("planner hop: grpcio -> mitmdump (h2c listener) -> grpcio, plain against -s addons/bridge.py")
        planner_rows = planner_hop(quick, log)
    ts = targets(
        sized or [],
        series or [],
        nohist or [],
        e2e_rows or [],
        golden,
        quick,
        shape_rows,
        stall_rows,
        planner_rows,
        loop_mem_rows,
    )
    log(f"\ntargets ({'quick: gross regressions only' if quick else 'full'}; {time.perf_counter() - t0:.0f} s)")
    log(_table(ts))
    return ts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="seconds, not minutes: the CI smoke; fails only on gross regressions"
    )
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help="comma-separated sections (also: e2e, the older mitmdump cases)"
    )
    parser.add_argument("--golden-save", type=Path, help="write the digests of every golden case to this file")
    parser.add_argument("--golden-check", type=Path, help="compare the digests of every golden case with this file")
    parser.add_argument(
        "--no-client-hint", action="store_true", help="core: rewrite as for an unidentified client (no User-Agent)"
    )
    parser.add_argument("--serve-planner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    global USE_HINTS
    USE_HINTS = not args.no_client_hint
    if args.serve_planner:
        asyncio.run(_serve_planner(sys.stdout))
        return 0
    if args.golden_save or args.golden_check:
        digests = golden_digests()
        if args.golden_save:
            args.golden_save.write_text(json.dumps(digests, indent=0, sort_keys=True))
            print(f"wrote {len(digests)} digests to {args.golden_save}")
            return 0
        saved = json.loads(args.golden_check.read_text())
        diff = sorted(k for k in saved if saved[k] != digests.get(k))
        print(f"{len(saved)} cases, {len(diff)} differ" + (f": {', '.join(diff)}" if diff else ""))
        return 1 if diff else 0
    ts = run(args.quick, [s.strip() for s in args.only.split(",") if s.strip()])
    return 1 if any(t.ok is False for t in ts) else 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
