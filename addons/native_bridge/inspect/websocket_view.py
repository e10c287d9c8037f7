"""A WebSocket flow's client frames as the views, bridge.diff and bridge.export show them:
what the chat hop did with each frame (chat_hop/websocket.py writes it under ``WS_META``),
re-derived with the same core and the same server-held calls."""

from __future__ import annotations

from typing import Any

import orjson
from mitmproxy import http

from ..chat_hop.websocket import FRAME_TYPE, bridge_body, bridged_indexes, frames
from ..core.pipeline import STEPPED, Config, rewrite
from ..records.writer import RecordJob
from . import explain


def message_index(flow: http.HTTPFlow, message: Any) -> int | None:
    """The index of ``message`` (by identity) in the flow's WebSocket messages."""
    if flow.websocket is None:
        return None
    for i, m in enumerate(flow.websocket.messages):
        if m is message:
            return i
    return None


def _canonical(content: bytes) -> bytes:
    """A sent frame as the core wrote it (orjson's bytes: chat_hop.websocket.wire may have escaped it)."""
    try:
        return orjson.dumps(orjson.loads(content))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return content


def frame_verdict(flow: http.HTTPFlow, index: int) -> str | None:
    """One line for a message the bridge did not rewrite or observe (None: it did)."""
    assert flow.websocket is not None
    message = flow.websocket.messages[index]
    if not message.from_client:
        return "bridge: a server frame (model output): the bridge leaves it as it came"
    entry = frames(flow).get(str(index))
    if not isinstance(entry, dict):
        return f"bridge: the bridge did not bridge this frame (not a {FRAME_TYPE} frame of a selected flow)"
    if entry.get("status") in STEPPED:
        return None
    return f"bridge: {entry.get('status')} ({entry.get('reason')}): the frame went upstream as the client sent it"


def explain_frame(flow: http.HTTPFlow, index: int, config: Config) -> explain.Explained:
    """What the bridge did with the client frame at ``index``; ValueError unless it rewrote or observed it."""
    entry = frames(flow).get(str(index))
    status = entry.get("status") if isinstance(entry, dict) else None
    if status not in STEPPED or flow.websocket is None:
        raise ValueError("the bridge did not rewrite or observe this frame")
    assert isinstance(entry, dict)
    content, path = flow.websocket.messages[index].content, flow.request.path
    ua = flow.request.headers.get("user-agent")  # as the addon passed it: it names the client
    original = entry.get("original") if status == "rewritten" else content
    before = original if isinstance(original, bytes) else None
    context = entry.get("context") if isinstance(entry.get("context"), list) else []
    if context and before is not None:
        return _explain_with_context(before, content, context, status == "rewritten", path, config, ua)
    if status == "rewritten":
        return explain.explain_bodies(before, _canonical(content), path, config, ua)
    again = rewrite(content, config, path, client_hint=ua).body
    ex = explain.explain_bodies(content, again, path, config, ua)
    ex.notes.insert(0, _OBSERVED)
    return ex


_OBSERVED = (
    "observe mode: the frame went upstream as the client sent it; these steps are what its "
    "history states (shared with the planner hop)"
)


def _explain_with_context(
    before: bytes,
    sent: bytes,
    context: list[dict[str, Any]],
    rewritten: bool,
    path: str,
    config: Config,
    ua: str | None,
) -> explain.Explained:
    """A frame whose outputs answer server-held calls: shown with those calls in front (as the core read it)."""
    doc = orjson.loads(before)
    full = orjson.dumps({**doc, "input": [*context, *doc["input"]]})
    again = rewrite(full, config, path, client_hint=ua).body
    ex = explain.explain_bodies(full, again, path, config, ua)
    if rewritten:
        try:
            same = bridge_body(before, context, config, path, None, ua).body == _canonical(sent)
        except Exception:  # a damaged flow must not break the view
            same = False
        if not same:
            ex.accounting = None
            ex.notes.append("the current rules, run on the original frame, no longer give the frame as sent")
    else:
        ex.notes.insert(0, _OBSERVED)
    ex.notes.insert(
        0,
        f"previous_response_id: the first {len(context)} item(s) are calls the server holds (from that "
        "response, as sent on this WebSocket); the frame itself starts after them",
    )
    return ex


def diff_text(flow: http.HTTPFlow, config: Config) -> str:
    """bridge.diff for a WebSocket flow: each bridged frame, steps in one line each, then its history diff."""
    out: list[str] = []
    for i in bridged_indexes(flow):
        out.append(f"-- websocket message {i} ({FRAME_TYPE})")
        if (text := frame_verdict(flow, i)) is not None:
            out.append(text)
            continue
        ex = explain_frame(flow, i, config)
        out.append(explain.headline(ex.summary))
        out += [f"note: {n}" for n in ex.notes]
        out.append("steps:")
        out += ["  " + explain.step_brief(s, step) for s, step in enumerate(ex.steps)]
        out += explain.diff_lines(ex)
    return "\n".join(out) + "\n"


def record_jobs(flow: http.HTTPFlow, config: Config) -> list[RecordJob]:
    """The records the recorder would have written for this flow's frames, rebuilt from the flow."""
    assert flow.websocket is not None
    req, jobs = flow.request, []
    for i in bridged_indexes(flow):
        entry = frames(flow)[str(i)]
        message = flow.websocket.messages[i]
        status = str(entry.get("status"))
        job = RecordJob.of(
            flow,
            timestamp=message.timestamp,
            status=status,
            reason=str(entry.get("reason", "")),
            dialect=None,
            before=message.content,
            summary={k: v for k, v in entry.items() if k not in ("status", "reason", "original")},
            comment=flow.comment,
            notes=["exported from a flow by bridge.export"],
            websocket_message=i,
            websocket_context=entry.get("context") or None,
        )
        if status == "rewritten":
            ex = explain_frame(flow, i, config)
            original = entry.get("original")
            job.before = original if isinstance(original, bytes) else None
            job.after = _canonical(message.content)
            job.dialect, job.steps, job.accounting = ex.dialect, ex.steps, ex.accounting or []
            job.notes += ex.notes
        else:
            job.dialect = rewrite(message.content, config, req.path, client_hint=req.headers.get("user-agent")).dialect
        jobs.append(job)
    return jobs
