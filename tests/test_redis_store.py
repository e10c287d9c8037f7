"""The shared store on a real Redis server (runtime/redis_store.py): what one hop writes another reads,
the readings a planner call waits for, faults, and nothing secret on the server.

Each test starts its own redis-server (a free port, a temp dir, a password: tests/conftest.py)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from native_bridge.cascade.ledger import Delivery, step_digest
from native_bridge.evidence import Observation, call_key, match_key
from native_bridge.runtime import redis_store
from native_bridge.runtime.redis_store import RedisStore, StoreUnreachable, pack
from native_bridge.runtime.store_url import parse
from support.redis_server import RedisServer

COMMAND, OUTPUT = "npm test --secret-flag=hunter2", "FAIL tests/app.test.js\nAKIAEXAMPLEKEY1234"
KEY = match_key("run_command", COMMAND, OUTPUT)


@pytest.fixture(autouse=True)
def _logged(monkeypatch):
    monkeypatch.setattr(redis_store.logger, "disabled", False)  # whatever logging setup ran before


def store(server: RedisServer, **kw) -> RedisStore:
    kw.setdefault("prefix", "t:")
    ca = str(server.ca_file) if server.tls else None
    return RedisStore(parse(server.url), ca=ca, **kw)


def failed(call: str = "toolu_1", code: int | None = None, client: str | None = "claude-code") -> Observation:
    return Observation(code, True, client, KEY, call_key("", call))


async def settle(*stores: RedisStore) -> None:
    """Until the stores' writers have sent what was queued (they run on this loop)."""
    for _ in range(400):
        if all(s._pipe is None or not (s._pipe._sent or s._pipe._held) for s in stores):
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)


async def test_what_the_chat_hop_observed_reaches_a_planner_hop_in_another_process(redis_server: RedisServer):
    chat, planner = store(redis_server), store(redis_server)
    chat.observe([failed(), Observation(2, True, "codex", match_key("run_command", "ls /nope", "x"), b"c" * 16)])
    await settle(chat)
    got = await planner.recall("cascade-1", [KEY, match_key("run_command", "ls /nope", "x"), b"z" * 16])
    assert got is not None
    assert got.found[KEY] == [failed()]
    assert got.found[match_key("run_command", "ls /nope", "x")][0].exit_code == 2
    assert got.lookup(b"z" * 16) == [] and got.lookup(b"never asked" * 2) is None
    assert len(got.delivered) == 0


async def test_the_same_call_seen_again_is_one_observation_and_two_calls_are_two(redis_server: RedisServer):
    chat, planner = store(redis_server), store(redis_server)
    for _ in range(3):  # every turn resends the history
        chat.observe([failed("toolu_1")])
    await settle(chat)
    got = await planner.recall(None, [KEY])
    assert got is not None and len(got.found[KEY]) == 1
    chat.observe([failed("toolu_2")])  # another call, same command and output: ambiguous, no claim
    await settle(chat)
    got = await planner.recall(None, [KEY])
    assert got is not None and len(got.found[KEY]) == 2


async def test_a_key_keeps_its_newest_records_only(redis_server: RedisServer):
    chat = store(redis_server)
    chat.observe([failed(f"call-{i}") for i in range(200)])
    await settle(chat)
    raw = redis_server.client().get(chat._obs_key(KEY))
    assert raw is not None and len(raw) <= 2 * redis_store.KEEP_RECORDS * redis_store._RECORD.size


async def test_a_planner_call_waits_for_a_reading_begun_before_it_woken_when_it_ends(redis_server: RedisServer):
    chat, planner = store(redis_server), store(redis_server)
    token = chat.begin(10 * 2**20)  # ends within 15 s at the latest
    await settle(chat)

    async def read_then_end() -> None:
        await asyncio.sleep(0.3)
        chat.observe([failed()], ended=token)

    ending = asyncio.create_task(read_then_end())
    start = time.monotonic()
    got = await planner.recall("c", [KEY])
    waited = time.monotonic() - start
    await ending
    assert got is not None and got.found[KEY] == [failed()], "the evidence of the reading it waited for"
    assert 0.25 < waited < 2.0, f"woken by the end, not by the bound ({waited:.2f} s)"


async def test_a_reading_that_never_ends_is_waited_for_until_its_bound(redis_server: RedisServer, monkeypatch):
    monkeypatch.setattr(redis_store, "reading_bound", lambda size: 0.4)
    chat, planner = store(redis_server), store(redis_server)
    chat.begin(100)  # its process dies before it ends it
    await settle(chat)
    start = time.monotonic()
    got = await planner.recall("c", [KEY])
    waited = time.monotonic() - start
    assert got is not None and KEY not in got.found
    assert 0.2 < waited < 1.5
    start = time.monotonic()
    await planner.recall("c", [KEY])
    assert time.monotonic() - start < 0.2, "a reading past its bound is not waited for again"


async def test_the_ledger_is_shared_and_survives_the_process(redis_server: RedisServer):
    steps = [b"step-1", b"step-2"]
    first = store(redis_server)
    first.deliver("cascade-9", Delivery(steps))
    await settle(first)
    own = await first.recall("cascade-9", [])
    assert own is not None and own.delivered is first.front("cascade-9"), "this process's entry: its bytes compare"
    first.close()
    restarted = store(redis_server)  # an empty disk, an empty memory: the server still knows
    got = await restarted.recall("cascade-9", [])
    assert got is not None and list(got.delivered.digests or ()) == [step_digest(s) for s in steps]


async def test_a_stopped_server_costs_no_request_more_than_the_timeout_and_logs_once(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO, logger=redis_store.__name__)
    chat, planner = store(redis_server, timeout=0.2), store(redis_server, timeout=0.2)
    redis_server.stop()
    times = []
    for i in range(20):
        chat.observe([failed(f"lost-{i}")])
        start = time.monotonic()
        assert await planner.recall("c", [KEY]) is None
        times.append(time.monotonic() - start)
    await settle(chat)
    assert max(times) < 0.5
    away = [r for r in caplog.records if "is away" in r.getMessage()]
    assert len(away) == 2, "one line per store object and outage (chat and planner), not one per request"
    redis_server.start()
    for s in (chat, planner):
        s._link.retry_at = 0  # the backoff's wait, spent
    got = await planner.recall("c", [KEY])
    assert got is not None and KEY not in got.found, "observations made while it was away are lost, not invented"
    assert [r.getMessage() for r in caplog.records if "is back" in r.getMessage()]
    chat.observe([failed("after")])
    await settle(chat)
    got = await planner.recall("c", [KEY])
    assert got is not None and got.found[KEY] == [failed("after")]
    assert redis_server.password not in caplog.text


async def test_a_hung_server_delays_a_call_by_the_timeout_only(redis_server: RedisServer):
    planner = store(redis_server, timeout=0.3)
    assert await planner.recall("c", [KEY]) is not None  # connected
    redis_server.pause()
    try:
        start = time.monotonic()
        assert await planner.recall("c", [KEY]) is None
        assert time.monotonic() - start < 0.8
    finally:
        redis_server.resume()


async def test_values_that_are_not_ours_are_a_logged_miss(redis_server: RedisServer, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger=redis_store.__name__)
    planner = store(redis_server)
    c = redis_server.client()
    c.hset(planner._obs_key(KEY), "x", "y")  # another program's hash under our prefix
    other = match_key("run_command", "ls", "out")
    c.set(planner._obs_key(other), b"\xff" * redis_store._RECORD.size)  # bad flags
    c.set(planner._ledger_key("c"), b"12345")  # not a run of digests
    c.set(b"t:readings", "a string, not a set")
    got = await planner.recall("c", [KEY, other])
    assert got is not None and got.found == {} and len(got.delivered) == 0
    assert caplog.text.count("not ours") == 2
    chat = store(redis_server)  # our own write heals the key
    chat.observe([failed()])
    await settle(chat)
    got = await planner.recall("c", [KEY])
    assert got is not None and got.found[KEY] == [failed()]


async def test_nothing_secret_on_the_server_only_digests_under_the_prefix(redis_server: RedisServer):
    chat = store(redis_server, prefix="team-a:")
    chat.begin(1000)
    chat.observe([failed()], ended=1)
    chat.deliver("0b7c9e14-cascade", Delivery([COMMAND.encode(), OUTPUT.encode()]))
    await settle(chat)
    c = redis_server.client()
    keys = list(c.scan_iter(count=1000))
    assert keys and all(k.startswith(b"team-a:") for k in keys)
    dump = b"".join(keys)
    for k in keys:
        kind = c.type(k)
        if kind == b"string":
            dump += c.get(k)
        elif kind == b"zset":
            dump += b"".join(m for m, _ in c.zrange(k, 0, -1, withscores=True))
        elif kind == b"stream":
            dump += b"".join(v for _, f in c.xrange(k) for v in f.values())
    for secret in (COMMAND, OUTPUT, "hunter2", "AKIAEXAMPLEKEY1234", "0b7c9e14-cascade", redis_server.password):
        assert secret.encode() not in dump
    assert 0 < c.ttl(chat._obs_key(KEY)) <= 7 * 86400
    assert 0 < c.ttl(chat._ledger_key("0b7c9e14-cascade")) <= redis_store.LEDGER_TTL


def test_an_unreachable_server_at_start_up_is_an_error_naming_it_without_its_password(redis_server: RedisServer):
    wrong = parse(redis_server.url.replace(":" + redis_server.password[:6], ":wrong" + redis_server.password[:6], 1))
    with pytest.raises(StoreUnreachable) as e:
        RedisStore(wrong)
    assert redis_server.password not in str(e.value) and "wrong" not in str(e.value)
    assert f"{redis_server.host}:{redis_server.port}" in str(e.value)
    redis_server.stop()
    with pytest.raises(StoreUnreachable) as e:
        RedisStore(parse(redis_server.url), connect_timeout=1.0)
    assert redis_server.password not in str(e.value)


def test_a_record_holds_only_digests_a_code_a_verdict_and_a_client_id():
    o = failed(code=-1)
    record = pack(o, 1.5)
    assert len(record) == redis_store._RECORD.size
    assert redis_store.unpack(KEY, record, 0) == [o]
    assert redis_store.unpack(KEY, record, 2000) == [], "older than the TTL allows"


async def test_a_begin_that_reaches_the_server_after_its_end_begins_nothing(redis_server: RedisServer):
    """A write sent on a connection that stalled may be applied after its client gave up, and after
    the reading's end went on another connection: the reading is not in flight for its whole bound."""
    chat, planner = store(redis_server), store(redis_server)
    chat.observe([], ended=4242)  # the end first
    await settle(chat)
    c = redis_server.client()
    keys = [*chat._marks()]
    late_begin = (60, 60, 1, 0, 0, 0, redis_store._RECORD.size, 32, 0, 4242, 15000)
    c.eval(redis_store._WRITE, 3, *keys, *late_begin)
    assert c.zrange(keys[0], 0, -1) == []
    start = time.monotonic()
    assert await planner.recall("c", [KEY]) is not None
    assert time.monotonic() - start < 0.5


async def test_an_older_ledger_that_arrives_late_does_not_replace_a_newer_one(redis_server: RedisServer):
    hop = store(redis_server)
    hop.deliver("cascade-1", Delivery([b"a", b"b", b"c"]))
    await settle(hop)
    c = redis_server.client()
    old = redis_store._VERSION.pack(1) + step_digest(b"a")  # written long ago, applied now
    keys = (*hop._marks(), hop._ledger_key("cascade-1"))
    c.eval(redis_store._WRITE, 4, *keys, 60, 60, 0, 0, 0, 1, redis_store._RECORD.size, 32, 0, old[:8], old[8:])
    got = await store(redis_server).recall("cascade-1", [])
    assert got is not None and len(got.delivered) == 3


async def test_the_end_of_a_reading_lost_in_an_outage_is_said_again_when_the_server_answers(
    redis_server: RedisServer, monkeypatch
):
    monkeypatch.setattr(redis_store, "BACKOFF", (0.1, 0.2))
    chat = store(redis_server, timeout=0.2)
    chat._link.delay = 0.1
    token = chat.begin(10 * 2**20)  # 15 s bound
    await settle(chat)
    redis_server.pause()
    try:
        chat.observe([failed()])  # stalls and times out: the store is away
        for _ in range(100):
            if not chat._link.up:
                break
            await asyncio.sleep(0.05)
        assert not chat._link.up
        chat.observe([], ended=token)  # not sent while it is away
    finally:
        redis_server.resume()
    marks = chat._marks()
    for _ in range(100):  # retried with backoff, without any new request
        if not redis_server.client().zrange(marks[0], 0, -1):
            break
        await asyncio.sleep(0.05)
    assert redis_server.client().zrange(marks[0], 0, -1) == []
    assert redis_server.client().zscore(marks[2], str(token)) is not None


def test_the_worker_process_does_not_inherit_the_store_password(monkeypatch):
    """The worker (large bodies, records) never talks to the store: its environment has no password."""
    import os

    from native_bridge.runtime.worker import WorkerProcess

    monkeypatch.setenv("BRIDGE_STATE_PASSWORD", "not-for-the-worker")
    monkeypatch.setenv("BRIDGE_TEST_OTHER", "inherited")
    worker = WorkerProcess(os.getenv)
    try:
        assert worker.render("BRIDGE_TEST_OTHER") == "inherited"  # it ran in the child
        assert worker.pid is not None
        assert worker.render("BRIDGE_STATE_PASSWORD") is None
    finally:
        worker.close()


async def test_a_reading_s_begin_is_on_the_wire_before_begin_returns(redis_server: RedisServer):
    """The chat hop begins a reading in the hook, before the request goes upstream: the begin must not
    wait for the event loop (nor for replies to earlier writes), or a planner call on another host may
    come first and not wait for the reading (seen under load when it went a loop step later)."""
    chat = store(redis_server)
    chat.observe([failed()])  # connects
    await settle(chat)
    c = redis_server.client()
    readings = chat._marks()[0]
    for _ in range(3):
        token = chat.begin(100)
        deadline = time.monotonic() + 2
        while c.zscore(readings, str(token)) is None and time.monotonic() < deadline:
            time.sleep(0.001)  # blocks the loop: only bytes already sent can arrive
        assert c.zscore(readings, str(token)) is not None


async def test_a_call_with_thousands_of_steps_is_answered_whole(redis_server: RedisServer):
    chat, planner = store(redis_server), store(redis_server)
    keys = [match_key("run_command", f"cmd {i}", "out") for i in range(2500)]
    chat.observe([Observation(i % 3, True, None, k, call_key("", f"c{i}")) for i, k in enumerate(keys) if i % 500 == 7])
    await settle(chat)
    got = await planner.recall("big", keys)
    assert got is not None
    assert sorted(got.found) == sorted(k for i, k in enumerate(keys) if i % 500 == 7)
    assert [got.found[keys[i]][0].exit_code for i in (7, 2007)] == [7 % 3, 2007 % 3]


async def test_a_ledger_made_just_before_shutdown_is_written(redis_server: RedisServer):
    """A planner hop stopped right after the language server's reply: its delivery had not been sent yet
    (it goes after the hook, and the first write of a process waits for its connection)."""
    hop = store(redis_server)
    hop.deliver("cascade-late", Delivery([b"x", b"y"]))
    hop.close()  # before the loop ran once
    got = await store(redis_server).recall("cascade-late", [])
    assert got is not None and len(got.delivered) == 2


async def test_a_ledger_this_process_wrote_since_wins_over_an_older_one_on_the_server(redis_server: RedisServer):
    """The next call of a cascade may ask before the previous delivery's write is applied: the steps
    this process delivered since are not sent again."""
    hop = store(redis_server)
    hop.deliver("c", Delivery([b"1", b"2"]))
    await settle(hop)
    older = redis_store._VERSION.pack(1) + step_digest(b"1")  # what the server held before that write
    redis_server.client().set(hop._ledger_key("c"), older)
    got = await hop.recall("c", [])
    assert got is not None and got.delivered is hop.front("c") and len(got.delivered) == 2
    other = store(redis_server)  # another process knows only the server's
    got = await other.recall("c", [])
    assert got is not None and len(got.delivered) == 1
