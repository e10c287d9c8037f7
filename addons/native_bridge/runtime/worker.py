"""Record rendering in a worker process.

Rendering a record (decode both bodies, redact every field and string, encode) is
CPU work in C and regular expressions that holds the GIL; on the writer thread it
would stall mitmproxy's event loop for as long as it runs. A single worker process
does it instead; the writer thread only ships the job there and writes the bytes it
gets back. If the worker cannot be started or dies, rendering falls back to the
calling thread, so a record is never lost for it.

The worker is a plain child process (``python -c``) connected by two pipes, not a
multiprocessing pool: nothing else is started (no resource tracker, no manager
thread), and it ends by itself when the proxy dies however the proxy dies (SIGKILL,
the OOM killer): the end of its input pipe ends it, and a watchdog thread ends it
if its parent changes while it is busy rendering.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import importlib
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from .store_url import PASSWORD_ENV

logger = logging.getLogger(__name__)

# A message: kind (b"j" a job, b"o" its result, b"e" the job's error message) and the pickle's length,
# the pickle, the number of out-of-band buffers, then each buffer's length and bytes.
_HEADER = struct.Struct("!cQ")
_COUNT = struct.Struct("!I")
_SIZE = struct.Struct("!Q")
_OUT_OF_BAND = 64 * 1024  # bytes values at least this large cross by reference (by_reference)
_PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size
_WATCHDOG_EVERY = 0.5  # seconds between two looks at the parent pid
_TRIM_BYTES = 1 << 20  # after a job this large, the worker hands its freed heap back to the system
# A job whose conversation the worker keeps (serve: keeps) leaves a heap its next turn reuses:
# handed back at once, the turn pays for those pages again (a 2 MB rewrite's round trip took
# 3.6 ms that way, 1.8 ms without). It is handed back once no job has come for this long.
_TRIM_IDLE = 30.0  # seconds
# The worker imports this module from the same package the proxy loaded (a checkout or an installed copy).
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from native_bridge.runtime.worker import serve; serve(sys.argv[2], int(sys.argv[3]))"
)


class WorkerGone(Exception):
    """The worker process ended or broke the protocol."""


class JobFailed(Exception):
    """The worker ran the job and the job raised: that job's failure, not the worker's (it stays
    in use; one bad body must not send every later one back into the proxy process)."""


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise WorkerGone("the record worker closed its pipe")
    return data


def by_reference(obj: Any) -> tuple[Any, ...]:
    """``__reduce__`` for the dataclasses that cross the pipe (jobs, outcomes): a large bytes
    field goes out of band, written from the object itself and read into the object the other
    side uses, so a 30 MB body is never copied into a pickle and out of it again."""
    return (_rebuild, (type(obj), tuple(_ref(getattr(obj, f.name)) for f in dataclasses.fields(obj))))


def _ref(value: Any) -> Any:
    return pickle.PickleBuffer(value) if type(value) is bytes and len(value) >= _OUT_OF_BAND else value


def _rebuild(cls: type, values: tuple[Any, ...]) -> Any:
    # Out of band, a buffer arrives as the bytes read from the pipe; copied (copy.copy), as a PickleBuffer.
    return cls(*(bytes(v) if isinstance(v, pickle.PickleBuffer) else v for v in values))


def _write_obj(stream: IO[bytes], kind: bytes, obj: Any) -> None:
    """One message: the pickle of ``obj`` (bytes, or a tuple's bytes, by reference too), then its
    out-of-band buffers, each with its length."""
    if type(obj) is tuple:
        obj = tuple(_ref(v) for v in obj)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(_ref(obj), protocol=5, buffer_callback=buffers.append)
    stream.write(_HEADER.pack(kind, len(data)))
    stream.write(data)
    stream.write(_COUNT.pack(len(buffers)))
    for b in buffers:
        view = b.raw()
        stream.write(_SIZE.pack(view.nbytes))
        stream.write(view)
    stream.flush()


def _read_message(stream: IO[bytes]) -> tuple[bytes, bytes, list[bytes]]:
    """One message as :func:`_write_obj` wrote it: its kind, its pickle and its buffers (for
    ``pickle.loads``). Only the pipe can fail here; what the pickle holds is the reader's matter."""
    kind, size = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    data = _read_exact(stream, size)
    (n,) = _COUNT.unpack(_read_exact(stream, _COUNT.size))
    return kind, data, [_read_exact(stream, _SIZE.unpack(_read_exact(stream, _SIZE.size))[0]) for _ in range(n)]


def _widen(stream: IO[bytes] | None) -> None:
    """Let a pipe hold a large job at once: with the default 64 KiB, a 2 MB body crosses in 32
    hand-offs between the two processes (Linux; elsewhere, or beyond pipe-max-size, it stays)."""
    try:
        import fcntl  # POSIX only
    except ImportError:
        return
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if stream is None or setsize is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(stream.fileno(), setsize, _PIPE_BYTES)


def _watch_parent(parent: int) -> None:
    """End the worker when the process that started it is gone (re-parented to init or a subreaper)."""
    while True:
        time.sleep(_WATCHDOG_EVERY)
        if os.getppid() != parent:
            os._exit(0)


def serve(target: str, parent: int) -> None:
    """The worker's loop: read a pickled job, answer with the rendered bytes; end at end of input."""
    # Ctrl-C reaches the whole process group: the proxy decides when the worker stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    module, _, name = target.partition(":")
    imported = importlib.import_module(module)
    render = made(getattr(imported, name))
    # A target module may name the jobs whose memory its next jobs use again (offload.keeps):
    # after a large one of those the heap is handed back once the worker is idle, else at once.
    keeps = getattr(imported, "keeps", None)
    # ``parent`` is the proxy's pid as the proxy knows it: if the proxy died before this line ran,
    # getppid() already differs from it and the watchdog ends the worker at once.
    watchdog = threading.Thread(target=_watch_parent, args=(parent,), daemon=True)
    watchdog.start()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol
    owed = False  # a large job's heap, to hand back when the worker is idle
    while True:
        if owed:  # until handed back: later small jobs do not cancel it
            owed = not idle_trim(stdin.fileno(), _TRIM_IDLE)
        try:
            _, data, buffers = _read_message(stdin)
        except WorkerGone:
            return  # the proxy closed the pipe or died: nothing more will come
        size = len(data) + sum(len(b) for b in buffers)
        again = False
        try:  # a job that cannot be read back here fails alone, like one that raises
            job = pickle.loads(data, buffers=buffers)
            size = max(size, getattr(job, "body_size", 0))  # a body sent as its new part only (continued.py)
            again = keeps is not None and keeps(job)
            reply: tuple[bytes, Any] = (b"o", render(job))
        except Exception as e:
            reply = (b"e", f"{type(e).__name__}: {e}")
        job = data = buffers = None  # a large body is not kept while the reply is written
        try:
            _write_obj(stdout, *reply)
        except (BrokenPipeError, OSError):
            return
        del reply
        if size >= _TRIM_BYTES:  # the job's body and what was parsed of it are freed now
            if again:
                owed = True
            else:
                trim()
                owed = False


def idle_trim(fd: int, idle: float) -> bool:
    """Wait up to ``idle`` seconds for the next job on ``fd``, then :func:`trim` if none came
    (True: trimmed). Nothing is buffered ahead of ``fd``: the proxy sends a job only once it
    has the reply to the one before. Where it cannot wait (no select on this pipe), it trims
    at once, as after any other large job."""
    try:
        ready, _, _ = select.select([fd], [], [], idle)
    except (OSError, ValueError):
        ready = []
    if ready:
        return False
    trim()
    return True


def trim() -> None:
    """Hand the freed heap back to the system (glibc keeps it otherwise: a 30 MB body read
    once would stay resident in the worker for good)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)


def _package_parent() -> str:
    """The directory the running ``native_bridge`` package was imported from."""
    here = os.path.dirname(os.path.abspath(__file__))  # .../native_bridge/runtime
    return os.path.dirname(os.path.dirname(here))


def made(target: Any) -> Callable[[Any], Any]:
    """The function a target names: a module-level function itself, or a new instance of a
    module-level class (the state it keeps between jobs is that instance's, one per process)."""
    return target() if isinstance(target, type) else target


class WorkerProcess:
    """One worker process and the jobs sent to it: the chat hop's large readings (offload.Reader)
    and the records' rendering (records.writer.RecordRenderer) each have their own."""

    def __init__(self, render: Callable[[Any], Any] | type) -> None:
        """``render``: a module-level function, or a module-level class whose instances are
        called with each job (so the worker can import it: :func:`made`)."""
        self._target = f"{render.__module__}:{render.__qualname__}"
        self._make = render
        self._local: Callable[[Any], Any] | None = None  # the calling thread's, made when first needed
        self._proc: subprocess.Popen[bytes] | None = None
        self._broken = getattr(sys, "frozen", False)  # a frozen mitmdump cannot run "python -c"
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def remote(self) -> bool:
        """Whether jobs go to the worker process (False: they run in the calling thread, for good)."""
        return not self._broken

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, _package_parent(), self._target, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the worker's own tracebacks, if any, go where the proxy's go
            close_fds=True,  # the worker holds no other end of any pipe: the proxy's death is its EOF
            env={k: v for k, v in os.environ.items() if k != PASSWORD_ENV},  # it never talks to the store
        )
        for stream in (proc.stdin, proc.stdout):
            _widen(stream)
        return proc

    def render(self, job: Any) -> Any:
        with self._lock:
            if not self._broken:
                try:
                    if self._proc is None:
                        self._proc = self._start()
                    assert self._proc.stdin is not None and self._proc.stdout is not None
                    _write_obj(self._proc.stdin, b"j", job)
                    kind, data, buffers = _read_message(self._proc.stdout)
                    try:
                        reply = pickle.loads(data, buffers=buffers)
                    except Exception as e:  # not what this protocol writes
                        raise WorkerGone(f"unreadable reply: {type(e).__name__}: {e}") from e
                    if kind == b"o":
                        return reply
                    if kind == b"e":
                        raise JobFailed(str(reply))
                    raise WorkerGone(f"unexpected message {kind!r}")
                except (WorkerGone, OSError, ValueError, pickle.PickleError) as e:
                    logger.warning(
                        f"bridge: record worker process unavailable ({type(e).__name__}: {e}); "
                        "rendering records in the proxy process"
                    )
                    self._broken = True
                    self._close()
        return self.local(job)

    @property
    def local(self) -> Any:
        """The function jobs run with in the calling thread when the worker cannot (:func:`made`)."""
        with self._lock:
            if self._local is None:
                self._local = made(self._make)
            return self._local

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()  # end of input: the worker's loop returns
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
