"""The per-conversation memo changes nothing but speed.

Every body here is rewritten twice: through a memo that has seen related bodies before
(the conversation's earlier turns, other conversations, forks, edits of the tail) and
with no memo at all. Both must agree on everything a rewrite reports: body bytes, steps,
the plan (accounting, delta, stepped positions, protobuf steps) and the summary.
"""

from __future__ import annotations

import bisect
import gc
import json
import pickle
import random
import re
import tracemalloc
from typing import Any

import orjson
import pytest
from bench.golden import outcome_digest  # everything a rewrite reports, as one digest
from native_bridge.chat_hop.jobs import observed
from native_bridge.core import pipeline
from native_bridge.core.layout import layout
from native_bridge.core.memo import light as memo_light
from native_bridge.core.memo import resume as memo_resume
from native_bridge.core.memo.light import LIGHT_ITEMS, Gone, LazyItems, Tail
from native_bridge.core.memo.store import Memo
from native_bridge.core.pipeline import Config, Rewrite, rewrite
from support.histories import DIALECT_PATHS
from support.histories.agent import CLIENT_HINTS, AgentConversation, Session, mutations
from support.histories.bundled import SESSIONS, session_dialect
from support.histories.encodings import ENCODINGS

DIALECTS = list(DIALECT_PATHS)
ID = re.compile(r'"((?:toolu_01|call_)[0-9a-f]{24})"')  # the generated sessions' call ids


@pytest.fixture(params=[False, True], ids=["full", "light"])
def light(request: pytest.FixtureRequest) -> bool:
    """Every case runs with a full memo and with a light one (observe mode without records)."""
    return request.param


def same(raw: bytes, dialect: str, memo: Memo, config: Config | None = None, hint: str | None = None) -> None:
    path = DIALECT_PATHS[dialect]
    if memo.light:  # observe mode: no body is written, so the verdict and observations must agree
        alone = rewrite(raw, config or Config(), path, None, hint, emit=False)
        remembered = rewrite(raw, config or Config(), path, memo, hint, emit=False)
        assert verdict(remembered) == verdict(alone)
        # What this call decided is handed over: all of it on a full read, the new part on a resume.
        assert set(observed(remembered, TOOLS)) <= set(observed(alone, TOOLS))
    else:
        alone = rewrite(raw, config or Config(), path, memo=None)
        remembered = rewrite(raw, config or Config(), path, memo=memo)
        assert outcome_digest(remembered) == outcome_digest(alone), (remembered.status, remembered.reason)
    assert memo.errors == 0


TOOLS = Config().tool_kinds


def verdict(result: Rewrite) -> tuple[Any, ...]:
    return result.status, result.reason, result.dialect, result.summary(), result.notes


def items_key(dialect: str) -> str:
    return "input" if dialect == "responses" else "messages"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("parallel", [1, 4])
def test_a_growing_session_is_resumed_and_agrees(dialect: str, parallel: int, light: bool) -> None:
    memo = Memo(light=light)
    s = Session(dialect, parallel, seed=3)
    for rounds in range(1, 41):
        same(s.body(rounds), dialect, memo)
    assert memo.hits >= 35  # the first turn and the user's interjections start over at most


@pytest.mark.parametrize("dialect", DIALECTS)
def test_identical_resend_truncation_and_fork_agree(dialect: str, light: bool) -> None:
    memo = Memo(light=light)
    s, other = Session(dialect, 1, seed=5), Session(dialect, 1, seed=6)
    for raw in (s.body(30), s.body(30), s.body(12), s.body(31)):
        same(raw, dialect, memo)
    # A fork: the first rounds of one conversation, then rounds of another.
    doc = s.doc(10)
    key = items_key(dialect)
    doc[key] = doc[key] + other.doc(8)[key][1:]
    same(orjson.dumps(doc), dialect, memo)
    assert memo.hits >= 2  # the resend, and the turn after the truncation


@pytest.mark.parametrize("dialect", DIALECTS)
def test_edits_of_the_tail_agree(dialect: str, light: bool) -> None:
    """Clients edit their last messages between turns (Claude Code moves cache_control);
    mutations of the last items make ids cross the cut, vanish, repeat, or come early."""
    rng = random.Random(11)
    memo = Memo(light=light)
    s = Session(dialect, 4, seed=9)
    for rounds in range(2, 25):
        doc = s.doc(rounds)
        same(orjson.dumps(doc), dialect, memo)
        for _, mutated in mutations(doc, dialect, rng, tail=6):
            same(orjson.dumps(mutated), dialect, memo)
        same(orjson.dumps(_cache_control(doc, dialect)), dialect, memo)
        same(orjson.dumps(_reuse_an_old_id(doc, dialect, rng)), dialect, memo)


def _styled(doc: dict[str, Any], dialect: str) -> dict[str, Any]:
    """``doc`` with what only some encoders escape in its first item (Go's <, >, &, U+2028; non-ASCII)."""
    new = orjson.loads(orjson.dumps(doc))
    first = new[items_key(dialect)][0]
    if isinstance(first.get("content"), str):
        first["content"] += " 2>&1 <b>caf\u00e9</b>\u2028"
    return new


@pytest.mark.parametrize("style", sorted(ENCODINGS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_conversation_in_any_style_is_resumed_from_its_own_bytes(style: str, dialect: str, light: bool) -> None:
    """A client that writes its JSON otherwise than orjson (Python's json.dumps, Go's escapes,
    pretty-printed, a proxy that re-encodes some fields) is resumed from the bytes it sent, turn
    after turn, edits of its last message too, and every turn agrees with a full read."""
    encode = ENCODINGS[style]
    memo = Memo(light=light)
    s = Session(dialect, 2, seed=13)
    for rounds in range(1, 16):
        doc = _styled(s.doc(rounds), dialect)
        raw = encode(doc)
        assert rounds == 1 or memo.continues(raw) > 0  # the memo holds these very bytes, as far as a cut
        same(raw, dialect, memo, hint=CLIENT_HINTS[dialect])
        if rounds % 5 == 0:  # the client edits its last message (Claude Code moves cache_control)
            same(encode(_cache_control(doc, dialect)), dialect, memo, hint=CLIENT_HINTS[dialect])
    assert memo.hits >= 14, memo.hits


def test_a_body_in_another_style_than_the_last_is_read_in_full_and_agrees(light: bool) -> None:
    """A conversation whose bytes change style between turns shares no cut with its last body:
    it is read in full (never through a re-encoding), and agrees."""
    memo = Memo(light=light)
    s = Session("chat", 1, seed=2)
    same(json.dumps(s.doc(10), indent=1).encode(), "chat", memo)
    same(json.dumps(s.doc(11)).encode(), "chat", memo)
    same(orjson.dumps(s.doc(12)), "chat", memo)
    same(json.dumps(s.doc(13), indent=2).encode(), "chat", memo)
    assert memo.hits == 0


def test_another_config_does_not_share_the_memo(light: bool) -> None:
    memo = Memo(light=light)
    s = Session("anthropic", 1, seed=4)
    same(s.body(10), "anthropic", memo)
    narrow = Config(kinds=frozenset({"run_command"}))
    same(s.body(11), "anthropic", memo, narrow)
    same(s.body(12), "anthropic", memo, narrow)
    same(s.body(13), "anthropic", memo)


def test_the_memo_is_bounded(light: bool) -> None:
    memo = Memo(max_entries=3, max_bytes=10**9, light=light)
    for seed in range(6):
        same(Session("chat", 1, seed=seed).body(5), "chat", memo)
    assert len(memo) == 3
    small = Memo(max_entries=10, max_bytes=50_000, light=light)
    for seed in range(6):
        same(Session("chat", 1, seed=seed).body(5), "chat", small)
    assert small._bytes <= 50_000


def test_bundled_sessions_agree_when_replayed_turn_by_turn(light: bool) -> None:
    memo = Memo(light=light)
    for path in sorted(SESSIONS):
        raw = path.read_bytes()
        dialect = session_dialect(path)
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


# ---- the light memo (observe mode without records) ---------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_light_memo_resumes_from_the_bytes_when_the_client_is_named(dialect: str) -> None:
    """With the client named before parsing (its User-Agent), a resume parses only the new part."""
    memo = Memo(light=True)
    s = Session(dialect, 2, seed=13)
    for rounds in range(1, 31):
        same(s.body(rounds), dialect, memo, hint=CLIENT_HINTS[dialect])
    assert memo.hits >= 25


def _held(memo_light: bool, bodies: list[bytes]) -> tuple[int, int]:
    """Bytes a memo holds after the bodies (the bodies themselves not counted), and its hits."""
    rewrite(bodies[0], Config(), DIALECT_PATHS["chat"], Memo(), emit=False)  # imports, caches
    gc.collect()
    tracemalloc.start()
    try:
        memo = Memo(light=memo_light)
        for raw in bodies:
            rewrite(raw, Config(), DIALECT_PATHS["chat"], memo, CLIENT_HINTS["chat"], emit=False)
        gc.collect()
        return tracemalloc.get_traced_memory()[0], memo.hits
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_light_memo_keeps_a_short_history_whole_and_lightens_it_once_long(dialect: str) -> None:
    """Below ``light_from`` a light memo's entry is whole (cheaper to resume); the turn whose body
    reaches it is kept light, and so is every turn after. Verdicts and observations agree."""
    s, hint = Session(dialect, 2, seed=37), CLIENT_HINTS[dialect]
    bodies = [s.body(rounds) for rounds in range(1, 25)]
    light_from = len(bodies[12])
    memo = Memo(light=True, light_from=light_from)
    kinds = []
    for raw in bodies:
        same(raw, dialect, memo, hint=hint)
        entry = next(reversed(memo._entries.values()))  # the one this body made (most recently used last)
        assert entry.raw == raw
        kinds.append((len(raw) >= light_from, entry.light, isinstance(entry.items, LazyItems)))
    assert kinds == [(long, long, long) for long, _, _ in kinds] and kinds[11][0] is False and kinds[12][0]
    assert memo.hits >= 20


def test_the_chat_hops_light_memo_keeps_short_histories_whole() -> None:
    """What configure makes in observe mode: light, with whole entries below LIGHT_FROM."""
    from mitmproxy import hooks
    from mitmproxy.test import taddons
    from native_bridge.chat_hop.addon import ChatHop
    from native_bridge.core.memo.store import LIGHT_FROM

    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="observe")
        assert hop.memo.light and hop.memo.light_from == LIGHT_FROM >= 512 * 2**10
        tctx.configure(hop, bridge_mode="rewrite")
        assert not hop.memo.light


def test_a_light_memo_holds_little_beyond_the_body() -> None:
    """A light entry keeps the last body (made before tracing: not counted), a few hundred bytes
    per tool call and the request's fields outside the items, parsed (memo.fill.shell_of: the tools, read
    once per conversation); a full one holds the parsed history again, about twice the body."""
    conv = AgentConversation(600_000, 21, 6)
    bodies = [conv.body(t) for t in range(6)]
    light, hits = _held(True, bodies)
    full, _ = _held(False, bodies)
    assert hits == 5
    outside = len(bodies[-1]) - len(orjson.dumps(orjson.loads(bodies[-1])["messages"]))
    assert light < 0.15 * len(bodies[-1]) + 4 * outside and full > len(bodies[-1])


def test_a_light_entry_reads_again_only_its_last_items() -> None:
    s = Session("chat", 1, seed=17)
    raw = s.body(12)
    memo = Memo(light=True)
    rewrite(raw, Config(), DIALECT_PATHS["chat"], memo, CLIENT_HINTS["chat"], emit=False)
    entry = memo.only()
    assert entry is not None and isinstance(entry.items, LazyItems)
    items = orjson.loads(raw)["messages"]
    n = len(items)
    assert n > LIGHT_ITEMS // 4
    window = range(max(0, n - LIGHT_ITEMS), n)
    assert [entry.items[i] for i in window] == items[window.start :]
    assert entry.items[-1] == items[-1] and list(entry.items[window.start :]) == items[window.start :]
    if window.start:
        with pytest.raises(Gone):
            entry.items[window.start - 1]
        with pytest.raises(Gone):
            list(entry.items)
    # Calls and results: the last LIGHT_ITEMS, slim; steps, placements and written items: their
    # number only (the tallies count them); an element dropped is Gone.
    assert all(isinstance(xs, Tail) for xs in (entry.calls, entry.results, entry.docs, entry.accounting, entry.out))
    assert all(c.arguments is None for c in entry.calls.kept) and all(r.text is None for r in entry.results.kept)
    assert len(entry.calls.kept) == min(len(entry.calls), LIGHT_ITEMS) and len(entry.calls) > 0
    assert entry.docs.kept == entry.accounting.kept == entry.out.kept == [] and len(entry.accounting) > 0
    with pytest.raises(Gone):
        entry.accounting[0]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_resume_that_needs_an_item_a_light_entry_dropped_reads_in_full(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a window of one item, resumes that look further back end and the full read agrees."""
    monkeypatch.setattr(memo_light, "LIGHT_ITEMS", 1)
    memo = Memo(light=True)
    s = Session(dialect, 4, seed=19)
    for rounds in (*range(2, 16), 9, 16, 17):
        same(s.body(rounds), dialect, memo, hint=CLIENT_HINTS[dialect])
    assert memo.errors == 0


def test_a_light_entry_crosses_from_a_worker_without_its_body() -> None:
    s = Session("anthropic", 2, seed=23, out=(1000, 5000))
    hint, path = CLIENT_HINTS["anthropic"], DIALECT_PATHS["anthropic"]

    def made(raw: bytes) -> Any:
        worker = Memo(light=True)
        rewrite(raw, Config(), path, worker, hint, emit=False)
        return worker.only()

    first, longer = s.body(40), s.body(80)
    data, data_longer = pickle.dumps(made(first), protocol=5), pickle.dumps(made(longer), protocol=5)
    # No body, no parsed history: the marks' last written items (bounded), a few bytes per call.
    assert len(data) < len(first) / 5 and len(data_longer) < 1.3 * len(data) < len(longer) / 8
    here = Memo(light=True)
    here.adopt(pickle.loads(data), first)
    other = Session("anthropic", 2, seed=24, out=(1000, 5000))
    assert here.continues(s.body(41)) and not here.continues(other.body(41))
    same(s.body(41), "anthropic", here, hint=hint)
    assert here.hits == 1


def test_a_full_memo_never_resumes_from_a_light_entry() -> None:
    """A light entry cannot write a body or record steps: a full memo does not take it."""
    s = Session("chat", 1, seed=29)
    light = Memo(light=True)
    rewrite(s.body(8), Config(), DIALECT_PATHS["chat"], light, CLIENT_HINTS["chat"], emit=False)
    full = Memo()
    full.adopt(light.only(), s.body(8))  # type: ignore[arg-type]
    assert not full.continues(s.body(9))
    same(s.body(9), "chat", full)
    assert full.hits == 0


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_light_memo_hands_over_every_observation_once_the_history_is_read(dialect: str) -> None:
    """Turn by turn a resume hands the planner hop only what is new; together the turns hand over
    exactly what one full read of the last body does."""
    memo, hint = Memo(light=True), CLIENT_HINTS[dialect]
    s = Session(dialect, 2, seed=31)
    path = DIALECT_PATHS[dialect]
    handed: set[Any] = set()
    for rounds in range(1, 25):
        handed |= set(observed(rewrite(s.body(rounds), Config(), path, memo, hint, emit=False), TOOLS))
    alone = set(observed(rewrite(s.body(24), Config(), path, None, hint, emit=False), TOOLS))
    assert memo.hits >= 20 and alone and handed == alone


# ---- a client no user agent names ---------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_client_no_user_agent_names_is_resumed_from_the_bytes(dialect: str, light: bool) -> None:
    """No user agent: the resume reads only the new part (pipeline.resume, which never parses
    the whole body, answers), and agrees with a full read."""
    memo, s, path = Memo(light=light), Session(dialect, 1, seed=11), DIALECT_PATHS[dialect]
    same(s.body(20), dialect, memo)
    for rounds in range(21, 26):
        raw = s.body(rounds)
        resumed = pipeline.resume(raw, Config(), path, memo.copy(), None, emit=not light)
        assert resumed is not None, f"turn {rounds}: a full read was needed"
        same(raw, dialect, memo)


def _with_tools(raw: bytes, tools: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({**orjson.loads(raw), "tools": tools})  # after the history: outside the shared bytes


CLAUDE_TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("Bash", "Read", "Edit", "Write")]
MINI_TOOLS = [{"name": "bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


def test_an_unnamed_client_is_told_by_its_tools_on_a_resume_too(light: bool) -> None:
    """The tools come after the history, so a turn may declare another client's while its history's
    bytes go on from a remembered one: the client is told from the new part's read (as a full read
    tells it), and an entry of another client's never serves."""
    s, path = Session("anthropic", 1, seed=12), DIALECT_PATHS["anthropic"]
    memo = Memo(light=light)
    first = _with_tools(s.body(20), CLAUDE_TOOLS)
    assert rewrite(first, Config(), path, memo, None, emit=not light).history.client == "claude-code"
    for tools, client in ((CLAUDE_TOOLS, "claude-code"), (MINI_TOOLS, "mini-swe-agent"), ([], None)):
        raw = _with_tools(s.body(21), tools)
        before = memo.hits
        got = rewrite(raw, Config(), path, memo, None, emit=not light)
        assert got.history.client == client == rewrite(raw, Config(), path, None, None).history.client
        same(raw, "anthropic", memo.copy())
        if client == "claude-code":
            assert memo.hits == before + 1  # resumed from the claude-code entry


def _light_items_by_walking(items: Any, raw: bytes, stop: int) -> LazyItems:
    """What memo.light.light_items must give, the slow way: from the last item back, a real item's span
    from its encoding, a light one's as held, and no further than the first one not held."""
    n, spans, end = len(items), {}, stop
    known = items.spans if isinstance(items, LazyItems) else {}
    for i in range(n - 1, max(n - LIGHT_ITEMS, 0) - 1, -1):
        span = known.get(i)
        if span is None:
            v = list.__getitem__(items, i)
            if v is memo_light.GONE:
                break
            span = (end - len(orjson.dumps(v)), end)
        spans[i] = span
        end = span[0] - 1
    return LazyItems([memo_light.GONE] * n, raw, spans)


def _found(raw: bytes) -> dict[int, tuple[int, int]]:
    """Where the last items of a {"messages": [...]} body lie in it (layout.py)."""
    return layout(raw, orjson.loads(raw), "messages", LIGHT_ITEMS).spans  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(40))
def test_light_items_hold_the_spans_a_walk_finds(seed):
    """A light entry's items keep the spans of its last LIGHT_ITEMS items, found from its real items
    and the light ones it went on from (runs that end anywhere, holes, more or fewer than the window)."""
    rng = random.Random(seed)
    old = [{"role": "user", "content": "x" * rng.randrange(1, 30)} for _ in range(rng.randrange(1, 3 * LIGHT_ITEMS))]
    raw = orjson.dumps({"messages": old})
    head = raw.index(b"[") + 1
    light = memo_light.light_items(old, raw, _found(raw))
    assert light.spans == _light_items_by_walking(old, raw, len(raw) - 2).spans
    assert [orjson.loads(raw[a:b]) for a, b in light.spans.values()] == [old[i] for i in light.spans]
    assert min(light.spans.values())[0] >= head
    # Resumed: the light items before a cut and real ones after it, in a longer body.
    cut = rng.randrange(0, len(old) + 1)
    more = [{"role": "tool", "content": "y" * rng.randrange(1, 30)} for _ in range(rng.randrange(0, LIGHT_ITEMS))]
    body = orjson.dumps({"messages": old[:cut] + more})
    items = light[:cut] + more
    if rng.random() < 0.3 and items.spans:  # a hole in what is held
        spans = dict(items.spans)
        del spans[rng.choice(sorted(spans))]
        items.spans = spans
    got = memo_light.light_items(items, body, _found(body))
    assert got.spans == _light_items_by_walking(items, body, len(body) - 2).spans
    assert len(got) == cut + len(more)


@pytest.mark.parametrize("light", [True, False])
def test_a_resume_reuses_the_fields_after_the_items_only_when_their_bytes_are_the_same(light: bool) -> None:
    """The fields after the items (the tools) are parsed once per conversation (memo.fill.shell_of); a
    turn that changes one of them (another max_tokens, a tool more) is read as it is, and both
    give what a full read gives."""
    conv = AgentConversation(40_000, 5, 8)
    bodies = [conv.body(t) for t in range(8)]
    changed = orjson.loads(bodies[5])
    changed["max_tokens"] = 1234
    changed["tools"] = [*changed["tools"], {"type": "function", "function": {"name": "Extra", "parameters": {}}}]
    bodies[5] = orjson.dumps(changed)
    memo = Memo(light=light)
    for raw in bodies:
        same(raw, "chat", memo, hint=CLIENT_HINTS["chat"])
    assert memo.hits == 7  # the changed turn too: it goes on from the items, not the fields after them
    last = memo.only() if len(memo) == 1 else list(memo._entries.values())[-1]
    assert last.shell is not None and last.shell["max_tokens"] == orjson.loads(bodies[-1])["max_tokens"]
    assert last.shell["messages"] is None


def test_a_resumed_body_copies_the_bytes_around_its_items_when_they_are_the_entrys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rewriting, the body's other fields (the tools, a system prompt: often most of a short
    history) are written from the bytes the client sent, not encoded again on every turn; a
    turn that changes one is encoded, and every body is what a full rewrite writes."""
    from native_bridge.core import splice

    encoded = []
    around = splice.around
    monkeypatch.setattr(splice, "around", lambda doc, key: encoded.append(doc) or around(doc, key))
    for dialect in DIALECTS:
        s = Session(dialect, 1, seed=41)
        bodies = [s.body(r) for r in range(2, 8)]
        changed = orjson.loads(bodies[3])
        changed["max_tokens"] = 1234  # after the items, in every dialect the generator writes
        bodies[3] = orjson.dumps(changed)
        memo = Memo()
        for t, raw in enumerate(bodies):
            encoded.clear()
            same(raw, dialect, memo, hint=CLIENT_HINTS[dialect])
            # Encoded: the first turn (a full read; the rewrite without a memo writes its body
            # whole), the changed one, and the next (its fields differ from the changed entry's).
            assert len(encoded) == (t in (0, 3, 4)), (dialect, t)


def test_a_light_entrys_items_then_new_ones_are_its_slice_and_them() -> None:
    """LazyItems.then(cut, new), a resume's one-copy join, is items[:cut] + new: the same slots,
    the spans before the cut, the same body."""
    raw = orjson.dumps({"messages": [{"n": i} for i in range(10)]})
    items = LazyItems([memo_light.GONE] * 10, raw, {i: (0, 1) for i in range(4, 10)})
    for cut in (0, 3, 6, 10):
        joined, sliced = items.then(cut, [{"x": 1}]), items[:cut] + [{"x": 1}]  # noqa: RUF005 (LazyItems.__add__)
        assert isinstance(joined, LazyItems)
        assert list(list.__iter__(joined)) == list(list.__iter__(sliced))
        assert joined.spans == sliced.spans and joined.raw is raw


@pytest.mark.parametrize("light", [True, False])
@pytest.mark.parametrize("tools", [True, False])
def test_a_comma_after_the_remembered_items_with_nothing_after_it_is_not_json(light: bool, tools: bool) -> None:
    """``[A,B,]`` after a remembered ``[A,B]``: the bytes agree up to B's end and a "," follows, but
    the body is not JSON. The memo must give what a full read gives (skipped), never read the
    items after the comma as none."""
    conv = AgentConversation(20_000, 7, 3)
    docs = [orjson.loads(conv.body(t)) for t in range(2)]
    if not tools:
        for d in docs:
            d.pop("tools", None)
    memo = Memo(light=light)
    same(orjson.dumps(docs[0]), "chat", memo, hint=CLIENT_HINTS["chat"])
    raw = orjson.dumps(docs[0])
    stop = raw.rindex(b"]", 0, raw.index(b'"tools"') if tools else len(raw))
    bad = raw[:stop] + b"," + raw[stop:]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(bad)
    assert rewrite(bad, Config(), DIALECT_PATHS["chat"], None, CLIENT_HINTS["chat"]).status == "skipped"
    same(bad, "chat", memo, hint=CLIENT_HINTS["chat"])


def test_a_new_item_nested_as_deep_as_orjson_reads_gives_what_a_full_read_gives() -> None:
    """The new items are parsed at the depth they have in the body (the fields after them taken
    from the entry): an item too deep for the whole body is too deep for the resume too."""
    conv = AgentConversation(20_000, 9, 3)
    base = orjson.loads(conv.body(1))
    memo = Memo()
    same(orjson.dumps(base), "chat", memo, hint=CLIENT_HINTS["chat"])
    for depth in (1020, 1021, 1022, 1023, 1024):
        deep: Any = "x"
        for _ in range(depth):
            deep = [deep]
        doc = dict(base)
        doc["messages"] = [*base["messages"], {"role": "user", "content": deep}]
        try:
            raw = orjson.dumps(doc)
        except orjson.JSONEncodeError:
            continue
        same(raw, "chat", memo.copy(), hint=CLIENT_HINTS["chat"])


def test_a_config_per_client_stays_one_per_client_and_crosses_to_the_worker_without_them() -> None:
    """Config.for_client hands out one config per client however it is reached (from another
    client's config too), and pickles as its four fields: the cache stays in this process (a
    worker pickling a job in a thread must not see it change)."""
    root = Config()
    a, b = root.for_client("claude-code"), root.for_client("codex")
    assert a.for_client("codex") is b and b.for_client("claude-code") is a and a.for_client(None) is root
    for _ in range(5):
        a = a.for_client("codex").for_client("claude-code")
    assert a is root.for_client("claude-code") and len(root._for) == 2 and not a._for
    back = pickle.loads(pickle.dumps(a))
    assert back == a and back.client == "claude-code" and not back._for


class _Model:
    """What memo.light.Tail stands for: a list whose dropped elements are placeholders that raise Gone."""

    def __init__(self, n: int, kept: list[Any]) -> None:
        self.xs: list[Any] = [memo_light.GONE] * (n - len(kept)) + kept

    def get(self, i: int) -> Any:
        v = self.xs[i]
        if v is memo_light.GONE:
            raise Gone(i)
        return v


def _as_list(t: Any) -> list[Any]:
    """A Tail (or a list) as the model's list: dropped elements as placeholders."""
    if isinstance(t, Tail):
        return [memo_light.GONE] * (len(t) - len(t.kept)) + t.kept
    return list(t)


@pytest.mark.parametrize("seed", range(40))
def test_a_tail_answers_as_the_list_of_placeholders_it_stands_for(seed: int) -> None:
    """Every operation a resume makes on a light entry's lists (length, element, slice, a list
    joined after a cut, append, setting an element, walking back) gives what the list with the
    dropped elements as placeholders gives, and raises Gone where that one would hand out a
    placeholder."""
    rng = random.Random(seed)
    n = rng.randrange(0, 12)
    kept = sorted(rng.sample(range(100), rng.randrange(0, n + 1)))
    tail, model = Tail(n - len(kept), list(kept)), _Model(n, list(kept))
    assert len(tail) == len(model.xs) and bool(tail) == bool(model.xs)
    for i in range(-n, n):
        try:
            want = model.get(i)
        except Gone:
            with pytest.raises(Gone):
                tail[i]
        else:
            assert tail[i] == want
    with pytest.raises(IndexError):
        tail[n]
    for a in range(-n - 1, n + 2):  # every slice: empty and reversed bounds, negative ones
        for b in range(-n - 1, n + 2):
            got, want = tail[a:b], model.xs[a:b]
            assert _as_list(got) == want
            assert isinstance(got, list) == (memo_light.GONE not in want)
    new = [rng.randrange(100, 200) for _ in range(rng.randrange(0, 3))]
    for cut in range(0, n + 1):  # a resume's join: the slice and the new part in one step
        assert _as_list(tail.then(cut, new)) == model.xs[:cut] + new
    walked: list[Any] = []
    try:
        for v in reversed(tail):
            walked.append(v)
    except Gone:
        assert memo_light.GONE in model.xs
    assert walked == [v for v in reversed(model.xs)][: len(walked)]
    assert memo_light.GONE not in walked and (len(walked) == n or model.xs[n - 1 - len(walked)] is memo_light.GONE)
    if n:  # the writer's last item: set it (kept too when it was dropped just before those kept)
        i = rng.randrange(0, n)
        if model.xs[i] is not memo_light.GONE or i == n - len(kept) - 1:
            tail[i] = "set"
            model.xs[i] = "set"
            assert _as_list(tail) == model.xs
        else:
            with pytest.raises(Gone):
                tail[i] = "set"
    tail.append("end")
    assert len(tail) == n + 1 and tail[-1] == "end"


def test_a_resume_lightens_its_own_join_in_place_as_the_copy_would() -> None:
    """memo.light.lighten_items (a resume's join, in place) leaves the slots and spans that
    memo.light.light_items (a copy) gives."""
    raw = orjson.dumps({"messages": [{"n": i} for i in range(80)]})
    items = orjson.loads(raw)["messages"]
    before = orjson.dumps({"messages": items[:70]})  # the turn before: the same bytes up to item 69's end
    joined = memo_light.light_items(items[:70], before, _found(before)).then(70, items[70:])
    joined.raw = raw
    copy = memo_light.light_items(joined, raw, _found(raw))
    memo_light.lighten_items(joined, _found(raw))
    assert list(list.__iter__(joined)) == list(list.__iter__(copy)) == [memo_light.GONE] * 80
    assert joined.spans == copy.spans
    assert all(orjson.loads(raw[a:b]) == items[i] for i, (a, b) in joined.spans.items())


def test_a_long_light_conversation_holds_a_tail_not_its_history() -> None:
    """However long the conversation, a light entry's lists hold at most LIGHT_ITEMS elements
    each (what a resume copies and keeps is what is new, not the history), and it gives what a
    full read gives on every turn."""
    s = Session("chat", 1, seed=31)
    memo = Memo(light=True)
    for rounds in range(2, 2 * LIGHT_ITEMS + 8, 3):
        same(s.body(rounds), "chat", memo, hint=CLIENT_HINTS["chat"])
    assert memo.errors == 0 and memo.hits > 10
    entry = memo.only()
    assert entry is not None and len(entry.calls) > LIGHT_ITEMS
    for xs in (entry.calls, entry.results, entry.step_calls, entry.docs, entry.sources, entry.accounting):
        assert isinstance(xs, Tail) and len(xs.kept) <= LIGHT_ITEMS
    assert isinstance(entry.stepped, Tail) and len(entry.stepped.kept) <= LIGHT_ITEMS


@pytest.mark.parametrize("dialect", ["chat", "anthropic", "responses"])
def test_a_marks_tally_counts_the_stepped_positions_before_it(dialect: str) -> None:
    """A light entry keeps no stepped positions: a resume counts those before its cut from the
    mark's tally (placed less kept). That count is the one the positions give, at every mark."""
    s = Session(dialect, 4, seed=3)
    memo = Memo()
    checked = 0
    for rounds in (*range(2, 31), 18, 24, 9):
        same(s.body(rounds), dialect, memo, hint=CLIENT_HINTS[dialect])
        for entry in memo._entries.values():
            for mark in entry.marks:
                assert mark.tally.placed == mark.cursor.pos
                kept = sum(n for _, n in mark.tally.kept_by_code)
                assert mark.tally.placed - kept == bisect.bisect_left(entry.stepped, mark.cursor.pos)
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("dialect", ["chat", "anthropic"])
def test_a_light_memo_resumes_a_rewind_past_many_stepped_pairs(dialect: str) -> None:
    """Rounds of four parallel calls, then a rewind twelve rounds back (an older mark): the light
    entry resumes it (no stepped position before the cut is needed) and agrees with a full read."""
    s = Session(dialect, 4, seed=3)
    memo = Memo(light=True)
    for rounds in range(2, 31):
        same(s.body(rounds), dialect, memo, hint=CLIENT_HINTS[dialect])
    hits = memo.hits
    same(s.body(18), dialect, memo, hint=CLIENT_HINTS[dialect])
    assert memo.hits == hits + 1 and memo.errors == 0


def _furthest_by_every_mark(memo: Memo, raw: bytes) -> tuple[Any, Any] | None:
    """The entry ``raw`` goes on from furthest and its latest kept mark, by comparing every mark
    of every entry in full (ties: the most recent entry)."""
    best = None
    for entry in reversed(memo._entries.values()):
        if entry.light and not memo.light:
            continue
        for mark in entry.marks:
            end = mark.end
            kept = end < len(raw) and raw[end] in b",]" and raw.startswith(entry.raw[:end])
            if kept and (best is None or end > best[1].end):
                best = entry, mark
    return best


def _assert_in_byte_order(memo: Memo) -> None:
    """The memo's byte order holds exactly its entries, sorted by body, each at its place."""
    assert {id(e) for e in memo._order} == set(memo._entries) and len(memo._order) == len(memo._entries)
    assert [e.raw for e in memo._order] == sorted(e.raw for e in memo._entries.values())
    assert memo._place == {id(e): i for i, e in enumerate(memo._order)}


@pytest.mark.parametrize("dialect", ["chat", "anthropic", "responses"])
def test_the_search_finds_the_entry_every_mark_compared_in_full_finds(dialect: str, light: bool) -> None:
    """Conversations of one client (one system prompt, one first task) interleaved, with resends,
    rewinds, forks and edited tails (their full reads leave two entries with the same bytes): the
    memo's search, which tries each entry's last marks first and searches further back only where
    the bytes before the best end agree, finds what comparing every mark in full finds."""
    rng = random.Random(5)
    memo = Memo(light=light)
    sessions = [Session(dialect, 1 + i % 3, seed=20 + i) for i in range(5)]
    rounds = [1] * len(sessions)
    key = items_key(dialect)
    compared = 0

    def send(raw: bytes) -> None:
        nonlocal compared
        found = memo._furthest(raw, lambda entry: True)
        expected = _furthest_by_every_mark(memo, raw)
        assert (found is None) == (expected is None)
        if found is not None:
            assert found[0] is expected[0] and found[1] is expected[1]
            compared += 1
        same(raw, dialect, memo, hint=CLIENT_HINTS[dialect])
        _assert_in_byte_order(memo)

    for _ in range(70):
        i = rng.randrange(len(sessions))
        s, move = sessions[i], rng.random()
        if move < 0.6:
            rounds[i] += 1
        elif move < 0.7:
            rounds[i] = max(1, rounds[i] - rng.randrange(1, 8))  # a rewind: an older mark
        elif move < 0.8:  # a fork: this conversation's rounds, then another's
            doc = s.doc(rounds[i])
            doc[key] = doc[key] + sessions[(i + 1) % len(sessions)].doc(3)[key][1:]
            send(orjson.dumps(doc))
            continue
        elif move < 0.9:
            for _, mutated in list(mutations(s.doc(rounds[i]), dialect, rng, tail=4))[:2]:
                send(orjson.dumps(mutated))
        send(s.body(rounds[i]))  # a resend when nothing moved
    assert compared >= 50


@pytest.mark.parametrize("light", [False, True])
def test_a_full_memo_finds_a_conversation_at_the_first_entry_it_tries(light: bool) -> None:
    """Sixty-four conversations of one client (one system prompt, one first task) in a full memo:
    the next turn of any of them costs the search the entries tried before its own, not a look at
    every one (nor asks of every one whether it serves), and finds what comparing every mark in
    full finds. A fork (two entries holding the same bytes past the cut) makes it look further,
    and still find the same."""
    memo = Memo(light=light)
    convs = [AgentConversation(8_000, 600 + i, 6) for i in range(64)]
    for conv in convs:
        same(conv.body(1), "chat", memo, hint=CLIENT_HINTS["chat"])
    assert len(memo) == 64
    _assert_in_byte_order(memo)
    for turn in (2, 3):
        for i in (63, 0, 31):
            raw = convs[i].body(turn)
            entries = list(reversed(memo._entries.values()))
            before, asked = memo.searched, []
            found = memo._furthest(raw, lambda entry, asked=asked: asked.append(entry) is None)
            assert found is not None and found[:2] == _furthest_by_every_mark(memo, raw)
            assert memo.searched - before == entries.index(found[0]) + 1
            assert asked == entries[: entries.index(found[0]) + 1]  # whether an entry serves: asked when reached
            same(raw, "chat", memo, hint=CLIENT_HINTS["chat"])
            _assert_in_byte_order(memo)
    # A rewind to conversation 5's first turn, gone on differently: the memo keeps both entries,
    # which hold the same bytes up to that turn. A second such rewind goes on from there: both
    # entries hold its bytes as far as the mark, so the search looks at every entry, and still
    # finds what comparing every mark finds (the newer on a tie).
    for turn in (3, 4, 5):
        same(convs[5].body(turn), "chat", memo, hint=CLIENT_HINTS["chat"])
    for words in ("something else", "another thing"):
        rewind = orjson.loads(convs[5].body(1))
        rewind["messages"][-1]["content"] = words
        raw = orjson.dumps(rewind)
        before, entries = memo.searched, len(memo)
        found = memo._furthest(raw, lambda entry: True)
        looked = memo.searched - before
        assert found is not None and found[:2] == _furthest_by_every_mark(memo, raw)
        same(raw, "chat", memo, hint=CLIENT_HINTS["chat"])
        _assert_in_byte_order(memo)
    assert looked == entries


# ---- read in two halves (pipeline.read): the observations first, the rest later -----------------


def _two_halves_agree(raw: bytes, dialect: str, memos: tuple[Memo, Memo, Memo], hint: str, emit: bool) -> None:
    """One bridge() (on the first memo), pipeline.read then finish() (the second) and sent_first
    then rest() (the third, in rewrite mode) give the same Outcome; the observations of the first
    half are the finished ones (those of the new pairs), or some of them when the resume ended in
    a full read between the halves."""
    from native_bridge.chat_hop.jobs import Job, bridge, outcome, sent_first

    job = Job(raw, Config(), DIALECT_PATHS[dialect], hint, emit=emit, record=emit)  # a light memo: no records
    once = bridge(job, memos[0])
    first = pipeline.read(raw, job.config, job.path, memos[1], hint, emit=emit)
    assert first is not None
    half = observed(first, job.config.tool_kinds) if isinstance(first, pipeline.Reading) else None
    outs = [outcome(first.finish() if half is not None else first, job.config.tool_kinds, job.record)]
    if emit:
        sent = sent_first(job, memos[2], whole=True)
        assert sent is not None and sent.rest is not None and not sent.observations
        assert (sent.status, sent.body, sent.summary) == (once.status, once.body, once.summary)
        sent.rest()
        outs.append(sent)
    for out in outs:
        assert (out.status, out.reason, out.summary, out.body, out.steps, out.accounting) == (
            once.status,
            once.reason,
            once.summary,
            once.body,
            once.steps,
            once.accounting,
        )
        assert out.observations == once.observations
    if half is not None:  # read in full after all: a superset
        assert set(half) <= set(outs[0].observations)


@pytest.mark.parametrize("named", [True, False], ids=["user-agent", "no-user-agent"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_read_in_two_halves_gives_what_one_reading_gives(dialect: str, named: bool, light: bool, monkeypatch) -> None:
    """Growing, edited and mutated histories, each turn through three memos; with a window of one
    item, light resumes that look further back end in a full read between the halves (counted:
    that path is taken). The memos resume alike: the later entries serve as the at-once ones."""
    completed: list[bool] = []
    complete = memo_resume.complete

    def counting(memo: Memo, begun: Any) -> Any:
        done = None
        try:
            done = complete(memo, begun)
        finally:
            completed.append(done is not None)
        return done

    monkeypatch.setattr(memo_resume, "complete", counting)
    rng, hint = random.Random(23), CLIENT_HINTS[dialect] if named else None  # unnamed: told by its tools
    s = Session(dialect, 3, seed=29)
    for window in (memo_light.LIGHT_ITEMS, 1):
        monkeypatch.setattr(memo_light, "LIGHT_ITEMS", window)
        memos = (Memo(light=light), Memo(light=light), Memo(light=light))
        for rounds in (*range(2, 14), 7, 14, 15):
            doc = s.doc(rounds)
            _two_halves_agree(orjson.dumps(doc), dialect, memos, hint, emit=not light)
            for _, mutated in mutations(doc, dialect, rng, tail=4):
                _two_halves_agree(orjson.dumps(mutated), dialect, memos, hint, emit=not light)
        assert all(m.errors == 0 for m in memos)
        assert memos[1].hits == memos[0].hits and (light or memos[2].hits == memos[0].hits)
    assert completed.count(True) >= 10
    if light:
        assert not all(completed), "a light resume that ends in a full read between the halves"
