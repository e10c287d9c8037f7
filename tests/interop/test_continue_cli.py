"""Continue's CLI (`cn -p --auto`, Chat Completions through the OpenAI SDK)
through a real mitmdump with the bridge (rewrite mode): every scripted call's
result must reach the planner as the exact truth (jsclients.py says how the client is driven
and what each call's truth is). Skipped when the client is not installed
(.venv/bin/python scripts/interop.py install)."""

from __future__ import annotations

import pytest
from harness import bypassed, installed, skip_reason
from jsclients import DRIVERS, JsRunCache, cases, scenario_ids

KEY = "continue-cli"
CLIENT = DRIVERS[KEY].name

pytestmark = [pytest.mark.interop, pytest.mark.skipif(not installed(CLIENT), reason=skip_reason(CLIENT))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> JsRunCache:
    return JsRunCache(KEY, tmp_path_factory.mktemp(KEY))


@pytest.mark.parametrize("sid", scenario_ids(KEY))
def test_every_call_answered_and_recorded(runs: JsRunCache, sid: str) -> None:
    """The client ran every scripted call and sent its result back; no request went unbridged."""
    run = runs.run(sid)
    missing = [c.call.arguments or c.call.raw_input for c in run.captured if c.result is None]
    assert len(run.captured) == len(run.scenario.calls) and not missing, f"no result for {missing}\n{run.describe()}"
    assert not bypassed(run), f"requests with tool results but no bridge record: {bypassed(run)}"


@pytest.mark.parametrize(("sid", "index"), cases(KEY))
def test_truth(runs: JsRunCache, sid: str, index: int) -> None:
    problems = runs.check(sid, index)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("sid", ["shell"])
def test_unidentified_no_code_from_words(runs: JsRunCache, sid: str) -> None:
    """The core does not identify this client (not Continue's IDE tool set; User-Agent "ls/JS 5.23.2",
    the bundled OpenAI SDK), so its words "Error (exit code N)" are forgeable program output: no shell
    step may carry an exit code."""
    from harness import verdict_for

    run = runs.run(sid)
    for cap in run.captured:
        step = verdict_for(run, cap).step
        code = ((step or {}).get("runCommand") or {}).get("exitCode")
        assert code is None, f"exitCode {code} from an unidentified client's words: {cap.result}"
