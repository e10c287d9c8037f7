"""The chat hop's observations as the planner hop looks them up: an index in memory and, with
``bridge_state``, a log that several processes append to and read.

Why a log and not a table in the SQLite file: what a reading found must be on disk by the time
the gateway calls the planner, maybe through another proxy; a SQLite transaction cost a turn about
110 µs in the proxy, an append is one write(2). A reader indexes only the bytes it has not read
(fstat, then pread from where it stopped).

A chat request may go upstream before it is read, as with the state in memory: first a record
saying a reading has begun (its token, and the time by which it ends even if its process dies),
then, once read, one with its observations that says it has ended. A planner hop waits for the
readings begun before its request (:meth:`ObservationLog.unfinished`), as it waits for its own
process's.

Beside the SQLite file, one log per UTC day, ``<state>-obs-<days since 1970>``, created 0600. A
log is a run of records, each written by one write(2) with O_APPEND, so appends of several
processes never interleave inside a record:

    magic b"NBo1" | payload length u32 | crc32 of the payload u32 | payload (little-endian)
    payload: seen f64 | begun u64 | ended u64 | until f64 (begun: the token, 0 none), then per observation
             key length u8 | call length u8 | flags u8 | exit code i64 | client length u16 | key | call | client

Flags: 1 an exit code is stated, 2 a verdict is known, 4 the verdict is "failed". A record that
does not check (a write torn by a power cut or a full disk) is skipped to the next magic; one not
yet whole is read once it is, or skipped as torn once a whole one follows it. Logs a day past the
TTL are deleted by any process on its first write or lookup of a new day.
Nothing a secret could hide in is written: digests, an exit code, a verdict, a client's id.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import struct
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from ..evidence import Observation

DAY = 86400.0
MAGIC = b"NBo1"
_HEADER = struct.Struct("<4sII")
_MARKS = struct.Struct("<dQQd")
_ENTRY = struct.Struct("<BBBqH")
_TOKENS = 2**64 - 1
MAX_RECORD = 64 * 2**20  # a longer length field is damage, not a record
SCAN_BYTES = 8 * 2**20  # logs read on opening, newest first: about twice what the index keeps


class Observations:
    """Observations by (key, call), each with when it was seen; beyond ``limit`` the oldest
    arrival is forgotten first."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._order: OrderedDict[tuple[bytes, bytes], None] = OrderedDict()  # oldest first
        self._by_key: dict[bytes, dict[bytes, tuple[Observation, float]]] = {}

    def add(self, o: Observation, seen: float = 0.0) -> None:
        known = self._by_key.get(o.key, {}).get(o.call)
        if known is not None and known[1] > seen:  # read out of order: the newer one stands
            return
        self._order[(o.key, o.call)] = None
        self._order.move_to_end((o.key, o.call))
        self._by_key.setdefault(o.key, {})[o.call] = (o, seen)
        while len(self._order) > self._limit:
            (key, call), _ = self._order.popitem(last=False)
            calls = self._by_key[key]
            del calls[call]
            if not calls:
                del self._by_key[key]

    def candidates(self, key: bytes, since: float = 0.0) -> list[Observation]:
        return [o for o, seen in self._by_key.get(key, {}).values() if seen >= since]


@dataclass(slots=True)
class Record:
    """One write: a turn's observations, a reading begun (``begun``, ending by ``until``) or
    ended (``ended``)."""

    seen: float
    observations: list[Observation]
    begun: int = 0
    ended: int = 0
    until: float = 0.0


def encode(r: Record) -> bytes:
    parts = [_MARKS.pack(r.seen, r.begun, r.ended, r.until)]
    for o in r.observations:
        client = o.client.encode("utf-8", "surrogatepass") if o.client else b""
        flags = (o.exit_code is not None) | (o.failed is not None) << 1 | (o.failed is True) << 2
        code = o.exit_code if o.exit_code is not None else 0
        parts += (_ENTRY.pack(len(o.key), len(o.call), flags, code, len(client)), o.key, o.call, client)
    payload = b"".join(parts)
    return _HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def decode(data: bytes) -> tuple[list[Record], int]:
    """The whole records in ``data``, and how many bytes they and any damage took (the rest is a
    record still being written, or the start of one)."""
    out: list[Record] = []
    pos, end = 0, len(data)
    while end - pos >= _HEADER.size:
        magic, length, crc = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size
        if magic == MAGIC and length <= MAX_RECORD:
            if end - start < length:  # not whole yet, or torn (a whole record after it says so)
                after = _whole_after(data, start)
                if after < 0:
                    return out, pos
                pos = after
                continue
            payload = data[start : start + length]
            record = _record(payload) if zlib.crc32(payload) == crc else None
            if record is not None:
                out.append(record)
                pos = start + length
                continue
        found = data.find(MAGIC, pos + 1)  # damage: skip to the next record
        pos = found if found >= 0 else max(pos + 1, end - len(MAGIC) + 1)
    return out, pos


def _whole_after(data: bytes, at: int) -> int:
    """Where the first record that checks out begins after ``at`` (-1: none). Appends never
    interleave, so one after a record not yet whole means that record was torn."""
    at = data.find(MAGIC, at)
    while at >= 0 and len(data) - at >= _HEADER.size:
        _, length, crc = _HEADER.unpack_from(data, at)
        start = at + _HEADER.size
        if length <= min(MAX_RECORD, len(data) - start) and zlib.crc32(data[start : start + length]) == crc:
            return at
        at = data.find(MAGIC, at + 1)
    return -1


def _record(payload: bytes) -> Record | None:
    if len(payload) < _MARKS.size:
        return None
    seen, begun, ended, until = _MARKS.unpack_from(payload, 0)
    pos, end, got = _MARKS.size, len(payload), []
    while pos < end:
        if end - pos < _ENTRY.size:
            return None
        key_len, call_len, flags, code, client_len = _ENTRY.unpack_from(payload, pos)
        pos += _ENTRY.size
        stop = pos + key_len + call_len + client_len
        if stop > end:
            return None
        key, call = payload[pos : pos + key_len], payload[pos + key_len : pos + key_len + call_len]
        client = payload[pos + key_len + call_len : stop].decode("utf-8", "surrogatepass") or None
        failed = bool(flags & 4) if flags & 2 else None
        got.append(Observation(code if flags & 1 else None, failed, client, key, call))
        pos = stop
    return Record(seen, got, begun, ended, until)


@dataclass(slots=True)
class _Read:
    fd: int
    offset: int = 0


class ObservationLog:
    """The day logs beside ``base`` (the state file's path): appended to by :meth:`observe`, read
    by :meth:`candidates` up to what any process has appended by then."""

    def __init__(self, base: str, ttl: float, limit: int, earlier: Iterable[tuple[Observation, float]] = ()) -> None:
        self._prefix = base + "-obs-"
        self._ttl = ttl
        self._days = int(ttl // DAY) + 1  # logs kept: a day's log holds observations up to a day old
        self._lock = threading.Lock()
        self._index = Observations(limit)
        self._write_day, self._write_fd = -1, -1
        self._reads: dict[int, _Read] = {}
        self._begun: dict[int, float] = {}  # readings begun and not ended -> when they end at the latest
        self._ended: OrderedDict[int, None] = OrderedDict()  # ended before their begin was read (midnight)
        self._tokens = itertools.count(int.from_bytes(os.urandom(8), "little"))  # this process's
        self._closed = False
        for o, seen in earlier:  # older than anything in the logs
            self._index.add(o, seen)
        self._floor = self._scan(int(time.time() // DAY))  # now, not on the planner hop's first lookup
        self._today = -1  # the first lookup looks at every day within the TTL

    def path(self, day: int) -> str:
        return f"{self._prefix}{day}"

    def begin(self, now: float, until: float) -> int:
        """A reading begun, to end by ``until``: its token, for :meth:`observe`."""
        token = next(self._tokens) & _TOKENS or 1
        self._append(encode(Record(now, [], begun=token, until=until)), now)
        return token

    def observe(self, observations: list[Observation], now: float, ended: int = 0) -> None:
        """``observations``, and that the reading ``ended`` (a token of :meth:`begin`) has ended."""
        self._append(encode(Record(now, observations, ended=ended)), now)

    def candidates(self, key: bytes, now: float) -> list[Observation]:
        with self._lock:
            self._catch_up(int(now // DAY))
            return self._index.candidates(key, now - self._ttl)

    def unfinished(self, now: float) -> dict[int, float]:
        """The readings begun and not ended (any process's), each with when it ends at the latest."""
        with self._lock:
            self._catch_up(int(now // DAY))
            for token in [t for t, until in self._begun.items() if until <= now]:  # its process died
                del self._begun[token]
            return dict(self._begun)

    def _append(self, data: bytes, now: float) -> None:
        day = int(now // DAY)
        with self._lock:
            if self._closed:
                raise OSError(f"{self._prefix}*: closed")
            if day != self._write_day:
                self._open_write(day)
            written = os.write(self._write_fd, data)
        if written != len(data):  # a full disk: the reader skips the torn record
            raise OSError(f"{self.path(day)}: wrote {written} of {len(data)} bytes")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for r in self._reads.values():
                os.close(r.fd)
            self._reads.clear()
            if self._write_fd >= 0:
                os.close(self._write_fd)
            self._write_day, self._write_fd = -1, -1

    def _open_write(self, day: int) -> None:
        fd = os.open(self.path(day), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if self._write_fd >= 0:
            os.close(self._write_fd)
        self._write_day, self._write_fd = day, fd
        self._expire(day)

    def _scan(self, today: int) -> int:
        """Read the logs there now, newest first until SCAN_BYTES, each read oldest first (the
        index forgets the oldest arrivals); the oldest day read, older ones are never read."""
        days, taken = [], 0
        for day in sorted(self._logs(), reverse=True):
            if taken >= SCAN_BYTES or day < today - self._days:
                break
            r = self._open_read(day)
            if r is not None:
                days.append(day)
                taken += os.fstat(r.fd).st_size
        for day in reversed(days):
            self._read_new(self._reads[day])
        return days[-1] if days else 0

    def _logs(self) -> list[int]:
        """The days whose logs are there."""
        tails = (p[len(self._prefix) :] for p in glob.glob(glob.escape(self._prefix) + "*"))
        return [int(t) for t in tails if t.isdigit()]

    def _catch_up(self, today: int) -> None:
        first = today - 1  # a writer may still be on yesterday's log for a moment
        if today != self._today:  # a new day, or a reader that slept: the days since, oldest first
            first = min(first, self._today)
            self._today = today
            self._expire(today)
        for day in range(max(first, self._floor, today - self._days), today + 1):
            r = self._reads.get(day) or self._open_read(day)
            if r is not None:
                self._read_new(r)

    def _open_read(self, day: int) -> _Read | None:
        try:
            fd = os.open(self.path(day), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        r = self._reads[day] = _Read(fd)
        return r

    def _read_new(self, r: _Read) -> None:
        size = os.fstat(r.fd).st_size
        if size <= r.offset:
            return
        found, used = decode(os.pread(r.fd, size - r.offset, r.offset))
        r.offset += used
        for record in found:
            for o in record.observations:
                self._index.add(o, record.seen)
            if record.begun in self._ended:  # its end was read first (the two in two days' logs)
                del self._ended[record.begun]
            elif record.begun:
                self._begun[record.begun] = record.until
            if record.ended and self._begun.pop(record.ended, None) is None:
                self._ended[record.ended] = None
                if len(self._ended) > 4096:
                    self._ended.popitem(last=False)

    def _expire(self, today: int) -> None:
        """Close and delete the logs past the TTL."""
        for day in [d for d in self._reads if d < today - self._days]:
            os.close(self._reads.pop(day).fd)
        for day in self._logs():
            if day < today - self._days:
                with contextlib.suppress(FileNotFoundError):  # another process was first
                    os.unlink(self.path(day))
