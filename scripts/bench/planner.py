"""planner: the planner hop, SendUserCascadeMessage through mitmdump's HTTP/2 listener.

grpcio -> mitmdump (prior-knowledge HTTP/2 listener) -> grpcio, plain (h2c listener only)
against -s addons/bridge.py with bridge_planner, the ledger in memory, in a SQLite file
(``bridge_state``) and on a Redis server on loopback (``bridge_state=redis://``, issue 38); a
200 KB SendUserCascadeMessage, first and resumed turn.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.histories.cascade import SEND_PATH, CascadeBodies

from .proxies import BRIDGE, ROOT, StateServer, StoreSize, logged_mitmdump, store_line
from .shapes import paired_stats, paired_turns
from .timing import size_label

# Plain mitmdump with the planner listener speaking prior-knowledge HTTP/2, and nothing else.
H2C_ADDON = """
import sys
sys.path.insert(0, {addons!r})
from mitmproxy.proxy import mode_specs
from native_bridge.runtime.h2c import H2CListener

h2c = H2CListener()
h2c.specs = frozenset({{mode_specs.ProxyMode.parse({spec!r}).full_spec}})
addons = [h2c]
"""


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


# plain; the bridge with the ledger in memory, in a SQLite file, on a Redis server
PLANNER_PROXIES = ("plain", "bridge", "bridge+state", "bridge+redis")


@dataclass(slots=True)
class PlannerRow:
    label: str
    size: int
    stats: dict[str, dict[str, float]]
    store: list[StoreSize] = field(default_factory=list)  # bridge+redis: what its keys take on the server


def planner_hop(quick: bool, log: Callable[[str], None]) -> list[PlannerRow]:
    """grpcio client -> mitmdump (h2c listener) -> grpcio server: plain against the bridge, its
    ledger in memory, in a SQLite file and on a Redis server."""
    import socket

    import grpc
    from support.mitmdump import mitmdump_path

    n_steps = 50  # about 200 KB
    rows = []
    with (
        _LanguageServer() as ls,
        tempfile.TemporaryDirectory(prefix="bridge-planner-") as tmp,
        contextlib.ExitStack() as up,
    ):
        redis: StateServer | None = None
        if missing := StateServer.missing():
            log(f"  (bridge+redis left out: {missing})")
        else:
            redis = up.enter_context(StateServer())  # stopped after the proxies (the finally below)
        names = [n for n in PLANNER_PROXIES if redis is not None or n != "bridge+redis"]
        reps, per = (2, 8) if quick else (16, 20)
        proxies: dict[str, Any] = {}
        for name in names:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            spec = f"reverse:http://127.0.0.1:{ls.port}@{port}"
            args = [mitmdump_path(), "--mode", spec, "--listen-host", "127.0.0.1"]
            args += ["--set", f"confdir={Path(tmp) / name}", "--set", "flow_detail=0"]
            env = None
            if name == "plain":
                script = Path(tmp) / "h2c_addon.py"
                script.write_text(H2C_ADDON.format(addons=str(ROOT / "addons"), spec=spec))
                args += ["-s", str(script)]
            else:
                args += ["-s", BRIDGE, "--set", f"bridge_planner={spec}"]
                if name == "bridge+state":
                    args += ["--set", f"bridge_state={Path(tmp) / 'state.db'}"]
                elif name == "bridge+redis" and redis is not None:
                    args += redis.options
                    env = redis.env  # the password: never on the command line
            proxy = logged_mitmdump()("http://unused", Path(tmp) / name, Path(tmp) / name, env=env)
            proxy.args = args
            proxy.start()
            proxies[name] = (proxy, port)
        channels = {n: grpc.insecure_channel(f"127.0.0.1:{port}") for n, (_, port) in proxies.items()}
        try:
            stubs = {
                n: ch.unary_unary(SEND_PATH, request_serializer=None, response_deserializer=None)
                for n, ch in channels.items()
            }

            def send(name: str, body: bytes) -> float:
                t0 = time.perf_counter()
                stubs[name](body, timeout=30)
                return time.perf_counter() - t0

            warm = CascadeBodies(1).message("warm", 3)
            for stub in stubs.values():
                for _ in range(3):
                    stub(warm, timeout=30)
            for label in ("first turn (new cascade)", "resumed turn (same cascade, one more step)"):
                if redis is not None:
                    redis.flush()  # this row's ledgers alone, for their size below
                runs = []
                for r in range(reps):
                    if label.startswith("first"):
                        src2 = [CascadeBodies(1000 * r + i) for i in range(per)]
                        runs.append([b.message(f"cascade-{r}-{i}", n_steps) for i, b in enumerate(src2)])
                    else:
                        src = CascadeBodies(100 + r)
                        runs.append([src.message(f"resumed-{r}", n_steps - per // 2 + i) for i in range(per)])
                size = len(runs[-1][per // 2])
                # Request by request through every proxy in balanced orders, as the agent loop's turns
                # (shapes.paired_turns): the rows to compare, 0.05x apart, meet the machine's bursts
                # together. Each proxy still sees each cascade's calls in order.
                lat = paired_turns(runs, names, send)
                stats = paired_stats(lat, beside={"bridge+state": "bridge", "bridge+redis": "bridge+state"})
                rows.append(PlannerRow(label, size, stats))
                log(_planner_line(rows[-1]))
                if redis is not None:
                    time.sleep(0.2)  # the last call's ledger is written after its reply
                    rows[-1].store = redis.sizes()
                    log(store_line(rows[-1].store))
        finally:
            for ch in channels.values():
                ch.close()
            for proxy, _ in proxies.values():
                proxy.stop()
    return rows


def _planner_line(r: PlannerRow) -> str:
    base = r.stats["plain"]
    parts = [f"  {r.label:44} {size_label(r.size)}  plain p50 {base['p50'] * 1e3:6.2f} ms"]
    for n, st in r.stats.items():
        if n != "plain":
            interval = f"[{st['lo']:.2f}-{st['hi']:.2f}]"
            parts.append(f"| {n} {st['p50'] / base['p50']:.2f}x {interval} (p99 {st['p99'] / base['p99']:.2f}x)")
    return " ".join(parts)
