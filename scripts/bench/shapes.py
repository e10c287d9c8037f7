"""shapes: agent traffic through real mitmdumps in one run, side by side with a naive peer (issue 11, 20, 40).

Real agents send a different body every turn: the previous history plus one round, and many
conversations at once. Every shape goes through plain mitmdump, the naive peer, the bridge in
rewrite mode and in observe mode (the default) in one run; a row may also ask for observe mode
with records on, with ``bridge_state`` (a SQLite file), and with ``bridge_state`` on a Redis
server on loopback (issue 38). The same body again and again, the agent loop (each request the
previous history plus one round, 40-turn conversations), new conversations, 8 conversations at
once; 10 KB / 200 KB / 2 MB / 10 MB; p50 and throughput vs plain. The agent loops at 200 KB,
2 MB and 10 MB also run in every other style clients write JSON in (issue 40:
support.histories.encodings; the row's label ends with the style's name in brackets). An agent loop and the
new conversations are measured turn by turn, each turn through every proxy (``paired_turns``);
the other shapes in batches, one proxy after another.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import random
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.histories.agent import AgentConversation
from support.histories.encodings import ENCODINGS

from .proxies import (
    AGENT_UA,
    BRIDGE,
    NAIVE_ADDON,
    Connection,
    Planner,
    StateServer,
    StoreSize,
    Workload,
    drain_records,
    records_written,
    retag,
    reverse_proxy,
    send_batch,
    settled,
    store_line,
)
from .timing import median, pct


@dataclass(slots=True)
class Shape:
    label: str
    size: int
    kind: str  # same | loop | new
    clients: int
    per_client: int  # requests per client per batch (an agent loop's turns)
    reps: int  # batches (a paired agent loop: conversations)
    records: bool = False  # also through observe + records on
    state: bool = False  # also through observe with bridge_state (the shared logs)
    redis: bool = False  # also through observe with bridge_state on a Redis server (issue 38)
    encoding: str = "compact"  # how the client writes its JSON (support.histories.encodings)

    @property
    def paired(self) -> bool:
        """One agent loop, or one client's new conversations: measured turn by turn, paired
        (``paired_turns``)."""
        return self.kind in ("loop", "new") and self.clients == 1

    @property
    def family(self) -> str:
        """The label without its encoding: a row's limits are the same in every encoding."""
        return self.label.removesuffix(f" ({self.encoding})")

    def quick(self) -> Shape:
        """The same row, short: to see that it runs (``--quick --shape``), not to decide a target."""
        return dataclasses.replace(self, per_client=min(self.per_client, 10), reps=min(self.reps, 2))

    def conversation(self, rep: int, turns: int) -> list[bytes]:
        """The paired row's conversation ``rep``: an agent loop's turns, each the previous history
        plus one round, in the row's encoding; or ``turns`` conversations never seen before, each
        a history of its own (its own calls and outputs after the agent's system prompt and first
        task, which they share, as one agent's sessions do). Not one history retagged: bodies
        that differ only in a tag of one length near their start hold the same bytes at the same
        offsets everywhere else, so the memo's search of them looks at every entry's cuts (a
        search a real conversation never asks for: about 0.5 ms a request in process, against
        0.09 ms for histories of their own, 64 entries)."""
        if self.kind == "new":
            seed = 100_000 + 1000 * rep
            return [AgentConversation(self.size, seed + i, 2).body(1) for i in range(turns)]
        # A row in another style than compact: its conversations hold what the styles write differently
        # (non-ASCII, which every Read output has, and <, >, &: ``marks``), the same in every style.
        marks = self.encoding != "compact"
        conv = AgentConversation(self.size, 1000 * rep + 600, turns, ENCODINGS[self.encoding], marks)
        return [conv.body(t) for t in range(turns)]

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


def in_encodings(loop: Shape) -> list[Shape]:
    """An agent loop in every other style clients write JSON in (issue 40), each the same
    conversations (``Shape.conversation``) as that client writes them: observe, observe +
    ``bridge_state`` (SQLite) and rewrite beside plain mitmdump and the naive peer; records and
    Redis only in the compact row."""
    return [
        dataclasses.replace(loop, label=f"{loop.label} ({enc})", encoding=enc, records=False, state=True, redis=False)
        for enc in ENCODINGS
        if enc != loop.encoding
    ]


_LOOP_200K = Shape("200 KB agent loop", 200_000, "loop", 1, 40, 16, records=True, state=True, redis=True)
_LOOP_2M = Shape("2 MB agent loop", 2_000_000, "loop", 1, 40, 6, state=True, redis=True)
_LOOP_10M = Shape("10 MB agent loop", 10_000_000, "loop", 1, 20, 8, state=True)
SHAPES = [
    Shape("10 KB same body", 10_000, "same", 1, 40, 5),
    Shape("10 KB agent loop", 10_000, "loop", 1, 40, 12),
    Shape("10 KB new conversations", 10_000, "new", 1, 40, 6),
    Shape("200 KB same body", 200_000, "same", 1, 30, 5),
    _LOOP_200K,
    *in_encodings(_LOOP_200K),
    Shape("200 KB new conversations", 200_000, "new", 1, 30, 8),
    Shape("200 KB 8 conversations", 200_000, "loop", 8, 10, 3),
    Shape("2 MB same body", 2_000_000, "same", 1, 10, 3),
    _LOOP_2M,
    *in_encodings(_LOOP_2M),
    Shape("2 MB new conversations", 2_000_000, "new", 1, 10, 6),
    _LOOP_10M,
    *in_encodings(_LOOP_10M),
]
SHAPES_QUICK = [Shape("200 KB agent loop", 200_000, "loop", 1, 10, 2)]
SHAPE_PROXIES = ("plain", "naive", "rewrite", "observe", "observe+records", "observe+state", "observe+redis")
QUICK_PROXIES = ("plain", "naive", "rewrite", "observe")


@dataclass(slots=True)
class ShapeRow:
    shape: Shape
    stats: dict[str, dict[str, float]]  # proxy -> p50, p99 (s), rps
    store: list[StoreSize] = field(default_factory=list)  # observe+redis: what its keys take on the server


def shape_names(shape: Shape, every: Sequence[str]) -> list[str]:
    """The proxies of ``every`` a shape goes through: records, state and redis only where it asks."""
    wanted = {"observe+records": shape.records, "observe+state": shape.state, "observe+redis": shape.redis}
    return [n for n in every if wanted.get(n, True)]


# The proxies that have nothing to do once a reply is out (no addon, or the naive peer's request hook).
_NOTHING_AFTER = frozenset({"plain", "naive"})


def _shape_proxies(upstream: str, tmp: Path, redis: StateServer | None = None) -> dict[str, Any]:
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
    if redis is not None:  # the same on a Redis server: the password in its environment
        proxies["observe+redis"] = reverse_proxy(
            upstream, bridge, None, tmp / "p7", ("--set", "bridge_mode=observe", *redis.options), env=redis.env
        )
    return proxies


@contextlib.contextmanager
def started(proxies: dict[str, Any]) -> Iterator[dict[str, str]]:
    """The proxies started side by side (all launched, then each waited for until it listens),
    stopped on the way out. Launched from this thread: each ends with the thread that started it
    (support.lifetime)."""
    try:
        for p in proxies.values():
            p.launch()
        for p in proxies.values():
            p.listening()
        yield {n: p.url for n, p in proxies.items()}
    finally:
        with ThreadPoolExecutor(len(proxies)) as pool:
            list(pool.map(lambda p: p.stop(), proxies.values()))


def shapes(quick: bool, log: Callable[[str], None], plan: Sequence[Shape] | None = None) -> list[ShapeRow]:
    """Every traffic shape through every proxy: an agent loop and new conversations turn by turn,
    paired (``paired_turns``), each conversation on proxies started for it (``fresh_sets``); the
    other shapes in batches interleaved (rotating order), through one set of proxies. Quick
    without a ``plan``: the CI smoke (one short row through four proxies); with one (``--quick
    --shape``), the rows asked for, each through all its proxies."""
    every = QUICK_PROXIES if quick and not plan else SHAPE_PROXIES  # rows asked for by name: all their proxies
    plan = plan or (SHAPES_QUICK if quick else SHAPES)
    rows = []
    with (
        Planner() as planner,
        tempfile.TemporaryDirectory(prefix="bridge-shapes-") as tmp,
        contextlib.ExitStack() as up,
    ):
        # One redis-server for the whole run, only when a row asks for it (stopped on the way out).
        redis: StateServer | None = None
        if "observe+redis" in every and any(s.redis for s in plan):
            if missing := StateServer.missing():
                log(f"  (observe+redis left out: {missing})")
            else:
                redis = up.enter_context(StateServer())
        if redis is None:
            every = tuple(n for n in every if n != "observe+redis")
        sets = itertools.count()

        def proxy_set(names: Sequence[str]) -> tuple[contextlib.AbstractContextManager[dict[str, str]], Path, dict]:
            where = Path(tmp) / f"set{next(sets)}"
            where.mkdir()
            proxies = _shape_proxies(planner.url, where, redis)
            if redis is not None and "observe+redis" in names:
                redis.flush()  # an empty store for a new set, as observe+state gets a new file
            chosen = {n: proxies[n] for n in names}
            return started(chosen), where / "records", chosen

        shared: tuple[dict[str, str], Path] | None = None  # the batches' proxies, started when first needed
        for shape in plan:
            names = shape_names(shape, every)
            if shape.paired:
                stats = _paired_loop(shape, names, proxy_set)
            else:
                if shared is None:
                    # Every proxy, as before; observe+redis only if a batch shape goes through it.
                    batch = any(s.redis for s in plan if not s.paired)
                    proxies, records, _ = proxy_set([n for n in every if batch or n != "observe+redis"])
                    shared = up.enter_context(proxies), records
                stats = _batches(shape, {n: shared[0][n] for n in names}, shared[1])
            rows.append(ShapeRow(shape, stats))
            if redis is not None and "observe+redis" in names and shape.paired:
                # The keys of the row's last set (its last conversation and warm-up), still there.
                rows[-1].store = redis.sizes()
            log(_shape_line(rows[-1]))
            if rows[-1].store:
                log(store_line(rows[-1].store))
    return rows


def _batches(shape: Shape, urls: dict[str, str], records: Path) -> dict[str, dict[str, float]]:
    """Whole batches (every client's requests) through one proxy after another, rotating the order."""
    names = list(urls)
    warm = Workload(shape.size, shape.clients, bodies=[b[:1] for b in shape.batch(10_000)])
    for n in names:  # connections, imports and caches warmed before measuring
        send_batch(urls[n], warm, AGENT_UA)
    lat: dict[str, list[float]] = {n: [] for n in names}
    rps: dict[str, list[float]] = {n: [] for n in names}
    for r in range(shape.reps):
        w = Workload(shape.size, shape.clients, bodies=shape.batch(r))
        for n in names[r % len(names) :] + names[: r % len(names)]:
            got, per_s = send_batch(urls[n], w, AGENT_UA)
            lat[n] += got
            rps[n].append(per_s)
            if n == "observe+records":
                drain_records(records)
        del w
    return {n: {"p50": median(lat[n]), "p99": pct(lat[n], 0.99), "rps": median(rps[n])} for n in names}


# ---- the agent loop, turn by turn and paired ---------------------------------------------------
#
# A batch (a whole conversation through one proxy, then through the next) puts each proxy's
# requests in a different stretch of time: on a shared 2-core machine a burst of other work
# during one batch moves that proxy's figure alone. Here every turn goes to every proxy before
# the next turn goes to any (each proxy still sees its own agent loop, the previous history plus
# one round), in orders that put every proxy first, second, ... and after every other proxy
# equally often; a proxy's figure and plain's come from the same moments.


def balanced_orders(names: Sequence[str]) -> list[list[str]]:
    """Orders of ``names`` (a Williams design) in which every name takes every position, and
    follows every other name, equally often: ``len(names)`` orders, twice as many for an odd count
    (whatever a request leaves running in its proxy weighs on every other proxy alike)."""
    n = len(names)
    first = [0] + [(i + 1) // 2 if i % 2 else n - i // 2 for i in range(1, n)]  # 0, 1, n-1, 2, n-2, ...
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return [[names[x] for x in row] for row in rows]


def paired_turns(
    conversations: Iterable[Sequence[bytes]],
    names: Sequence[str],
    send: Callable[[str, bytes], float],
    after: Callable[[], None] = lambda: None,
) -> dict[str, list[list[float]]]:
    """Every conversation turn by turn: turn t goes to every proxy (``send(name, body)``, its
    latency) before turn t + 1 goes to any, the turns taking the orders of ``balanced_orders``
    one after another. ``after`` runs after each conversation. Latencies [proxy][conversation][turn].
    The client's garbage collector waits for the end of each conversation."""
    orders = balanced_orders(names)
    lat: dict[str, list[list[float]]] = {n: [] for n in names}
    k = 0
    for bodies in conversations:
        for n in names:
            lat[n].append([])
        gc.collect()
        gc.disable()
        try:
            for body in bodies:
                for n in orders[k % len(orders)]:
                    lat[n][-1].append(send(n, body))
                k += 1
        finally:
            gc.enable()
        after()
    return lat


def paired_stats(
    lat: dict[str, list[list[float]]], base: str = "plain", beside: dict[str, str] | None = None
) -> dict[str, dict[str, float]]:
    """Per proxy: p50 and p99 of all its turns, requests per second of its busy time, and its p50
    ratio to ``base``'s 90% interval (``lo``, ``hi``: a bootstrap over the conversations, the run's
    own uncertainty). ``beside``: proxy -> another proxy; the interval of the difference of their
    ratios (``dlo``, ``dhi``), from the same draws: two rows close together are judged by it."""
    rng = random.Random(0)
    convs = len(lat[base])
    draws = [[rng.randrange(convs) for _ in range(convs)] for _ in range(200)]
    ratios: dict[str, list[float]] = {}
    stats = {}
    for n, runs in lat.items():
        flat = [x for run in runs for x in run]
        ratios[n] = [
            median([x for c in draw for x in runs[c]]) / median([x for c in draw for x in lat[base][c]])
            for draw in draws
        ]
        boot = sorted(ratios[n])
        stats[n] = {
            "p50": median(flat),
            "p99": pct(flat, 0.99),
            "rps": len(flat) / sum(flat),
            "lo": boot[len(boot) // 20],
            "hi": boot[-1 - len(boot) // 20],
        }
    for n, other in (beside or {}).items():
        if n in ratios and other in ratios:
            diff = sorted(a - b for a, b in zip(ratios[n], ratios[other], strict=True))
            stats[n] |= {"dlo": diff[len(diff) // 20], "dhi": diff[-1 - len(diff) // 20]}
    return stats


def fresh_sets(
    conversations: Iterable[Sequence[bytes]],
    start: Callable[[], contextlib.AbstractContextManager[Any]],
    ready: Callable[[Any], None],
) -> Iterator[Sequence[bytes]]:
    """``conversations`` for ``paired_turns``, each on a set of proxies started for it: ``start()``
    brings a set up (a context manager: it stays up while its conversation runs) and ``ready`` gets
    it going (connections, a warm-up). A process's speed depends on where its code and data happen
    to lie in memory (address layout, the allocator's history): identical mitmdumps side by side
    differ by up to 9% at 10 MB and keep their difference for their whole life. Pairing turns cannot
    cancel that; a new set for every conversation draws it afresh for every proxy alike, so the
    bootstrap over conversations (``paired_stats``) holds it too."""
    for bodies in conversations:
        with start() as proxies:
            ready(proxies)
            yield bodies


def _paired_loop(
    shape: Shape,
    names: Sequence[str],
    proxy_set: Callable[[Sequence[str]], tuple[contextlib.AbstractContextManager[dict[str, str]], Path, dict]],
) -> dict[str, dict[str, float]]:
    """The agent loop turn by turn through the proxies ``names``, paired: ``shape.reps``
    conversations of ``shape.per_client`` turns, each a new one (its first turn a first sight) on
    proxies started for it (``proxy_set``: the set, and where its records go), after a warm-up
    conversation that takes every proxy through its whole path (a first sight, in the worker for a
    large body; resumed turns; records written).

    After each turn through observe+records, the next request (to any proxy) waits until that
    turn's record is written. An agent thinks for seconds between turns, so in use a record's
    rendering (in the worker process) is done long before the next request; here it would land on
    the other proxies' turns instead: measured so, it raised plain's own p50 by about 40% and
    every bridge row by 0.03 to 0.06 (scripts/BENCH.md). For the same reason, after each turn
    through a bridge proxy the next request waits until that proxy's process tree has gone idle
    (``settled``: what it does after the reply, such as a first sight its worker reads while the
    reply goes on, done before the next turn, as an agent's thinking leaves time for it)."""
    conns: dict[str, Connection] = {}
    records: list[Path] = []
    recorded = [0]  # records the observe+records proxy has been sent since its directory was emptied
    pids: dict[str, int] = {}  # the bridge proxies of the running set

    def start() -> contextlib.AbstractContextManager[dict[str, str]]:
        up, where, chosen = proxy_set(names)
        records[:] = [where]
        procs[:] = [chosen]
        return up

    procs: list[dict[str, Any]] = []

    def after() -> None:
        if "observe+records" in conns:  # the writer catches up before the next conversation
            drain_records(records[0])
            recorded[0] = 0

    def send(name: str, body: bytes) -> float:
        took = conns[name].post(body)
        if name == "observe+records":
            recorded[0] += 1
            records_written(records[0], recorded[0])
        if name in pids:
            settled(pids[name])
        return took

    def ready(urls: dict[str, str]) -> None:
        close()
        pids.clear()
        pids.update((n, p.pid) for n, p in procs[0].items() if n not in _NOTHING_AFTER)
        conns.update((n, Connection(url)) for n, url in urls.items())
        paired_turns([shape.conversation(10_000, min(8, shape.per_client))], names, send, after)

    def close() -> None:
        for c in conns.values():
            c.close()
        conns.clear()

    convs = fresh_sets((shape.conversation(r, shape.per_client) for r in range(shape.reps)), start, ready)
    try:
        return paired_stats(paired_turns(convs, names, send, after), beside={"observe+redis": "observe+state"})
    finally:
        close()
        convs.close()  # the last set stops


def _shape_line(r: ShapeRow) -> str:
    base = r.stats["plain"]
    parts = [f"  {r.shape.label:26} plain p50 {base['p50'] * 1e3:7.2f} ms {base['rps']:5.0f}/s"]
    for n, st in r.stats.items():
        if n != "plain":
            interval = f" [{st['lo']:.2f}-{st['hi']:.2f}]" if "lo" in st else ""
            parts.append(f"| {n} {st['p50'] / base['p50']:.2f}x{interval}")
    if r.shape.clients > 1:
        parts.append("| rps " + " ".join(f"{n} {st['rps'] / base['rps']:.2f}x" for n, st in r.stats.items()))
    return " ".join(parts)
