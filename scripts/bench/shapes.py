"""shapes: agent traffic through real mitmdumps in one run, side by side with a naive peer (issue 11, 20).

Real agents send a different body every turn: the previous history plus one round, and many
conversations at once. Every shape goes through six mitmdumps in one run, batches interleaved:
plain, the naive peer, the bridge in rewrite mode, in observe mode (the default), observe mode
with records on, and observe mode with ``bridge_state``. The same body again and again, the agent
loop (each request the previous history plus one round, 40-turn conversations), new
conversations, 8 conversations at once; 10 KB / 200 KB / 2 MB / 10 MB; p50 and throughput vs plain.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.histories.agent import AgentConversation

from .proxies import AGENT_UA, BRIDGE, NAIVE_ADDON, Planner, Workload, drain_records, retag, reverse_proxy, send_batch
from .timing import median, pct


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
                out.append([retag(base, f"[{self.label} {c}.{rep}.{i}] ") for i in range(self.per_client)])
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
    bridge = BRIDGE
    naive = tmp / "naive_addon.py"
    naive.write_text(NAIVE_ADDON)
    proxies = {
        "plain": reverse_proxy(upstream, None, None, tmp / "p1"),
        "naive": reverse_proxy(upstream, str(naive), None, tmp / "p2"),
        "rewrite": reverse_proxy(upstream, bridge, None, tmp / "p3", ("--set", "bridge_mode=rewrite")),
        "observe": reverse_proxy(upstream, bridge, None, tmp / "p4", ("--set", "bridge_mode=observe")),
        "observe+records": reverse_proxy(
            upstream, bridge, tmp / "records", tmp / "p5", ("--set", "bridge_mode=observe")
        ),
        # The documented both-hops setup: the reading is stored before the request goes on.
        "observe+state": reverse_proxy(
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
                    send_batch(proxies[n].url, warm, AGENT_UA)
                lat: dict[str, list[float]] = {n: [] for n in names}
                rps: dict[str, list[float]] = {n: [] for n in names}
                for r in range(shape.reps):
                    w = Workload(shape.size, shape.clients, bodies=shape.batch(r))
                    for n in names[r % len(names) :] + names[: r % len(names)]:
                        got, per_s = send_batch(proxies[n].url, w, AGENT_UA)
                        lat[n] += got
                        rps[n].append(per_s)
                        if n == "observe+records":
                            drain_records(Path(tmp) / "records")
                    del w
                stats = {n: {"p50": median(lat[n]), "p99": pct(lat[n], 0.99), "rps": median(rps[n])} for n in names}
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
