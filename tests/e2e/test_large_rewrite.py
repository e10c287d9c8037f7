"""Rewriting a long conversation through a real mitmdump: its large bodies are bridged in the worker
process, each turn sending it only what is new and getting the new body back as ranges of the last
one (runtime/continued.py). What reaches the planner is byte for byte what the core writes for the
same body on its own, turn after turn, two conversations interleaved."""

from __future__ import annotations

from pathlib import Path

import pytest
from native_bridge.core.pipeline import Config, rewrite
from native_bridge.runtime.dispatch import OFFLOAD_BYTES
from support.histories.agent import CLIENT_HINTS, AgentConversation

from .test_faults import CHAT, TAG, Proxy

pytestmark = pytest.mark.e2e


def test_a_long_conversation_rewritten_in_the_worker_reaches_the_planner_as_the_core_writes_it(
    planner, tmp_path: Path
) -> None:
    convs = [AgentConversation(700_000, seed, 6) for seed in (31, 32)]
    ua = CLIENT_HINTS["chat"]
    proxy = Proxy(planner.url, tmp_path / "records", tmp_path, "--set", "bridge_mode=rewrite")
    try:
        for turn in range(6):
            for conv in convs if turn % 2 else convs[::-1]:
                raw = conv.body(turn)
                assert len(raw) >= OFFLOAD_BYTES  # read in the worker
                tag, r = proxy.send(raw, CHAT, **{"user-agent": ua})
                assert r.status_code == 200, proxy.fail(f"HTTP {r.status_code}")
                (got,) = planner.find(TAG, tag)
                expected = rewrite(raw, Config(), CHAT, None, ua)
                assert expected.status == "rewritten" and got.body == expected.body, proxy.fail("body differs")
        assert proxy.mitm.alive() and not proxy.lines("rewrite failed"), proxy.fail("a bridge failure")
    finally:
        assert proxy.close() == 0


@pytest.fixture(scope="module")
def planner():
    from support.reference_planner import ReferencePlanner

    with ReferencePlanner() as p:
        yield p
