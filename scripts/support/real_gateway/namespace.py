"""Inside the namespaces: the processes the run starts, waits for and stops, and the agent's
requests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from .config import API_KEY, CHAT_PORT, CODEIUM_API_KEY, EPHEMERAL_PORTS, GATEWAY_PORT, MITMDUMP, ROOT, SHIM


def isolate(state: Path) -> None:
    """This namespace's loopback up, its ephemeral ports above the language server's, and /home
    and /opt from the state directory (the gateway writes there)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    Path("/proc/sys/net/ipv4/ip_local_port_range").write_text(EPHEMERAL_PORTS)  # this namespace's only
    subprocess.run(["mount", "--bind", str(state / "home"), "/home"], check=True)
    subprocess.run(["mount", "--bind", str(state / "opt"), "/opt"], check=True)


def gateway_env(state: Path, transport: str) -> dict[str, str]:
    """The gateway's whole environment: its ports, keys and directories, the shim as its
    language server, no dotenv and no browser."""
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
    if transport == "connect":
        env["GRPC_PROTOCOL"] = "connect"
    marker = os.environ.get("BRIDGE_TEST_SESSION")
    if marker:  # the test suite's leftover check follows every process it started
        env["BRIDGE_TEST_SESSION"] = marker
    return env


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
