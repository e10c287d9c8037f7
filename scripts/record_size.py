#!/usr/bin/env python3
"""How much disk records take: the bundled sessions replayed turn by turn, as agents send them.

An agent resends the whole history on every request, so a conversation of N tool rounds
is N requests whose bodies grow. For each bundled session (tests/fixtures/sessions/*.json) this
cuts the history after every round of results, rewrites each prefix with the core, renders
the record the addon would write (default options) and adds up the sizes. Old-format figures
(before + after + steps in full, pretty-printed: version 1) are shown for comparison.

    .venv/bin/python scripts/record_size.py
    .venv/bin/python scripts/record_size.py --requests-per-day 1500
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

try:
    from native_bridge.core.pipeline import rewrite
except ImportError:  # a checkout whose package is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "addons"))
    from native_bridge.core.pipeline import rewrite
from native_bridge.records import writer as records

SESSIONS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sessions"
DIALECTS = {
    "chat_session.json": ("/v1/chat/completions", "messages"),
    "anthropic_session.json": ("/v1/messages", "messages"),
    "responses_session.json": ("/v1/responses", "input"),
}


def is_result(item: dict[str, Any]) -> bool:
    if item.get("role") == "tool" or str(item.get("type", "")).endswith("_output"):
        return True
    content = item.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def prefixes(doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The bodies an agent sends over this conversation: the history up to each round of results."""
    items = doc[key]
    cuts = [
        i + 1 for i, it in enumerate(items) if is_result(it) and (i + 1 == len(items) or not is_result(items[i + 1]))
    ]
    return [{**doc, key: items[:cut]} for cut in cuts]


def measure(max_record: int) -> list[tuple[str, int, int, int, int]]:
    rows = []
    for name, (path, key) in DIALECTS.items():
        doc = orjson.loads((SESSIONS / name).read_bytes())
        n = body_total = new_total = old_total = 0
        for body_doc in prefixes(doc, key):
            raw = orjson.dumps(body_doc)
            r = rewrite(raw, path=path)
            job = records.RecordJob(
                "f",
                1.7e9,
                "POST",
                f"https://planner{path}",
                [],
                r.status,
                r.reason,
                r.dialect,
                raw,
                r.body,
                r.steps,
                [p.to_json() for p in r.plan.accounting] if r.plan else [],
                r.summary(),
                max_record=max_record,
            )
            new = records._render(job)
            rec = orjson.loads(new)
            rec["after"] = records.after_doc(rec)  # version 1 held the whole after body
            rec["steps"] = records.steps_of(rec)  # and the steps in full
            rec.pop("after_patch", None)
            old = orjson.dumps(rec, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
            n += 1
            body_total += len(raw)
            new_total += len(new)
            old_total += len(old)
        rows.append((name, n, body_total, new_total, old_total))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests-per-day", type=int, default=1000, help="planner requests a day (default 1000)")
    ap.add_argument("--max-record", default="16M", help="bridge_records_max_record (default 16M)")
    args = ap.parse_args(argv)
    rows = measure(records.parse_size(args.max_record))
    print(f"{'session':<24} {'requests':>8} {'bodies':>10} {'records':>10} {'per req':>9} {'v1 records':>11}")
    n_all = rec_all = 0
    for name, n, body, new, old in rows:
        print(f"{name:<24} {n:>8} {body:>10,} {new:>10,} {new // n:>9,} {old:>11,}")
        n_all += n
        rec_all += new
    per = rec_all / n_all
    day = per * args.requests_per_day
    print(f"\nmean record {per / 1024:.1f} KiB; {args.requests_per_day} requests a day: {day / 2**20:.0f} MiB a day")
    return 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
