"""Faults around a real mitmdump with the bridge: the disk, the planner, the client, the process.

For each fault: traffic is unaffected beyond what the fault itself causes, the bridge says so in
one clear log line (not one per request), mitmdump does not crash, and nothing half-written is
left looking like a record (a write in progress is a dot-file ending ``.tmp``).

The records directory: "unwritable" is a read-only tmpfs and, without a mount, a path under a
regular file; "out of space" is a 64 KiB tmpfs filled up and, without a mount, an injected
failing writer (ENOSPC from fsync). The tmpfs tests need root and skip cleanly otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import procs
import pytest
from native_bridge.records import writer as records
from support import reference_planner
from support.mitmdump import Mitmdump
from support.reference_planner import ReferencePlanner

pytestmark = pytest.mark.e2e

CHAT = "/v1/chat/completions"
TAG = "x-fault-tag"
# One command pair: rewritten into one step.
BODY = orjson.dumps(
    {
        "model": "m",
        "messages": [
            {"role": "user", "content": "list"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nExit code: 0"},
        ],
    }
)
QUIET = ("--set", "flow_detail=0")


# ---- helpers (shared with test_soak) ----------------------------------------------------------


class Proxy:
    """A mitmdump with the bridge in front of ``upstream``, and the ways a test looks at it."""

    def __init__(self, upstream: str, records: Path, tmp: Path, *options: str) -> None:
        self.records = records
        self.mitm = Mitmdump(upstream, records, tmp / f"conf-{uuid.uuid4().hex[:8]}", [*QUIET, *options])
        self.mitm.start()
        self.client = httpx.Client(base_url=self.mitm.url, timeout=15)

    @property
    def pid(self) -> int:
        assert self.mitm._proc is not None
        return self.mitm._proc.pid

    def send(self, body: bytes = BODY, path: str = CHAT, **headers: str) -> tuple[str, httpx.Response]:
        tag = uuid.uuid4().hex
        r = self.client.post(path, content=body, headers={"content-type": "application/json", TAG: tag, **headers})
        return tag, r

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.mitm.lines if needle in line]

    def close(self) -> int | None:
        self.client.close()
        return self.mitm.stop()

    def fail(self, message: str) -> str:
        return f"{message}\n--- mitmdump output ---\n{self.mitm.output[-8000:]}"


def record_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("[!.]*.json")) if directory.is_dir() else []


def temp_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(".")) if directory.is_dir() else []


def records_by_tag(directory: Path, header: str = TAG) -> dict[str, list[dict[str, Any]]]:
    """Every finished record, parsed (a record that does not parse fails here), by its request's tag."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in record_files(directory):
        rec = orjson.loads(path.read_bytes())
        tags = [v for k, v in rec["request_headers"] if k.lower() == header]
        assert len(tags) == 1, f"{path.name}: {len(tags)} tags"
        out.setdefault(tags[0], []).append(rec)
    return out


def wait_for(predicate, timeout: float = 10.0, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()


def inject(tmp: Path, code: str) -> tuple[str, str]:
    """An extra addon script, loaded after the bridge, that changes the recorder for one test."""
    path = tmp / f"inject_{uuid.uuid4().hex[:8]}.py"
    path.write_text("from native_bridge.records import writer as records\n" + code)
    return "-s", str(path)


@contextlib.contextmanager
def tmpfs(path: Path, *options: str) -> Iterator[None]:
    """A tiny tmpfs at ``path``; skips the test when this process may not mount one."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    opts = ",".join(("size=64k", "mode=0700", *options))
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip() or proc.returncode}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@pytest.fixture(scope="module")
def planner() -> Iterator[ReferencePlanner]:
    with ReferencePlanner() as p:
        yield p


@pytest.fixture
def proxies(tmp_path: Path) -> Iterator[list[Proxy]]:
    started: list[Proxy] = []
    yield started
    for p in started:
        p.close()


def start(proxies: list[Proxy], upstream: str, records: Path, tmp: Path, *options: str) -> Proxy:
    p = Proxy(upstream, records, tmp, *options)
    proxies.append(p)
    return p


def assert_traffic_ok(proxy: Proxy, planner: ReferencePlanner, n: int = 5) -> list[str]:
    """n requests all answered by the planner, each received exactly once, rewritten."""
    tags = []
    for _ in range(n):
        tag, r = proxy.send()
        assert r.status_code == 200, proxy.fail(f"HTTP {r.status_code}: {r.text[:200]}")
        got = planner.find(TAG, tag)
        assert len(got) == 1 and "additional_steps" in got[0].json, proxy.fail(f"planner got {len(got)}")
        tags.append(tag)
    assert proxy.mitm.alive()
    return tags


def bridge_lines(proxy: Proxy, needle: str) -> list[str]:
    return [line for line in proxy.lines(needle) if "bridge" in line]


# ---- the records directory --------------------------------------------------------------------


def test_records_directory_unwritable(planner, proxies, tmp_path: Path) -> None:
    """The filesystem turns read-only while running (tmpfs remounted ro): every request still goes
    through, rewritten; one line."""
    records = tmp_path / "ro"
    with tmpfs(records):
        proxy = start(proxies, planner.url, records, tmp_path)
        subprocess.run(["mount", "-o", "remount,ro", str(records)], check=True, capture_output=True)
        assert_traffic_ok(proxy, planner, 6)
        assert wait_for(lambda: bridge_lines(proxy, "cannot write record"))
        time.sleep(0.3)
        lines = bridge_lines(proxy, "cannot write record")
        assert len(lines) == 1, proxy.fail(f"{len(lines)} lines for one fault")
        assert "Read-only file system" in lines[0] and str(records) in lines[0]
        assert list(records.iterdir()) == []
        assert proxy.close() == 0


def test_records_directory_under_a_file(planner, proxies, tmp_path: Path) -> None:
    """No mount needed: while running, the records path stops being a directory at all."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    proxy = start(proxies, planner.url, blocker / "records", tmp_path)
    shutil.rmtree(blocker)
    blocker.write_text("a file")
    assert_traffic_ok(proxy, planner, 4)
    assert wait_for(lambda: bridge_lines(proxy, "cannot write record"))
    time.sleep(0.3)
    assert len(bridge_lines(proxy, "cannot write record")) == 1, proxy.fail("one line per fault")
    assert blocker.read_text() == "a file"
    assert proxy.close() == 0


@pytest.mark.parametrize("bad", ["under-a-file", "read-only"])
def test_unusable_records_directory_is_refused_at_start_up(tmp_path: Path, bad: str) -> None:
    """A bad bridge_records path stops mitmdump before traffic starts, with the path and the cause."""
    if bad == "under-a-file":
        (tmp_path / "blocker").write_text("a file")
        records = tmp_path / "blocker" / "records"
    else:
        records = tmp_path / "ro"
        records.mkdir(mode=0o500)
        if os.geteuid() == 0:
            pytest.skip("root writes into a 0500 directory")
    args = Mitmdump("http://127.0.0.1:9", records, tmp_path / "conf").args
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"bridge_records: cannot write records to {records}" in out, out[-3000:]
    assert not (tmp_path / "blocker" / "records").exists() or bad != "under-a-file"


def test_records_directory_removed_while_running(planner, proxies, tmp_path: Path) -> None:
    records = tmp_path / "records"
    proxy = start(proxies, planner.url, records, tmp_path)
    first = assert_traffic_ok(proxy, planner, 2)
    assert wait_for(lambda: len(record_files(records)) == 2)
    shutil.rmtree(records)
    later = assert_traffic_ok(proxy, planner, 3)
    assert wait_for(lambda: len(record_files(records)) == 3), proxy.fail("records after the removal")
    assert set(records_by_tag(records)) == set(later)
    assert not set(first) & set(records_by_tag(records))
    lines = bridge_lines(proxy, "was removed; created it again")
    assert len(lines) == 1, proxy.fail("one line for the removal")
    assert oct(records.stat().st_mode & 0o777) == "0o700"
    assert proxy.close() == 0


def _out_of_space(planner, proxies, tmp_path: Path, records: Path, fill, free, *options: str) -> None:
    proxy = start(proxies, planner.url, records, tmp_path, *options)
    before = assert_traffic_ok(proxy, planner, 1)
    assert wait_for(lambda: len(record_files(records)) == 1)
    fill()
    full = assert_traffic_ok(proxy, planner, 5)
    assert wait_for(lambda: bridge_lines(proxy, "No space left on device"))
    time.sleep(0.3)
    lines = bridge_lines(proxy, "cannot write record")
    assert len(lines) == 1 and "No space left on device" in lines[0], proxy.fail(f"{len(lines)} lines")
    assert temp_files(records) == [] or all(p.name == ".filler" for p in temp_files(records))
    free()
    after = assert_traffic_ok(proxy, planner, 2)
    assert wait_for(lambda: len(record_files(records)) == 3), proxy.fail("no records after space came back")
    assert wait_for(lambda: bridge_lines(proxy, "written to"))  # "records are written to ... again"
    by_tag = records_by_tag(records)
    assert set(by_tag) == set(before + after) and not set(full) & set(by_tag)
    assert all(len(v) == 1 for v in by_tag.values())
    assert proxy.close() == 0


def test_records_filesystem_out_of_space(planner, proxies, tmp_path: Path) -> None:
    """A 64 KiB tmpfs, filled up while mitmdump runs, then freed again."""
    records = tmp_path / "small"
    filler = records / ".filler"

    def fill() -> None:
        with contextlib.suppress(OSError), filler.open("wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()

    with tmpfs(records):
        _out_of_space(planner, proxies, tmp_path, records, fill, filler.unlink)


def test_records_out_of_space_injected(planner, proxies, tmp_path: Path) -> None:
    """The same fault without a mount: the writer's fsync fails with ENOSPC while a flag file exists."""
    records = tmp_path / "records"
    flag = tmp_path / "disk-full"
    option = inject(
        tmp_path,
        f"""
import errno, os
_fsync = records.os.fsync
def fsync(fd):
    if os.path.exists({str(flag)!r}) and os.readlink(f"/proc/self/fd/{{fd}}").startswith({str(records)!r}):
        raise OSError(errno.ENOSPC, "No space left on device")
    return _fsync(fd)
records.os.fsync = fsync
""",
    )
    _out_of_space(planner, proxies, tmp_path, records, flag.touch, flag.unlink, *option)


# ---- the planner ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["eager", "lazy"])
def test_planner_down_then_back(proxies, tmp_path: Path, strategy: str) -> None:
    """Nothing listens upstream, then the planner comes up on that port.

    eager (mitmproxy's default in reverse mode) connects upstream when the client connects: the client
    is disconnected before its request is read, so the bridge never sees it. lazy reads the request
    first: the bridge rewrites and records it, and the client gets mitmproxy's 502."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again at once: nothing listens there
    records = tmp_path / "records"
    proxy = start(proxies, f"http://127.0.0.1:{port}", records, tmp_path, "--set", f"connection_strategy={strategy}")
    for _ in range(3):
        if strategy == "eager":
            with pytest.raises(httpx.RemoteProtocolError):
                proxy.send()
        else:
            assert proxy.send()[1].status_code == 502
    assert proxy.mitm.alive()
    expected = 3 if strategy == "lazy" else 0
    assert wait_for(lambda: len(record_files(records)) == expected, timeout=3)
    assert all(r[0]["status"] == "rewritten" for r in records_by_tag(records).values())
    # mitmdump's lines reach the reader thread after the client has seen the connection end
    said = wait_for(lambda: len(proxy.lines("Connect call failed")) >= 3, timeout=5)
    assert said, proxy.fail("mitmproxy says why, per connection")
    with ReferencePlanner(port=port) as back:
        proxy.client.close()
        proxy.client = httpx.Client(base_url=proxy.mitm.url, timeout=15)
        assert_traffic_ok(proxy, back, 3)
    assert wait_for(lambda: len(record_files(records)) == expected + 3)
    assert not proxy.lines("Traceback"), proxy.fail("a traceback")
    assert proxy.close() == 0


class ResettingPlanner:
    """Accepts, reads the request head, then resets the connection (RST, SO_LINGER 0)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with contextlib.suppress(OSError):
                conn.settimeout(2)
                conn.recv(65536)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_planner_resetting_connections(planner, proxies, tmp_path: Path) -> None:
    resetting = ResettingPlanner()
    try:
        records = tmp_path / "records"
        proxy = start(proxies, resetting.url, records, tmp_path)
        statuses = [proxy.send()[1].status_code for _ in range(4)]
        assert statuses == [502] * 4, proxy.fail(str(statuses))
        assert resetting.accepted >= 4
        assert proxy.mitm.alive()
        assert wait_for(lambda: len(record_files(records)) == 4)
        assert not proxy.lines("Traceback"), proxy.fail("a traceback")
        assert proxy.close() == 0
    finally:
        resetting.close()


# ---- the client ---------------------------------------------------------------------------------


def test_client_disconnecting_mid_request_and_mid_reply(planner, proxies, tmp_path: Path) -> None:
    records = tmp_path / "records"
    proxy = start(proxies, planner.url, records, tmp_path)
    host, port = "127.0.0.1", proxy.mitm.port
    assert port is not None
    # 1. Half a body, then gone: the request never completes, so nothing reaches the planner or the disk.
    half = uuid.uuid4().hex
    with socket.create_connection((host, port)) as s:
        head = f"POST {CHAT} HTTP/1.1\r\nHost: x\r\n{TAG}: {half}\r\nContent-Length: {len(BODY)}\r\n\r\n"
        s.sendall(head.encode() + BODY[: len(BODY) // 2])
        time.sleep(0.2)
    # 2. A whole request, then gone while the planner streams its (paused) reply.
    stream = orjson.loads(BODY) | {"stream": True}
    gone = uuid.uuid4().hex
    data = orjson.dumps(stream)
    with socket.create_connection((host, port)) as s:
        head = (
            f"POST {CHAT} HTTP/1.1\r\nHost: x\r\n{TAG}: {gone}\r\nx-planner-pause: 1.5\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        s.sendall(head.encode() + data)
        s.settimeout(5)
        assert s.recv(1024).startswith(b"HTTP/1.1 200")
    assert wait_for(lambda: len(planner.find(TAG, gone)) == 1)
    assert planner.find(TAG, half) == []
    # Traffic after both: unaffected.
    tags = assert_traffic_ok(proxy, planner, 3)
    assert wait_for(lambda: len(record_files(records)) == 4)
    by_tag = records_by_tag(records)
    assert set(by_tag) == {gone, *tags} and all(len(v) == 1 for v in by_tag.values())
    assert not proxy.lines("Traceback"), proxy.fail("a traceback")
    assert proxy.close() == 0


# ---- mitmdump stopped with records pending ------------------------------------------------------

SLOW_WRITER = """
import time
_write = records.Recorder.write
def write(self, job):
    time.sleep(0.08)
    return _write(self, job)
records.Recorder.write = write
"""


def _acknowledged(proxy: Proxy, n: int) -> list[str]:
    """n requests answered (200) in parallel: each is acknowledged to its client."""
    tags: list[str] = []
    lock = threading.Lock()

    def one() -> None:
        tag, r = proxy.send()
        assert r.status_code == 200
        with lock:
            tags.append(tag)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return tags


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_with_records_pending_writes_them_all(planner, proxies, tmp_path: Path, sig: int) -> None:
    records = tmp_path / "records"
    proxy = start(proxies, planner.url, records, tmp_path, *inject(tmp_path, SLOW_WRITER))
    tags = _acknowledged(proxy, 24)
    assert len(tags) == 24
    pending = 24 - len(record_files(records))
    assert pending > 5, "the slow writer should still have records pending"  # the point of the test
    os.kill(proxy.pid, sig)
    assert proxy.mitm._proc is not None
    assert proxy.mitm._proc.wait(20) == 0
    by_tag = records_by_tag(records)  # every file parses
    assert set(by_tag) == set(tags) and all(len(v) == 1 for v in by_tag.values())
    assert temp_files(records) == []
    assert bridge_lines(proxy, "pending records"), proxy.fail("no line about the pending records")
    print(f"\n{signal.Signals(sig).name}: {pending} of 24 records were pending at the signal; all 24 written")


def test_killed_mid_write_leaves_nothing_half_written_looking_valid(planner, proxies, tmp_path: Path) -> None:
    """SIGKILL (no chance to flush): what is on disk under a record's name is complete; a write in
    progress can only remain as a dot-file ending .tmp."""
    records = tmp_path / "records"
    slow_fsync = SLOW_WRITER.replace("records.Recorder.write = write", "") + (
        "\n_fsync = records.os.fsync\n"
        "def fsync(fd):\n    time.sleep(0.05)\n    return _fsync(fd)\n"
        "records.os.fsync = fsync\n"
    )
    proxy = start(proxies, planner.url, records, tmp_path, *inject(tmp_path, slow_fsync))
    # Qwen Code (its user agent as captured with 0.24.4): its run_shell_command frame states exit 1.
    big = orjson.loads(BODY)
    big["messages"][1]["tool_calls"][0]["function"]["name"] = "run_shell_command"
    big["messages"][2]["content"] = (
        "Command: ls\nDirectory: (root)\nOutput: " + "x" * 300_000 + "\nError: (none)\nExit Code: 1\n"
        "Signal: (none)\nProcess Group PGID: (none)"
    )
    qwen = {"user-agent": "QwenCode/0.24.4 (linux; x64)"}
    tags = [proxy.send(orjson.dumps(big), **qwen)[0] for _ in range(6)]
    time.sleep(0.12)
    started = procs.descendants(proxy.pid)  # the record worker, and whatever else mitmdump started
    assert started, "records on: mitmdump runs a record worker"
    os.kill(proxy.pid, signal.SIGKILL)
    assert proxy.mitm._proc is not None
    proxy.mitm._proc.wait(10)
    left = procs.wait_gone(started, 5)  # re-parented to init, they must still end by themselves
    assert not left, f"outlived a SIGKILLed mitmdump: {[procs.cmdline(p) for p in left]}"
    by_tag = records_by_tag(records)  # every file under a record's name parses in full
    assert set(by_tag) <= set(tags)
    for recs in by_tag.values():
        assert recs[0]["steps"][0]["runCommand"]["exitCode"] == 1
    for p in temp_files(records):
        assert p.name.startswith(".") and p.name.endswith(".tmp")
    print(f"\nSIGKILL: {len(by_tag)} of 6 records complete, {len(temp_files(records))} temp files, none half-written")


def test_reference_planner_answers_an_unhashable_role() -> None:
    """Was a bug: a role that is a list raised in the planner's handler, which dropped the connection."""
    assert reference_planner.validate_chat({"messages": [{"role": ["user"], "content": "x"}]})


def test_stalled_writer_bounds_memory_and_says_so_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A disk that stops answering: pending bodies are capped (records beyond the cap are dropped with one
    line), the traffic side never waits, and the writer says when it has caught up."""
    caplog.set_level(logging.INFO, logger="native_bridge.records.writer")
    release = threading.Event()
    rec = records.Recorder(str(tmp_path / "records"), max_pending_bytes=1_000_000)
    real_write = rec.write

    def stalled(job):
        release.wait(10)
        return real_write(job)

    rec.write = stalled  # type: ignore[method-assign]
    job = lambda i: records.RecordJob(f"f{i}", 1.7e9, "POST", "http://h/", [], "skipped", "r", None, b"x" * 100_000)  # noqa: E731
    t = time.perf_counter()
    for i in range(30):
        rec.submit(job(i))  # 3 MB submitted against a 1 MB cap
    assert time.perf_counter() - t < 1  # submit never waits on the disk
    assert rec.dropped >= 19
    release.set()
    assert rec.flush(10)
    assert rec.written == 30 - rec.dropped and len(record_files(tmp_path / "records")) == rec.written
    dropping = [r for r in caplog.records if "dropping records" in r.getMessage()]
    caught_up = [r for r in caplog.records if "caught up" in r.getMessage()]
    assert len(dropping) == 1 and dropping[0].levelno == logging.ERROR
    assert len(caught_up) == 1 and str(rec.dropped) in caught_up[0].getMessage()
    rec.close()
