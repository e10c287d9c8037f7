"""Suite-wide: the tests leave no process behind.

Every process the test session starts (mitmdump, its record worker, planners, browsers, their
children, re-parented or not) inherits ``BRIDGE_TEST_SESSION``; at the end of the session any
process still carrying it is reported as a failure (and then ended, so it does not pile up).
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import procs  # tests/ is on the path: pytest puts a conftest's folder there (rootdir, no __init__.py)
import pytest
from support import lifetime

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
