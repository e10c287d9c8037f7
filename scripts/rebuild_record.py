#!/usr/bin/env python3
"""Rebuild the rewritten body (``after``) of bridge records, byte for byte.

A record holds each body once: ``before`` and ``after_patch`` (what the bridge changed).
This prints the body that went upstream, rebuilt from them, and checks it against the
record's ``after_sha256``: identical unless redaction masked a secret in the body.

    .venv/bin/python scripts/rebuild_record.py records/20261130T101500.123456-<flow>.json > after.json
    .venv/bin/python scripts/rebuild_record.py --check records/          # every record: exact or not
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import orjson

try:
    from native_bridge.records.writer import rebuild_after
except ImportError:  # a checkout whose package is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "addons"))
    from native_bridge.records.writer import rebuild_after


def files(sources: list[str]) -> list[Path]:
    out: list[Path] = []
    for s in sources:
        p = Path(s)
        out += sorted(q for q in p.glob("*.json") if not q.name.startswith(".")) if p.is_dir() else [p]
    return out


def check(path: Path) -> tuple[str, bytes | None]:
    rec = orjson.loads(path.read_bytes())
    if not isinstance(rec, dict) or "record_version" not in rec:
        raise ValueError(f"{path}: not a bridge record")
    data = rebuild_after(rec)
    if data is None:
        return "no rewritten body", None
    want = rec.get("after_sha256")
    if want is None:
        return "rebuilt (the record has no after_sha256 to check against)", data
    if hashlib.sha256(data).hexdigest() == want:
        return "exact", data
    return "differs from the bytes sent (redacted secrets)", data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", help="record files or directories")
    ap.add_argument("--check", action="store_true", help="report each record instead of printing the body")
    args = ap.parse_args(argv)
    paths = files(args.sources)
    if not args.check:
        if len(paths) != 1:
            ap.error("give exactly one record to print its body (or --check for many)")
        verdict, data = check(paths[0])
        if data is None:
            print(f"{paths[0]}: {verdict}", file=sys.stderr)
            return 2
        sys.stdout.buffer.write(data)
        if verdict != "exact":
            print(f"{paths[0]}: {verdict}", file=sys.stderr)
        return 0
    inexact = 0
    for p in paths:
        verdict, _ = check(p)
        inexact += verdict.startswith("differs")
        print(f"{p}: {verdict}")
    return 1 if inexact else 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
