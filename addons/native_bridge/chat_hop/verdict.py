"""The verdict on a bridged chat request or WebSocket frame, one way for both: the one-line
comment, the log line and mark, the fail-open outcome, and the record."""

from __future__ import annotations

import logging
from typing import Any

from mitmproxy import http

from ..core.pipeline import STEPPED, Rewrite, failures
from ..records.writer import RecordJob
from ..runtime import MARKER
from .jobs import Outcome


def comment(result: Rewrite | Outcome, s: dict[str, Any], turn: dict[str, Any] | None = None) -> str:
    """The one-line verdict shown in mitmweb's flow list (``s``: the result's summary); with
    ``turn`` (a resumed reading's new steps: Rewrite.turn), the failures are those of the new
    steps only, so a log line made every turn does not grow with the history."""
    if result.status not in STEPPED:
        return f"bridge: {result.status} ({result.reason})"
    steps = f"{s['steps']} step{'' if s['steps'] == 1 else 's'}"
    text = f"bridge: {steps}" if result.status == "rewritten" else f"bridge: observed {steps}"
    codes = s["failed_exit_codes"]
    if turn is not None:
        text += f", {turn['steps']} new"
        codes = turn["failed_exit_codes"]
    if codes:
        text += f" ({failures(codes)})"
    text += f", {s['kept']} kept as messages"
    if s["unobserved"]:
        text += f", {s['unobserved']} unobserved"
    return text


def calm_level(options: Any) -> int | None:
    """The log level of a verdict that needs no attention; None: no line. With ``flow_detail=0``
    (mitmdump's own lines per flow off) it is a debug line, made only when
    ``termlog_verbosity=debug`` shows it: any log record, even one no handler prints, costs a
    quiet proxy about 0.2 ms (mitmproxy formats it and hands it to every addon as an
    ``add_log`` event), more than reading a 200 KB request's new part. mitmweb and the tests
    declare neither option."""
    if getattr(options, "flow_detail", 1) != 0:
        return logging.INFO
    return logging.DEBUG if getattr(options, "termlog_verbosity", "info") == "debug" else None


def announce(log: logging.Logger, flow: http.HTTPFlow, where: str, out: Outcome, calm: int | None) -> None:
    """The one log line for a bridged request or frame (``where``); the flow is marked when its
    steps state a failure or it kept unobserved calls, and logged at info. Any other verdict is
    logged at ``calm`` (:func:`calm_level`; None: not at all)."""
    summary = out.summary
    if out.status in STEPPED:
        attention = summary["failed"] or summary["unobserved"]
        if attention:
            flow.marked = MARKER
        level = logging.INFO if attention else calm
        if level is not None:
            log.log(level, f"bridge: {where}: {comment(out, summary, out.turn).removeprefix('bridge: ')}")
    elif out.status == "skipped":
        log.warning(f"bridge: {where}: passed through untouched: {out.reason}")


def error(e: Exception) -> Outcome:
    """The fail-open outcome: the request or frame goes upstream as the client sent it (the
    traceback is logged where the work failed: runtime/dispatch.py)."""
    return Outcome("error", f"{type(e).__name__}: {e}")


def record_job(flow: http.HTTPFlow, out: Outcome, before: bytes | None, line: str, **fields: Any) -> RecordJob:
    """The record of a bridged request or frame (``line``: its verdict as shown on the flow)."""
    return RecordJob.of(
        flow,
        status=out.status,
        reason=out.reason,
        dialect=out.dialect,
        before=before,
        after=out.body,
        steps=out.steps,
        accounting=out.accounting,
        summary=out.summary,
        comment=line,
        notes=out.notes,
        **fields,
    )
