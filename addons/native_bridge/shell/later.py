"""Work that may wait until a request has gone upstream: annotations, log lines, records,
and (with the state in memory) the chat hop's observations."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mitmproxy import http

logger = logging.getLogger(__name__)


def deferrable(flow: http.HTTPFlow) -> bool:
    """Whether this flow's request still goes upstream after the hook: a live flow without a
    reply. A capture read back (``-nr``) or a reply set by server replay is written out right
    after the hooks, so its annotations must be made now."""
    return flow.live and flow.response is None


def after_forward(work: Callable[[], None]) -> None:
    """Run ``work`` once the current hook has returned and mitmproxy has sent the request on.

    A hook that returns synchronously lets the proxy write the request in the same loop
    step; a callback scheduled now runs in the next step, before any reply (or any other
    connection's bytes) can be read. Without a running loop (a test calling a hook
    directly), at once."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        work()
        return

    def run() -> None:
        try:
            work()
        except Exception:  # bookkeeping must never take the proxy down
            logger.exception("bridge: the work after forwarding a request failed")

    loop.call_soon(run)
