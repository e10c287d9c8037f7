"""The record worker process: renders what the proxy would, and never outlives the proxy."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import procs
import pytest
from native_bridge.records import writer as records
from native_bridge.runtime.worker import WorkerProcess

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

TESTS = Path(__file__).resolve().parent


def job(i: int = 0) -> records.RecordJob:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": f"hello {i}"}]})
    return records.RecordJob(
        f"flow-{i}", 1.7e9, "POST", "http://h/v1/chat/completions", [], "unchanged", "r", "chat", body
    )


def test_renders_in_another_process_exactly_what_the_proxy_would() -> None:
    r = WorkerProcess(records._render)
    try:
        assert r.render(job(1)) == records._render(job(1))
        assert r.pid is not None and r.pid != os.getpid()
        worker = r.pid
        assert r.render(job(2)) == records._render(job(2))
        assert r.pid == worker  # one worker for every record
    finally:
        r.close()
    assert procs.wait_gone({worker}, 5) == set()


def test_the_only_process_started_is_the_worker() -> None:
    """No multiprocessing resource tracker or pool manager beside it."""
    before = procs.descendants(os.getpid())
    r = WorkerProcess(records._render)
    try:
        r.render(job())
        assert procs.descendants(os.getpid()) - before == {r.pid}
    finally:
        r.close()


def _parent(render_target: str) -> subprocess.Popen[str]:
    """A stand-in for mitmdump: a process that starts a renderer, renders in the background, and waits."""
    module, _, name = render_target.partition(":")
    code = textwrap.dedent(
        f"""
        import threading, time
        from {module} import {name} as render
        from native_bridge.records import writer as records
        from native_bridge.runtime.worker import WorkerProcess
        import test_renderer
        r = WorkerProcess(render)
        threading.Thread(target=r.render, args=(test_renderer.job(),), daemon=True).start()
        time.sleep(1.0)  # the worker is up and holds the job
        print("ready", flush=True)
        time.sleep(120)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("native_bridge.records.writer:RecordRenderer", id="idle-worker"),  # blocked reading its pipe
        pytest.param("slow_render:render", id="busy-worker"),  # rendering when the parent dies
    ],
)
def test_worker_ends_when_its_parent_is_killed(target: str) -> None:
    proc = _parent(target)
    started = procs.descendants(proc.pid)
    assert started  # the worker
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    left = procs.wait_gone(started, 5)
    assert not left, [procs.cmdline(p) for p in left]


def test_a_job_that_raises_fails_alone_and_the_worker_stays_in_use() -> None:
    """One body that trips a bug must not send every later job back into the proxy process."""
    from native_bridge.chat_hop import jobs
    from native_bridge.core.pipeline import Config
    from native_bridge.runtime import offload
    from native_bridge.runtime.worker import JobFailed

    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]})
    good = jobs.Job(body, Config(), "/v1/chat/completions", None, emit=False, record=False)
    bad = jobs.Job(body, None, "/v1/chat/completions", None, emit=False, record=False)  # type: ignore[arg-type]
    here = offload.Reader()
    with pytest.raises(AttributeError):
        here(bad)  # the same job fails in the proxy process too
    r = WorkerProcess(offload.Reader)
    try:
        assert r.render(good) == here(good)
        worker = r.pid
        with pytest.raises(JobFailed, match="AttributeError"):
            r.render(bad)
        assert r.render(good) == here(good)
        assert r.pid == worker, "the worker was given up for one failed job"
    finally:
        r.close()


class _Unreadable:
    """Pickles in the proxy; unpickling it in the worker raises (int("not a number"))."""

    def __reduce__(self):
        return (int, ("not a number",))


def test_a_job_the_worker_cannot_unpickle_fails_alone() -> None:
    from native_bridge.runtime.worker import JobFailed

    r = WorkerProcess(records._render)
    try:
        assert r.render(job(1)) == records._render(job(1))
        worker = r.pid
        with pytest.raises(JobFailed, match="ValueError"):
            r.render(_Unreadable())
        assert r.render(job(2)) == records._render(job(2))
        assert r.pid == worker, "the worker was given up for one unreadable job"
    finally:
        r.close()


def test_the_pipes_hold_a_large_job_at_once() -> None:
    """A 2 MB body must not cross in 32 hand-offs of the default 64 KiB pipe (Linux: F_SETPIPE_SZ)."""
    import fcntl

    getsize = getattr(fcntl, "F_GETPIPE_SZ", None)
    if getsize is None or int(Path("/proc/sys/fs/pipe-max-size").read_text()) < 1 << 20:
        pytest.skip("pipe sizes cannot be set to 1 MiB here")
    r = WorkerProcess(records._render)
    try:
        r.render(job())
        proc = r._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        assert fcntl.fcntl(proc.stdin.fileno(), getsize) >= 1 << 20
        assert fcntl.fcntl(proc.stdout.fileno(), getsize) >= 1 << 20
    finally:
        r.close()


def test_large_bodies_cross_by_reference_not_inside_the_pickle() -> None:
    """A job's or an outcome's large body is written from the object itself and read into the
    object the other side uses: never copied into the pickle stream (a 30 MB body would be
    held twice more on each side)."""
    import copy
    import io

    from native_bridge.chat_hop.jobs import Job, Outcome
    from native_bridge.core.pipeline import Config
    from native_bridge.runtime import worker as renderer

    body = b"x" * (1 << 20)
    for obj in (
        Job(body, Config(), "/v1/chat/completions", None, emit=True, record=False),
        Outcome("rewritten", "", "chat", body),
        body,
        ([], Outcome("observed", ""), body),  # a frame's result: (context, outcome, frame)
    ):
        stream = io.BytesIO()
        renderer._write_obj(stream, b"o", obj)
        kind, size = renderer._HEADER.unpack(stream.getvalue()[: renderer._HEADER.size])
        assert kind == b"o" and size < 4096, "the body went into the pickle"
        assert len(stream.getvalue()) < len(body) + 8192
        stream.seek(0)
        kind, data, buffers = renderer._read_message(stream)
        assert (kind, pickle.loads(data, buffers=buffers)) == (b"o", obj)
    job = Job(body, Config(), None, None, emit=False, record=False)
    assert copy.copy(job) == job and type(copy.copy(job).raw) is bytes  # copying still gives bytes
    small = Outcome("rewritten", "", "chat", b"{}")
    stream = io.BytesIO()
    renderer._write_obj(stream, b"o", small)
    stream.seek(0)
    kind, data, buffers = renderer._read_message(stream)
    assert (kind, pickle.loads(data, buffers=buffers), buffers) == (b"o", small, [])


def test_a_large_job_through_the_worker() -> None:
    from native_bridge.chat_hop import jobs
    from native_bridge.core.pipeline import Config
    from native_bridge.runtime import offload
    from support.histories import DIALECT_PATHS
    from support.histories.agent import Session

    raw = Session("chat", 1, 4).body(60)
    assert len(raw) >= 128 * 1024
    r, here = WorkerProcess(offload.Reader), offload.Reader()
    try:
        for emit in (True, False):
            job = jobs.Job(raw, Config(), DIALECT_PATHS["chat"], None, emit=emit, record=True)
            got = r.render(job)
            assert got == here(job) and (got.body is not None) == emit
        assert r.pid is not None
    finally:
        r.close()
