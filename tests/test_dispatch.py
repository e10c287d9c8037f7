"""The one dispatch (runtime/dispatch.py): where and when a hop's work runs, and the one fail-open.

Each hop's own tests (test_offload, test_later, test_websocket, test_planner_addon) show the
paths end to end; these pin the decisions themselves with a work that records what was asked of it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from mitmproxy.test import tflow
from native_bridge.runtime import dispatch
from native_bridge.runtime.dispatch import OFFLOAD_BYTES, Dispatch
from steps import gone

SMALL, LARGE = 1000, OFFLOAD_BYTES


@dataclass
class Fake:
    """A work that logs each call; ``raises`` names the steps that raise (a failed result is applied)."""

    size: int = SMALL
    new: int | None = None  # fresh(): the new part of a large body (None: all of it)
    goes_first: bool = False
    after_reply: bool = False
    wait: bool = False
    live: bool = False  # the request still goes upstream after the hook (later.deferrable)
    known: str | None = None  # prepare's result: nothing to read
    here_gives: str | None = "here"
    raises: frozenset[str] = frozenset()
    calls: list[Any] = field(default_factory=list)
    where: str = "flow f1"
    unit: str = "request"
    result: str | None = None  # what decided() was given last

    def __post_init__(self) -> None:
        self.flow = tflow.tflow()
        self.flow.live = self.live

    def _step(self, name: str, *args: Any) -> None:
        self.calls.append((name, *args))
        if name in self.raises:
            raise RuntimeError(f"{name} broke")

    def prepare(self) -> str | None:
        self._step("prepare")
        return self.known

    def fresh(self) -> int:
        return self.size if self.new is None else self.new

    def here(self, whole: bool) -> str | None:
        self._step("here", whole)
        return self.here_gives

    async def away(self, d: Dispatch) -> str:
        self._step("away")
        await gone()
        return "away"

    def failed(self, e: Exception) -> str:
        return f"failed: {e}"

    def decided(self, result: str) -> None:
        self.result = result

    def apply(self) -> None:
        assert self.result is not None
        self.calls.append(("apply", self.result))
        if "apply" in self.raises and not self.result.startswith("failed"):
            raise RuntimeError("apply broke")

    def account(self) -> None:
        self.calls.append(("account", self.result))


def names(w: Fake) -> list[Any]:
    return [c if len(c) > 1 else c[0] for c in w.calls]


def test_a_small_body_is_read_whole_on_the_loop():
    w = Fake()
    assert Dispatch().run(w) is None
    assert names(w) == ["prepare", ("here", True), ("apply", "here"), ("account", "here")]


def test_a_large_body_is_read_away_and_awaited():
    w = Fake(size=LARGE)
    pending = Dispatch().run(w)
    assert pending is not None and names(w) == ["prepare"]  # nothing read on the loop
    asyncio.run(pending)
    assert names(w) == ["prepare", "away", ("apply", "away"), ("account", "away")]


def test_a_large_body_whose_new_part_is_small_is_read_here_new_part_only():
    w = Fake(size=10 * LARGE, new=LARGE - 1)
    assert Dispatch().run(w) is None
    assert names(w) == ["prepare", ("here", False), ("apply", "here"), ("account", "here")]
    w = Fake(size=10 * LARGE, new=LARGE)  # the new part alone is large: away
    asyncio.run(Dispatch().run(w))
    assert "away" in names(w) and ("here", False) not in names(w)


def test_a_reading_here_that_needs_the_whole_body_goes_away():
    w = Fake(size=10 * LARGE, new=10, here_gives=None)
    pending = Dispatch().run(w)
    assert pending is not None
    asyncio.run(pending)
    assert names(w) == ["prepare", ("here", False), "away", ("apply", "away"), ("account", "away")]


def test_a_known_result_is_applied_and_accounted_without_reading():
    w = Fake(known="skipped", size=LARGE)
    assert Dispatch().run(w) is None
    assert names(w) == ["prepare", ("apply", "skipped"), ("account", "skipped")]


async def _tick() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def test_going_first_a_small_body_is_read_after_the_request_went_on():
    async def go() -> Fake:
        w = Fake(goes_first=True, live=True)
        assert Dispatch().run(w) is None
        assert names(w) == ["prepare"]  # the hook returned before any reading: the request goes on
        await gone()
        assert names(w) == ["prepare", ("here", True), ("apply", "here"), ("account", "here")]
        return w

    asyncio.run(go())


def test_going_first_a_large_body_is_read_away_and_kept_in_readings_until_done():
    async def go() -> None:
        d = Dispatch()
        w = Fake(size=LARGE, goes_first=True, live=True)
        assert d.run(w) is None  # nothing to await: the request goes on
        assert names(w) == ["prepare"], "where to read it is decided once it has gone"
        await gone()  # written out: before any reply could be read
        assert list(d.readings) == [w.flow.id]
        await asyncio.wait(list(d.readings.values()))
        assert not d.readings
        assert names(w) == ["prepare", "away", ("apply", "away"), ("account", "away")]

    asyncio.run(go())


def test_going_first_a_new_part_that_needs_the_whole_body_is_read_away_meanwhile():
    async def go() -> None:
        d = Dispatch()
        w = Fake(size=10 * LARGE, new=10, here_gives=None, goes_first=True, live=True)
        assert d.run(w) is None
        await gone()  # after forwarding: the new part did not do, the whole body goes away
        assert ("here", False) in names(w) and list(d.readings) == [w.flow.id]
        await asyncio.wait(list(d.readings.values()))
        assert names(w)[-2:] == [("apply", "away"), ("account", "away")] and not d.readings

    asyncio.run(go())


def test_going_first_a_body_bound_away_waits_for_the_readings_in_flight_then_decides_again():
    # A turn sent while its conversation's last reading is still off the loop (a headless reply
    # goes on before it): that reading's memo entry lets this one read only its new part.
    async def go() -> None:
        d = Dispatch()
        earlier = asyncio.get_running_loop().create_future()
        d.readings["earlier"] = earlier
        w = Fake(size=10 * LARGE, goes_first=True, live=True)
        assert d.run(w) is None
        await gone()
        assert names(w) == ["prepare"], "nothing read while an earlier reading is in flight"
        assert w.flow.id in d.readings, "the reply and a planner call still wait for this reading"
        w.new = 10  # the earlier reading's memo entry holds the rest
        earlier.set_result(None)
        await asyncio.wait([d.readings[w.flow.id]])
        assert names(w) == ["prepare", ("here", False), ("apply", "here"), ("account", "here")]
        assert w.flow.id not in d.readings
        v = Fake(size=10 * LARGE, goes_first=True, live=True)  # nothing in flight: away at once
        assert d.run(v) is None
        await gone()
        await asyncio.wait(list(d.readings.values()))
        assert names(v) == ["prepare", "away", ("apply", "away"), ("account", "away")]

    asyncio.run(go())


def test_a_reading_after_the_reply_waits_for_the_reply_then_a_moment(monkeypatch):
    monkeypatch.setattr(dispatch, "AFTER_REPLY", 0.01)

    async def go() -> None:
        d = Dispatch()
        w = Fake(goes_first=True, after_reply=True, live=True)
        assert d.run(w) is None
        await gone()
        await asyncio.sleep(0.02)
        assert names(w) == ["prepare"], "the request went, its reading waits for the reply"
        d.replied("another flow")  # another flow's reply begins nothing
        d.replied(w.flow.id)
        await gone()
        assert names(w) == ["prepare"], "the client the reply wakes goes first"
        await asyncio.sleep(0.03)
        assert names(w) == ["prepare", ("here", True), ("apply", "here"), ("account", "here")]
        d.replied(w.flow.id)  # a second reply (or an error after it) reads nothing twice
        await asyncio.sleep(0.03)
        assert len(names(w)) == 4 and not d.deferred

    asyncio.run(go())


def test_a_verdict_after_the_reply_waits_for_it_or_for_a_planner_call(monkeypatch):
    monkeypatch.setattr(dispatch, "AFTER_REPLY", 0.01)

    async def go() -> None:
        d = Dispatch()
        w = Fake(after_reply=True, live=True)  # rewrite mode: read and applied now, for the request
        assert d.run(w) is None
        assert names(w) == ["prepare", ("here", True), ("apply", "here")]
        await asyncio.sleep(0.02)
        assert names(w)[-1] == ("apply", "here"), "its verdict waits for the reply"
        d.replied(w.flow.id)
        await asyncio.sleep(0.03)
        assert names(w)[-1] == ("account", "here")
        v = Fake(after_reply=True, live=True)
        v.flow.id = "f2"
        assert d.run(v) is None and names(v)[-1] == ("apply", "here")
        planner = Fake(wait=True)
        assert d.run(planner) is None  # nothing in flight: it runs at once, after v's rest
        assert names(v)[-1] == ("account", "here") and names(planner)[-1] == ("account", "here")

    asyncio.run(go())


def test_a_planner_call_begins_the_readings_waiting_for_their_replies():
    async def go() -> None:
        d = Dispatch()
        small = Fake(goes_first=True, after_reply=True, live=True)
        large = Fake(size=LARGE, goes_first=True, after_reply=True, live=True)
        large.flow.id = "f2"
        assert d.run(small) is None and d.run(large) is None  # the next request began small's reading
        await gone()
        assert names(small)[-1] == ("account", "here") and names(large) == ["prepare"]
        planner = Fake(wait=True)
        pending = d.run(planner)
        # The large one began: read away, in readings; the planner call waits for it.
        assert list(d.readings) == ["f2"] and not d.deferred
        assert pending is not None and names(planner) == ["prepare"]
        await pending
        assert names(large)[-1] == ("account", "away") and names(planner)[-1] == ("account", "here")
        d.replied(small.flow.id)  # their replies come after: nothing is read again
        d.replied("f2")
        await asyncio.sleep(0.01)
        assert names(small).count(("account", "here")) == 1 and names(large).count(("account", "away")) == 1

    asyncio.run(go())


def test_the_next_request_begins_the_readings_waiting_for_their_replies():
    """A conversation's next turn, sent a moment after the last reply, finds the memo entry of the
    reading that was still waiting: that reading goes first."""

    async def go() -> None:
        d = Dispatch()
        w = Fake(goes_first=True, after_reply=True, live=True)
        assert d.run(w) is None
        await gone()
        assert names(w) == ["prepare"]
        nxt = Fake(goes_first=True, after_reply=True, live=True, calls=[])
        nxt.flow.id = "f2"
        assert d.run(nxt) is None
        assert names(w)[-1] == ("account", "here") and list(d.deferred) == ["f2"]

    asyncio.run(go())


def test_a_reading_after_the_reply_that_fails_fails_open():
    d = Dispatch()
    w = Fake(goes_first=True, after_reply=True, live=True, raises=frozenset({"apply"}))

    async def go() -> None:
        assert d.run(w) is None
        d.replied(w.flow.id)
        await asyncio.sleep(dispatch.AFTER_REPLY + 0.02)

    asyncio.run(go())
    # apply broke: the failed result applied and accounted (the request had gone as it came)
    assert names(w)[-1] == ("account", "failed: apply broke")


def test_going_first_without_a_loop_is_read_at_once():
    w = Fake(goes_first=True)  # a test calling a hook directly: there is no "after"
    assert Dispatch().run(w) is None
    assert names(w) == ["prepare", ("here", True), ("apply", "here"), ("account", "here")]


def test_the_account_waits_for_the_request_to_go_on_when_it_still_goes():
    async def go() -> None:
        w = Fake(live=True)
        assert Dispatch().run(w) is None
        assert names(w) == ["prepare", ("here", True), ("apply", "here")]  # changed now, accounted after
        await gone()
        assert names(w)[-1] == ("account", "here")

    asyncio.run(go())


def test_a_work_that_waits_runs_after_the_readings_in_flight():
    async def go() -> None:
        d = Dispatch()
        reading = asyncio.get_running_loop().create_future()
        d.readings["other"] = reading
        w = Fake(wait=True)
        pending = d.run(w)
        assert pending is not None
        task = asyncio.ensure_future(pending)
        await _tick()
        assert names(w) == ["prepare"]  # held until the reading is done
        reading.set_result(None)
        await task
        assert names(w)[-1] == ("account", "here")
        v = Fake()  # a work that does not wait is not held
        assert d.run(v) is None and names(v)[-1] == ("account", "here")

    asyncio.run(go())


@pytest.mark.parametrize("step", ["prepare", "here", "away", "apply"])
def test_every_failure_fails_open_once(step, caplog):
    w = Fake(size=LARGE if step == "away" else SMALL, raises=frozenset({step}))
    with caplog.at_level(logging.ERROR, logger="native_bridge"):
        pending = Dispatch().run(w)
        if pending is not None:
            asyncio.run(pending)
    failed = f"failed: {step} broke"
    assert names(w)[-2:] == [("apply", failed), ("account", failed)]
    assert [c for c in names(w) if c[0] == "account"] == [("account", failed)]  # one verdict
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "flow f1: rewrite failed, sending the original request" in errors[0].getMessage()
    assert errors[0].exc_info is not None  # the traceback is logged


def test_the_threshold_is_the_dispatchs(monkeypatch):
    monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", 10)
    w = Fake(size=10)
    pending = Dispatch().run(w)
    assert pending is not None  # now large: away
    asyncio.run(pending)
    assert "away" in names(w)


def test_the_worker_starts_when_first_needed_and_stops_on_close():
    d = Dispatch()
    assert d.offloader is None
    worker = d.worker
    assert d.worker is worker and d.offloader is worker
    d.close()
    assert d.offloader is None
