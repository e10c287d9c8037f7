"""Property tests over generated Chat Completions histories (truth rules 1, 2, 6, 7, 8).

Every generated call carries a unique token KK### in its arguments and every result a unique
token RR### in its content, so where each item ended (a step, or the rewritten messages) is
read off the actual output, not off the builder's own accounting.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson
from chatkit import assert_valid_rewrite, assistant, body, build_pending, call, tool, user
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_bridge import Config, rewrite
from native_bridge.core.builder import build
from native_bridge.core.dialects import chat
from native_bridge.core.encoder import step_json

CHAT_PATH = "/v1/chat/completions"
CONFIG = Config(client="codex")


def _read(doc: Any) -> Any:
    h = chat.read(doc)
    h.client = CONFIG.client
    return h


K = re.compile(r"KK\d{3}")
R = re.compile(r"RR\d{3}")

# result variants: (template, the step can state it, exit code the step must carry)
BASH_RESULTS = [
    ("{r} ok", True, None),
    ("Exit code: 1\nOutput:\n{r} failed", True, 1),
    ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{r}\nexit code 3", True, 0),
    ("[tool error] {r}", True, 1),  # an error flag (truth rule 3): a failure with no number
    ('{{"output": "{r}", "metadata": {{"exit_code": 2}}}}', True, 2),
    ("Process exited with code 127\nOutput:\n{r}: command not found", True, 127),
    ("Process running with session ID 5\nOutput:\n{r}", False, None),
]
# The client is Codex (CLIENT): its shell frames count; the non-shell tools below have no
# Codex wording that states their success (rules/success_evidence.py), so they stay messages.
READ_RESULTS = [
    ("     1\t{r} text", False, None),
    ("<tool_use_error>{r} does not exist</tool_use_error>", False, None),
    ("[tool error] {r}", False, None),
]
PLAIN_RESULTS = [("{r} result", False, None)]
LS_RESULTS = [("{r}.txt", False, None), ("- /w/\n  - {r}.txt", False, None)]

# (tool name, arguments from the call token, the call can be translated, result variants)
TOOLS: list[tuple[str, Any, bool, list[tuple[str, bool, int | None]]]] = [
    ("Bash", lambda k: {"command": f"echo {k}", "description": "echo"}, True, BASH_RESULTS),
    ("Bash", lambda k: {"command": f"serve {k}", "run_in_background": True}, False, BASH_RESULTS),
    ("shell", lambda k: {"command": ["bash", "-lc", f"test {k}"], "workdir": "/w"}, True, BASH_RESULTS),
    ("Read", lambda k: {"file_path": f"/w/{k}.txt"}, True, READ_RESULTS),
    ("Read", lambda k: {"file_path": f"w/{k}.txt"}, False, READ_RESULTS),
    ("Glob", lambda k: {"pattern": f"*{k}*", "path": "/w"}, True, PLAIN_RESULTS),
    ("WebFetch", lambda k: {"url": f"https://example.com/{k}", "prompt": "summary"}, True, PLAIN_RESULTS),
    ("LS", lambda k: {"path": f"/w/{k}"}, True, LS_RESULTS),
    ("TodoWrite", lambda k: {"todos": [{"content": k, "status": "pending"}]}, False, PLAIN_RESULTS),
    ("apply_patch", lambda k: {"input": f"*** Begin Patch {k}"}, False, PLAIN_RESULTS),
]


@dataclass
class Call:
    token: str
    id: str | None
    msg: int  # index of its message
    tool: str
    translatable: bool


@dataclass
class Result:
    token: str
    id: str | None
    msg: int
    statable: bool
    exit_code: int | None


@dataclass
class Case:
    messages: list[dict[str, Any]]
    calls: list[Call]
    results: list[Result]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    messages: list[dict[str, Any]] = [user("start")]
    calls: list[Call] = []
    results: list[Result] = []
    deferred: list[tuple[dict[str, Any], Result]] = []
    early_ids: list[str] = []
    n = 0

    def fresh() -> int:
        nonlocal n
        n += 1
        return n

    def emit_result(id: str | None, variants: list[tuple[str, bool, int | None]], now: bool = True) -> None:
        token = f"RR{fresh():03d}"
        template, statable, code = draw(st.sampled_from(variants))
        text = template.format(r=token)
        shape = draw(st.sampled_from(["str", "str", "parts", "image"]))
        if shape == "parts":
            content: Any = [{"type": "text", "text": text}]
        elif shape == "image":
            content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:,"}}]
            statable = False
        else:
            content = text
        m = tool(id, content)
        r = Result(token, id, -1, statable, code)
        if now:
            r.msg = len(messages)
            messages.append(m)
            results.append(r)
        else:
            deferred.append((m, r))

    def flush() -> None:
        for m, r in deferred:
            r.msg = len(messages)
            messages.append(m)
            results.append(r)
        deferred.clear()

    for _ in range(draw(st.integers(0, 6))):
        event = draw(st.sampled_from(["round"] * 5 + ["user", "text", "orphan", "early", "flush"]))
        if event == "user":
            messages.append(user("hello"))
        elif event == "text":
            messages.append(assistant(content="thinking"))
        elif event == "orphan":
            emit_result(f"orphan_{fresh()}", PLAIN_RESULTS)
        elif event == "early":
            id = f"early_{fresh()}"
            early_ids.append(id)
            emit_result(id, PLAIN_RESULTS)
        elif event == "flush":
            flush()
        else:
            made: list[tuple[Call, list[tuple[str, bool, int | None]]]] = []
            tool_calls = []
            for _ in range(draw(st.integers(1, 3))):
                how = draw(st.sampled_from(["fresh"] * 6 + ["dup", "early", "none"]))
                used = [c.id for c in calls + [c for c, _ in made] if c.id]
                if how == "dup" and used:
                    id: str | None = draw(st.sampled_from(used))
                elif how == "early" and early_ids:
                    id = early_ids.pop(0)
                elif how == "none":
                    id = None
                else:
                    id = f"call_{fresh()}"
                name, args, translatable, variants = draw(st.sampled_from(TOOLS))
                token = f"KK{fresh():03d}"
                tool_calls.append(call(id, name, args(token)))
                made.append((Call(token, id, len(messages), name, translatable), variants))
            messages.append(assistant(*tool_calls, content=draw(st.sampled_from([None, "", "Running tools."]))))
            calls.extend(c for c, _ in made)
            answered = []
            for c, variants in made:
                fate = draw(st.sampled_from(["now", "now", "now", "now", "missing", "later", "twice"]))
                if fate in ("now", "twice"):
                    answered.append((c, variants))
                if fate == "twice":
                    answered.append((c, variants))
                if fate == "later":
                    emit_result(c.id, variants, now=False)
            for c, variants in draw(st.permutations(answered)):
                emit_result(c.id, variants)
    if draw(st.booleans()):
        flush()
    tail = draw(st.sampled_from(["none", "none", "user", "text"]))
    if tail == "user":
        messages.append(user("what now?"))
    elif tail == "text":
        messages.append(assistant(content="done"))
    return Case(messages, calls, results)


def expected_steps(case: Case) -> list[tuple[str, str, int | None]]:
    """The model: (call token, result token, exit code) for each pair that must become a step."""
    n_calls = Counter(c.id for c in case.calls)
    n_results = Counter(r.id for r in case.results)
    out = []
    for c in case.calls:
        if not c.id or n_calls[c.id] != 1 or n_results[c.id] != 1:
            continue
        (r,) = [r for r in case.results if r.id == c.id]
        if r.msg > c.msg and c.translatable and r.statable:
            out.append((c.token, r.token, r.exit_code))
    return out


def expected_delta(case: Case, steps: list[tuple[str, str, int | None]]) -> int:
    turns = [i for i, m in enumerate(case.messages) if m.get("role") == "assistant" and m.get("tool_calls")]
    if not turns:
        return len(steps)
    last = turns[-1]
    ids = {c.id for c in case.calls if c.msg == last}
    after = case.messages[last + 1 :]
    if not all(m.get("role") == "tool" and m.get("tool_call_id") in ids for m in after):
        return len(steps)
    msg_of = {c.token: c.msg for c in case.calls}
    return sum(1 for k, _, _ in steps if msg_of[k] < last)


def tokens(doc: Any, pattern: re.Pattern[str]) -> list[str]:
    return pattern.findall(orjson.dumps(doc).decode())


def outcome(case: Case) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(rewritten messages, steps, delta) as the output bytes say."""
    r = rewrite(orjson.dumps(body(*case.messages)), CONFIG, path=CHAT_PATH)
    assert r.status in ("rewritten", "unchanged"), r.reason
    if r.status == "unchanged":
        assert r.body is None
        return case.messages, [], 0
    out = orjson.loads(r.body or b"")
    return out["messages"], out["additional_steps"], out["additional_steps_delta_start"]


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases())
def test_conservation_every_item_ends_in_exactly_one_place(case: Case) -> None:
    messages, steps, _ = outcome(case)
    step_calls = [t for s in steps for t in tokens(s, K)]
    step_results = [t for s in steps for t in tokens(s, R)]
    msg_calls = [t for m in messages for t in tokens(m, K)]
    msg_results = [t for m in messages for t in tokens(m, R)]
    for in_steps, in_msgs, given_ in (
        (step_calls, msg_calls, [c.token for c in case.calls]),
        (step_results, msg_results, [r.token for r in case.results]),
    ):
        assert len(in_steps) == len(set(in_steps)), "an item is in two steps"
        assert len(in_msgs) == len(set(in_msgs)), "an item is twice in the messages"
        assert not set(in_steps) & set(in_msgs), "an item is both a step and a message"
        assert sorted(in_steps + in_msgs) == sorted(given_), "an item was lost or invented"


@SETTINGS
@given(cases())
def test_steps_are_exactly_the_correlated_statable_pairs(case: Case) -> None:
    _, steps, _ = outcome(case)
    got = []
    for s in steps:
        assert s["status"] == "CORTEX_STEP_STATUS_DONE"
        (k,) = tokens(s, K)
        (r,) = set(tokens(s, R))  # a step states exactly one result
        got.append((k, r, s.get("runCommand", {}).get("exitCode")))
    assert got == expected_steps(case)


@SETTINGS
@given(cases())
def test_no_step_without_a_correlated_result(case: Case) -> None:
    _, steps, _ = outcome(case)
    calls = {c.token: c for c in case.calls}
    results = {r.token: r for r in case.results}
    for s in steps:
        (k,) = tokens(s, K)
        (r,) = set(tokens(s, R))
        c, res = calls[k], results[r]
        assert c.id is not None
        assert res.id == c.id
        assert [x.id for x in case.calls].count(c.id) == 1
        assert [x.id for x in case.results].count(c.id) == 1
        assert res.msg > c.msg


@SETTINGS
@given(cases())
def test_rewritten_messages_stay_valid_chat(case: Case) -> None:
    messages, _, _ = outcome(case)
    assert_valid_rewrite(messages, case.messages)


@SETTINGS
@given(cases())
def test_deterministic(case: Case) -> None:
    data = orjson.dumps(body(*case.messages))
    first = rewrite(data, CONFIG, path=CHAT_PATH)
    again = rewrite(orjson.dumps(orjson.loads(data)), CONFIG, path=CHAT_PATH)
    assert first.status == again.status
    assert first.body == again.body
    assert first.steps == again.steps


@SETTINGS
@given(cases())
def test_idempotent(case: Case) -> None:
    first = rewrite(orjson.dumps(body(*case.messages)), CONFIG, path=CHAT_PATH)
    if first.body is None:
        return
    second = rewrite(first.body, CONFIG, path=CHAT_PATH)
    assert second.status in ("skipped", "unchanged")
    assert second.body is None
    # The rewritten messages on their own: nothing left to step, nothing to take out.
    messages = orjson.loads(first.body)["messages"]
    doc = body(*messages)
    again = build(_read(doc))
    assert again.steps == []
    assert chat.write(doc, again.stepped) == messages
    alone = rewrite(orjson.dumps(doc), CONFIG, path=CHAT_PATH)
    assert alone.status == "unchanged"
    assert alone.body is None


@SETTINGS
@given(cases())
def test_delta_slice(case: Case) -> None:
    h = _read(body(*case.messages))
    plan = build(h)
    assert 0 <= plan.delta_start <= len(plan.steps)
    full = [step_json(s) for s in plan.steps[plan.delta_start :]]
    assert [step_json(s) for s in build_pending(h)] == full
    assert plan.delta_start == expected_delta(case, expected_steps(case))
    if case.messages[-1].get("role") == "user":
        assert plan.delta_start == len(plan.steps)
    _, steps, delta = outcome(case)
    if steps:
        assert delta == plan.delta_start
        assert steps[delta:] == full
