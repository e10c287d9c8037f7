"""SendUserCascadeMessageRequest at wire level: parse, the field-9 splice (every other byte kept), redaction."""

from __future__ import annotations

from cascadekit import API_KEY, JWT, envelope_payload, fixture, gateway_run, request
from hypothesis import given, settings
from hypothesis import strategies as st
from native_bridge._proto import cortex_pb2 as pb
from native_bridge.cascade.request import parse_request, redacted, splice
from native_bridge.cascade.wire import fields, len_field, varint_field

STEPS = [gateway_run("npm test", "Exit code 1\nboom"), gateway_run("npm run dev", None), gateway_run("true", "")]


def outside_9(payload: bytes) -> list[bytes]:
    """Every top-level field except additional_steps, as bytes, in order."""
    return [payload[f.start : f.end] for f in fields(payload) if f.number != 9]


def test_parse_the_gateway_request() -> None:
    payload = envelope_payload(fixture("grpc-turn1.bin"))
    req = parse_request(payload)
    msg = pb.SendUserCascadeMessageRequest.FromString(payload)
    assert req.cascade_id == msg.cascade_id == "fake-cascade-1"
    # Same steps; the gencode would re-serialize them in field order, the gateway's order is kept.
    assert [pb.CortexTrajectoryStep.FromString(s) for s in req.steps] == list(msg.additional_steps)
    assert req.steps[0] != msg.additional_steps[0].SerializeToString()
    assert [f.number for f in req.fields] == [1, 2, 3, 5, 9, 9, 9, 9]


def test_parse_without_steps_or_id() -> None:
    req = parse_request(len_field(2, b""))
    assert req.cascade_id is None and req.steps == [] and req.step_fields == []


def test_splice_with_the_same_steps_returns_the_payload_itself() -> None:
    payload = request(STEPS)
    req = parse_request(payload)
    assert splice(payload, req, list(req.steps)) is payload


def test_splice_keeps_every_other_byte() -> None:
    for layout in ("end", "middle"):
        payload = request(STEPS, steps_at=layout)
        req = parse_request(payload)
        out = splice(payload, req, [STEPS[2]])
        assert outside_9(out) == outside_9(payload)
        assert parse_request(out).steps == [STEPS[2]]
        # The new entries sit where the first old one was.
        numbers = [f.number for f in fields(out)]
        assert numbers.index(9) == [f.number for f in fields(payload)].index(9)


def test_splice_interleaved_steps_go_where_the_first_was() -> None:
    a, b, c = (len_field(9, s) for s in STEPS)
    other = len_field(2, b"x") + varint_field(7, 1)
    payload = len_field(1, b"id") + a + other + b + len_field(5, b"") + c
    req = parse_request(payload)
    out = splice(payload, req, [STEPS[0], STEPS[2]])
    assert out == len_field(1, b"id") + a + c + other + len_field(5, b"")


def test_splice_appends_when_there_were_no_steps() -> None:
    payload = request([])
    out = splice(payload, parse_request(payload), [STEPS[0]])
    assert out == payload + len_field(9, STEPS[0])


def test_splice_can_remove_every_step() -> None:
    payload = request(STEPS)
    out = splice(payload, parse_request(payload), [])
    assert outside_9(out) == outside_9(payload) and parse_request(out).steps == []


# ---- property: random other fields, random steps --------------------------------------

# Any field but 9, and but 1 (cascade_id must be a string to parse): known and unknown numbers.
_number = st.integers(2, 200).filter(lambda n: n != 9)
_other_field = st.one_of(
    st.builds(len_field, st.just(1), st.text(max_size=20).map(str.encode)),
    st.builds(len_field, _number, st.binary(max_size=40)),
    st.builds(varint_field, _number, st.integers(-(2**63), 2**64 - 1)),
    st.builds(
        lambda n, b: bytes([(n << 3) | 5]) + b,
        st.integers(2, 15).filter(lambda n: n != 9),
        st.binary(min_size=4, max_size=4),
    ),
)
_step = st.binary(max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    layout=st.lists(st.one_of(_other_field, st.builds(lambda s: ("step", s), _step)), max_size=12),
    new_steps=st.lists(_step, max_size=6),
)
def test_splice_preserves_everything_outside_field_9(layout: list, new_steps: list[bytes]) -> None:
    payload = b"".join(len_field(9, x[1]) if isinstance(x, tuple) else x for x in layout)
    req = parse_request(payload)
    out = splice(payload, req, new_steps)
    assert outside_9(out) == outside_9(payload)
    assert parse_request(out).steps == new_steps
    if new_steps == req.steps:
        assert out is payload


# ---- secrets ------------------------------------------------------------------------


def test_redacted_removes_api_key_and_user_jwt() -> None:
    payload = request(STEPS)
    clean = redacted(payload)
    assert API_KEY not in clean and JWT not in clean
    assert b"<redacted>" in clean
    assert outside_3(clean) == outside_3(payload)
    meta = next(f for f in fields(clean) if f.number == 3)
    inner = fields(clean[meta.value_start : meta.end])
    assert [f.number for f in inner] == [1, 3, 21, 9]  # other Metadata fields kept, in order
    pb.SendUserCascadeMessageRequest.FromString(clean)  # lengths re-encoded correctly


def outside_3(payload: bytes) -> list[bytes]:
    return [payload[f.start : f.end] for f in fields(payload) if f.number != 3]


def test_redacted_on_the_gateway_fixtures() -> None:
    for name in ("grpc-turn1.bin", "grpc-turn2-resumed.bin", "connect-turn1.bin"):
        payload = envelope_payload(fixture(name))
        assert API_KEY in payload
        clean = redacted(payload)
        assert API_KEY not in clean, name
        assert parse_request(clean).steps == parse_request(payload).steps


def test_unparsable_metadata_is_replaced_whole() -> None:
    payload = len_field(1, b"id") + len_field(3, b"\x1a\x50" + API_KEY)  # api_key length lies
    clean = redacted(payload)
    assert API_KEY not in clean
    assert clean == len_field(1, b"id") + len_field(3, b"<redacted>")
