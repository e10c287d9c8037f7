"""Processes on this machine, read from /proc (Linux): who descends from whom, who carries a marker."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

# Set by tests/conftest.py for the whole test session: every process the tests start inherits it.
MARKER_VAR = "BRIDGE_TEST_SESSION"


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "(comm)": state, ppid, ...
    return int(fields[1]) if fields[0] != "Z" else None  # a zombie is gone, only not yet reaped


def pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def alive(pid: int) -> bool:
    return _ppid(pid) is not None


def descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` now."""
    children: dict[int, list[int]] = {}
    for p in pids():
        parent = _ppid(p)
        if parent is not None:
            children.setdefault(parent, []).append(p)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def carrying(variable: str, exclude: int | None = None) -> list[int]:
    """Living processes whose environment holds ``variable`` (``NAME=value``, exactly; our own
    process excluded)."""
    needle = variable.encode()
    found = []
    for p in pids():
        if p == (exclude if exclude is not None else os.getpid()):
            continue
        try:
            env = Path(f"/proc/{p}/environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0") and alive(p):
            found.append(p)
    return found


def marked(value: str, exclude: int | None = None) -> list[int]:
    """Living processes whose environment holds ``MARKER_VAR=value`` (our own process excluded)."""
    return carrying(f"{MARKER_VAR}={value}", exclude)


def kill_carrying(variable: str) -> list[int]:
    """SIGKILL what a run left behind outside its process group, found by ``variable`` in its
    environment: a daemon that starts its own session (Cline's hub) is adopted by init, out of
    reach of killpg and of the parent-death signal, but still carries the HOME its run gave it.
    Returns the pids killed."""
    killed = []
    for p in carrying(variable):
        with contextlib.suppress(OSError):  # gone meanwhile
            os.kill(p, signal.SIGKILL)
            killed.append(p)
    return killed


def wait_gone(candidates: set[int] | list[int], timeout: float) -> set[int]:
    """The candidates still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    left = {p for p in candidates if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {p for p in left if alive(p)}
    return left
