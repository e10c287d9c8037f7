"""One JSON record per bridged request, written off the request path.

The addon hands raw material to :meth:`Recorder.submit` (a queue put); a writer
thread decodes, redacts and writes each record atomically (temp file, fsync,
rename), readable by the owner only. Failures are logged, counted and survived.

A record holds each body once: ``before``, the rewritten body as ``after_patch`` (what
changed, :mod:`bodydiff`), and the steps with the tool output ``before`` holds written as
references to it; :func:`after_doc` / :func:`rebuild_after` / :func:`steps_of` give them back.
Records are capped in size one by one (:class:`Limits`), and the directory by total
size and age: the oldest records go first.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from ..core.conversation import conversation_key
from ..runtime.worker import WorkerProcess, by_reference
from . import bodydiff, redact
from . import planner as planner_record

# The record body format is read back in bodydiff; these names stay here for the readers of records.
from .bodydiff import after_doc as after_doc
from .bodydiff import rebuild_after as rebuild_after
from .bodydiff import steps_of
from .planner import PlannerJob

logger = logging.getLogger(__name__)

RECORD_VERSION = 3  # 3: steps refer to before for the tool output it holds (bodydiff.refer)
# 2: after_patch instead of after; skipped bodies omitted; size caps
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
    # Placement.to_json() per call and result, or the placements themselves (core.builder: the
    # chat hop hands them over as they are, and they are made JSON here, in the renderer).
    accounting: list[Any] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    comment: str = ""
    notes: list[str] = field(default_factory=list)
    planner: PlannerJob | None = None  # the planner hop's material (records/planner.py)
    websocket_message: int | None = None  # a WebSocket client frame: its index in the flow's messages
    websocket_context: list[dict[str, Any]] | None = None  # server-held calls the frame answers (websocket.py)
    omit_before: bool = False  # record ``before``'s size and conversation, not its content (a skipped body)
    max_record: int = 0  # bytes; 0: no cap

    __reduce__ = by_reference  # the bodies cross to the record worker without a copy

    @classmethod
    def of(cls, flow: Any, *, timestamp: float | None = None, **fields: Any) -> RecordJob:
        """A job for ``flow``'s request (id, time, method, URL, headers), with the other fields given."""
        req = flow.request
        return cls(
            flow_id=flow.id,
            timestamp=req.timestamp_start if timestamp is None else timestamp,
            method=req.method,
            url=req.pretty_url,
            headers=list(req.headers.items(multi=True)),
            **fields,
        )


@dataclass(slots=True, frozen=True)
class Limits:
    """What the records directory may hold; 0 means no limit."""

    max_record: int = 0  # bytes per record: larger records are written without their bodies
    max_total: int = 0  # bytes in the directory: the oldest records are removed beyond it
    max_age: float = 0  # seconds: older records are removed
    skipped_bodies: bool = False  # record the content of bodies the bridge skipped


_SIZE = re.compile(r"(?i)^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$")
_AGE = re.compile(r"(?i)^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_size(value: str) -> int:
    """``0``, ``123``, ``64K``, ``16M``, ``2G`` (powers of 1024) as bytes; ValueError otherwise."""
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a size (e.g. 0, 500K, 16M, 2G)")
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "))


def parse_age(value: str) -> float:
    """``0``, ``90s``, ``30m``, ``12h``, ``14d``, ``2w`` as seconds (a bare number is days); ValueError otherwise."""
    m = _AGE.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not an age (e.g. 0, 12h, 14d, 2w)")
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}[m.group(2).lower()]
    return float(m.group(1)) * unit


def prepare_directory(directory: str) -> str:
    """Create the records directory (0700) if needed and prove it writable; OSError with the cause otherwise."""
    path = os.path.abspath(os.path.expanduser(directory))
    os.makedirs(path, mode=0o700, exist_ok=True)
    if not os.path.isdir(path):
        raise NotADirectoryError(f"{path} is not a directory")
    fd, probe = tempfile.mkstemp(dir=path, prefix=".", suffix=".tmp")
    os.close(fd)
    os.unlink(probe)
    return path


def _body_doc(raw: bytes | None, texts: Callable[[str], str] = redact.text) -> tuple[Any, str | None]:
    """The body as redacted JSON when it is JSON, else as (redacted) text."""
    copy, text, _ = _read_body(raw, texts)
    return copy, text


def _read_body(raw: bytes | None, texts: Callable[[str], str]) -> tuple[Any, str | None, Any]:
    """:func:`_body_doc`, and the body as parsed (None: not JSON), which the record reads once."""
    if raw is None:
        return None, None, None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    else:
        copy, deep = redact.document(doc, texts, _MAX_BODY_DEPTH)
        if not deep:
            return copy, None, doc
    return None, redact.text(raw.decode("utf-8", "replace")), doc


def _not_json(raw: bytes | None) -> bool:
    try:
        orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return True
    return False


def _str(value: str) -> str:
    """Text JSON can carry: mitmproxy keeps undecodable header and URL bytes as lone surrogates."""
    return _SURROGATES.sub("\ufffd", value)


def to_record(
    job: RecordJob, texts: Callable[[str], str] = redact.text, index: bodydiff.Index | None = None
) -> dict[str, Any]:
    """The record of ``job``; ``texts`` redacts each string (redact.text, or a redact.Texts);
    ``index``: the long strings of the body items a worker has seen (bodydiff.Index)."""
    if job.omit_before:
        before, before_text, parsed = None, None, job.before  # the key still reads the body
    else:
        before, before_text, parsed = _read_body(job.before, texts)
    after, after_text = _body_doc(job.after, texts)
    # Steps carry tool output (a token a command printed) and accounting reasons quote arguments.
    steps = redact.listed(job.steps, texts)
    rec: dict[str, Any] = {
        "record_version": RECORD_VERSION,
        "flow_id": _str(job.flow_id),
        "time": when.isoformat().replace("+00:00", "Z") if (when := _time(job.timestamp)) else None,
        "method": _str(job.method),
        "url": redact.url(_str(job.url)),
        "request_headers": redact.headers([(_str(k), _str(v)) for k, v in job.headers]),
        "dialect": job.dialect,
        "conversation": conversation_key(job.headers, parsed),  # a digest, never the raw id
        "status": job.status,
        "reason": redact.text(_str(job.reason)),
        "comment": redact.text(_str(job.comment)),
        "notes": [redact.text(_str(n)) for n in job.notes],
        "summary": job.summary,
        "before_bytes": len(job.before) if job.before is not None else None,
        "before": before,
        # The rewritten body once: what changed from before (bodydiff); rebuild_after() gives its bytes.
        "after_patch": None,
        "steps": steps,
        "accounting": redact.listed([_placed(p) for p in job.accounting], texts),
    }
    if job.websocket_message is not None:  # a frame of the flow's WebSocket, not its HTTP request
        rec["websocket_message"] = job.websocket_message
    if job.websocket_context is not None:  # the calls of the previous response the frame's outputs answer
        rec["websocket_context"] = redact.body(job.websocket_context)
    if job.planner is not None:
        rec[planner_record.RECORD_KEY] = planner_record.render(job.planner)
    if job.status == "unchanged" and before_text is not None and _not_json(job.before):
        # The core's cheap pre-check found no tool-history markers and did not parse: say what the body is.
        rec["reason"] = f"the body is not JSON ({rec['reason'] or 'no tool history'})"
    if job.omit_before and job.before is not None:
        rec["body_omitted"] = (
            f"{job.status} body of {len(job.before)} bytes not recorded (bridge_records_skipped_bodies records it)"
        )
    if before_text is not None:
        rec["before_text"] = before_text
    if job.after is not None:
        rec["after_bytes"] = len(job.after)
        rec["after_sha256"] = hashlib.sha256(job.after).hexdigest()  # of the bytes that went upstream
        if before is not None and after is not None:
            rec["after_patch"] = bodydiff.diff(before, after, steps)
        elif after is not None:
            rec["after"] = after  # the original is not JSON: nothing to describe the change against
        if after_text is not None:
            rec["after_text"] = after_text
    # The steps restate tool output before holds: each such string once, there (steps_of() resolves it).
    rec["steps"] = bodydiff.refer(steps, before, index=index)
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


# The names record_name() gives: only these are ever removed by retention.
_RECORD_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}-[A-Za-z0-9_-]+\.json$")
_AGE_EVERY = 60.0  # seconds between two sweeps for records older than max_age


class Recorder:
    def __init__(
        self,
        directory: str,
        max_pending_bytes: int = MAX_PENDING_BYTES,
        isolate: bool = False,
        limits: Limits | None = None,
    ) -> None:
        """``isolate``: render records in a worker process (runtime/worker.py), as the addon does,
        so their CPU work never competes with the proxy's event loop for the GIL."""
        self.directory = os.path.abspath(directory)
        self.limits = limits or Limits()
        self.removed = 0  # records removed by retention (max_total, max_age)
        self._index: list[tuple[float, str, int]] | None = None  # (mtime, name, size) of our records, oldest first
        self._names: set[str] = set()  # the names in _index: a write looks its name up, not the whole index
        self._total = 0
        self._last_age_sweep = float("-inf")
        self._renderer = WorkerProcess(RecordRenderer) if isolate else None
        self._here: RecordRenderer | None = None  # renders in the writer thread when not isolated
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
        # Jobs whose flow's reply has not reached the client yet, by flow id (submit(held=True)).
        self._held: dict[str, RecordJob] = {}

    @property
    def lost(self) -> int:
        """Records that never reached the disk: failed writes and records dropped under back-pressure."""
        return self.failed + self.dropped

    def submit(self, job: RecordJob, *, held: bool = False) -> None:
        """Queue ``job`` for writing. ``held``: not before :meth:`release` names its flow (its reply
        has reached the client) or :meth:`close`: rendering it is CPU the worker process would
        otherwise take from the very turn the record describes (on two cores, that turn's own
        client, upstream and proxy share them)."""
        if held:
            with self._lock:
                before = self._held.get(job.flow_id)
                self._held[job.flow_id] = job
            if before is None:
                return
            job = before  # a flow id held again (a replayed flow object): the one before is written now
        if self.limits.max_record:
            job.max_record = self.limits.max_record
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

    def release(self, flow_id: str) -> None:
        """Queue the job held for ``flow_id``, if any: its turn is over."""
        with self._lock:
            job = self._held.pop(flow_id, None)
        if job is not None:
            self.submit(job)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted record is written (or failed); held ones wait for their release."""
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
            held, self._held = list(self._held.values()), {}
        for job in held:  # turns still running at shutdown: recorded as they stand
            self.submit(job)
        with self._lock:
            pending = self._pending
        if pending:
            logger.info(f"bridge: writing {pending} pending records to {self.directory} before closing")
        unwritten = 0
        if not self.flush(timeout):
            unwritten = self._pending
            logger.error(f"bridge: {unwritten} records not written to {self.directory}: gave up after {timeout}s")
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)
        if self._renderer is not None:
            self._renderer.close()
        lost = self.lost + unwritten
        if lost:
            logger.warning(
                f"bridge: {lost} records lost for {self.directory} ({self.failed} failed to write, "
                f"{self.dropped} dropped while the writer was behind, {unwritten} unwritten at shutdown); "
                f"{self.written} written"
            )
        elif self.written:
            logger.info(f"bridge: {self.written} records written to {self.directory}, none lost")

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

    def _render_here(self, job: RecordJob) -> bytes:
        if self._here is None:
            self._here = RecordRenderer()
        return self._here(job)

    def write(self, job: RecordJob) -> str | None:
        """Write one record now; returns its path, or None when it could not be written."""
        try:
            data = self._renderer.render(job) if self._renderer is not None else self._render_here(job)
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
            self._retain(path, len(data))
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

    def _retain(self, path: str, size: int) -> None:
        """Keep the directory within max_total and max_age, oldest records first (never the one just written)."""
        limits = self.limits
        if not limits.max_total and not limits.max_age:
            return
        if self._index is None:
            self._index = self._scan()
            self._names = {e[1] for e in self._index}
            self._total = sum(s for _, _, s in self._index)
        name = os.path.basename(path)
        if name in self._names:  # a record written again (replay) replaces its file
            self._index = [e for e in self._index if e[1] != name]
            self._total = sum(s for _, _, s in self._index)
        self._index.append((time.time(), name, size))
        self._names.add(name)
        self._total += size
        doomed: list[tuple[float, str, int]] = []
        now = time.monotonic()
        if limits.max_age and now - self._last_age_sweep >= _AGE_EVERY:
            self._last_age_sweep = now
            cutoff = time.time() - limits.max_age
            doomed += [e for e in self._index[:-1] if e[0] < cutoff]
        if limits.max_total:
            total = self._total - sum(s for _, _, s in doomed)
            for e in self._index[:-1]:
                if total <= limits.max_total:
                    break
                if e not in doomed:
                    doomed.append(e)
                    total -= e[2]
        if not doomed:
            return
        gone = set()
        for e in doomed:
            with contextlib.suppress(FileNotFoundError):
                try:
                    os.unlink(os.path.join(self.directory, e[1]))
                except OSError as err:
                    logger.warning(f"bridge: cannot remove old record {e[1]}: {_fault(err)}")
                    continue
            gone.add(e[1])
        self.removed += len(gone)
        self._index = [e for e in self._index if e[1] not in gone]
        self._names -= gone
        self._total = sum(s for _, _, s in self._index)

    def _scan(self) -> list[tuple[float, str, int]]:
        """The records already in the directory, oldest first (only names this recorder gives)."""
        found = []
        with os.scandir(self.directory) as it:
            for entry in it:
                if _RECORD_NAME.match(entry.name):
                    with contextlib.suppress(OSError):
                        st = entry.stat(follow_symlinks=False)
                        found.append((st.st_mtime, entry.name, st.st_size))
        found.sort()
        return found

    def _directory(self) -> None:
        if os.path.isdir(self.directory):
            self._had_directory = True
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        if self._had_directory:
            logger.warning(f"bridge: records directory {self.directory} was removed; created it again")
        self._had_directory = True


def _placed(p: Any) -> dict[str, Any]:
    """An accounting entry as JSON: a placement (core.builder.Placement) by its ``to_json``."""
    return p if isinstance(p, dict) else p.to_json()


def _size(job: RecordJob) -> int:
    return len(job.before or b"") + len(job.after or b"")


def _fault(e: Exception) -> str:
    """A fault as one line, without the random temp-file name an OSError carries (so it repeats exactly)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{type(e).__name__}: [Errno {e.errno}] {e.strerror}"
    return f"{type(e).__name__}: {e}"


def _dump(rec: dict[str, Any]) -> bytes:
    """One top-level field a line, each value compact: readable with jq and grep, without the third of
    the size that indenting every nested body level costs."""
    lines = [b"  " + orjson.dumps(k) + b": " + orjson.dumps(v) for k, v in rec.items()]
    return b"{\n" + b",\n".join(lines) + b"\n}\n"


class RecordRenderer:
    """Renders records (in the rendering process, or in the writer thread when that cannot run;
    runtime/worker.py makes one there). It keeps the redacted long strings (redact.Texts) and the
    body index between records: a conversation's history is in each of its records again, and
    only its newest round is new."""

    def __init__(self) -> None:
        self.texts = redact.Texts()
        self.index = bodydiff.Index()

    def __call__(self, job: RecordJob) -> bytes:
        option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
        try:
            rec = to_record(job, self.texts, self.index)
            data = _dump(rec)
            if job.max_record and len(data) > job.max_record:
                # Over the cap: the bodies go first, then the steps (tool output), then all but the verdict.
                size = len(data)
                rec["steps"] = steps_of(rec)  # without before, the steps hold their strings themselves
                for key in ("before", "before_text", "after", "after_text", "after_patch"):
                    if key in rec:
                        rec[key] = None
                rec["body_omitted"] = (
                    f"the record would be {size} bytes, over bridge_records_max_record ({job.max_record}): "
                    "bodies not recorded"
                )
                data = _dump(rec)
                if len(data) > job.max_record:
                    rec["steps"] = rec["accounting"] = None
                    rec["body_omitted"] += "; steps and accounting not recorded either"
                    data = _dump(rec)
                if len(data) > job.max_record:
                    keep = ("record_version", "flow_id", "time", "method", "status", "summary", "body_omitted")
                    data = _dump({k: rec[k] for k in keep})
            return data
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


def _render(job: RecordJob) -> bytes:
    """One record rendered on its own (it shares no strings with other records)."""
    return RecordRenderer()(job)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
