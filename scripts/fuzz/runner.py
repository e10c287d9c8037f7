"""Running cases: in worker processes (forked), each case through the core and every Nth through the
addon, counted into a report; ``main`` is the command line (scripts/fuzz)."""

from __future__ import annotations

import argparse
import base64
import json
import logging
import math
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .addon import AddonHarness
from .cases import Case, make_case
from .encoding import TOO_DEEP
from .oracle import KNOWN, check_rewrite, known


@dataclass
class Outcome:
    index: int
    seconds: float
    status: str
    problems: list[str]
    mutations: list[str]
    dialect: str
    path: str | None


def run_case(case: Case, addon: AddonHarness | None) -> Outcome:
    t = time.perf_counter()
    problems, r = check_rewrite(case.raw, case.path, case.config, case.user_agent)
    if addon is not None:
        problems += addon.check(case)
    return Outcome(
        case.index,
        time.perf_counter() - t,
        r.status if r is not None else "raised",
        problems,
        case.mutations,
        case.dialect,
        case.path,
    )


def _case_outcome(seed: int, index: int, addon: AddonHarness | None) -> Outcome:
    """One case's outcome; a case the generator itself cannot build is a failure of the fuzzer, reported
    with its number like any other, never the end of the run."""
    try:
        case = make_case(seed, index)
    except Exception as e:
        problem = f"fuzzer: the case generator raised {type(e).__name__}: {e}"
        return Outcome(index, 0.0, "generator-error", [problem], [], "?", None)
    return run_case(case, addon)


def _worker(args: tuple[int, int, int, int]) -> list[Outcome]:
    seed, start, stop, addon_every = args
    logging.disable(logging.CRITICAL)  # the addon's fail-open lines; failures are counted here
    addon = AddonHarness() if addon_every else None
    try:
        return [
            _case_outcome(seed, i, addon if addon_every and i % addon_every == 0 else None) for i in range(start, stop)
        ]
    finally:
        if addon is not None:
            addon.close()


@dataclass
class Report:
    cases: int = 0
    addon_cases: int = 0
    seconds: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    failures: list[Outcome] = field(default_factory=list)  # new problems
    known: Counter[str] = field(default_factory=Counter)
    known_examples: dict[str, int] = field(default_factory=dict)
    slowest: list[tuple[float, int]] = field(default_factory=list)


def run(cases: int, seed: int = 0, workers: int = 1, addon_every: int = 4, start: int = 0) -> Report:
    rep = Report()
    t0 = time.perf_counter()
    chunk = 250
    jobs = [(seed, i, min(i + chunk, start + cases), addon_every) for i in range(start, start + cases, chunk)]
    if workers > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            results: Iterator[list[Outcome]] = pool.imap_unordered(_worker, jobs)
            _collect(rep, results, addon_every)
    else:
        _collect(rep, map(_worker, jobs), addon_every)
    rep.seconds = time.perf_counter() - t0
    rep.failures.sort(key=lambda o: o.index)
    rep.slowest.sort(reverse=True)
    rep.slowest = rep.slowest[:5]
    return rep


def _collect(rep: Report, results: Iterator[list[Outcome]], addon_every: int) -> None:
    for batch in results:
        for o in batch:
            rep.cases += 1
            rep.addon_cases += bool(addon_every and o.index % addon_every == 0)
            rep.statuses[o.status] += 1
            rep.mutations.update(o.mutations or ["none"])
            rep.slowest.append((o.seconds, o.index))
            if len(rep.slowest) > 50:
                rep.slowest.sort(reverse=True)
                del rep.slowest[5:]
            new = [p for p in o.problems if known(p) is None]
            for p in o.problems:
                if (k := known(p)) is not None:
                    rep.known[k] += 1
                    rep.known_examples.setdefault(k, o.index)
            if new:
                o.problems = new
                rep.failures.append(o)


def show(seed: int, index: int) -> None:
    case = make_case(seed, index)
    print(f"case {index} (seed {seed}): dialect {case.dialect}, path {case.path}, mutations {case.mutations}")
    print(f"user agent: {case.user_agent}")
    print(f"config: {case.config}")
    print(f"headers: {case.secrets}  query: {case.query!r}  encoding: {case.encoding}")
    preview = case.raw if len(case.raw) < 4000 else case.raw[:2000] + b" ... " + case.raw[-500:]
    print(f"body ({len(case.raw)} bytes): {preview!r}")
    addon = AddonHarness()
    try:
        o = run_case(case, addon)
    finally:
        addon.close()
    print(f"status {o.status} in {o.seconds:.3f}s")
    for p in o.problems:
        print(f"  - {p}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fuzz the bridge's core and addon with hostile request bodies, and check the truth rules."
    )
    parser.add_argument("--cases", type=int, default=10000, help="number of cases (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="run seed: the same seed gives the same cases")
    parser.add_argument("--start", type=int, default=0, help="first case number")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    parser.add_argument("--addon-every", type=int, default=4, help="every Nth case also through the addon (0: none)")
    parser.add_argument("--case", type=int, help="show one case in full (with --seed)")
    parser.add_argument("--show", action="store_true", help="with --case: print the body and every problem")
    parser.add_argument("--strict", action="store_true", help="count known open bugs as failures too")
    parser.add_argument("--save", type=Path, help="write each failing body to this directory")
    args = parser.parse_args(argv)
    if args.case is not None:
        show(args.seed, args.case)
        return 0
    rep = run(args.cases, args.seed, max(1, args.workers), args.addon_every, args.start)
    rate = rep.cases / rep.seconds if rep.seconds else math.inf
    print(
        f"fuzz: {rep.cases} cases ({rep.addon_cases} also through the addon) in {rep.seconds:.1f}s "
        f"({rate:.0f}/s, {args.workers} workers, seed {args.seed})"
    )
    print("  statuses:  " + ", ".join(f"{k} {v}" for k, v in sorted(rep.statuses.items())))
    print("  mutations: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.mutations.items())))
    print("  slowest:   " + ", ".join(f"case {i} {s:.2f}s" for s, i in rep.slowest))
    if rep.mutations[TOO_DEEP]:
        deep = rep.mutations[TOO_DEEP]
        print(f"  generator: {deep} cases nested past orjson's 254 levels (written by the fuzzer's own encoder)")
    for k, n in sorted(rep.known.items()):
        print(f"  known open bug ({n} cases, e.g. --case {rep.known_examples[k]}): {KNOWN[k]}")
    failed = rep.failures
    print(f"  failures:  {len(failed)}")
    for o in failed[:20]:
        print(f"  case {o.index} [{o.dialect} -> {o.path}, {'+'.join(o.mutations) or 'no mutation'}]:")
        for p in o.problems[:5]:
            print(f"      {p}")
        print(f"      again: scripts/fuzz --seed {args.seed} --case {o.index} --show")
    if args.save and failed:
        args.save.mkdir(parents=True, exist_ok=True)
        for o in failed:
            case = make_case(args.seed, o.index)
            meta = {"path": case.path, "mutations": case.mutations, "problems": o.problems}
            (args.save / f"case-{o.index}.json").write_text(json.dumps(meta, indent=2))
            (args.save / f"case-{o.index}.b64").write_text(base64.b64encode(case.raw).decode())
    bad = len(failed) + (sum(rep.known.values()) if args.strict else 0)
    return 1 if bad else 0
