"""The bench's command line: ``run`` runs the sections asked for and reports the targets; ``main``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from . import core as core_mod
from .core import breadth, core, core_at_sizes, no_history
from .e2e import e2e
from .golden import golden_check, golden_digests
from .load import LoadRow, load
from .loopmem import LoopMemRow, loop_memory
from .planner import PlannerRow, planner_hop
from .proxies import serve_planner
from .shapes import SHAPES, Shape, ShapeRow, shapes
from .stall import StallRow, stall
from .targets import Target, table, targets

SECTIONS = ("golden", "core", "nohist", "shapes", "stall", "loopmem", "planner", "load")


def run(
    quick: bool = False,
    only: Sequence[str] = SECTIONS,
    log: Callable[[str], None] = print,
    shape_plan: Sequence[Shape] | None = None,
) -> list[Target]:
    """The sections in ``only``, then the target table; ``shape_plan``: the shapes to run (all of them)."""
    t0 = time.perf_counter()
    golden = series = sized = nohist = e2e_rows = wide = None
    shape_rows: list[ShapeRow] = []
    stall_rows: list[StallRow] = []
    planner_rows: list[PlannerRow] = []
    loop_mem_rows: list[LoopMemRow] = []
    load_rows: list[LoadRow] = []
    if "golden" in only:
        log("golden: fast paths against reference paths")
        golden = golden_check(quick)
        log(f"  {golden or 'identical'}")
    if "core" in only:
        log("core: rewrite() against orjson loads+dumps of the same body (cold: first sight; warm: resumed)")
        sized = core_at_sizes((200_000,) if quick else (200_000, 2_000_000), quick, log)
        series = [] if quick else core(quick, log)
        log("memo search: a resumed turn alone in the memo, and among a full memo of its client's conversations")
        wide = breadth((10_000,) if quick else (10_000, 200_000), quick, log)
    if "nohist" in only:
        log("no tool history:")
        nohist = no_history((200_000,) if quick else (10_000, 200_000, 2_000_000), quick, log)
    if "e2e" in only:
        log("end to end: mitmdump --mode reverse, plain against -s addons/bridge.py, same local planner")
        e2e_rows = e2e(quick, log)
    if "shapes" in only:
        log(
            "traffic shapes: mitmdump plain / naive peer / bridge rewrite / observe / observe+records / observe+state "
            "(SQLite) / observe+redis (Redis on loopback), p50 vs plain (agent loops and new conversations: turn by "
            "turn, paired; [the ratio's 90% interval]; (python) etc.: the client's JSON style)"
        )
        shape_rows = shapes(quick, log, shape_plan)
    if "stall" in only:
        log("a cold body bridged while small requests run (p99), and peak memory")
        stall_rows = stall(quick, log)
    if "loopmem" in only:
        log("peak memory in the agent loop (turns after the first), beyond each proxy's idle memory")
        loop_mem_rows = loop_memory(quick, log)
    if "planner" in only:
        log(
            "planner hop: grpcio -> mitmdump (h2c listener) -> grpcio, plain against -s addons/bridge.py, the "
            "ledger in memory / SQLite (bridge+state) / Redis on loopback (bridge+redis); call by call, paired"
        )
        planner_rows = planner_hop(quick, log)
    if "load" in only:
        log(
            "load: 16 Claude Code conversations at once through 2 chat hops (observe) and 2 stand-in gateways "
            "(shim planner hops), the state on Redis (loopback) / in one SQLite file; rounds alternate"
        )
        load_rows = load(quick, log)
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
        wide or [],
        load_rows,
    )
    log(f"\ntargets ({'quick: gross regressions only' if quick else 'full'}; {time.perf_counter() - t0:.0f} s)")
    log(table(ts))
    return ts


def pick_shapes(words: str, quick: bool = False) -> list[Shape]:
    """The shape rows ``--shape`` names, in the bench's order: a comma-separated word that is a
    row's whole label picks that row alone ("200 KB agent loop": not its other encodings), any
    other word every row whose label holds it ("agent loop", "python", "10 MB"). Quick: each row
    short (``Shape.quick``), to see that it runs."""
    wanted = [w.strip().lower() for w in words.split(",") if w.strip()]
    labels = {s.label.lower() for s in SHAPES}
    exact = {w for w in wanted if w in labels}
    loose = [w for w in wanted if w not in labels]
    plan = [s for s in SHAPES if s.label.lower() in exact or any(w in s.label.lower() for w in loose)]
    return [s.quick() for s in plan] if quick else plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="The bridge's benchmark, side by side against its floor and plain mitmdump (scripts/BENCH.md)."
    )
    parser.add_argument(
        "--quick", action="store_true", help="seconds, not minutes: the CI smoke; fails only on gross regressions"
    )
    parser.add_argument(
        "--only", help=f"comma-separated sections (default: {','.join(SECTIONS)}; also: e2e, the older mitmdump cases)"
    )
    parser.add_argument(
        "--shape",
        help='shapes: only these comma-separated rows: a row\'s whole label picks it alone ("200 KB agent loop"), '
        'other words every row whose label holds them ("agent loop", "python"); alone, it implies --only shapes; '
        "with --quick, each row short, through all its proxies",
    )
    parser.add_argument("--golden-save", type=Path, help="write the digests of every golden case to this file")
    parser.add_argument("--golden-check", type=Path, help="compare the digests of every golden case with this file")
    parser.add_argument(
        "--no-client-hint", action="store_true", help="core: rewrite as for an unidentified client (no User-Agent)"
    )
    parser.add_argument("--serve-planner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    core_mod.USE_HINTS = not args.no_client_hint
    if args.serve_planner:
        asyncio.run(serve_planner(sys.stdout))
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
    only = [s.strip() for s in (args.only or ("shapes" if args.shape else ",".join(SECTIONS))).split(",") if s.strip()]
    plan = None
    if args.shape:
        plan = pick_shapes(args.shape, args.quick)
        if not plan:
            parser.error(f"--shape {args.shape!r}: no such shape (the shapes: {', '.join(s.label for s in SHAPES)})")
    ts = run(args.quick, only, shape_plan=plan)
    return 1 if any(t.ok is False for t in ts) else 0
