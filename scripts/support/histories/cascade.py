"""Planner-hop bodies built like the gateway's: SendUserCascadeMessage requests whose steps carry the
gateway's defects, for the bench's planner section and the tests of work off the request's path."""

from __future__ import annotations

from pathlib import Path

from .agent import World

ROOT = Path(__file__).resolve().parents[3]
SEND_PATH = "/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage"
GATEWAY_FIXTURE = ROOT.parent / "shared" / "fixtures" / "gateway-3.9.27" / "grpc-turn1.bin"


class CascadeBodies:
    """SendUserCascadeMessage requests built like the gateway's (fixture turn 1 as the template:
    its fields outside field 9 kept): ``n`` run_command steps, each with its output in stdout
    and again in combined_output.full, exit_code 0, as the gateway writes them."""

    def __init__(self, seed: int, step_bytes: int = 4000) -> None:
        from native_bridge.cascade.request import parse_request

        raw = GATEWAY_FIXTURE.read_bytes() if GATEWAY_FIXTURE.exists() else None
        if raw is not None:
            msg = raw[5 : 5 + int.from_bytes(raw[1:5], "big")]
            req = parse_request(msg)
            self.rest = b"".join(msg[f.start : f.end] for f in req.fields if f.number not in (1, 9))
        else:  # no shared fixtures here: items (2) with one text only
            from native_bridge.cascade.wire import len_field

            self.rest = len_field(2, len_field(1, b"Fix the failing test."))
        self.world = World(seed, ("bash",), (step_bytes // 2 - 100, step_bytes // 2 + 100))
        self.steps: list[bytes] = []

    def step(self) -> bytes:
        from native_bridge.cascade.wire import len_field, varint_field

        c = self.world.call("bash")
        text = c.output.encode()
        rc = (
            len_field(23, c.args["command"].encode())
            + varint_field(11, 1)
            + len_field(4, text)
            + varint_field(6, 0)
            + len_field(21, len_field(1, text))
        )
        return varint_field(1, 28) + varint_field(4, 3) + len_field(28, rc)

    def message(self, cascade_id: str, n: int) -> bytes:
        from native_bridge.cascade.wire import len_field

        while len(self.steps) < n:
            self.steps.append(self.step())
        return len_field(1, cascade_id.encode()) + self.rest + b"".join(len_field(9, s) for s in self.steps[:n])
