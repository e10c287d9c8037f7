"""The oracle: an independent reader of tool items, and the truth rules checked on the core's answer
to one body (``check_rewrite``), read off the output bytes."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections import Counter
from typing import Any

import orjson
from native_bridge.core.encoder import parse_step_json
from native_bridge.core.pipeline import DELTA_KEY, STEPS_KEY, Config, rewrite
from support.histories import DIALECT_PATHS as PATHS

from .encoding import _key

STATUSES = {"rewritten", "unchanged", "skipped", "error"}
K = re.compile(r"KK\d+")  # a call's token, in its arguments (the seeds')
R = re.compile(r"RR\d+")  # a result's token, in its content

RESP_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "shell_call"}
RESP_RESULTS = {t + "_output" for t in RESP_CALLS}


def tool_items(dialect: str, doc: dict[str, Any]) -> tuple[list[tuple[str, Any, Any]], list[Any]]:
    """([(item, id, obj)] in history order, [other items in order]) as the wire says."""
    items: list[tuple[str, Any, Any]] = []
    other: list[Any] = []
    if dialect == "responses":
        inp = doc.get("input")
        for it in inp if isinstance(inp, list) else []:
            t = it.get("type") if isinstance(it, dict) else None
            if isinstance(t, str) and t in RESP_CALLS:
                items.append(("call", it.get("call_id"), it))
            elif isinstance(t, str) and t in RESP_RESULTS:
                cid = it.get("call_id")
                if t == "local_shell_call_output" and not isinstance(cid, str):
                    cid = it.get("id")
                items.append(("result", cid, it))
            else:
                other.append(it)
        return items, other
    for m in doc.get("messages") or []:
        role = m.get("role")
        if dialect == "chat":
            calls = m.get("tool_calls") if role == "assistant" else None
            if calls:
                items.extend(("call", tc.get("id"), tc) for tc in calls)
                rest = {k: v for k, v in m.items() if k != "tool_calls"}
                if any(v not in (None, "", []) for k, v in rest.items() if k not in ("role", "name")):
                    other.append(rest)
            elif role == "tool":
                items.append(("result", m.get("tool_call_id"), m))
            else:
                other.append(m)
        else:
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for b in blocks:
                if role == "assistant" and b.get("type") == "tool_use":
                    items.append(("call", b.get("id"), b))
                elif role == "user" and b.get("type") == "tool_result":
                    items.append(("result", b.get("tool_use_id"), b))
                else:
                    other.append((role, b))
    return items, other


def _numbers(obj: Any) -> set[int]:
    return {int(x) for x in re.findall(rb"-?\d+", _key(obj))}


def _empty_chat(m: Any) -> bool:
    return isinstance(m, dict) and all(v in (None, "", []) for k, v in m.items() if k not in ("role", "name"))


def check_rewrite(raw: bytes, path: str | None, config: Config, user_agent: str | None = None) -> tuple[list[str], Any]:
    """Problems with the core's answer to one body sent with ``user_agent`` (empty: every rule holds)."""
    try:
        r = rewrite(raw, config, path, client_hint=user_agent)
    except BaseException as e:  # the point: nothing escapes
        return [f"raised {type(e).__name__}: {str(e)[:200]}"], None
    problems: list[str] = []
    if r.status not in STATUSES:
        problems.append(f"unknown status {r.status!r}")
    if r.status != "rewritten":
        if r.body is not None:
            problems.append(f"status {r.status} but a new body")
        if not (isinstance(r.reason, str) and r.reason):
            problems.append(f"status {r.status} without a reason")
        return problems, r
    if r.dialect not in PATHS or not r.body:
        return [f"rewritten with dialect {r.dialect!r} and body {r.body!r:.40}"], r
    try:
        doc_in, doc_out = orjson.loads(raw), orjson.loads(r.body)
    except orjson.JSONDecodeError as e:
        return [f"rewritten, but a body does not parse: {e}"], r
    problems += _check_rewritten(r, raw, doc_in, doc_out, path, config, user_agent)
    return problems, r


def _check_rewritten(
    r: Any, raw: bytes, doc_in: Any, doc_out: Any, path: str | None, config: Config, user_agent: str | None = None
) -> list[str]:
    problems: list[str] = []
    dialect = r.dialect
    items_key = "input" if dialect == "responses" else "messages"
    # Nothing outside the tool history changes, not even a number (stdlib json keeps big ints exact).
    if set(doc_out) != set(doc_in) | {STEPS_KEY, DELTA_KEY}:
        problems.append(f"keys changed: {sorted(set(doc_out) ^ set(doc_in))}")
    for k in doc_in:  # the bridge owns additional_steps_delta_start: a client's own is replaced
        if k not in (items_key, DELTA_KEY) and doc_out.get(k) != doc_in[k]:
            problems.append(f"field {k!r} changed")
    with contextlib.suppress(ValueError, RecursionError):
        exact_in, exact_out = json.loads(raw), json.loads(r.body)
        for k in exact_in:
            if k not in (items_key, DELTA_KEY) and exact_out.get(k) != exact_in[k]:
                problems.append(f"field {k!r} changed value (exact number lost in re-encoding)")
    steps, delta = doc_out.get(STEPS_KEY), doc_out.get(DELTA_KEY)
    if not isinstance(steps, list) or not steps or steps != r.steps:
        return [*problems, "additional_steps missing, empty, or not the steps reported"]
    if type(delta) is not int or not 0 <= delta <= len(steps):
        problems.append(f"delta_start {delta!r} out of 0..{len(steps)}")
    for i, s in enumerate(steps):
        try:
            step = parse_step_json(s)
        except Exception as e:
            problems.append(f"step {i} does not decode strictly: {e}")
            continue
        if s.get("status") != "CORTEX_STEP_STATUS_DONE":
            problems.append(f"step {i} is not DONE")
        body = step.WhichOneof("step")
        if body is None or s.get("type") != f"CORTEX_STEP_TYPE_{body.upper()}":
            problems.append(f"step {i}: type {s.get('type')} with body {body}")
        rc = s.get("runCommand")
        if rc is not None and ("stdout" in rc or "stderr" in rc):
            problems.append(f"step {i}: run_command output in stdout/stderr (one copy, in combinedOutput)")
    # Conservation, read off the bytes.
    try:
        items_in, other_in = tool_items(dialect, doc_in)
        items_out, other_out = tool_items(dialect, doc_out)
    except (AttributeError, TypeError) as e:
        return [*problems, f"rewritten, but the oracle cannot read the history: {e}"]
    left = Counter(_key(o) for _, _, o in items_out)
    removed: list[tuple[int, str, Any, Any]] = []
    for pos, (item, iid, obj) in enumerate(items_in):
        k = _key(obj)
        if left[k]:
            left[k] -= 1
        else:
            removed.append((pos, item, iid, obj))
    if +left:
        problems.append(f"{sum(left.values())} tool item(s) in the output that the input does not hold")
    calls_removed = [x for x in removed if x[1] == "call"]
    results_removed = [x for x in removed if x[1] == "result"]
    if not (len(calls_removed) == len(results_removed) == len(steps)):
        problems.append(
            f"{len(steps)} steps, but {len(calls_removed)} calls and {len(results_removed)} results left the history"
        )
        return problems
    n_calls = Counter(iid for item, iid, _ in items_in if item == "call" and isinstance(iid, str))
    n_results = Counter(iid for item, iid, _ in items_in if item == "result" and isinstance(iid, str))
    result_of = {x[2]: x for x in results_removed if isinstance(x[2], str)}
    for i, (pos, _, cid, call) in enumerate(calls_removed):
        if not (isinstance(cid, str) and cid):
            problems.append(f"step {i}: its call has no id")
            continue
        if n_calls[cid] != 1 or n_results[cid] != 1:
            problems.append(f"step {i}: id {cid!r} is on {n_calls[cid]} calls and {n_results[cid]} results")
            continue
        res = result_of.get(cid)
        if res is None:
            problems.append(f"step {i}: its call left the history but its result did not")
            continue
        if res[0] < pos:
            problems.append(f"step {i}: result before call")
        # The step states this call and this result, nothing of another pair.
        own = _key(call) + _key(res[3])
        tokens = lambda b: set(K.findall(b.decode())) | set(R.findall(b.decode()))  # noqa: E731
        foreign = tokens(_key(steps[i])) - tokens(own)
        if foreign:
            problems.append(f"step {i} holds content of another pair: {sorted(foreign)[:4]}")
        if "runCommand" in steps[i]:
            problems += _exit_code_problems(i, steps[i]["runCommand"].get("exitCode"), res[3], dialect)
        elif _flagged_failure(res[3]):
            problems.append(f"step {i}: a failed {next(iter(steps[i]), '?')} became a step (nothing in it says so)")
    # Truth rule 7: a history that ends with the user's own message has no pending round.
    if steps and type(delta) is int and delta != len(steps) and _ends_with_user_text(dialect, doc_in):
        problems.append(f"delta_start {delta} with a user message last (expected {len(steps)})")
    # The history stays valid for its dialect.
    if dialect == "responses":  # a reasoning item goes with the calls that followed it, when all became steps
        other_in = _without_spent_reasoning(doc_in, {id(x[3]) for x in removed}, other_in)
    if other_out != other_in:
        problems.append("items outside the tool history changed, moved or vanished")
    problems += _dialect_shape(dialect, doc_in, doc_out)
    # Determinism, idempotence.
    again = rewrite(raw, config, path, client_hint=user_agent)
    if again.body != r.body or again.status != r.status:
        problems.append("not deterministic: the same bytes gave another answer")
    twice = rewrite(r.body, config, path, client_hint=user_agent)
    if twice.status == "rewritten" or twice.body is not None:
        problems.append("not idempotent: the rewritten body was rewritten again")
    alone = {k: v for k, v in doc_out.items() if k not in (STEPS_KEY, DELTA_KEY)}
    after = rewrite(orjson.dumps(alone), config, path, client_hint=user_agent)
    if after.status == "rewritten":
        problems.append("not idempotent: the rewritten history on its own gave new steps")
    return problems


def _without_spent_reasoning(doc_in: dict[str, Any], removed: set[int], other: list[Any]) -> list[Any]:
    """``other`` without the reasoning items whose response's calls all left the history: the
    calls (and their outputs) straight after the item and the reasoning items next to it
    (OpenAI rejects a reasoning item without the item it was followed by: it goes with them)."""
    items = doc_in.get("input")
    spent: set[int] = set()
    for i, it in enumerate(items if isinstance(items, list) else []):
        if not (isinstance(it, dict) and it.get("type") == "reasoning"):
            continue
        j = i + 1
        while j < len(items) and isinstance(items[j], dict) and items[j].get("type") == "reasoning":
            j += 1
        run = []
        while j < len(items) and isinstance(items[j], dict) and _resp_type(items[j]) in RESP_CALLS | RESP_RESULTS:
            run.append(items[j])
            j += 1
        calls = [x for x in run if _resp_type(x) in RESP_CALLS]
        if run and _resp_type(run[0]) in RESP_CALLS and all(id(c) in removed for c in calls):
            spent.add(id(it))
    return [x for x in other if id(x) not in spent]


def _resp_type(it: dict[str, Any]) -> str | None:
    t = it.get("type")
    return t if isinstance(t, str) else None


def _result_text(result: Any) -> str:
    content = result.get("content", result.get("output")) if isinstance(result, dict) else None
    if isinstance(content, list):
        content = next((p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)), "")
    return content if isinstance(content, str) else ""


def _flagged_failure(result: Any) -> bool:
    """The client's own failure marks on a result (Anthropic is_error, a [tool error] prefix)."""
    if isinstance(result, dict) and result.get("is_error") is True:
        return True
    return _result_text(result).lstrip().lower().startswith(("[tool error]", "<tool_use_error>"))


def _ends_with_user_text(dialect: str, doc: dict[str, Any]) -> bool:
    items = doc.get("input" if dialect == "responses" else "messages")
    last = items[-1] if isinstance(items, list) and items else None
    if not isinstance(last, dict) or last.get("role") != "user":
        return False
    if dialect == "responses" and doc.get("previous_response_id"):
        return False  # the server holds the earlier items: every step is the delta
    if dialect == "responses":
        return last.get("type") in (None, "message")
    if dialect == "anthropic":
        content = last.get("content")
        return isinstance(content, str) or not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content or []
        )
    return True


def _exit_code_problems(i: int, code: Any, result: Any, dialect: str = "anthropic") -> list[str]:
    """Truth rule 3, as far as the result's own data says it: the code comes from the result; a
    result flagged is_error is never exit 0, and its code is absent only where it states a number
    the rules may decline or read as a conflict (a 0 against the flag; one beyond int32; another
    client's frame; frames that disagree) on a line that speaks of an exit code."""
    numbers = _numbers(result)
    if code not in (None, 0, 1) and code not in numbers:
        return [f"step {i}: exit code {code} is not in its result"]
    flagged = dialect == "anthropic" and isinstance(result, dict) and result.get("is_error") is True
    framed = bool(numbers) and re.search(rb"(?i)exit|returncode", _key(result)) is not None
    if flagged and (code == 0 or (code is None and not framed)):
        return [f"step {i}: the result is flagged is_error, the step says exit {code}"]
    out = result.get("output") if isinstance(result, dict) and result.get("type") == "shell_call_output" else None
    if isinstance(out, list) and len(out) == 1 and isinstance(out[0], dict) and isinstance(out[0].get("outcome"), dict):
        outcome = out[0]["outcome"]
        n = outcome.get("exit_code")
        if outcome.get("type") == "exit" and type(n) is int and -(2**31) <= n < 2**31 and code != n:
            return [f"step {i}: shell_call_output says exit {n}, the step says {code}"]
    return []


def _dialect_shape(dialect: str, doc_in: Any, doc_out: Any) -> list[str]:
    problems = []
    if dialect == "chat":
        before = {_key(m) for m in doc_in["messages"]}
        for m in doc_out["messages"]:
            if _key(m) in before:
                continue
            if m.get("tool_calls") == []:
                problems.append("an assistant message with an empty tool_calls list")
            if _empty_chat(m):
                problems.append("an emptied message")
    elif dialect == "anthropic":
        msgs_in, msgs_out = doc_in["messages"], doc_out["messages"]
        if any(m.get("content") == [] for m in msgs_out) > any(m.get("content") == [] for m in msgs_in):
            problems.append("a message with empty content")
        roles_in = [m.get("role") for m in msgs_in]
        roles_out = [m.get("role") for m in msgs_out]
        alternating = lambda roles: all(a != b for a, b in itertools.pairwise(roles))  # noqa: E731
        if alternating(roles_in) and not alternating(roles_out):
            problems.append("user/assistant alternation broken")
    return problems


# Open bugs outside this script's reach, reported with reproductions (see tests/test_fuzz.py).
# A failure whose text starts with one of these prefixes is counted as known, not as new.
KNOWN: dict[str, str] = {}
# Fixed since they were found here (each has a regression test in tests/test_fuzz.py): a body nested
# 255..1024 deep raised out of rewrite(); integers beyond 64 bits became floats in a rewritten body;
# a shell_call_output exit_code beyond int32 raised out of rewrite(); a Responses input item whose
# type is a list or object raised out of rewrite(). A new open bug goes here, e.g.
# "raised TypeError: unhashable type": "dialects/responses.py: an input item whose type is a list".


def known(problem: str) -> str | None:
    return next((k for k in KNOWN if problem.startswith(k)), None)
