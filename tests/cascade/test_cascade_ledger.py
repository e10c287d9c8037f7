"""The delivered-prefix ledger: a prefix in order, never a set."""

from __future__ import annotations

from native_bridge.cascade.ledger import DIGEST_SIZE, delivered_prefix, step_digest

A, B, C = (step_digest(x) for x in (b"a", b"b", b"c"))


def test_digest_is_stable_and_short() -> None:
    assert step_digest(b"a") == A and len(A) == DIGEST_SIZE
    assert step_digest(b"a") != step_digest(b"a ")


def test_prefix() -> None:
    assert delivered_prefix([], [A, B]) == 0
    assert delivered_prefix([A, B], [A, B, C]) == 2
    assert delivered_prefix([A, B], [A, B]) == 2
    assert delivered_prefix([A, B, C], [A, B]) == 2  # the history got shorter


def test_a_repeated_command_is_new() -> None:
    # Two identical later commands are both real: a set would call the second delivered.
    assert delivered_prefix([A], [A, A]) == 1
    assert delivered_prefix([A, B], [A, A, B]) == 1


def test_a_changed_step_ends_the_prefix() -> None:
    assert delivered_prefix([A, B, C], [A, C, B]) == 1
    assert delivered_prefix([B], [A, B]) == 0
