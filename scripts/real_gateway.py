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

Its parts (the settings and scenarios, the state directory, what runs inside the namespaces,
the report) live in scripts/support/real_gateway/; this file runs them, outside and inside.
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
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from support.real_gateway.config import CHAT_PORT, GATEWAY_PORT, SCENARIOS, UNSHARE, gateway_dir, why_not  # noqa: E402
from support.real_gateway.namespace import (  # noqa: E402
    gateway_env,
    isolate,
    living_others,
    post,
    start_chat_hop,
    stop,
    wait_health,
    wait_listening,
)
from support.real_gateway.report import report, show  # noqa: E402
from support.real_gateway.state import prepare  # noqa: E402

# ------------------------------------------------------------------ outside: prepare, run, report


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
    show(report(state), paths["out"])
    return done.returncode


# ------------------------------------------------------------------ inside the namespaces


def inner(args: argparse.Namespace) -> int:
    state = Path(args.state)
    gateway = Path(args.gateway)
    out = state / "out"
    isolate(state)
    env = gateway_env(state, args.transport)

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
