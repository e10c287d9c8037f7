"""The interop suite: real agent clients through real mitmdump with the bridge (see harness.py)."""

from __future__ import annotations


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "interop: drives a real agent client (installed by scripts/interop.py install)")
