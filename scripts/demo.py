"""The loopback demo: an agent session -> mitmdump with the bridge -> reference planner.

    .venv/bin/python scripts/demo.py [--records DIR] [--session FILE]

Starts the reference planner in process and a real ``mitmdump -s addons/bridge.py``
in reverse-proxy mode in front of it (127.0.0.1 only, ephemeral ports), sends the
bundled Claude-Code-like session through it, and prints what changed, how the
known gateway would have translated the same history, and where the records went.
Exit status 0: the planner accepted the rewritten request and its steps validated.

:class:`Mitmdump` and :func:`find_records` are reused by tests/e2e.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent
SESSION = SCRIPTS / "sessions" / "chat_session.json"
sys.path.insert(0, str(SCRIPTS))

import known_gateway  # noqa: E402
from native_bridge.shell import redact  # noqa: E402
from reference_planner import STEPS_KEY, Received, ReferencePlanner, validate_steps  # noqa: E402

DELTA_KEY = "additional_steps_delta_start"
RUN_HEADER = "x-bridge-run"
# mitmdump's startup line, e.g. "reverse proxy to http://127.0.0.1:9 listening at 127.0.0.1:50195."
_LISTENING = re.compile(r"listening at \S+:(\d+)\.?\s*$")


def mitmdump_path() -> str:
    """The mitmdump next to this interpreter, else the checkout's venv, else PATH."""
    for candidate in (Path(sys.executable).with_name("mitmdump"), ROOT / ".venv" / "bin" / "mitmdump"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("mitmdump")
    if found is None:
        raise FileNotFoundError("mitmdump not found (run scripts/dev setup)")
    return found


class Mitmdump:
    """A real mitmdump process running the bridge as a reverse proxy in front of ``upstream``."""

    def __init__(self, upstream: str, records: Path, confdir: Path, options: Sequence[str] = ()) -> None:
        self.args = [
            mitmdump_path(),
            "--mode",
            f"reverse:{upstream}",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            "0",
            "-s",
            str(ROOT / "addons" / "bridge.py"),
            "--set",
            f"bridge_records={records}",
            # The reference planner reads additional_steps, as a gateway that supports the field does.
            # (mitmproxy drops every deferred --set of a script option given twice: one only.)
            *(() if any(str(o).startswith("bridge_mode=") for o in options) else ("--set", "bridge_mode=rewrite")),
            # A private confdir: no user config.yaml leaks in, nothing written to ~/.mitmproxy.
            "--set",
            f"confdir={confdir}",
            *options,
        ]
        self.lines: list[str] = []
        self.port: int | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def start(self, timeout: float = 20.0) -> Mitmdump:
        self._proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            cwd=ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),  # its log lines must reach us as they happen
        )
        self._reader = threading.Thread(target=self._read, name="mitmdump-output", daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout) or self.port is None:
            code = self.stop()
            raise RuntimeError(f"mitmdump did not start listening in {timeout}s (exit {code}):\n{self.output}")
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if self.port is None and (m := _LISTENING.search(line)):
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()  # it exited: stop waiting

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """Terminate (SIGTERM lets the addon flush its records), kill if it hangs."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout)
        return self._proc.returncode

    def __enter__(self) -> Mitmdump:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def find_records(directory: Path, header: str, value: str) -> list[tuple[Path, dict[str, Any]]]:
    """The finished records (dot-files are writes in progress) of requests tagged ``header: value``."""
    found = []
    for path in sorted(directory.glob("[!.]*.json")):
        rec = orjson.loads(path.read_bytes())
        if [header, value] in [[k.lower(), v] for k, v in rec.get("request_headers", [])]:
            found.append((path, rec))
    return found


def wait_records(directory: Path, header: str, value: str, timeout: float = 10.0) -> list[tuple[Path, dict[str, Any]]]:
    """Records are written off the request path: poll until one shows up."""
    deadline = time.monotonic() + timeout
    while True:
        found = find_records(directory, header, value) if directory.is_dir() else []
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


# ---- the report ----------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> str:
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(indent + line for line in lines)


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tc for m in messages if m.get("role") == "assistant" for tc in m.get("tool_calls") or []]


def _results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "tool"]


def _args(call: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(call["function"]["arguments"] or "{}")


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


_EXIT = re.compile(r"(?i)^exit code:? (-?\d+)$")


def session_facts(session: dict[str, Any]) -> dict[str, Any]:
    """Ground truth read straight from the session, without the bridge."""
    messages = session["messages"]
    calls, results = _calls(messages), _results(messages)
    call_ids = {c["id"] for c in calls}
    result_of = {r["tool_call_id"]: r["content"] for r in results}
    failed_bash = {}
    for c in calls:
        text = result_of.get(c["id"])
        if c["function"]["name"] == "Bash" and isinstance(text, str) and text.strip():
            lines = text.strip().splitlines()
            m = _EXIT.match(lines[0].strip()) or _EXIT.match(lines[-1].strip())
            if m and int(m.group(1)) != 0:
                failed_bash[c["id"]] = (_args(c)["command"], int(m.group(1)))
    return {
        "unanswered": [c for c in calls if c["id"] not in result_of],
        "orphans": [r["tool_call_id"] for r in results if r["tool_call_id"] not in call_ids],
        "unmapped": [c["id"] for c in calls if c["function"]["name"] not in known_gateway.TOOL_KINDS],
        "failed_read": [
            c["id"]
            for c in calls
            if c["function"]["name"] == "Read" and "<tool_use_error>" in str(result_of.get(c["id"], ""))
        ],
        "failed_bash": failed_bash,
    }


def _ids_in(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for c in _calls(messages)} | {r["tool_call_id"] for r in _results(messages)}


def _run_commands(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s["runCommand"] for s in steps if "runCommand" in s]


def before_after(session: dict[str, Any], after: dict[str, Any], record: dict[str, Any] | None) -> str:
    before_m, after_m = session["messages"], after["messages"]
    steps = after.get(STEPS_KEY, [])
    rows = [
        ("messages", len(before_m), len(after_m)),
        ("tool calls (in messages)", len(_calls(before_m)), len(_calls(after_m))),
        ("tool results (in messages)", len(_results(before_m)), len(_results(after_m))),
        (STEPS_KEY, "-", len(steps)),
        (DELTA_KEY, "-", after.get(DELTA_KEY, "-")),
    ]
    out = [table(("", "before", "after"), rows)]
    failed = [
        (i, _short(redact.text(s["runCommand"].get("commandLine", "")), 56), s["runCommand"]["exitCode"])
        for i, s in enumerate(steps)
        if s.get("runCommand", {}).get("exitCode") not in (None, 0)
    ]
    out += ["", "  Failed steps, with their true exit codes:", table(("step", "command", "exit_code"), failed, "    ")]
    if record is not None:
        kept = [
            (p["item"], p["name"] or "?", p["id"], p["kept"], _short(p["reason"] or "", 60))
            for p in record["accounting"]
            if "kept" in p
        ]
        out += ["", "  Kept as messages (from the record's accounting):"]
        out.append(table(("item", "tool", "id", "code", "reason"), kept, "    "))
    return "\n".join(out)


def probes(session: dict[str, Any], after: dict[str, Any]) -> str:
    facts = session_facts(session)
    known = known_gateway.translate(session)
    known_by_call = dict(zip(known.step_calls, known.steps, strict=True))
    steps = after.get(STEPS_KEY, [])
    bridge_cmds = _run_commands(steps)

    unanswered = [_args(c).get("command", c["function"]["name"]) for c in facts["unanswered"]]
    k_unans = [
        known_by_call[c["id"]]["status"].removeprefix("CORTEX_STEP_STATUS_") if c["id"] in known_by_call else "no"
        for c in facts["unanswered"]
    ]
    b_unans = [sum(r.get("commandLine") == cmd for r in bridge_cmds) for cmd in unanswered]

    failed = facts["failed_bash"]
    k_codes = [known_by_call[i]["runCommand"].get("exitCode", "absent") for i in failed]
    b_codes = [
        next((r.get("exitCode", "absent") for r in bridge_cmds if r.get("commandLine") == cmd), "no step")
        for cmd, _ in failed.values()
    ]
    truth = [code for _, code in failed.values()]

    # proto3 JSON omits an empty string, so a no-result step shows no stdout even at the gateway.
    k_runs = _run_commands(known.steps)
    k_stdout = sum("stdout" in r for r in k_runs)
    b_stdout = sum("stdout" in r for r in bridge_cmds)

    lost = set(facts["unmapped"]) | set(facts["orphans"])
    k_kept = len(lost & _ids_in(known.messages))
    b_kept = len(lost & _ids_in(after["messages"]))

    reads = facts["failed_read"]
    k_reads = [known_by_call[i]["status"].removeprefix("CORTEX_STEP_STATUS_") for i in reads if i in known_by_call]
    b_reads = sum(i in _ids_in(after["messages"]) for i in reads)

    def codes(values: list[Any]) -> str:
        return ", ".join(map(str, values)) or "-"

    rows = [
        (
            "call with no result -> steps",
            f"{len(k_unans)} x {codes(k_unans)} step (empty output)",
            "no step" if not any(b_unans) else f"{sum(b_unans)} step(s)",
        ),
        (f"failed Bash -> exit_code (truth: {codes(truth)})", codes(k_codes), codes(b_codes)),
        (
            "separate stdout field",
            f"{'present' if k_stdout else 'absent'} ({k_stdout} of {len(k_runs)} run_command steps)",
            f"{'present' if b_stdout else 'absent'} ({b_stdout} of {len(bridge_cmds)} run_command steps)",
        ),
        (
            f"unmapped/orphan items ({len(lost)} ids)",
            f"dropped ({len(lost) - k_kept} of {len(lost)})",
            f"kept as messages ({b_kept} of {len(lost)})",
        ),
        ("failed Read -> steps", f"{codes(k_reads)} view_file step", "kept as message" if b_reads else "lost"),
        (
            "steps sent on a resumed turn",
            f"all {len(known.steps)} again",
            f"steps[{after[DELTA_KEY]}:] = {len(steps) - after[DELTA_KEY]}" if DELTA_KEY in after else "-",
        ),
    ]
    return table(("probe", "the known gateway", "bridge (what the planner received)"), rows)


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run(session_path: Path, records: Path) -> int:
    raw = session_path.read_bytes()
    session = orjson.loads(raw)
    run_id = uuid.uuid4().hex
    print(f"native_bridge demo: {_rel(session_path)} -> mitmdump -s addons/bridge.py -> reference planner")
    with tempfile.TemporaryDirectory(prefix="bridge-demo-") as confdir, ReferencePlanner() as planner:
        proxy = Mitmdump(planner.url, records, Path(confdir))
        try:
            proxy.start()
        except (RuntimeError, OSError) as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 2
        try:
            print(f"planner {planner.url}   proxy {proxy.url}   records {_rel(records)}/\n")
            reply = httpx.post(
                f"{proxy.url}/v1/chat/completions",
                content=raw,
                headers={"content-type": "application/json", RUN_HEADER: run_id},
                timeout=30,
            )
            found = wait_records(records, RUN_HEADER, run_id)
        finally:
            proxy.stop()
        got: list[Received] = planner.find(RUN_HEADER, run_id)
    if len(got) != 1 or not isinstance(got[0].json, dict):
        print(f"FAIL: the planner received {len(got)} requests; mitmdump said:\n{proxy.output}", file=sys.stderr)
        return 1
    received, after = got[0], got[0].json
    record = found[0][1] if found else None

    print("(a) Before / after: what the client sent, what the planner received")
    print(before_after(session, after, record))
    print("\n(b) Probes: the same session through the known gateway and through the bridge")
    print(probes(session, after))
    print(f"\n(c) Records: {len(found)} file(s) in {_rel(records)}/")
    for path, _ in found:
        print(f"  {_rel(path)}")
    jq = "{status, summary, kept: [.accounting[] | select(.kept) | {item, name, kept, reason}]}"
    print(f"  jq '{jq}' {_rel(records)}/*.json\n")

    errors = validate_steps(after) if STEPS_KEY in after else [f"no {STEPS_KEY} reached the planner"]
    problems = [*received.errors, *errors]
    if reply.status_code != 200 or received.status != 200:
        problems.append(f"HTTP {reply.status_code} from the proxy, {received.status} from the planner")
    if record is None:
        problems.append("no record was written")
    if problems:
        print("FAIL: " + "; ".join(problems), file=sys.stderr)
        return 1
    n = len(after[STEPS_KEY])
    print(f"OK: the planner accepted the rewritten request (HTTP 200) and all {n} steps validated.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Loopback demo of the native bridge.")
    parser.add_argument("--records", type=Path, help="record directory (default: demo-records/<timestamp>/)")
    parser.add_argument("--session", type=Path, default=SESSION, help="Chat Completions request body to send")
    args = parser.parse_args(argv)
    records = args.records
    if records is None:
        records = ROOT / "demo-records" / time.strftime("%Y%m%dT%H%M%S")
        if records.exists():  # two runs in one second
            records = records.with_name(f"{records.name}-{os.getpid()}")
    return run(args.session, records)


if __name__ == "__main__":
    sys.exit(main())
