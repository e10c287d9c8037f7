"""Every call that carries tool history, through a real mitmdump (issue 19 items 4 and 5).

grpcio client -> mitmdump -s addons/bridge.py (the planner listener) -> the stand-in language
server (scripts/support/fake_language_server.py, which keeps every body as it arrived). Bodies are built
from the official request messages: ReplayGroundTruthTrajectory (metadata 1, replay_steps 2,
cascade_id 3, cascade_config 4) and HandleCascadeUserInteraction (cascade_id 1, interaction 2).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cascade.cascadekit import (
    API_KEY,
    JWT,
    gateway_run,
    interaction_request,
    replay_request,
    request,
    send_without_items,
)
from native_bridge.cascade.calls import REPLAY as REPLAY_CALL
from native_bridge.cascade.request import parse_request
from native_bridge.cascade.steps import run_command, view
from native_bridge.cascade.wire import fields

from .grpckit import SEND, call, wait_for
from .test_planner_hop import RawPlanner

pytestmark = pytest.mark.e2e
REPLAY = SEND.replace("SendUserCascadeMessage", "ReplayGroundTruthTrajectory")
INTERACT = SEND.replace("SendUserCascadeMessage", "HandleCascadeUserInteraction")
FAILED = gateway_run("npm test", "Exit code 1\nboom")  # the gateway's exit 0, output twice
UNOBSERVED = gateway_run("npm run dev", None)  # DONE without a result
LS = gateway_run("ls", "a\n")


def received(p: RawPlanner, path: str) -> list[bytes]:
    """The messages the language server got on ``path`` (grpcio sends one uncompressed envelope)."""
    out = []
    for c in p.raw.calls():
        if c["path"] == path:
            body = base64.b64decode(c["body_b64"])
            assert body[0] == 0 and int.from_bytes(body[1:5], "big") == len(body) - 5
            out.append(body[5:])
    return out


def commands(steps: list[bytes]) -> list[tuple[str | None, int | None]]:
    out = []
    for s in steps:
        v = view(s)
        rc = run_command(v.body)
        out.append((rc.command_line, rc.exit_code))
    return out


def test_replay_is_corrected_the_ledger_learns_it_and_the_interaction_passes_as_it_came(tmp_path: Path):
    replay = replay_request([FAILED, UNOBSERVED, LS], "cascade-e2e")
    interaction = interaction_request("cascade-e2e", step_index=4, submitted="printf 'boom\\n'; exit 2")
    new = gateway_run("cat x", "y\n")
    send = request([FAILED, UNOBSERVED, LS, new], "cascade-e2e")
    with RawPlanner(tmp_path) as p:
        call(p.port, replay, method=REPLAY)
        call(p.port, interaction, method=INTERACT)
        call(p.port, send)
        wait_for(lambda: len(p.raw.calls()) >= 3)
        [got_replay], [got_interaction], [got_send] = received(p, REPLAY), received(p, INTERACT), received(p, SEND)
        recs = [r for r in p.records_json(3) if r.get("dialect") == "cascade"]
        raw = b"".join(f.read_bytes() for f in p.records.rglob("*") if f.is_file())
    # The replay: corrected like field 9 (npm test's 0 is gone, the unobserved step dropped), nothing
    # cut, every byte outside replay_steps as it came.
    steps = parse_request(got_replay, REPLAY_CALL).steps
    assert commands(steps) == [("npm test", 1), ("ls", None)]
    assert [got_replay[f.start : f.end] for f in fields(got_replay) if f.number != 2] == [
        replay[f.start : f.end] for f in fields(replay) if f.number != 2
    ]
    # The interaction: byte for byte (its submitted command line is what the language server runs).
    assert got_interaction == interaction
    # The send after the replay: the ledger holds the replayed steps, so only the new one goes.
    assert commands(parse_request(got_send).steps) == [("cat x", None)]
    by_method = {r["planner"]["method"]: r for r in recs}
    assert set(by_method) == {"ReplayGroundTruthTrajectory", "HandleCascadeUserInteraction", "SendUserCascadeMessage"}
    assert by_method["ReplayGroundTruthTrajectory"]["status"] == "corrected"
    assert len(by_method["ReplayGroundTruthTrajectory"]["planner"]["steps_after"]) == 2
    assert by_method["SendUserCascadeMessage"]["planner"]["delta_start"] == 3
    shown = by_method["HandleCascadeUserInteraction"]["planner"]["interaction"]["interaction"]
    assert shown["stepIndex"] == 4 and shown["runCommand"]["submittedCommandLine"] == "printf 'boom\\n'; exit 2"
    assert shown["runCommand"]["confirm"] is True
    for secret in (API_KEY, JWT):  # no key in any record (a replay's Metadata is field 1), nor in body_hex
        assert secret not in raw and secret.hex().encode() not in raw


def test_an_itemless_resend_of_delivered_steps_reaches_the_language_server_as_sent(tmp_path: Path):
    first = send_without_items([LS, gateway_run("pwd", "/w\n")], "cascade-again")
    with RawPlanner(tmp_path) as p:
        call(p.port, first)
        call(p.port, first)  # byte for byte again, no items: cut, it would be empty
        sent = received(p, SEND)
        recs = [r for r in p.records_json(2) if r.get("dialect") == "cascade"]
    assert sent[1] == first, "no request with neither items nor steps"
    [again] = [r for r in recs if r["status"] == "skipped"]
    assert "neither items nor steps" in again["reason"] and again["planner"]["held"] == 2
