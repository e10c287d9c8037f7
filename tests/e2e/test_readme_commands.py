"""The README's commands, run as a user types them, from a fresh directory (issue 12).

The directory holds only links to the checkout's ``scripts/``, ``addons/``, ``proto/`` and
``.venv/`` (what ``scripts/dev setup`` leaves); each command runs there through bash,
exactly as printed, except for what cannot be the same on a test machine: the planner's
address (the reference planner's), the listen ports (any free one), mitmproxy's confdir
(a private one), a record's name, and mitmweb not opening a browser.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

import httpx
import orjson
import pytest
from support.lifetime import ending_with
from support.reference_planner import ReferencePlanner

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
LISTENING = re.compile(r"listening at \S+:(\d+)")
SESSION = (ROOT / "tests" / "fixtures" / "sessions" / "chat_session.json").read_bytes()


def blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, re.S)


def commands(block: str) -> list[str]:
    out = []
    for line in block.replace("\\\n", " ").splitlines():
        command = re.sub(r"(^|\s)#.*$", "", line).strip()
        if command:
            out.append(command)
    return out


def block_after(heading: str) -> list[str]:
    """The commands of the first sh block after ``heading``."""
    rest = README[README.index(heading) :]
    return commands(re.search(r"```sh\n(.*?)```", rest, re.S).group(1))  # type: ignore[union-attr]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    for name in ("scripts", "addons", "proto", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.fixture(scope="module")
def planner():
    with ReferencePlanner() as p:
        yield p


def localise(command: str, planner_url: str, fresh: Path) -> str:
    c = command.replace("https://planner.internal:8443", planner_url)
    c = re.sub(r"--listen-port \d+", "--listen-port 0", c)
    if c.startswith((".venv/bin/mitmdump", ".venv/bin/mitmweb")):
        if "--listen-port" not in c and " -n" not in c:
            c += " --listen-port 0"
        c += f" --set confdir={fresh / 'conf'}"
    if c.startswith(".venv/bin/mitmweb"):
        c += f" --set web_open_browser=false --set web_port={free_port()}"
    return c


class Running:
    """A README proxy command, running in the fresh directory until stopped."""

    def __init__(self, command: str, cwd: Path) -> None:
        self.command = command
        self.lines: list[str] = []
        self.port: int | None = None
        self._ready = threading.Event()
        self.proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            preexec_fn=ending_with(os.getpid()),  # a SIGKILLed test run leaves no command behind
        )
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(60) or self.port is None:
            self.stop()
            raise AssertionError(f"README command did not start: {command}\n" + "\n".join(self.lines))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if self.port is None and (m := LISTENING.search(line)):
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_proxy_set_up_commands_start_as_typed(fresh: Path, planner: ReferencePlanner) -> None:
    typed = [
        *block_after("**Reverse proxy**"),
        *[c for c in block_after("**Regular (forward) proxy**") if c.startswith(".venv/")],
        *block_after("**Planner frames.**"),
    ]
    assert len(typed) == 3
    for command in typed:
        proxy = Running(localise(command, planner.url, fresh), fresh)
        try:
            if "reverse:" in command:
                r = httpx.post(f"http://127.0.0.1:{proxy.port}/v1/chat/completions", content=SESSION, timeout=30)
                assert r.status_code == 200, r.text
        finally:
            assert proxy.stop() == 0, "\n".join(proxy.lines)
    assert list((fresh / "records").glob("*.json"))  # the reverse proxy's --set bridge_records=./records


def test_the_walkthrough_runs_as_typed(fresh: Path, planner: ReferencePlanner) -> None:
    walk = block_after("### Walkthrough")
    capture, checks = walk[0], walk[1:]
    assert capture.startswith(".venv/bin/mitmweb") and len(checks) == 3
    # 1. capture, through mitmweb, two requests of one conversation and one of another
    proxy = Running(localise(capture, planner.url, fresh), fresh)
    try:
        for body in (SESSION, SESSION):
            r = httpx.post(f"http://127.0.0.1:{proxy.port}/v1/chat/completions", content=body, timeout=30)
            assert r.status_code == 200, r.text
    finally:
        assert proxy.stop() == 0, "\n".join(proxy.lines)
    assert (fresh / "capture.flows").stat().st_size > 0 and len(list((fresh / "records").glob("*.json"))) == 2
    # 3, 4. verify and summarise, exactly as typed
    for command in checks:
        done = run(command, fresh)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
    assert "\n2 requests, " in run(checks[-1], fresh).stdout  # in the records and the capture: counted once
    # -nr on this capture does nothing (already bridged) ...
    nr = ".venv/bin/mitmdump -nr capture.flows -s addons/bridge.py -w again.flows --set bridge_records=again"
    again = run(localise(nr, planner.url, fresh), fresh)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not list((fresh / "again").glob("*.json"))
    # ... and rewrites a capture made without the addon, as the README shows
    raw_capture = re.sub(r" --set web_columns=\S+", "", capture).replace("capture.flows", "raw.flows")
    raw_capture = raw_capture.replace(".venv/bin/mitmweb", ".venv/bin/mitmdump", 1) + " --set bridge=false"
    proxy = Running(localise(raw_capture, planner.url, fresh), fresh)
    try:
        r = httpx.post(f"http://127.0.0.1:{proxy.port}/v1/chat/completions", content=SESSION, timeout=30)
        assert r.status_code == 200
    finally:
        proxy.stop()
    [replay] = [c for c in commands(README.split("a capture made *without* the addon")[1]) if "-nr raw.flows" in c][:1]
    done = run(localise(replay, planner.url, fresh), fresh)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list((fresh / "replayed").glob("*.json"))) == 1 and (fresh / "out.flows").exists()


def test_the_record_commands_run_as_typed(fresh: Path, planner: ReferencePlanner) -> None:
    # a rewritten request: the README says after_patch comes with bridge_mode=rewrite
    command = localise(block_after("**Reverse proxy**")[0], planner.url, fresh) + " --set bridge_mode=rewrite"
    proxy = Running(command, fresh)
    try:
        r = httpx.post(f"http://127.0.0.1:{proxy.port}/v1/chat/completions", content=SESSION, timeout=30)
        assert r.status_code == 200
    finally:
        proxy.stop()
    [record] = sorted((fresh / "records").glob("*.json"))
    rebuild = block_after("**Each body once.**")
    first = rebuild[0].replace("records/<record>.json", f"records/{record.name}")
    done = run(first, fresh)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert orjson.loads((fresh / "after.json").read_bytes())["additional_steps"]
    check = run(rebuild[1], fresh)
    assert check.returncode == 0 and check.stdout.rstrip().endswith(": exact"), check.stdout
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed: the README's jq lines were not run")
    jq_blocks = re.findall(r"```sh\n(jq .*?)```", README, re.S)
    assert jq_blocks
    for jq in [c for block in jq_blocks for c in commands(block)]:
        done = run(jq, fresh)
        assert done.returncode == 0, f"{jq}\n{done.stderr}"
