"""One rule for every process the scripts and tests start: it ends with its parent.

``die_with_parent`` asks the kernel (PR_SET_PDEATHSIG) to signal the calling process
when its parent dies, also when the parent is SIGKILLed and runs no cleanup of its own.
Used by the language-server shim for its children (between fork and exec), by the
stand-in language server for itself, and by the interop harness for the agent clients.
"""

from __future__ import annotations

import ctypes
import os
import signal

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
