"""The run's state directory: laid out before the run (the shim's and the stand-in language
server's settings included), searched for the gateway's key after it."""

from __future__ import annotations

import json
from pathlib import Path

from .config import FAKE_LS, PLANTED, SCENARIOS


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
