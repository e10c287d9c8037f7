"""The planner hop in front of a second gateway (tests/cascade/second_gateway.py): steps in
every status, command_status bodies beside each run_command, exit codes made up from the
client's flag, every step typed 8 or numbered like its body (issue 19)."""

from __future__ import annotations

import pytest
import second_gateway as gw
from cascadekit import GRPC, envelope_payload
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.calls import INTERACTION, REPLAY
from native_bridge.cascade.correct import correct_request, redact_body
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.wire import fields
from native_bridge.evidence import Observation

HISTORY = [
    # Codex's frame: the command failed with 2 (the gateway saw no flag: it made up 0).
    gw.Call("ls /nope", "Exit code: 2\nWall time: 0.2 seconds\nOutput:\nls: cannot access '/nope'\n", False, "c1"),
    # Claude Code's frame with its flag: 137 (the gateway made up 1).
    gw.Call("npm test", "Exit code 137\nKilled", True, "c2"),
    # Bare output: nothing states the code (the gateway made up 0).
    gw.Call("make", "built app\n", False, "c3"),
]
TRUTH = [2, 137, None]  # what the client's words state; None: absent, never the made-up 0 or 1
ALL_STATUSES = [v.number for v in pb.CortexStepStatus.DESCRIPTOR.values]


def corrected(message: bytes, evidence=None, client=None):
    r = correct_request(gw.grpc(message), GRPC, {}, None, evidence, client=client)
    assert r.status == "corrected", r.reason
    return r, [pb.CortexTrajectoryStep.FromString(s) for s in parse_request(envelope_payload(r.body)).steps]


def outside_steps(message: bytes) -> list[bytes]:
    return [message[f.start : f.end] for f in fields(message) if f.number != 9]


@pytest.mark.parametrize("status", ALL_STATUSES)
def test_in_every_status_the_exit_code_is_the_clients_or_absent(status: int) -> None:
    message = gw.send("cascade-a", HISTORY, status=status)
    r, steps = corrected(message)
    runs = [s.run_command for s in steps if s.HasField("run_command")]
    statuses = [s.command_status for s in steps if s.HasField("command_status")]
    assert len(runs) == len(statuses) == 3, "no step is added or removed: each carries its result"
    got_runs = [rc.exit_code if rc.HasField("exit_code") else None for rc in runs]
    got_statuses = [cs.exit_code if cs.HasField("exit_code") else None for cs in statuses]
    assert got_runs == got_statuses == TRUTH
    assert all(rc.stdout == "" for rc in runs), "no stdout repeats combined_output"
    assert all(cs.stdout == "" and cs.delta == cs.combined for cs in statuses)
    assert [s.status for s in steps] == [status] * 6, "the step's state in the trajectory is left as sent"
    assert [cs.status for cs in statuses] == [2, 3, 2], "the body's own status too"
    assert outside_steps(envelope_payload(r.body)) == outside_steps(message), "every byte outside the steps"


@pytest.mark.parametrize("numbering", ["view_file", "body", "official"])
def test_every_type_names_its_body_whatever_the_numbering(numbering: str) -> None:
    _, steps = corrected(gw.send("cascade-b", HISTORY, numbering=numbering))  # type: ignore[arg-type]
    expect = [pb.CORTEX_STEP_TYPE_RUN_COMMAND, pb.CORTEX_STEP_TYPE_COMMAND_STATUS] * 3
    assert [s.type for s in steps] == expect
    # Both numberings give the same steps once corrected.
    assert steps == corrected(gw.send("cascade-b", HISTORY, numbering="view_file"))[1]


def test_the_chat_hops_observation_decides_both_bodies() -> None:
    # The chat hop saw make's result with its client's success words: exit 0, in both bodies.
    def lookup(kind: str, command: str, output: str) -> Observation | None:
        return Observation(exit_code=0, failed=False, client="zed") if command == "make" else None

    _, steps = corrected(gw.send("cascade-c", HISTORY), lookup)
    assert steps[4].run_command.exit_code == 0 and steps[4].run_command.HasField("exit_code")
    assert steps[5].command_status.exit_code == 0 and steps[5].command_status.HasField("exit_code")


def test_no_key_in_what_a_record_holds() -> None:
    message = gw.send("cascade-d", HISTORY, api_key="sk-second-gateway-KEY-0123")
    assert b"sk-second-gateway-KEY" in message
    r, _ = corrected(message)
    text = repr((r.changes_json(), r.before, r.after, r.reason))
    assert "sk-second-gateway-KEY" not in text
    assert b"sk-second-gateway-KEY" not in (redact_body(gw.grpc(message), GRPC, {}) or b"")


def test_its_replay_is_corrected_like_its_send() -> None:
    r = correct_request(gw.grpc(gw.replay("cascade-e", HISTORY)), GRPC, {}, None, call=REPLAY)
    assert r.status == "corrected" and r.delta_start == 0, r.reason
    steps = [pb.CortexTrajectoryStep.FromString(s) for s in r.steps_after]
    assert steps == corrected(gw.send("cascade-e", HISTORY))[1]


def test_its_interaction_goes_as_it_came() -> None:
    """The submitted command line is what the language server will run: never rewritten."""
    body = gw.grpc(gw.interaction("cascade-f", 1, HISTORY[1], 1))
    r = correct_request(body, GRPC, {}, None, call=INTERACTION)
    assert r.status == "unchanged" and r.body is None  # the caller sends the original bytes


def test_a_resend_of_its_delivered_steps_with_no_items_goes_as_sent() -> None:
    message = gw.send("cascade-g", HISTORY, items=False)
    first = correct_request(gw.grpc(gw.send("cascade-g", HISTORY)), GRPC, {}, None)
    again = correct_request(gw.grpc(message), GRPC, {}, first.digests)
    assert again.body is None and "neither items nor steps" in again.reason, again.reason
