"""Records hold each body once, rebuild the upstream bytes exactly, and stay within their caps (issue 12)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import replay_check
from mitmproxy import exceptions, hooks
from mitmproxy.test import taddons, tflow, tutils
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.inspect import explain
from native_bridge.inspect.replay import sources as replay_sources
from native_bridge.records import writer as records
from native_bridge.records.writer import Limits, Recorder, RecordJob, parse_age, parse_size
from steps import gone
from support.histories.agent import session_for_size

ROOT = Path(__file__).resolve().parent.parent

SESSIONS = {
    "chat": ("/v1/chat/completions", ROOT / "tests" / "fixtures" / "sessions" / "chat_session.json"),
    "anthropic": ("/v1/messages", ROOT / "tests" / "fixtures" / "sessions" / "anthropic_session.json"),
    "responses": ("/v1/responses", ROOT / "tests" / "fixtures" / "sessions" / "responses_session.json"),
}


@pytest.fixture
def bridge(tmp_path):
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite", bridge_records=str(tmp_path / "records"))
        yield hop, tctx
        hop.done()


def flow(body: bytes, path: str):
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.path = path
    f.request.headers["content-type"] = "application/json"
    f.request.content = body
    return f


def only_record(directory: Path) -> tuple[bytes, dict]:
    [path] = [p for p in directory.glob("*.json") if not p.name.startswith(".")]
    raw = path.read_bytes()
    return raw, orjson.loads(raw)


@pytest.mark.parametrize("dialect", list(SESSIONS))
def test_after_is_rebuilt_byte_for_byte_from_before_and_the_patch(bridge, tmp_path, dialect):
    hop, _ = bridge
    path, session = SESSIONS[dialect]
    f = flow(session.read_bytes(), path)
    hop.request(f)
    sent = f.request.get_content()  # exactly what went upstream
    assert hop.recorder.flush(10)
    _, rec = only_record(tmp_path / "records")
    assert rec["status"] == "rewritten" and "after" not in rec
    assert records.rebuild_after(rec) == sent
    assert rec["after_sha256"] == hashlib.sha256(sent).hexdigest() and rec["after_bytes"] == len(sent)
    # the tool, on the file
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "rebuild_record.py"), str(next((tmp_path / "records").glob("*.json")))],
        capture_output=True,
        check=True,
    )
    assert out.stdout == sent and out.stderr == b""


@pytest.mark.parametrize("dialect", list(SESSIONS))
def test_each_body_is_stored_once(bridge, tmp_path, dialect):
    hop, _ = bridge
    path, session = SESSIONS[dialect]
    doc = orjson.loads(session.read_bytes())
    marker = "An opening request that stays in the history: " + "q" * 2000
    items = doc["input"] if dialect == "responses" else doc["messages"]
    first = items[0]
    if isinstance(first.get("content"), str):
        first["content"] = marker
    else:
        first["content"] = [{"type": "input_text" if dialect == "responses" else "text", "text": marker}]
    f = flow(orjson.dumps(doc), path)
    hop.request(f)
    assert hop.recorder.flush(10)
    raw, rec = only_record(tmp_path / "records")
    assert rec["status"] == "rewritten"
    assert raw.count(marker.encode()) == 1  # in before only: after refers to it
    # additional_steps points at the record's steps
    assert rec["after_patch"]["object"]["changed"]["additional_steps"] == {"steps": True}
    # The rewritten body costs a small patch, not a second copy (records were before + after + steps).
    assert len(orjson.dumps(rec["after_patch"])) < 0.25 * rec["after_bytes"]


def test_a_secret_in_the_body_is_redacted_and_the_rebuild_says_so(bridge, tmp_path):
    hop, _ = bridge
    path, session = SESSIONS["chat"]
    doc = orjson.loads(session.read_bytes())
    doc["metadata"] = {"api_key": "sk-live-abcdef1234567890"}
    f = flow(orjson.dumps(doc), path)
    hop.request(f)
    assert hop.recorder.flush(10)
    raw, rec = only_record(tmp_path / "records")
    assert b"sk-live-abcdef1234567890" not in raw
    rebuilt = records.rebuild_after(rec)
    assert rebuilt != f.request.get_content()
    assert rebuilt == f.request.get_content().replace(b"sk-live-abcdef1234567890", b"<redacted>")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "rebuild_record.py"), "--check", str(tmp_path / "records")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "differs from the bytes sent (redacted secrets)" in out.stdout


def test_skipped_body_is_recorded_without_its_content_unless_asked(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_max_body=100)
    body = orjson.dumps({"messages": [{"role": "user", "content": "x" * 1000}]})
    hop.request(flow(body, "/v1/chat/completions"))
    assert hop.recorder.flush(10)
    raw, rec = only_record(tmp_path / "records")
    assert rec["status"] == "skipped"
    assert rec["before"] is None and "before_text" not in rec and b"x" * 1000 not in raw
    assert rec["before_bytes"] == len(body)
    assert "not recorded" in rec["body_omitted"] and "bridge_records_skipped_bodies" in rec["body_omitted"]
    tctx.configure(hop, bridge_records=str(tmp_path / "all"), bridge_records_skipped_bodies=True)
    hop.request(flow(body, "/v1/chat/completions"))
    assert hop.recorder.flush(10)
    _, rec = only_record(tmp_path / "all")
    assert rec["before"] == orjson.loads(body) and "body_omitted" not in rec


def test_a_record_over_max_record_keeps_its_verdict_without_bodies(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records_max_record="12K")
    path, session = SESSIONS["chat"]
    f = flow(session.read_bytes(), path)
    hop.request(f)
    assert hop.recorder.flush(10)
    raw, rec = only_record(tmp_path / "records")
    assert len(raw) <= 12 * 1024
    assert rec["status"] == "rewritten" and rec["summary"]["steps"] > 0
    assert rec["before"] is None and rec["after_patch"] is None
    assert "over bridge_records_max_record (12288)" in rec["body_omitted"]


@pytest.fixture(scope="module")
def big_chat() -> bytes:
    """A generated agent session of about 1 MB in Chat Completions (edits, reads, commands, greps)."""
    session, rounds = session_for_size("chat", 1_000_000, 1)
    return session.body(rounds)


async def bridged(hop: ChatHop, f) -> None:
    """The request hook as mitmproxy runs it: a body this large is read in the worker process."""
    pending = hop.request(f)
    if pending is not None:
        await pending
    await gone()  # gone upstream: the reading has begun
    await asyncio.gather(*hop.readings())
    await gone()  # the verdict is made once the request went upstream (later.py)
    f.response = tutils.tresp()  # the reply: the turn is over, and its record is written
    hop.responseheaders(f)
    hop.response(f)
    await gone()


def as_version_2(rec: dict) -> dict:
    """The same record as the previous build wrote it: ``steps`` in full."""
    return {**rec, "record_version": 2, "steps": records.steps_of(rec)}


def read_back(rec: dict) -> tuple:
    """What the readers get from a record: explain (mitmweb, bridge.explain) and offline replay's entry."""
    ex = explain.explain_record(rec)
    entry = replay_sources.entry_from_record(rec, "r")
    return (
        explain.steps_text(ex),
        explain.diff_text(ex),
        ex.summary,
        ex.accounting,
        ex.after,
        entry.before,
        entry.steps,
        entry.after,
        entry.accounting,
    )


async def test_a_1mb_rewritten_chat_request_makes_a_record_of_at_most_1_5_times_its_body(bridge, tmp_path, big_chat):
    """Issue 18 item 7: the steps' tool output is the tool output ``before`` holds; it is held once."""
    hop, _ = bridge
    assert len(big_chat) >= 1_000_000
    f = flow(big_chat, "/v1/chat/completions")
    await bridged(hop, f)
    sent = f.request.get_content()
    assert hop.recorder.flush(30)
    raw, rec = only_record(tmp_path / "records")
    assert rec["status"] == "rewritten" and rec["summary"]["steps"] > 100
    assert len(raw) <= 1.5 * len(big_chat), f"{len(raw):,} bytes for a {len(big_chat):,}-byte body"
    # Nothing lost: the body sent and its steps come back exactly.
    assert records.rebuild_after(rec) == sent
    assert records.steps_of(rec) == orjson.loads(sent)["additional_steps"]
    # The readers get what they got from a record holding the steps in full.
    old = as_version_2(rec)
    assert read_back(rec) == read_back(old)
    for r, name in ((rec, "new"), (old, "old")):
        d = tmp_path / name
        d.mkdir()
        (d / "r.json").write_bytes(orjson.dumps(r))
        assert replay_check.main([str(d), "-q"]) == 0


async def test_a_1mb_observed_chat_request_makes_a_record_of_at_most_1_5_times_its_body(bridge, tmp_path, big_chat):
    hop, tctx = bridge
    tctx.configure(hop, bridge_mode="observe")
    f = flow(big_chat, "/v1/chat/completions")
    await bridged(hop, f)
    assert f.request.get_content() == big_chat
    assert hop.recorder.flush(30)
    raw, rec = only_record(tmp_path / "records")
    assert rec["status"] == "observed" and rec["summary"]["steps"] > 100
    assert len(raw) <= 1.5 * len(big_chat), f"{len(raw):,} bytes for a {len(big_chat):,}-byte body"
    full = records.steps_of(rec)
    assert len(full) == rec["summary"]["steps"] and all(isinstance(s, dict) for s in full)
    assert read_back(rec) == read_back(as_version_2(rec))


def test_a_secret_in_a_tool_output_the_steps_refer_to_stays_redacted(bridge, tmp_path):
    hop, _ = bridge
    secret = "sk-live-abcdef1234567890XYZ"
    output = "\n".join(f"line {i}: export OPENAI_API_KEY={secret} and Bearer {secret}" for i in range(40))
    doc = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "show me the env"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"env"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": output},
        ],
    }
    f = flow(orjson.dumps(doc), "/v1/chat/completions")
    hop.request(f)
    assert hop.recorder.flush(10)
    raw, rec = only_record(tmp_path / "records")
    assert rec["status"] == "rewritten" and secret.encode() not in raw
    [step] = records.steps_of(rec)
    shown = step["runCommand"]["combinedOutput"]["full"]
    assert secret not in shown and "<redacted>" in shown
    assert raw.count(orjson.dumps(shown[:200])[1:-1]) == 1  # held once, in before; the step refers to it
    assert "$before" in orjson.dumps(rec["steps"]).decode()


async def test_a_record_over_max_record_keeps_its_steps_whole_when_its_bodies_go(bridge, tmp_path, big_chat):
    """Without ``before`` the steps cannot refer to it: they are written in full (or not at all)."""
    hop, tctx = bridge
    tctx.configure(hop, bridge_records_max_record="1M")
    f = flow(big_chat, "/v1/chat/completions")
    await bridged(hop, f)
    sent = f.request.get_content()
    assert hop.recorder.flush(30)
    raw, rec = only_record(tmp_path / "records")
    assert len(raw) <= 1 << 20 and rec["before"] is None and "bodies not recorded" in rec["body_omitted"]
    assert rec["steps"] == records.steps_of(rec) == orjson.loads(sent)["additional_steps"]
    assert "$before" not in raw.decode()


def job(i: int, size: int = 1000) -> RecordJob:
    body = orjson.dumps({"messages": [{"role": "user", "content": "y" * size}]})
    return RecordJob(
        f"flow-{i:04d}", 1.7e9 + i, "POST", "http://h/v1/chat/completions", [], "unchanged", "r", "chat", body
    )


def record_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if records._RECORD_NAME.match(p.name))


def test_the_directory_keeps_within_max_total_oldest_first(tmp_path):
    directory = tmp_path / "records"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine, not a record")
    rec = Recorder(str(directory), limits=Limits(max_record=4096, max_total=10_000))
    for i in range(30):
        assert rec.write(job(i)) is not None
    kept = record_files(directory)
    assert sum(p.stat().st_size for p in kept) <= 10_000
    assert kept[-1].name.endswith("flow-0029.json") and len(kept) >= 5
    assert rec.removed == 30 - len(kept)
    assert (directory / "notes.txt").exists()  # only our records are ever removed


def test_records_older_than_max_age_are_removed(tmp_path):
    directory = tmp_path / "records"
    directory.mkdir()
    old = Recorder(str(directory))
    paths = [old.write(job(i)) for i in range(3)]
    week_ago = time.time() - 7 * 86400
    for p in paths:
        os.utime(p, (week_ago, week_ago))
    (directory / "README").write_text("not a record")
    rec = Recorder(str(directory), limits=Limits(max_age=parse_age("2d")))
    new = rec.write(job(10))
    assert [p.name for p in record_files(directory)] == [Path(new).name]
    assert (directory / "README").exists()


def test_sizes_and_ages_parse_and_bad_ones_are_refused(bridge):
    assert parse_size("0") == 0 and parse_size("512") == 512 and parse_size("16M") == 16 << 20
    assert parse_size("2G") == 2 << 30 and parse_size("1.5K") == 1536 and parse_size("64KiB") == 64 << 10
    assert parse_age("12h") == 43200 and parse_age("14d") == 14 * 86400 and parse_age("0") == 0
    hop, tctx = bridge
    for bad in ({"bridge_records_max_record": "lots"}, {"bridge_records_max_total": "-1"}):
        with pytest.raises(exceptions.OptionsError):
            tctx.configure(hop, **bad)
    with pytest.raises(exceptions.OptionsError, match="max_age"):
        tctx.configure(hop, bridge_records_max_age="soon")
    with pytest.raises(exceptions.OptionsError, match="larger than"):
        tctx.configure(hop, bridge_records_max_record="2G", bridge_records_max_total="1G")


def test_bad_records_directory_is_refused_at_start_up(bridge, tmp_path):
    hop, tctx = bridge
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(exceptions.OptionsError, match="bridge_records: cannot write records"):
        tctx.configure(hop, bridge_records=str(blocker / "records"))
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "read-only"
        ro.mkdir(mode=0o500)
        with pytest.raises(exceptions.OptionsError):
            tctx.configure(hop, bridge_records=str(ro))
    fresh = tmp_path / "new" / "records"
    tctx.configure(hop, bridge_records=str(fresh))
    assert fresh.is_dir() and (fresh.stat().st_mode & 0o777) == 0o700  # created at start-up, private


def test_records_lost_are_counted_and_logged_at_shutdown(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="native_bridge.records.writer")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    rec = Recorder(str(blocker / "records"))  # every write fails
    for i in range(3):
        rec.submit(job(i))
    rec.close()
    assert rec.lost == 3
    [line] = [r.getMessage() for r in caplog.records if "records lost" in r.getMessage()]
    assert "3 records lost" in line and "3 failed to write" in line


def test_bridge_stats_reports_the_record_counts(tmp_path):
    from native_bridge.inspect.commands import BridgeCommands

    hop, cmds = ChatHop(), BridgeCommands()
    with taddons.context(hop, cmds) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_records=str(tmp_path / "records"))
        f = flow(SESSIONS["chat"][1].read_bytes(), SESSIONS["chat"][0])
        hop.request(f)
        assert hop.recorder.flush(10)
        text = cmds.stats([f])
        rows = {label.strip(): int(n) for label, n in (line.rsplit(None, 1) for line in text.splitlines())}
        assert rows["records written"] == 1 and rows["records lost"] == 0
        assert rows["records removed by retention"] == 0
        hop.done()


def test_json_records_are_still_readable_with_jq_shapes(bridge, tmp_path):
    """The README's jq lines keep working: steps and accounting are plain arrays at the top."""
    hop, _ = bridge
    path, session = SESSIONS["chat"]
    hop.request(flow(session.read_bytes(), path))
    assert hop.recorder.flush(10)
    _, rec = only_record(tmp_path / "records")
    assert isinstance(rec["steps"], list) and isinstance(rec["accounting"], list)
    json.dumps(rec)


def test_a_record_written_again_replaces_its_entry_and_the_total_stays_exact(tmp_path):
    """A replay writes a flow's record again under the same name: the index keeps one entry for
    it, and the running total is the sum of the files (a write looks its name up instead of
    rebuilding the whole index, which cost O(records) per write)."""
    directory = tmp_path / "records"
    rec = Recorder(str(directory), limits=Limits(max_record=1 << 20, max_total=1 << 30))
    for i in range(10):
        rec.write(job(i))
    rec.write(job(3, size=5000))  # the same flow again, a larger record
    files = record_files(directory)
    assert len(files) == 10 and rec._index is not None and len(rec._index) == 10
    assert sorted(e[1] for e in rec._index) == [p.name for p in files]
    assert rec._total == sum(p.stat().st_size for p in files)
    assert rec._names == {p.name for p in files}
