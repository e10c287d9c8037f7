"""One rule for every process the scripts and tests start: it ends with its parent.

``die_with_parent`` asks the kernel (PR_SET_PDEATHSIG) to signal the calling process
when its parent dies, also when the parent is SIGKILLed and runs no cleanup of its own.
Used by the language-server shim for its children (between fork and exec), by the
stand-in language server for itself, by the interop harness for the agent clients, and
(``ending_with``) for every mitmdump and planner the tests, the demo and the bench start.

The kernel's "parent" is the *thread* that started the child: a child started from a
short-lived thread (a pool's) gets the signal when that thread ends. Start them from a
thread that lives as long as they should.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> bool:
    """Get ``sig`` when the parent dies. ``parent``: the pid the parent must be (in a child
    between fork and exec); without it, a parent already gone means init (pid 1) adopted us.
    A parent already gone before the request took effect is answered with ``sig`` now.
    False where prctl is not available (not Linux): then nothing is promised."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    gone = os.getppid() != parent if parent is not None else os.getppid() == 1
    if gone:
        os.kill(os.getpid(), sig)
    return True


def ending_with(parent: int, sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when ``parent`` (the
    caller's ``os.getpid()``, taken before the fork) dies, even SIGKILLed, and at once if it
    already has."""

    def setup() -> None:
        die_with_parent(sig, parent)

    return setup


def forks_exec_at_once() -> None:
    """Tell grpcio, before it is imported, that this process's forks exec at once (``ending_with``).

    Its fork support, on by default, re-arms gRPC in every forked child so that the child may
    go on using it; when a thread of the parent is in gRPC at the fork, the child's gRPC poller
    then meets the descriptors ``subprocess`` closes before exec and aborts the child (1 to 2 in
    100 with a busy in-process server: a mitmdump that never starts, tests/test_lifetime.py)."""
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
