"""The planner hop's addon under mitmproxy's test context: selection, correction, ledger,
metadata, views and commands on planner-hop flows (the real gateway's bodies)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from mitmproxy import contentviews, exceptions, hooks, http
from mitmproxy.proxy import mode_specs
from mitmproxy.test import taddons, tflow
from native_bridge.cascade.framing import unframe
from native_bridge.cascade.request import parse_request
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.inspect import view
from native_bridge.inspect.commands import BridgeCommands, diff_flow, record_job
from native_bridge.planner_hop.addon import PlannerHop
from native_bridge.records import planner as planner_record
from native_bridge.records import writer as records
from native_bridge.runtime import MARKER, META
from native_bridge.runtime.dispatch import Stage
from native_bridge.runtime.h2c import H2CListener
from native_bridge.runtime.state import BridgeState

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "gateway-3.9.27"
SPEC = "reverse:http://127.0.0.1:42101@42100"
SEND = "/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage"


def fixture(name: str) -> bytes:
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"gateway fixture {path} is absent (it lives in ../shared/fixtures)")
    return path.read_bytes()


@pytest.fixture
def planner():
    state, h2c = BridgeState(), H2CListener()
    chat = ChatHop(state, h2c)
    pb = PlannerHop(state, h2c)
    with taddons.context(state, h2c, chat, pb, BridgeCommands()) as tctx:
        for addon in (state, chat, pb):
            tctx.master.addons.invoke_addon_sync(addon, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(pb, mode=["regular", SPEC], bridge_planner=[SPEC])
        yield pb, tctx
    state.dispatch.close()  # a worker a test started (the state owns it)


def planner_flow(body: bytes, spec: str = SPEC, path: str = SEND, ok: bool = True) -> http.HTTPFlow:
    f = tflow.tflow()
    f.client_conn.proxy_mode = mode_specs.ProxyMode.parse(spec)
    f.request.method = "POST"
    f.request.path = path
    f.request.http_version = "HTTP/2.0"
    f.request.headers.clear()
    f.request.headers["content-type"] = "application/grpc"
    f.request.headers["te"] = "trailers"
    f.request.raw_content = body
    f.response = http.Response.make(200, b"\x00\x00\x00\x00\x00", {"content-type": "application/grpc"})
    f.response.trailers = http.Headers(**{"grpc-status": "0" if ok else "14"})
    return f


def steps_of(body: bytes) -> list[bytes]:
    return parse_request(unframe(body, "application/grpc", {}, 1 << 20).payload).steps


def test_a_planner_listener_must_be_one_of_the_proxy_modes(planner):
    pb, tctx = planner
    with pytest.raises(exceptions.OptionsError, match="not a listener"):
        tctx.configure(pb, bridge_planner=["reverse:http://127.0.0.1:1@2"])


def test_the_planner_client_must_be_a_known_client(planner):
    pb, tctx = planner
    with pytest.raises(exceptions.OptionsError, match="not one of"):
        tctx.configure(pb, bridge_planner_client="claude")
    tctx.configure(pb, bridge_planner_client="claude-code")


def test_the_planner_types_setting_is_official_or_keep(planner):
    pb, tctx = planner
    assert tctx.options.bridge_planner_types == "official"
    with pytest.raises(exceptions.OptionsError, match="not one of official, keep"):
        tctx.configure(pb, bridge_planner_types="ours")
    tctx.configure(pb, bridge_planner_types="keep")


@pytest.mark.parametrize("types", ["official", "keep"])
def test_the_planner_types_setting_reaches_the_correction(planner, types):
    """The known gateway types run_command 28 (officially COMMAND_STATUS): official gives the step
    RUN_COMMAND 21, with the reason recorded; keep sends every type as it came."""
    from native_bridge.cascade.steps import view as step_view

    pb, tctx = planner
    tctx.configure(pb, bridge_planner_types=types)
    body = fixture("grpc-turn1.bin")
    f = planner_flow(body)
    pb.request(f)
    sent, came = steps_of(f.request.raw_content), steps_of(body)
    assert step_view(sent[0]).kind == "run_command" and step_view(came[0]).type == 28
    retyped = [c for c in f.metadata[META]["change_list"] if c["action"] == "type"]
    assert f.metadata[META]["planner_types"] == types
    assert [step_view(s).type for s in came] == [28, 14, 28, 105]  # npm run dev (2) is dropped: unobserved
    if types == "official":
        assert [step_view(s).type for s in sent] == [21, 8, 91]
        assert [c["index"] for c in retyped] == [0, 1, 3] and "COMMAND_STATUS" in retyped[0]["reason"]
    else:
        assert [step_view(s).type for s in sent] == [28, 14, 105] and retyped == []


def test_recheck_runs_a_planner_flow_again_under_its_own_types_setting(planner):
    """replay_check re-runs a flow corrected with bridge_planner_types=keep under keep: no new
    'type' change appears, from the flow or from its record."""
    from native_bridge.inspect.replay import planner as planner_replay

    pb, tctx = planner
    tctx.configure(pb, bridge_planner_types="keep")
    f = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(f)
    case = planner_replay.from_flow(f)
    assert case.types == "keep" and planner_replay.recheck(case) == []
    rec = records.to_record(record_job(f))
    assert planner_replay.from_record(rec).types == "keep"
    assert planner_replay.recheck(planner_replay.from_record(rec)) == []
    case.types = "official"  # the same flow under today's default: the types would change
    assert any("new change" in line and ": type" in line for line in planner_replay.recheck(case))


def test_first_turn_is_corrected_backed_up_marked_and_annotated(planner):
    pb, _ = planner
    body = fixture("grpc-turn1.bin")
    f = planner_flow(body)
    pb.request(f)
    assert f.request.raw_content != body and f.modified()
    assert f.marked == MARKER
    meta = f.metadata[META]
    assert meta["status"] == "corrected" and meta["dialect"] == "cascade"
    assert (meta["steps_in"], meta["steps_out"]) == (4, 3)
    assert {c["action"] for c in meta["change_list"]} >= {"dropped", "stdout_deduplicated", "exit_code"}
    assert f.comment.startswith("bridge: planner 4 -> 3 steps")
    f.revert()
    assert f.request.raw_content == body


def test_ledger_is_written_only_when_the_planner_accepts(planner):
    pb, _ = planner
    refused = planner_flow(fixture("grpc-turn1.bin"), ok=False)
    pb.request(refused)
    pb.response(refused)
    resumed = planner_flow(fixture("grpc-turn2-resumed.bin"))
    pb.request(resumed)
    assert len(steps_of(resumed.request.raw_content)) == 4, "nothing was delivered: every step again"
    pb.response(resumed)
    again = planner_flow(fixture("grpc-turn2-resumed.bin"))
    pb.request(again)
    assert again.metadata[META]["status"] == "unchanged" or len(steps_of(again.request.raw_content)) == 0


def test_a_call_is_answered_when_its_reply_comes_and_the_ledger_learns_then(planner):
    pb, _ = planner
    f = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(f)
    call = pb.calls[f.id]  # the hop holds the call until its reply
    assert call.stage is Stage.ACCOUNTED and call.delivery is not None
    assert len(pb.state.store.delivered(call.delivery[0])) == 0, "nothing delivered before the reply"
    pb.response(f)
    assert call.stage is Stage.ANSWERED and f.id not in pb.calls
    assert len(pb.state.store.delivered(call.result.cascade_id)) > 0


def test_other_listeners_methods_and_handled_flows_are_left_alone(planner):
    pb, _ = planner
    body = fixture("grpc-turn1.bin")
    for f in (
        planner_flow(body, spec="regular"),
        planner_flow(body, path=SEND.replace("SendUserCascadeMessage", "GetCascadeTrajectorySteps")),
    ):
        pb.request(f)
        assert f.request.raw_content == body and META not in f.metadata
    handled = planner_flow(body)
    pb.request(handled)
    corrected = handled.request.raw_content
    pb.request(handled)  # a replay (-nr, -C) sees the flow again: never corrected twice
    assert handled.request.raw_content == corrected


def test_the_chat_hop_leaves_the_planner_listener_alone(planner):
    """A planner listener carries gRPC to the language server, never an agent's chat request:
    even a chat path with a JSON history there is not the chat hop's."""
    _, tctx = planner
    chat = tctx.master.addons.get("chathop")  # the hops share the state, not each other
    raw = fixture("chat-turn1.json")
    f, elsewhere = planner_flow(raw, path="/v1/messages"), planner_flow(raw, spec="regular", path="/v1/messages")
    for flow in (f, elsewhere):
        flow.response = None
        flow.request.headers["content-type"] = "application/json"
        chat.request(flow)
    assert META not in f.metadata and f.request.raw_content == raw
    assert elsewhere.metadata[META]["status"] == "observed"  # the same request on another listener is read


def test_views_show_the_changes_and_the_steps_sent(planner):
    pb, _ = planner
    view.register()
    f = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(f)
    steps = contentviews.prettify_message(f.request, f, view_name="Bridge steps").text
    assert "bridge (planner hop): corrected, 4 -> 3 steps" in steps
    assert "dropped" in steps and "npm run dev" in steps.split("steps sent")[0]
    assert "npm run dev" not in steps.split("steps sent")[1]
    diff = contentviews.prettify_message(f.request, f, view_name="Bridge diff").text
    assert any(line.startswith("-") and "npm run dev" in line for line in diff.splitlines())


def test_diff_command_and_export_of_a_planner_flow(planner, tmp_path: Path):
    pb, _ = planner
    f = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(f)
    assert "npm run dev" in diff_flow(f)
    job = record_job(f)
    assert job.dialect == "cascade" and isinstance(job.planner, planner_record.PlannerJob)
    rec = records.to_record(job)
    assert len(rec["planner"]["steps_before"]) == 4 and len(rec["planner"]["steps_after"]) == 3
    assert "wsk-FIXTURE-KEY" not in str(rec)


def test_a_record_from_before_the_planner_key_reads_as_it_did(planner, tmp_path: Path):
    """Records written before the planner hop's part was renamed hold it under ``native``: replay,
    summary.py and the real-gateway report read them as they read a record of today."""
    import summary
    from native_bridge.inspect.replay import planner as planner_replay
    from native_bridge.inspect.replay import read_sources
    from support.real_gateway.report import report

    pb, _ = planner
    f = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(f)
    rec = records.to_record(record_job(f))
    assert "native" not in rec and rec["planner"]["changes"]
    old = {("native" if k == "planner" else k): v for k, v in rec.items()}  # the old format, key order kept
    assert planner_replay.from_record(old) == planner_replay.from_record(rec)
    assert planner_replay.recheck(planner_replay.from_record(old)) == []
    rows = {}
    for name, r in (("today", rec), ("old", old)):
        directory = tmp_path / name / "records" / "planner"
        directory.mkdir(parents=True)
        (directory / "r.json").write_bytes(orjson.dumps(r))
        entries, _ = read_sources([str(directory)])
        rows[name] = summary.render(entries)
        (tmp_path / name / "out").mkdir()
        assert report(tmp_path / name)["gateway_sent"] == [rec["planner"]["steps_before"]]
    assert rows["old"] == rows["today"] and "1 planner-hop send in 1 cascade, 1 corrected" in rows["old"]


def test_a_request_corrected_upstream_is_left_alone(planner):
    """Two bridges chained: the second lacks the first one's evidence and would undo its claims."""
    from native_bridge.planner_hop.addon import HANDLED_HEADER

    pb, _ = planner
    first = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(first)
    assert first.request.headers[HANDLED_HEADER] == "corrected"
    second = planner_flow(first.request.raw_content)  # what the next proxy receives
    second.request.headers[HANDLED_HEADER] = first.request.headers[HANDLED_HEADER]
    pb.request(second)
    assert second.request.raw_content == first.request.raw_content
    assert second.metadata[META]["status"] == "skipped"
    assert "already corrected by a bridge upstream" in second.metadata[META]["reason"]
    pb.response(second)  # nothing pending: the ledger is the first bridge's business
    first.revert()
    assert HANDLED_HEADER not in first.request.headers, "the backup is the request as it came"


def test_recheck_runs_a_planner_flow_again_under_its_own_setting(planner):
    """replay_check's core (inspect/replay/planner.py): the flow's backup corrected again, with the
    recorded ledger prefix and bridge_planner_client, equals what was sent; a record too."""
    from native_bridge.inspect.replay import planner as planner_replay

    pb, tctx = planner
    tctx.configure(pb, bridge_planner_client="claude-code")
    first = planner_flow(fixture("grpc-turn1.bin"))
    pb.request(first)
    pb.response(first)
    resumed = planner_flow(fixture("grpc-turn2-resumed.bin"))
    pb.request(resumed)
    assert resumed.metadata[META]["planner_client"] == "claude-code"
    for f in (first, resumed):
        case = planner_replay.from_flow(f)
        assert planner_replay.recheck(case) == [], f.metadata[META]
        rec = records.to_record(record_job(f))
        assert planner_replay.recheck(planner_replay.from_record(rec)) == []
    assert planner_replay.from_flow(resumed).delta_start == 4
    case = planner_replay.from_flow(first)
    assert case.cascade_id and case.client == "claude-code"
    # With the chat hop's observation of the agent's request (is_error and "Exit code 1"), which this
    # flow was corrected without, npm test's exit code would be stated: the evidence is part of the check.
    from native_bridge.core.pipeline import Config

    seen = planner_replay.observations_of(
        fixture("chat-turn1.json"), Config(), "/v1/messages", "claude-cli/2.1.332 (external, cli)"
    )
    lines = planner_replay.recheck(case, planner_replay.evidence(seen))
    assert "     now   #0   run_command      DONE   exit 1   $ npm test" in lines, lines
    case.sent = (case.sent or b"") + b"\0"  # the bytes sent are compared too
    case.client = "claude-code"
    assert planner_replay.recheck(case) == ["the corrected body differs outside the steps"]


# ---- every call that carries tool history (issue 19 items 4 and 5) ----------------------

REPLAY = SEND.replace("SendUserCascadeMessage", "ReplayGroundTruthTrajectory")
INTERACT = SEND.replace("SendUserCascadeMessage", "HandleCascadeUserInteraction")


def _kit():
    from cascade import cascadekit

    return cascadekit


def _replay_steps(body: bytes) -> list[bytes]:
    from native_bridge.cascade.calls import REPLAY as REPLAY_CALL

    return parse_request(unframe(body, "application/grpc", {}, 1 << 20).payload, REPLAY_CALL).steps


def test_every_call_is_selected_on_the_planner_listener_and_names_its_method(planner):
    kit = _kit()
    pb, _ = planner
    steps = [kit.gateway_run("npm test", "Exit code 1\nboom"), kit.gateway_run("ls", "a\n")]
    for path, body, method in (
        (SEND, kit.grpc(kit.request(steps)), "SendUserCascadeMessage"),
        (REPLAY, kit.grpc(kit.replay_request(steps)), "ReplayGroundTruthTrajectory"),
        (INTERACT, kit.grpc(kit.interaction_request()), "HandleCascadeUserInteraction"),
        ("/other.pkg.Svc/ReplayGroundTruthTrajectory", kit.grpc(kit.replay_request(steps)), None),
    ):
        f = planner_flow(body, path=path)
        pb.request(f)
        assert f.metadata[META]["method"] == (method or "ReplayGroundTruthTrajectory"), path
        assert f.metadata[META]["dialect"] == "cascade"
    elsewhere = planner_flow(kit.grpc(kit.replay_request(steps)), spec="regular", path=REPLAY)
    pb.request(elsewhere)
    assert META not in elsewhere.metadata


def test_replay_steps_are_corrected_and_recorded_without_a_key(planner):
    kit = _kit()
    pb, _ = planner
    steps = [kit.gateway_run("npm test", "Exit code 1\nboom"), kit.gateway_run("npm run dev", None)]
    body = kit.grpc(kit.replay_request(steps))
    f = planner_flow(body, path=REPLAY)
    pb.request(f)
    meta = f.metadata[META]
    assert meta["status"] == "corrected" and (meta["steps_in"], meta["steps_out"]) == (2, 1)
    assert meta["delta_start"] == 0
    assert len(_replay_steps(f.request.raw_content)) == 1
    rec = records.to_record(record_job(f))
    assert rec["planner"]["method"] == "ReplayGroundTruthTrajectory"
    assert len(rec["planner"]["steps_before"]) == 2 and len(rec["planner"]["steps_after"]) == 1
    assert kit.API_KEY.decode() not in str(rec) and kit.JWT.decode() not in str(rec)
    assert kit.API_KEY not in bytes.fromhex(rec["planner"]["body_hex"])
    text = contentviews.prettify_message(f.request, f, view_name="Bridge steps").text
    assert "ReplayGroundTruthTrajectory" in text and "npm test" in text
    assert "npm run dev" in diff_flow(f)


def test_an_interaction_goes_byte_identical_and_is_recorded_decoded(planner):
    kit = _kit()
    pb, _ = planner
    view.register()
    body = kit.grpc(kit.interaction_request(step_index=7, submitted="printf 'boom\\n'; exit 2"))
    f = planner_flow(body, path=INTERACT)
    pb.request(f)
    pb.response(f)
    assert f.request.raw_content == body and not f.modified()
    meta = f.metadata[META]
    assert meta["status"] == "unchanged" and meta["method"] == "HandleCascadeUserInteraction"
    assert "never rewritten" in meta["reason"]
    rec = records.to_record(record_job(f))
    part = rec["planner"]
    assert part["method"] == "HandleCascadeUserInteraction" and part["cascade_id"] == "cascade-1"
    run = part["interaction"]["interaction"]["runCommand"]
    assert part["interaction"]["interaction"]["stepIndex"] == 7
    assert run["confirm"] is True and run["proposedCommandLine"] == "npm test"
    assert run["submittedCommandLine"] == "printf 'boom\\n'; exit 2"
    assert bytes.fromhex(part["body_hex"]) == body
    text = contentviews.prettify_message(f.request, f, view_name="Bridge steps").text
    assert "HandleCascadeUserInteraction" in text and "step 7" in text and "exit 2" in text
    assert pb.state.store.delivered("cascade-1").steps is None, "an interaction delivers no steps"


def test_the_ledger_learns_a_replay_and_cuts_a_later_send(planner):
    kit = _kit()
    pb, _ = planner
    replayed = [kit.gateway_run("npm test", "Exit code 1\nboom"), kit.gateway_run("ls", "a\n")]
    refused = planner_flow(kit.grpc(kit.replay_request(replayed)), path=REPLAY, ok=False)
    pb.request(refused)
    pb.response(refused)
    assert len(pb.state.store.delivered("cascade-1")) == 0, "a refused replay delivered nothing"
    replay = planner_flow(kit.grpc(kit.replay_request(replayed)), path=REPLAY)
    pb.request(replay)
    pb.response(replay)
    assert list(pb.state.store.delivered("cascade-1").steps) == replayed, "the gateway's replayed steps"
    new = kit.gateway_run("cat x", "y\n")
    send = planner_flow(kit.grpc(kit.request([*replayed, new])))
    pb.request(send)
    assert send.metadata[META]["delta_start"] == 2
    [sent] = steps_of(send.request.raw_content)
    from native_bridge.cascade.steps import run_command
    from native_bridge.cascade.steps import view as step_view

    assert run_command(step_view(sent).body).command_line == "cat x"


def test_a_replay_is_not_cut_by_what_the_ledger_holds(planner):
    kit = _kit()
    pb, _ = planner
    steps = [kit.gateway_run("ls", "a\n")]
    first = planner_flow(kit.grpc(kit.request(steps)))
    pb.request(first)
    pb.response(first)
    replay = planner_flow(kit.grpc(kit.replay_request(steps)), path=REPLAY)
    pb.request(replay)
    assert replay.metadata[META]["delta_start"] == 0 and len(_replay_steps(replay.request.raw_content)) == 1


def test_an_itemless_resend_of_delivered_steps_goes_as_it_came(planner):
    """Issue 19 item 5: the second gateway re-sends delivered steps byte for byte with no items."""
    kit = _kit()
    pb, _ = planner
    steps = [kit.gateway_run("ls", "a\n"), kit.gateway_run("pwd", "/w\n")]
    first = planner_flow(kit.grpc(kit.send_without_items(steps)))
    pb.request(first)
    pb.response(first)
    body = kit.grpc(kit.send_without_items(steps))
    again = planner_flow(body)
    pb.request(again)
    pb.response(again)
    assert again.request.raw_content == body
    meta = again.metadata[META]
    assert meta["status"] == "skipped" and "neither items nor steps" in meta["reason"]
    assert meta["held"] == 2
    assert len(pb.state.store.delivered("cascade-1")) == 2, "the ledger is not shortened"
    rec = records.to_record(record_job(again))
    assert "neither items nor steps" in rec["reason"]
    from native_bridge.inspect.replay import planner as planner_replay

    assert planner_replay.recheck(planner_replay.from_flow(again)) == []
    assert planner_replay.recheck(planner_replay.from_record(rec)) == []


def test_recheck_of_replay_and_interaction_flows(planner):
    from native_bridge.inspect.replay import planner as planner_replay

    kit = _kit()
    pb, _ = planner
    steps = [kit.gateway_run("npm test", "Exit code 1\nboom"), kit.gateway_run("npm run dev", None)]
    for path, body in ((REPLAY, kit.replay_request(steps)), (INTERACT, kit.interaction_request())):
        f = planner_flow(kit.grpc(body), path=path)
        pb.request(f)
        case = planner_replay.from_flow(f)
        assert case.method == path.rsplit("/", 1)[1] and case.cascade_id == "cascade-1"
        assert planner_replay.recheck(case) == [], f.metadata[META]
        rec = records.to_record(record_job(f))
        assert planner_replay.recheck(planner_replay.from_record(rec)) == []
