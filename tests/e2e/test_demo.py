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
    assert row(out, "additional_steps_delta_start").split()[-1] == "19", report
    # The probe rows: the known gateway's lie next to what the planner really got.
    assert row(out, "call with no result").endswith("no step"), report
    assert "DONE step" in row(out, "call with no result"), report
    failed = row(out, "failed Bash").split("  ")
    # Claude Code over Chat Completions: its "Exit code N" counts only with is_error, which this
    # dialect cannot carry: no claim (absent), never the gateway's 0; the reason is printed.
    assert [c.strip() for c in failed if c.strip()][-2:] == ["0, 0", "absent, absent"], report
    assert "absent, not 0: the session's client is Claude Code (named by its tools)" in out, report
    # The reference fix's probe, no client named (issue 17): 2 on the chat hop and on the planner hop alone.
    assert row(out, "reference probe, no client").split("  ")[-1].strip() == "chat hop 2; planner hop alone 2", report
    assert "absent (0 of" in row(out, "separate stdout field"), report
    assert "kept as messages (3 of 3)" in row(out, "unmapped/orphan"), report
    assert "dropped (3 of 3)" in row(out, "unmapped/orphan"), report
    # The records went where it says, one per request, owner-only, and a jq line to read them.
    chat_part, planner_part = out.split("(c) Records", 1)[1].split("(d) Planner hop", 1)
    (record,) = [p for p in records.glob("*.json") if p.name in chat_part]
    assert "jq '" in chat_part, report
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert orjson.loads(record.read_bytes())["status"] == "rewritten"
    assert processes_mentioning(str(records)) == [], "the demo left mitmdump running"

    # (d) The planner hop: the real gateway's gRPC sends through the same mitmdump, the four defects.
    def cells(label: str) -> list[str]:
        return [c.strip() for c in row(planner_part, label).split("  ") if c.strip()][-2:]

    assert cells("failed command -> exit_code (truth: 1, 2)") == ["0, 0", "1, 2"], report
    assert cells("output: stdout (4) repeats") == ["3 of 3 run_command steps", "0 of 2 run_command steps"], report
    assert cells("call with no result (npm run dev)") == ["1 x DONE step", "no step"], report
    assert cells("resumed cascade (turn 2)") == ["all 5 again", "1 (only the new: cat test_x.py)"], report
    assert "OK: the language server accepted both corrected sends" in out, report
    planner_records = [p for p in records.glob("*.json") if p.name in planner_part]
    assert len(planner_records) == 2, report
    for p in planner_records:
        rec = orjson.loads(p.read_bytes())
        assert (rec["dialect"], rec["status"]) == ("cascade", "corrected")
        assert all(c["reason"] for c in rec["planner"]["changes"])
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    # The shipped gateway bodies carry a planted key (Metadata.api_key): no record holds it.
    assert not [p for p in records.glob("*.json") if b"wsk-FIXTURE-KEY" in p.read_bytes()]
    assert "wsk-FIXTURE-KEY" not in out


def test_demo_fails_when_the_planner_refuses(tmp_path: Path) -> None:
    # An assistant message with neither content nor tool calls: the planner answers 400.
    bad = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]}
    session = tmp_path / "bad.json"
    session.write_bytes(orjson.dumps(bad))
    proc = run_demo("--records", str(tmp_path / "records"), "--session", str(session))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL" in proc.stderr and "HTTP 400" in proc.stderr, proc.stderr
    assert processes_mentioning(str(tmp_path / "records")) == []
