"""A second stand-in gateway, written from the official schema (proto/cortex.proto, which
tests/test_proto_official.py holds to the official numbers) and from what is known of
the second public gateway's sends (proto/README.md, "Gateways checked"), independent of the known
gateway's code and of scripts/support/known_gateway.py.

It turns an agent's shell history (what the client ran, its output, its error flag) into
the SendUserCascadeMessage requests such a gateway makes:

- each call becomes a ``run_command`` step and a ``command_status`` step (official bodies
  28 and 37), both in ``status`` (RUNNING by default: that gateway's habit; any official
  value can be asked for);
- the output goes into ``stdout`` and ``combined_output.full`` of the run_command, and into
  ``stdout``, ``combined`` and ``delta`` of the command_status;
- the exit code is made up from the client's error flag (1, or 0), as that gateway does
  when the client states none;
- ``numbering``: ``"view_file"`` types every step 8 (officially VIEW_FILE, that gateway's
  habit), ``"body"`` types each step with its body's field number (the known gateway's
  habit: run_command 28, officially COMMAND_STATUS), ``"official"`` as the schema says;
- a resumed turn re-sends the delivered steps byte for byte; with ``items=False`` it sends
  them with no text item (a re-send the gateway makes to nudge a cascade).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from native_bridge._proto import cortex_pb2 as pb

Numbering = Literal["view_file", "body", "official"]
RUNNING = pb.CORTEX_STEP_STATUS_RUNNING


@dataclass(frozen=True)
class Call:
    command: str
    output: str
    failed: bool  # the client's error flag, as the gateway saw it
    command_id: str


def _type(numbering: Numbering, body: str, official: int) -> int:
    if numbering == "view_file":
        return pb.CORTEX_STEP_TYPE_VIEW_FILE
    if numbering == "body":
        return pb.CortexTrajectoryStep.DESCRIPTOR.fields_by_name[body].number
    return official


def steps_of(call: Call, status: int = RUNNING, numbering: Numbering = "view_file") -> list[bytes]:
    """The gateway's two steps for one call: its run_command and its command_status."""
    made_up = 1 if call.failed else 0
    run = pb.CortexTrajectoryStep(
        type=_type(numbering, "run_command", pb.CORTEX_STEP_TYPE_RUN_COMMAND),  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        run_command=pb.CortexStepRunCommand(
            command_line=call.command,
            command_id=call.command_id,
            stdout=call.output,
            exit_code=made_up,
            combined_output=pb.RunCommandOutput(full=call.output),
        ),
    )
    done_status = pb.CORTEX_STEP_STATUS_RUNNING if made_up == 0 else pb.CORTEX_STEP_STATUS_DONE  # its habit
    command_status = pb.CortexTrajectoryStep(
        type=_type(numbering, "command_status", pb.CORTEX_STEP_TYPE_COMMAND_STATUS),  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        command_status=pb.CortexStepCommandStatus(
            command_id=call.command_id,
            status=done_status,
            stdout=call.output,
            combined=call.output,
            delta=call.output,
            exit_code=made_up,
        ),
    )
    return [run.SerializeToString(), command_status.SerializeToString()]


def send(
    cascade_id: str,
    history: list[Call],
    *,
    status: int = RUNNING,
    numbering: Numbering = "view_file",
    items: bool = True,
    api_key: str = "sk-second-gateway-KEY-0123",
) -> bytes:
    """A SendUserCascadeMessageRequest (the message, unframed) carrying the whole history."""
    steps = [pb.CortexTrajectoryStep.FromString(s) for c in history for s in steps_of(c, status, numbering)]
    req = pb.SendUserCascadeMessageRequest(
        cascade_id=cascade_id,
        items=[pb.TextOrScopeItem(text="go on")] if items else [],
        additional_steps=steps,
    )
    raw = req.SerializeToString()
    # Metadata's api_key (3) is a credential; our subset declares no Metadata field, so it is appended raw.
    meta = b"\x1a" + bytes([len(api_key) + 2]) + b"\x1a" + bytes([len(api_key)]) + api_key.encode()
    return raw + meta


def grpc(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


def interaction(cascade_id: str, step_index: int, call: Call, exit_code: int) -> bytes:
    """Its HandleCascadeUserInteraction: it confirms the language server's proposed command and
    submits, in its place, a command line that prints the client's output and exits with the code
    it chose: a command the language server will run, which the bridge never rewrites."""
    submitted = f"printf %s {call.output!r}; exit {exit_code}"
    req = pb.HandleCascadeUserInteractionRequest(
        cascade_id=cascade_id,
        interaction=pb.CascadeUserInteraction(
            trajectory_id=f"trajectory-{cascade_id}",
            step_index=step_index,
            run_command=pb.CascadeRunCommandInteraction(
                confirm=True, proposed_command_line=call.command, submitted_command_line=submitted, action=1
            ),
        ),
    )
    return req.SerializeToString()


def replay(cascade_id: str, history: list[Call], *, status: int = RUNNING, numbering: Numbering = "view_file") -> bytes:
    """Its ReplayGroundTruthTrajectory: the steps again, in replay_steps (2), with Metadata (1)."""
    steps = [pb.CortexTrajectoryStep.FromString(s) for c in history for s in steps_of(c, status, numbering)]
    return pb.ReplayGroundTruthTrajectoryRequest(cascade_id=cascade_id, replay_steps=steps).SerializeToString()
