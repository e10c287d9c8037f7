"""Re-checking chat-hop requests with today's core: the original body through
:func:`...core.pipeline.rewrite` again, compared with what was recorded (the status, each step,
where each call and result went). Records hold redacted bodies, so both sides are compared redacted.
"""

from __future__ import annotations

from typing import Any

import orjson

from ...core.pipeline import Config, rewrite
from ...records import redact
from .. import explain
from .entry import Entry


def _clean(doc: Any, redacted: bool) -> Any:
    """JSON-normal form; redacted when the recorded side is (records are written redacted)."""
    doc = orjson.loads(orjson.dumps(doc))
    return redact.body(doc) if redacted else doc


def _placement_key(p: dict[str, Any]) -> tuple[Any, ...]:
    return (p.get("item"), p.get("id"), p.get("turn"))


def _where(p: dict[str, Any] | None) -> str:
    if p is None:
        return "(absent)"
    if "step" in p:
        return f"step #{p['step']}"
    return f"kept [{p.get('kept')}]"


def _accounting_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    old_by, new_by = {_placement_key(p): p for p in old}, {_placement_key(p): p for p in new}
    out = []
    for key in sorted(old_by.keys() | new_by.keys(), key=lambda k: (k[2] if isinstance(k[2], int) else -1, str(k))):
        a, b = old_by.get(key), new_by.get(key)
        if _where(a) != _where(b):
            item, call_id, turn = key
            name = (a or b or {}).get("name") or "?"
            out.append(f"{item:<6} {name}#{call_id} (turn {turn}): {_where(a)} -> {_where(b)}")
    return out


def recheck(entry: Entry, config: Config) -> list[str]:
    """What would change for this chat request under the current core; empty when nothing would."""
    if entry.before is None:
        return ["the original body is not available: cannot re-run"]
    if entry.context:  # a WebSocket frame answering server-held calls: the addon's own way
        from ...chat_hop import websocket  # (mitmproxy: only for such frames)

        now = websocket.bridge_body(entry.before, entry.context, config, entry.path, None, entry.client_hint)
    else:
        now = rewrite(entry.before, config, entry.path, client_hint=entry.client_hint)
    if entry.status == "observed" and now.status == "rewritten":
        # Observe mode (the chat hop's default): the same decisions, the body went upstream as it came.
        now.status, now.body = "observed", None
        if entry.accounting is None:  # a flow keeps no steps of an observed request, only its summary
            new_summary = now.summary()
            keys = ("steps", "failed_exit_codes", "kept_by_code", "unobserved", "delta_start")
            return [
                f"{k}: {entry.summary[k]} -> {new_summary.get(k)}"
                for k in keys
                if k in entry.summary and entry.summary[k] != new_summary.get(k)
            ]
    changes: list[str] = []
    if now.status != entry.status:
        old = f"{entry.status} ({entry.reason})" if entry.reason else entry.status
        new = f"{now.status} ({now.reason})" if now.reason else now.status
        changes.append(f"status: {old} -> {new}")
    changes += explain.step_changes(_clean(entry.steps, entry.redacted), _clean(now.steps, entry.redacted))
    new_acc_json = [p.to_json() for p in now.plan.accounting] if now.plan else []
    if entry.status != now.status and "rewritten" in (entry.status, now.status):
        changes.append(f"now: {explain.headline(now.summary())}" if now.status == "rewritten" else "now: no steps")
    elif entry.accounting is not None and now.status == "rewritten":
        changes += _accounting_changes(_clean(entry.accounting, entry.redacted), _clean(new_acc_json, entry.redacted))
    elif entry.accounting is None and now.status == "rewritten" == entry.status:
        # A flow file keeps only the summary: compare where the kept items went, by code.
        new_summary = now.summary()
        for key in ("kept_by_code", "unobserved", "delta_start"):
            if key in entry.summary and entry.summary[key] != new_summary.get(key):
                changes.append(f"{key}: {entry.summary[key]} -> {new_summary.get(key)}")
    if not changes and entry.status == "rewritten" and now.body is not None and entry.after is not None:
        delta_old = entry.after.get("additional_steps_delta_start")
        delta_new = orjson.loads(now.body).get("additional_steps_delta_start")
        if delta_old != delta_new:
            changes.append(f"additional_steps_delta_start: {delta_old} -> {delta_new}")
        elif _clean(orjson.loads(now.body), entry.redacted) != _clean(entry.after, entry.redacted):
            changes.append("the rewritten message history differs (same steps)")
    return changes


def describe(entry: Entry) -> str:
    """What was recorded for this chat request, in a few words."""
    s = entry.summary
    text = f"{entry.status}"
    if entry.status == "rewritten":
        codes = s.get("failed_exit_codes") or []
        text += f", {s.get('steps', len(entry.steps))} steps"
        text += f", exit codes {codes}" if codes else ""
        if "kept" in s:
            text += f", {s['kept']} kept as messages"
    elif entry.reason:
        text += f" ({entry.reason})"
    return text
