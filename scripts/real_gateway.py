#!/usr/bin/env python3
"""Both hops in front of the REAL gateway (dwgx/WindsurfAPI v3.9.27), fully offline.

    agent (this script, the fixture chat turns)
      -> chat hop:    mitmdump -s addons/bridge.py --set bridge_mode=observe      (127.0.0.1:3914)
      -> gateway:     node src/index.js, LS_BINARY_PATH=scripts/language-server-shim (127.0.0.1:3913)
      -> planner hop: the shim's mitmdump on the port the gateway asked for        (127.0.0.1:42100)
      -> language server: scripts/fake_language_server.py on the shim's free port

Both mitmdumps share one state file (``bridge_state``) and its logs: the chat hop stores what it
observed (the client's results, is_error), the planner hop reads it to state the true exit
codes, and keeps its per-cascade ledger there.

``--no-chat-hop``: the agent posts straight to the gateway; the planner hop is the only
bridge, its shim settings name no client and its state file (``planner.sqlite``, its
ledger) is its own, so every exit code it states comes from the gateway's steps alone.

Usage::

    .venv/bin/python scripts/real_gateway.py [--gateway DIR] [--state DIR] [--transport grpc|connect]
        [--scenario anthropic|codex] [--no-chat-hop]

``--gateway``: a checkout of dwgx/WindsurfAPI at v3.9.27 (no npm install needed; default
``$BRIDGE_GATEWAY_DIR``, else /work/gateway/WindsurfAPI); needs Node >= 20. ``--state``: where
everything of the run goes (default: a new temporary directory, kept), notably::

    out/captures.jsonl        what the language server received (SendUserCascadeMessage, raw, base64)
    out/rpc.jsonl             every call the language server received
    out/gateway.log           the gateway's log (with the language server's and the shim's stderr)
    out/chat-mitmdump.log     the chat hop;  out/planner-mitmdump.log: the planner hop
    out/chat-turn*.response.json
    records/chat, records/planner, bridge.sqlite   (the bridge's records and state;
                              without the chat hop: records/planner and planner.sqlite only)
    out/summary.json          the decoded steps per turn, leftovers, where the planted key was found

Scenarios (``--scenario``), two turns each, the second resuming the first's cascade:

* ``anthropic`` (default): shared/fixtures/gateway-3.9.27/chat-turn1.json and chat-turn2.json
  (Claude Code, ``POST /v1/messages``, with its User-Agent);
* ``codex``: tests/fixtures/real_gateway/codex-turn1.json and codex-turn2.json (Codex CLI over
  Chat Completions, ``POST /v1/chat/completions``, no User-Agent): ``shell_command`` results in
  Codex's own frame (``Exit code: N\\nWall time: ... seconds\\nOutput:\\n...``, openai/codex
  codex-rs/core/src/tools/mod.rs format_exec_output_for_model_freeform): turn 1 ``ls /nope``
  exit 2; turn 2 adds ``npm test`` (the stand-in planner's proposal) exit 1.

It prints what the language server received.

Isolation (as /work/gateway/run.sh): everything runs inside ``unshare --mount --net --pid
--fork --mount-proc --kill-child`` (root, or a user allowed to create those namespaces):
only ``lo`` is up, so the gateway's start-up calls to server.codeium.com and its DNS lookups
fail at once and nothing leaves the host; /home and /opt are bind-mounted from the state
directory (the gateway writes /home/user/projects/... and /opt/windsurf/data/db); when the
run ends the kernel ends every process left in the namespace. The script also reports
processes still alive after the gateway and the chat hop were stopped (there should be none).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_PYTHON = (3, 12)

if __name__ == "__main__" and sys.version_info < MIN_PYTHON:
    _venv = ROOT / ".venv" / "bin" / "python"
    if _venv.exists():
        os.execv(str(_venv), [str(_venv), str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit(f"real_gateway.py: needs Python 3.12+ (no {_venv})")

import argparse  # noqa: E402
import base64  # noqa: E402
import contextlib  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "gateway-3.9.27"
SHIM = ROOT / "scripts" / "language-server-shim"
FAKE_LS = ROOT / "scripts" / "fake_language_server.py"
MITMDUMP = ROOT / ".venv" / "bin" / "mitmdump"
DEFAULT_GATEWAY = Path("/work/gateway/WindsurfAPI")
UNSHARE = ["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc", "--kill-child"]

GATEWAY_PORT = 3913
CHAT_PORT = 3914
# The namespace's ephemeral ports, above the language server's (the gateway's 42100 and the next
# ones it walks to): the gateway probes 42100 before anything listens there, and a probe that
# draws 42100 as its own local port connects to itself and holds it (TCP self-connect), so the
# planner hop cannot bind it ("address already in use", seen once in CI).
EPHEMERAL_PORTS = "45000 60999"
API_KEY = "sk-real-gateway-local-key"  # the gateway's own client key (agent -> gateway)
CODEIUM_API_KEY = "wsk-FIXTURE-KEY-0123456789"  # the gateway's key for the language server, as in the fixtures
PLANTED = b"wsk-FIXTURE-KEY"
CLAUDE_CODE_UA = "claude-cli/2.1.332 (external, cli)"
CODEX_FIXTURES = ROOT / "tests" / "fixtures" / "real_gateway"


@dataclass(frozen=True)
class Scenario:
    """What the agent sends: the route, the two turns, its headers; what the stand-in planner
    proposes after turn 1 (turn 2 returns its result)."""

    path: str
    turns: tuple[Path, Path]
    headers: dict[str, str]
    tool_command: str


SCENARIOS = {
    "anthropic": Scenario(
        "/v1/messages",
        (FIXTURES / "chat-turn1.json", FIXTURES / "chat-turn2.json"),
        {
            "x-api-key": API_KEY,
            "anthropic-version": "2023-06-01",
            # The fixtures' agent is Claude Code, and says so (core/clients.py): its own result frames count.
            "user-agent": CLAUDE_CODE_UA,
        },
        "cat test_x.py",
    ),
    "codex": Scenario(
        "/v1/chat/completions",
        (CODEX_FIXTURES / "codex-turn1.json", CODEX_FIXTURES / "codex-turn2.json"),
        # Codex CLI over Chat Completions, unnamed: no User-Agent (post() sends none of its own).
        {"authorization": f"Bearer {API_KEY}"},
        "npm test",
    ),
}


def gateway_dir(given: str | None) -> Path | None:
    """The gateway checkout: --gateway, else $BRIDGE_GATEWAY_DIR, else /work/gateway/WindsurfAPI."""
    for candidate in (given, os.environ.get("BRIDGE_GATEWAY_DIR"), str(DEFAULT_GATEWAY)):
        if candidate and (Path(candidate) / "src" / "index.js").is_file():
            return Path(candidate).resolve()
    return None


def why_not(gateway: Path | None) -> str | None:
    """Why the run cannot happen here (None: it can)."""
    if gateway is None:
        return (
            f"no copy of dwgx/WindsurfAPI (v3.9.27) at $BRIDGE_GATEWAY_DIR or {DEFAULT_GATEWAY} "
            "(src/index.js not found)"
        )
    if shutil.which("node") is None:
        return "node is not installed (the gateway's runtime, Node >= 20)"
    missing = [p for sc in SCENARIOS.values() for p in sc.turns if not p.is_file()]
    if missing:
        return f"the scenario fixtures are missing: {', '.join(map(str, missing))}"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run([*UNSHARE, "--", "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"cannot create mount/net/pid namespaces here ({probe.stderr.strip() or probe.returncode})"
    return None


# ------------------------------------------------------------------ outside: prepare, run, report


def prepare(state: Path, transport: str, scenario: str = "anthropic", chat_hop: bool = True) -> dict[str, Path]:
    names = ["home", "opt", "gwhome", "tmp", "data", "lsdata", "out", "records/planner"]
    if chat_hop:
        names.append("records/chat")
    paths = {name: state / name for name in names}
    paths["conf"] = state / "mitmproxy-conf"
    for p in (*paths.values(),):
        p.mkdir(parents=True, exist_ok=True)
    # With the chat hop, both hops share one state file; without it, the planner hop's is its own.
    paths["bridge_state"] = state / ("bridge.sqlite" if chat_hop else "planner.sqlite")
    shim_toml = paths["gwhome"] / ".config" / "native-bridge" / "shim.toml"
    shim_toml.parent.mkdir(parents=True, exist_ok=True)
    shim_toml.write_text(
        "# written by scripts/real_gateway.py\n"
        f"ls_binary = {json.dumps(str(FAKE_LS))}\n"
        f"state = {json.dumps(str(paths['bridge_state']))}\n"
        f"records = {json.dumps(str(paths['records/planner']))}\n"
        f"log = {json.dumps(str(paths['out'] / 'planner-mitmdump.log'))}\n"
        f"options = [{json.dumps('confdir=' + str(paths['conf']))}]\n"
    )
    fake_ls = paths["gwhome"] / ".fake_ls" / "config.json"
    fake_ls.parent.mkdir(parents=True, exist_ok=True)
    fake_ls.write_text(
        json.dumps(
            {
                "capture_log": str(paths["out"] / "captures.jsonl"),
                "rpc_log": str(paths["out"] / "rpc.jsonl"),
                "cascade_prefix": "fake-cascade-",
                "tool_command": SCENARIOS[scenario].tool_command,
            },
            indent=1,
        )
    )
    (state / "run.json").write_text(json.dumps({"transport": transport, "scenario": scenario, "chat_hop": chat_hop}))
    return paths


def planted_key_in(state: Path) -> list[str]:
    """The bridge's records and state files that contain the gateway's key (there must be none)."""
    found = []
    candidates = [*state.glob("records/**/*"), *state.glob("*.sqlite*"), *state.glob("out/*mitmdump.log")]
    for p in candidates:
        if p.is_file() and PLANTED in p.read_bytes():
            found.append(str(p.relative_to(state)))
    return found


def message_of(entry: dict[str, Any]) -> bytes:
    body = base64.b64decode(entry["body_b64"])
    if entry["content_type"].startswith("application/proto"):
        return body
    data = body[5 : 5 + int.from_bytes(body[1:5], "big")]
    return gzip.decompress(data) if body[0] & 1 else data


def decoded_turns(captures: Path) -> list[list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "addons"))
    from native_bridge.cascade import parse_request, to_json

    if not captures.exists():
        return []
    entries = [json.loads(line) for line in captures.read_text().splitlines() if line.strip()]
    return [[to_json(s) for s in parse_request(message_of(e)).steps] for e in entries]


def report(state: Path) -> dict[str, Any]:
    out = state / "out"
    inner = json.loads((out / "inner.json").read_text()) if (out / "inner.json").exists() else {}
    records = [json.loads(p.read_text()) for p in sorted((state / "records" / "planner").glob("[!.]*.json"))]
    summary = {
        **inner,
        "turns": decoded_turns(out / "captures.jsonl"),
        "gateway_sent": [r["native"]["steps_before"] for r in records if r.get("native")],
        "corrections": [r.get("reason") for r in records],
        "planted_key_in": planted_key_in(state),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def describe(step: dict[str, Any]) -> str:
    kind = next((k for k in step if k not in ("type", "status")), "?")
    body = step.get(kind, {})
    status = step.get("status", "").removeprefix("CORTEX_STEP_STATUS_")
    if kind == "runCommand":
        code = body.get("exitCode", "absent")
        stdout = {(True, True): "stdout + combined_output", (False, True): "combined_output only"}.get(
            ("stdout" in body, "combinedOutput" in body), "no output"
        )
        return f"{status:5} run_command {body.get('commandLine')!r} exit_code={code} ({stdout})"
    return f"{status:5} {kind}"


def outer(args: argparse.Namespace) -> int:
    gateway = gateway_dir(args.gateway)
    reason = why_not(gateway)
    if reason is not None:
        print(f"real_gateway: cannot run: {reason}", file=sys.stderr)
        return 77
    assert gateway is not None
    state = Path(args.state).resolve() if args.state else Path(tempfile.mkdtemp(prefix="real-gateway-"))
    if state.exists() and any(state.iterdir()):
        shutil.rmtree(state)
    paths = prepare(state, args.transport, args.scenario, not args.no_chat_hop)
    hops = "the planner hop only" if args.no_chat_hop else "both hops"
    print(
        f"real_gateway: gateway {gateway}, transport {args.transport}, scenario {args.scenario}, {hops}, state {state}",
        flush=True,
    )
    inner_cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--inner",
        "--gateway",
        str(gateway),
        "--state",
        str(state),
        "--transport",
        args.transport,
        "--scenario",
        args.scenario,
        *(["--no-chat-hop"] if args.no_chat_hop else []),
    ]
    done = subprocess.run([*UNSHARE, "--", *inner_cmd], timeout=args.timeout)
    summary = report(state)
    for i, turn in enumerate(summary["turns"], 1):
        if i <= len(summary["gateway_sent"]):
            sent = summary["gateway_sent"][i - 1]
            print(f"turn {i}: the gateway sent {len(sent)} step(s) in additional_steps")
            for step in sent:
                print(f"    {describe(step)}")
            print(f"  the planner hop: {summary['corrections'][i - 1]}")
        print(f"turn {i}: the language server received {len(turn)} step(s)")
        for step in turn:
            print(f"    {describe(step)}")
    print(f"processes left after stopping the gateway (and the chat hop): {summary.get('leftover') or 'none'}")
    print(f"the gateway's key in records/state: {summary['planted_key_in'] or 'nowhere'}")
    print(f"details: {paths['out']}")
    return done.returncode


# ------------------------------------------------------------------ inside the namespaces


def wait_listening(port: int, proc: subprocess.Popen[bytes], name: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
            raise RuntimeError(f"{name} did not come up on port {port} (exit {proc.poll()}):\n{tail}")
        time.sleep(0.1)


def wait_health(proc: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"http://127.0.0.1:{GATEWAY_PORT}/health", timeout=2) as r,
        ):
            if r.status == 200:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
            raise RuntimeError(f"the gateway did not become healthy (exit {proc.poll()}):\n{tail}")
        time.sleep(0.2)


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST with exactly these headers (and content-type): no User-Agent unless one is given
    (urllib's own ``Python-urllib/3.x`` is left out, so an unnamed agent stays unnamed)."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        method="POST",
        headers={"content-type": "application/json", **headers},
    )
    opener = urllib.request.build_opener()
    opener.addheaders = []
    try:
        with opener.open(req, timeout=90) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def stop(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def living_others() -> list[str]:
    """Processes in this pid namespace other than this one (zombies excluded)."""
    me = os.getpid()
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == me:
            continue
        try:
            stat = (p / "stat").read_text()
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2 :].split()[0] != "Z":
            found.append(f"{p.name}: {cmd}")
    return found


def inner(args: argparse.Namespace) -> int:
    state = Path(args.state)
    gateway = Path(args.gateway)
    out = state / "out"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    Path("/proc/sys/net/ipv4/ip_local_port_range").write_text(EPHEMERAL_PORTS)  # this namespace's only
    subprocess.run(["mount", "--bind", str(state / "home"), "/home"], check=True)
    subprocess.run(["mount", "--bind", str(state / "opt"), "/opt"], check=True)

    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(state / "gwhome"),
        "LANG": "C.UTF-8",
        "TEMP": str(state / "tmp"),
        "TMPDIR": str(state / "tmp"),
        "PORT": str(GATEWAY_PORT),
        "HOST": "127.0.0.1",
        "API_KEY": API_KEY,
        "CODEIUM_API_KEY": CODEIUM_API_KEY,
        "DATA_DIR": str(state / "data"),
        "LS_DATA_DIR": str(state / "lsdata"),
        "LS_BINARY_PATH": str(SHIM),
        "WINDSURFAPI_SKIP_DOTENV": "1",
        "WINDSURFAPI_NO_OPEN": "1",
        "WINDSURFAPI_NATIVE_TOOL_BRIDGE": "1",
        "CASCADE_REUSE_ALLOW_SHARED_API_KEY": "1",
        "CASCADE_POLL_INTERVAL_MS": "50",
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "info"),
    }
    if args.transport == "connect":
        env["GRPC_PROTOCOL"] = "connect"
    marker = os.environ.get("BRIDGE_TEST_SESSION")
    if marker:  # the test suite's leftover check follows every process it started
        env["BRIDGE_TEST_SESSION"] = marker

    scenario = SCENARIOS[args.scenario]
    chat_hop = not args.no_chat_hop
    result: dict[str, Any] = {
        "transport": args.transport,
        "scenario": args.scenario,
        "chat_hop": chat_hop,
        "responses": [],
        "leftover": [],
    }
    gw_log = out / "gateway.log"
    chat_log = out / "chat-mitmdump.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(gw_log, "wb") as log:
            gw = subprocess.Popen(
                ["node", "src/index.js"], cwd=gateway, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        procs.append(gw)
        if chat_hop:
            procs.append(start_chat_hop(state, chat_log))
        wait_health(gw, 60, gw_log)
        if chat_hop:
            wait_listening(CHAT_PORT, procs[-1], "the chat hop", 30, chat_log)
            print(f"real_gateway: gateway on :{GATEWAY_PORT}, chat hop on :{CHAT_PORT}", flush=True)
        else:
            print(f"real_gateway: gateway on :{GATEWAY_PORT}, no chat hop", flush=True)
        port = CHAT_PORT if chat_hop else GATEWAY_PORT
        for turn in scenario.turns:
            status, body = post(port, scenario.path, turn.read_bytes(), scenario.headers)
            (out / turn.name.replace(".json", ".response.json")).write_bytes(body)
            result["responses"].append({"turn": turn.name, "status": status})
            print(f"real_gateway: POST {scenario.path} {turn.name} -> {status}", flush=True)
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
        print(f"real_gateway: {result['error']}", file=sys.stderr, flush=True)
    finally:
        for proc in procs:
            stop(proc)
        deadline = time.monotonic() + 10
        while (left := living_others()) and time.monotonic() < deadline:
            time.sleep(0.2)
        result["leftover"] = left
        (out / "inner.json").write_text(json.dumps(result, indent=1))
    ok = "error" not in result and all(r["status"] == 200 for r in result["responses"])
    return 0 if ok else 1


def start_chat_hop(state: Path, chat_log: Path) -> subprocess.Popen[bytes]:
    """The chat hop: mitmdump in observe mode in front of the gateway, sharing bridge.sqlite."""
    chat_cmd = [
        str(MITMDUMP),
        "--mode",
        f"reverse:http://127.0.0.1:{GATEWAY_PORT}@{CHAT_PORT}",
        "--listen-host",
        "127.0.0.1",
        "-s",
        str(ROOT / "addons" / "bridge.py"),
        "--set",
        "bridge_mode=observe",
        "--set",
        f"bridge_state={state / 'bridge.sqlite'}",
        "--set",
        f"bridge_records={state / 'records' / 'chat'}",
        "--set",
        f"confdir={state / 'mitmproxy-conf'}",
    ]
    chat_env = {**os.environ, "PYTHONUNBUFFERED": "1", "HOME": str(state / "gwhome")}
    with open(chat_log, "wb") as log:
        return subprocess.Popen(chat_cmd, env=chat_env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gateway", help="dwgx/WindsurfAPI checkout (default $BRIDGE_GATEWAY_DIR or /work/gateway/...)")
    ap.add_argument("--state", help="directory for this run (emptied first; default: a new temporary directory)")
    ap.add_argument("--transport", choices=("grpc", "connect"), default="grpc")
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), default="anthropic", help="what the agent sends")
    ap.add_argument(
        "--no-chat-hop", action="store_true", help="the agent posts straight to the gateway: the planner hop only"
    )
    ap.add_argument("--timeout", type=float, default=300, help="seconds for the whole run")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    return inner(args) if args.inner else outer(args)


if __name__ == "__main__":
    sys.exit(main())
