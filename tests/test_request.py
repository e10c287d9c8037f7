"""A request owns its state (runtime/dispatch.Request, chat_hop/request.py, chat_hop/websocket.py,
planner_hop/addon.py): each hop's request moves through the named stages, forward only, as the
dispatch and the hooks say what happened to it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mitmproxy import http
from mitmproxy.test import tflow
from native_bridge.chat_hop.addon import ChatHop, DefaultFilter, Tee
from native_bridge.chat_hop.request import ChatRequest, ChatSettings
from native_bridge.core.memo.store import Memo
from native_bridge.runtime import META
from native_bridge.runtime.dispatch import OFFLOAD_BYTES, ONE_WRITE_BYTES, Dispatch, Request, Stage, StageError
from native_bridge.runtime.state import BridgeState
from steps import gone
from support.histories.agent import Session

UA = "claude-cli/2.1.332 (external, cli)"

BODY = json.dumps(
    {
        "model": "m",
        "messages": [
            {"role": "user", "content": "list"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        ],
    }
).encode()


class Walk(Request[str]):
    """A request that reads "read" on the loop and logs every stage it reaches."""

    def __init__(self) -> None:
        super().__init__(tflow.tflow(), "flow f1")
        self.seen: list[Stage] = []

    def move(self, to: Stage, *came_from: Stage) -> None:
        super().move(to, *came_from)
        self.seen.append(to)

    def prepare(self) -> str | None:
        self.size = 10
        self.move(Stage.READY, Stage.SELECTED)
        return None

    def fresh(self) -> int:
        return self.size

    def here(self, whole: bool) -> str | None:
        return "read"

    async def away(self, dispatch: Dispatch) -> str:
        return "away"

    def failed(self, e: Exception) -> str:
        return f"failed: {e}"

    def apply(self) -> None:
        self.move(Stage.APPLIED, Stage.DECIDED)

    def account(self) -> None:
        self.move(Stage.ACCOUNTED, Stage.APPLIED)


def test_the_dispatch_moves_a_request_through_its_stages_in_order() -> None:
    w = Walk()
    assert w.stage is Stage.SELECTED
    assert Dispatch().run(w) is None
    assert w.seen == [Stage.READY, Stage.DECIDED, Stage.APPLIED, Stage.ACCOUNTED]
    assert w.result == "read"


@pytest.mark.parametrize("step", ["apply", "account"])
def test_a_move_from_the_wrong_stage_is_refused(step: str) -> None:
    w = Walk()
    with pytest.raises(StageError, match=f"flow f1: cannot be {'applied' if step == 'apply' else 'accounted'}"):
        getattr(w, step)()
    assert w.stage is Stage.SELECTED


def test_a_failed_apply_decides_again_with_the_fail_open_result() -> None:
    w = Walk()
    w.move(Stage.READY, Stage.SELECTED)
    w.decided("read")
    w.decided("failed: apply broke")  # the dispatch's fail-open after a failed apply
    assert w.stage is Stage.DECIDED and w.result == "failed: apply broke"
    w.apply()
    with pytest.raises(StageError):
        w.decided("read")  # once applied, its result stands


def chat_request(
    body: bytes, emit: bool = False, max_body: int | None = None, settings: ChatSettings | None = None
) -> ChatRequest:
    f = tflow.tflow()
    f.request.method, f.request.path = "POST", "/v1/chat/completions"
    f.request.headers["content-type"] = "application/json"
    f.request.content = body
    state = BridgeState()
    if max_body is not None:
        state.max_body = max_body
    return ChatRequest(f, settings or ChatSettings(emit=emit), state)


@pytest.mark.parametrize("emit", [False, True])
def test_a_chat_request_ends_accounted_holding_its_result(emit: bool) -> None:
    r = chat_request(BODY, emit=emit)
    assert Dispatch().run(r) is None
    assert r.stage is Stage.ACCOUNTED and r.result is not None
    assert r.result.status == ("rewritten" if emit else "observed")
    assert r.flow.metadata[META]["status"] == r.result.status
    assert (r.as_came is not None) == emit  # the request as it came, kept for its backup


@pytest.mark.parametrize(
    ("emit", "verdicts_at_reply", "shared", "after_reply"),
    [
        (False, False, False, True),  # observe, headless mitmdump, state in this process
        (False, True, False, False),  # a flow view (mitmweb, -w) shows its verdict at the reply
        (False, False, True, False),  # a planner hop of another process waits for its reading
        (True, False, False, True),  # rewrite: the new body goes now, the rest of the reading after
        (True, True, False, False),
        (True, False, True, False),
    ],
)
def test_a_reading_waits_for_the_reply_only_when_nothing_waits_for_it(
    emit: bool, verdicts_at_reply: bool, shared: bool, after_reply: bool, tmp_path
) -> None:
    from native_bridge.runtime.store import SQLiteStore

    settings = ChatSettings(emit=emit, verdicts_at_reply=verdicts_at_reply)
    r = chat_request(BODY, settings=settings)
    if shared:
        r.state.store = SQLiteStore(str(tmp_path / "state.db"))
    r.flow.live = True
    r = ChatRequest(r.flow, settings, r.state)
    assert r.prepare() is None and r.after_reply is after_reply
    if shared:
        r.state.store.close()


def test_a_body_read_off_the_loop_does_not_wait_for_the_reply() -> None:
    settings = ChatSettings(verdicts_at_reply=False)
    small, large = chat_request(BODY, settings=settings), chat_request(BODY + b" " * OFFLOAD_BYTES, settings=settings)
    for r in (small, large):
        r.flow.live = True
        r = ChatRequest(r.flow, settings, r.state)
        assert r.prepare() is None and r.after_reply is (r.size < OFFLOAD_BYTES)


class CountingRemote:
    """A store on a server, as the chat hop sees it: what it was asked to write, in order."""

    shared = remote = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def begin(self, size: int) -> int:
        self.calls.append(("begin", size))
        return 7

    def observe(self, observations: list[Any], ended: int = 0) -> None:
        self.calls.append(("observe", ended))

    def close(self) -> None:
        pass


def test_with_a_store_on_a_server_a_small_new_part_is_read_before_the_request_goes_in_one_write() -> None:
    # Two round trips a turn (the reading's begin from the hook, its end after it) cost more than
    # reading a resumed turn's new part before the request goes: then its observations are one
    # write, sent from the hook (before the gateway's planner call can ask for them).
    settings = ChatSettings(verdicts_at_reply=False)
    session = Session("chat", 1, 4)
    state = BridgeState()
    store = state.store = CountingRemote()  # type: ignore[assignment]
    state.memo = Memo(light=True, light_from=0)

    def turn(body: bytes) -> ChatRequest:
        r = chat_request(body, settings=settings)
        r.flow.request.headers["user-agent"] = UA  # its calls have kinds: observations
        r.flow.live = True
        return ChatRequest(r.flow, settings, state)

    first = turn(session.body(5))
    assert Dispatch().run(first) is None and first.goes_first, "a first sight: read after the request went"
    assert first.size > ONE_WRITE_BYTES
    assert store.calls == [("begin", first.size), ("observe", 7)]  # its begin, then its end with its observations
    store.calls.clear()
    second = turn(session.body(6))
    assert Dispatch().run(second) is None and second.stage is Stage.ACCOUNTED and not second.goes_first
    assert second.result is not None and second.result.observations
    assert store.calls == [("observe", 0)], "one write, no begin and no end"
    huge = turn(session.body(6)[:-1] + b', "x": "' + b"y" * ONE_WRITE_BYTES + b'"}')
    assert huge.prepare() is None and huge.goes_first, "a large new part is read after the request went"


def test_a_chat_request_it_cannot_read_is_decided_without_being_ready() -> None:
    r = chat_request(BODY, max_body=10)
    seen: list[Stage] = []
    move = r.move

    def logged(to: Stage, *came_from: Stage) -> None:
        move(to, *came_from)
        seen.append(to)

    r.move = logged  # type: ignore[method-assign]
    assert Dispatch().run(r) is None
    assert seen == [Stage.DECIDED, Stage.APPLIED, Stage.ACCOUNTED]
    assert r.result is not None and r.result.status == "skipped" and r.job is None


@pytest.mark.parametrize("store_streamed", [False, True])
def test_a_streamed_reply_keeps_its_copy_on_the_reply_itself(store_streamed: bool) -> None:
    """The chat hop streams an SSE reply of a flow it bridged; the copy mitmweb and -w files show
    is kept by the reply's own stream (no table of the hop), or by mitmproxy when it stores
    streamed bodies itself."""
    hop = ChatHop()
    hop.settings = ChatSettings(store_streamed=store_streamed)
    f = tflow.tflow()
    f.metadata[META] = {"status": "observed"}
    f.response = http.Response.make(200, b"", {"content-type": "text/event-stream"})
    f.response.raw_content = None  # its body still to come
    assert hop.responseheaders(f) is None
    if store_streamed:
        assert f.response.stream is True
        return
    assert isinstance(f.response.stream, Tee)
    assert [f.response.stream(c) for c in (b"data: 1\n\n", b"data: 2\n\n")] == [b"data: 1\n\n", b"data: 2\n\n"]
    hop.response(f)
    assert f.response.raw_content == b"data: 1\n\ndata: 2\n\n"
    hop.done()


@pytest.mark.parametrize("bridged", [True, False])
def test_a_reply_is_streamed_while_its_reading_waits_for_it(bridged: bool) -> None:
    """Headless, a flow's reading (or verdict) waits for its reply: the reply of a flow the hop
    bridges is streamed before the verdict is on the flow; a flow it never selected is not."""

    async def go() -> None:
        hop = ChatHop()
        hop.filter = DefaultFilter()
        hop.settings = ChatSettings(verdicts_at_reply=False)
        f = tflow.tflow()
        f.request.method, f.request.path = "POST", "/v1/chat/completions" if bridged else "/v1/models"
        f.request.content = BODY
        f.response = None
        f.live = True
        assert hop.request(f) is None
        await gone()
        assert META not in f.metadata and hop.state.dispatch.busy(f.id) is bridged
        f.response = http.Response.make(200, b"", {"content-type": "text/event-stream"})
        f.response.raw_content = None
        assert hop.responseheaders(f) is None
        assert isinstance(f.response.stream, Tee) is bridged
        hop.done()

    asyncio.run(go())
