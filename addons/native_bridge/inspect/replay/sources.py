"""Reading a capture: record directories, record files and mitmproxy flow files, into entries.

Records hold redacted bodies; a flow file (``-w``) holds them as they were, and a flow the
bridge never saw (a capture made without it) has no baseline: it is listed as unseen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ...core.conversation import conversation_key
from ...records import redact
from .. import explain
from . import planner as planner_replay
from .entry import Entry, planner_entry


def entry_from_record(rec: dict[str, Any], source: str) -> Entry:
    if rec.get("dialect") == planner_replay.DIALECT:
        return planner_entry(planner_replay.from_record(rec), rec, source)
    before_doc = rec.get("before")
    if isinstance(before_doc, dict):
        before: bytes | None = orjson.dumps(before_doc)
    elif isinstance(rec.get("before_text"), str):
        before = rec["before_text"].encode()
    else:
        before = None
    headers = [(str(k), str(v)) for k, v in rec.get("request_headers") or []]
    conversation = rec.get("conversation") or conversation_key(headers, before)
    ex = explain.explain_record(rec)
    frame = rec.get("websocket_message")
    context = rec.get("websocket_context")
    return Entry(
        source=source,
        flow_id=str(rec.get("flow_id")),
        time=str(rec.get("time", "")),
        method=f"WS #{frame}" if isinstance(frame, int) else str(rec.get("method", "")),
        url=str(rec.get("url", "")),
        status=str(rec.get("status")),
        reason=str(rec.get("reason", "")),
        dialect=rec.get("dialect"),
        before=before,
        after=ex.after,
        steps=ex.steps,
        accounting=ex.accounting if rec.get("status") == "rewritten" else [],
        conversation=conversation,
        summary=ex.summary,
        client_hint=_user_agent(headers),
        context=context if isinstance(context, list) else None,
    )


def _user_agent(headers: Iterable[tuple[str, str]]) -> str | None:
    return next((v for k, v in headers if k.lower() == "user-agent"), None)


def read_records(path: Path) -> Iterator[Entry]:
    files = sorted(p for p in path.glob("*.json") if not p.name.startswith(".")) if path.is_dir() else [path]
    for p in files:
        rec = orjson.loads(p.read_bytes())
        if not isinstance(rec, dict) or "record_version" not in rec:
            raise ValueError(f"{p}: not a bridge record")
        yield entry_from_record(rec, str(p))


def read_flows(path: Path) -> tuple[list[Entry], list[str]]:
    """Entries for the flows the bridge saw, and a line for each HTTP flow it did not."""
    from mitmproxy import http, io  # only flow files need mitmproxy

    from ...chat_hop import websocket
    from ...runtime import META
    from ..view import original_body

    entries, unseen = [], []
    with path.open("rb") as fo:
        for f in io.FlowReader(fo).stream():
            if not isinstance(f, http.HTTPFlow):
                continue
            if f.websocket is not None and websocket.frames(f):
                entries += _frame_entries(path, f)
                continue
            meta = f.metadata.get(META)
            req = f.request
            if not isinstance(meta, dict):
                unseen.append(f"{req.method} {redact.url(req.pretty_url)}")
                continue
            if meta.get("dialect") == planner_replay.DIALECT:
                when = datetime.fromtimestamp(req.timestamp_start, UTC).isoformat().replace("+00:00", "Z")
                rec = {"flow_id": f.id, "time": when, "method": req.method, "url": req.pretty_url}
                entries.append(planner_entry(planner_replay.from_flow(f), rec, f"{path} flow {f.id}"))
                continue
            current = req.get_content(strict=False)
            rewritten = meta.get("status") == "rewritten"
            before = original_body(f) if rewritten else current
            after = explain.load_json(current) if rewritten else None
            steps = explain.explain_record({"after": after}).steps if after else []
            original_headers = list(req.headers.items(multi=True))
            if rewritten and isinstance(f._backup, dict):
                original_headers = list(http.Request.from_state(dict(f._backup["request"])).headers.items(multi=True))
            entries.append(
                Entry(
                    source=f"{path} flow {f.id}",
                    flow_id=f.id,
                    time=datetime.fromtimestamp(req.timestamp_start, UTC).isoformat().replace("+00:00", "Z"),
                    method=req.method,
                    url=redact.url(req.pretty_url),
                    status=str(meta.get("status")),
                    reason=str(meta.get("reason", "")),
                    dialect=None,
                    before=before,
                    after=after,
                    steps=steps,
                    accounting=None,
                    conversation=conversation_key(original_headers, before),
                    summary={k: v for k, v in meta.items() if k not in ("status", "reason")},
                    redacted=False,
                    client_hint=req.headers.get("user-agent"),
                )
            )
    return entries, unseen


def _frame_entries(path: Path, f: Any) -> list[Entry]:
    """One entry per WebSocket client frame the bridge saw (Responses over WebSocket)."""
    from ...chat_hop import websocket

    out = []
    req = f.request
    for i in websocket.bridged_indexes(f):
        meta = websocket.frames(f)[str(i)]
        message = f.websocket.messages[i]
        rewritten = meta.get("status") == "rewritten"
        original = meta.get("original")
        before = (original if isinstance(original, bytes) else None) if rewritten else message.content
        after = explain.load_json(message.content) if rewritten else None
        context = meta.get("context") if isinstance(meta.get("context"), list) else None
        out.append(
            Entry(
                source=f"{path} flow {f.id} message {i}",
                flow_id=f.id,
                time=datetime.fromtimestamp(message.timestamp, UTC).isoformat().replace("+00:00", "Z"),
                method=f"WS #{i}",
                url=redact.url(req.pretty_url),
                status=str(meta.get("status")),
                reason=str(meta.get("reason", "")),
                dialect=None,
                before=before,
                after=after,
                steps=explain.explain_record({"after": after}).steps if after else [],
                accounting=None,
                conversation=conversation_key(list(req.headers.items(multi=True)), before),
                summary={k: v for k, v in meta.items() if k not in ("status", "reason", "original", "context")},
                redacted=False,
                client_hint=req.headers.get("user-agent"),
                context=context,
            )
        )
    return out


def read_sources(sources: Iterable[str]) -> tuple[list[Entry], list[str]]:
    """Every flow the bridge saw in the sources, once: the same flow in a record directory and in
    the flow file captured alongside it (``records/ capture.flows``) is one entry, the first seen."""
    entries: list[Entry] = []
    unseen: list[str] = []
    seen: set[tuple[str, str, bool]] = set()
    for s in sources:
        path = Path(s)
        if not path.exists():
            raise FileNotFoundError(f"{s}: no such file or directory")
        if path.is_file() and path.suffix != ".json":
            got, skipped = read_flows(path)
            unseen += skipped
        else:
            got = list(read_records(path))
        for entry in got:
            key = (entry.flow_id, entry.method, entry.planner is not None)  # a WebSocket frame: "WS #i"
            if key not in seen:
                seen.add(key)
                entries.append(entry)
    chats = [e for e in entries if e.planner is None]
    for e in entries:
        if e.planner is not None:
            e.planner.chats = chats  # the chat hop's evidence: requests captured before the send
    return entries, unseen
