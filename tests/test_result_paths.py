"""Issue 39 item 1: every result path of every client (core/rules/paths.py), each with its source and
an example (tests/path_examples.py) that the bridge reads as the path states, for the client and
for a client we cannot name (the planner hop's reading). A row without an example, an example
without a row, a client without a row or a reason for one of the paths: each fails here.
"""

from __future__ import annotations

import typing

import pytest
from native_bridge.core.clients import BY_ID
from native_bridge.core.exitstatus import ExitStatus, parse_exit_status
from native_bridge.core.rules.paths import NONE, PATHS
from native_bridge.core.rules.types import PathKind, ResultPath, States
from path_examples import EXAMPLES

KINDS: tuple[str, ...] = typing.get_args(PathKind)


def test_every_row_has_an_example() -> None:
    missing = [r.id for r in PATHS if r.id not in EXAMPLES]
    assert not missing, f"result paths without an example in tests/path_examples.py: {missing}"


def test_every_example_is_a_rows() -> None:
    ids = [r.id for r in PATHS]
    assert len(ids) == len(set(ids)), "a row id twice"
    assert not set(EXAMPLES) - set(ids), f"examples of no row: {sorted(set(EXAMPLES) - set(ids))}"


def test_every_client_has_each_path_or_says_why_not() -> None:
    assert set(NONE) <= set(BY_ID)
    for client in BY_ID:
        has = {r.path for r in PATHS if r.client == client}
        none = NONE.get(client, {})
        assert not has & set(none), f"{client}: rows and a reason for none: {sorted(has & set(none))}"
        left = [k for k in KINDS if k not in has and k not in none]
        assert not left, f"{client}: no row and no reason for {left}"
    assert {r.client for r in PATHS} <= set(BY_ID)


def _reading(status: ExitStatus) -> States:
    """What the step (or the lack of one) states, in the rows' words."""
    if status.verdict in ("running", "not_run"):
        return status.verdict  # type: ignore[return-value]
    if status.code is not None:
        return "failed" if status.verdict == "failed" else status.code
    return "failed" if status.flagged else "absent"  # flagged without a code: a message with its flag


@pytest.mark.parametrize("row", PATHS, ids=[f"{r.client}-{r.id}" for r in PATHS])
def test_the_example_reads_as_the_path_states(row: ResultPath) -> None:
    text, is_error = EXAMPLES[row.id]
    want = row.reads if row.reads is not None else row.states
    assert _reading(parse_exit_status(text, is_error, row.client)) == want, row
    unnamed = row.unnamed if row.unnamed is not None else want
    assert _reading(parse_exit_status(text, is_error, None)) == unnamed, f"unnamed: {row}"


def test_a_gap_is_a_gap() -> None:
    # A row whose reading is not the truth says so and why; once the reader is fixed, the note goes.
    for r in PATHS:
        assert (r.reads is None or r.reads != r.states) and (r.reads is None or r.note), r
        assert r.unnamed is None or r.note, r
