"""What starts a mitmdump (a test, the demo, the bench) may be SIGKILLed and run no cleanup of
its own: every mitmdump and planner it started ends too (support.lifetime.ending_with)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import procs
import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def _mitmdumps(pids: set[int]) -> set[int]:
    return {p for p in pids if "mitmdump" in procs.cmdline(p)}


def _killed_leaves_nothing(argv: list[str], up: Callable[[set[int]], bool], timeout: float = 90) -> None:
    """Start ``argv`` (it imports what the tests import), wait until ``up`` says its descendants
    are running, SIGKILL it: every one of them must end."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not up(kids := procs.descendants(proc.pid)):
            assert proc.poll() is None, f"{argv} ended early (exit {proc.returncode})"
            assert time.monotonic() < deadline, f"{argv} did not start its processes: {kids}"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        left = procs.wait_gone(kids, 20)
        assert not left, f"left behind: {[procs.cmdline(p) for p in sorted(left)]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_killed_owner_of_a_mitmdump_leaves_no_proxy_behind(tmp_path: Path) -> None:
    """support.mitmdump.Mitmdump, as the tests, the demo and the interop harness start it, killed
    once the proxy listens (killed while it starts, it would die of its closed stdout anyway)."""
    up = tmp_path / "up"
    script = (
        "import time; from support.mitmdump import Mitmdump; "
        f"Mitmdump('http://127.0.0.1:9', {str(tmp_path / 'records')!r}, {str(tmp_path / 'conf')!r}).start(); "
        f"open({str(up)!r}, 'w').close(); time.sleep(600)"
    )
    _killed_leaves_nothing([sys.executable, "-c", script], lambda kids: up.exists() and bool(_mitmdumps(kids)))


def test_a_killed_bench_leaves_no_proxy_or_planner_behind() -> None:
    """The bench mid-run, its agent-loop proxies up (started together for a conversation)."""
    argv = [sys.executable, "scripts/bench", "--shape", "10 KB agent loop"]

    def up(kids: set[int]) -> bool:
        planner = any("--serve-planner" in procs.cmdline(p) for p in kids)
        return planner and len(_mitmdumps(kids)) >= 4  # plain, naive, rewrite, observe

    _killed_leaves_nothing(argv, up)


def test_a_daemon_in_its_own_session_is_found_by_its_environment(tmp_path: Path) -> None:
    """The interop harness's last sweep (procs.kill_carrying): a process that left its
    parent's session and group (as Cline's hub daemon does) is killed by the HOME its run gave it;
    a process with another HOME is left alone."""
    home, other = tmp_path / "home", tmp_path / "home2"
    sleeper = "[sys.executable, '-c', 'import time; time.sleep(60)']"
    spawn = f"import os, subprocess, sys; os.setsid(); subprocess.Popen({sleeper})"
    # (its child outlives it, adopted by init: what the harness's killpg and parent-death signal miss)

    def daemon(h: Path) -> int:
        env = dict(os.environ, HOME=str(h))
        subprocess.run([sys.executable, "-c", spawn], env=env, check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            found = procs.carrying(f"HOME={h}")
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError("the daemon did not start")

    ours, theirs = daemon(home), daemon(other)
    try:
        assert os.getpgid(ours) != os.getpgid(0)
        assert procs.kill_carrying(f"HOME={home}") == [ours]
        assert not procs.wait_gone({ours}, 10)
        assert procs.alive(theirs)
    finally:
        procs.kill_carrying(f"HOME={other}")
