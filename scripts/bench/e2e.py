"""e2e (not in the default run): the older mitmdump cases, plain against the bridge (and a null addon).

10 KB / 200 KB / 2 MB, 1 and 8 clients, batches interleaved; the CI smoke runs it with --quick.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .proxies import BRIDGE, NULL_ADDON, Planner, Workload, drain_records, reverse_proxy, send_batch
from .timing import median, pct


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
        bridge = BRIDGE
        null = Path(tmp) / "null_addon.py"
        null.write_text(NULL_ADDON)
        proxies = {
            "plain": reverse_proxy(planner.url, None, None, Path(tmp) / "c1"),
            "null addon": reverse_proxy(planner.url, str(null), None, Path(tmp) / "c4"),
            "bridge": reverse_proxy(planner.url, bridge, None, Path(tmp) / "c2"),
        }
        if quick:
            del proxies["null addon"]
        if with_records:
            proxies["bridge+records"] = reverse_proxy(planner.url, bridge, records, Path(tmp) / "c3")
        for p in proxies.values():
            p.start()
        try:
            for label, size, clients, kind, per_client, with_records, *more in plan:
                gap = more[0] if more else 0.0
                w = Workload(size, clients, kind).build(per_client)
                names = [n for n in proxies if with_records or n != "bridge+records"]
                for n in names:  # each proxy meets the conversations once before measuring
                    send_batch(proxies[n].url, Workload(size, clients, kind, [b[:1] for b in w.bodies]))
                w.gap = gap
                lat: dict[str, list[float]] = {n: [] for n in names}
                rps: dict[str, list[float]] = {n: [] for n in names}
                for r in range(reps):
                    batch = w.batch(r)
                    for n in names[r % len(names) :] + names[: r % len(names)]:
                        got, per_s = send_batch(proxies[n].url, batch)
                        lat[n] += got
                        rps[n].append(per_s)
                        if n == "bridge+records":
                            # Its writer catches up before anything else is measured: on two
                            # cores a backlog would slow down the next proxy's batch too.
                            drain_records(records)
                stats = {n: {"p50": median(lat[n]), "p99": pct(lat[n], 0.99), "rps": median(rps[n])} for n in names}
                rows.append(E2ERow(label, size, clients, kind, stats))
                log(_e2e_line(rows[-1]))
        finally:
            for p in proxies.values():
                p.stop()
    return rows


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
