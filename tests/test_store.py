"""The ledger in the stores: recent cascades keep their steps' bytes (a resumed turn then
compares instead of hashing), older ones their digests, and the answer is the same."""

from __future__ import annotations

from native_bridge.cascade.ledger import Delivery, delivered_prefix, step_digest
from native_bridge.runtime.store import MemoryStore, SQLiteStore

STEPS = [bytes([i]) * 100 for i in range(5)]


def test_memory_keeps_the_newest_cascades_bytes_within_its_budget() -> None:
    store = MemoryStore(max_ledger_bytes=1000)
    store.deliver("old", Delivery(STEPS))  # 500 bytes
    store.deliver("new", Delivery(STEPS))  # 500 more: both fit
    assert store.delivered("old").steps is not None
    store.deliver("newest", Delivery(STEPS[:3]))  # over the budget: the oldest keeps digests only
    old, new = store.delivered("old"), store.delivered("new")
    assert old.steps is None and old.digests == [step_digest(s) for s in STEPS]
    assert new.steps is not None
    for entry in (old, new):  # the same answer either way
        assert delivered_prefix(entry, [*STEPS, b"x"]) == 5
        assert delivered_prefix(entry, [STEPS[0], b"y"]) == 1


def test_a_ledger_larger_than_the_budget_is_kept_as_digests() -> None:
    store = MemoryStore(max_ledger_bytes=100)
    store.deliver("c", Delivery(STEPS))
    assert store.delivered("c").steps is None and len(store.delivered("c")) == 5


def test_memory_forgets_the_oldest_cascades() -> None:
    store = MemoryStore(max_cascades=2)
    for c in ("a", "b", "c"):
        store.deliver(c, Delivery(STEPS))
    assert len(store.delivered("a")) == 0 and len(store.delivered("c")) == 5


def test_sqlite_compares_bytes_only_while_the_file_agrees(tmp_path) -> None:
    path = str(tmp_path / "state.sqlite")
    mine, other = SQLiteStore(path), SQLiteStore(path)
    try:
        mine.deliver("c", Delivery(STEPS[:3]))
        assert mine.delivered("c").steps == STEPS[:3]  # what this process delivered last
        assert other.delivered("c").steps is None and len(other.delivered("c")) == 3  # digests, from the file
        other.deliver("c", Delivery(STEPS))  # another proxy delivered more since
        seen = mine.delivered("c")
        assert seen.steps is None and len(seen) == 5, "a stale copy must not decide the prefix"
        assert delivered_prefix(seen, STEPS) == 5
    finally:
        mine.close()
        other.close()


def test_a_delivery_hashes_only_the_steps_beyond_what_is_known() -> None:
    known = [step_digest(s) for s in STEPS[:4]]
    d = Delivery(STEPS, known)
    assert d.digests() == [step_digest(s) for s in STEPS]
