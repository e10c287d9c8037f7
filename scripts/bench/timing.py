"""Measuring: jobs timed side by side in rotating order, medians and percentiles."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def pct(xs: Sequence[float], q: float) -> float:
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


def size_label(n: float) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.0f} KB"
