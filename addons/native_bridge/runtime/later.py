"""Work that may wait until a request has gone upstream: annotations, log lines, records,
the chat hop's observations (with the state in memory) and what its reading does beyond what
the request needs (the memo's new entry; with a shared state file, all but the observations)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mitmproxy import http
from mitmproxy.http import Headers
from mitmproxy.tools.dump import DumpMaster

logger = logging.getLogger(__name__)


def deferrable(flow: http.HTTPFlow) -> bool:
    """Whether this flow's request still goes upstream after the hook: a live flow without a
    reply. A capture read back (``-nr``) or a reply set by server replay is written out right
    after the hooks, so its annotations must be made now."""
    return flow.live and flow.response is None


def turn_running(flow: http.HTTPFlow) -> bool:
    """Whether ``flow``'s turn is still running: a live flow with neither a reply nor a failure,
    on the proxy's loop. Its record is held until then (Recorder.submit(held=True); the chat hop
    releases it with :func:`after_forward` from its ``response`` or ``error`` hook, so once the
    reply is out). Without a running loop (a test calling a hook directly), as after_forward: at once."""
    return deferrable(flow) and flow.error is None and running_loop() is not None


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The proxy's event loop; None when a test calls a hook directly."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def after_forward(work: Callable[[], None], loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Run ``work`` once the current hook has returned and mitmproxy has written the request out
    (from a ``response`` hook: the reply, to the client).

    mitmdump runs a hook in an eager task, inside the event that completed the request, with
    that connection's lock held; the task writes the request once it has the lock again, in
    the next loop step. A callback scheduled from that next step runs after the write, and
    before any reply (or any other connection's bytes) can be read: they wait for the step's
    select. (Scheduled from the hook itself, it ran before the write: an observe-mode reading
    held the request back by its whole length. tests/e2e/test_after_forward.py watches it.)
    Without a running loop (a test calling a hook directly), at once. ``loop``: the running
    loop, when the caller has it already."""
    loop = loop or running_loop()
    if loop is None:
        work()
        return

    def run() -> None:
        try:
            work()
        except Exception:  # bookkeeping must never take the proxy down
            logger.exception("bridge: the work after forwarding a request failed")

    loop.call_soon(loop.call_soon, run)  # from the next step: after the hook's task has written


Original = tuple[bytes | None, Headers]


def original(req: http.Request) -> Original:
    """The request as it came (raw body and headers), before a hop changes it."""
    return req.raw_content, req.headers.copy()


def keeps_backups(master: object, options: Any) -> bool:
    """Whether a changed flow's backup can ever be read: mitmweb and the console show it and
    revert to it, a flow file (``-w``: ``save_stream_file``) keeps it for replay_check.py and
    the views, and mitmdump prints bodies through the views from ``flow_detail`` 3 on (the
    bridge's views read the original from it). mitmdump writing no flow file and printing no
    bodies drops each flow when it ends, so a backup there (``flow.get_state()``, about 0.2 ms)
    would be made for no one."""
    if not isinstance(master, DumpMaster):
        return True
    return bool(getattr(options, "save_stream_file", None)) or getattr(options, "flow_detail", 0) >= 3


def shows_flows(master: object, options: Any) -> bool:
    """Whether a flow's state is read once its reply is written, so that a verdict made after
    the request went must be on the flow by then: mitmweb and the console show flows, a flow
    file (``-w``) writes each at its reply, and mitmdump prints bodies through the bridge's views
    (which read the verdict) from ``flow_detail`` 3 on: the same cases as :func:`keeps_backups`.
    mitmdump without any of them prints no comment, mark or metadata of a flow."""
    return keeps_backups(master, options)


def back_up(flow: http.HTTPFlow, came: Original) -> None:
    """mitmweb's revert, made after the change went upstream: back the flow up as it ``came``.

    ``flow.backup()`` serialises the whole flow, both connections included (about 0.2 ms),
    so it is not made before the changed request can go: the request as it came is put back
    for the moment of the backup instead. A backup made earlier (another addon's) is kept."""
    req = flow.request
    sent = req.raw_content, req.headers
    req.raw_content, req.headers = came
    try:
        flow.backup()
    finally:
        req.raw_content, req.headers = sent
