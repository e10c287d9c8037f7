"""stall: a 32 MB history never seen before while small requests run.

The small requests' p99 alone and during, and the peak RSS growth of each proxy (its worker
included); then the same size as one Responses-over-WebSocket frame (Codex's transport).
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import wsproto
import wsproto.events as wsevents
from support.histories.agent import AgentConversation, Session

from .proxies import (
    AGENT_UA,
    BRIDGE,
    CODEX_UA,
    NAIVE_ADDON,
    PeakRSS,
    Planner,
    Workload,
    retag,
    reverse_proxy,
    send_batch,
)
from .timing import median, pct, size_label


@dataclass(slots=True)
class StallRow:
    proxy: str
    big: int  # body bytes
    big_s: float  # median seconds of the big request
    p99_alone: float
    p99_during: float
    worst_during: float
    n_during: int
    mem_peak: float  # peak RSS growth of the proxy (and its children) / body size


def stall(quick: bool, log: Callable[[str], None], size: int = 32_000_000) -> list[StallRow]:
    """p99 of small requests alone, then while a cold body of ``size`` is bridged (three times,
    each a new conversation); peak RSS growth of each proxy over the whole time."""
    if quick:
        size = 4_000_000
    small = AgentConversation(10_000, 42, 2).body(1)
    conv = AgentConversation(size, 43, 2)
    big = conv.body(1)
    bigs = [retag(big, f"[big {i}] ") for i in range(3)]
    warm_big = AgentConversation(600_000, 44, 2).body(1)
    rows = []
    with Planner() as planner, tempfile.TemporaryDirectory(prefix="bridge-stall-") as tmp:
        bridge = BRIDGE
        naive = Path(tmp) / "naive_addon.py"
        naive.write_text(NAIVE_ADDON)
        specs = {
            "plain": (None, ()),
            "naive": (str(naive), ()),
            "rewrite": (bridge, ("--set", "bridge_mode=rewrite")),
            "observe": (bridge, ("--set", "bridge_mode=observe")),
            # Codex's Responses over WebSocket: the large history as one response.create frame.
            "ws plain": (None, ()),
            "ws rewrite": (bridge, ("--set", "bridge_mode=rewrite")),
            "ws observe": (bridge, ("--set", "bridge_mode=observe")),
        }
        ws_bigs = [_ws_frame(b) for b in _responses_bigs(size)]
        for name, (addon, opts) in specs.items():
            proxy = reverse_proxy(planner.url, addon, None, Path(tmp) / name, opts)
            proxy.start()
            try:
                pid = proxy._proc.pid
                # Warm-up: small requests, and one large body (the bridge starts its worker process
                # for it: a fixed cost, in the baseline like every other process start-up cost).
                send_batch(proxy.url, Workload(10_000, 1, bodies=[[small] * 20, [warm_big]]), AGENT_UA)
                alone = _small_for(proxy.url, small, 3.0 if not quick else 1.0)
                peak = PeakRSS(pid)
                frames = name.startswith("ws ")
                with peak:
                    during, big_times = _small_during_big(
                        proxy.url, small, ws_bigs if frames else bigs, _ws_send if frames else _http_send
                    )
                rows.append(
                    StallRow(
                        name,
                        len(ws_bigs[0] if frames else big),
                        median(big_times),
                        pct(alone, 0.99),
                        pct(during, 0.99),
                        max(during) if during else float("nan"),
                        len(during),
                        peak.growth / len(big),
                    )
                )
                log(_stall_line(rows[-1]))
            finally:
                proxy.stop()
    return rows


def _small_for(url: str, body: bytes, seconds: float) -> list[float]:
    out: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        got, _ = send_batch(url, Workload(len(body), 1, bodies=[[body] * 20]), AGENT_UA)
        out += got
    return out


def _responses_bigs(size: int) -> list[bytes]:
    """Three Responses histories of about ``size`` bytes (three conversations never seen)."""
    s = Session("responses", 1, seed=45, tools=("bash", "read"), out=(1000, 5000))
    rounds = 1
    while len(s.body(rounds)) < size:
        rounds = max(rounds + 1, int(rounds * size / max(len(s.body(rounds)), 1)))
    doc = s.doc(rounds)
    return [orjson.dumps({**doc, "instructions": f"[big {i}] {doc.get('instructions', '')}"}) for i in range(3)]


def _ws_frame(body: bytes) -> bytes:
    return orjson.dumps({"type": "response.create", **orjson.loads(body)})


def _http_send(url: str, body: bytes) -> float:
    got, _ = send_batch(url, Workload(len(body), 1, bodies=[[body]]), AGENT_UA)
    return got[0]


def _ws_send(url: str, frame: bytes) -> float:
    """One response.create frame over a new WebSocket on /v1/responses, until the reply frame."""
    import socket

    host, port = url.removeprefix("http://").split(":")
    ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        headers = [(b"user-agent", CODEX_UA)]
        sock.sendall(ws.send(wsevents.Request(host=f"{host}:{port}", target="/v1/responses", extra_headers=headers)))
        t0 = None
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise RuntimeError("the proxy closed the WebSocket")
            ws.receive_data(data)
            for e in ws.events():
                if isinstance(e, wsevents.AcceptConnection):
                    t0 = time.perf_counter()
                    sock.sendall(ws.send(wsevents.Message(data=frame.decode())))
                elif isinstance(e, wsevents.TextMessage) and e.message_finished and t0 is not None:
                    took = time.perf_counter() - t0
                    sock.sendall(ws.send(wsevents.CloseConnection(code=1000)))
                    return took


def _small_during_big(
    url: str, small: bytes, bigs: list[bytes], send: Callable[[str, bytes], float] = _http_send
) -> tuple[list[float], list[float]]:
    """Small requests back to back on one connection while the big ones go, one after another,
    on another (its own thread and event loop); only the small requests that overlap count."""
    big_times: list[float] = []
    windows: list[tuple[float, float]] = []
    done = threading.Event()

    def big_sender() -> None:
        try:
            for b in bigs:
                t0 = time.perf_counter()
                big_times.append(send(url, b))
                windows.append((t0, time.perf_counter()))
                time.sleep(0.3)
        finally:
            done.set()

    stamped: list[tuple[float, float]] = []  # (start, latency)

    async def smalls() -> None:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        req = (
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: planner\r\ncontent-type: application/json\r\n"
            b"user-agent: %s\r\ncontent-length: %d\r\n\r\n" % (AGENT_UA, len(small))
        ) + small
        try:
            while not done.is_set():
                t0 = time.perf_counter()
                writer.write(req)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                stamped.append((t0, time.perf_counter() - t0))
        finally:
            writer.close()

    t = threading.Thread(target=big_sender)
    t.start()
    asyncio.run(smalls())
    t.join()
    during = [lat for t0, lat in stamped if any(a <= t0 + lat and t0 <= b for a, b in windows)]
    return during, big_times


def _stall_line(r: StallRow) -> str:
    return (
        f"  {r.proxy:10} {size_label(r.big)} body {r.big_s:6.2f} s | "
        f"small requests p99 alone {r.p99_alone * 1e3:6.1f} ms, "
        f"during {r.p99_during * 1e3:6.1f} ms (worst {r.worst_during * 1e3:6.1f} ms, n={r.n_during}) | "
        f"peak RSS +{r.mem_peak:.2f}x body"
    )
