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

from . import redact

logger = logging.getLogger(__name__)

RECORD_VERSION = 1
_STOP = object()


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


def _body_doc(raw: bytes | None) -> tuple[Any, str | None]:
    """The body as redacted JSON when it is JSON, else as (redacted) text."""
    if raw is None:
        return None, None
    try:
        return redact.body(orjson.loads(raw)), None
    except orjson.JSONDecodeError:
        return None, redact.text(raw.decode("utf-8", "replace"))


def to_record(job: RecordJob) -> dict[str, Any]:
    before, before_text = _body_doc(job.before)
    after, after_text = _body_doc(job.after)
    rec: dict[str, Any] = {
        "record_version": RECORD_VERSION,
        "flow_id": job.flow_id,
        "time": datetime.fromtimestamp(job.timestamp, UTC).isoformat().replace("+00:00", "Z"),
        "method": job.method,
        "url": redact.url(job.url),
        "request_headers": redact.headers(job.headers),
        "dialect": job.dialect,
        "status": job.status,
        "reason": job.reason,
        "comment": job.comment,
        "notes": job.notes,
        "summary": job.summary,
        "before": before,
        "after": after,
        "steps": job.steps,
        "accounting": job.accounting,
    }
    if before_text is not None:
        rec["before_text"] = before_text
    if after_text is not None:
        rec["after_text"] = after_text
    return rec


def record_name(job: RecordJob) -> str:
    """A file name from nothing a client controls unsanitised."""
    stamp = datetime.fromtimestamp(job.timestamp, UTC).strftime("%Y%m%dT%H%M%S.%f")
    safe_id = re.sub(r"[^A-Za-z0-9-]", "_", job.flow_id)[:48] or "flow"
    if safe_id != job.flow_id:  # altered: a digest of the real id keeps distinct ids apart
        safe_id += "-" + hashlib.sha256(job.flow_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{stamp}-{safe_id}.json"


class Recorder:
    def __init__(self, directory: str) -> None:
        self.directory = os.path.abspath(directory)
        self.written = 0
        self.failed = 0
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._last_error: str | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    def submit(self, job: RecordJob) -> None:
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="bridge-records", daemon=True)
                self._thread.start()
        self._queue.put(job)

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
        self.flush(timeout)
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)

    def _run(self) -> None:
        while (job := self._queue.get()) is not _STOP:
            try:
                self.write(job)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    def write(self, job: RecordJob) -> str | None:
        """Write one record now; returns its path, or None when it could not be written."""
        try:
            data = orjson.dumps(to_record(job), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
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
            msg = f"{type(e).__name__}: {e}"
            if msg != self._last_error:  # one line per distinct fault, not one per flow
                logger.error(f"bridge: cannot write record for flow {job.flow_id} to {self.directory}: {msg}")
                self._last_error = msg
            return None
        self.written += 1
        self._last_error = None
        return path


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
