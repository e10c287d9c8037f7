"""Record rendering in a worker process.

Rendering a record (decode both bodies, redact every field and string, encode) is
CPU work in C and regular expressions that holds the GIL; on the writer thread it
would stall mitmproxy's event loop for as long as it runs. A single spawned worker
process does it instead; the writer thread only ships the job there and writes the
bytes it gets back. If the worker cannot be started or dies, rendering falls back to
the calling thread, so a record is never lost for it.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

logger = logging.getLogger(__name__)


def _worker_init() -> None:
    # Ctrl-C reaches the whole process group: the proxy decides when the worker stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Renderer:
    def __init__(self, render: Callable[[Any], bytes]) -> None:
        self._render = render  # a module-level function, so the worker can import it
        self._pool: ProcessPoolExecutor | None = None
        self._broken = False

    def render(self, job: Any) -> bytes:
        if not self._broken:
            try:
                if self._pool is None:
                    context = multiprocessing.get_context("spawn")  # never fork a threaded proxy
                    self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=_worker_init)
                return self._pool.submit(self._render, job).result()
            except (BrokenProcessPool, OSError, RuntimeError) as e:
                logger.warning(
                    f"bridge: record worker process unavailable ({type(e).__name__}: {e}); "
                    "rendering records in the proxy process"
                )
                self._broken = True
                self.close()
        return self._render(job)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
