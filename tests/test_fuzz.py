"""Hostile bodies through the core and the addon: a short run of scripts/fuzz, property tests over
all three dialects, and one test per class of hostile input the issue names.

The full run is ``scripts/fuzz --cases 100000``; here a few hundred cases keep CI fast. Bugs the
fuzzer found in the core have a regression test each once fixed, and a strict xfail with a minimal
reproduction while open (none is open now).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz import runner
from fuzz.addon import _Jobs
from fuzz.cases import make_case
from fuzz.encoding import _dumps, _dumps_any_depth
from fuzz.mutations import _m_ids, _nodes
from fuzz.oracle import _check_rewritten, check_rewrite, known
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mitmproxy import hooks
from mitmproxy.test import taddons, tflow
from native_bridge import rewrite
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.core.pipeline import Config, _has_e_plus
from native_bridge.records.writer import Recorder, RecordJob, to_record
from native_bridge.runtime import META
from support.histories import DIALECT_PATHS
from support.histories.seeds import CLIENT_UA, SEEDS, Tokens, make_seed

CHAT, MESSAGES, RESPONSES = DIALECT_PATHS["chat"], DIALECT_PATHS["anthropic"], DIALECT_PATHS["responses"]
SEED = int(os.environ.get("FUZZ_SEED", "20240601"))


def no_new_problems(problems: list[str]) -> list[str]:
    return [p for p in problems if known(p) is None]


# ---- the fuzzer itself, briefly ----------------------------------------------------------------


def test_short_fuzz_run_finds_nothing_new() -> None:
    rep = runner.run(cases=600, seed=SEED, workers=1, addon_every=3)
    assert rep.cases == 600 and rep.addon_cases == 200
    assert rep.statuses["rewritten"] > 50, rep.statuses  # the seeds are real histories, mostly rewritable
    assert rep.statuses["skipped"] > 20 and rep.statuses["unchanged"] > 20
    details = [f"case {o.index} ({'+'.join(o.mutations)}): {o.problems}" for o in rep.failures]
    assert not details, f"fuzz seed {SEED}:\n" + "\n".join(details)


@pytest.mark.parametrize("dialect", ["chat", "anthropic", "responses"])
def test_unmutated_seeds_are_rewritten_and_hold_every_rule(dialect: str) -> None:
    rewritten: Counter[str | None] = Counter()
    codes: Counter[str | None] = Counter()  # run_command steps with an exit code
    non_shell: Counter[str | None] = Counter()  # steps of other kinds
    for i in range(90):
        rng = random.Random(f"{SEED}:{dialect}:{i}")
        seed = make_seed(dialect, rng)  # one client's history, sent with its user agent
        problems, r = check_rewrite(orjson.dumps(seed.doc), DIALECT_PATHS[dialect], Config(), seed.user_agent)
        assert problems == [], (i, seed.client, problems)
        rewritten[seed.client] += r.status == "rewritten"
        for step in r.steps:
            if "runCommand" in step:
                codes[seed.client] += "exitCode" in step["runCommand"]
            else:
                non_shell[seed.client] += 1
    # The seeds are real histories, a good share rewritable for every client (an unidentified
    # client's shell pairs too, with no code from its words).
    assert rewritten.total() >= 30 and all(rewritten[c] >= 5 for c in CLIENT_UA), rewritten
    # Codex's frames state exit codes; Claude Code's words make non-shell steps; an unidentified
    # client's words never do.
    assert codes["codex"] > 0 and non_shell["claude-code"] > 0 and non_shell[None] == 0, (codes, non_shell)


def test_the_oracle_notices_a_lost_item_and_a_stray_step() -> None:
    """The checker is worth something only if it fails on a broken rewrite."""
    raw = orjson.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "function": {"name": "Bash", "arguments": '{"command": "KK1"}'}},
                        {"id": "b", "function": {"name": "TodoWrite", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "RR1\nExit code: 2"},
                {"role": "tool", "tool_call_id": "b", "content": "RR2"},
            ],
        }
    )
    r = rewrite(raw, path=CHAT)
    assert r.status == "rewritten"
    doc_in, doc_out = orjson.loads(raw), orjson.loads(r.body)
    assert _check_rewritten(r, raw, doc_in, doc_out, CHAT, Config()) == []
    lost = json.loads(r.body)
    del lost["messages"][-1]  # the unmapped tool's result dropped
    r.body = orjson.dumps(lost)
    assert any("left the history" in p for p in _check_rewritten(r, raw, doc_in, lost, CHAT, Config()))
    forced = json.loads(orjson.dumps(doc_out))
    forced["additional_steps"][0]["runCommand"]["stdout"] = "RR1"
    r.steps = forced["additional_steps"]
    assert any("stdout" in p for p in _check_rewritten(r, raw, doc_in, forced, CHAT, Config()))


# ---- property tests: hostile values anywhere in a valid history, all dialects ------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
HOSTILE_KEYS = st.sampled_from(
    [
        "type",
        "role",
        "content",
        "id",
        "tool_call_id",
        "tool_use_id",
        "call_id",
        "arguments",
        "input",
        "output",
        "tool_calls",
        "messages",
        "function",
        "name",
        "is_error",
        "action",
        "outcome",
        "exit_code",
        "text",
    ]
)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    dialect=st.sampled_from(["chat", "anthropic", "responses"]),
    seed=st.integers(0, 2**32),
    value=JSON,
    key=HOSTILE_KEYS,
    where=st.integers(0, 10**6),
    path_of=st.sampled_from(["own", "chat", "anthropic", "responses", "none"]),
)
def test_any_value_under_any_key_keeps_every_rule(
    dialect: str, seed: int, value: Any, key: str, where: int, path_of: str
) -> None:
    sd = make_seed(dialect, random.Random(seed))
    doc = sd.doc
    dicts = [c[k] for c, k in _nodes(doc, 2000) if isinstance(c[k], dict)] + [doc]
    dicts[where % len(dicts)][key] = value
    path = None if path_of == "none" else DIALECT_PATHS[dialect if path_of == "own" else path_of]
    problems, _ = check_rewrite(orjson.dumps(doc), path, Config(), sd.user_agent)
    assert no_new_problems(problems) == []


@PROPERTY
@given(dialect=st.sampled_from(["chat", "anthropic", "responses"]), seed=st.integers(0, 2**32), data=st.data())
def test_byte_damage_never_escapes(dialect: str, seed: int, data: st.DataObject) -> None:
    sd = make_seed(dialect, random.Random(seed))
    raw = orjson.dumps(sd.doc)
    cut = data.draw(st.integers(0, len(raw)))
    junk = data.draw(st.binary(max_size=8))
    damaged = raw[:cut] + junk + raw[cut + data.draw(st.integers(0, 8)) :]
    problems, r = check_rewrite(damaged, DIALECT_PATHS[dialect], Config(), sd.user_agent)
    assert no_new_problems(problems) == []
    if r is not None and r.status == "skipped":
        assert r.body is None and r.reason


# ---- classes of hostile input, one by one --------------------------------------------------------


def bash_pair_chat(n: int, output: str = "ok", name: str = "Bash") -> dict[str, Any]:
    calls = [
        {"id": f"c{i}", "function": {"name": name, "arguments": json.dumps({"command": f"echo {i}"})}} for i in range(n)
    ]
    results = [{"role": "tool", "tool_call_id": f"c{i}", "content": output} for i in range(n)]
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}, *results],
    }


def bash_pair_anthropic(n: int) -> dict[str, Any]:
    uses = [{"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"command": f"echo {i}"}} for i in range(n)]
    res = [{"type": "tool_result", "tool_use_id": f"c{i}", "content": "out", "is_error": i % 2 == 0} for i in range(n)]
    return {
        "model": "m",
        "max_tokens": 9,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": res},
        ],
    }


def bash_pair_responses(n: int) -> dict[str, Any]:
    calls = [
        {
            "type": "function_call",
            "call_id": f"c{i}",
            "name": "shell",
            "arguments": json.dumps({"command": ["ls", str(i)]}),
        }
        for i in range(n)
    ]
    outs = [
        {"type": "function_call_output", "call_id": f"c{i}", "output": f"Exit code: {i % 3}\nOutput:\nx"}
        for i in range(n)
    ]
    return {"model": "m", "input": [{"type": "message", "role": "user", "content": "go"}, *calls, *outs]}


PAIRS = {CHAT: bash_pair_chat, MESSAGES: bash_pair_anthropic, RESPONSES: bash_pair_responses}


@pytest.mark.parametrize("path", list(PAIRS))
def test_enormous_number_of_tool_calls(path: str) -> None:
    raw = orjson.dumps(PAIRS[path](5000))
    t = time.perf_counter()
    problems, r = check_rewrite(raw, path, Config())
    assert time.perf_counter() - t < 20
    assert problems == []
    assert r.status == "rewritten" and len(r.steps) == 5000


def test_huge_tool_output_keeps_its_exit_code_and_one_copy() -> None:
    # Qwen Code's run_shell_command frame around 8 MiB of output (its user agent as captured with 0.24.4).
    frame = "Command: echo 0\nDirectory: (root)\nOutput: {}\nError: (none)\nExit Code: 3\nSignal: (none)\n"
    output = frame.format("x" * (8 << 20)) + "Process Group PGID: (none)"
    raw = orjson.dumps(bash_pair_chat(1, output, "run_shell_command"))
    problems, r = check_rewrite(raw, CHAT, Config(), "QwenCode/0.24.4 (linux; x64)")
    assert problems == []
    (step,) = r.steps
    assert step["runCommand"]["exitCode"] == 3
    assert "stdout" not in step["runCommand"]
    assert step["runCommand"]["combinedOutput"]["full"] == output


def test_huge_tool_output_from_an_unidentified_client_states_its_last_line() -> None:
    """For a client we cannot name a last line "Exit code: 3" is the generic frame at its place
    (issue 17), read at the end of 8 MB without splitting the whole; the same line inside is not."""
    raw = orjson.dumps(bash_pair_chat(1, "x" * (8 << 20) + "\nExit code: 3"))
    problems, r = check_rewrite(raw, CHAT, Config())
    assert problems == []
    (step,) = r.steps
    assert step["runCommand"]["exitCode"] == 3
    assert "stdout" not in step["runCommand"]
    raw = orjson.dumps(bash_pair_chat(1, "x" * (4 << 20) + "\nExit code: 3\n" + "y" * (4 << 20)))
    problems, r = check_rewrite(raw, CHAT, Config())
    assert problems == [] and "exitCode" not in r.steps[0]["runCommand"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"null",
        b"[]",
        b'"tool_calls"',
        b'{"messages": null, "tool_calls": 1}',
        b'{"messages": {"tool_calls": []}}',
        b'{"messages": [null, "tool_calls"]}',
        b'{"messages": [{"role": "assistant", "tool_calls": null}]}',
        b'{"messages": [{"role": "assistant", "tool_calls": {"id": "x"}}]}',
        b'{"messages": [{"role": "assistant", "tool_calls": [null]}]}',
        b'{"messages": [{"role": "assistant", "tool_calls": [{"function": null}]}]}',
        b'{"messages": [{"role": "tool", "tool_call_id": ["x"], "content": {"tool_calls": 1}}]}',
        b'{"messages": [{"role": "assistant", "content": 5, "tool_calls": [{"id": 5, "function": {"name": 5}}]}]}',
        b'{"input": null, "tool_use": 1}',
        b'{"input": [{"type": "function_call", "call_id": null, "arguments": 5}]}',
        b'{"input": [{"type": "shell_call_output", "call_id": "c", "output": [null]}]}',
        b'{"messages": [{"role": "user", "content": [{"type": "tool_result", "content": [null]}]}]}',
        b'{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "input": "not an object"}]}]}',
        b'{"messages": [{"role": "assistant", "content": [1, "tool_use"]}]}',
        b'{"messages": "tool_use"}',
        b'\xff\xfe{\x00"tool_calls\x00"',
        b'{"messages": [{"content": "\\ud800"}], "tool_calls": 1}',
        b'{"messages": [{"content": "\xed\xa0\x80"}], "tool_calls": 1}',
        b'{"tool_calls": 1, "n": NaN}',
        b'{"tool_calls": 1, "n": 1e400}',
        b'\xef\xbb\xbf{"tool_calls": 1}',
    ],
)
@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES, None])
def test_wrong_types_and_broken_bytes_are_reported_not_raised(body: bytes, path: str | None) -> None:
    problems, r = check_rewrite(body, path, Config())
    assert problems == []
    assert r.status in ("unchanged", "skipped") and r.body is None and r.reason


@pytest.mark.parametrize(
    ("depth", "status"), [(100, "rewritten"), (253, "rewritten"), (1024, "skipped"), (5000, "skipped")]
)
def test_deep_nesting_within_orjsons_limits_gets_a_clean_answer(depth: int, status: str) -> None:
    """The body is one level deeper than ``metadata``: 254 levels are written, past 1024 nothing is read."""
    raw = orjson.dumps(bash_pair_chat(1))[:-1] + b',"metadata":' + b"[" * depth + b"]" * depth + b"}"
    problems, r = check_rewrite(raw, CHAT, Config())
    assert problems == []
    assert r.status == status


def chat_call(i: str) -> dict[str, Any]:
    return {"id": i, "function": {"name": "Bash", "arguments": json.dumps({"command": f"echo {i}"})}}


AMBIGUOUS = {
    # c0 answered twice, c1 answered before its call, c2 a clean pair.
    CHAT: {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "c1", "content": "early"},
            {"role": "assistant", "tool_calls": [chat_call("c0"), chat_call("c1"), chat_call("c2")]},
            {"role": "tool", "tool_call_id": "c0", "content": "one"},
            {"role": "tool", "tool_call_id": "c0", "content": "two"},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        ],
    },
    MESSAGES: {
        "model": "m",
        "max_tokens": 9,
        "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "early"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"command": "ls"}} for i in range(3)
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c0", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "c0", "content": "two"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "ok"},
                ],
            },
        ],
    },
    RESPONSES: {
        "model": "m",
        "input": [
            {"type": "function_call_output", "call_id": "c1", "output": "early"},
            *[
                {"type": "function_call", "call_id": f"c{i}", "name": "shell", "arguments": '{"command": "ls"}'}
                for i in range(3)
            ],
            {"type": "function_call_output", "call_id": "c0", "output": "one"},
            {"type": "function_call_output", "call_id": "c0", "output": "two"},
            {"type": "function_call_output", "call_id": "c2", "output": "ok"},
        ],
    },
}


@pytest.mark.parametrize("path", list(AMBIGUOUS))
def test_duplicated_ids_and_results_before_calls_make_no_step(path: str) -> None:
    problems, r = check_rewrite(orjson.dumps(AMBIGUOUS[path]), path, Config())
    assert problems == []
    assert r.status == "rewritten" and len(r.steps) == 1  # only c2
    kept = {p.id: p.code for p in r.plan.kept}
    assert kept == {"c0": "ambiguous", "c1": "ambiguous"}


@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES])
def test_body_of_another_dialect_on_a_path(path: str) -> None:
    for other, make in PAIRS.items():
        problems, r = check_rewrite(orjson.dumps(make(2)), path, Config())
        assert problems == []
        if other != path:
            assert r.status != "rewritten", (path, other, r.status, r.reason)


# ---- the addon: bodies that cannot be rewritten leave byte-identical, with a reason ---------------


@pytest.fixture
def addon():
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite")
        jobs = _Jobs()
        hop.recorder = jobs
        yield hop, jobs
        hop.recorder = None


def send(hop: ChatHop, raw: bytes, path: str = CHAT, encoding: str | None = None, **headers: str):
    f = tflow.tflow()
    f.request.method, f.request.path = "POST", path
    for k, v in headers.items():
        f.request.headers[k] = v
    if encoding:
        f.request.headers["content-encoding"] = encoding
    f.request.raw_content = raw
    hop.request(f)
    return f


@pytest.mark.parametrize(
    ("encoding", "raw"),
    [
        ("gzip", b"\x1f\x8b\x08\x00not gzip at all"),
        ("gzip", gzip.compress(orjson.dumps(bash_pair_chat(1)), mtime=0)[:40]),  # mitmproxy inflates what is there
        ("zstd", b"\x28\xb5\x2f\xfd garbage"),
        ("br", b"\x00\x01\x02"),
        ("deflate", b"nope"),
        ("gzip, zstd", gzip.compress(b'{"tool_calls": 1}', mtime=0)),
        ("x-custom", orjson.dumps(bash_pair_chat(1))),
    ],
    ids=["not-gzip", "truncated-gzip", "not-zstd", "not-br", "not-deflate", "gzip-said-twice", "unknown-coding"],
)
def test_broken_compression_passes_byte_identical_with_a_reason(addon, encoding: str, raw: bytes) -> None:
    hop, jobs = addon
    f = send(hop, raw, encoding=encoding)
    assert f.request.raw_content == raw
    assert f.request.headers["content-encoding"] == encoding
    assert f.metadata[META]["status"] in ("skipped", "unchanged")  # a partial inflate may hold no tool history
    assert f.metadata[META]["reason"]
    (job,) = jobs.jobs
    assert job.status == f.metadata[META]["status"] and job.reason == f.metadata[META]["reason"]


@pytest.mark.parametrize("skipped_bodies", [False, True])
def test_deep_body_fails_open_and_is_still_recorded(addon, tmp_path: Path, caplog, skipped_bodies: bool) -> None:
    caplog.set_level(logging.ERROR)
    hop, jobs = addon
    hop.settings = dataclasses.replace(hop.settings, skipped_bodies=skipped_bodies)  # bridge_records_skipped_bodies
    raw = orjson.dumps(bash_pair_chat(1))[:-1] + b',"metadata":' + b"[" * 600 + b"]" * 600 + b"}"
    f = send(hop, raw)
    assert f.request.raw_content == raw  # fail open: the original goes upstream
    assert f.metadata[META]["status"] in ("skipped", "error")
    path = Recorder(str(tmp_path)).write(jobs.jobs[0])
    rec = orjson.loads(Path(path).read_bytes())
    assert rec["status"] == f.metadata[META]["status"]
    assert rec["before"] is None
    if rec["status"] == "skipped" and not skipped_bodies:  # a skipped body is recorded by its size only
        assert rec["before_bytes"] == len(raw) and "body_omitted" in rec and "before_text" not in rec
    else:
        assert rec["before_text"].startswith('{"model":"m"')  # too deep for JSON: as text


@pytest.mark.parametrize("depth", [254, 400, 1024])
def test_record_of_a_deep_body_is_complete(tmp_path: Path, depth: int) -> None:
    """Bug fixed in records.py: a body deeper than orjson writes (254) or Python recurses (~1000) lost its record."""
    job = RecordJob(
        "f1", 1.7e9, "POST", "http://h/v1/chat/completions", [], "skipped", "r", None, b"[" * depth + b"]" * depth
    )
    path = Recorder(str(tmp_path)).write(job)
    assert path is not None
    rec = orjson.loads(Path(path).read_bytes())
    assert rec["flow_id"] == "f1" and "record_error" not in rec


def test_record_of_undecodable_header_and_url_bytes_is_complete(addon, tmp_path: Path) -> None:
    """Bug fixed in records.py: one header byte that is not UTF-8 made the request's record vanish."""
    hop, jobs = addon
    f = tflow.tflow()
    f.request.method, f.request.path = "POST", b"/v1/chat/completions?q=\xff&api_key=sk-secret-12345678"
    f.request.headers[b"x-junk"] = b"\xff\xfe"
    f.request.headers["authorization"] = "Bearer sk-secret-abcdefgh"
    f.request.raw_content = orjson.dumps(bash_pair_chat(1))
    hop.request(f)
    assert f.metadata[META]["status"] == "rewritten"
    path = Recorder(str(tmp_path)).write(jobs.jobs[0])
    assert path is not None
    data = Path(path).read_bytes()
    rec = orjson.loads(data)
    assert ["x-junk", "\ufffd\ufffd"] in rec["request_headers"]
    assert b"sk-secret" not in data


def test_record_renders_every_hostile_header_value() -> None:
    values = ["\udcff", "\ud800x", "a\x00b", "\u202e", "🙂", "\udcc3\udca9"]
    job = RecordJob(
        "\udcff", 1.7e9, "P\udcffST", "http://h/\udcff", [(v, v) for v in values], "skipped", "\udcff", None, None
    )
    orjson.dumps(to_record(job))  # no exception: every string is valid UTF-8 now


# ---- bugs the fuzzer found in the core, fixed since: regression tests ------------------------------


@pytest.mark.parametrize("depth", [254, 300, 1023])
def test_body_nested_past_orjsons_writer_is_skipped(depth: int) -> None:
    """Was a bug (found by the fuzzer): 255..1024 levels raised TypeError out of rewrite()."""
    raw = orjson.dumps(bash_pair_chat(1))[:-1] + b',"metadata":' + b"[" * depth + b"]" * depth + b"}"
    r = rewrite(raw, path=CHAT)
    assert r.status == "skipped" and r.body is None and r.reason


@pytest.mark.parametrize("code", [2**31, -(2**31) - 1, 2**40, 2**64 - 1])
def test_responses_exit_code_beyond_int32_is_not_stated(code: int) -> None:
    """Was a bug (found by the fuzzer): the protobuf encoder raised ValueError out of rewrite()."""
    output = [{"stdout": "x", "outcome": {"type": "exit", "exit_code": code}}]
    raw = orjson.dumps(
        {
            "input": [
                {"type": "shell_call", "call_id": "c", "action": {"commands": ["ls"]}},
                {"type": "shell_call_output", "call_id": "c", "output": output},
            ]
        }
    )
    problems, r = check_rewrite(raw, RESPONSES, Config())
    assert problems == []
    assert all(s.get("runCommand", {}).get("exitCode") in (None, 1) for s in r.steps)


@pytest.mark.parametrize("number", [b"18446744073709551617", b"-9223372036854775809", b"1" * 40])
def test_big_integer_outside_the_history_is_never_changed(number: bytes) -> None:
    """Was a bug (found by the fuzzer): orjson reads such integers as floats, so a rewritten body changed them."""
    raw = orjson.dumps(bash_pair_chat(1))[:-1] + b',"seed":' + number + b"}"
    r = rewrite(raw, path=CHAT)
    assert r.status != "rewritten" or json.loads(r.body)["seed"] == int(number)
    assert r.body is None or number in r.body


@pytest.mark.parametrize("noise", ["", "C++ and a+b " * 80, "some+thing, the+end " * 3])
def test_big_integer_is_never_changed_among_other_plus_signs(noise: str) -> None:
    """The check looks for "e+" by its rare "+" (pipeline._has_e_plus): many a "+" before the
    number's, or an "e+" the client wrote itself, must not hide the one re-encoding would add."""
    doc = bash_pair_chat(1)
    doc["messages"].insert(0, {"role": "user", "content": noise})
    raw = orjson.dumps(doc)[:-1] + b',"seed":' + b"1" * 40 + b"}"
    r = rewrite(raw, path=CHAT)
    assert r.status == "skipped" and "survive re-encoding" in r.reason
    plain = rewrite(orjson.dumps(doc), path=CHAT)  # without the number: rewritten, the client's "e+" kept
    assert plain.status == "rewritten" and plain.body is not None and noise.encode() in plain.body


@given(st.binary(max_size=300).map(lambda b: bytes(b"e+x"[c % 3] for c in b)), st.integers(0, 70))
def test_the_e_plus_search_finds_what_a_plain_search_finds(data: bytes, looks: int) -> None:
    assert _has_e_plus(data, looks) == (b"e+" in data)


@pytest.mark.parametrize("type_", [["function_call"], {"t": 1}, 5, None])
def test_responses_item_whose_type_is_not_a_string(type_: Any) -> None:
    """Was a bug (found by the fuzzer): `t in CALLS` on a list or object type raised TypeError out of rewrite()."""
    doc = bash_pair_responses(1)
    doc["input"].insert(1, {"type": type_, "call_id": "c0"})
    problems, r = check_rewrite(orjson.dumps(doc), RESPONSES, Config())
    assert problems == []
    assert r.status in ("rewritten", "skipped")


@pytest.mark.parametrize("type_", [["thinking"], {"t": 1}, [], 5, None])
def test_writers_read_a_block_or_item_type_that_is_not_a_string(type_: Any) -> None:
    """Was a bug (found by the fuzzer): the validity rules' writers tested `type in THINKING` / `in CALLS`
    on a list or object type, and raised TypeError out of rewrite(): an Anthropic assistant turn whose
    stepped call shares the turn with such a block; a Responses reasoning item whose call is followed
    by such an item."""
    doc = bash_pair_anthropic(1)
    doc["messages"][1]["content"].insert(0, {"type": type_, "text": "x"})
    doc["messages"][2]["content"].append({"type": "text", "text": "go on"})  # the request still ends on the user
    problems, r = check_rewrite(orjson.dumps(doc), MESSAGES, Config())
    assert problems == [] and r.status == "rewritten" and len(r.steps) == 1
    doc = bash_pair_responses(1)
    doc["input"][1:1] = [{"type": "reasoning", "summary": []}]
    doc["input"].insert(3, {"type": type_, "call_id": "c0"})
    problems, r = check_rewrite(orjson.dumps(doc), RESPONSES, Config())
    assert problems == []
    assert r.status in ("rewritten", "skipped")


# ---- issue 12: the fuzzer survives every seed -----------------------------------------------------


def test_seed_20261130_case_44618_is_a_case_not_a_crash() -> None:
    """Was: `fuzz.py --cases 100000 --seed 20261130` died with "TypeError: Recursion limit reached" in its
    own generator: the "ids" mutation set an id to another id's value, a container holding the first one,
    so the document contained itself. Values are copied now; the case is an ordinary one."""
    case = make_case(20261130, 44618)
    orjson.loads(case.raw)
    rep = runner.run(1, seed=20261130, workers=1, addon_every=1, start=44618)
    assert rep.cases == 1 and rep.failures == []


def test_the_ids_mutation_never_makes_a_document_contain_itself() -> None:
    """The bug itself, whatever the generator's seeds look like: an id set to a container that holds it."""
    for i in range(300):
        doc = {"messages": [{"id": {"messages": [{"id": "x", "n": i}]}, "tool_use_id": "y"}]}
        _m_ids(doc, random.Random(i))
        orjson.dumps(doc)  # "Recursion limit reached" on a cycle


def test_a_document_that_contains_itself_is_refused_not_looped_on() -> None:
    doc: dict = {"messages": []}
    doc["messages"].append(doc)
    with pytest.raises(ValueError, match="contains itself"):
        _dumps_any_depth(doc)


@pytest.mark.parametrize("index", range(40))
def test_the_any_depth_encoder_writes_what_orjson_writes(index: int) -> None:
    rng = random.Random(index)
    dialect = rng.choice(list(SEEDS))
    doc = SEEDS[dialect](rng, Tokens())
    assert _dumps_any_depth(doc) == _dumps(doc)
    deep: list = []
    node = deep
    for _ in range(600):
        node.append([])
        node = node[0]
    want = b'{"x":' + b"[" * 601 + b"]" * 601 + b',"y":' + orjson.dumps("é\u2028") + b"}"
    assert _dumps_any_depth({"x": deep, "y": "é\u2028"}) == want


def test_a_case_the_generator_cannot_build_is_reported_not_fatal(monkeypatch) -> None:
    real = make_case

    def flaky(seed: int, index: int):
        if index == 3:
            raise RuntimeError("generator bug")
        return real(seed, index)

    monkeypatch.setattr(runner, "make_case", flaky)
    rep = runner.run(6, seed=1, workers=1, addon_every=0)
    assert rep.cases == 6
    [failure] = rep.failures
    assert failure.index == 3 and failure.problems == ["fuzzer: the case generator raised RuntimeError: generator bug"]
