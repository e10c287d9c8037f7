"""The README's main command: scripts/demo.py, run as a user runs it."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from .conftest import ROOT

pytestmark = pytest.mark.e2e

DEMO = ROOT / "scripts" / "demo.py"


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO), *args], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (Linux /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(text.encode() in a for a in args):
            found.append(b" ".join(args).decode(errors="replace"))
    return found


def row(out: str, label: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(label))


def test_demo_runs_and_shows_the_difference(tmp_path: Path) -> None:
    records = tmp_path / "records"
    proc = run_demo("--records", str(records))
    report = f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    assert proc.returncode == 0, report
    out = proc.stdout
    for heading in ("(a) Before / after", "(b) Probes", "(c) Records", "OK: the planner accepted"):
        assert heading in out, report
    assert row(out, "additional_steps_delta_start").split()[-1] == "21", report
    # The probe rows: the known gateway's lie next to what the planner really got.
    assert row(out, "call with no result").endswith("no step"), report
    assert "DONE step" in row(out, "call with no result"), report
    failed = row(out, "failed Bash").split("  ")
    assert [c.strip() for c in failed if c.strip()][-2:] == ["0, 0", "1, 2"], report
    assert "absent (0 of" in row(out, "separate stdout field"), report
    assert "kept as messages (3 of 3)" in row(out, "unmapped/orphan"), report
    assert "dropped (3 of 3)" in row(out, "unmapped/orphan"), report
    # The records went where it says, one per request, owner-only, and a jq line to read them.
    (record,) = records.glob("*.json")
    assert str(record.name) in out and "jq '" in out, report
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert orjson.loads(record.read_bytes())["status"] == "rewritten"
    assert processes_mentioning(str(records)) == [], "the demo left mitmdump running"


def test_demo_fails_when_the_planner_refuses(tmp_path: Path) -> None:
    # An assistant message with neither content nor tool calls: the planner answers 400.
    bad = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]}
    session = tmp_path / "bad.json"
    session.write_bytes(orjson.dumps(bad))
    proc = run_demo("--records", str(tmp_path / "records"), "--session", str(session))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL" in proc.stderr and "HTTP 400" in proc.stderr, proc.stderr
    assert processes_mentioning(str(tmp_path / "records")) == []
