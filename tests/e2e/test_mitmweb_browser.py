"""mitmweb in a real browser: a bridged flow opened in headless Chromium shows its steps and exit codes.

agent session (httpx) -> mitmweb --mode reverse -s addons/bridge.py -> reference planner
headless Chromium -> mitmweb's UI (127.0.0.1, password-protected)

Chromium is driven over the Chrome DevTools Protocol with tornado's websocket client
(tornado ships with mitmproxy). Debian's ``chromium`` package is the browser; the test
skips, saying so, only when no Chromium binary is found (and fails instead when
``BRIDGE_REQUIRE_BROWSER`` is set, as CI should). ``BRIDGE_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.lifetime import ending_with
from support.reference_planner import ReferencePlanner
from tornado.websocket import WebSocketClientConnection, websocket_connect

from .conftest import ROOT, SESSION, TAG

pytestmark = pytest.mark.e2e

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1400,1000",
)
WEB_COLUMNS = ("icon", "path", "method", "status", "size", "time", "comment")
_PROXY_LISTENING = re.compile(r"listening at 127\.0\.0\.1:(\d+)")
_WEB_LISTENING = re.compile(r"Web server listening at (http://\S+)")
# Claude Code's session over its own Messages API (it flags failures is_error and states their codes),
# sent with its user agent.
MESSAGES = "/v1/messages"
ANTHROPIC_SESSION = SESSION.with_name("anthropic_session.json")
CLAUDE_UA = "claude-cli/2.1.332 (external, cli)"
VERDICT = "bridge: 19 steps (2 failed: exit 1 ×1, exit 2 ×1), 21 kept as messages, 1 unobserved"
FAILED_2 = "$ .venv/bin/python -m burndown render /home/dev/src/burndown/data/sprint15.csv"
FAILED_1 = "$ python -m burndown render /home/dev/src/burndown/data/sprint14.csv"


def find_chromium() -> str | None:
    """$BRIDGE_CHROMIUM when set, else the first browser of BROWSERS on PATH."""
    if env := os.environ.get("BRIDGE_CHROMIUM"):
        return env
    return next((p for name in BROWSERS if (p := shutil.which(name))), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- processes ----------------------------------------------------------------------


class Process:
    """A child process whose output is collected line by line."""

    def __init__(self, args: list[str], **kwargs: Any) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            preexec_fn=ending_with(os.getpid()),  # a SIGKILLed test run leaves no mitmweb or browser behind
            **kwargs,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if m := pattern.search(line):
                    return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.proc.args[0]}: no line matching {pattern.pattern!r}:\n{self.output[-5000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)


class Mitmweb:
    def __init__(self, upstream: str, confdir: Path) -> None:
        self.password = secrets.token_hex(12)
        self.web_port = free_port()
        mitmweb = Path(sys.executable).with_name("mitmweb")
        self.process = Process(
            [
                str(mitmweb if mitmweb.exists() else shutil.which("mitmweb") or "mitmweb"),
                "--mode",
                f"reverse:{upstream}",
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                "0",
                "--web-host",
                "127.0.0.1",
                "--web-port",
                str(self.web_port),
                "--no-web-open-browser",
                "-s",
                str(ROOT / "addons" / "bridge.py"),
                "--set",
                "bridge_mode=rewrite",
                "--set",
                f"web_password={self.password}",
                "--set",
                f"confdir={confdir}",
                # The bridge's verdict (flow.comment) as a column of the flow list (a list option: one --set each).
                *(a for c in WEB_COLUMNS for a in ("--set", f"web_columns={c}")),
            ],
            cwd=ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        self.proxy_port = int(self.process.wait_for(_PROXY_LISTENING, 20).group(1))
        self.process.wait_for(_WEB_LISTENING, 20)
        self.web = f"http://127.0.0.1:{self.web_port}"
        self.api = httpx.Client(base_url=self.web, headers={"authorization": f"Bearer {self.password}"}, timeout=10)

    def stop(self) -> None:
        self.api.close()
        self.process.stop()


class Chromium:
    """Headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="bridge-chromium-")
        self.process = Process([binary, *CHROME_FLAGS, f"--user-data-dir={self.profile}", "about:blank"])
        self.loop = asyncio.new_event_loop()
        self.ws: WebSocketClientConnection | None = None
        self._id = 0
        try:
            self.ws = self.loop.run_until_complete(self._connect())
        except BaseException:
            self.stop()
            raise

    def _page_websocket_url(self) -> str:
        """Chromium writes its DevTools port into the profile; the page target is listed there."""
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > deadline or self.process.proc.poll() is not None:
                raise RuntimeError(f"Chromium did not open its DevTools port:\n{self.process.output[-5000:]}")
            time.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        return next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")

    async def _connect(self) -> WebSocketClientConnection:  # tornado wants its loop running here
        return await websocket_connect(self._page_websocket_url(), max_message_size=64 * 1024 * 1024)

    def call(self, method: str, timeout: float = 10, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg_id = self._id

        async def roundtrip() -> dict[str, Any]:
            assert self.ws is not None
            await self.ws.write_message(json.dumps({"id": msg_id, "method": method, "params": params}))
            while True:
                raw = await self.ws.read_message()
                if raw is None:
                    raise ConnectionError("the DevTools connection closed")
                msg = json.loads(raw)
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]

        return self.loop.run_until_complete(asyncio.wait_for(roundtrip(), timeout))

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for_text(self, *needles: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                return text
            time.sleep(0.1)
        missing = [n for n in needles if n not in text]
        raise AssertionError(f"the page never showed {missing!r}; it shows:\n{text[:5000]}")

    def stop(self) -> None:
        async def close() -> None:  # inside the loop, as tornado wants
            if self.ws is not None:
                self.ws.close()

        try:
            self.loop.run_until_complete(close())
            self.loop.close()
        finally:
            self.process.stop()
            shutil.rmtree(self.profile, ignore_errors=True)


# ---- fixtures -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium_binary() -> str:
    binary = find_chromium()
    if binary is None:
        message = (
            "no Chromium found (looked for " + ", ".join(BROWSERS) + " on PATH, or $BRIDGE_CHROMIUM): "
            "install Debian's chromium package (apt-get install -y chromium) to run the mitmweb browser test"
        )
        if os.environ.get("BRIDGE_REQUIRE_BROWSER"):  # CI sets it: there a missing browser is a failure
            pytest.fail(message)
        pytest.skip(message)
    if not os.access(binary, os.X_OK):
        pytest.fail(f"$BRIDGE_CHROMIUM={binary} is not an executable file")
    return binary


@pytest.fixture(scope="module")
def mitmweb(planner: ReferencePlanner, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mitmweb]:
    web = Mitmweb(planner.url, tmp_path_factory.mktemp("mitmweb-conf"))
    try:
        yield web
    finally:
        web.stop()


@pytest.fixture(scope="module")
def browser(chromium_binary: str) -> Iterator[Chromium]:
    b = Chromium(chromium_binary)
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def bridged_flow(mitmweb: Mitmweb) -> dict[str, Any]:
    """The bundled Claude Code session sent through mitmweb; its flow as mitmweb's API lists it."""
    tag = secrets.token_hex(8)
    r = httpx.post(
        f"http://127.0.0.1:{mitmweb.proxy_port}{MESSAGES}",
        content=ANTHROPIC_SESSION.read_bytes(),
        headers={"content-type": "application/json", TAG: tag, "user-agent": CLAUDE_UA},
        timeout=15,
    )
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for f in mitmweb.api.get("/flows").json():
            if [TAG, tag] in f["request"]["headers"] and f.get("response"):
                return f
        time.sleep(0.05)
    raise AssertionError(f"mitmweb never listed the flow:\n{mitmweb.process.output[-5000:]}")


# ---- tests --------------------------------------------------------------------------


def test_the_bridge_view_is_chosen_and_lists_the_commands(mitmweb: Mitmweb, bridged_flow: dict[str, Any]):
    """The same server-side facts the UI renders, read from mitmweb's own API (no browser needed)."""
    assert bridged_flow["comment"] == VERDICT
    assert bridged_flow["marked"] in (":warning:", "\u26a0")  # mitmweb's API sends the marker as its emoji
    content = mitmweb.api.get(f"/flows/{bridged_flow['id']}/request/content/auto.json").json()
    assert content["view_name"] == "Bridge steps"
    assert "exit 2" in content["text"]
    commands = mitmweb.api.get("/commands").json()
    for name in ("bridge.diff", "bridge.export", "bridge.stats"):
        assert commands[name]["help"], name


def test_browser_shows_steps_and_exit_codes_of_a_bridged_flow(
    browser: Chromium, mitmweb: Mitmweb, bridged_flow: dict[str, Any]
):
    flow_id = bridged_flow["id"]
    # The token logs the browser in (a cookie); the fragment opens the flow's request tab.
    browser.navigate(f"{mitmweb.web}/?token={mitmweb.password}#/flows/{flow_id}/request")
    text = browser.wait_for_text(VERDICT, "STEPS (additional_steps, 19", "exit 2", FAILED_2, "exit 1", FAILED_1)
    # Those lines are the content view's, and the view is the bridge's (auto-selected).
    view_name = browser.evaluate("(document.querySelector('.contentview .controls h5') || {}).innerText")
    assert view_name == "Bridge steps"
    shown = browser.evaluate("(document.querySelector('.contentview pre') || {}).innerText") or ""
    lines = shown.splitlines()
    assert lines[0] == VERDICT
    # Each failed command and its exit code are on one line of the view.
    assert any("exit 2" in line and FAILED_2 in line for line in lines)
    assert any("exit 1" in line and FAILED_1 in line and ".venv/bin/" not in line for line in lines)
    # The flow list shows the bridge's verdict (the comment column) and its marker next to the flow.
    row = browser.evaluate(
        """(() => {
            const row = document.querySelector('.flow-table tr.selected');
            if (!row) return null;
            const cell = c => (row.querySelector(c) || {}).innerText;
            return {comment: cell('.col-comment'), marker: cell('.col-path .marker'), path: cell('.col-path')};
        })()"""
    )
    assert row is not None, "no selected flow in the flow list:\n" + text[:2000]
    assert row["comment"] == bridged_flow["comment"]
    assert row["marker"] == "\u26a0"  # ":warning:": a failure or an unobserved call
    assert row["path"].endswith(MESSAGES)


def test_browser_shows_the_history_diff_view(browser: Chromium, mitmweb: Mitmweb, bridged_flow: dict[str, Any]):
    """Choose "Bridge diff" the way a user does: pick it in the view selector of the request tab."""
    flow_id = bridged_flow["id"]
    browser.navigate(f"{mitmweb.web}/?token={mitmweb.password}#/flows/{flow_id}/request")
    browser.wait_for_text("STEPS (additional_steps")
    # The view selector is a dropdown link ("View: auto"); its menu lists the registered views.
    opened = browser.evaluate(
        """(() => {
            const link = [...document.querySelectorAll('.contentview .controls a')]
                .find(a => a.textContent.includes('View:'));
            if (!link) return false;
            link.click();
            return true;
        })()"""
    )
    assert opened, "no view selector in the request tab:\n" + browser.text()[:3000]
    picked = False
    deadline = time.monotonic() + 10
    while not picked and time.monotonic() < deadline:
        picked = browser.evaluate(
            """(() => {
                const item = [...document.querySelectorAll('.dropdown-menu a')]
                    .find(e => e.textContent.trim().toLowerCase() === 'bridge diff');
                if (!item) return false;
                item.click();
                return true;
            })()"""
        )
        time.sleep(0.05)
    assert picked, "the view menu offers no 'Bridge diff':\n" + browser.text()[:3000]
    browser.wait_for_text("messages: 53 items before, 25 after", "+ additional_steps: 19 steps", "→ step #13")
    assert browser.evaluate("document.querySelector('.contentview .controls h5').innerText") == "Bridge diff"
