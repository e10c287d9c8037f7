"""Commands for chosen flows (``@marked``, ``@all``, a filter): diff, export, stats.

Run them from mitmweb's command bar or mitmproxy's console, e.g.
``bridge.stats @all``, ``bridge.diff @focus``, ``bridge.export @marked ~/bridge-records``.
They read what the bridge left on each flow (``flow.metadata["bridge"]`` and the
backup of the original request; for a WebSocket, ``flow.metadata["bridge_ws"]`` per
client frame: chat_hop/websocket.py) and re-derive the rest with the same core
(websocket_view.py for the frames).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Sequence

import mitmproxy.types
from mitmproxy import command, ctx, exceptions, flow, http

from ..chat_hop import websocket
from ..core.pipeline import rewrite
from ..records import planner as planner_record
from ..records import redact
from ..records.planner import DIALECT, is_planner_flow
from ..records.writer import Recorder, RecordJob
from ..runtime import META
from . import explain, planner_view, websocket_view
from .view import bridge_config, explain_flow, original_body, verdict

logger = logging.getLogger(__name__)


def _bridged(flows: Sequence[flow.Flow]) -> list[http.HTTPFlow]:
    return [
        f
        for f in flows
        if isinstance(f, http.HTTPFlow) and (isinstance(f.metadata.get(META), dict) or websocket.frames(f))
    ]


def _verdicts(f: http.HTTPFlow) -> list[dict]:
    """What the bridge left per request: the flow's, or one per WebSocket client frame it saw."""
    if isinstance(f.metadata.get(META), dict):
        return [f.metadata[META]]
    return [v for v in websocket.frames(f).values() if isinstance(v, dict)]


def _title(f: http.HTTPFlow) -> str:
    return f"== flow {f.id}: {f.request.method} {redact.url(f.request.pretty_url)}"


def diff_flow(f: http.HTTPFlow) -> str:
    """Before/after of one flow the bridge saw: the steps in one line each, then the history diff.

    Redacted like a record: the text goes to the event log, and command lines or tool output may hold
    credentials."""
    return redact.text(_diff_flow(f))


def _diff_flow(f: http.HTTPFlow) -> str:
    if f.websocket is not None and websocket.frames(f):
        return f"{_title(f)}\n{websocket_view.diff_text(f, bridge_config())}"
    if is_planner_flow(f):
        return f"{_title(f)}\n{planner_view.diff_text(planner_view.explain_planner(f))}"
    if (text := verdict(f)) is not None:  # not rewritten: nothing changed
        return f"{_title(f)}\n{text}\n"
    ex = explain_flow(f)
    lines = [_title(f), explain.headline(ex.summary)]
    lines += [f"note: {n}" for n in ex.notes]
    lines.append("steps:")
    lines += ["  " + explain.step_brief(i, s) for i, s in enumerate(ex.steps)]
    lines += explain.diff_lines(ex)
    return "\n".join(lines) + "\n"


def record_job(f: http.HTTPFlow) -> RecordJob:
    """The record the recorder would have written for this flow, rebuilt from the flow."""
    meta = f.metadata[META]
    req = f.request
    current = req.get_content(strict=False)
    status = str(meta.get("status"))
    summary = {k: v for k, v in meta.items() if k not in ("status", "reason")}
    job = RecordJob.of(
        f,
        status=status,
        reason=str(meta.get("reason", "")),
        dialect=None,
        before=current,
        summary=summary,
        comment=f.comment,
    )
    if is_planner_flow(f):
        job.dialect, job.before = DIALECT, None
        job.planner = planner_record.from_flow(f)
        job.notes = ["exported from a flow by bridge.export"]
    elif status == "rewritten":
        ex = explain_flow(f)
        job.before = original_body(f)
        job.after = current
        job.dialect = ex.dialect
        job.steps = ex.steps
        job.accounting = ex.accounting or []
        job.notes = ["exported from a flow by bridge.export", *ex.notes]
    elif current is not None:
        job.dialect = rewrite(current, bridge_config(), req.path).dialect  # what the addon saw: same core
    return job


def stats_text(flows: Sequence[flow.Flow], extra: Sequence[tuple[str, int]] = ()) -> str:
    bridged = _bridged(flows)
    verdicts = [v for f in bridged for v in _verdicts(f)]
    by_status = Counter(str(v.get("status")) for v in verdicts)
    steps = failed = unobserved = 0
    exit_codes: Counter[int] = Counter()
    kept: Counter[str] = Counter()
    for s in verdicts:
        if s.get("status") != "rewritten":
            continue
        steps += int(s.get("steps", 0))
        failed += int(s.get("failed", 0))
        unobserved += int(s.get("unobserved", 0))
        exit_codes.update(s.get("failed_exit_codes", []))
        kept.update({str(k): int(v) for k, v in (s.get("kept_by_code") or {}).items()})
    rows = [
        ("flows chosen", len(flows)),
        ("seen by the bridge", len(bridged)),
        *([("  requests (each WebSocket frame counts)", len(verdicts))] if len(verdicts) != len(bridged) else []),
        *((f"  {status}", n) for status, n in sorted(by_status.items())),
        ("steps sent", steps),
        ("failures found (commands with exit != 0)", failed),
        *((f"  exit {code}", n) for code, n in sorted(exit_codes.items())),
        ("calls never observed (unobserved)", unobserved),
        ("items kept as messages", sum(kept.values())),
        *((f"  {code}", n) for code, n in sorted(kept.items())),
        *extra,
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label.ljust(width)}  {n}" for label, n in rows) + "\n"


def records_rows() -> list[tuple[str, int]]:
    """The running addon's record counts (bridge_records), when records are on."""
    master = getattr(ctx, "master", None)
    recorder = getattr(master.addons.get("chathop"), "recorder", None) if master is not None else None
    if recorder is None:
        return []
    return [
        ("records written", recorder.written),
        ("records lost", recorder.lost),
        ("  failed to write", recorder.failed),
        ("  dropped (writer behind)", recorder.dropped),
        ("records removed by retention", recorder.removed),
    ]


class BridgeCommands:
    @command.command("bridge.diff")
    def diff(self, flows: Sequence[flow.Flow]) -> str:
        """Before/after of the chosen flows: each step (kind, exit code, command or file) and the
        message history item by item ('-' removed into steps, '+' added, ' ' unchanged)."""
        bridged = _bridged(flows)
        if not bridged:
            text = f"bridge.diff: none of the {len(flows)} chosen flows was seen by the bridge\n"
        else:
            text = "\n".join(diff_flow(f) for f in bridged)
        logger.info(text.rstrip("\n"))
        return text

    @command.command("bridge.export")
    def export(self, flows: Sequence[flow.Flow], path: mitmproxy.types.Path) -> str:
        """Write one JSON record per chosen flow the bridge saw into the directory at path, redacted
        like the recorder's (bridge_records): before/after, steps, accounting, conversation key."""
        bridged = _bridged(flows)
        recorder = Recorder(os.path.expanduser(path))
        written = 0
        for f in bridged:
            try:
                jobs = websocket_view.record_jobs(f, bridge_config()) if websocket.frames(f) else [record_job(f)]
            except Exception as e:  # one damaged flow must not stop the export
                logger.warning(f"bridge.export: flow {f.id}: {type(e).__name__}: {e}")
                continue
            written += sum(recorder.write(job) is not None for job in jobs)
        if bridged and not written:
            raise exceptions.CommandError(f"bridge.export: no record could be written to {recorder.directory}")
        text = f"bridge.export: wrote {written} records to {recorder.directory}"
        if len(flows) != len(bridged):
            text += f" ({len(flows) - len(bridged)} chosen flows were not seen by the bridge)"
        logger.info(text)
        return text

    @command.command("bridge.stats")
    def stats(self, flows: Sequence[flow.Flow]) -> str:
        """Summary of the chosen flows: how many the bridge saw and rewrote, steps sent, failures
        found (exit codes), and the tool calls and results kept as messages, by code."""
        text = stats_text(flows, records_rows())
        logger.info(text.rstrip("\n"))
        return text
