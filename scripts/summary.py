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

sys.path.insert(0, str(Path(__file__).resolve().parent))

# replay_check reads the sources (and puts the checkout's package on sys.path when it is not installed).
from replay_check import Entry, explain, read_sources, redact

HEADERS = ("time", "flow", "request", "status", "items", "steps", "failed (exit)", "kept", "unobserved")


def row(e: Entry) -> tuple[str, ...]:
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


def totals(entries: Sequence[Entry]) -> str:
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
    out.append(totals(entries))
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
    sys.exit(main())
