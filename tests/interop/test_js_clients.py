"""The JavaScript agent CLIs (jsclients.DRIVERS: Claude Code, Codex over HTTP+SSE and over
WebSocket, Gemini CLI, Qwen Code, opencode, Kilo, Continue's CLI, Cline's CLI, pi) through a real mitmdump with
the bridge (rewrite mode): every scripted call's result must reach the planner as the exact
truth (jsclients.py says how each client is driven and what each call's truth is). A client
that is not installed is skipped (.venv/bin/python scripts/interop.py install)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from harness import bypassed, installed, skip_reason, verdict_for
from jsclients import DRIVERS, JsRunCache, cases, scenario_ids

pytestmark = pytest.mark.interop


def _installed(key: str) -> pytest.MarkDecorator:
    name = DRIVERS[key].name
    return pytest.mark.skipif(not installed(name), reason=skip_reason(name))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], JsRunCache]:
    """One real run per (client, scenario) for the whole module."""
    caches: dict[str, JsRunCache] = {}

    def of(key: str) -> JsRunCache:
        if key not in caches:
            caches[key] = JsRunCache(key, tmp_path_factory.mktemp(key))
        return caches[key]

    return of


@pytest.mark.parametrize(
    ("key", "sid"),
    [pytest.param(k, sid, marks=_installed(k), id=f"{k}-{sid}") for k in DRIVERS for sid in scenario_ids(k)],
)
def test_every_call_answered_and_recorded(runs: Callable[[str], JsRunCache], key: str, sid: str) -> None:
    """The client ran every scripted call and sent its result back; no request went unbridged."""
    run = runs(key).run(sid)
    missing = [c.call.arguments or c.call.raw_input for c in run.captured if c.result is None]
    assert len(run.captured) == len(run.scenario.calls) and not missing, f"no result for {missing}\n{run.describe()}"
    assert not bypassed(run), f"requests with tool results but no bridge record: {bypassed(run)}"


@pytest.mark.parametrize(
    ("key", "sid", "index"),
    [pytest.param(k, *case.values, marks=_installed(k), id=f"{k}-{case.id}") for k in DRIVERS for case in cases(k)],
)
def test_truth(runs: Callable[[str], JsRunCache], key: str, sid: str, index: int) -> None:
    cache = runs(key)
    problems = cache.check(sid, index)
    assert not problems, f"{cache.driver.name} {cache.driver.version}: " + "\n".join(problems)


@_installed("continue-cli")
def test_continue_cli_is_identified_so_its_frame_states_the_code(runs: Callable[[str], JsRunCache]) -> None:
    """The core identifies Continue's CLI by its tool set (issue 17): its "Error (exit code N)" frame
    states the code, and a program's own "Exit code: 3" line stays output (no code)."""
    run = runs("continue-cli").run("shell")
    stated = 0
    for cap in run.captured:
        step = verdict_for(run, cap).step
        code = ((step or {}).get("runCommand") or {}).get("exitCode")
        if "Error (exit code " in json.dumps(cap.result):
            assert code == cap.truth.exit_code, f"exitCode {code}, truth {cap.truth.exit_code}: {cap.result}"
            stated += 1
        else:
            assert code is None, f"exitCode {code} from the bare output: {cap.result}"
    assert stated, "no result of the run stated a failure in the client's frame"
