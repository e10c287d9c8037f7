"""The delivered-prefix ledger: a prefix in order, never a set; the same answer whether
the ledger entry holds the delivered steps' bytes or only their digests."""

from __future__ import annotations

import pytest
from native_bridge.cascade.ledger import DIGEST_SIZE, Delivered, Delivery, delivered_prefix, step_digest

a, b, c = b"a", b"b", b"c"


def test_digest_is_stable_and_short() -> None:
    assert step_digest(a) == step_digest(b"a") and len(step_digest(a)) == DIGEST_SIZE
    assert step_digest(a) != step_digest(b"a ")


def as_bytes(steps: list[bytes]) -> Delivered:
    return Delivered(steps=steps)


def as_digests(steps: list[bytes]) -> Delivered:
    return Delivered(digests=[step_digest(s) for s in steps])


def as_digest_list(steps: list[bytes]) -> list[bytes]:
    return [step_digest(s) for s in steps]


ENTRIES = [as_bytes, as_digests, as_digest_list]


@pytest.mark.parametrize("entry", ENTRIES)
def test_prefix(entry) -> None:
    assert delivered_prefix(entry([]), [a, b]) == 0
    assert delivered_prefix(entry([a, b]), [a, b, c]) == 2
    assert delivered_prefix(entry([a, b]), [a, b]) == 2
    assert delivered_prefix(entry([a, b, c]), [a, b]) == 2  # the history got shorter


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_repeated_command_is_new(entry) -> None:
    # Two identical later commands are both real: a set would call the second delivered.
    assert delivered_prefix(entry([a]), [a, a]) == 1
    assert delivered_prefix(entry([a, b]), [a, a, b]) == 1


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_changed_step_ends_the_prefix(entry) -> None:
    assert delivered_prefix(entry([a, b, c]), [a, c, b]) == 1
    assert delivered_prefix(entry([b]), [a, b]) == 0


def test_digests_are_made_only_beyond_what_is_known() -> None:
    known = [b"k" * DIGEST_SIZE]  # not a's digest: proves the known one is taken as it is
    d = Delivery([a, b], known)
    assert d.digests() == [known[0], step_digest(b)]
    assert Delivery([a, b]).digests() == [step_digest(a), step_digest(b)]
