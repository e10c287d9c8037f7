"""One JSON record per bridged request, written off the request path.

The addon hands raw material to :meth:`Recorder.submit` (a queue put); a writer
thread decodes, redacts and writes each record atomically (temp file, fsync,
rename), readable by the owner only. Failures are logged, counted and survived.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..core.conversation import conversation_key
from . import native_record, redact
from .native_record import NativeJob
from .renderer import Renderer

logger = logging.getLogger(__name__)

RECORD_VERSION = 1
_STOP = object()
# orjson writes at most 254 nested levels and the record holds a body one level down: a deeper
# body is kept as (redacted) text, so even a hostile nesting leaves a complete record.
_MAX_BODY_DEPTH = 200
# Bodies waiting for the writer, at most (the addon's request bodies are capped by bridge_max_body).
MAX_PENDING_BYTES = 256 * 1024 * 1024
_SURROGATES = re.compile(r"[\ud800-\udfff]")


@dataclass(slots=True)
class RecordJob:
    flow_id: str
    timestamp: float
    method: str
    url: str
    headers: list[tuple[str, str]]
    status: str  # rewritten | unchanged | skipped | error
    reason: str
    dialect: str | None
    before: bytes | None
    after: bytes | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    accounting: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    comment: str = ""
    notes: list[str] = field(default_factory=list)
    native: NativeJob | None = None  # the planner hop's material (native_record.py)
    websocket_message: int | None = None  # a WebSocket client frame: its index in the flow's messages
    websocket_context: list[dict[str, Any]] | None = None  # server-held calls the frame answers (websocket.py)


def _too_deep(doc: Any, limit: int = _MAX_BODY_DEPTH) -> bool:
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict) else node))
    return False


def _body_doc(raw: bytes | None) -> tuple[Any, str | None]:
    """The body as redacted JSON when it is JSON, else as (redacted) text."""
    if raw is None:
        return None, None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    else:
        if not _too_deep(doc):
            return redact.body(doc), None
    return None, redact.text(raw.decode("utf-8", "replace"))


def _str(value: str) -> str:
    """Text JSON can carry: mitmproxy keeps undecodable header and URL bytes as lone surrogates."""
    return _SURROGATES.sub("\ufffd", value)


def to_record(job: RecordJob) -> dict[str, Any]:
    before, before_text = _body_doc(job.before)
    after, after_text = _body_doc(job.after)
    rec: dict[str, Any] = {
        "record_version": RECORD_VERSION,
        "flow_id": _str(job.flow_id),
        "time": when.isoformat().replace("+00:00", "Z") if (when := _time(job.timestamp)) else None,
        "method": _str(job.method),
        "url": redact.url(_str(job.url)),
        "request_headers": redact.headers([(_str(k), _str(v)) for k, v in job.headers]),
        "dialect": job.dialect,
        "conversation": conversation_key(job.headers, job.before),  # a digest, never the raw id
        "status": job.status,
        "reason": redact.text(_str(job.reason)),
        "comment": redact.text(_str(job.comment)),
        "notes": [redact.text(_str(n)) for n in job.notes],
        "summary": job.summary,
        "before": before,
        "after": after,
        # Steps carry tool output (a token a command printed) and accounting reasons quote arguments.
        "steps": redact.body(job.steps),
        "accounting": redact.body(job.accounting),
    }
    if job.websocket_message is not None:  # a frame of the flow's WebSocket, not its HTTP request
        rec["websocket_message"] = job.websocket_message
    if job.websocket_context is not None:  # the calls of the previous response the frame's outputs answer
        rec["websocket_context"] = redact.body(job.websocket_context)
    if job.native is not None:
        rec["native"] = native_record.render(job.native)
    if before_text is not None:
        rec["before_text"] = before_text
    if after_text is not None:
        rec["after_text"] = after_text
    return rec


def _time(timestamp: float) -> datetime | None:
    """The request time; None for one no clock could show (a doctored flow file)."""
    try:
        return datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError, TypeError):
        return None


def record_name(job: RecordJob) -> str:
    """A file name from nothing a client controls unsanitised."""
    when = _time(job.timestamp)
    stamp = when.strftime("%Y%m%dT%H%M%S.%f") if when else "00000000T000000.000000"
    safe_id = re.sub(r"[^A-Za-z0-9-]", "_", job.flow_id)[:48] or "flow"
    if safe_id != job.flow_id:  # altered: a digest of the real id keeps distinct ids apart
        safe_id += "-" + hashlib.sha256(job.flow_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    frame = f"-m{job.websocket_message}" if job.websocket_message is not None else ""  # one record per frame
    return f"{stamp}-{safe_id}{frame}.json"


class Recorder:
    def __init__(self, directory: str, max_pending_bytes: int = MAX_PENDING_BYTES, isolate: bool = False) -> None:
        """``isolate``: render records in a worker process (renderer.py), as the addon does,
        so their CPU work never competes with the proxy's event loop for the GIL."""
        self.directory = os.path.abspath(directory)
        self._renderer = Renderer(_render) if isolate else None
        self.max_pending_bytes = max_pending_bytes
        self.written = 0
        self.failed = 0
        self.dropped = 0  # refused at submit: the writer was too far behind (memory bound)
        self._pending_bytes = 0
        self._dropping = False
        self._had_directory = False
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._last_error: str | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    def submit(self, job: RecordJob) -> None:
        size = _size(job)
        with self._lock:
            if self._pending and self._pending_bytes + size > self.max_pending_bytes:
                # A stalled disk must not grow memory without bound: drop, count, say so once.
                self.dropped += 1
                dropping, self._dropping = self._dropping, True
            else:
                dropping = None
                self._pending += 1
                self._pending_bytes += size
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="bridge-records", daemon=True)
                    self._thread.start()
        if dropping is None:
            self._queue.put(job)
        elif not dropping:
            logger.error(
                f"bridge: records for {self.directory} are written slower than requests arrive "
                f"(over {self.max_pending_bytes} bytes pending); dropping records until the writer catches up"
            )

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted record is written (or failed)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> None:
        with self._lock:
            pending = self._pending
        if pending:
            logger.info(f"bridge: writing {pending} pending records to {self.directory} before closing")
        if not self.flush(timeout):
            logger.error(f"bridge: {self._pending} records not written to {self.directory}: gave up after {timeout}s")
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)
        if self._renderer is not None:
            self._renderer.close()

    def _run(self) -> None:
        while (job := self._queue.get()) is not _STOP:
            try:
                self.write(job)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._pending_bytes -= _size(job)
                    if self._dropping and not self._pending:
                        self._dropping = False
                        logger.warning(f"bridge: record writer caught up; {self.dropped} records dropped so far")
                    self._idle.notify_all()

    def write(self, job: RecordJob) -> str | None:
        """Write one record now; returns its path, or None when it could not be written."""
        try:
            data = self._renderer.render(job) if self._renderer is not None else _render(job)
            self._directory()
            path = os.path.join(self.directory, record_name(job))
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                os.fchmod(fd, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                _unlink(tmp)
                raise
        except Exception as e:  # a disk fault must never reach the traffic
            self.failed += 1
            fault = _fault(e)
            if fault != self._last_error:  # one line per distinct fault, not one per flow
                logger.error(f"bridge: cannot write record for flow {_str(job.flow_id)} to {self.directory}: {fault}")
                self._last_error = fault
            return None
        self.written += 1
        if self._last_error is not None:
            logger.info(f"bridge: records are written to {self.directory} again ({self.failed} failed in all)")
            self._last_error = None
        return path

    def _directory(self) -> None:
        if os.path.isdir(self.directory):
            self._had_directory = True
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        if self._had_directory:
            logger.warning(f"bridge: records directory {self.directory} was removed; created it again")
        self._had_directory = True


def _size(job: RecordJob) -> int:
    return len(job.before or b"") + len(job.after or b"")


def _fault(e: Exception) -> str:
    """A fault as one line, without the random temp-file name an OSError carries (so it repeats exactly)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{type(e).__name__}: [Errno {e.errno}] {e.strerror}"
    return f"{type(e).__name__}: {e}"


def _render(job: RecordJob) -> bytes:
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    try:
        return orjson.dumps(to_record(job), option=option)
    except Exception as e:  # still one record per flow: what is known, and why the rest is missing
        logger.warning(f"bridge: record for flow {_str(job.flow_id)} kept short: {type(e).__name__}: {e}")
        stub = {
            "record_version": RECORD_VERSION,
            "flow_id": _str(job.flow_id),
            "status": job.status,
            "reason": redact.text(_str(job.reason)),
            "record_error": f"{type(e).__name__}: {e}",
        }
        return orjson.dumps(stub, option=option)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
