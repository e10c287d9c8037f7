"""Every call that carries tool history (issue 19 item 4), and the empty-send guard (item 5).

SendUserCascadeMessage: cascade_id 1, steps 9, items 2. ReplayGroundTruthTrajectory: cascade_id 3,
steps 2 (corrected like field 9, never cut: a replay states the whole trajectory again).
HandleCascadeUserInteraction: cascade_id 1, no steps: decoded for records, never rewritten.
"""

from __future__ import annotations

import pytest
from cascadekit import (
    API_KEY,
    GRPC,
    JWT,
    envelope_payload,
    gateway_run,
    grpc,
    interaction_request,
    replay_request,
    request,
    send_without_items,
)
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.calls import CALLS, INTERACTION, REPLAY, SEND, call_of, decode_interaction
from native_bridge.cascade.correct import correct_request, redact_body
from native_bridge.cascade.ledger import step_digest
from native_bridge.cascade.request import parse_request, redacted, splice
from native_bridge.cascade.steps import run_command, view
from native_bridge.cascade.wire import WireError, fields

PREFIX = "/exa.language_server_pb.LanguageServerService/"
STEPS = [gateway_run("npm test", "Exit code 1\nboom"), gateway_run("npm run dev", None), gateway_run("ls", "a\n")]


def digests(steps: list[bytes]) -> list[bytes]:
    return [step_digest(s) for s in steps]


def outside(payload: bytes, number: int) -> list[bytes]:
    return [payload[f.start : f.end] for f in fields(payload) if f.number != number]


# ---- the table --------------------------------------------------------------------------


def test_the_table_follows_the_official_request_messages() -> None:
    """Field numbers come from proto/cortex.proto (which test_proto_official holds to the official schema)."""
    assert set(CALLS) == {"SendUserCascadeMessage", "ReplayGroundTruthTrajectory", "HandleCascadeUserInteraction"}
    assert (SEND.cascade_id, SEND.steps, SEND.items, SEND.metadata, SEND.cut_delivered) == (1, 9, 2, 3, True)
    assert (REPLAY.cascade_id, REPLAY.steps, REPLAY.items, REPLAY.metadata, REPLAY.cut_delivered) == (
        3,
        2,
        None,
        1,
        False,
    )
    assert (INTERACTION.cascade_id, INTERACTION.steps, INTERACTION.metadata) == (1, None, None)
    assert INTERACTION.interaction == 2
    for call in CALLS.values():
        desc = pb.DESCRIPTOR.services_by_name["LanguageServerService"].methods_by_name[call.method].input_type
        assert desc.fields_by_name["cascade_id"].number == call.cascade_id


@pytest.mark.parametrize(
    "method", ["SendUserCascadeMessage", "ReplayGroundTruthTrajectory", "HandleCascadeUserInteraction"]
)
def test_call_of_any_package_and_service(method: str) -> None:
    assert call_of(PREFIX + method) is CALLS[method]
    assert call_of(f"/other.pkg.Svc/{method}?x=1") is CALLS[method]
    assert call_of(f"/x.Svc/Not{method}") is None


def test_other_methods_are_not_calls() -> None:
    for method in ("GetCascadeTrajectorySteps", "BranchCascade", "StartCascade", "Heartbeat", ""):
        assert call_of(PREFIX + method) is None


# ---- parse / splice / redact by the table ---------------------------------------------


def test_parse_and_splice_a_replay_by_its_own_fields() -> None:
    payload = replay_request(STEPS, "cascade-r")
    req = parse_request(payload, REPLAY)
    assert req.cascade_id == "cascade-r" and req.steps == STEPS and req.call is REPLAY
    with pytest.raises(WireError):  # by SendUserCascadeMessage's numbers, its Metadata 1 is no cascade_id
        parse_request(payload)
    out = splice(payload, req, [STEPS[2]])
    assert outside(out, 2) == outside(payload, 2)
    assert parse_request(out, REPLAY).steps == [STEPS[2]]
    assert [f.number for f in fields(out)] == [1, 2, 3, 4], "the new steps sit where the old ones were"


def test_an_interaction_has_no_steps_to_splice() -> None:
    payload = interaction_request()
    req = parse_request(payload, INTERACTION)
    assert req.cascade_id == "cascade-1" and req.steps == []
    assert splice(payload, req, []) is payload
    with pytest.raises(ValueError, match="no steps"):
        splice(payload, req, [STEPS[0]])


def test_send_counts_its_items() -> None:
    assert parse_request(request(STEPS)).items == 1
    assert parse_request(send_without_items(STEPS)).items == 0


def test_a_replay_is_redacted_in_its_metadata_field_1() -> None:
    payload = replay_request(STEPS)
    clean = redacted(payload, REPLAY)
    assert API_KEY not in clean and JWT not in clean and b"<redacted>" in clean
    assert outside(clean, 1) == outside(payload, 1), "cascade_id 3 and the steps are kept"
    body = redact_body(grpc(payload), GRPC, {}, call=REPLAY)
    assert body is not None and API_KEY not in body and JWT not in body
    assert parse_request(envelope_payload(body), REPLAY).cascade_id == "cascade-1"


def test_an_interaction_has_no_metadata_to_redact() -> None:
    payload = interaction_request()
    assert redacted(payload, INTERACTION) == payload
    assert redact_body(grpc(payload), GRPC, {}, call=INTERACTION) == grpc(payload)


def test_the_interaction_decodes_as_data() -> None:
    doc = decode_interaction(interaction_request(step_index=5, submitted="printf 'x'; exit 2"))
    assert doc["cascadeId"] == "cascade-1"
    assert doc["interaction"]["stepIndex"] == 5 and doc["interaction"]["trajectoryId"] == "traj-1"
    run = doc["interaction"]["runCommand"]
    assert run == {
        "confirm": True,
        "proposedCommandLine": "npm test",
        "submittedCommandLine": "printf 'x'; exit 2",
        "action": "RUN_COMMAND_ACTION_CONFIRM",
    }


# ---- correct_request per call ----------------------------------------------------------


def test_replay_steps_are_corrected_like_field_9() -> None:
    send = correct_request(grpc(request(STEPS)), GRPC, {}, None)
    r = correct_request(grpc(replay_request(STEPS)), GRPC, {}, None, call=REPLAY)
    assert r.status == "corrected" and r.method == "ReplayGroundTruthTrajectory" and r.cascade_id == "cascade-1"
    assert [(c.index, c.action) for c in r.corrections] == [(c.index, c.action) for c in send.corrections]
    assert r.steps_after == send.steps_after
    out = envelope_payload(r.body)
    assert outside(out, 2) == outside(replay_request(STEPS), 2), "every byte outside replay_steps as it came"
    npm = run_command(view(parse_request(out, REPLAY).steps[0]).body)
    assert npm.exit_code == 1 and npm.stdout is None


def test_a_replay_is_never_cut_by_the_ledger() -> None:
    """A replay states the whole trajectory again: what the ledger holds is not removed."""
    held = lambda cascade_id: digests(STEPS)  # noqa: E731
    r = correct_request(grpc(replay_request(STEPS)), GRPC, {}, held, call=REPLAY)
    assert r.delta_start == 0 and len(r.steps_after) == 2  # npm run dev dropped, nothing cut
    assert r.delivery is not None and r.delivery.steps == STEPS, "the ledger learns the replayed steps"


def test_the_replay_corrections_honour_the_types_setting() -> None:
    r = correct_request(grpc(replay_request(STEPS)), GRPC, {}, None, call=REPLAY, types="keep")
    assert "type" not in {c.action for c in r.corrections}


def test_an_interaction_is_recorded_never_rewritten() -> None:
    body = grpc(interaction_request())
    r = correct_request(body, GRPC, {}, None, call=INTERACTION)
    assert r.status == "unchanged" and r.body is None and r.method == "HandleCascadeUserInteraction"
    assert r.cascade_id == "cascade-1" and r.delivery is None and r.steps_before == []
    assert "never rewritten" in r.reason and "command line" in r.reason


def test_the_default_call_is_send_and_results_name_it() -> None:
    r = correct_request(grpc(request(STEPS)), GRPC, {}, None)
    assert r.method == "SendUserCascadeMessage"
    assert correct_request(b"\x00\x00", GRPC, {}, None, call=REPLAY).method == "ReplayGroundTruthTrajectory"


# ---- never a request nobody has seen accepted ------------------------------------------


def test_a_resend_of_delivered_steps_without_items_goes_as_it_came() -> None:
    """The second gateway re-sent two delivered steps byte for byte with no items: cut to the
    delta that would be a send with neither items nor steps. It goes as it came, the ledger is
    not written by it, and the reason says why."""
    steps = [gateway_run("ls", "a\n"), gateway_run("pwd", "/w\n")]
    body = grpc(send_without_items(steps))
    r = correct_request(body, GRPC, {}, digests(steps))
    assert r.status == "skipped" and r.body is None
    assert "neither items nor steps" in r.reason
    assert r.delivery is None, "the ledger is not shortened (nor rewritten) by it"
    assert r.held == 2 and r.delta_start == 0 and r.steps_after == r.steps_before == steps


def test_corrections_that_would_drop_every_step_of_an_itemless_send_are_withheld() -> None:
    body = grpc(send_without_items([gateway_run("npm run dev", None)]))  # unobserved: would be dropped
    r = correct_request(body, GRPC, {}, None)
    assert r.status == "skipped" and r.body is None and "neither items nor steps" in r.reason


def test_with_items_an_empty_delta_is_still_cut() -> None:
    steps = [gateway_run("ls", "a\n")]
    r = correct_request(grpc(request(steps)), GRPC, {}, digests(steps))
    assert r.status == "corrected" and parse_request(envelope_payload(r.body)).steps == []
    assert r.held == 1 and r.delta_start == 1


def test_a_replay_whose_every_step_would_be_dropped_goes_as_it_came() -> None:
    body = grpc(replay_request([gateway_run("npm run dev", None)]))
    r = correct_request(body, GRPC, {}, None, call=REPLAY)
    assert r.status == "skipped" and r.body is None and "neither items nor steps" in r.reason


def test_a_send_that_came_empty_is_just_unchanged() -> None:
    r = correct_request(grpc(send_without_items([])), GRPC, {}, None)
    assert r.status == "unchanged"
