"""Bridging off the event loop (runtime/offload.py, chat_hop/jobs.py) and the cheap observe path (issue 11).

- observe mode decides and records what rewrite mode does, without writing a body;
- the planner hop's observations are taken from the pairs a rewrite decided (after the
  memo's cut) with the builder's own decisions: over an agent loop they add up to what
  deciding every whole history again gives;
- a large body is bridged in a worker process: mitmproxy gets an awaitable from the
  request hook, and the flow ends up exactly as the inline path leaves it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest
from mitmproxy import hooks
from mitmproxy.test import taddons, tflow
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.chat_hop.jobs import Job, bridge, observed
from native_bridge.core.memo.store import Memo
from native_bridge.core.pipeline import Config, rewrite
from native_bridge.runtime import META, dispatch, worker
from native_bridge.runtime.offload import Offloader
from steps import gone
from support.histories import DIALECT_PATHS
from support.histories.agent import Session
from support.histories.cascade import SEND_PATH, CascadeBodies

PATHS = DIALECT_PATHS
UA = "claude-cli/2.1.332 (external, cli)"


@pytest.mark.parametrize("dialect", list(PATHS))
@pytest.mark.parametrize("hint", [UA, None])
def test_observe_mode_decides_what_rewrite_mode_does_without_writing(dialect, hint):
    s = Session(dialect, parallel=4, seed=3)
    memo_a, memo_b = Memo(), Memo()
    for rounds in range(1, 9):
        raw = s.body(rounds)
        a = rewrite(raw, Config(), PATHS[dialect], memo_a, hint)
        b = rewrite(raw, Config(), PATHS[dialect], memo_b, hint, emit=False)
        assert b.body is None
        assert b.status == ("observed" if a.status == "rewritten" else a.status)
        assert (b.steps, b.summary(), b.notes) == (a.steps, a.summary(), a.notes)


@pytest.mark.parametrize("dialect", list(PATHS))
@pytest.mark.parametrize("hint", [UA, None])
def test_observations_of_the_fresh_pairs_add_up_to_the_whole_history(dialect, hint):
    """An agent loop through one memo: each turn hands over only what it decided, and all the
    turns together hand over exactly what deciding each whole history again would."""
    s = Session(dialect, parallel=1, seed=5)
    memo, config = Memo(), Config()
    handed: set = set()
    for rounds in range(1, 16):
        result = rewrite(s.body(rounds), config, PATHS[dialect], memo, hint, emit=False)
        whole = result.history
        assert whole is not None and result.fresh is not None
        fresh = set(observed(result, config.tool_kinds))
        full = set(observed(_without_fresh(result), config.tool_kinds))
        assert fresh <= full
        handed |= fresh
        assert handed == full, rounds
    assert memo.hits, "the memo never resumed: the test would prove nothing"


def _without_fresh(result):
    """The same result as a caller that decides the whole history sees it."""
    result.fresh, result.decisions = None, None
    return result


def test_decisions_made_for_fewer_kinds_are_not_reused():
    s = Session("chat", parallel=4, seed=3)
    result = rewrite(s.body(6), Config(kinds=frozenset({"view_file"})), PATHS["chat"], Memo(), UA)
    assert result.fresh is not None and result.decisions is None
    full = rewrite(s.body(6), Config(), PATHS["chat"], None, UA)
    assert set(observed(result, Config().tool_kinds)) == set(observed(full, Config().tool_kinds))


def test_the_worker_gives_what_the_inline_path_gives():
    s = Session("anthropic", parallel=4, seed=9)
    off, memo = Offloader(), Memo()  # the worker keeps a memo: so does the inline path here
    try:
        for emit in (True, False):
            for rounds in (3, 4, 5):
                job = Job(s.body(rounds), Config(), PATHS["anthropic"], UA, emit=emit, record=True)
                inline = bridge(job, memo)
                worker = asyncio.run(off.run(job))
                assert worker == inline
        assert off.pid is not None
    finally:
        off.close()
    assert off.pid is None


@pytest.fixture
def small_offload(monkeypatch):
    monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", 10_000)  # above a round (2-5 KB), below the bodies (14 KB and up)


def _addon(mode: str):
    hop = ChatHop()
    ctx = taddons.context(hop)
    tctx = ctx.__enter__()
    tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
    tctx.configure(hop, bridge_mode=mode)
    return hop, ctx


def _flow(raw: bytes):
    f = tflow.tflow()
    f.request.method, f.request.path = "POST", PATHS["chat"]
    f.request.headers["content-type"] = "application/json"
    f.request.headers["user-agent"] = UA
    f.request.content = raw
    return f


@pytest.mark.parametrize("mode", ["rewrite", "observe"])
def test_a_large_body_is_bridged_off_the_loop_with_the_same_result(small_offload, mode):
    s = Session("chat", parallel=1, seed=4)
    raws = [s.body(r) for r in (3, 4, 5)]
    assert all(len(r) >= dispatch.OFFLOAD_BYTES for r in raws)
    hop, ctx = _addon(mode)
    ref, ref_ctx = _addon(mode)
    try:
        for turn, raw in enumerate(raws):
            f, g = _flow(raw), _flow(raw)
            pending = hop.request(f)
            if turn and mode == "observe":
                # The worker handed its reading back (a light memo entry): the next turns of the
                # conversation are read here, their new part only.
                assert pending is None and hop.memo.light and hop.memo.hits == turn
            else:
                assert pending is not None, "a large body must be awaited, not bridged on the loop"
                assert META not in f.metadata  # nothing happened yet: the loop was free
                asyncio.run(pending)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(dispatch, "OFFLOAD_BYTES", 10**9)
                assert ref.request(g) is None  # inline
            assert f.metadata[META] == g.metadata[META]
            assert f.comment == g.comment and f.marked == g.marked
            assert f.request.raw_content == g.request.raw_content
            assert f.modified() == g.modified() == (f.metadata[META]["status"] == "rewritten")
            assert f.metadata[META]["status"] == ("rewritten" if mode == "rewrite" else "observed")
        # the observations came back from the worker and were handed to the planner hop
        seen = bridge(Job(raws[-1], Config(), PATHS["chat"], UA, emit=False, record=False), None).observations
        assert seen and all(hop.state.store.candidates(o.key) for o in seen)
    finally:
        for a, c in ((hop, ctx), (ref, ref_ctx)):
            a.done()
            c.__exit__(None, None, None)
    assert hop.state.dispatch.offloader is None


def test_a_failing_worker_fails_open(small_offload, monkeypatch):
    hop, ctx = _addon("rewrite")
    try:

        async def broken(self, job):
            raise RuntimeError("worker exploded")

        monkeypatch.setattr(Offloader, "run", broken)
        raw = Session("chat", 1, 4).body(3)
        f = _flow(raw)
        asyncio.run(hop.request(f))
        assert f.request.raw_content == raw and not f.modified()
        assert f.metadata[META]["status"] == "error"
    finally:
        hop.done()
        ctx.__exit__(None, None, None)


def test_offload_threshold_is_above_the_common_case():
    assert dispatch.OFFLOAD_BYTES >= 256 * 1024


def test_a_large_planner_body_is_corrected_off_the_loop_with_the_same_result(monkeypatch):
    """The planner hop: a SendUserCascadeMessage at or above the threshold is corrected in a
    thread; flow, metadata and ledger end as the inline path leaves them."""
    from mitmproxy.proxy import mode_specs
    from native_bridge.planner_hop.addon import PlannerHop
    from native_bridge.runtime.h2c import H2CListener
    from native_bridge.runtime.state import BridgeState

    spec = "reverse:http://127.0.0.1:42101@42100"
    src = CascadeBodies(3)
    message = src.message("cascade-1", 8)
    body = b"\0" + len(message).to_bytes(4, "big") + message

    def run(threshold: int):
        monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", threshold)
        state, h2c = BridgeState(), H2CListener()
        chat = ChatHop(state)  # declares the bridge option
        pb = PlannerHop(state, h2c)
        with taddons.context(state, h2c, chat, pb) as tctx:
            for addon in (state, chat, pb):
                tctx.master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(tctx.options.keys())))
            tctx.configure(pb, mode=["regular", spec], bridge_planner=[spec])
            f = tflow.tflow()
            f.client_conn.proxy_mode = mode_specs.ProxyMode.parse(spec)
            f.request.method, f.request.path = "POST", SEND_PATH
            f.request.headers.clear()
            f.request.headers["content-type"] = "application/grpc"
            f.request.raw_content = body
            pending = pb.request(f)
            if threshold <= len(body):
                assert pending is not None and META not in f.metadata
                asyncio.run(pending)
            else:
                assert pending is None
            return f.request.raw_content, f.metadata[META], f.comment, f.marked

    off, inline = run(1000), run(10**9)
    assert off == inline
    assert off[1]["status"] == "corrected" and off[0] != body


@pytest.mark.parametrize("ends", ["reply", "error"])
def test_observe_mode_sends_a_large_body_on_and_the_reply_waits_for_its_reading(small_offload, ends):
    """Observe mode with the state in memory: a large body goes upstream as it came while the
    worker reads it; the reply (or the error) waits for the reading, so mitmweb and a -w
    capture, which write the flow at its reply, see the verdict."""
    raw = Session("chat", 1, 4).body(5)
    hop, ctx = _addon("observe")
    ref = _flow(raw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dispatch, "OFFLOAD_BYTES", 10**9)
        assert hop.request(ref) is None  # inline, no loop: the reference verdict
    hop.state.store.close()
    hop.state.store = type(hop.state.store)()  # forget what the reference observed
    hop.memo.clear()  # and its reading: this body must be read in full

    async def run():
        f = _flow(raw)  # live and unanswered: on its way upstream
        assert hop.request(f) is None, "the request must not wait for the reading"
        await gone()  # gone upstream: a reply can only come after this
        assert f.request.raw_content == raw and META not in f.metadata and len(hop.readings()) == 1
        if ends == "reply":
            f.response = tflow.tresp()
            waiting = hop.responseheaders(f)
        else:
            f.error = tflow.terr()
            waiting = hop.error(f)
        assert waiting is not None, "the reply must wait for the reading"
        await waiting
        assert not hop.readings()
        return f

    try:
        f = asyncio.run(run())
        assert f.metadata[META] == ref.metadata[META] and f.metadata[META]["status"] == "observed"
        assert f.comment == ref.comment and f.request.raw_content == raw and not f.modified()
        seen = bridge(Job(raw, Config(), PATHS["chat"], UA, emit=False, record=False), None).observations
        assert seen and all(hop.state.store.candidates(o.key) for o in seen)
    finally:
        hop.done()
        ctx.__exit__(None, None, None)


def test_headless_mitmdump_sends_the_reply_on_while_the_worker_reads(small_offload, tmp_path):
    """mitmdump without a flow file (or bodies printed) shows no flow's verdict: a large first
    sight's reply goes on while the worker still reads it (the reading ends by itself: its verdict
    and observations follow, a planner call waits for it). With -w the reply waits, so the flow
    written at its reply holds the verdict."""
    from mitmproxy.options import Options
    from mitmproxy.tools.dump import DumpMaster
    from native_bridge.runtime.state import BridgeState

    bodies = [Session("chat", 1, seed).body(5) for seed in (4, 5)]  # two first sights

    async def run():
        master = DumpMaster(Options(), with_termlog=False)
        state = BridgeState()
        nb = ChatHop(state)
        master.addons.add(state, nb)
        for addon in (state, nb):
            master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(master.options.keys())))
        master.options.update(bridge_mode="observe")
        try:
            got = []
            for raw, option in zip(bodies, ({}, {"save_stream_file": str(tmp_path / "out.flows")}), strict=True):
                master.options.update(**option)
                f = _flow(raw)
                assert nb.request(f) is None
                await gone()
                assert len(nb.readings()) == 1  # in the worker
                f.response = tflow.tresp()
                waiting = nb.responseheaders(f)
                got.append(waiting is not None)
                if waiting is not None:
                    assert nb.readings(), "the reply waits while the reading runs"
                    await waiting
                await asyncio.gather(*nb.readings())
                assert f.metadata[META]["status"] == "observed" and f.comment.startswith("bridge: observed")
            assert got == [False, True]
            for raw in bodies:  # the readings' observations, stored either way
                seen = bridge(Job(raw, Config(), PATHS["chat"], UA, emit=False, record=False), None).observations
                assert seen and all(state.store.candidates(o.key) for o in seen)
        finally:
            nb.done()
            state.done()

    asyncio.run(run())


def test_observe_mode_reads_the_new_part_of_a_large_conversation_in_place(small_offload):
    """After the worker's first reading, a large conversation's next turn goes upstream as it
    came and its new part is read on the loop right after (no worker, nothing to wait for)."""
    s = Session("chat", 1, 4)
    first, second = s.body(5), s.body(6)
    hop, ctx = _addon("observe")
    ref, ref_ctx = _addon("observe")

    async def run():
        f = _flow(first)
        assert hop.request(f) is None
        await gone()  # gone upstream
        assert len(hop.readings()) == 1  # a first sight: the worker reads it
        f.response = tflow.tresp()
        await hop.responseheaders(f)
        g = _flow(second)
        assert hop.request(g) is None
        assert META not in g.metadata  # read once the request has gone
        await gone()
        assert not hop.readings()  # read on the loop, at once
        return f, g

    try:
        f, g = asyncio.run(run())
        assert hop.memo.hits == 1 and hop.state.dispatch.offloader is not None
        for flow, raw in ((f, first), (g, second)):
            again = _flow(raw)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(dispatch, "OFFLOAD_BYTES", 10**9)
                assert ref.request(again) is None
            assert flow.metadata[META] == again.metadata[META] and flow.comment == again.comment
            assert flow.request.raw_content == raw
        assert g.metadata[META]["status"] == "observed" and g.metadata[META]["steps"] > 0
    finally:
        hop.done()
        ref.done()
        ctx.__exit__(None, None, None)
        ref_ctx.__exit__(None, None, None)


def test_headless_a_turn_sent_while_the_last_is_read_waits_for_it_and_reads_its_new_part(small_offload):
    """Headless, a large first sight's reply goes on while the worker reads it, so the agent's next
    turn can come first: it goes upstream at once, then waits for that reading and reads only its
    new part (the memo entry the reading left), not the whole history a second time beside it."""
    from mitmproxy.options import Options
    from mitmproxy.tools.dump import DumpMaster
    from native_bridge.runtime.state import BridgeState

    s = Session("chat", 1, 4)
    first, second = s.body(5), s.body(6)
    ref, ref_ctx = _addon("observe")

    async def run():
        master = DumpMaster(Options(), with_termlog=False)
        state = BridgeState()
        nb = ChatHop(state)
        master.addons.add(state, nb)
        for addon in (state, nb):
            master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(master.options.keys())))
        master.options.update(bridge_mode="observe")
        try:
            f = _flow(first)
            assert nb.request(f) is None
            await gone()
            f.response = tflow.tresp()
            assert nb.responseheaders(f) is None  # headless: the reply goes on
            g = _flow(second)
            assert nb.request(g) is None  # the next turn goes upstream at once
            await gone()
            assert len(nb.readings()) == 2, "the first reading is still in flight"
            await asyncio.gather(*nb.readings())
            return f, g, nb.memo.hits
        finally:
            nb.done()
            state.done()

    try:
        f, g, hits = asyncio.run(run())
        assert hits == 1, "the second turn resumed from the first's memo entry"
        for flow, raw in ((f, first), (g, second)):
            again = _flow(raw)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(dispatch, "OFFLOAD_BYTES", 10**9)
                assert ref.request(again) is None
            assert flow.metadata[META] == again.metadata[META] and flow.comment == again.comment
    finally:
        ref.done()
        ref_ctx.__exit__(None, None, None)


def test_a_large_body_whose_new_part_is_large_is_read_in_the_worker(small_offload):
    """A body that goes on from a remembered conversation but adds much (a fork from early on,
    a client back after many turns) is not read in place: its new part alone is a large body."""
    s = Session("chat", 1, 4)
    hop, ctx = _addon("observe")
    try:
        first = _flow(s.body(2))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dispatch, "OFFLOAD_BYTES", 10**9)
            assert hop.request(first) is None  # read inline: the memo holds it
        far = s.body(12)
        kept = hop.memo.continues(far)
        assert kept and len(far) - kept >= dispatch.OFFLOAD_BYTES
        pending = hop.request(_flow(far))
        assert pending is not None, "a large new part must be read off the loop"
        asyncio.run(pending)
        near = s.body(13)
        assert 0 < len(near) - hop.memo.continues(near) < dispatch.OFFLOAD_BYTES
        assert hop.request(_flow(near)) is None  # its new part is small: read here
    finally:
        hop.done()
        ctx.__exit__(None, None, None)


def test_the_worker_hands_its_heap_back_only_once_idle(monkeypatch) -> None:
    """After a large job the worker waits for the next one before it trims its heap: an agent's
    next turn, coming within the idle time, finds the heap as the last one left it (trimmed, it
    would pay for its pages again); a worker left idle that long hands the heap back."""
    trims: list[float] = []
    monkeypatch.setattr(worker, "trim", lambda: trims.append(time.monotonic()))
    r, w = os.pipe()
    try:
        os.write(w, b"j")  # the next job is there: no trim, no wait, still owed
        started = time.monotonic()
        assert not worker.idle_trim(r, 5.0)
        assert trims == [] and time.monotonic() - started < 1.0
        os.read(r, 1)
        started = time.monotonic()
        assert worker.idle_trim(r, 0.2)  # nothing comes: trimmed once the idle time is up
        assert len(trims) == 1 and trims[0] - started >= 0.19
    finally:
        os.close(r)
        os.close(w)
    started = time.monotonic()
    assert worker.idle_trim(r, 5.0)  # it cannot wait on this pipe (closed): trimmed at once
    assert len(trims) == 2 and time.monotonic() - started < 1.0


def test_the_worker_keeps_its_heap_for_the_conversations_its_memo_keeps(monkeypatch) -> None:
    """Only a job whose conversation the worker's memo keeps (rewriting or recording, up to
    WORKER_MEMO_MAX_BODY) comes back to reuse its heap; a light one (observe mode: the proxy
    keeps the conversation) or a larger one is trimmed after at once (worker.serve)."""
    from native_bridge.runtime import offload

    body = Session("chat", 1, seed=1).body(3)
    job = Job(body, Config(), DIALECT_PATHS["chat"], None, emit=True, record=False)
    light = Job(body, Config(), DIALECT_PATHS["chat"], None, emit=False, record=False)
    assert offload.keeps(job) and not offload.keeps(light)
    monkeypatch.setattr(offload, "WORKER_MEMO_MAX_BODY", len(body) - 1)
    assert not offload.keeps(job)


_TRIM_TARGET = """
import os
import native_bridge.runtime.worker as w

w._TRIM_IDLE = 0.5


def _trim():
    with open(os.environ["TRIM_LOG"], "a") as f:
        f.write("trim\\n")


w.trim = _trim


def keeps(job):
    return job[0] == "keep"


def render(job):
    return len(job[1])
"""


def test_the_worker_process_trims_after_what_it_keeps_only_when_idle(tmp_path, monkeypatch) -> None:
    """The real worker process (worker.serve) with a target that logs its trims and an idle time
    of 0.5 s: a large job it keeps is not trimmed after, nor when a small job comes next; once
    idle it is, once. A large job it does not keep is trimmed right after."""
    (tmp_path / "trim_target.py").write_text(_TRIM_TARGET)
    log = tmp_path / "trims"
    monkeypatch.setenv("TRIM_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))

    def trims() -> int:
        return log.read_text().count("trim") if log.exists() else 0

    def render(job: tuple[str, bytes]) -> int:  # named as the worker imports it; not imported here,
        raise AssertionError("rendered in the test process")  # where it would patch this worker module

    render.__module__, render.__qualname__ = "trim_target", "render"
    renderer = worker.WorkerProcess(render)
    try:
        big = b"x" * (2 << 20)
        assert renderer.render(("keep", big)) == len(big)
        assert renderer.render(("keep", b"small")) == 5  # came within the idle time
        assert trims() == 0
        deadline = time.monotonic() + 10
        while trims() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert trims() == 1  # handed back once idle, though the last job was small
        time.sleep(0.7)
        assert trims() == 1  # and only once
        assert renderer.render(("drop", big)) == len(big)
        deadline = time.monotonic() + 5
        while trims() == 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert trims() == 2
    finally:
        renderer.close()
