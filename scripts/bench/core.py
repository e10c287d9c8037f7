"""core and nohist: rewrite() in process against the floor (orjson loads + dumps of the same body).

Generated agent histories (3 dialects; single calls and 4 parallel mixed calls per round;
10..10,000 rounds; outputs 1-5 KB), cold (first sight of the history) and warm (the
conversation's previous turn was rewritten before: the steady state of an agent session);
peak live memory per rewrite (tracemalloc) as a multiple of the body size; the scaling
exponent; and requests with no tool history.
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from native_bridge.core.pipeline import rewrite
from support.histories import DIALECT_PATHS
from support.histories.agent import CLIENT_HINTS, Session, no_history_doc, session_for_size

from .timing import interleave, median, size_label

rewrite_mod = sys.modules["native_bridge.core.pipeline"]  # the module (the package exports the function)

# With the User-Agent of the client each generated dialect imitates (support.histories.agent.CLIENT_HINTS)
# the client is known before parsing and the memo resumes from raw bytes (core, memory).
# ``--no-client-hint`` measures the core as for an unidentified client.
USE_HINTS = True


def _hint(dialect: str) -> str | None:
    return CLIENT_HINTS[dialect] if USE_HINTS else None


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
    from native_bridge.core.memo.store import Memo

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
                    CoreRow(dialect, parallel, rounds, len(cur), *(median(t[k]) for k in ("floor", "cold", "warm")))
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
                row = CoreRow(dialect, parallel, rounds, len(cur), *(median(t[k]) for k in ("floor", "cold", "warm")))
                row.mem_floor, row.mem_cold, row.mem_warm = memory(dialect, s, rounds)
                rows.append(row)
                log(_core_line(row))
    return rows


def _core_line(r: CoreRow) -> str:
    mem = f"  mem x{r.mem_cold:.2f}/x{r.mem_warm:.2f} (floor x{r.mem_floor:.2f})" if r.mem_cold is not None else ""
    return (
        f"  {r.dialect:9} {'single' if r.parallel == 1 else f'{r.parallel} parallel':10} {r.rounds:>6} rounds "
        f"{size_label(r.size):>8}  floor {r.floor * 1e3:8.2f} ms  "
        f"cold {r.cold / r.floor:5.2f}x  warm {r.warm / r.floor:5.2f}x{mem}"
    )


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
    from native_bridge.core.memo import light as memo_light
    from native_bridge.core.memo import resume as memo_resume
    from native_bridge.core.memo.store import Memo

    path = DIALECT_PATHS[dialect]
    cur, prev = s.body(rounds), s.body(rounds - 1)
    mods = [rewrite_mod, memo_light, memo_resume]  # the modules that call orjson

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


@dataclass(slots=True)
class BreadthRow:
    size: int
    others: int  # conversations of the same client in the memo beside the one resumed
    alone: float  # seconds, medians
    among: float


def breadth(sizes: Sequence[int], quick: bool, log: Callable[[str], None]) -> list[BreadthRow]:
    """A resumed turn (observe mode: a light memo; chat, the client named) with its conversation
    alone in the memo and among a full memo's worth of other conversations of the same client
    (one system prompt, one first task, so the search cannot tell them apart by their start):
    what finding the entry costs per conversation the proxy holds."""
    import random

    from native_bridge.core.memo.store import MAX_ENTRIES, Memo

    path, hint = DIALECT_PATHS["chat"], _hint("chat")
    rows = []
    for size in sizes:
        out = (60, 240) if size < 50_000 else (1000, 5000)  # the agent loop's outputs at that size
        s, rounds = Session("chat", 1, seed=7, out=out), 1
        while len(s.body(rounds)) < size:
            rounds += 1
        cur, prev = s.body(rounds), s.body(rounds - 1) if rounds > 1 else None
        alone, among = Memo(light=True), Memo(light=True)
        rng = random.Random(3)
        for i in range(MAX_ENTRIES - 1):  # other lengths, so their marks end before and after the cut
            other = Session("chat", 1, seed=100 + i, out=out)
            rewrite(
                other.body(rng.randrange(max(1, rounds // 2), rounds + 10)),
                path=path,
                memo=among,
                client_hint=hint,
                emit=False,
            )
        for m in (alone, among):
            rewrite(prev or cur, path=path, memo=m, client_hint=hint, emit=False)

        def resumed(primed: Any, body: bytes = cur) -> Callable[[], float]:
            def run() -> float:
                m = primed.copy()
                t0 = time.perf_counter()
                rewrite(body, path=path, memo=m, client_hint=hint, emit=False)
                return time.perf_counter() - t0

            return run

        t = interleave({"alone": resumed(alone), "among": resumed(among)}, 20 if quick else 80)
        rows.append(BreadthRow(len(cur), len(among) - 1, median(t["alone"]), median(t["among"])))
        r = rows[-1]
        log(
            f"  resumed {size_label(r.size):>8} turn: alone {r.alone * 1e6:.0f} us, among {r.others} other "
            f"conversations {r.among * 1e6:.0f} us ({r.among / r.alone:.2f}x)"
        )
    return rows


def no_history(sizes: Sequence[int], quick: bool, log: Callable[[str], None]) -> list[tuple[int, float, float]]:
    """(size, floor, rewrite) of requests with no tool history (a first turn, a title request)."""
    from native_bridge.core.memo.store import Memo

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
        out.append((len(raw), median(t["floor"]), median(t["rewrite"])))
        log(
            f"  no tool history {size_label(len(raw)):>8}: floor {out[-1][1] * 1e3:.3f} ms, "
            f"rewrite {out[-1][2] / out[-1][1]:.3f}x"
        )
    return out
