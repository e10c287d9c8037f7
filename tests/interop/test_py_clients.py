"""The Python agent clients (pyclients.PY_DRIVERS: the OpenAI Agents SDK, OpenHands,
mini-swe-agent, gptme, Kimi CLI) through a real mitmdump with the bridge: every scripted call's result must reach
the planner as the exact truth (pyclients.py says how each client is driven and what each
expectation means). A client that is not installed is skipped (scripts/interop.py install)."""

from __future__ import annotations

import json

import pytest
from harness import bypassed, installed, skip_reason
from pyclients import CLIENT_VARIANTS, RunCache, cases, check, scenario_params

pytestmark = pytest.mark.interop


def _per_client(params_of) -> list:
    """Every client's params, each skipped when its client is not installed."""
    return [
        pytest.param(*p.values, marks=pytest.mark.skipif(not installed(client), reason=skip_reason(client)), id=p.id)
        for client in CLIENT_VARIANTS
        for p in params_of(client)
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> RunCache:
    """One real run per (variant, scenario) for the whole module (variants name their client)."""
    return RunCache(tmp_path_factory.mktemp("py_clients"))


@pytest.mark.parametrize(("variant", "sid"), _per_client(scenario_params))
def test_every_call_answered_and_recorded(runs: RunCache, variant: str, sid: str) -> None:
    """The client ran every scripted call and sent its result back; no request went unbridged."""
    _, scenario, run = runs.run(variant, sid)
    missing = [c.call.arguments or c.call.raw_input for c in run.captured if c.result is None]
    assert len(run.captured) == len(scenario.calls) and not missing, f"no result for {missing}\n{run.describe()}"
    assert not bypassed(run), f"requests with tool results but no bridge record: {bypassed(run)}"


@pytest.mark.parametrize(("variant", "sid", "index"), _per_client(cases))
def test_truth(runs: RunCache, variant: str, sid: str, index: int) -> None:
    run, cap, expect = runs.case(variant, sid, index)
    problems = check(run, cap, expect)
    assert not problems, (
        f"{run.client} {run.version}: expected [{expect}] for {json.dumps(cap.call.arguments or cap.call.raw_input)}:\n"
        + "\n".join(problems)
    )
