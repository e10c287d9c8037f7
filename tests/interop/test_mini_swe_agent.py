"""mini-swe-agent through a real mitmdump with the bridge: every scripted call's result must reach the
planner as the exact truth (see pyclients.py for how the client is driven and what each
expectation means). Skipped when the client is not installed (scripts/interop.py install)."""

from __future__ import annotations

import json

import pytest
from harness import bypassed, installed, skip_reason
from pyclients import RunCache, cases, check, scenario_params

CLIENT = "mini-swe-agent"

pytestmark = [pytest.mark.interop, pytest.mark.skipif(not installed(CLIENT), reason=skip_reason(CLIENT))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> RunCache:
    return RunCache(tmp_path_factory.mktemp("mini_swe_agent"))


@pytest.mark.parametrize(("variant", "sid"), scenario_params(CLIENT))
def test_every_call_answered_and_recorded(runs: RunCache, variant: str, sid: str) -> None:
    """The client ran every scripted call and sent its result back; no request went unbridged."""
    _, scenario, run = runs.run(variant, sid)
    missing = [c.call.arguments or c.call.raw_input for c in run.captured if c.result is None]
    assert len(run.captured) == len(scenario.calls) and not missing, f"no result for {missing}\n{run.describe()}"
    assert not bypassed(run), f"requests with tool results but no bridge record: {bypassed(run)}"


@pytest.mark.parametrize(("variant", "sid", "index"), cases(CLIENT))
def test_truth(runs: RunCache, variant: str, sid: str, index: int) -> None:
    run, cap, expect = runs.case(variant, sid, index)
    problems = check(run, cap, expect)
    assert not problems, (
        f"expected [{expect}] for {json.dumps(cap.call.arguments or cap.call.raw_input)}:\n" + "\n".join(problems)
    )
