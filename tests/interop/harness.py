"""Drive one real agent client through a real ``mitmdump -s addons/bridge.py`` to the fake model.

    client --(base URL)--> mitmdump --mode reverse:<fake model> -s addons/bridge.py --> FakeModel

One scenario = one fresh workspace (``ws/`` with ``hello.txt``), one HOME of its own,
one fake model scripted with the scenario's tool call(s), one mitmdump with its own
``bridge_records`` directory, one client run (``timeout`` seconds at most; the whole
process group is killed after). :func:`run_scenario` returns everything a test or the
corpus capture needs: the tool results the client sent (exactly as sent), the records,
the client's output.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import procs
from fakemodel import FakeModel, Request, ToolCall
from support.lifetime import die_with_parent
from support.mitmdump import Mitmdump  # the same real mitmdump the e2e tests and the demo run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

MANIFEST = Path(os.environ.get("INTEROP_MANIFEST", ROOT / ".interop" / "manifest.json"))
HELLO = "hello interop\nsecond line\n"

# Headers worth keeping in the corpus: they identify the client.
HEADER_SUBSET = (
    "user-agent",
    "x-app",
    "anthropic-version",
    "anthropic-beta",
    "x-stainless-lang",
    "x-stainless-package-version",
    "x-stainless-runtime",
    "originator",
    "openai-beta",
    "version",
    "x-goog-api-client",
    "x-goog-api-key-present",
    "http-referer",
    "x-title",
    "content-encoding",
)


def manifest() -> dict[str, Any]:
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


def installed(client: str) -> dict[str, Any] | None:
    """The manifest entry of an installed client, or None."""
    entry = manifest().get(client)
    if not entry or "error" in entry or "bin" not in entry or not Path(entry["bin"]).exists():
        return None
    return entry


def skip_reason(client: str) -> str:
    entry = manifest().get(client)
    if entry and "held" in entry:
        held = f"{client} {entry.get('version')} is held out of the default run (scripts/interop.py run --held)"
        return f"{held}: {entry['held']}"
    if entry and "stub" in entry:
        return f"{client} {entry.get('version')} is a stub release and cannot run: {entry['stub']}"
    if entry and "error" in entry:
        return f"{client} failed to install: {entry['error'][:300]}"
    return f"{client} is not installed (run: .venv/bin/python scripts/interop.py install; manifest {MANIFEST})"


@dataclass(frozen=True)
class Outcome:
    """The ground truth of one tool call."""

    kind: str  # "shell" | "read" | "edit"
    exit_code: int | None  # the real exit code (shell), None when there is none (killed) or not a shell
    ok: bool
    running: bool = False  # still running, or never ran (refused by the client): no outcome to state


@dataclass(frozen=True)
class Scenario:
    """One client run: the fake model asks for ``calls`` in turn; ``truths`` are their outcomes."""

    id: str
    calls: tuple[ToolCall, ...]
    truths: tuple[Outcome, ...]
    timeout: float = 60.0
    setup: Callable[[Path], None] | None = None  # prepares the workspace


@dataclass
class Captured:
    call: ToolCall
    truth: Outcome
    call_id: str | None
    result: Any  # the tool-result item exactly as sent, or None if the client sent none
    request: Request | None  # the model call that carried it


@dataclass
class Run:
    client: str
    version: str
    scenario: Scenario
    transport: str
    captured: list[Captured]
    requests: list[Request]
    records: list[dict[str, Any]]
    returncode: int | None
    stdout: str
    stderr: str
    proxy_output: str
    tools: list[dict[str, Any]] = field(default_factory=list)  # the client's tool definitions (first request)

    def describe(self) -> str:
        return (
            f"client {self.client} {self.version} scenario {self.scenario.id} ({self.transport})"
            f" exit {self.returncode}\n"
            f"--- requests ---\n"
            + "\n".join(f"{r.method} {r.path} [{r.transport}] answer={r.answer}" for r in self.requests)
            + f"\n--- client stdout ---\n{self.stdout[-3000:]}\n--- client stderr ---\n{self.stderr[-3000:]}"
            + f"\n--- mitmdump ---\n{self.proxy_output[-3000:]}"
        )


class Driver:
    """One client: how to configure it, start it, and what its tools are called."""

    name: str = ""
    dialect: str = ""
    transport: str = "http"

    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self.version = str(entry["version"])
        self.bin = str(entry["bin"])

    def env(self, home: Path, base_url: str) -> dict[str, str]:
        path = os.environ.get("PATH", "/usr/bin:/bin")
        if self.entry.get("node_bin"):
            path = f"{self.entry['node_bin']}:{path}"
        return {
            "HOME": str(home),
            "PATH": path,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "CI": "1",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "TMPDIR": str(home / "tmp"),
            # Nothing may leave loopback; a proxy variable in the caller's env must not apply.
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "DO_NOT_TRACK": "1",
            "DISABLE_TELEMETRY": "1",
        }

    def configure(self, home: Path, ws: Path, base_url: str) -> None:
        """Write the client's config files under ``home`` (and ``ws``)."""

    def states_status(self, result: Any, truth: Outcome) -> bool:
        """Whether this client's own result words state the command's status (its exit code,
        or a failure). Clients that always state it return True."""
        return True

    def argv(self, prompt: str, ws: Path) -> list[str]:
        raise NotImplementedError

    def scenarios(self, ws: Path) -> list[Scenario]:
        raise NotImplementedError

    def tool_call(self, scenario: Scenario, ws: Path) -> Callable[[Request], ToolCall | None] | ToolCall:
        return in_turn([substitute(c, ws) for c in scenario.calls])


def substitute(call: ToolCall, ws: Path) -> ToolCall:
    """``{ws}`` in a call's arguments becomes the workspace's absolute path."""

    def sub(v: Any) -> Any:
        if isinstance(v, str):
            return v.replace("{ws}", str(ws))
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        if isinstance(v, list):
            return [sub(x) for x in v]
        return v

    return ToolCall(call.name, sub(call.arguments), sub(call.raw_input))


def in_turn(calls: list[ToolCall]) -> Callable[[Any], ToolCall | None]:
    """The fake model's pick: each request gets the next call, in order; None after the last."""
    left = iter(calls)

    def pick(req: Any) -> ToolCall | None:
        return next(left, None)

    return pick


PROMPT = "Use the tool you are asked to use, then reply with one word."


def _die_with_parent() -> None:
    """In the client's child, before exec: SIGKILL when the test process dies however it dies (a client
    started in its own session gets no signal from the test's process group)."""
    die_with_parent(signal.SIGKILL)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


REWRITE = ("--set", "bridge_mode=rewrite")


def run_scenario(driver: Driver, scenario: Scenario, tmp: Path, mitm_options: tuple[str, ...] = REWRITE) -> Run:
    home, ws, records, conf = tmp / "home", tmp / "ws", tmp / "records", tmp / "mitmconf"
    for d in (home, ws, conf, home / "tmp"):
        d.mkdir(parents=True, exist_ok=True)
    (ws / "hello.txt").write_text(HELLO)
    if scenario.setup:
        scenario.setup(ws)
    fm = FakeModel(tool_call=driver.tool_call(scenario, ws), max_tool_calls=len(scenario.calls))
    fm.start()
    proxy = Mitmdump(fm.base_url, records, conf, mitm_options)
    try:
        proxy.start(timeout=30.0)
        driver.configure(home, ws, proxy.url)
        proc = subprocess.Popen(
            driver.argv(PROMPT, ws),
            cwd=ws,
            env=driver.env(home, proxy.url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            out, err = proc.communicate(timeout=scenario.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
        _kill_group(proc)  # anything it left behind (shells, servers)
        procs.kill_carrying(f"HOME={home}")  # and what escaped its group (Cline's hub daemon, its own session)
        rc = proc.returncode
    finally:
        proxy.stop()
        fm.stop()
    recs = []
    if records.exists():
        for p in sorted(records.glob("*.json")):
            with contextlib.suppress(ValueError):
                recs.append(json.loads(p.read_text()))
    captured = []
    # What the client sent: a rewritten request reaches the fake model without the pairs that
    # became steps, so the record's "before" (the body as the client sent it) comes first.
    results = [(r, item) for r in _record_requests(recs) for item in r.tool_results()]
    results += [(r, item) for r in fm.model_calls for item in r.tool_results()]
    for (cid, call), truth in zip(fm.calls_made, scenario.truths, strict=False):
        found = _find_result(driver.dialect, cid, call, results) or _next_new_result(fm.model_calls, cid)
        captured.append(Captured(call, truth, cid, found[1] if found else None, found[0] if found else None))
    first = fm.first_tool_request()
    return Run(
        driver.name,
        driver.version,
        scenario,
        driver.transport,
        captured,
        list(fm.requests),
        recs,
        rc,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        proxy.output,
        first.tools if first else [],
    )


def _record_requests(recs: list[dict[str, Any]]) -> list[Request]:
    out = []
    for rec in recs:
        if rec.get("before") is None:
            continue
        headers: dict[str, str] = {}
        for k, v in rec.get("request_headers") or []:
            headers[k.lower()] = f"{headers[k.lower()]}, {v}" if k.lower() in headers else v
        url = rec.get("url") or ""
        path = "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url
        out.append(
            Request(
                rec.get("method") or "POST",
                path,
                headers,
                rec["before"],
                transport="record",
                dialect=rec.get("dialect"),
            )
        )
    return out


def _find_result(
    dialect: str, cid: str | None, call: ToolCall, results: list[tuple[Request, Any]]
) -> tuple[Request, Any] | None:
    for req, item in results:
        if not isinstance(item, dict):
            continue
        fr = item.get("functionResponse") if isinstance(item.get("functionResponse"), dict) else {}
        if cid in (item.get("tool_call_id"), item.get("tool_use_id"), item.get("call_id"), fr.get("id")):
            return req, item
    return None


def _next_new_result(calls: list[Request], cid: str | None) -> tuple[Request, Any] | None:
    """Gemini's functionResponse ids are the client's own: the result of the call answered in
    model call i is the first result that model call i+1 carries beyond those of call i."""
    for i, r in enumerate(calls):
        if r.call_id == cid and cid is not None:
            before = len(r.tool_results())
            for nxt in calls[i + 1 :]:
                items = nxt.tool_results()
                if len(items) > before:
                    return nxt, items[before]
            return None
    return None


def header_subset(req: Request | None) -> dict[str, str]:
    if req is None:
        return {}
    return {k: v for k, v in req.headers.items() if k in HEADER_SUBSET}


def tool_schema_summary(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool names with their parameter keys only (what identifies a client)."""
    out = []
    for t in tools:
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        name = fn.get("name") or t.get("type")
        params = fn.get("parameters") or fn.get("input_schema") or fn.get("parametersJsonSchema") or {}
        props = params.get("properties") if isinstance(params, dict) else None
        entry: dict[str, Any] = {"name": name, "type": t.get("type")}
        entry["properties"] = sorted(props) if isinstance(props, dict) else None
        entry["required"] = sorted(params.get("required") or []) if isinstance(params, dict) else None
        if t.get("type") == "custom" and isinstance(t.get("format"), dict):
            entry["format"] = t["format"].get("type")
        out.append(entry)
    return out


def corpus_entry(run: Run, cap: Captured) -> dict[str, Any]:
    return {
        "client": run.client,
        "version": run.version,
        "dialect": _dialect_of(run, cap),
        "transport": run.transport,
        "scenario": run.scenario.id,
        "tool": cap.call.name,
        "arguments": cap.call.arguments if cap.call.raw_input is None else cap.call.raw_input,
        "call_id": cap.call_id,
        "outcome": {"kind": cap.truth.kind, "exit_code": cap.truth.exit_code, "ok": cap.truth.ok}
        | ({"running": True} if cap.truth.running else {}),
        "result": cap.result,
        "request_headers_subset": header_subset(cap.request),
    }


def _dialect_of(run: Run, cap: Captured) -> str:
    return (cap.request.dialect if cap.request else None) or ""


# ---- what the records say -------------------------------------------------------------------------
@dataclass
class Verdict:
    record: dict[str, Any] | None  # the record of the request that carried the result
    step: dict[str, Any] | None  # the step the result became, or None
    kept: dict[str, Any] | None  # the accounting entry when it stayed a message


def verdict_for(run: Run, cap: Captured) -> Verdict:
    """The first record whose request carried this result, and where the result went."""
    for rec in run.records:
        for entry in rec.get("accounting") or []:
            if entry.get("item") == "result" and entry.get("id") == cap.call_id:
                step = None
                if entry.get("step") is not None:
                    from native_bridge.records.writer import steps_of  # long output refers to before

                    step = (steps_of(rec) or [])[entry["step"]]
                return Verdict(rec, step, None if step else entry)
    # not in any accounting: is there a record of the request at all?
    blob = json.dumps(cap.result, sort_keys=True) if cap.result is not None else None
    for rec in run.records:
        before = json.dumps(rec.get("before"), sort_keys=True) if rec.get("before") is not None else ""
        if cap.call_id and cap.call_id in before:
            return Verdict(rec, None, None)
        if blob and blob[1:-1] in before:
            return Verdict(rec, None, None)
    return Verdict(None, None, None)


def truth_failures(run: Run, cap: Captured, states_code: bool | None = None) -> list[str]:
    """What the bridge got wrong for this result (empty: the truth). ``states_code``: whether the
    client's own result text states the exit status (None: take the truth as stated)."""
    problems: list[str] = []
    if cap.result is None:
        return [f"the client sent no tool result for {cap.call.name} ({cap.call_id})"]
    v = verdict_for(run, cap)
    text = json.dumps(cap.result)[:600]
    if v.record is None:
        return [f"bypassed: no bridge record holds the request that carried the result {text}"]
    if v.record.get("status") == "error":
        problems.append(f"the bridge failed on the request: {v.record.get('reason')}")
    t = cap.truth
    if t.running:
        if v.step is not None:
            problems.append(f"false claim: a command still running became a {v.step.get('type')} step; result {text}")
        return problems
    if t.kind == "shell":
        if v.step is not None:
            rc = v.step.get("runCommand")
            if rc is None:
                problems.append(f"became a non-shell step {v.step.get('type')}")
                return problems
            got = rc.get("exitCode")
            if t.exit_code is None:  # killed / timed out: any claim must be a failure
                if got == 0:
                    problems.append(f"false claim: exit 0 for a killed command; result {text}")
                elif got is None and states_code is not False:
                    problems.append(
                        f"lost failure: a killed command reached the planner with no exit code; result {text}"
                    )
            elif got != t.exit_code:
                if got is None and states_code is False:
                    pass  # the client's words carry no status: absent is the truth
                elif got is None and t.exit_code == 0:
                    problems.append(f"success not stated: exitCode absent (truth 0); result {text}")
                elif got is None:
                    problems.append(f"lost failure: exitCode absent, truth {t.exit_code}; result {text}")
                else:
                    problems.append(f"false claim: exitCode {got}, truth {t.exit_code}; result {text}")
        else:
            reason = (v.kept or {}).get("kept"), (v.kept or {}).get("reason")
            if states_code is not False and (t.exit_code is None or t.exit_code != 0):
                problems.append(f"failure kept as a message {reason} instead of a step with its code; result {text}")
            elif states_code is not False and t.exit_code == 0:
                problems.append(f"success kept as a message {reason}; result {text}")
    elif t.kind == "read":
        if t.ok:
            # A successful read may stay a message only when the client's words do not say it succeeded.
            if (v.step is None and states_code is not False) or (v.step is not None and "viewFile" not in v.step):
                problems.append(
                    f"a successful read did not become a viewFile step ({(v.kept or {}).get('reason')}); result {text}"
                )
        elif v.step is not None:
            problems.append(f"false claim: a failed read became a {v.step.get('type')} step; result {text}")
    elif t.kind == "edit" and not t.ok and v.step is not None:
        problems.append(f"false claim: a failed edit became a {v.step.get('type')} step; result {text}")
        # A successful edit may stay a message (e.g. apply_patch has no lossless step): no claim.
    return problems


def bypassed(run: Run) -> list[str]:
    """Model calls that carried tool history but have no record (went through unbridged)."""
    out = []
    for r in run.requests:
        if r.answer in ("tool_call", "final") and r.tool_results():
            blob = json.dumps(r.tool_results()[0], sort_keys=True)[1:-1]
            if not any(blob in json.dumps(rec.get("before"), sort_keys=True) for rec in run.records):
                out.append(f"{r.method} {r.path} [{r.transport}]")
    return out


def wait_gone(pids: list[int], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.05)
