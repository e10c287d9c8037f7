"""Children that end with this process, started from one thread that lives as long as it does.

``support.lifetime.ending_with`` asks the kernel to signal a child when its parent dies; the
kernel's "parent" is the *thread* that forked it. A child started from a short-lived thread (a
pool's, ``asyncio.to_thread``'s) would be signalled when that thread ends. ``popen`` therefore
forks every child from one daemon thread made for it, which ends only with the process:

    proc = launcher.popen(["redis-server", conf], stdout=log)   # a subprocess.Popen
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .lifetime import ending_with

_lock = threading.Lock()
_jobs: queue.SimpleQueue[tuple[Sequence[str], dict[str, Any], Future[subprocess.Popen[Any]]]] | None = None
_owner = 0  # the pid that started the thread: a forked child starts its own


def _serve(jobs: queue.SimpleQueue[tuple[Sequence[str], dict[str, Any], Future[subprocess.Popen[Any]]]]) -> None:
    while True:
        argv, kwargs, done = jobs.get()
        try:
            done.set_result(subprocess.Popen(argv, **kwargs))
        except BaseException as e:
            done.set_exception(e)


def _queue() -> queue.SimpleQueue[tuple[Sequence[str], dict[str, Any], Future[subprocess.Popen[Any]]]]:
    global _jobs, _owner
    with _lock:
        if _jobs is None or _owner != os.getpid():
            _jobs = queue.SimpleQueue()
            _owner = os.getpid()
            threading.Thread(target=_serve, args=(_jobs,), name="children-launcher", daemon=True).start()
        return _jobs


def popen(argv: Sequence[str], *, sig: int = signal.SIGTERM, **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **kwargs)``, the child getting ``sig`` when this process dies
    (also SIGKILLed). A child that execs another program keeps it (``ip netns exec``, which
    execs its command, passes it on); a set-uid program drops it."""
    if "preexec_fn" in kwargs:
        raise TypeError("popen sets preexec_fn itself (support.lifetime.ending_with)")
    kwargs["preexec_fn"] = ending_with(os.getpid(), sig)
    done: Future[subprocess.Popen[Any]] = Future()
    _queue().put((list(argv), kwargs, done))
    return done.result()


def run(
    argv: Sequence[str], *, timeout: float | None = 60, check: bool = False, input: Any = None, **kwargs: Any
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` for a child started by :func:`popen` (output captured unless told otherwise)."""
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs.setdefault("capture_output", True)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    else:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    proc = popen(argv, **kwargs)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:  # the timeout, or an interrupt: the child does not outlive the call
        proc.kill()
        proc.wait()
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def _starttime(pid: int) -> str | None:
    """The process's start time (clock ticks after boot): it tells a reused pid from the one we knew."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[19]


def owner_tag() -> str:
    """``<pid>-<starttime>`` of this process: put in the names of what it leaves on the machine
    (temporary directories, network namespaces), so that a later run can tell what a dead one left."""
    pid = os.getpid()
    return f"{pid}-{_starttime(pid)}"


def owner_alive(tag: str) -> bool:
    """Whether the process an :func:`owner_tag` names still runs."""
    pid, _, start = tag.partition("-")
    return pid.isdigit() and _starttime(int(pid)) == start
