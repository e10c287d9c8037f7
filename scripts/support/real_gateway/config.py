"""A run's fixed settings: where things are, the ports and keys, the scenarios the agent plays,
and whether the run can happen on this machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
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
