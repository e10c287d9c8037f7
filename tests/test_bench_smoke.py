"""The bench in CI: fast, and red only on gross regressions (scripts/bench --quick).

Timings on a shared machine are noisy, so the quick targets are several times looser
than the real ones (scripts/BENCH.md): they catch a slowdown of the kind that
undoes an optimisation (the memo no longer resuming, protobuf back on the hot path,
a parse of bodies without tool history), not a few percent. The equivalence checks are
exact: every fast path must give what its reference path gives.
"""

from __future__ import annotations

import random

import pytest
from bench.cli import run
from bench.targets import Target
from native_bridge.core import exitstatus


def _failed(targets: list[Target]) -> list[str]:
    return [f"{t.name}: {t.measured}" for t in targets if t.ok is False]


def test_quick_core_bench_has_no_gross_regression() -> None:
    lines: list[str] = []
    targets = run(quick=True, only=("golden", "core", "nohist"), log=lines.append)
    assert targets and not _failed(targets), "\n".join(lines)


@pytest.mark.e2e
def test_quick_mitmdump_bench_has_no_gross_regression() -> None:
    lines: list[str] = []
    targets = run(quick=True, only=("e2e",), log=lines.append)
    assert targets and not _failed(targets), "\n".join(lines)


def test_exit_status_screens_say_what_the_rules_say() -> None:
    """exitstatus tries one combined pattern per place before its rules one by one: the
    combined pattern must accept a line exactly when one of the rules does."""
    rng = random.Random(7)
    lines = [ln for rule in exitstatus.RULES for ex in rule.examples for ln in ex.splitlines()]
    lines += [
        "Exit code: 2", "exit status 1", "[exit code: 3]", "(exit code 5)", "EXIT CODE 4", "Exit code 1",
        "Process exited with code 0", "Command exited with code 12", "Signal: 9", "Exit Code: (none)",
        "", "  ", "Output:", "exited with code", "Exit code: 99999999999", "[Command finished with exit code -1]",
    ]  # fmt: skip
    mutated = []
    for ln in lines:
        if ln:
            i = rng.randrange(len(ln))
            mutated += [ln[:i] + ln[i + 1 :], ln[:i] + "x" + ln[i:], ln.upper(), ln + " ", "a" + ln]
    assert set(exitstatus._TABLES) == {
        (w, c, f)
        for w in exitstatus._BY_WHERE
        for c in (*exitstatus.BY_ID, exitstatus.ANY, exitstatus.GENERIC)
        for f in (False, True)
    }
    for (where, client, flagged), (rules, screen) in exitstatus._TABLES.items():
        # each client's table holds the rules that count for it, in their order of precedence
        assert rules == tuple(r for r in exitstatus._BY_WHERE[where] if exitstatus._counts(r, client, flagged))
        assert (screen is None) == (not rules)
        for ln in lines + mutated:
            line = ln.strip()
            said = any(r.pattern.fullmatch(line) for r in rules)
            assert bool(screen and screen.fullmatch(line)) == said, (where, client, line)
