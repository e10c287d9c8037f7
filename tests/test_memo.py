"""The per-conversation memo changes nothing but speed.

Every body here is rewritten twice: through a memo that has seen related bodies before
(the conversation's earlier turns, other conversations, forks, edits of the tail) and
with no memo at all. Both must agree on everything a rewrite reports: body bytes, steps,
the plan (accounting, delta, stepped positions, protobuf steps) and the summary.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from native_bridge.core.memo import Memo
from native_bridge.core.pipeline import Config, rewrite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import bench

DIALECTS = list(bench.DIALECT_PATHS)
ID = re.compile(r'"((?:toolu_01|call_)[0-9a-f]{24})"')  # the generated sessions' call ids


def same(raw: bytes, dialect: str, memo: Memo, config: Config | None = None) -> None:
    path = bench.DIALECT_PATHS[dialect]
    alone = rewrite(raw, config or Config(), path, memo=None)
    remembered = rewrite(raw, config or Config(), path, memo=memo)
    assert bench.outcome_digest(remembered) == bench.outcome_digest(alone), (remembered.status, remembered.reason)
    assert memo.errors == 0


def items_key(dialect: str) -> str:
    return "input" if dialect == "responses" else "messages"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("parallel", [1, 4])
def test_a_growing_session_is_resumed_and_agrees(dialect: str, parallel: int) -> None:
    memo = Memo()
    s = bench.Session(dialect, parallel, seed=3)
    for rounds in range(1, 41):
        same(s.body(rounds), dialect, memo)
    assert memo.hits >= 35  # the first turn and the user's interjections start over at most


@pytest.mark.parametrize("dialect", DIALECTS)
def test_identical_resend_truncation_and_fork_agree(dialect: str) -> None:
    memo = Memo()
    s, other = bench.Session(dialect, 1, seed=5), bench.Session(dialect, 1, seed=6)
    for raw in (s.body(30), s.body(30), s.body(12), s.body(31)):
        same(raw, dialect, memo)
    # A fork: the first rounds of one conversation, then rounds of another.
    doc = s.doc(10)
    key = items_key(dialect)
    doc[key] = doc[key] + other.doc(8)[key][1:]
    same(orjson.dumps(doc), dialect, memo)
    assert memo.hits >= 2  # the resend, and the turn after the truncation


@pytest.mark.parametrize("dialect", DIALECTS)
def test_edits_of_the_tail_agree(dialect: str) -> None:
    """Clients edit their last messages between turns (Claude Code moves cache_control);
    mutations of the last items make ids cross the cut, vanish, repeat, or come early."""
    rng = random.Random(11)
    memo = Memo()
    s = bench.Session(dialect, 4, seed=9)
    for rounds in range(2, 25):
        doc = s.doc(rounds)
        same(orjson.dumps(doc), dialect, memo)
        for _, mutated in bench._mutations(doc, dialect, rng, tail=6):
            same(orjson.dumps(mutated), dialect, memo)
        same(orjson.dumps(_cache_control(doc, dialect)), dialect, memo)
        same(orjson.dumps(_reuse_an_old_id(doc, dialect, rng)), dialect, memo)


def test_a_body_in_other_bytes_is_remembered_in_orjsons() -> None:
    """Pretty-printed or otherwise escaped bodies are resumed through orjson's encoding of them."""
    memo = Memo()
    s = bench.Session("chat", 1, seed=2)
    same(json.dumps(s.doc(10), indent=1).encode(), "chat", memo)
    assert len(memo) == 1 and memo.hits == 0
    same(json.dumps(s.doc(11)).encode(), "chat", memo)  # ", " and ": ", \\u escapes
    same(orjson.dumps(s.doc(12)), "chat", memo)
    same(json.dumps(s.doc(13), indent=2).encode(), "chat", memo)
    assert memo.hits == 3


def test_another_config_does_not_share_the_memo() -> None:
    memo = Memo()
    s = bench.Session("anthropic", 1, seed=4)
    same(s.body(10), "anthropic", memo)
    narrow = Config(kinds=frozenset({"run_command"}))
    same(s.body(11), "anthropic", memo, narrow)
    same(s.body(12), "anthropic", memo, narrow)
    same(s.body(13), "anthropic", memo)


def test_the_memo_is_bounded() -> None:
    memo = Memo(max_entries=3, max_bytes=10**9)
    for seed in range(6):
        same(bench.Session("chat", 1, seed=seed).body(5), "chat", memo)
    assert len(memo) == 3
    small = Memo(max_entries=10, max_bytes=50_000)
    for seed in range(6):
        same(bench.Session("chat", 1, seed=seed).body(5), "chat", small)
    assert small._bytes <= 50_000


def test_bundled_sessions_agree_when_replayed_turn_by_turn() -> None:
    memo = Memo()
    for path in sorted(bench.SESSIONS):
        raw = path.read_bytes()
        dialect = bench.session_dialect(path)
        doc = orjson.loads(raw)
        key = items_key(dialect)
        items = doc[key]
        for n in range(1, len(items) + 1):
            same(orjson.dumps({**doc, key: items[:n]}), dialect, memo)
        same(raw, dialect, memo)


def _cache_control(doc: dict[str, Any], dialect: str) -> dict[str, Any]:
    """The same history with a cache marker on its last message's last block (Claude Code)."""
    new = orjson.loads(orjson.dumps(doc))
    last = new[items_key(dialect)][-1]
    content = last.get("content")
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        content[-1]["cache_control"] = {"type": "ephemeral"}
    else:
        last["cache_control"] = {"type": "ephemeral"}
    return new


def _reuse_an_old_id(doc: dict[str, Any], dialect: str, rng: random.Random) -> dict[str, Any]:
    """The last item carries an id from far earlier: an id on both sides of any cut."""
    new = orjson.loads(orjson.dumps(doc))
    text = orjson.dumps(new[items_key(dialect)][: max(1, len(new[items_key(dialect)]) // 2)]).decode()
    ids = sorted(set(ID.findall(text)))
    if ids:
        last = orjson.dumps(new[items_key(dialect)][-1]).decode()
        found = ID.findall(last)
        if found:
            new[items_key(dialect)][-1] = orjson.loads(last.replace(found[0], rng.choice(ids)))
    return new
