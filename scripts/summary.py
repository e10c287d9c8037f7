"""A before/after table of what the bridge did, one row per request, grouped by conversation.

    .venv/bin/python scripts/summary.py RECORDS_DIR_OR_FLOWS_FILE [...]

Sources as for replay_check.py: record directories (``bridge_records``,
``bridge.export``), record files, or mitmproxy flow files made behind the bridge.
Each conversation (its key: a session header, request metadata,
``previous_response_id``, or a digest of the opening turns; never a raw id) gets
its requests in time order: history items before and after, steps sent, failed
commands with their exit codes, and how many calls and results stayed messages.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

try:
    from native_bridge.inspect import explain
except ImportError:  # run from a checkout whose package is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "addons"))
    from native_bridge.inspect import explain
from native_bridge.inspect.replay import Entry, read_sources
from native_bridge.inspect.replay import planner as planner_replay
from native_bridge.records import redact

HEADERS = ("time", "flow", "request", "status", "items", "steps", "failed (exit)", "kept", "unobserved")


def planner_row(e: Entry) -> tuple[str, ...]:
    """A planner-hop send: steps the gateway sent -> steps the language server got, and what changed."""
    assert e.planner is not None
    case = e.planner.case
    clock = e.time[11:19] if len(e.time) >= 19 else e.time
    method = e.path.rsplit("/", 1)[-1]
    if case.status != "corrected":
        status = f"{case.status}: {case.reason}" if case.reason else case.status
        return (clock, e.flow_id[:8], f"{e.method} {method}", status, "-", str(case.steps_in or "-"), "-", "-", "-")
    codes = planner_replay.exit_codes(case)
    failed = f"{len(codes)} ({', '.join(map(str, codes))})" if codes else "0"
    dropped = sum(a == "dropped" for _, a in case.changes)
    delivered = f" ({case.delta_start} delivered before)" if case.delta_start else ""
    steps = f"{case.steps_in} -> {case.steps_out}{delivered}"
    status = f"corrected ({dropped} dropped)" if dropped else "corrected"
    return (clock, e.flow_id[:8], f"{e.method} {method}", status, "-", steps, failed, "-", "-")


def row(e: Entry) -> tuple[str, ...]:
    if e.planner is not None:
        return planner_row(e)
    before = explain.load_json(e.before)
    _, items_before = explain.history_items(before, e.dialect)
    s = e.summary
    if e.status == "rewritten":
        _, items_after = explain.history_items(e.after, e.dialect)
        items = f"{len(items_before)} -> {len(items_after)}"
        codes = s.get("failed_exit_codes") or []
        failed = f"{len(codes)} ({', '.join(map(str, codes))})" if codes else "0"
        kept = str(s.get("kept", "?"))
        unobserved = str(s.get("unobserved", 0))
        status = "rewritten"
        steps = str(len(e.steps))
    else:
        items = f"{len(items_before)}" if before is not None else "-"
        failed = kept = unobserved = steps = "-"
        status = f"{e.status}: {e.reason}" if e.reason else e.status
    clock = e.time[11:19] if len(e.time) >= 19 else e.time
    return (clock, e.flow_id[:8], f"{e.method} {e.path}", status, items, steps, failed, kept, unobserved)


def table(rows: Sequence[Sequence[str]], headers: Sequence[str] = HEADERS, indent: str = "  ") -> str:
    cells = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(indent + line for line in lines)


def planner_totals(entries: Sequence[Entry]) -> str:
    """The planner hop's sends, counted by cascade."""
    cases = [e.planner.case for e in entries if e.planner is not None]
    cascades = {c.cascade_id for c in cases}
    corrected = [c for c in cases if c.status == "corrected"]
    actions: dict[str, int] = defaultdict(int)
    for c in corrected:
        for _, a in c.changes:
            actions[a] += 1
    by_action = ", ".join(f"{k} {v}" for k, v in sorted(actions.items())) or "none"
    steps_in = sum(c.steps_in or 0 for c in corrected)
    steps_out = sum(c.steps_out or 0 for c in corrected)
    send_word, cascade_word = f"send{'s' * (len(cases) != 1)}", f"cascade{'s' * (len(cascades) != 1)}"
    return (
        f"{len(cases)} planner-hop {send_word} in {len(cascades)} {cascade_word}, "
        f"{len(corrected)} corrected, {steps_in} steps from the gateway -> {steps_out} sent; changes: {by_action}"
    )


def totals(entries: Sequence[Entry]) -> str:
    entries = [e for e in entries if e.planner is None]  # planner-hop sends: planner_totals
    rewritten = [e for e in entries if e.status == "rewritten"]
    steps = sum(len(e.steps) for e in rewritten)
    failed = sum(len(e.summary.get("failed_exit_codes") or []) for e in rewritten)
    kept: dict[str, int] = defaultdict(int)
    for e in rewritten:
        for code, n in (e.summary.get("kept_by_code") or {}).items():
            kept[code] += int(n)
    by_code = ", ".join(f"{k} {v}" for k, v in sorted(kept.items())) or "none"
    return (
        f"{len(entries)} requests, {len(rewritten)} rewritten, {steps} steps sent, {failed} failed commands; "
        f"kept as messages: {by_code}"
    )


def render(entries: Sequence[Entry], unseen: Sequence[str] = ()) -> str:
    groups: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        groups[e.conversation or "(no conversation key)"].append(e)
    out = []
    for key, group in sorted(groups.items(), key=lambda kv: min(e.time for e in kv[1])):
        group.sort(key=lambda e: (e.time, e.flow_id))
        out.append(f"conversation {key}: {len(group)} request{'s' * (len(group) != 1)}")
        out.append(table([row(e) for e in group]))
        out.append("")
    if unseen:
        out.append(f"{len(unseen)} flows not seen by the bridge (not listed)")
    if any(e.planner is None for e in entries):
        out.append(totals(entries))
    if any(e.planner is not None for e in entries):
        out.append(planner_totals(entries))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sources", nargs="+", help="record directories, record files, or mitmproxy flow files")
    args = p.parse_args(argv)
    try:
        entries, unseen = read_sources(args.sources)
    except (OSError, ValueError) as e:
        print(f"summary: {e}", file=sys.stderr)
        return 2
    if not entries:
        print("summary: no request the bridge saw", file=sys.stderr)
        return 2
    print(redact.text(render(entries, unseen)))  # flow files are not redacted: reasons, paths
    return 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
