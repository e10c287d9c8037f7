"""What the bridge remembers between requests: the per-cascade ledger and the chat hop's observations.

Two stores with one interface: :class:`MemoryStore` (the default: one process, gone
on restart) and :class:`SQLiteStore` (``bridge_state``: the ledger in an embedded SQLite
file in WAL mode, the observations in day logs beside it (runtime/observations.py), so a
restarted proxy does not re-send delivered steps and two proxies, the chat hop's and the
planner hop's, share what they saw).

Nothing a secret could hide in is stored in the clear: an observation is kept as the
digest of (kind, command or path, output), a call id as its digest.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..cascade.ledger import DIGEST_SIZE, Delivered, Delivery
from ..evidence import Observation, match_key
from .observations import ObservationLog, Observations

MAX_CASCADES = 4096  # ledgers kept in memory (oldest forgotten first)
# Delivered steps kept as bytes, newest cascades first: a resumed turn then compares its
# prefix byte for byte instead of hashing it. Older ledgers keep only their digests.
MAX_LEDGER_BYTES = 32 * 1024 * 1024
MAX_OBSERVATIONS = 65536
OBSERVATION_TTL = 7 * 24 * 3600.0  # seconds an observation stays usable


def reading_bound(size: int) -> float:
    """Seconds within which a reading of ``size`` bytes ends even if its process dies (a planner
    hop waiting for it then goes on without its evidence): a first sight of 30 MiB in the worker
    on a slow core, with room to spare."""
    return 5.0 + size / 2**20


@dataclass(slots=True)
class Recall:
    """What the store holds for one planner call: its cascade's ledger and its steps' observations."""

    delivered: Delivered
    found: dict[bytes, list[Observation]] = field(default_factory=dict)
    asked: frozenset[bytes] = frozenset()  # the match keys looked up (a key not among them: not asked)

    def lookup(self, key: bytes) -> list[Observation] | None:
        """The observations of ``key``; None when it was not asked."""
        if key not in self.asked:
            return None
        return self.found.get(key, [])


class Store(Protocol):
    # Whether other processes read this store: then a chat request that goes upstream before it is
    # read says so first (begin), and its reading's end comes with its observations (observe).
    shared: bool
    # Whether it answers over the network: then the planner hop asks it with ``recall``
    # (runtime/redis_store.py) before it corrects, and the synchronous readers answer from memory.
    remote: bool

    def delivered(self, cascade_id: str) -> Delivered: ...
    def deliver(self, cascade_id: str, delivery: Delivery) -> None: ...
    def begin(self, size: int) -> int: ...
    def observe(self, observations: list[Observation], ended: int = 0) -> None: ...
    def candidates(self, key: bytes) -> list[Observation]: ...
    def unfinished(self) -> dict[int, float]: ...
    def close(self) -> None: ...


class RemoteStore(Store, Protocol):
    """A store on a server (runtime/redis_store.py): asked once per planner call."""

    def front(self, cascade_id: str) -> Delivered:
        """The ledger entry this process wrote last (the guess a call is read with before the answer)."""
        ...

    async def recall(self, cascade_id: str | None, keys: Iterable[bytes], wait: bool = True) -> Recall | None:
        """The ledger and the observations of ``keys`` (after the readings in flight, ``wait``); None: away."""
        ...


class MemoryStore:
    shared = False
    remote = False

    def __init__(
        self,
        max_cascades: int = MAX_CASCADES,
        max_observations: int = MAX_OBSERVATIONS,
        max_ledger_bytes: int = MAX_LEDGER_BYTES,
        keep_digests: bool = False,
    ) -> None:
        self._ledger: OrderedDict[str, Delivered] = OrderedDict()
        self._kept: OrderedDict[str, int] = OrderedDict()  # ledgers holding bytes -> their size, oldest first
        self._kept_bytes = 0
        self._obs = Observations(max_observations)
        self._max_cascades = max_cascades
        self._max_ledger_bytes = max_ledger_bytes
        self._keep_digests = keep_digests  # a persistent store's front: its entries carry both

    def delivered(self, cascade_id: str) -> Delivered:
        return self._ledger.get(cascade_id) or Delivered()

    def deliver(self, cascade_id: str, delivery: Delivery) -> None:
        self._forget_bytes(cascade_id)
        size = sum(len(s) for s in delivery.steps)
        digests = delivery.digests() if self._keep_digests else None
        if size <= self._max_ledger_bytes:
            self._ledger[cascade_id] = Delivered(steps=delivery.steps, digests=digests)
            self._kept[cascade_id] = size
            self._kept_bytes += size
        else:
            self._ledger[cascade_id] = Delivered(digests=delivery.digests())
        self._ledger.move_to_end(cascade_id)
        while self._kept_bytes > self._max_ledger_bytes:  # the oldest keep their digests only
            old, _ = next(iter(self._kept.items()))
            self._ledger[old] = _digests_only(self._ledger[old])
            self._forget_bytes(old)
        while len(self._ledger) > self._max_cascades:
            old, _ = self._ledger.popitem(last=False)
            self._forget_bytes(old)

    def _forget_bytes(self, cascade_id: str) -> None:
        self._kept_bytes -= self._kept.pop(cascade_id, 0)

    def begin(self, size: int) -> int:
        return 0  # this process's readings are waited for by their tasks (runtime/dispatch.py)

    def observe(self, observations: list[Observation], ended: int = 0) -> None:
        for o in observations:
            self._obs.add(o)

    def candidates(self, key: bytes) -> list[Observation]:
        return self._obs.candidates(key)

    def unfinished(self) -> dict[int, float]:
        return {}

    def close(self) -> None:
        pass


def _digests_only(entry: Delivered) -> Delivered:
    if entry.digests is not None:
        return Delivered(digests=entry.digests)
    return Delivered(digests=Delivery(entry.steps or ()).digests())


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ledger (cascade_id TEXT PRIMARY KEY, digests BLOB NOT NULL, updated REAL NOT NULL)"
)


class SQLiteStore:
    """The ledger in a SQLite file, WAL mode (readers never wait for a writer), and the
    observations in the day logs beside it.

    Writes are a few hundred bytes; ``synchronous=NORMAL`` keeps them off fsync (a power
    cut may lose the last ledger entries: the planner is then sent those steps again,
    the failure mode of no ledger at all, never a lost step). The logs are not synced either:
    a power cut may lose the last observations (their steps then go uncorrected, never wrong)."""

    shared = True
    remote = False

    def __init__(self, path: str, ttl: float = OBSERVATION_TTL) -> None:
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.path = path
        self._ttl = ttl
        self._lock = threading.Lock()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # created owner-only before SQLite opens it
        os.close(fd)
        self._db = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        try:
            self._log = ObservationLog(path, ttl, MAX_OBSERVATIONS, earlier=self._table())
        except BaseException:
            self._db.close()
            raise
        # The ledgers this process wrote, with their steps' bytes while they fit: checked
        # against the file on every read (another process may have written since).
        self._front = MemoryStore(max_observations=0, keep_digests=True)

    def delivered(self, cascade_id: str) -> Delivered:
        with self._lock:
            row = self._db.execute("SELECT digests FROM ledger WHERE cascade_id = ?", (cascade_id,)).fetchone()
        if row is None:
            return Delivered()
        blob = bytes(row[0])
        front = self._front.delivered(cascade_id)
        if front.digests is not None and b"".join(front.digests) == blob:
            return front  # what this process delivered last, still what the file says: its bytes compare
        return Delivered(digests=[blob[i : i + DIGEST_SIZE] for i in range(0, len(blob), DIGEST_SIZE)])

    def deliver(self, cascade_id: str, delivery: Delivery) -> None:
        self._front.deliver(cascade_id, delivery)
        with self._lock:
            self._db.execute(
                "INSERT INTO ledger (cascade_id, digests, updated) VALUES (?, ?, ?) "
                "ON CONFLICT (cascade_id) DO UPDATE SET digests = excluded.digests, updated = excluded.updated",
                (cascade_id, b"".join(delivery.digests()), time.time()),
            )

    def begin(self, size: int) -> int:
        now = time.time()
        return self._log.begin(now, now + reading_bound(size))

    def observe(self, observations: list[Observation], ended: int = 0) -> None:
        if observations or ended:
            self._log.observe(observations, time.time(), ended)

    def candidates(self, key: bytes) -> list[Observation]:
        return self._log.candidates(key, time.time())

    def unfinished(self) -> dict[int, float]:
        return self._log.unfinished(time.time())

    def _table(self) -> list[tuple[Observation, float]]:
        """Observations an earlier version kept in the file's ``observation`` table, within the
        TTL: this process's index starts with them (nothing writes that table now)."""
        if not self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'observation'").fetchone():
            return []
        rows = self._db.execute(
            "SELECT key, call, exit_code, failed, client, seen FROM observation WHERE seen >= ? ORDER BY seen",
            (time.time() - self._ttl,),
        )
        return [
            (Observation(e, None if f is None else bool(f), cl, bytes(k), bytes(c)), t) for k, c, e, f, cl, t in rows
        ]

    def close(self) -> None:
        self._log.close()
        with self._lock:
            self._db.close()


class RecalledEvidence:
    """The planner hop's evidence from a remote store's answer (redis_store.Recall; None: none yet,
    or the store is away): a step takes an observation only when exactly one matches. The keys
    the answer was not asked for are noted in ``unasked`` (the caller may ask for them and read again)."""

    def __init__(self, recall: Recall | None = None) -> None:
        self.recall = recall
        self.unasked: list[bytes] = []

    def lookup(self, kind: str, command_or_path: str, output: str) -> Observation | None:
        key = match_key(kind, command_or_path, output)
        found = self.recall.lookup(key) if self.recall is not None else None
        if found is None:
            self.unasked.append(key)
            return None
        return found[0] if len(found) == 1 else None


class StoreEvidence:
    """The observations in a store as the planner hop's evidence (cascade.corrections.Evidence):
    a step takes one only when exactly one matches. ``store`` gives the store to ask (the state's
    current one: bridge_state may change it)."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self.store = store

    def lookup(self, kind: str, command_or_path: str, output: str) -> Observation | None:
        found = self.store().candidates(match_key(kind, command_or_path, output))
        return found[0] if len(found) == 1 else None  # none, or several calls with this command and output
