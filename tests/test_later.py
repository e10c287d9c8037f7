"""What waits until a request has gone upstream (runtime/later.py), and what never does.

- both hops: the body a request goes upstream with is set in the hook; the annotations
  (comment, metadata, backup), the log line and the record come right after, before any
  reply can be read;
- observe mode with the state in memory: the history is read after the request went on
  (the body goes as it came; this process's planner hop reads on the same loop, later);
- with a shared state file too, but a record that the reading has begun is written before the
  request goes, since another proxy may serve the gateway's planner call (it waits for the end,
  which comes with the observations);
- a flow that goes nowhere (a capture read back, a reply set by server replay) is
  annotated in the hook, as mitmproxy writes it out right after.
"""

from __future__ import annotations

import asyncio
import logging

import orjson
import pytest
from mitmproxy import flow, hooks
from mitmproxy.test import taddons, tflow, tutils
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.chat_hop.jobs import Job, bridge
from native_bridge.runtime import META, dispatch
from native_bridge.runtime import store as store_module
from native_bridge.runtime.later import after_forward, keeps_backups
from native_bridge.runtime.state import BridgeState
from native_bridge.runtime.store import SQLiteStore
from steps import gone
from support.histories import DIALECT_PATHS
from support.histories.agent import Session
from test_planner_addon import SPEC, fixture, planner, planner_flow  # noqa: F401 (fixture)

UA = "claude-cli/2.1.332 (external, cli)"
PATH = DIALECT_PATHS["chat"]


@pytest.fixture
def chat_hop(request, tmp_path):
    """The chat addon in ``mode`` with its state in memory or (``shared``) in a file."""
    mode, shared = request.param
    state = BridgeState()
    hop = ChatHop(state)
    with taddons.context(state, hop) as tctx:
        for addon in (state, hop):
            tctx.master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode=mode)
        if shared:
            tctx.configure(state, bridge_state=str(tmp_path / "state.sqlite"))
        yield hop
        hop.done()
        state.done()  # the worker process and the store: the state owns them


def chat_flow(raw: bytes, live: bool = True):
    f = tflow.tflow(live=live)
    f.request.method, f.request.path = "POST", PATH
    f.request.headers["content-type"] = "application/json"
    f.request.headers["user-agent"] = UA
    f.request.content = raw
    return f


def body_with_results() -> tuple[bytes, list]:
    raw = Session("chat", parallel=1, seed=4).body(3)
    seen = bridge(Job(raw, ChatHop().config, PATH, UA, emit=False, record=False), None).observations
    assert seen, "the body must hold results the chat hop observes"
    return raw, seen


def stored(hop: ChatHop, seen: list) -> bool:
    return all(hop.state.store.candidates(o.key) for o in seen)


def test_work_after_forwarding_runs_after_the_step_in_which_mitmdump_writes_the_request():
    """mitmdump writes a request in the step after its hook (its hook task waits for the
    connection's lock, freed at the end of the hook's step): the work comes after that write,
    and before the next step's select could read a reply (tests/e2e/test_after_forward.py)."""

    async def go() -> list[str]:
        loop = asyncio.get_running_loop()
        done: list[str] = []
        after_forward(lambda: done.append("work"))  # in the hook
        loop.call_soon(lambda: done.append("write"))  # the hook task, woken as the lock is freed
        await gone()
        return done

    assert asyncio.run(go()) == ["write", "work"]


@pytest.mark.parametrize("chat_hop", [("observe", False)], indirect=True)
def test_observe_mode_with_the_state_in_memory_reads_after_forwarding(chat_hop):
    raw, seen = body_with_results()
    f = chat_flow(raw)

    async def run():
        assert chat_hop.request(f) is None
        # The hook returned with nothing read: the request goes upstream as it came, now.
        assert META not in f.metadata and not stored(chat_hop, seen)
        assert f.request.raw_content == raw
        await gone()  # written out: before any reply could be read
        assert f.metadata[META]["status"] == "observed" and stored(chat_hop, seen)

    asyncio.run(run())
    inline = chat_flow(raw)
    ChatHop.request(chat_hop, inline)  # no running loop: all of it in the hook
    assert inline.metadata[META] == f.metadata[META] and inline.comment == f.comment


@pytest.fixture
def recording(request, tmp_path):
    """The chat addon in ``request.param`` mode with records on: the addon and its records directory."""
    state = BridgeState()
    hop = ChatHop(state)
    with taddons.context(state, hop) as tctx:
        for addon in (state, hop):
            tctx.master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode=request.param, bridge_records=str(tmp_path / "records"))
        yield hop, tmp_path / "records"
        hop.done()
        state.done()


def _written(hop: ChatHop, records) -> list[str]:
    assert hop.recorder is not None and hop.recorder.flush(timeout=10)
    return [orjson.loads(p.read_bytes())["flow_id"] for p in sorted(records.glob("*.json"))]


@pytest.mark.parametrize("recording", ["observe", "rewrite"], indirect=True)
@pytest.mark.parametrize("end", ["response", "error"])
def test_a_record_is_rendered_once_the_reply_has_gone_to_the_client(recording, end):
    """The record of a live flow waits until its turn is over: its reply written to the client
    (or the flow failed). Rendering it meanwhile, in the worker process on the other core, took
    CPU from the turn it describes (issue 40: records on ÷ off 1.43x in the 200 KB loop)."""
    hop, records = recording
    raw, _ = body_with_results()
    f = chat_flow(raw)

    async def run():
        hop.request(f)
        await gone()
        assert f.metadata[META]["status"] in ("observed", "rewritten")  # the verdict is made
        assert _written(hop, records) == [], "not while the request is upstream"
        if end == "response":
            f.response = tutils.tresp()
            hop.responseheaders(f)
            hop.response(f)
        else:
            f.error = flow.Error("connection closed")
            assert hop.error(f) is None
        assert _written(hop, records) == [], "not before the reply is written out"
        await gone()
        assert _written(hop, records) == [f.id]

    asyncio.run(run())


@pytest.mark.parametrize("recording", ["observe"], indirect=True)
def test_a_record_still_held_at_shutdown_is_written(recording):
    hop, records = recording
    raw, _ = body_with_results()
    f = chat_flow(raw)

    async def run():
        hop.request(f)
        await gone()

    asyncio.run(run())
    recorder = hop.recorder
    assert recorder is not None and _written(hop, records) == []
    hop.done()
    assert [orjson.loads(p.read_bytes())["flow_id"] for p in records.glob("*.json")] == [f.id]
    assert recorder.lost == 0


@pytest.mark.parametrize("chat_hop", [("observe", True)], indirect=True)
def test_a_shared_state_file_says_a_reading_began_before_the_request_goes(chat_hop):
    """Another process's planner hop (a second store on the same file) learns of the reading
    before the request goes upstream, and of its observations and its end right after."""
    raw, seen = body_with_results()
    f = chat_flow(raw)
    other = SQLiteStore(chat_hop.state.store.path)

    async def run():
        assert chat_hop.request(f) is None
        assert f.request.raw_content == raw and META not in f.metadata
        assert len(other.unfinished()) == 1, "begun: a planner call now waits for it"
        assert not any(other.candidates(o.key) for o in seen)
        await gone()
        assert f.metadata[META]["status"] == "observed"
        assert other.unfinished() == {} and all(other.candidates(o.key) for o in seen)

    try:
        asyncio.run(run())
    finally:
        other.close()


def _turns(rounds: range) -> list[bytes]:
    s = Session("chat", parallel=2, seed=8)
    return [s.body(n) for n in rounds]


@pytest.mark.parametrize("chat_hop", [("observe", True)], indirect=True)
def test_with_a_shared_state_file_resumed_turns_are_read_after_the_request_went(chat_hop):
    """Resumed turns: nothing is read in the hook (the reading is only begun); the observations,
    the verdict and the memo's new entry come once the request has gone, and give what one
    reading in the hook gives (the in-memory hop below reads all of it at once)."""
    memo = chat_hop.memo
    state = BridgeState()
    alone = ChatHop(state)  # no running loop: reads in the hook, its own memo; the verdict to agree with
    with taddons.context(state, alone) as tctx:
        for addon in (state, alone):
            tctx.master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(tctx.options.keys())))
        for raw in _turns(range(2, 9)):
            f, g = chat_flow(raw), chat_flow(raw)
            alone.request(g)
            hits = memo.hits
            seen = bridge(Job(raw, chat_hop.config, PATH, UA, emit=False, record=False), None).observations

            async def run(f=f, seen=seen, hits=hits):
                assert chat_hop.request(f) is None
                assert META not in f.metadata and memo.hits == hits and chat_hop.state.store.unfinished()
                await gone()
                assert stored(chat_hop, seen) and not chat_hop.state.store.unfinished()

            asyncio.run(run())
            assert f.metadata[META] == g.metadata[META] and f.comment == g.comment
            assert f.request.raw_content == raw
        alone.done()
        state.done()
    assert memo.hits >= 5 and memo.errors == 0


@pytest.mark.parametrize("chat_hop", [("observe", True)], indirect=True)
def test_a_reading_that_fails_after_the_request_went_fails_open_and_ends(chat_hop, monkeypatch, caplog):
    from native_bridge.chat_hop import jobs

    raws = _turns(range(2, 4))
    ChatHop.request(chat_hop, chat_flow(raws[0]))  # no loop: read in the hook, remembered
    monkeypatch.setattr(jobs, "outcome", lambda *a, **k: 1 / 0)  # the reading breaks
    caplog.set_level(logging.ERROR, logger="native_bridge")  # whatever an earlier test left set
    f = chat_flow(raws[1])

    async def run():
        assert chat_hop.request(f) is None and chat_hop.state.store.unfinished()
        await gone()

    asyncio.run(run())
    assert f.metadata[META]["status"] == "error" and f.request.raw_content == raws[1]
    assert "ZeroDivisionError" in caplog.text
    assert not chat_hop.state.store.unfinished(), "its end is written: no planner hop waits for it"


@pytest.mark.parametrize("chat_hop", [("rewrite", False)], indirect=True)
def test_rewrite_mode_sends_the_new_body_before_the_memo_and_the_observations(chat_hop):
    """A resumed turn in rewrite mode, the state in memory: the new body is set in the hook; the
    memo's new entry and the observations come once the request has gone (this process's planner
    hop reads them on the same loop, later), and agree with a hop that does all of it at once."""
    memo = chat_hop.memo
    state = BridgeState()
    alone = ChatHop(state)  # no running loop: everything in the hook
    with taddons.context(state, alone) as tctx:
        for addon in (state, alone):
            tctx.master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(alone, bridge_mode="rewrite")
        for raw in _turns(range(2, 9)):
            f, g = chat_flow(raw), chat_flow(raw)
            alone.request(g)
            seen = bridge(Job(raw, chat_hop.config, PATH, UA, emit=False, record=False), None).observations
            before = memo.newest()

            async def run(f=f, g=g, seen=seen, before=before, raw=raw):
                assert chat_hop.request(f) is None
                assert f.request.raw_content == g.request.raw_content != raw  # what goes upstream, now
                assert memo.newest() is before and not stored(chat_hop, seen), "the rest waits"
                await gone()
                assert memo.newest() is not before and stored(chat_hop, seen)

            asyncio.run(run())
            assert f.metadata[META] == g.metadata[META] and f.comment == g.comment
        alone.done()
        state.done()
    assert memo.hits >= 5 and memo.errors == 0


@pytest.mark.parametrize("chat_hop", [("rewrite", False)], indirect=True)
def test_a_rewrite_whose_rest_fails_after_the_request_went_keeps_its_verdict(chat_hop, monkeypatch, caplog):
    from native_bridge.chat_hop import jobs

    raw = _turns(range(3, 4))[0]
    inline = chat_flow(raw)
    ChatHop.request(chat_hop, inline)  # no loop: all in the hook

    def broken(*args, **kwargs):
        raise RuntimeError("observing broke")

    monkeypatch.setattr(jobs, "observed", broken)  # the rest: observations first
    caplog.set_level(logging.ERROR, logger="native_bridge")
    f = chat_flow(raw)

    async def run():
        assert chat_hop.request(f) is None
        await gone()

    asyncio.run(run())
    assert f.request.raw_content == inline.request.raw_content != raw  # the rewritten body went
    assert f.metadata[META] == inline.metadata[META] and f.metadata[META]["status"] == "rewritten"
    assert "reading failed after the request went upstream" in caplog.text and "observing broke" in caplog.text


@pytest.mark.parametrize("chat_hop", [("rewrite", False)], indirect=True)
def test_rewrite_mode_sets_the_body_in_the_hook_and_annotates_after(chat_hop):
    raw, _ = body_with_results()
    f = chat_flow(raw)

    async def run():
        length = f.request.headers["content-length"]
        assert chat_hop.request(f) is None
        assert f.request.raw_content != raw  # what goes upstream is decided now
        assert META not in f.metadata and not f.modified()  # the backup (0.2 ms) waits too
        sent = f.request.raw_content, f.request.headers["content-length"]
        await gone()
        assert f.metadata[META]["status"] == "rewritten" and f.modified()
        assert (f.request.raw_content, f.request.headers["content-length"]) == sent
        f.revert()  # mitmweb's revert: the request as it came, its length header included
        assert (f.request.raw_content, f.request.headers["content-length"]) == (raw, length)

    asyncio.run(run())


@pytest.mark.parametrize("chat_hop", [("observe", False), ("rewrite", False)], indirect=True)
def test_a_capture_read_back_is_annotated_in_the_hook(chat_hop):
    raw, _ = body_with_results()
    replayed = chat_flow(raw, live=False)

    async def run():
        chat_hop.request(replayed)
        assert META in replayed.metadata, "mitmproxy writes the flow out before the next loop step"

    asyncio.run(run())


def test_a_planner_flow_answered_before_the_hook_is_annotated_in_the_hook(planner):  # noqa: F811
    pb, _ = planner
    f = planner_flow(fixture("grpc-turn1.bin"))  # a reply already set, as server replay sets it

    async def run():
        pb.request(f)
        assert f.metadata[META]["status"] == "corrected" and f.modified()

    asyncio.run(run())


def test_the_planner_hop_corrects_in_the_hook_and_annotates_after(planner):  # noqa: F811
    pb, _ = planner
    body = fixture("grpc-turn1.bin")
    f = planner_flow(body)
    f.response = None  # live, on its way upstream

    async def run():
        pb.request(f)
        assert f.request.raw_content != body and f.request.headers["x-native-bridge"] == "corrected"
        assert META not in f.metadata and not f.modified()
        await gone()
        assert f.metadata[META]["status"] == "corrected" and f.marked
        # The backup is the request as the gateway sent it, without the bridge's header.
        f.revert()
        assert f.request.raw_content == body and "x-native-bridge" not in f.request.headers

    asyncio.run(run())


def test_the_planner_hop_waits_for_a_chat_request_still_being_read(planner, monkeypatch):  # noqa: F811
    """Observe mode reads a large chat request in the worker while it goes upstream; the gateway
    may call the language server before that reading ends. The planner hop waits for it, so the
    evidence in it counts: npm test's exit 1 in the fixtures (Claude Code's is_error and "Exit
    code 1"), which the gateway sent as exit 0."""

    pb, tctx = planner
    chat = tctx.master.addons.get("chathop")  # the hops share the state, not each other
    monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", 1000)
    chat_raw = fixture("chat-turn1.json")
    assert len(chat_raw) >= 1000

    async def run():
        f = chat_flow(chat_raw)
        f.request.path = "/v1/messages"
        assert chat.request(f) is None
        await gone()  # gone upstream: the gateway's planner call can only come after this
        assert chat.readings()
        g = planner_flow(fixture("grpc-turn1.bin"))
        g.response = None  # live, on its way upstream
        waiting = pb.request(g)
        assert waiting is not None and META not in g.metadata, "the correction must wait for the reading"
        await waiting
        assert f.metadata[META]["status"] == "observed" and not chat.readings()
        return g

    try:
        g = asyncio.run(run())
    finally:
        chat.state.dispatch.close()  # the worker process (the shared state's)
    exit_changes = [c for c in g.metadata[META]["change_list"] if c["action"] == "exit_code"]
    assert exit_changes and all(c["reason"].startswith("exit_code 0 -> 1") for c in exit_changes), exit_changes


@pytest.mark.parametrize("ends", [True, False], ids=["it-ends", "its-process-dies"])
def test_the_planner_hop_waits_for_a_reading_another_process_began(planner, tmp_path, monkeypatch, ends):  # noqa: F811
    """With a shared state file the gateway's planner call may come through this proxy while
    another proxy's chat hop is still reading the request (it went upstream first). The planner hop
    waits until that reading has ended, so its evidence counts: npm test's exit 1, which with the
    client named only the chat request states. A reading whose process died ends when its time is
    up: the correction then goes on without it (no exit code stated)."""
    pb, tctx = planner
    path = str(tmp_path / "state.sqlite")
    tctx.configure(pb.state, bridge_state=path)
    tctx.configure(pb, bridge_planner_client="claude-code")
    monkeypatch.setattr(store_module, "reading_bound", lambda size: 0.3)
    other = SQLiteStore(path)  # the other proxy's
    chat_raw = fixture("chat-turn1.json")
    seen = bridge(Job(chat_raw, ChatHop().config, "/v1/messages", UA, emit=False, record=False), None).observations

    async def run():
        token = other.begin(len(chat_raw))
        g = planner_flow(fixture("grpc-turn1.bin"))
        g.response = None  # live, on its way upstream
        waiting = pb.request(g)
        assert waiting is not None and META not in g.metadata, "the correction must wait for the reading"
        task = asyncio.ensure_future(waiting)
        await asyncio.sleep(0.05)
        assert not task.done(), "still waiting"
        if ends:
            other.observe(seen, ended=token)
        await asyncio.wait_for(task, 5)
        return g

    try:
        g = asyncio.run(run())
    finally:
        other.close()
    codes = [c["reason"] for c in g.metadata[META]["change_list"] if c["action"] == "exit_code"]
    if ends:
        assert codes and all(r.startswith("exit_code 0 -> 1") for r in codes), codes
    else:
        assert codes and not any(r.startswith("exit_code 0 -> 1") for r in codes), codes


def test_headless_mitmdump_backs_up_a_rewritten_flow_only_when_a_flow_file_keeps_it(tmp_path):
    """mitmdump without -w drops each flow when it ends: no backup (flow.get_state(), about 0.2 ms)
    is made for no one. With a flow file (replay_check.py reads the backup), bodies printed
    (flow_detail 3: the bridge's views read the original from it), mitmweb or the console (they
    revert to it), the flow is backed up as it came."""
    from mitmproxy.options import Options
    from mitmproxy.tools.dump import DumpMaster
    from mitmproxy.tools.web.master import WebMaster

    raw, _ = body_with_results()

    async def run():
        master = DumpMaster(Options(), with_termlog=False)  # its dumper: flow_detail
        state = BridgeState()
        hop = ChatHop(state)
        master.addons.add(state, hop)
        for addon in (state, hop):
            master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(master.options.keys())))
        master.options.update(bridge_mode="rewrite")
        try:
            f = chat_flow(raw)
            assert hop.request(f) is None
            await gone()
            assert META not in f.metadata  # headless, state in this process: the verdict follows the reply
            f.response = tflow.tresp()
            hop.response(f)
            await asyncio.sleep(dispatch.AFTER_REPLY * 3)
            assert f.metadata[META]["status"] == "rewritten" and f._backup is None
            for option in ({"flow_detail": 3}, {"flow_detail": 1, "save_stream_file": str(tmp_path / "out.flows")}):
                master.options.update(**option)
                f = chat_flow(raw)
                assert hop.request(f) is None
                await gone()
                assert f.metadata[META]["status"] == "rewritten" and f.modified(), option
                f.revert()
                assert f.request.content == raw
        finally:
            hop.done()
            state.done()
        assert keeps_backups(WebMaster(Options(), with_termlog=False), Options())

    asyncio.run(run())
