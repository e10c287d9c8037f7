"""A real mitmdump running the bridge (``-s addons/bridge.py``) on loopback: what the demo, the
end-to-end tests, the interop harness and the bench start, and the records it writes.

    with Mitmdump("http://127.0.0.1:8765", records, confdir) as proxy:
        httpx.post(proxy.url + "/v1/chat/completions", ...)
        find_records(records, "x-tag", tag)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from .lifetime import ending_with

ROOT = Path(__file__).resolve().parents[2]
# mitmdump's startup line, e.g. "reverse proxy to http://127.0.0.1:9 listening at 127.0.0.1:50195."
LISTENING = re.compile(r"listening at \S+:(\d+)\.?\s*$")


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

    def __init__(
        self,
        upstream: str,
        records: Path,
        confdir: Path,
        options: Sequence[str] = (),
        env: dict[str, str] | None = None,
        prefix: Sequence[str] = (),
        listen_host: str = "127.0.0.1",
    ) -> None:
        """``env``: more environment (a store's password goes there, never on the command line);
        ``prefix``: a command it runs under, which execs it (``ip netns exec HOST``)."""
        self.env = env or {}
        self.listen_host = listen_host
        self.args = [
            *prefix,
            mitmdump_path(),
            "--mode",
            f"reverse:{upstream}",
            "--listen-host",
            listen_host,
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
        return f"http://{self.listen_host}:{self.port}"

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
            env=dict(os.environ, PYTHONUNBUFFERED="1", **self.env),  # its log lines must reach us as they happen
            preexec_fn=ending_with(os.getpid()),  # a SIGKILLed test or demo leaves no proxy behind
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
            if self.port is None and (m := LISTENING.search(line)):
                self.port = int(m.group(1))
                self._ready.set()
        self._ready.set()  # it exited: stop waiting

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The process's id once it is launched (the bench watches its CPU time)."""
        return self._proc.pid if self._proc is not None else None

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
