"""Fixtures for the end-to-end layer: a real mitmdump with the bridge, a reference planner.

client (httpx) -> mitmdump --mode reverse -s addons/bridge.py -> ReferencePlanner (in process)

Everything listens on 127.0.0.1 with ephemeral ports. One mitmdump serves a whole
test module; every request carries a unique tag header so a test finds its own
request at the planner and its own record on disk.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import httpx
import orjson
import pytest
from support.mitmdump import Mitmdump, find_records, mitmdump_path
from support.reference_planner import Received, ReferencePlanner

ROOT = Path(__file__).resolve().parents[2]

SESSION = ROOT / "tests" / "fixtures" / "sessions" / "chat_session.json"
TAG = "x-e2e-tag"
CHAT = "/v1/chat/completions"

_running: list[Mitmdump] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing e2e test shows what mitmdump logged (the addon's warnings, tracebacks)."""
    report = yield
    if report.failed:
        for proxy in _running:
            report.sections.append(("mitmdump output", proxy.output[-20000:] or "(nothing)"))
    return report


@dataclass(slots=True)
class Exchange:
    tag: str
    body: bytes  # exactly what the client sent
    response: httpx.Response


class Bridge:
    """The running pair, and the ways a test looks at both sides of it."""

    def __init__(self, proxy: Mitmdump, planner: ReferencePlanner, records: Path, barrier_path: str = CHAT) -> None:
        self.proxy = proxy
        self.planner = planner
        self.records = records
        self.barrier_path = barrier_path  # a path this mitmdump's bridge_filter selects
        self.client = httpx.Client(base_url=proxy.url, timeout=15)

    def fail(self, message: str) -> NoReturn:
        pytest.fail(f"{message}\n--- mitmdump output ---\n{self.proxy.output[-20000:]}")

    def send(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Exchange:
        tag = uuid.uuid4().hex
        all_headers = {"content-type": "application/json", TAG: tag, **(headers or {})}
        try:
            response = self.client.request(method, path, content=body or None, headers=all_headers)
        except httpx.HTTPError as e:
            self.fail(f"{method} {path} through mitmdump failed: {type(e).__name__}: {e}")
        return Exchange(tag, body, response)

    def upstream(self, ex: Exchange) -> Received:
        """The one request the planner received for this exchange."""
        got = self.planner.find(TAG, ex.tag)
        if len(got) != 1:
            self.fail(f"the planner received {len(got)} requests tagged {ex.tag}, expected 1")
        return got[0]

    def records_of(self, ex: Exchange, timeout: float = 10.0) -> list[tuple[Path, dict[str, Any]]]:
        """This exchange's records, waiting for the first one (they are written off the request path)."""
        deadline = time.monotonic() + timeout
        while not (found := find_records(self.records, TAG, ex.tag)) and time.monotonic() < deadline:
            time.sleep(0.02)
        return found

    def record(self, ex: Exchange) -> tuple[Path, dict[str, Any]]:
        """The single record of this exchange, after a barrier so a duplicate would have shown."""
        self.barrier()
        found = find_records(self.records, TAG, ex.tag)
        if len(found) != 1:
            self.fail(f"{len(found)} records for request {ex.tag}, expected exactly 1")
        return found[0]

    def barrier(self) -> None:
        """Send a selected request and wait for its record: one writer thread writes records
        in submission order, so every record of an earlier request is on disk afterwards."""
        body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "barrier"}]})
        ex = self.send("POST", self.barrier_path, body)
        if not self.records_of(ex):
            self.fail("the barrier request was not recorded")


def mitmdump_batch(args: Sequence[str], confdir: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """One batch mitmdump run (-nr, -C): no listening proxy, a private confdir; it must succeed."""
    done = subprocess.run(
        [mitmdump_path(), *args, "--set", f"confdir={confdir}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"mitmdump {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="session")
def session_raw() -> bytes:
    return SESSION.read_bytes()


@pytest.fixture(scope="session")
def session_doc(session_raw: bytes) -> dict[str, Any]:
    return orjson.loads(session_raw)


@pytest.fixture(scope="session")
def planner() -> Iterator[ReferencePlanner]:
    with ReferencePlanner() as p:
        yield p


def _start(
    planner: ReferencePlanner, tmp_path_factory: pytest.TempPathFactory, options: tuple[str, ...], barrier_path: str
) -> Bridge:
    records = tmp_path_factory.mktemp("records")
    proxy = Mitmdump(planner.url, records, tmp_path_factory.mktemp("mitmproxy-conf"), options)
    proxy.start()  # raises with mitmdump's output when it does not come up
    _running.append(proxy)
    return Bridge(proxy, planner, records, barrier_path)


def _stop(b: Bridge) -> None:
    b.client.close()
    _running.remove(b.proxy)
    b.proxy.stop()


@pytest.fixture(scope="module")
def bridge(planner: ReferencePlanner, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridge]:
    b = _start(planner, tmp_path_factory, (), CHAT)
    try:
        yield b
    finally:
        _stop(b)


@pytest.fixture(scope="module")
def start_bridge(
    planner: ReferencePlanner, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Bridge]]:
    """Start another mitmdump with extra options (``"--set", "name=value"``), stopped with the module.

    ``barrier_path`` must be a path its ``bridge_filter`` selects, so :meth:`Bridge.record` can wait on it.
    """
    started: list[Bridge] = []

    def start(*options: str, barrier_path: str = CHAT) -> Bridge:
        started.append(_start(planner, tmp_path_factory, options, barrier_path))
        return started[-1]

    try:
        yield start
    finally:
        for b in started:
            _stop(b)
