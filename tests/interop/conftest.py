"""The interop suite: real agent clients through real mitmdump with the bridge (see harness.py).

At the end of a run, a table says client by client which version ran (the manifest's: pinned, or
the newest releases with ``scripts/interop.py run --latest``) and how its tests went, so a format
that changed in a new release shows up by client and version."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

_RESULTS: dict[str, Counter[str]] = {}


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "interop: drives a real agent client (installed by scripts/interop.py install)")


def client_of(item: pytest.Item) -> str | None:
    """The client an interop test drives: its ``key`` (jsclients.DRIVERS) or ``variant``
    (pyclients.PY_DRIVERS) parameter, or the client a test function names in its own name."""
    from jsclients import DRIVERS
    from pyclients import PY_DRIVERS

    params: dict[str, Any] = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("key") in DRIVERS:
        return DRIVERS[params["key"]].name
    if params.get("variant") in PY_DRIVERS:
        return PY_DRIVERS[params["variant"]].name
    names = {d.name for d in (*DRIVERS.values(), *PY_DRIVERS.values())}
    words = f"_{item.originalname}_"
    return next((n for n in sorted(names, key=len, reverse=True) if f"_{n.replace('-', '_')}_" in words), None)


def pytest_itemcollected(item: pytest.Item) -> None:
    client = client_of(item)
    if client:
        item.user_properties.append(("client", client))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    client = dict(report.user_properties).get("client")
    if not client:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        _RESULTS.setdefault(str(client), Counter())[outcome] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _RESULTS:
        return
    from harness import MANIFEST, manifest

    entries = manifest()
    tr = terminalreporter
    tr.section(f"interop: by client ({MANIFEST.name})")
    tr.write_line(f"{'client':16} {'version':12} {'passed':>6} {'failed':>6} {'skipped':>7}")
    for client in sorted(_RESULTS):
        c = _RESULTS[client]
        version = str((entries.get(client) or {}).get("version", "?"))
        tr.write_line(f"{client:16} {version:12} {c['passed']:6} {c['failed']:6} {c['skipped']:7}")
