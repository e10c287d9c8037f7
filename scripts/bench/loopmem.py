"""loopmem: peak memory in the agent loop, beyond each proxy's idle memory."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from support.histories.agent import AgentConversation
from support.histories.encodings import ENCODINGS

from .proxies import (
    AGENT_UA,
    BRIDGE,
    PeakRSS,
    Planner,
    Workload,
    reverse_proxy,
    rss_tree,
    send_batch,
    settled,
)
from .timing import size_label

COLLECTED = "collected: "
FIRST_QUIET, FIRST_TIMEOUT = 0.05, 30.0  # the first turn's reading has ended: no CPU used for this long
COLLECT = "import gc\n\n\ndef response(flow):\n    gc.collect()\n"


@dataclass(slots=True)
class LoopMemRow:
    size: int  # the conversation's middle body
    turns: int
    growth: dict[str, int]  # proxy -> peak RSS over the turns after the first, beyond its idle RSS
    encoding: str = "compact"  # how the client writes its JSON (support.histories.encodings)


LOOP_MEM_PROXIES = {
    "plain": (False, ()),
    "observe": (True, ("--set", "bridge_mode=observe")),
    "observe+state": (True, ("--set", "bridge_mode=observe")),  # bridge_state added per run
    "rewrite": (True, ("--set", "bridge_mode=rewrite")),
    # The same two with the garbage collector run after each response (COLLECT): mitmproxy's
    # finished flows are cyclic garbage, each holding its body until the collector next runs, so
    # without it a peak says as much about when the collector ran as about what a proxy holds.
    # Judged too (observe), beside the rows as they run.
    COLLECTED + "plain": (False, ()),
    COLLECTED + "observe": (True, ("--set", "bridge_mode=observe")),
}
# In the other JSON styles (issue 40), what the limit is about: observe mode beside plain.
STYLE_PROXIES = ("plain", "observe", COLLECTED + "plain", COLLECTED + "observe")


def loop_memory(quick: bool, log: Callable[[str], None]) -> list[LoopMemRow]:
    """Peak memory in the agent loop: one conversation, each request the previous one plus a
    round. A proxy's figure is its process tree's peak RSS over the turns after the first, less
    its idle RSS before the conversation (after a warm-up that starts the bridge's worker): what
    the conversation costs it, the body it keeps between turns included. The first turn is a
    first sight (the worker reads it; the stall section measures that) and is left out, its
    reading included: the window opens once the proxy has used no CPU for ``FIRST_QUIET``.

    mitmproxy's finished flows are cyclic garbage, freed when the collector next runs (after about
    2,000 net container allocations: 13-15 turns of this loop, a little sooner through the bridge,
    which allocates more per turn). A window shorter than that compares where each proxy's cycle
    happened to start, so the 2 MB loop runs 40 turns: at least two cycles in every proxy. The
    30 MB loop cannot (40 bodies of 30 MB would not fit the client), so its window is shorter than
    a cycle; the ``collected:`` rows are the figure without the collector's phase.

    Both loops run again in every other JSON style clients write (``(python)`` and so on, as the
    shapes' agent loops do), through plain and observe (``STYLE_PROXIES``)."""
    sizes = ((2_000_000, 4),) if quick else ((2_000_000, 40), (30_000_000, 6))
    styles = ("compact", "python") if quick else tuple(ENCODINGS)
    plan = [(size, turns, style) for style in styles for size, turns in sizes]
    small = AgentConversation(10_000, 42, 2).body(1)
    warm_big = AgentConversation(600_000, 44, 2).body(1)
    rows = []
    with Planner() as planner, tempfile.TemporaryDirectory(prefix="bridge-loopmem-") as tmp:
        bridge = BRIDGE
        collect = Path(tmp) / "collect.py"
        collect.write_text(COLLECT)
        for size, turns, style in plan:
            # The other styles' conversations hold what they write differently (as the shapes' rows).
            conv = AgentConversation(size, 46, turns, ENCODINGS[style], style != "compact")
            bodies = [conv.body(t) for t in range(turns)]
            growth = {}
            for name, (bridged, opts) in LOOP_MEM_PROXIES.items():
                if style != "compact" and name not in STYLE_PROXIES:
                    continue
                if name == "observe+state":
                    opts = (*opts, "--set", f"bridge_state={tmp}/{size}.db")
                script = bridge if bridged else None
                if name.startswith(COLLECTED):
                    script, opts = (str(collect), ()) if not bridged else (bridge, (*opts, "-s", str(collect)))
                confdir = Path(tmp) / f"{name.replace(COLLECTED, 'collected-')}-{size}-{style}"
                proxy = reverse_proxy(planner.url, script, None, confdir, opts)
                proxy.start()
                try:
                    send_batch(proxy.url, Workload(10_000, 1, bodies=[[small] * 10, [warm_big]]), AGENT_UA)
                    time.sleep(0.5)
                    base = rss_tree(proxy._proc.pid)
                    send_batch(proxy.url, Workload(size, 1, bodies=[bodies[:1]]), AGENT_UA)
                    # Its reading too: headless, the first sight's reply goes on before it (the
                    # worker's parse would land in the window; a second turn waits for it anyway).
                    settled(proxy._proc.pid, FIRST_QUIET, FIRST_TIMEOUT)
                    peak = PeakRSS(proxy._proc.pid)
                    with peak:
                        peak.base = base
                        send_batch(proxy.url, Workload(size, 1, bodies=[bodies[1:]]), AGENT_UA)
                    growth[name] = peak.growth
                finally:
                    proxy.stop()
            rows.append(LoopMemRow(len(bodies[turns // 2]), turns, growth, style))
            log(_loop_mem_line(rows[-1]))
    return rows


def _loop_mem_line(r: LoopMemRow) -> str:
    parts = [f"  {size_label(r.size):>7} agent loop{style_suffix(r)}, {r.turns} turns: peak RSS growth"]
    parts += [f"{n} {g / r.size:.2f}x" for n, g in r.growth.items()]
    return " | ".join(parts)


def style_suffix(r: LoopMemRow) -> str:
    """`` (python)`` and so on: a row's JSON style, as the shapes' rows name it (none for compact)."""
    return "" if r.encoding == "compact" else f" ({r.encoding})"
