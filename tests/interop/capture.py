"""Capture the JavaScript clients' real tool results into tests/fixtures/corpus/<client>.json.

    .venv/bin/python scripts/interop.py capture [--client claude-code]
    PYTHONPATH=scripts .venv/bin/python tests/interop/capture.py [--client claude-code] [--out DIR]

Each installed client runs every scenario of jsclients.py through mitmdump with the bridge
switched off (``bridge=false``), so the fake model receives every request exactly as the
client sent it; each tool result is kept with its ground truth and the client's version.
Same document shape as pyclients.py: {client, version, source, tools, entries}.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import corpus_entry, installed, run_scenario, tool_schema_summary
from jsclients import DRIVERS

HERE = Path(__file__).resolve().parent

CORPUS = HERE.parent / "fixtures" / "corpus"
OFF = ("--set", "bridge=false")


def variants(client: str) -> list[str]:
    return [k for k, cls in DRIVERS.items() if cls.name == client]


def capture(client: str, tmp_root: Path, log: Any = print) -> dict[str, Any] | None:
    doc: dict[str, Any] = {
        "client": client,
        "version": None,
        "source": "tests/interop/jsclients.py",
        "tools": {},
        "entries": [],
    }
    for key in variants(client):
        entry = installed(client)
        if entry is None:
            log(f"{client}: not installed, skipped")
            return None
        d = DRIVERS[key](entry)
        doc["version"] = d.version
        for sc in d.scenarios():
            t0 = time.monotonic()
            run = run_scenario(d, sc, Path(tempfile.mkdtemp(prefix=f"{key}-{sc.id}-", dir=tmp_root)), OFF)
            got = sum(c.result is not None for c in run.captured)
            log(
                f"{key} {sc.id}: {got}/{len(sc.calls)} results in {time.monotonic() - t0:.1f} s (exit {run.returncode})"
            )
            tag = f"{key} ({d.dialect}, {d.transport})"
            if run.tools and tag not in doc["tools"]:
                doc["tools"][tag] = tool_schema_summary(run.tools)
            for cap in run.captured:
                if cap.result is None:
                    continue
                e = corpus_entry(run, cap)
                e["variant"] = key
                e["client_states_status"] = d.states_status(cap.result, cap.truth)
                doc["entries"].append(e)
    return doc


def main(argv: list[str] | None = None) -> int:
    clients = sorted({cls.name for cls in DRIVERS.values()})
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--client", action="append", choices=clients)
    p.add_argument("--out", type=Path, default=CORPUS)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="jsclients-capture-") as tmp:
        for client in args.client or clients:
            doc = capture(client, Path(tmp))
            if doc is None:
                continue
            path = args.out / f"{client}.json"
            path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
            print(f"{path}: {len(doc['entries'])} results from {client} {doc['version']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
