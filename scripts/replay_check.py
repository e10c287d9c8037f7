"""Re-run captured requests through the current bridge core and show what would change.

    .venv/bin/python scripts/replay_check.py RECORDS_DIR_OR_FLOWS_FILE [...] [options]

Sources: a directory of records written by the addon (``bridge_records``) or by
``bridge.export``, a single record file, or a mitmproxy flow file (``-w``) made
behind the bridge. For every request the bridge saw, the original body goes
through today's :func:`native_bridge.core.pipeline` and the result is compared with
what was recorded: the status, each step (kind, status, exit code, command /
file / pattern, and the rest of its body) and where each call and result went.

Exit status: 0 when nothing would change, 1 when anything would (a regression
check for CI), 2 when a source cannot be read or holds nothing to check.

Records hold redacted bodies, so both sides are compared redacted. Flows the
bridge never saw (a capture made without it) have no baseline and are listed as
skipped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

try:
    from native_bridge.inspect import explain
    from native_bridge.records import redact
except ImportError:  # run from a checkout whose package is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "addons"))
    from native_bridge.inspect import explain
    from native_bridge.records import redact
from native_bridge.core.conversation import conversation_key
from native_bridge.core.kinds import KINDS, tool_map
from native_bridge.core.pipeline import DIALECTS, Config, rewrite
from native_bridge.inspect import replay as planner_replay


@dataclass(slots=True)
class Entry:
    """One request the bridge saw, as recorded: the original and what became of it."""

    source: str  # file (and flow id) it came from
    flow_id: str
    time: str
    method: str
    url: str
    status: str
    reason: str
    dialect: str | None
    before: bytes | None  # the original body (redacted when it comes from a record)
    after: dict[str, Any] | None
    steps: list[dict[str, Any]]
    accounting: list[dict[str, Any]] | None  # None: not known (a flow file holds no accounting)
    conversation: str | None
    summary: dict[str, Any] = field(default_factory=dict)
    redacted: bool = True
    client_hint: str | None = None  # the User-Agent the addon passed to the core (it names the client)
    context: list[dict[str, Any]] | None = None  # a WebSocket frame's server-held calls (chat_hop/websocket.py)

    native: NativeItem | None = None  # a planner-hop (native) send: re-checked by inspect/replay.py

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"


# ---- reading sources ------------------------------------------------------------------


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
    from native_bridge.chat_hop import websocket
    from native_bridge.inspect.view import original_body
    from native_bridge.runtime import META

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
    from native_bridge.chat_hop import websocket

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
            key = (entry.flow_id, entry.method, entry.native is not None)  # a WebSocket frame: "WS #i"
            if key not in seen:
                seen.add(key)
                entries.append(entry)
    chats = [e for e in entries if e.native is None]
    for e in entries:
        if e.native is not None:
            e.native.chats = chats  # the chat hop's evidence: requests captured before the send
    return entries, unseen


# ---- planner-hop (native) sends ----------------------------------------------------------


@dataclass(slots=True)
class NativeItem:
    """A SendUserCascadeMessage the planner hop saw, and the chat requests of the same sources."""

    case: planner_replay.PlannerCase
    chats: list[Entry] = field(default_factory=list)
    _seen: dict[int, list[Any]] = field(default_factory=dict)

    def evidence(self, time: str, config: Config) -> planner_replay.StoreEvidence:
        """What the chat hop had observed when this send was made (chat requests up to its time)."""
        seen = []
        for chat in self.chats:
            if chat.before is None or chat.time > time:
                continue
            if id(chat) not in self._seen:
                hint = getattr(chat, "client_hint", None)  # the User-Agent the addon saw, when the entry has it
                self._seen[id(chat)] = planner_replay.observations_of(chat.before, config, chat.path, hint)
            seen += self._seen[id(chat)]
        return planner_replay.evidence(seen)


def planner_entry(case: planner_replay.PlannerCase, rec: dict[str, Any], source: str) -> Entry:
    return Entry(
        source=source,
        flow_id=str(rec.get("flow_id")),
        time=str(rec.get("time", "")),
        method=str(rec.get("method", "")),
        url=redact.url(str(rec.get("url", ""))),
        status=case.status,
        reason=case.reason,
        dialect=planner_replay.DIALECT,
        before=None,
        after=None,
        steps=case.steps_after or [],
        accounting=None,
        conversation=f"cascade {case.cascade_id}" if case.cascade_id else None,
        summary={"steps_in": case.steps_in, "steps_out": case.steps_out, "delta_start": case.delta_start},
        redacted=case.redacted,
        native=NativeItem(case),
    )


# ---- comparing -----------------------------------------------------------------------


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


def compare(entry: Entry, config: Config) -> list[str]:
    """What would change for this entry under the current core; empty when nothing would."""
    if entry.native is not None:
        return planner_replay.recheck(entry.native.case, entry.native.evidence(entry.time, config))
    if entry.before is None:
        return ["the original body is not available: cannot re-run"]
    if entry.context:  # a WebSocket frame answering server-held calls: the addon's own way
        from native_bridge.chat_hop import websocket  # (mitmproxy: only for such frames)

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
    if entry.native is not None:
        return planner_replay.describe(entry.native.case)
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


def _split(values: Sequence[str]) -> list[str]:
    """Repeated options, each a comma-separated list: ``--kinds a,b --kinds c``."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def config_from(args: argparse.Namespace, p: argparse.ArgumentParser | None = None) -> Config:
    p = p or parser()
    try:
        tool_kinds = tool_map(_split(args.tools))
    except ValueError as e:
        p.error(f"--tools: {e}")
    kinds = _split(args.kinds)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        p.error(f"--kinds: unknown {', '.join(map(repr, unknown))} (choose from {', '.join(KINDS)})")
    return Config(frozenset(kinds) if kinds else frozenset(KINDS), tool_kinds, args.dialect)


def say(line: str) -> None:
    """Print redacted: flow files are not redacted, and command lines or tool output may hold credentials."""
    print(redact.text(line))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("sources", nargs="+", help="record directories, record files, or mitmproxy flow files")
    p.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="NAME=KIND[,...]",
        help="as the addon option bridge_tools (repeat, or separate with commas)",
    )
    p.add_argument(
        "--kinds",
        action="append",
        default=[],
        metavar="KIND[,...]",
        help=f"as bridge_kinds (repeat, or separate with commas; default: all): {', '.join(KINDS)}",
    )
    p.add_argument("--dialect", default="auto", choices=["auto", *DIALECTS], help="as bridge_dialect")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the flows that would change")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    config = config_from(args, p)
    try:
        entries, unseen = read_sources(args.sources)
    except (OSError, ValueError) as e:
        print(f"replay_check: {e}", file=sys.stderr)
        return 2
    if not entries:
        print("replay_check: nothing to check (no records, or no flow the bridge saw)", file=sys.stderr)
        return 2
    changed = 0
    for entry in sorted(entries, key=lambda e: (e.time, e.flow_id)):
        changes = compare(entry, config)
        if changes:
            changed += 1
        elif args.quiet:
            continue
        head = f"{'CHANGED' if changes else 'same   '}  {entry.time}  {entry.flow_id}  {entry.method} {entry.path}"
        say(head)
        say(f"         recorded: {describe(entry)}")
        for line in changes:
            say(f"         {line}")
    for line in unseen:
        if not args.quiet:
            say(f"skipped  {line}: not seen by the bridge (no baseline)")
    print(f"\n{len(entries)} checked, {len(entries) - changed} same, {changed} would change, {len(unseen)} skipped")
    return 1 if changed else 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
