"""Responses over WebSocket (Codex's built-in OpenAI provider): response.create client frames are
selected, observed or rewritten, annotated, recorded and shown like HTTP requests (chat_hop/websocket.py)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import eventsequence, hooks, http, io
from mitmproxy.contentviews import Metadata
from mitmproxy.proxy.layers.websocket import Fragmentizer
from mitmproxy.test import taddons, tflow
from mitmproxy.websocket import WebSocketMessage
from native_bridge.chat_hop import websocket as ws_module
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.chat_hop.websocket import WS_META, wire
from native_bridge.inspect import commands, view
from native_bridge.records.writer import after_doc
from native_bridge.runtime import MARKER, META, dispatch
from native_bridge.runtime.worker import JobFailed
from wsproto.frame_protocol import Opcode

CODEX_UA = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) dumb (codex_exec; 0.171.0)"


def fc(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id}


def out(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def codex_json(output: str, code: int) -> str:
    return json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.1}})


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def frame(*items: Any, **extra: Any) -> bytes:
    doc = {"type": "response.create", "model": "gpt-5-codex", "instructions": "You are Codex.", "input": list(items)}
    return orjson.dumps({**doc, **extra})


def shell(call_id: str, script: str) -> dict[str, Any]:
    return fc(call_id, "shell", command=["bash", "-lc", script], workdir="/w")


# A failed build (exit 2) and a listing (exit 0): two steps, one failed.
FAILED = frame(
    user("build it"),
    shell("c1", "make"),
    out("c1", codex_json("make: *** [all] Error 2", 2)),
    shell("c2", "ls"),
    out("c2", codex_json("a.txt", 0)),
)
WARMUP = frame(user("build it"), generate=False)


def ws_flow(path: str = "/v1/responses", ua: str = CODEX_UA) -> http.HTTPFlow:
    f = tflow.twebsocketflow(messages=False)
    f.websocket.messages = []
    f.request.path = path
    f.request.headers["user-agent"] = ua
    return f


def send(hop: ChatHop, f: http.HTTPFlow, content: bytes, from_client: bool = True, text: bool = True) -> int:
    """Deliver one message as mitmproxy does: append it, then run the websocket_message hook."""
    f.websocket.messages.append(WebSocketMessage(Opcode.TEXT if text else Opcode.BINARY, from_client, content))
    hop.websocket_message(f)
    return len(f.websocket.messages) - 1


@pytest.fixture
def bridge(tmp_path: Path):
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite", bridge_records=str(tmp_path / "records"))
        yield hop, tctx
        hop.done()


def records(hop: ChatHop, tmp_path: Path) -> list[tuple[str, dict[str, Any]]]:
    assert hop.recorder is not None and hop.recorder.flush()
    files = sorted((tmp_path / "records").glob("*.json"))
    return [(p.name, json.loads(p.read_text())) for p in files]


# ---- selection -----------------------------------------------------------------------------------


def test_default_filter_selects_the_websocket_handshake_of_responses_only(bridge):
    hop, _ = bridge
    assert hop.filter(ws_flow())
    assert hop.filter(ws_flow("/v1/responses?client=codex"))
    assert hop.filter(ws_flow("/backend-api/codex/responses"))
    assert not hop.filter(ws_flow("/v1/realtime"))
    assert not hop.filter(ws_flow("/v1/responses/extra"))
    plain = tflow.tflow()  # GET /v1/responses without an upgrade: no WebSocket, not selected
    plain.request.method, plain.request.path = "GET", "/v1/responses"
    assert not hop.filter(plain)
    upgrade_asked = tflow.tflow()  # asked to upgrade but never became a WebSocket (no 101)
    upgrade_asked.request.method, upgrade_asked.request.path = "GET", "/v1/responses"
    upgrade_asked.request.headers["upgrade"] = "websocket"
    assert not hop.filter(upgrade_asked)
    post = tflow.tflow()
    post.request.method, post.request.path = "POST", "/v1/responses"
    assert hop.filter(post)


def test_the_handshake_request_is_not_bridged_as_a_request(bridge, tmp_path):
    hop, _ = bridge
    f = ws_flow()
    hop.request(f)  # -nr replays the request hook of a saved WebSocket flow
    live = ws_flow()
    live.websocket = None  # live: the request hook runs before the 101
    live.response = None
    hop.request(live)
    assert META not in f.metadata and META not in live.metadata
    assert records(hop, tmp_path) == []


# ---- rewrite and observe -------------------------------------------------------------------------


def test_a_response_create_frame_is_rewritten_in_place(bridge, tmp_path):
    hop, _ = bridge
    f = ws_flow()
    i = send(hop, f, FAILED)
    sent = json.loads(f.websocket.messages[i].content)
    assert sent["type"] == "response.create" and next(iter(sent)) == "type"
    assert [(s["runCommand"]["commandLine"], s["runCommand"].get("exitCode")) for s in sent["additional_steps"]] == [
        ("bash -lc make", 2),
        ("bash -lc ls", 0),
    ]
    assert [it.get("type") for it in sent["input"]] == ["message"]
    entry = f.metadata[WS_META][str(i)]
    assert entry["status"] == "rewritten" and entry["failed_exit_codes"] == [2]
    assert entry["original"] == FAILED
    assert f.marked == MARKER
    assert f.comment.startswith(f"bridge: websocket message {i}: 2 steps (1 failed: exit 2 ×1)")
    assert META not in f.metadata  # the HTTP request (the handshake) was not bridged


def test_observe_mode_leaves_the_frame_and_shares_what_it_states(bridge, monkeypatch):
    hop, tctx = bridge
    tctx.configure(hop, bridge_mode="observe")
    shared: list[Any] = []
    monkeypatch.setattr(hop.state.store, "observe", shared.extend)
    f = ws_flow()
    i = send(hop, f, FAILED)
    assert sorted((o.exit_code, o.client) for o in shared) == [(0, "codex"), (2, "codex")]  # the planner hop's
    assert f.websocket.messages[i].content == FAILED
    entry = f.metadata[WS_META][str(i)]
    assert entry["status"] == "observed" and "original" not in entry
    assert entry["failed_exit_codes"] == [2]
    assert f.comment.startswith(f"bridge: websocket message {i}: observed 2 steps")


def test_server_frames_and_other_client_frames_are_left_alone(bridge, tmp_path):
    hop, _ = bridge
    f = ws_flow()
    event = orjson.dumps({"type": "response.completed", "response": {"output": [shell("c9", "rm -rf /")]}})
    send(hop, f, event, from_client=False)
    send(hop, f, FAILED, from_client=False)  # even one that looks like a request
    send(hop, f, orjson.dumps({"type": "response.cancel"}))
    send(hop, f, b"not json, says response.create")
    send(hop, f, FAILED, text=False)  # binary: Codex sends text frames
    assert [m.content for m in f.websocket.messages] == [
        event,
        FAILED,
        b'{"type":"response.cancel"}',
        b"not json, says response.create",
        FAILED,
    ]
    assert WS_META not in f.metadata and not f.comment
    assert records(hop, tmp_path) == []


def test_an_unselected_websocket_is_left_alone(bridge, tmp_path):
    hop, _ = bridge
    f = ws_flow("/socket")
    i = send(hop, f, FAILED)
    assert f.websocket.messages[i].content == FAILED and WS_META not in f.metadata
    assert records(hop, tmp_path) == []


def test_bridge_off_leaves_frames_alone(bridge):
    hop, tctx = bridge
    tctx.configure(hop, bridge=False)
    f = ws_flow()
    i = send(hop, f, FAILED)
    assert f.websocket.messages[i].content == FAILED and WS_META not in f.metadata


def test_previous_response_id_frames_send_every_step_as_the_delta(bridge):
    hop, _ = bridge
    f = ws_flow()
    send(hop, f, WARMUP)
    nxt = frame(shell("c1", "make"), out("c1", codex_json("boom", 2)), previous_response_id="resp_1")
    i = send(hop, f, nxt)
    sent = json.loads(f.websocket.messages[i].content)
    assert sent["previous_response_id"] == "resp_1"
    assert sent["additional_steps_delta_start"] == 0
    assert [s["runCommand"]["exitCode"] for s in sent["additional_steps"]] == [2]
    assert f.metadata[WS_META]["0"]["status"] == "unchanged"  # the warm-up: no tool history


def test_a_frame_is_never_rewritten_twice(bridge, tmp_path):
    hop, tctx = bridge
    f = ws_flow()
    i = send(hop, f, FAILED)
    once = f.websocket.messages[i].content
    hop.websocket_message(f)  # the hook again for the same message (an addon re-invoking it)
    assert f.websocket.messages[i].content == once
    # mitmdump -nr: a saved flow's hooks run again, its frames already the rewritten ones
    path = tmp_path / "flows"
    with path.open("wb") as fo:
        io.FlowWriter(fo).add(f)
    with path.open("rb") as fo:
        (loaded,) = list(io.FlowReader(fo).stream())
    for hook in eventsequence.iterate(loaded):
        tctx.master.addons.invoke_addon_sync(hop, hook)
    assert [m.content for m in loaded.websocket.messages] == [once]
    assert loaded.metadata[WS_META][str(i)]["original"] == FAILED
    assert len(records(hop, tmp_path)) == 1


def test_a_saved_flow_captured_without_the_bridge_is_bridged_on_replay(bridge, tmp_path):
    hop, tctx = bridge
    f = ws_flow()
    f.websocket.messages = [
        WebSocketMessage(Opcode.TEXT, True, WARMUP),
        WebSocketMessage(Opcode.TEXT, False, b'{"type":"response.completed"}'),
        WebSocketMessage(Opcode.TEXT, True, FAILED),
    ]
    for hook in eventsequence.iterate(f):
        tctx.master.addons.invoke_addon_sync(hop, hook)
    assert sorted(f.metadata[WS_META]) == ["0", "2"]
    assert "additional_steps" in json.loads(f.websocket.messages[2].content)
    assert [r["websocket_message"] for _, r in records(hop, tmp_path)] == [0, 2]


def test_fail_open_leaves_the_frame_logs_and_records(bridge, tmp_path, monkeypatch, caplog):
    hop, _ = bridge

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("core fault")

    monkeypatch.setattr(ws_module, "rewrite", boom)
    monkeypatch.setattr(ws_module.logger, "disabled", False)  # whatever logging setup ran before
    caplog.set_level(logging.ERROR, logger=ws_module.logger.name)
    f = ws_flow()
    i = send(hop, f, FAILED)
    assert f.websocket.messages[i].content == FAILED
    assert f.metadata[WS_META][str(i)]["status"] == "error"
    assert "core fault" in f.comment
    assert any("rewrite failed, sending the original frame" in r.getMessage() for r in caplog.records)
    ((_, rec),) = records(hop, tmp_path)
    assert rec["status"] == "error" and rec["before"]["type"] == "response.create"


def test_a_frame_larger_than_max_body_passes_and_is_recorded(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_max_body=100)
    f = ws_flow()
    i = send(hop, f, FAILED)
    assert f.websocket.messages[i].content == FAILED
    assert f.metadata[WS_META][str(i)]["status"] == "skipped"
    ((_, rec),) = records(hop, tmp_path)
    assert rec["status"] == "skipped" and "bridge_max_body" in rec["reason"]


# ---- records -------------------------------------------------------------------------------------


def test_one_record_per_frame_with_distinct_names(bridge, tmp_path):
    hop, _ = bridge
    f = ws_flow()
    f.request.headers["authorization"] = "Bearer sk-secret-token-value-1234567890"
    send(hop, f, WARMUP)
    send(hop, f, b'{"type":"response.created"}', from_client=False)
    send(hop, f, FAILED)
    got = records(hop, tmp_path)
    assert [name.endswith(f"-{f.id}-m{i}.json") for (name, _), i in zip(got, (0, 2), strict=True)] == [True, True]
    (_, warm), (_, rec) = got
    assert warm["status"] == "unchanged" and warm["websocket_message"] == 0
    assert rec["websocket_message"] == 2 and rec["flow_id"] == f.id and rec["method"] == "GET"
    assert rec["url"].endswith("/v1/responses") and rec["dialect"] == "responses"
    assert rec["before"] == json.loads(FAILED)
    assert [s["runCommand"]["exitCode"] for s in after_doc(rec)["additional_steps"]] == [2, 0]
    assert [s["runCommand"]["exitCode"] for s in rec["steps"]] == [2, 0]
    assert "sk-secret" not in json.dumps(rec)


# ---- views and commands --------------------------------------------------------------------------


def _meta(f: http.HTTPFlow, i: int) -> Metadata:
    return Metadata(flow=f, websocket_message=f.websocket.messages[i])


def test_views_show_a_bridged_frame_and_leave_server_frames(bridge):
    hop, _ = bridge
    f = ws_flow()
    send(hop, f, b'{"type":"response.created"}', from_client=False)
    i = send(hop, f, FAILED)
    m = f.websocket.messages
    assert view.steps_view.render_priority(m[i].content, _meta(f, i)) == view.PRIORITY
    assert view.steps_view.render_priority(m[0].content, _meta(f, 0)) == -1
    text = view.steps_view.prettify(m[i].content, _meta(f, i))
    assert "make" in text and "exit 2" in text
    assert "server frame" in view.steps_view.prettify(m[0].content, _meta(f, 0))
    diff = view.diff_view.prettify(m[i].content, _meta(f, i))
    assert "- " in diff and "c1" in diff
    assert "the current rules" not in diff  # the accounting re-derives: the views read the same core


def test_views_undo_the_escapes_of_a_long_non_ascii_frame(bridge):
    hop, _ = bridge
    f = ws_flow()
    long = frame(user("é" * 5000), shell("c1", "make"), out("c1", codex_json("boom ✗", 2)))
    i = send(hop, f, long)
    sent = f.websocket.messages[i].content
    assert sent.isascii() and json.loads(sent)["input"][0]["content"][0]["text"] == "é" * 5000
    diff = view.diff_view.prettify(sent, _meta(f, i))
    assert "the current rules" not in diff


def test_observe_mode_views_re_derive_the_steps(bridge):
    hop, tctx = bridge
    tctx.configure(hop, bridge_mode="observe")
    f = ws_flow()
    i = send(hop, f, FAILED)
    text = view.steps_view.prettify(FAILED, _meta(f, i))
    assert "observe mode" in text and "make" in text


def test_bridge_diff_stats_and_export_cover_websocket_frames(bridge, tmp_path):
    hop, _ = bridge
    f = ws_flow()
    send(hop, f, WARMUP)
    send(hop, f, FAILED)
    diff = commands.diff_flow(f)
    assert "websocket message 0" in diff and "websocket message 1" in diff and "make" in diff
    stats = commands.stats_text([f])
    assert "requests (each WebSocket frame counts)  2" in stats and "exit 2" in stats
    cmds = commands.BridgeCommands()
    text = cmds.export([f], str(tmp_path / "export"))
    assert "wrote 2 records" in text
    exported = sorted((tmp_path / "export").glob("*.json"))
    recs = [json.loads(p.read_text()) for p in exported]
    assert [r["websocket_message"] for r in recs] == [0, 1]
    assert recs[1]["before"] == json.loads(FAILED) and recs[1]["status"] == "rewritten"
    assert [s["runCommand"]["exitCode"] for s in recs[1]["steps"]] == [2, 0]


# ---- wire ------------------------------------------------------------------------------------------


def test_wire_escapes_non_ascii_only_when_mitmproxy_would_cut_it():
    short = '{"a":"é✗"}'.encode()
    assert wire(short) == short
    ascii_long = b'{"a":"' + b"x" * 5000 + b'"}'
    assert wire(ascii_long) is ascii_long
    doc = {"ab": "é" * 3000, "b": "🙂 ✗", "n": 1.5}
    body = orjson.dumps(doc)
    assert len(body) > Fragmentizer.FRAGMENT_SIZE
    # the fault it avoids: mitmproxy resends a modified message in chunks, each decoded on its own
    assert "\ufffd" in "".join(m.data for m in Fragmentizer([b""], True)(body))
    sent = wire(body)
    assert sent.isascii() and orjson.loads(sent) == doc
    # what mitmproxy does to a modified text message: every chunk survives its own decode
    chunks = [m.data for m in Fragmentizer([b""], True)(sent)]
    assert orjson.loads("".join(chunks)) == doc


# ---- previous_response_id: calls the server holds ------------------------------------------------


def server_response(rid: str, *output: dict[str, Any], with_output: bool = True) -> list[bytes]:
    """A response as the server streams it: created, each item done, completed (with or without its output)."""
    done = [
        orjson.dumps({"type": "response.output_item.done", "output_index": k, "item": it})
        for k, it in enumerate(output)
    ]
    completed = {"id": rid, "status": "completed", "output": list(output) if with_output else []}
    return [
        orjson.dumps({"type": "response.created", "response": {"id": rid, "status": "in_progress"}}),
        *done,
        orjson.dumps({"type": "response.completed", "response": completed}),
    ]


def exec_call(call_id: str, cmd: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": cmd}),
        "call_id": call_id,
        "status": "completed",
    }


def exec_out(call_id: str, code: int, text: str = "") -> dict[str, Any]:
    output = (
        f"Chunk ID: ab12cd\nWall time: 0.0000 seconds\nProcess exited with code {code}\n"
        f"Original token count: 1\nOutput:\n{text}"
    )
    return {"type": "function_call_output", "call_id": call_id, "output": output}


@pytest.mark.parametrize("with_output", [True, False], ids=["completed-output", "output-item-done"])
def test_outputs_answering_server_held_calls_become_steps(bridge, tmp_path, with_output):
    hop, _ = bridge
    f = ws_flow()
    send(hop, f, WARMUP)
    for event in server_response("resp_0"):
        send(hop, f, event, from_client=False)
    send(hop, f, frame(user("run it"), previous_response_id="resp_0"))
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    for event in server_response("resp_1", reasoning, exec_call("k1", "ls /nope"), with_output=with_output):
        send(hop, f, event, from_client=False)
    answer = frame(exec_out("k1", 2, "ls: cannot access '/nope'\n"), previous_response_id="resp_1")
    i = send(hop, f, answer)
    sent = json.loads(f.websocket.messages[i].content)
    assert [s["runCommand"]["exitCode"] for s in sent["additional_steps"]] == [2]
    assert sent["input"] == [] and sent["previous_response_id"] == "resp_1"  # the call stays server-held
    entry = f.metadata[WS_META][str(i)]
    assert entry["context"] == [exec_call("k1", "ls /nope")] and entry["original"] == answer
    rec = records(hop, tmp_path)[-1][1]
    assert rec["before"] == json.loads(answer) and rec["websocket_context"] == [exec_call("k1", "ls /nope")]
    assert [(a["item"], a["id"], a.get("step")) for a in rec["accounting"]] == [("call", "k1", 0), ("result", "k1", 0)]
    text = view.steps_view.prettify(sent, _meta(f, i))
    assert "calls the server holds" in text and "no longer give" not in text and "exit 2" in text


def test_a_kept_server_held_call_is_not_sent_again(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_tools=["exec_command="])  # exec_command pairs stay messages
    f = ws_flow()
    for event in server_response("resp_1", exec_call("k1", "ls"), exec_call("k2", "pwd")):
        send(hop, f, event, from_client=False)
    # the output of k1 (kept: unmapped tool) and a shell pair of the frame's own (a step)
    answer = frame(
        exec_out("k1", 0, "a.txt\n"),
        shell("c1", "make"),
        out("c1", codex_json("boom", 2)),
        previous_response_id="resp_1",
    )
    i = send(hop, f, answer)
    entry = f.metadata[WS_META][str(i)]
    assert entry["status"] == "rewritten"
    assert entry["context"] == [exec_call("k1", "ls")]  # only the calls the frame answers
    sent = json.loads(f.websocket.messages[i].content)
    assert sent["input"] == [exec_out("k1", 0, "a.txt\n")]  # its output stays, the held call is not sent again
    assert [s["runCommand"]["exitCode"] for s in sent["additional_steps"]] == [2]
    diff = view.diff_view.prettify(f.websocket.messages[i].content, _meta(f, i))
    assert "no longer give" not in diff
    rec = records(hop, tmp_path)[-1][1]
    assert rec["websocket_context"] == [exec_call("k1", "ls")]


def test_a_previous_response_not_on_this_connection_leaves_outputs_orphans(bridge):
    hop, _ = bridge
    f = ws_flow()
    answer = frame(exec_out("k1", 2), previous_response_id="resp_elsewhere")
    i = send(hop, f, answer)
    assert f.websocket.messages[i].content == answer
    assert f.metadata[WS_META][str(i)]["status"] == "unchanged" and "context" not in f.metadata[WS_META][str(i)]


def test_a_call_id_the_server_never_sent_is_not_matched(bridge):
    hop, _ = bridge
    f = ws_flow()
    for event in server_response("resp_1", exec_call("k1", "ls")):
        send(hop, f, event, from_client=False)
    i = send(hop, f, frame(exec_out("zz", 2), previous_response_id="resp_1"))
    assert "context" not in f.metadata[WS_META][str(i)]
    assert f.metadata[WS_META][str(i)]["steps"] == 0


def test_mitmweb_picks_bridge_steps_for_a_bridged_frame_only(bridge):
    """As mitmweb's messages tab renders each WebSocket message (view "auto")."""
    from mitmproxy import contentviews

    hop, _ = bridge
    view.register()
    f = ws_flow()
    send(hop, f, b'{"type":"response.created","response":{"id":"r"}}', from_client=False)
    i = send(hop, f, FAILED)
    picked = contentviews.prettify_message(f.websocket.messages[i], f)
    assert picked.view_name == "Bridge steps" and "exit 2" in picked.text
    assert contentviews.prettify_message(f.websocket.messages[0], f).view_name != "Bridge steps"
    diff = contentviews.prettify_message(f.websocket.messages[i], f, "Bridge diff")
    assert diff.view_name == "Bridge diff" and "Couldn't parse" not in diff.text


def test_items_with_odd_types_and_ids_never_raise(bridge):
    """A client may send anything under "type" and "call_id" (found by review after the fuzzer found
    the same in the dialect writers): such items are not calls or outputs, and the frame is handled."""
    hop, _ = bridge
    f = ws_flow()
    odd = [{"type": ["function_call"], "call_id": "x"}, {"type": "function_call_output", "call_id": ["c1"]}]
    i = send(hop, f, frame(user("go"), *odd, previous_response_id="resp_1"))
    verdict = f.metadata["bridge_ws"][str(i)]
    assert verdict["status"] != "error", verdict


# ---- large frames: parsed and bridged in the worker process, off the event loop --------------


def send_held(hop: ChatHop, f: http.HTTPFlow, content: bytes):
    """Deliver a client frame whose hook may return an awaitable (mitmproxy holds the frame until it is done)."""
    f.websocket.messages.append(WebSocketMessage(Opcode.TEXT, True, content))
    return len(f.websocket.messages) - 1, hop.websocket_message(f)


def conversation(hop: ChatHop, f: http.HTTPFlow) -> bytes:
    """Server events of a response holding a call, then the frame that answers it (and has a pair of its own)."""
    for event in server_response("resp_1", exec_call("k1", "ls /nope")):
        send(hop, f, event, from_client=False)
    return frame(
        exec_out("k1", 2, "ls: cannot access '/nope'\n"),
        shell("c1", "make"),
        out("c1", codex_json("make: *** [all] Error 2", 2)),
        previous_response_id="resp_1",
    )


@pytest.mark.parametrize("mode", ["rewrite", "observe"])
def test_a_large_frame_is_bridged_in_the_worker_as_on_the_loop(bridge, tmp_path, monkeypatch, mode):
    hop, tctx = bridge
    tctx.configure(hop, bridge_mode=mode)
    ref = ws_flow()
    i_ref = send(hop, ref, conversation(hop, ref))  # small: on the loop
    monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", 200)  # now it counts as large
    f = ws_flow()
    raw = conversation(hop, f)
    i, pending = send_held(hop, f, raw)
    assert pending is not None, "a large frame must not be parsed on the loop"
    assert f.websocket.messages[i].content == raw and WS_META not in f.metadata  # nothing happened yet
    asyncio.run(pending)
    offloader = hop.state.dispatch.offloader
    assert offloader is not None and offloader.pid is not None  # the worker did it
    assert f.websocket.messages[i].content == ref.websocket.messages[i_ref].content
    assert f.metadata[WS_META][str(i)] == ref.metadata[WS_META][str(i_ref)]
    assert f.metadata[WS_META][str(i)]["context"] == [exec_call("k1", "ls /nope")]
    assert (f.comment, f.marked) == (ref.comment, ref.marked)
    kept = records(hop, tmp_path)
    a, b = kept[-2][1], kept[-1][1]  # the reference's record, then the worker's
    for key in ("status", "summary", "accounting", "websocket_context", "after"):
        assert a.get(key) == b.get(key), key


def test_a_large_frame_that_is_no_model_call_is_left_alone(bridge, monkeypatch):
    hop, _ = bridge
    monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", 200)
    f = ws_flow()
    other = orjson.dumps({"type": "session.update", "note": "response.create " + "x" * 400})
    i, pending = send_held(hop, f, other)
    assert pending is not None
    asyncio.run(pending)
    assert f.websocket.messages[i].content == other and WS_META not in f.metadata
    i, pending = send_held(hop, f, b"[" + b"1," * 300 + b"1]")  # no frame type named at all: not even sent over
    assert pending is None and WS_META not in f.metadata


def test_a_large_frame_fails_open(bridge, tmp_path, monkeypatch):
    hop, _ = bridge
    monkeypatch.setattr(dispatch, "OFFLOAD_BYTES", 200)
    job = ws_module.FrameJob(FAILED, {}, hop.config, "/v1/responses", CODEX_UA, True, False)

    def boom(*args: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr(ws_module, "frame_outcome", boom)
    with pytest.raises(ValueError, match="boom"):  # raised in the worker, which reports it (JobFailed)
        ws_module.frame_work(job, None)

    class Failing:  # the offloader as the worker reports a job that raised
        async def run(self, job: Any) -> Any:
            raise JobFailed("ValueError: boom")

    monkeypatch.setattr(hop.state.dispatch, "offloader", Failing())
    f = ws_flow()
    i, pending = send_held(hop, f, FAILED)
    asyncio.run(pending)
    assert f.websocket.messages[i].content == FAILED  # as the client sent it
    assert f.metadata[WS_META][str(i)]["status"] == "error" and "boom" in f.metadata[WS_META][str(i)]["reason"]
    assert records(hop, tmp_path)[-1][1]["status"] == "error"


# ---- the server-held calls are read only as far back as the response they belong to ---------


def _reference_calls(events: list[tuple[int, dict[str, Any]]], response_id: str) -> list[dict[str, Any]] | None:
    """The straightforward reading (every event parsed, newest first), to compare the lazy one with."""

    def rid(doc: dict[str, Any]) -> Any:
        r = doc.get("response")
        return r.get("id") if isinstance(r, dict) else None

    def calls(items: Any) -> list[dict[str, Any]]:
        return [it for it in (items if isinstance(items, list) else []) if it.get("type") == "function_call"]

    done = next(
        (k for k, (_, d) in enumerate(events) if d.get("type") in ws_module._DONE and rid(d) == response_id), None
    )
    if done is not None and events[done][1]["response"].get("output"):
        return calls(events[done][1]["response"]["output"])
    start = next(
        (k for k, (_, d) in enumerate(events) if d.get("type") == "response.created" and rid(d) == response_id), None
    )
    if start is None:
        return None
    between = events[done if done is not None else 0 : start]
    return calls([d.get("item") for _, d in reversed(between) if d.get("type") == "response.output_item.done"])


@pytest.mark.parametrize("seed", range(40))
def test_the_lazy_reading_of_server_events_gives_the_straightforward_answer(seed):
    import random

    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for n in range(rng.randint(1, 6)):  # responses, some incomplete, some repeated, some out of order
        rid = f"resp_{rng.randint(0, 3)}"
        events.append({"type": "response.created", "response": {"id": rid}})
        items = [exec_call(f"k{n}{i}", "ls") for i in range(rng.randint(0, 2))]
        events += [{"type": "response.output_item.done", "item": it} for it in items]
        events += [{"type": "response.output_text.delta", "delta": "x"}] * rng.randint(0, 3)
        if rng.random() < 0.7:
            kind = rng.choice(ws_module._DONE)
            events.append({"type": kind, "response": {"id": rid, "output": items if rng.random() < 0.6 else []}})
        if rng.random() < 0.2:
            rng.shuffle(events)
    newest_first = list(reversed(list(enumerate(events))))
    for rid in ("resp_0", "resp_1", "resp_2", "resp_3"):
        assert ws_module._calls_of(iter(newest_first), rid) == _reference_calls(newest_first, rid), (seed, rid)


def test_a_long_session_is_read_only_back_to_the_answered_response(bridge, monkeypatch):
    hop, _ = bridge
    f = ws_flow()
    for n in range(100):  # 100 earlier responses, each with many streamed deltas
        for event in server_response(f"resp_{n}", exec_call(f"k{n}", "ls")):
            send(hop, f, event, from_client=False)
        for _ in range(20):
            send(hop, f, orjson.dumps({"type": "response.output_text.delta", "delta": "response.completed"}), False)
    parsed = []
    loads = orjson.loads

    class Counting:
        JSONDecodeError = orjson.JSONDecodeError
        dumps = staticmethod(orjson.dumps)

        @staticmethod
        def loads(data: Any) -> Any:
            parsed.append(data)
            return loads(data)

    monkeypatch.setattr(ws_module, "orjson", Counting)
    i = send(hop, f, frame(exec_out("k99", 2, "no such file\n"), previous_response_id="resp_99"))
    assert f.metadata[WS_META][str(i)]["context"] == [exec_call("k99", "ls")]
    assert len(parsed) < 30, f"{len(parsed)} frames parsed for one answer"
