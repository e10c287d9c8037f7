"""What every script in scripts/ does at its entry point: exit with main()'s code, and end quietly when
the reader of its output goes away (``script | head``) instead of printing a BrokenPipeError traceback."""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable
from typing import NoReturn


def _stdout_broken() -> bool:
    """Whether our own stdout lost its reader (a pipe whose read end is closed reports POLLERR)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, 0)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll (Windows), no real stdout: assume it was ours
        return True


def run(main: Callable[[], int | None]) -> NoReturn:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_broken():
            raise  # a socket or a child's pipe, not our reader: a real error
        # Python would flush stdout again at exit and report the same error: point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    sys.exit(code)
