"""planner: the planner hop, SendUserCascadeMessage through mitmdump's HTTP/2 listener.

grpcio -> mitmdump (prior-knowledge HTTP/2 listener) -> grpcio, plain (h2c listener only)
against -s addons/bridge.py with bridge_planner; a 200 KB SendUserCascadeMessage, first and
resumed turn.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.histories.cascade import SEND_PATH, CascadeBodies

from .proxies import BRIDGE, ROOT, logged_mitmdump
from .timing import median, pct, size_label

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
                args += ["-s", BRIDGE, "--set", f"bridge_planner={spec}"]
            proxy = logged_mitmdump()("http://unused", Path(tmp) / name, Path(tmp) / name)
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
                stats = {n: {"p50": median(lat[n]), "p99": pct(lat[n], 0.99)} for n in names}
                rows.append(PlannerRow(label, size, stats))
                base = stats["plain"]
                log(
                    f"  {label:44} {size_label(size)}  plain p50 {base['p50'] * 1e3:6.2f} ms | bridge "
                    f"{stats['bridge']['p50'] / base['p50']:.2f}x (p99 {stats['bridge']['p99'] / base['p99']:.2f}x)"
                )
        finally:
            for ch in channels.values():
                ch.close()
            for proxy, _ in proxies.values():
                proxy.stop()
    return rows
