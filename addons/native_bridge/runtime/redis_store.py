"""The shared state on a Redis-protocol server (``bridge_state=redis://…``): hops on any number of hosts.

What the hops share, under one key prefix (``bridge_state_prefix``), nothing a secret could hide
in (digests, exit codes, verdicts, client ids):

    <prefix>obs:<match key, hex>     the observations of one (kind, command or path, output): a run of
                                     fixed-size records (call digest, verdict, exit code, when seen,
                                     client id), appended; the newest 32 kept; expires 7 days after
                                     its last write (server-side: no sweeper of ours)
    <prefix>ledger:<cascade digest>  the digests of a cascade's delivered steps; expires 7 days after
                                     its last delivery
    <prefix>readings                 chat readings begun and not ended: token -> when it ends at the
                                     latest (server time: hosts' clocks may differ)
    <prefix>ended                    a stream of the readings that ended: a planner hop waiting for
                                     one blocks on it (XREAD BLOCK) and is woken by the server

Each write is one script call, sent in the call that makes it (a reading's begin is on the wire
before its request goes upstream; the gateway's planner call follows a whole gateway round later),
its reply read by a task of its own. A small reading (a resumed turn's new part) is done before its
request goes, so its turn is one write: its observations (chat_hop/request.py, ``ONE_WRITE_BYTES``).
A planner call costs one script call: what its cascade's ledger
holds, the observations of its steps and the readings in flight, read atomically; a second only when
it had to wait for readings or its ledger was not the one this process wrote last.

When the server is away or slow: nothing waits beyond ``timeout``; the planner hop corrects what the
steps' own text decides; observations made meanwhile are lost, never invented; one log line when the
server goes and one when it is back; it is tried again with backoff. A value under our prefix that
is not ours is a logged miss.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import itertools
import logging
import os
import struct
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import hiredis
import redis
import redis.asyncio
from redis.asyncio.connection import Connection, SSLConnection
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..cascade.ledger import DIGEST_SIZE, Delivered, Delivery
from ..evidence import Observation
from .later import after_forward
from .store import MAX_CASCADES, OBSERVATION_TTL, MemoryStore, Recall, reading_bound
from .store_url import Location

logger = logging.getLogger(__name__)

# call digest | flags (1 exit code stated, 2 verdict known, 4 failed) | exit code | seen (ms) | client id
_RECORD = struct.Struct("<16sBqQ24s")
_VERSION = struct.Struct(">Q")  # a ledger's version (µs since 1970) before its digests
KEEP_RECORDS = 32  # per match key: more than one distinct call is already no claim (ambiguous)
LEDGER_TTL = 7 * 24 * 3600
MAX_QUEUED = 20000  # writes waiting for the server (beyond: dropped, logged once per episode)
BACKOFF = (0.5, 30.0)  # seconds before the first retry of a server that failed, and the longest wait
MARK_TTL_MS = 24 * 3600 * 1000  # the readings set and the ended stream, when nothing writes them
STREAM_LEN = 10000

# One call per batch of writes. KEYS: readings, ended (stream), done (set), then the observations' keys,
# then the ledgers'. ARGV: ttl, ledger ttl, #begun, #ended, #observations, #ledgers, record size, records
# kept, then (token, bound ms) per reading begun, token per reading ended, record per observation, and
# (version, digests) per ledger.
# A write may reach the server late (sent on a connection that stalled, after its client gave up): a
# reading's begin after its end is skipped (``done`` remembers ends for a day), and a ledger older than
# the one stored is skipped (its version: the writer's clock, one planner hop per cascade).
_WRITE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, lttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local nb, ne, no, nl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local size, keep = tonumber(ARGV[7]), tonumber(ARGV[8])
local a = 10
for i = 1, nb do
  local done = redis.pcall('ZSCORE', KEYS[3], ARGV[a])
  if not done or type(done) == 'table' then
    redis.pcall('ZADD', KEYS[1], now + tonumber(ARGV[a + 1]), ARGV[a])
  end
  a = a + 2
end
for i = 1, ne do
  redis.pcall('ZREM', KEYS[1], ARGV[a])
  redis.pcall('ZADD', KEYS[3], now, ARGV[a])
  redis.pcall('XADD', KEYS[2], 'MAXLEN', '~', STREAM, '*', 't', ARGV[a])
  a = a + 1
end
if nb + ne > 0 and ARGV[9] == '1' then  -- now and then (every 64th write): the marks' own upkeep
  redis.pcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - MARK)
  redis.pcall('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - MARK)
  for k = 1, 3 do redis.pcall('PEXPIRE', KEYS[k], MARK) end
end
for i = 1, no do
  local k = KEYS[3 + i]
  local n = redis.pcall('APPEND', k, ARGV[a])
  if type(n) ~= 'number' then
    redis.pcall('DEL', k)
    n = redis.pcall('APPEND', k, ARGV[a])
  end
  if type(n) == 'number' then
    if n % size ~= 0 then
      redis.pcall('SET', k, ARGV[a])
    elseif n > 2 * keep * size then
      redis.pcall('SET', k, redis.call('GETRANGE', k, n - keep * size, -1))
    end
    redis.pcall('EXPIRE', k, ttl)
  end
  a = a + 1
end
for i = 1, nl do
  local k = KEYS[3 + no + i]
  local old = redis.pcall('GETRANGE', k, 0, 7)
  if type(old) ~= 'string' or string.len(old) < 8 or old <= ARGV[a] then
    redis.pcall('SET', k, ARGV[a] .. ARGV[a + 1], 'EX', lttl)
  end
  a = a + 2
end
return nb + ne + no + nl
""".replace("STREAM", str(STREAM_LEN)).replace("MARK", str(MARK_TTL_MS))
_WRITE_SHA = hashlib.sha1(_WRITE.encode()).hexdigest()

# One call per planner call. KEYS: readings, ended, the ledger, then the observations' keys.
# ARGV[1]: "1" to list the readings in flight. Returns: server time (ms), [token, ends at]...,
# the ended stream's last id, the ledger (or nil), then each observation key's value (or nil).
_RECALL = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now, {}, '0-0', false}
if ARGV[1] == '1' then
  local p = redis.pcall('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
  if type(p) == 'table' and p.err == nil then out[2] = p end
  local x = redis.pcall('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  if type(x) == 'table' and x.err == nil and x[1] then out[3] = x[1][1] end
end
local l = redis.pcall('GET', KEYS[3])
if type(l) == 'string' then out[4] = l end
local i = 4
while i <= #KEYS do  -- MGET in slices (unpack's stack); a key that holds no string reads nil
  local last = math.min(i + 999, #KEYS)
  local vals = redis.call('MGET', unpack(KEYS, i, last))
  for j = 1, #vals do out[i + j] = vals[j] end
  i = last + 1
end
return out
"""


class StoreUnreachable(Exception):
    """The server does not answer as a store at start-up (the message names it without its password)."""


def pack(o: Observation, seen: float) -> bytes:
    client = (o.client or "").encode("utf-8", "surrogatepass")
    if len(client) > 24:  # an id longer than any client's: better no client than a wrong one
        client = b""
    flags = (o.exit_code is not None) | (o.failed is not None) << 1 | (o.failed is True) << 2
    code = o.exit_code if o.exit_code is not None else 0
    return _RECORD.pack(o.call, flags, code, int(seen * 1000), client)


def unpack(key: bytes, value: bytes, since_ms: int) -> list[Observation] | None:
    """The observations of one key's value, the newest per call, seen since ``since_ms``; None: not ours."""
    size = _RECORD.size
    if len(value) % size:
        return None
    by_call: dict[bytes, tuple[int, Observation]] = {}
    for off in range(0, len(value), size):
        call, flags, code, seen, raw = _RECORD.unpack_from(value, off)
        if flags & ~7:
            return None
        try:
            client = raw.rstrip(b"\0").decode("utf-8")
        except UnicodeDecodeError:
            return None
        if seen < since_ms or (call in by_call and by_call[call][0] > seen):
            continue
        failed = bool(flags & 4) if flags & 2 else None
        by_call[call] = (seen, Observation(code if flags & 1 else None, failed, client or None, key, call))
    return [o for _, o in by_call.values()]


class BoundedTokens(dict[int, None]):
    """Reading tokens, the oldest forgotten beyond MAX_QUEUED (its begin then ends by its bound)."""

    def __setitem__(self, key: int, value: None) -> None:
        super().__setitem__(key, value)
        while len(self) > MAX_QUEUED:
            del self[next(iter(self))]

    def update(self, other: Any = (), /, **kw: Any) -> None:
        for key in dict(other, **kw):
            self[key] = None


class _Link:
    """Whether the server answers: one log line when it goes, one when it is back, and when to try again."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.on_down: Callable[[], None] = lambda: None  # the connections kept are dropped
        self.up = True
        self.retry_at = 0.0
        self.delay = BACKOFF[0]

    def may_try(self) -> bool:
        return self.up or time.monotonic() >= self.retry_at

    def failed(self, e: BaseException) -> None:
        if self.up:
            why = type(e).__name__ if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e}"
            logger.warning(
                f"bridge: state store {self.shown} is away ({why}): requests go on; the planner hop corrects "
                "what the steps' own text decides, without the chat hop's evidence, until it answers again"
            )
            self.up = False
            self.on_down()
        self.retry_at = time.monotonic() + self.delay
        self.delay = min(self.delay * 2, BACKOFF[1])

    def ok(self) -> None:
        if not self.up:
            logger.warning(f"bridge: state store {self.shown} is back")
            self.up = True
        self.delay = BACKOFF[0]


def connection_settings(where: Location, ca: str | None, connect_timeout: float) -> dict[str, Any]:
    """What every connection to ``where`` takes, the asyncio ones and the blocking client's alike.
    No retries of redis-py's own: our backoff (_Link), and a request never waits for retries."""
    kwargs: dict[str, Any] = dict(
        host=where.host,
        port=where.port,
        db=where.db,
        username=where.user,
        password=where.password,
        socket_connect_timeout=connect_timeout,
        health_check_interval=0,
    )
    if where.tls:
        kwargs.update(ssl_cert_reqs="required", ssl_check_hostname=True, ssl_ca_certs=ca)
    return kwargs


class _Connections:
    """redis-py's own connections, used directly: a command is packed, sent and its reply read by
    redis-py (RESP, AUTH, SELECT, TLS, hiredis), without the client's pool and command layers, which
    cost a call about as much again (about 60 against 35 µs of CPU on loopback). One connection is
    the writer's; the others are lent to planner calls one at a time."""

    def __init__(self, where: Location, ca: str | None, connect_timeout: float) -> None:
        kwargs = connection_settings(where, ca, connect_timeout)
        kwargs.update(socket_timeout=None, retry=AsyncRetry(NoBackoff(), 0))  # each call has its own timeout
        self._kind = SSLConnection if where.tls else Connection
        self._kwargs = kwargs
        self._idle: list[Connection] = []
        self._closing: set[asyncio.Task[None]] = set()
        self._shas: dict[str, str] = {}

    def new(self) -> Connection:
        return self._kind(**self._kwargs)

    async def call(self, *args: Any) -> Any:
        """One command's reply (a ResponseError raised); the connection is dropped on any other failure.
        A connection kept from before that the server has closed meanwhile (a restart) is tried once."""
        while self._idle:
            try:
                return await self._call(self._idle.pop(), args)
            except redis.ConnectionError:
                continue  # closed by the server since it was last used
        return await self._call(self.new(), args)

    def drop(self) -> None:
        """Close the connections kept (the link went down elsewhere: they may be dead)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            task = asyncio.get_running_loop().create_task(conn.disconnect(nowait=True))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _call(self, conn: Connection, args: tuple[Any, ...]) -> Any:
        try:
            if not conn.is_connected:
                await conn.connect()
            await conn.send_packed_command(hiredis.pack_command(args), check_health=False)
            reply = await conn.read_response(disconnect_on_error=False)
        except redis.ResponseError:
            self._idle.append(conn)
            raise
        except BaseException:
            await conn.disconnect(nowait=True)  # a reply may still be on its way: never reused
            raise
        self._idle.append(conn)
        return reply

    async def script(self, text: str, keys: Sequence[bytes], args: Sequence[Any]) -> Any:
        sha = self._shas.get(text) or self._shas.setdefault(text, hashlib.sha1(text.encode()).hexdigest())
        try:
            return await self.call("EVALSHA", sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:  # a server that restarted: it learns the script again
            return await self.call("EVAL", text, len(keys), *keys, *args)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.disconnect(nowait=True)


class _Pipeline:
    """The writer's connection. Each write is sent in the call that makes it: a reading's begin is in
    the kernel before its request goes upstream, whatever writes before it still wait for their
    replies. One task reads the replies, in order, and is always reading, so that a server that
    closes the connection (stopped, restarted) is noticed before the next write is sent on it. A
    reply that does not come within ``timeout`` takes the connection down: the writes in flight
    are lost (never retried: their readings are over), except the ends of readings among them
    (``lost``), which the store says again."""

    def __init__(self, conns: _Connections, link: _Link, timeout: float, lost: Callable[[Iterable[int]], None]) -> None:
        self._conns, self._link, self._timeout, self._lost = conns, link, timeout, lost
        self._conn: Connection | None = None
        self._held: list[tuple[bytes, list[int], Any]] = []  # while it connects (with what replays them)
        self._sent: collections.deque[tuple[float, list[int]]] = collections.deque()  # in flight: when, ends
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watch: asyncio.TimerHandle | None = None
        self._connecting = False

    def send(self, packed: bytes, ends: list[int], replay: Any = None) -> bool:
        """Send now (False: too many writes in flight, it is dropped). ``replay``: the write as
        :meth:`unsent` gives it back while it waits for a connection."""
        if len(self._sent) + len(self._held) >= MAX_QUEUED:
            return False
        conn = self._conn
        if conn is None:
            self._held.append((packed, ends, replay))
            if not self._connecting:
                self._connecting = True
                self._spawn(self._open(), eager=False)
            return True
        self._write(conn, packed, ends)
        return True

    @property
    def limit(self) -> float:
        return max(1.0, 4 * self._timeout)

    def _write(self, conn: Connection, packed: bytes, ends: list[int]) -> None:
        self._sent.append((time.monotonic(), ends))
        # An eager task: redis-py writes the bytes before its first await (the drain, which waits only
        # when the kernel's buffer is full).
        self._spawn(conn.send_packed_command(packed, check_health=False), eager=True)
        if self._watch is None:
            self._watch = asyncio.get_running_loop().call_later(self.limit, self._overdue, conn)

    def _overdue(self, conn: Connection) -> None:
        self._watch = None
        if self._conn is not conn or not self._sent:
            return
        late = self._sent[0][0] + self.limit - time.monotonic()
        if late > 0:
            self._watch = asyncio.get_running_loop().call_later(late, self._overdue, conn)
            return
        self._fail(TimeoutError(), conn)

    def _spawn(self, coro: Any, eager: bool) -> None:
        task = asyncio.Task(coro, loop=asyncio.get_running_loop(), eager_start=eager)
        if not task.done():
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _open(self) -> None:
        conn = self._conns.new()
        try:
            async with asyncio.timeout(self.limit):
                await conn.connect()
        except Exception as e:
            self._connecting = False
            self._fail(e, conn)
            return
        self._conn, self._connecting = conn, False
        self._spawn(self._read(conn), eager=False)
        self._write(conn, hiredis.pack_command(("SCRIPT", "LOAD", _WRITE)), [])  # EVALSHA's, on every connection
        held, self._held = self._held, []
        for packed, ends, _ in held:
            self._write(conn, packed, ends)

    async def _read(self, conn: Connection) -> None:
        while self._conn is conn:
            try:
                await conn.read_response(disconnect_on_error=False)
            except redis.ResponseError as e:  # a script that failed on the server: that write only
                logger.warning(f"bridge: state store {self._link.shown}: a write failed: {e}")
            except Exception as e:
                if self._conn is conn:
                    self._fail(e, conn)  # nothing in flight: the connection is dropped, not the link
                return
            else:
                self._link.ok()
            if self._sent:
                self._sent.popleft()

    def _fail(self, e: BaseException, conn: Connection) -> None:
        if self._sent or self._held or conn is not self._conn:
            self._link.failed(e)
        lost = [t for _, ends in self._sent for t in ends] + [t for _, ends, _ in self._held for t in ends]
        self._sent.clear()
        self._held.clear()
        if self._conn is conn:
            self._conn = None
        self._spawn(conn.disconnect(nowait=True), eager=False)
        self._lost(lost)

    def unsent(self) -> list[Any]:
        """The writes still waiting for a connection (their ``replay``)."""
        return [replay for _, _, replay in self._held]

    def drop(self) -> None:
        """The link went down elsewhere: a fresh connection for the next write."""
        if self._conn is not None and not self._sent:
            conn, self._conn = self._conn, None
            self._spawn(conn.disconnect(nowait=True), eager=False)

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        conn, self._conn = self._conn, None
        for task in list(self._tasks):
            task.cancel()
        if conn is not None:
            self._spawn(conn.disconnect(nowait=True), eager=False)


class RedisStore:
    """The Store (runtime/store.py) on a Redis-protocol server, through redis-py's asyncio client.

    The chat hop's calls (``begin``, ``observe``) and the planner hop's ``deliver`` queue their
    writes and return; a background task sends them. The planner hop asks with :meth:`recall`."""

    shared = True
    remote = True

    def __init__(
        self,
        where: Location,
        *,
        prefix: str = "bridge:",
        ca: str | None = None,
        timeout: float = 0.25,
        ttl: float = OBSERVATION_TTL,
        connect_timeout: float = 5.0,
    ) -> None:
        self.where = where
        self.shown = where.shown
        self.prefix = prefix.encode()
        self.timeout = timeout
        self._ttl = ttl
        self._kwargs = connection_settings(where, ca, min(connect_timeout, max(timeout, 1.0)))
        self._check(connect_timeout)
        self._link = _Link(self.shown)
        self._conns = _Connections(where, ca, self._kwargs["socket_connect_timeout"])
        self._link.on_down = self._drop_connections
        self._pipe: _Pipeline | None = None
        self._versions: OrderedDict[str, bytes] = OrderedDict()  # the version of each ledger this process wrote
        self._deferred: dict[int, tuple[list[bytes], list[Any]]] = {}  # made, to be sent after the hook
        self._ids = itertools.count()
        self._upkeep = itertools.count()
        self._retry: asyncio.TimerHandle | None = None
        self._dropped = 0
        # Ends of readings the server may not have seen (insertion-ordered, bounded): said again.
        self._orphans: dict[int, None] = BoundedTokens()
        self._tokens = itertools.count(int.from_bytes(os.urandom(7), "little"))
        self._front = MemoryStore(max_observations=0, keep_digests=True)
        self._closed = False
        self._complained: set[str] = set()
        self._closing: asyncio.Task[None] | None = None

    # -- start-up -------------------------------------------------------------------

    def _check(self, connect_timeout: float) -> None:
        """The server answers, takes our password and runs our scripts (an ACL user may not): else an
        error at once, naming the server without its password."""
        kwargs = {**self._kwargs, "socket_connect_timeout": connect_timeout, "socket_timeout": connect_timeout}
        client = self._sync(**kwargs)
        try:
            client.ping()
            client.eval(_RECALL, 3, *self._marks()[:2], self._ledger_key(""), 0)
            client.eval(_WRITE, 3, *self._marks(), LEDGER_TTL, LEDGER_TTL, 0, 0, 0, 0, _RECORD.size, KEEP_RECORDS, 1)
        except redis.RedisError as e:
            raise StoreUnreachable(f"cannot use {self.shown}: {type(e).__name__}: {e}") from None
        except OSError as e:  # a CA file that cannot be read
            raise StoreUnreachable(f"cannot use {self.shown}: {e}") from None
        finally:
            client.close()

    def _sync(self, **kwargs: Any) -> redis.Redis:
        tls = {"ssl": True} if self.where.tls else {}  # the client's switch; a connection's kind says it
        return redis.Redis(**{**self._kwargs, **tls, **kwargs, "retry": Retry(NoBackoff(), 0)})

    # -- keys -------------------------------------------------------------------------

    def _marks(self) -> tuple[bytes, bytes, bytes]:
        """The readings in flight, the stream of their ends, and the ends of a day (late begins skipped)."""
        return self.prefix + b"readings", self.prefix + b"ended", self.prefix + b"done"

    def _obs_key(self, key: bytes) -> bytes:
        return self.prefix + b"obs:" + key.hex().encode()

    def _ledger_key(self, cascade_id: str) -> bytes:
        digest = hashlib.sha256(cascade_id.encode("utf-8", "surrogatepass")).hexdigest()[: 2 * DIGEST_SIZE]
        return self.prefix + b"ledger:" + digest.encode()

    # -- the chat hop's side and the ledger's writes: queued, sent by the writer ---------

    def begin(self, size: int) -> int:
        token = next(self._tokens) & (2**63 - 1) or 1
        self._write(begun=[(token, int(reading_bound(size) * 1000))])
        return token

    def observe(self, observations: list[Observation], ended: int = 0) -> None:
        if not observations and not ended:
            return
        now = time.time()
        observed = [(self._obs_key(o.key), pack(o, now)) for o in observations]
        self._write(observed=observed, ended=[ended] if ended else [])

    def deliver(self, cascade_id: str, delivery: Delivery) -> None:
        self._front.deliver(cascade_id, delivery)
        version = _VERSION.pack(time.time_ns() // 1000)  # big-endian: byte order is time order
        self._versions[cascade_id] = version
        self._versions.move_to_end(cascade_id)
        while len(self._versions) > MAX_CASCADES:
            self._versions.popitem(last=False)
        self._write(ledgers=[(self._ledger_key(cascade_id), version, b"".join(delivery.digests()))], later=True)

    def _write(
        self,
        begun: Sequence[tuple[int, int]] = (),
        ended: Sequence[int] = (),
        observed: Sequence[tuple[bytes, bytes]] = (),
        ledgers: Sequence[tuple[bytes, bytes, bytes]] = (),
        later: bool = False,
    ) -> None:
        """One script call, sent now (``later``: once the hook's message has gone); the request that
        caused it never waits for its reply."""
        if self._closed:
            return
        if not self._link.may_try():
            self._dropped += 1  # lost, never invented: the planner hop goes on without it
            self._lose(ended)
            return
        keys = [*self._marks(), *(k for k, _ in observed), *(k for k, _, _ in ledgers)]
        args: list[Any] = [int(self._ttl), LEDGER_TTL, len(begun), len(ended), len(observed), len(ledgers)]
        upkeep = next(self._upkeep) % 64 == 0  # expired marks removed, the marks' expiry renewed
        args += [_RECORD.size, KEEP_RECORDS, int(upkeep)]
        for token, bound in begun:
            args += [token, bound]
        args += ended
        args += [v for _, v in observed]
        for _, version, digests in ledgers:
            args += [version, digests]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a script, a test calling a hook): written now
            self._flush_now((keys, args))
            return
        if self._pipe is None:
            self._pipe = _Pipeline(self._conns, self._link, self.timeout, self._lose)
        packed = hiredis.pack_command(("EVALSHA", _WRITE_SHA, len(keys), *keys, *args))
        wid = next(self._ids)
        self._deferred[wid] = (keys, args)
        if later:  # once the hook's request or reply has gone (runtime/later.after_forward)
            after_forward(lambda: self._send(wid, packed, list(ended)), loop)
        else:
            # Now, from the hook: a reading's begin (and a rewritten request's observations) must be on
            # the wire before the request goes upstream. Sent after it, under load the gateway's planner
            # call came first in 5 of 960 turns (the loop runs other connections' work in between).
            self._send(wid, packed, list(ended))

    def _send(self, wid: int, packed: bytes, ended: list[int]) -> None:
        replay = self._deferred.pop(wid, None)
        if replay is None or self._pipe is None:
            return  # closed meanwhile: close() wrote it
        if not self._pipe.send(packed, ended, replay):
            self._dropped += 1
            self._lose(ended)

    def _drop_connections(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._conns.drop()
        if self._pipe is not None:
            self._pipe.drop()

    def _lose(self, ended: Iterable[int]) -> None:
        """Readings whose end the server may not have seen (their begin may have reached it, even late):
        their ends are said again once the backoff allows a try."""
        self._orphans.update(dict.fromkeys(ended))
        if not self._orphans or self._retry is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        wait = max(0.0, self._link.retry_at - time.monotonic())
        self._retry = loop.call_later(wait, self._say_ends)

    def _say_ends(self) -> None:
        self._retry = None
        if self._closed or not self._orphans:
            return
        if not self._link.may_try():
            self._lose(())
            return
        ends = list(self._orphans)
        self._orphans.clear()
        self._write(ended=ends)

    def _flush_now(self, *writes: tuple[list[bytes], list[Any]]) -> None:
        """Write now, blocking (no event loop, or the last writes at shutdown)."""
        client = self._sync(socket_timeout=max(1.0, 4 * self.timeout))
        try:
            pipe = client.pipeline(transaction=False)
            for keys, args in writes:
                pipe.eval(_WRITE, len(keys), *keys, *args)
            pipe.execute()
        except redis.RedisError as e:
            self._link.failed(e)
        else:
            self._link.ok()
        finally:
            client.close()

    # -- the planner hop's side -----------------------------------------------------------

    def front(self, cascade_id: str) -> Delivered:
        """What this process delivered to ``cascade_id`` last (its bytes compare): the guess a
        planner call is read with before the store answers."""
        return self._front.delivered(cascade_id)

    async def recall(self, cascade_id: str | None, keys: Iterable[bytes], wait: bool = True) -> Recall | None:
        """The ledger of ``cascade_id`` and the observations of ``keys``, after the chat readings
        begun before this call (``wait``) have ended or their time is up. None: the server is away
        or slower than ``timeout`` (the caller goes on without it)."""
        asked = list(dict.fromkeys(keys))
        if not self._link.may_try():
            return None
        try:
            reply = await self._ask(cascade_id, asked, wait)
            if wait and reply[1]:
                await self._await_readings(reply)
                reply = await self._ask(cascade_id, asked, False)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._link.failed(e)
            return None
        self._link.ok()
        return self._recall_of(cascade_id, asked, reply)

    async def _ask(self, cascade_id: str | None, asked: Sequence[bytes], wait: bool) -> list[Any]:
        keys = [*self._marks()[:2], self._ledger_key(cascade_id or ""), *(self._obs_key(k) for k in asked)]
        async with asyncio.timeout(self.timeout):
            return await self._conns.script(_RECALL, keys, [1 if wait else 0])

    async def _await_readings(self, reply: list[Any]) -> None:
        """Until each reading in flight at the call has ended (the ended stream says so, the server
        wakes us) or its time is up."""
        now, flat, last = int(reply[0]), reply[1], reply[2]
        pending = {bytes(flat[i]): float(flat[i + 1]) for i in range(0, len(flat), 2)}
        until = time.monotonic() + (max(pending.values()) - now) / 1000
        stream = self._marks()[1]
        while pending:
            left = until - time.monotonic()
            if left <= 0:
                return
            async with asyncio.timeout(left + self.timeout):
                got = await self._conns.call("XREAD", "BLOCK", max(1, int(left * 1000)), "STREAMS", stream, last)
            for _, entries in got.items() if isinstance(got, dict) else got or ():  # the parser's shape
                for entry_id, fields in entries:
                    last = entry_id
                    found = dict(zip(fields[::2], fields[1::2], strict=False))
                    pending.pop(bytes(found.get(b"t", b"")), None)

    def _recall_of(self, cascade_id: str | None, asked: list[bytes], reply: list[Any]) -> Recall:
        since = int((time.time() - self._ttl) * 1000)
        found: dict[bytes, list[Observation]] = {}
        for key, value in zip(asked, reply[4:], strict=False):
            if value is None:
                continue
            got = unpack(key, bytes(value), since)
            if got is None:
                self._complain(self._obs_key(key).decode())
            elif got:
                found[key] = got
        return Recall(self._delivered(cascade_id, reply[3]), found, frozenset(asked))

    def _delivered(self, cascade_id: str | None, blob: Any) -> Delivered:
        if cascade_id is None:
            return Delivered()
        if blob is None:  # none there (a new cascade, or a server that lost it): what this process delivered
            return self._front.delivered(cascade_id)
        raw = bytes(blob)
        blob = raw[_VERSION.size :]
        if len(raw) < _VERSION.size or len(blob) % DIGEST_SIZE:
            self._complain(self._ledger_key(cascade_id).decode())
            return Delivered()  # no claim of delivery: the cascade gets every step (never loses one)
        front = self._front.delivered(cascade_id)
        if front.digests is not None and b"".join(front.digests) == blob:
            return front
        mine = self._versions.get(cascade_id)
        if mine is not None and mine >= raw[: _VERSION.size] and len(front):
            return front  # this process delivered since (its write not applied yet when the call asked)
        return Delivered(digests=[blob[i : i + DIGEST_SIZE] for i in range(0, len(blob), DIGEST_SIZE)])

    def _complain(self, key: str) -> None:
        if key not in self._complained and len(self._complained) < 1000:
            self._complained.add(key)
            logger.warning(f"bridge: state store {self.shown}: {key} holds a value that is not ours; ignored")

    # -- the Store protocol's synchronous readers: a remote store answers through recall ---

    def delivered(self, cascade_id: str) -> Delivered:
        return self._front.delivered(cascade_id)

    def candidates(self, key: bytes) -> list[Observation]:
        return []

    def unfinished(self) -> dict[int, float]:
        return {}

    def close(self) -> None:
        """Stop writing: what was made and not yet sent is written now."""
        if self._closed:
            return
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
        # Writes made and not yet sent (a planner hop stopped right after a reply: its ledger) go now.
        unsent = list(self._deferred.values()) + (self._pipe.unsent() if self._pipe is not None else [])
        self._deferred.clear()
        if self._pipe is not None:
            self._pipe.close()  # writes in flight were sent; their replies are not waited for
        if unsent and self._link.up:  # a server away is not waited for at shutdown
            try:
                self._flush_now(*unsent)
            except Exception:
                logger.exception(f"bridge: state store {self.shown}: the last writes were lost")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._closing = loop.create_task(self._conns.close())

    @property
    def dropped(self) -> int:
        """Writes lost while the server was away or behind (never retried: their readings are over)."""
        return self._dropped
