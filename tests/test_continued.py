"""A large body crosses to the worker as what follows the part the worker holds (runtime/continued.py).

- the shared length is exact, whatever the bytes (the 64-byte windows only guess it);
- the proxy's held bodies and the worker's stay the same set, turn after turn, with forks,
  rewinds and evictions, and every body the worker joins is the one the proxy sent;
- a rewritten body comes back as ranges of the one written for the base and the bytes
  between them, which join to it exactly;
- through the real worker process, a conversation's turns give what the inline path gives,
  while only their new part crosses, both ways; a worker that does not hold a base gets the body whole;
  one that is gone leaves the jobs running here, whole.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import random
import sys

import pytest
from native_bridge.chat_hop.jobs import Job, bridge
from native_bridge.core.memo.store import Memo
from native_bridge.core.pipeline import Config, rewrite
from native_bridge.runtime import continued, offload
from native_bridge.runtime.continued import (
    MIN_SHARED,
    RESEND,
    Continued,
    Held,
    Resend,
    body_delta,
    common_prefix,
    join,
    rebuild,
)
from native_bridge.runtime.offload import Offloader
from support.histories import DIALECT_PATHS
from support.histories.agent import AgentConversation, Session

UA = "claude-cli/2.1.332 (external, cli)"


def test_the_shared_length_is_exact() -> None:
    rng = random.Random(5)
    cases = [(b"", b""), (b"a", b""), (b"abc", b"abd"), (b"x" * 1000, b"x" * 1000), (b"x" * 1000, b"x" * 999 + b"y")]
    for _ in range(300):
        n = rng.choice([0, 1, 63, 64, 65, 200, 5000, 70_000])
        head = rng.randbytes(n)
        a = head + rng.randbytes(rng.choice([0, 1, 100, 3000]))
        b = head + rng.randbytes(rng.choice([0, 1, 100, 3000]))
        cases.append((a, b))
    # Windows that agree where the bodies already differ: the guess is wrong, the answer is not.
    block = rng.randbytes(64)
    cases.append((b"A" + block * 500, b"B" + block * 500))
    cases.append((block * 300 + b"A" + block * 300, block * 300 + b"B" + block * 300))
    for a, b in cases:
        reference = len(os.path.commonprefix([a, b]))  # noqa: RUF071 (byte by byte is what is meant)
        assert common_prefix(a, b) == common_prefix(b, a) == reference


@dataclasses.dataclass(frozen=True)
class _Job:
    raw: bytes
    n: int = 0


def _worker_side(held: dict[int, bytes]):
    seen: list[bytes] = []

    def run(job: _Job) -> int:
        seen.append(job.raw)
        return len(job.raw)

    return seen, lambda c: rebuild(c, held, run)


def test_both_sides_hold_the_same_bodies_and_every_body_is_rebuilt_exactly() -> None:
    """Three conversations with one long start (a system prompt), turns interleaved, a rewind
    (an earlier body again), then a fourth conversation, one more than are held: every body the
    worker joins is the body sent, and after each job the worker holds what the proxy holds."""
    rng = random.Random(11)
    start = rng.randbytes(80_000)
    convs = [[start + rng.randbytes(400_000)] for _ in range(3)]
    held = Held(max_bodies=3, max_bytes=10**9)
    worker: dict[int, bytes] = {}
    seen, run = _worker_side(worker)
    sent = []
    for turn in range(12):
        if turn == 8:
            convs.append([start + rng.randbytes(400_000)])
        for i, conv in enumerate(convs):
            if turn == 6 and i == 1:
                raw = conv[2]  # a rewind: it goes on from an older body's start
            else:
                raw = conv[-1] + rng.randbytes(rng.choice([100, 5000]))
                conv.append(raw)
            shipped = held.ship(_Job(raw))
            reply = run(shipped)
            if reply is RESEND:
                reply = run(held.whole(shipped, raw))
            assert reply == len(raw) and seen[-1] == raw
            sent.append(raw)
            assert set(worker) == set(held._bodies)  # the drops told it what the proxy forgot
            assert all(worker[t] == held._bodies[t] for t in worker)
    assert len(held) == 3 and len(worker) == 3
    assert held.saved > held.sent  # most bodies went on from one held (until the fourth conversation)


def test_a_fork_keeps_both_bodies_and_a_next_turn_replaces_its_own() -> None:
    rng = random.Random(12)
    start = rng.randbytes(100_000)
    a, b = start + rng.randbytes(200_000), start + rng.randbytes(200_000)
    held = Held()
    held.ship(_Job(a))
    fork = held.ship(_Job(b))  # shares the start only: both stay
    assert fork.base is not None and fork.shared == len(start) and len(held) == 2
    nxt = held.ship(_Job(a + b"more"))  # a's next turn: it goes on from a, and takes its place
    assert nxt.shared == len(a) and len(held) == 2 and fork.token in held._bodies


@dataclasses.dataclass
class _Reply:
    body: bytes | None = None
    delta: object = None


def test_the_held_bodies_and_their_rewritten_bodies_stay_within_the_bound() -> None:
    held, worker = Held(max_bodies=8, max_bytes=2_000_000), {}
    _seen, run = _worker_side(worker)
    for i in range(6):
        raw = bytes([i]) * 400_000
        shipped = held.ship(_Job(raw))
        run(shipped)
        held.receive(shipped, _Reply(body=b"w" * 300_000))
        assert held._bytes == sum(map(len, held._bodies.values())) + sum(map(len, held._written.values()))
        assert held._bytes <= 2_000_000 and set(held._written) <= set(held._bodies)
    assert len(held) == 2  # two bodies and their rewritten ones: 1.4 MB; a third would be 2.1 MB
    run(held.ship(_Job(b"x")))  # the next job tells the worker what was forgotten
    assert set(worker) == set(held._bodies)


def test_of_many_held_bodies_with_one_start_only_the_best_is_compared_in_full(monkeypatch) -> None:
    """Forks of one long history: each held body shares a long start with the new one, and one
    shares the most. The windows pick it; only it is compared in full (one pass, not one each)."""
    rng = random.Random(13)
    start = rng.randbytes(300_000)
    held = Held()
    forks = [start + rng.randbytes(400_000 + 50_000 * i) for i in range(5)]  # under half shared: all kept
    for raw in forks:
        held.ship(_Job(raw))
    assert len(held) == 5
    proofs = []
    real = continued.common_prefix
    monkeypatch.setattr(continued, "common_prefix", lambda a, b: proofs.append(len(a)) or real(a, b))
    new = forks[2] + b"next"
    shipped = held.ship(_Job(new))
    assert proofs == [len(forks[2])] and shipped.shared == len(forks[2])


def test_a_worker_without_the_base_answers_resend() -> None:
    held, worker = Held(), {}
    _seen, run = _worker_side(worker)
    raw = b"x" * 200_000
    assert run(held.ship(_Job(raw))) == len(raw)
    worker.clear()  # a new worker: it holds nothing
    shipped = held.ship(_Job(raw + b"y"))
    assert shipped.base is not None and run(shipped) is RESEND
    assert run(held.whole(shipped, raw + b"y")) == len(raw) + 1 and set(worker) == set(held._bodies)


def test_a_continued_job_crosses_with_its_rest_only() -> None:
    import pickle

    raw = b"x" * 500_000
    c = Held().ship(_Job(raw))
    c2 = Continued(c.job, 2, c.token, len(raw), b"tail" * 30_000, len(raw) + 120_000, ())
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(c2, protocol=5, buffer_callback=buffers.append)
    assert len(data) < 1000 and sum(b.raw().nbytes for b in buffers) == 120_000  # out of band
    assert pickle.loads(pickle.dumps(RESEND)) is RESEND


@pytest.mark.parametrize("dialect", ["chat", "anthropic", "responses"])
def test_a_rewritten_body_is_the_pieces_of_the_one_before(dialect) -> None:
    """Each turn's rewritten body against the last one's (most of it as ranges), an earlier
    turn's (a rewind), and another conversation's: the pieces join to the body, byte for byte."""
    path = DIALECT_PATHS[dialect]

    def written(s: Session, rounds: list[int]) -> list:
        memo, out = Memo(), []
        for r in rounds:
            result = rewrite(s.body(r), Config(), path, memo, UA)
            assert result.written is not None and result.written.body == result.body
            out.append(result.written)
        return out

    turns = written(Session(dialect, 2, seed=41, out=(2000, 9000)), [*range(20, 30), 24])
    other = written(Session(dialect, 2, seed=42, out=(2000, 9000)), [25])[0]
    shared = 0
    for old, new in [*itertools.pairwise(turns), (turns[3], turns[8]), (other, turns[5]), (turns[5], other)]:
        pieces = body_delta(old, new)
        if pieces is None:
            continue
        assert join(old.body, pieces) == new.body
        ranges = sum(p[1] - p[0] for p in pieces if type(p) is tuple)
        assert ranges >= MIN_SHARED
        shared += ranges
    pieces = body_delta(turns[0], turns[1])
    assert pieces is not None and sum(len(p) for p in pieces if type(p) is bytes) < 0.2 * len(turns[1].body)
    assert shared > 5 * len(turns[-1].body)


@pytest.fixture
def off():
    o = Offloader()
    yield o
    o.close()


@pytest.mark.parametrize("emit", [True, False], ids=["rewrite", "records"])
def test_a_conversation_through_the_worker_sends_only_its_new_part(off, emit) -> None:
    """Rewriting (or observing with records: the worker keeps both), a turn's body crosses as
    what follows the last one's, and the worker gives what the inline path gives."""
    conv = AgentConversation(400_000, 7, 8)
    memo = Memo()
    for t in range(8):
        raw = conv.body(t)
        job = Job(raw, Config(), DIALECT_PATHS["chat"], UA, emit=emit, record=not emit)
        sent, saved = off.held.sent, off.held.saved
        assert asyncio.run(off.run(job)) == bridge(job, memo)
        if t:
            assert off.held.saved - saved > 0.9 * len(raw) and off.held.sent - sent < 0.1 * len(raw)
    assert len(off.held) == 1
    # The rewritten bodies came back as pieces of the last one (records mode writes none).
    assert (off.held.received_saved > 5 * len(raw)) == emit


def test_two_conversations_interleaved_come_back_as_their_own_pieces(off) -> None:
    """Two conversations with the same history, one a few bytes longer at the start (another
    model name): the steps are the same bytes at other offsets, so pieces of the wrong one's
    body would join to a wrong body. Turns interleaved in both orders."""
    a = AgentConversation(400_000, 10, 6)
    bodies = {"a": [a.body(t) for t in range(6)]}
    bodies["b"] = [raw.replace(b'"model":"', b'"model":"other-', 1) for raw in bodies["a"]]
    assert bodies["b"][0] != bodies["a"][0]
    memo = Memo()
    for t in range(6):
        for name in ("a", "b") if t % 2 else ("b", "a"):
            job = Job(bodies[name][t], Config(), DIALECT_PATHS["chat"], UA, emit=True, record=False)
            assert asyncio.run(off.run(job)) == bridge(job, memo)
    assert len(off.held) == 2 and off.held.received_saved > 8 * 400_000


def test_pieces_that_do_not_join_fail_that_request_alone(off) -> None:
    """Pieces of a body the proxy does not hold as the worker does (a bug, made here by changing
    the proxy's copy): that request fails (the dispatch sends it on untouched), and the next turn
    of the conversation goes whole and is right again."""
    conv = AgentConversation(400_000, 14, 4)
    memo = Memo()
    jobs = [Job(conv.body(t), Config(), DIALECT_PATHS["chat"], UA, emit=True, record=False) for t in range(4)]
    assert asyncio.run(off.run(jobs[0])) == bridge(jobs[0], memo)
    (token,) = off.held._written
    off.held._written[token] = off.held._written[token][:100_000]  # not what the worker wrote
    with pytest.raises(ValueError, match="do not join"):
        asyncio.run(off.run(jobs[1]))
    bridge(jobs[1], memo)
    for job in jobs[2:]:
        assert asyncio.run(off.run(job)) == bridge(job, memo)


def test_a_light_job_or_one_too_large_to_keep_crosses_whole(off, monkeypatch) -> None:
    monkeypatch.setattr(offload, "WORKER_MEMO_MAX_BODY", 300_000)
    conv = AgentConversation(400_000, 8, 4)
    for t in range(3):
        raw = conv.body(t)
        for emit in (False, True):  # observe without records is light: the proxy keeps that one
            asyncio.run(off.run(Job(raw, Config(), DIALECT_PATHS["chat"], UA, emit=emit, record=False)))
    assert off.held.saved == 0 and len(off.held) == 0


def test_a_worker_that_lost_a_body_gets_it_whole(off, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))  # the worker imports _Forget from here
    s = Session("anthropic", parallel=2, seed=21, out=(20_000, 40_000))
    memo = Memo()
    path = DIALECT_PATHS["anthropic"]
    jobs = [Job(s.body(r), Config(), path, UA, emit=True, record=False) for r in (6, 7, 8)]
    assert asyncio.run(off.run(jobs[0])) == bridge(jobs[0], memo)
    # The worker forgets what it holds (as a restarted one would): it answers RESEND, and the
    # body goes again whole.
    forget = Continued(_Forget(), token=-1, base=None, shared=0, rest=b"", body_size=0, drop=tuple(off.held._bodies))
    assert off._worker.render(forget) == "forgot"
    sent = off.held.sent
    assert asyncio.run(off.run(jobs[1])) == bridge(jobs[1], memo)
    assert off.held.sent - sent >= len(jobs[1].raw)
    assert asyncio.run(off.run(jobs[2])) == bridge(jobs[2], memo)  # and the next turn continues again
    assert off.held.sent - sent < len(jobs[1].raw) + 0.2 * len(jobs[2].raw)


@dataclasses.dataclass(frozen=True)
class _Forget:
    """A job that does nothing: sent with every held body's token to drop, it empties the
    worker's held bodies behind the proxy's back."""

    raw: bytes = b""

    def run(self, memo) -> str:
        return "forgot"


def test_a_worker_that_is_gone_leaves_the_jobs_here_whole(off) -> None:
    conv = AgentConversation(400_000, 9, 4)
    memo = Memo()
    jobs = [Job(conv.body(t), Config(), DIALECT_PATHS["chat"], UA, emit=True, record=False) for t in range(4)]
    assert asyncio.run(off.run(jobs[0])) == bridge(jobs[0], memo)
    off._worker._proc.kill()  # the worker dies between two turns
    off._worker._proc.wait()
    for job in jobs[1:]:
        here, inline = asyncio.run(off.run(job)), bridge(job, memo)
        # Read here with this process's worker memo: the same body and verdict (what it hands
        # the planner hop depends on which turns that memo saw).
        assert (here.status, here.body, here.summary) == (inline.status, inline.body, inline.summary)
    assert not off._worker.remote and len(off.held) == 0 and not off._worker.local.held


def test_resend_is_a_marker() -> None:
    assert isinstance(RESEND, Resend) and continued.RESEND is RESEND
