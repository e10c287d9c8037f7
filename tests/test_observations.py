"""The observation logs of ``bridge_state`` (runtime/observations.py): what one process appends,
every process sharing the state file finds, whole, once; damage and a record still being written
cost only themselves; old logs go; an earlier version's table is still read."""

from __future__ import annotations

import itertools
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from native_bridge.evidence import Observation, call_key, match_key
from native_bridge.runtime import observations as obs
from native_bridge.runtime.observations import DAY, ObservationLog, Record, decode, encode
from native_bridge.runtime.store import SQLiteStore, reading_bound

TTL = 7 * DAY


def ob(i: int, exit_code: int | None = 1, failed: bool | None = True, client: str | None = "claude-code"):
    return Observation(exit_code, failed, client, match_key("run_command", f"cmd {i}", "out"), call_key("c", str(i)))


def test_a_record_gives_back_every_field_as_written() -> None:
    cases = [
        ob(i, code, failed, client)
        for i, (code, failed, client) in enumerate(
            itertools.product((None, 0, 1, 128, -(2**31), 2**31 - 1), (None, True, False), (None, "codex", "ü-client"))
        )
    ]
    records = [Record(1234.5, cases), Record(1.0, [], begun=2**64 - 1, until=9.5), Record(2.0, cases[:1], ended=7)]
    data = b"".join(map(encode, records))
    assert decode(data) == (records, len(data))


def test_a_record_not_yet_whole_is_read_once_it_is() -> None:
    a, b = encode(Record(1.0, [ob(1)])), encode(Record(2.0, [ob(2), ob(3)]))
    data = a + b
    for cut in range(len(data) + 1):
        found, used = decode(data[:cut])
        whole = [r for r in (a, a + b) if len(r) <= cut]
        assert used == (len(whole[-1]) if whole else 0), cut
        assert len(found) == len(whole)
        rest, more = decode(data[used:])
        assert [o for r in found + rest for o in r.observations] == [ob(1), ob(2), ob(3)]
        assert used + more == len(data)


@pytest.mark.parametrize("damage", ["flip", "torn", "garbage", "huge length"])
def test_damage_costs_only_the_record_it_is_in(damage: str) -> None:
    a, b, c = (encode(Record(float(i), [ob(i)])) for i in (1, 2, 3))
    if damage == "flip":
        bad = b[:-3] + bytes([b[-3] ^ 0xFF]) + b[-2:]
    elif damage == "torn":  # a power cut in the middle of a write: the next writer appended after it
        bad = b[: len(b) // 2]
    elif damage == "garbage":
        bad = os.urandom(100).replace(obs.MAGIC, b"")
    else:
        bad = obs.MAGIC + (obs.MAX_RECORD + 1).to_bytes(4, "little") + b[8:]
    found, used = decode(a + bad + c)
    assert [r.observations for r in found] == [[ob(1)], [ob(3)]] and used == len(a + bad + c)


def test_another_process_finds_what_one_appended_before_it_returned(tmp_path) -> None:
    path = str(tmp_path / "state.sqlite")
    chat, planner = SQLiteStore(path), SQLiteStore(path)
    try:
        assert planner.candidates(ob(1).key) == []
        chat.observe([ob(1), ob(2, 0, False)])
        assert planner.candidates(ob(1).key) == [ob(1)] and planner.candidates(ob(2).key) == [ob(2, 0, False)]
        chat.observe([ob(1, 2)])  # the same call seen again: the newest stands
        assert planner.candidates(ob(1).key) == [ob(1, 2)]
        later = SQLiteStore(path)  # a process started afterwards reads the log from its start
        assert later.candidates(ob(2).key) == [ob(2, 0, False)]
        later.close()
    finally:
        chat.close()
        planner.close()
    [log] = [p for p in tmp_path.iterdir() if "-obs-" in p.name]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert b"cmd 1" not in log.read_bytes() and b"claude-code" in log.read_bytes()  # digests, and the client's id


WRITER = textwrap.dedent("""
    import sys
    from native_bridge.evidence import Observation
    from native_bridge.runtime.store import SQLiteStore, reading_bound
    path, me, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = SQLiteStore(path)
    for i in range(n):  # batches of 1 to 3, the shapes of real turns
        batch = [Observation(me, None, "w%d" % me, b"%d/%d/%d" % (me, i, j), b"c%d" % j) for j in range(1 + i % 3)]
        store.observe(batch)
    store.close()
""")


def test_processes_appending_at_once_lose_and_tear_nothing(tmp_path) -> None:
    path, n = str(tmp_path / "state.sqlite"), 400
    SQLiteStore(path).close()  # the file and its schema, before the writers race to make them
    reader = SQLiteStore(path)
    try:
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(me), str(n)]) for me in range(4)]
        while any(w.poll() is None for w in writers):  # reading while they write: records half-written
            reader.candidates(b"0/0/0")
        assert [w.wait(timeout=60) for w in writers] == [0] * 4
        for me, i in itertools.product(range(4), range(n)):
            for j in range(1 + i % 3):
                assert reader.candidates(b"%d/%d/%d" % (me, i, j)) == [
                    Observation(me, None, f"w{me}", b"%d/%d/%d" % (me, i, j), b"c%d" % j)
                ]
    finally:
        reader.close()


def test_a_writer_still_on_yesterdays_log_is_read(tmp_path) -> None:
    base, day = str(tmp_path / "s"), 20000
    writer, reader = ObservationLog(base, TTL, 100), ObservationLog(base, TTL, 100)
    reader.candidates(b"", day * DAY + 10)  # the reader is on today's log already
    writer.observe([ob(1)], day * DAY - 1)  # a moment before midnight
    assert reader.candidates(ob(1).key, day * DAY + 11) == [ob(1)]
    writer.close()
    reader.close()


def test_old_observations_are_not_evidence_and_old_logs_go(tmp_path) -> None:
    base, day = str(tmp_path / "s"), 20000
    log = ObservationLog(base, TTL, 100)
    log.observe([ob(1)], day * DAY)
    assert log.candidates(ob(1).key, day * DAY + TTL) == [ob(1)]
    assert log.candidates(ob(1).key, day * DAY + TTL + 1) == []  # past the TTL
    later = day + int(TTL // DAY) + 2
    log.observe([ob(2)], later * DAY)  # a new day's log: the ones past the TTL are deleted
    assert not os.path.exists(log.path(day)) and os.path.exists(log.path(later))
    assert log.candidates(ob(2).key, later * DAY) == [ob(2)]
    log.close()


def test_the_index_keeps_the_newest_arrivals_within_its_limit(tmp_path) -> None:
    log = ObservationLog(str(tmp_path / "s"), TTL, 2)
    log.observe([ob(1), ob(2)], 100.0)
    log.observe([ob(3)], 101.0)
    assert [log.candidates(ob(i).key, 102.0) for i in (1, 2, 3)] == [[], [ob(2)], [ob(3)]]
    log.close()


def test_an_earlier_versions_observation_table_is_still_read(tmp_path) -> None:
    path = tmp_path / "state.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE observation (key BLOB NOT NULL, call BLOB NOT NULL, exit_code INTEGER, failed INTEGER,
            client TEXT, seen REAL NOT NULL, PRIMARY KEY (key, call));
    """)
    rows = [(ob(1), time.time()), (ob(2, None, None, None), time.time()), (ob(3), time.time() - TTL - 10)]
    db.executemany(
        "INSERT INTO observation VALUES (?, ?, ?, ?, ?, ?)",
        [(o.key, o.call, o.exit_code, None if o.failed is None else int(o.failed), o.client, t) for o, t in rows],
    )
    db.commit()
    db.close()
    store = SQLiteStore(str(path))
    try:
        assert store.candidates(ob(1).key) == [ob(1)]
        assert store.candidates(ob(2).key) == [ob(2, None, None, None)]
        assert store.candidates(ob(3).key) == []  # past the TTL
        store.observe([ob(1, 5)])  # newer than the table's
        assert store.candidates(ob(1).key) == [ob(1, 5)]
    finally:
        store.close()


def test_a_reading_another_process_began_is_unfinished_until_it_ends_or_its_time_is_up(tmp_path) -> None:
    base, now = str(tmp_path / "s"), time.time()
    chat, planner = ObservationLog(base, TTL, 100), ObservationLog(base, TTL, 100)
    first, second = chat.begin(now, now + 5), chat.begin(now, now + 60)
    with open(chat.path(int(now // DAY)), "rb") as f:  # one record each, as encode() writes it
        assert f.read() == b"".join(
            encode(Record(now, [], begun=t, until=now + u)) for t, u in ((first, 5), (second, 60))
        )
    assert planner.unfinished(now) == {first: now + 5, second: now + 60}
    chat.observe([ob(1)], now + 1, ended=first)  # its observations come with its end
    assert planner.unfinished(now + 1) == {second: now + 60} and planner.candidates(ob(1).key, now + 1) == [ob(1)]
    assert planner.unfinished(now + 60) == {}, "its process died: it ended when its time was up"
    restarted = ObservationLog(base, TTL, 100)  # a planner hop started later knows it as well
    assert restarted.unfinished(now + 2) == {second: now + 60}
    for log in (chat, planner, restarted):
        log.close()


def test_the_bound_on_a_reading_grows_with_its_body() -> None:
    assert reading_bound(0) >= 5 and reading_bound(32 * 2**20) >= 30


def test_a_torn_record_hides_none_of_the_records_after_it() -> None:
    """A write cut short (a full disk, a process killed in a long write) keeps its length field:
    the records appended after it are read, not taken for the rest of it."""
    a, c = encode(Record(1.0, [ob(1)])), encode(Record(3.0, [ob(3)]))
    big = encode(Record(2.0, [ob(i) for i in range(100, 200)]))
    data = a + big[: len(big) // 2] + c
    found, used = decode(data)
    assert [r.observations for r in found] == [[ob(1)], [ob(3)]] and used == len(data)
    found, used = decode(a + big[: len(big) // 2])  # nothing after it yet: it may still be written
    assert [r.observations for r in found] == [[ob(1)]] and used == len(a)


def test_logs_read_out_of_order_keep_the_newest_observation(tmp_path, monkeypatch) -> None:
    """With its budget spent on today's log, a reader opened now never reads yesterday's later:
    an older observation of the same call must not replace a newer one."""
    base, today = str(tmp_path / "s"), int(time.time() // DAY)
    writer = ObservationLog(base, TTL, 100)
    writer.observe([ob(1, 1)], (today - 1) * DAY + 5)
    writer.observe([ob(1, 0)], today * DAY + 5)
    writer.close()
    monkeypatch.setattr(obs, "SCAN_BYTES", 1)
    reader = ObservationLog(base, TTL, 100)
    assert reader.candidates(ob(1).key, today * DAY + 6) == [ob(1, 0)]
    reader.close()
    index = obs.Observations(10)
    index.add(ob(1, 0), 5.0)
    index.add(ob(1, 1), 4.0)  # older, read later
    assert index.candidates(ob(1).key) == [ob(1, 0)]


def test_an_end_read_before_its_begin_still_ends_it(tmp_path) -> None:
    """Around midnight a reading's begin and end may lie in two days' logs, read in either order."""
    base, day = str(tmp_path / "s"), 20000
    writer, reader = ObservationLog(base, TTL, 100), ObservationLog(base, TTL, 100)
    token = writer.begin(day * DAY + 1, day * DAY + 600)  # in the later day's log
    writer.observe([ob(1)], day * DAY - 1, ended=token)  # in the earlier one's: read first
    assert reader.unfinished(day * DAY + 2) == {} and reader.candidates(ob(1).key, day * DAY + 2) == [ob(1)]
    writer.close()
    reader.close()


def test_a_closed_log_takes_no_more_records(tmp_path) -> None:
    log = ObservationLog(str(tmp_path / "s"), TTL, 100)
    log.close()
    with pytest.raises(OSError):
        log.observe([ob(1)], time.time())
