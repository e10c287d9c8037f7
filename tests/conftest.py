"""Suite-wide: the tests leave no process behind.

Every process the test session starts (mitmdump, its record worker, planners, browsers, their
children, re-parented or not) inherits ``BRIDGE_TEST_SESSION``; at the end of the session any
process still carrying it is reported as a failure (and then ended, so it does not pile up).

And the real servers and hosts the shared-store tests need: ``redis_server``, ``redis_tls_server``
(support.redis_server) and ``make_hosts`` (support.hosts, network namespaces). Where they cannot
be had a test skips, saying why; in CI (``CI=true``) a missing redis-server fails instead, and so
do unavailable network namespaces when CI runs as root.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import procs  # tests/ is on the path: pytest puts a conftest's folder there (rootdir, no __init__.py)
import pytest
from support import hosts, lifetime
from support import redis_server as redis_support

lifetime.forks_exec_at_once()  # before any test module imports grpc

SESSION_MARKER = os.environ.setdefault(procs.MARKER_VAR, uuid.uuid4().hex)  # before any test starts anything


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    yield
    if not Path("/proc/self/environ").exists():
        return
    left = procs.wait_gone(procs.marked(SESSION_MARKER), timeout=10)
    if not left:
        return
    described = [f"  pid {p}: {procs.cmdline(p)}" for p in sorted(left)]
    for p in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    pytest.fail(f"{len(left)} process(es) started by the tests outlived the session:\n" + "\n".join(described))


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _unavailable(reason: str, required: bool) -> NoReturn:
    if required:
        pytest.fail(f"{reason} (CI=true: this must be available in CI)")
    pytest.skip(reason)


@pytest.fixture
def need_redis_server() -> None:
    """For a test that starts its own RedisServer (other options, another host): without a
    redis-server it skips (fails in CI)."""
    if (reason := redis_support.available()) is not None:
        _unavailable(reason, in_ci())


def _redis(tls: bool) -> Iterator[redis_support.RedisServer]:
    if (reason := redis_support.available()) is not None:
        _unavailable(reason, in_ci())
    with redis_support.RedisServer(tls=tls) as server:
        yield server


@pytest.fixture
def redis_server() -> Iterator[redis_support.RedisServer]:
    """A real redis-server on 127.0.0.1 (a free port, a random password): ``.url``, ``.client()``."""
    yield from _redis(tls=False)


@pytest.fixture
def redis_tls_server() -> Iterator[redis_support.RedisServer]:
    """A real redis-server speaking only TLS (``rediss://``), its certificate from ``.ca_file``."""
    yield from _redis(tls=True)


@pytest.fixture
def make_hosts() -> Iterator[Callable[[Sequence[str]], hosts.Hosts]]:
    """``make_hosts(["chat", "redis"])``: started :class:`support.hosts.Hosts`, removed after the test."""
    if (reason := hosts.available()) is not None:
        _unavailable(reason, in_ci() and os.geteuid() == 0)
    made: list[hosts.Hosts] = []

    def make(names: Sequence[str]) -> hosts.Hosts:
        made.append(hosts.Hosts(names).start())
        return made[-1]

    try:
        yield make
    finally:
        for h in reversed(made):
            h.close()
