"""The recorder: one redacted JSON record per job, written atomically off the request path."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from native_bridge.core.builder import Placement
from native_bridge.records import writer as records
from native_bridge.records.redact import REDACTED
from native_bridge.records.writer import RECORD_VERSION, Recorder, RecordJob, record_name, to_record

FIELDS = {
    "record_version",
    "flow_id",
    "time",
    "method",
    "url",
    "request_headers",
    "dialect",
    "status",
    "reason",
    "comment",
    "summary",
    "before_bytes",
    "before",
    "after_patch",
    "steps",
    "accounting",
    "notes",
}
TS = 1_700_000_000.5  # 2023-11-14T22:13:20.5Z
LOGGER = "native_bridge.records.writer"


def job(flow_id: str = "0b8e6c0e-1111-4222-8333-944445555666", **kw) -> RecordJob:
    fields = {
        "flow_id": flow_id,
        "timestamp": TS,
        "method": "POST",
        "url": "https://api.example.com/v1/chat/completions?api_key=sk-query-secret-123&model=m",
        "headers": [
            ("Host", "api.example.com"),
            ("Authorization", "Bearer sk-header-secret-1234567890"),
            ("Content-Type", "application/json"),
        ],
        "status": "rewritten",
        "reason": "",
        "dialect": "chat",
        "before": orjson.dumps({"model": "m", "api_key": "sk-body-secret-123", "messages": []}),
        "after": orjson.dumps({"model": "m", "messages": [], "additional_steps": [{"type": "T"}]}),
        "steps": [{"type": "T", "status": "CORTEX_STEP_STATUS_DONE"}],
        "accounting": [{"item": "call", "id": "c1", "name": "Bash", "turn": 1, "step": 0}],
        "summary": {"steps": 1, "failed": 0},
        "comment": "bridge: 1 step, 0 kept as messages",
    }
    fields.update(kw)
    return RecordJob(**fields)


def files(directory: Path) -> list[str]:
    return sorted(os.listdir(directory)) if directory.exists() else []


def error_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.ERROR]


@pytest.fixture
def recorder(tmp_path):
    rec = Recorder(str(tmp_path / "records"))
    yield rec
    rec.close(timeout=5)


# ---- content -----------------------------------------------------------------


def test_write_produces_one_valid_json_record_with_the_documented_fields(recorder, tmp_path):
    path = recorder.write(job())
    assert path is not None
    directory = tmp_path / "records"
    assert files(directory) == [os.path.basename(path)]
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n")
    rec = json.loads(raw)
    assert set(rec) >= FIELDS
    assert rec["record_version"] == RECORD_VERSION == 3
    assert rec["flow_id"] == "0b8e6c0e-1111-4222-8333-944445555666"
    assert rec["time"] == "2023-11-14T22:13:20.500000Z"
    assert rec["method"] == "POST"
    assert rec["dialect"] == "chat"
    assert rec["status"] == "rewritten"
    assert rec["reason"] == ""
    assert rec["comment"] == "bridge: 1 step, 0 kept as messages"
    assert rec["summary"] == {"steps": 1, "failed": 0}
    assert rec["steps"] == [{"type": "T", "status": "CORTEX_STEP_STATUS_DONE"}]
    assert rec["accounting"] == [{"item": "call", "id": "c1", "name": "Bash", "turn": 1, "step": 0}]
    assert records.after_doc(rec) == {"model": "m", "messages": [], "additional_steps": [{"type": "T"}]}
    assert rec["notes"] == []
    assert "before_text" not in rec and "after_text" not in rec
    assert recorder.written == 1 and recorder.failed == 0


def test_record_is_redacted_on_write(recorder):
    raw = Path(recorder.write(job())).read_text()
    for secret in ("sk-query-secret-123", "sk-header-secret-1234567890", "sk-body-secret-123"):
        assert secret not in raw
    rec = json.loads(raw)
    assert rec["request_headers"] == [
        ["Host", "api.example.com"],
        ["Authorization", REDACTED],
        ["Content-Type", "application/json"],
    ]
    assert rec["url"] == f"https://api.example.com/v1/chat/completions?api_key={REDACTED}&model=m"
    assert rec["before"] == {"model": "m", "api_key": REDACTED, "messages": []}


def test_non_json_body_is_kept_as_redacted_text():
    rec = to_record(job(before=b"not json; Authorization: Bearer abcdefghijklmnop", after=None))
    assert rec["before"] is None
    assert rec["before_text"] == f"not json; Authorization: Bearer {REDACTED}"
    assert rec["after_patch"] is None and records.after_doc(rec) is None
    assert "after_text" not in rec


def test_undecodable_bytes_do_not_break_the_record():
    rec = to_record(job(before=b"\xff\xfe\x00 garbage", after=None))
    assert rec["before"] is None
    assert isinstance(rec["before_text"], str)
    orjson.dumps(rec)  # still serialisable


def test_error_record_without_bodies(recorder):
    path = recorder.write(job(status="error", reason="RuntimeError: boom", before=None, after=None, steps=[]))
    rec = json.loads(Path(path).read_text())
    assert rec["status"] == "error"
    assert rec["reason"] == "RuntimeError: boom"
    assert rec["before"] is None and records.after_doc(rec) is None


# ---- one file per job, permissions, atomicity --------------------------------


def test_one_file_per_submitted_job(recorder, tmp_path):
    ids = [f"flow-{i}" for i in range(5)]
    for flow_id in ids:
        recorder.submit(job(flow_id))
    assert recorder.flush(timeout=10)
    names = files(tmp_path / "records")
    assert len(names) == 5
    assert all(n.endswith(".json") for n in names)
    seen = sorted(json.loads((tmp_path / "records" / n).read_text())["flow_id"] for n in names)
    assert seen == ids
    assert recorder.written == 5


def test_a_held_job_is_written_only_once_released(recorder, tmp_path):
    """A record held until its flow's reply has reached the client (the chat hop releases it
    then): its rendering and writing never share the CPU with the turn it describes."""
    recorder.submit(job("held-1"), held=True)
    recorder.submit(job("at-once"))
    assert recorder.flush(timeout=10)
    [name] = files(tmp_path / "records")
    assert json.loads((tmp_path / "records" / name).read_text())["flow_id"] == "at-once"
    recorder.release("held-1")
    recorder.release("held-1")  # twice, or a flow never held: nothing more
    recorder.release("never-held")
    assert recorder.flush(timeout=10)
    seen = sorted(json.loads((tmp_path / "records" / n).read_text())["flow_id"] for n in files(tmp_path / "records"))
    assert seen == ["at-once", "held-1"]
    assert recorder.written == 2


def test_held_jobs_are_written_at_close(tmp_path):
    rec = Recorder(str(tmp_path / "records"))
    rec.submit(job("held-1"), held=True)
    rec.submit(job("held-2"), held=True)
    rec.close(timeout=10)
    assert len(files(tmp_path / "records")) == 2
    assert rec.written == 2 and rec.lost == 0


def test_a_second_hold_for_the_same_flow_writes_the_first(recorder, tmp_path):
    """A flow id held again (a replayed flow object) never loses the record held before."""
    recorder.submit(job("same", status="unchanged"), held=True)
    recorder.submit(job("same", status="rewritten", timestamp=TS + 1), held=True)
    assert recorder.flush(timeout=10)
    assert len(files(tmp_path / "records")) == 1
    recorder.release("same")
    assert recorder.flush(timeout=10)
    statuses = sorted(json.loads((tmp_path / "records" / n).read_text())["status"] for n in files(tmp_path / "records"))
    assert statuses == ["rewritten", "unchanged"]


def test_file_mode_0600_and_directory_created_0700(tmp_path):
    directory = tmp_path / "deep" / "records"
    rec = Recorder(str(directory))
    old = os.umask(0)  # the modes must not depend on a permissive umask
    try:
        path = rec.write(job())
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_no_temp_file_and_no_record_when_fsync_fails(recorder, tmp_path, monkeypatch, caplog):
    directory = tmp_path / "records"
    seen_during_write: list[list[str]] = []

    def failing_fsync(fd):
        seen_during_write.append(files(directory))
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(records.os, "fsync", failing_fsync)
    assert recorder.write(job()) is None
    # While the data was being written, only a hidden temp file existed, never a *.json.
    assert len(seen_during_write) == 1
    [during] = seen_during_write
    assert len(during) == 1 and during[0].startswith(".") and during[0].endswith(".tmp")
    assert files(directory) == []  # the temp file is gone too
    assert recorder.failed == 1 and recorder.written == 0


def test_no_temp_file_and_no_record_when_rename_fails(recorder, tmp_path, monkeypatch):
    def no_space(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records.os, "replace", no_space)
    assert recorder.write(job()) is None
    assert files(tmp_path / "records") == []
    assert recorder.failed == 1


def test_final_name_appears_only_complete(recorder, tmp_path, monkeypatch):
    """At the moment the final name appears it already holds the whole record."""
    directory = tmp_path / "records"
    real_replace = os.replace
    observed = {}

    def checking_replace(src, dst):
        observed["dst_existed"] = os.path.exists(dst)
        observed["src_complete"] = json.loads(Path(src).read_text())["flow_id"]
        real_replace(src, dst)

    monkeypatch.setattr(records.os, "replace", checking_replace)
    path = recorder.write(job("complete"))
    assert observed == {"dst_existed": False, "src_complete": "complete"}
    assert files(directory) == [os.path.basename(path)]


# ---- background writing ------------------------------------------------------


def gated_writes(rec: Recorder, monkeypatch) -> tuple[threading.Event, list[str]]:
    """Make rec's writes wait for a gate; returns the gate and an event log."""
    gate = threading.Event()
    events: list[str] = []
    real_write = rec.write

    def slow_write(j):
        events.append(f"start {j.flow_id}")
        assert gate.wait(10), "the test never opened the gate"
        path = real_write(j)
        events.append(f"end {j.flow_id}")
        return path

    monkeypatch.setattr(rec, "write", slow_write)
    return gate, events


def test_submit_returns_before_a_slow_write_finishes(recorder, tmp_path, monkeypatch):
    gate, events = gated_writes(recorder, monkeypatch)
    recorder.submit(job("a"))
    recorder.submit(job("b"))
    events.append("submitted")
    assert "end a" not in events and "end b" not in events
    assert files(tmp_path / "records") == []
    gate.set()
    assert recorder.flush(timeout=10)
    assert events.index("submitted") < events.index("end a") < events.index("end b")
    assert len(files(tmp_path / "records")) == 2


def test_flush_waits_for_pending_writes_and_reports_a_timeout(recorder, tmp_path, monkeypatch):
    gate, _ = gated_writes(recorder, monkeypatch)
    for i in range(3):
        recorder.submit(job(f"f{i}"))
    assert recorder.flush(timeout=0.05) is False  # still blocked
    gate.set()
    assert recorder.flush(timeout=10) is True
    assert len(files(tmp_path / "records")) == 3
    assert recorder.written == 3


def test_flush_without_jobs_returns_at_once(recorder):
    assert recorder.flush(timeout=0) is True


def test_close_writes_what_was_submitted(tmp_path):
    rec = Recorder(str(tmp_path / "r"))
    for i in range(3):
        rec.submit(job(f"c{i}"))
    rec.close(timeout=10)
    assert len(files(tmp_path / "r")) == 3
    # A recorder used again after close starts a new writer.
    rec.submit(job("again"))
    assert rec.flush(timeout=10)
    assert len(files(tmp_path / "r")) == 4
    rec.close(timeout=10)


# ---- faults are survived -----------------------------------------------------


def test_directory_under_a_regular_file_is_survived(tmp_path, caplog):
    caplog.set_level(logging.ERROR, logger=LOGGER)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    rec = Recorder(str(blocker / "records"))
    for i in range(3):
        rec.submit(job(f"f{i}"))  # must not raise
    assert rec.flush(timeout=10)
    rec.close(timeout=5)
    assert rec.failed == 3 and rec.written == 0
    lines = error_lines(caplog)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "f0" in lines[0].getMessage()
    assert blocker.read_text() == "not a directory"


def test_repeated_identical_fault_is_logged_once_and_logged_again_after_recovery(
    recorder, tmp_path, monkeypatch, caplog
):
    caplog.set_level(logging.ERROR, logger=LOGGER)
    real_replace = os.replace

    def no_space(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records.os, "replace", no_space)
    for i in range(4):
        assert recorder.write(job(f"x{i}")) is None
    assert recorder.failed == 4
    assert len(error_lines(caplog)) == 1
    assert "No space left on device" in error_lines(caplog)[0].getMessage()

    monkeypatch.setattr(records.os, "replace", real_replace)
    assert recorder.write(job("ok")) is not None
    monkeypatch.setattr(records.os, "replace", no_space)
    assert recorder.write(job("y")) is None
    assert len(error_lines(caplog)) == 2
    names = files(tmp_path / "records")
    assert len(names) == 1 and names[0].endswith("-ok.json")
    assert recorder.written == 1 and recorder.failed == 5


def test_distinct_faults_are_each_logged(recorder, monkeypatch, caplog):
    caplog.set_level(logging.ERROR, logger=LOGGER)
    faults = iter([OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EIO, "Input/output error")])

    def failing_replace(src, dst):
        raise next(faults)

    monkeypatch.setattr(records.os, "replace", failing_replace)
    recorder.write(job("a"))
    recorder.write(job("b"))
    assert len(error_lines(caplog)) == 2


def test_fault_in_the_writer_thread_does_not_stop_it(recorder, tmp_path, monkeypatch):
    calls = {"n": 0}
    real_replace = os.replace

    def first_fails(src, dst):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(records.os, "replace", first_fails)
    recorder.submit(job("lost"))
    recorder.submit(job("kept"))
    assert recorder.flush(timeout=10)
    names = files(tmp_path / "records")
    assert len(names) == 1 and names[0].endswith("-kept.json")
    assert recorder.failed == 1 and recorder.written == 1


def test_directory_removed_while_running_is_recreated(recorder, tmp_path):
    directory = tmp_path / "records"
    assert recorder.write(job("first"))
    shutil.rmtree(directory)
    recorder.submit(job("second"))
    assert recorder.flush(timeout=10)
    names = files(directory)
    assert len(names) == 1 and names[0].endswith("-second.json")
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert recorder.failed == 0


def test_relative_directory_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rec = Recorder("rel/records")
    monkeypatch.chdir("/")
    path = rec.write(job())
    assert Path(path).parent == tmp_path / "rel" / "records"


# ---- file names --------------------------------------------------------------

HOSTILE_IDS = [
    "../../etc/passwd",
    "/abs",
    "/etc/cron.d/x",
    "a/b",
    "a\\b",
    "..",
    ".",
    "",
    ".hidden",
    "x\x00y",
    "name with spaces",
    "ünïcödé/../x",
    "a" * 5000,
    "../" * 200,
]


@pytest.mark.parametrize("flow_id", HOSTILE_IDS, ids=lambda s: repr(s[:20]))
def test_record_name_cannot_escape_the_directory(flow_id, recorder, tmp_path):
    name = record_name(job(flow_id))
    assert name == os.path.basename(name)
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert ".." not in name
    assert not name.startswith(".")
    assert name.endswith(".json")
    assert len(name.encode()) < 255  # a valid single path component everywhere
    path = recorder.write(job(flow_id))
    assert path is not None
    assert Path(path).parent == tmp_path / "records"
    # Nothing was created anywhere else.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records"]


def test_record_name_keeps_an_ordinary_flow_id_readable():
    flow_id = "0b8e6c0e-1111-4222-8333-944445555666"
    assert record_name(job(flow_id)) == f"20231114T221320.500000-{flow_id}.json"


def test_record_names_sort_by_time():
    early = record_name(RecordJob("z", 1_000.0, "POST", "u", [], "unchanged", "", None, None))
    late = record_name(RecordJob("a", 2_000.0, "POST", "u", [], "unchanged", "", None, None))
    assert early < late


@given(st.text())
def test_record_name_is_always_one_safe_component(flow_id):
    name = record_name(job(flow_id))
    assert os.sep not in name and "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith(".")
    assert name.endswith(".json")
    assert len(name) <= 100


def test_distinct_jobs_never_share_a_file(recorder, tmp_path):
    recorder.write(job("a/b"))
    recorder.write(job("a_b"))
    assert len(files(tmp_path / "records")) == 2


def test_a_non_json_body_without_tool_history_says_it_is_not_json():
    """Was "no tool history" alone: the core's pre-check does not parse a body without markers (issue 12)."""
    rec = to_record(job(status="unchanged", reason="no tool history", before=b"hello, not json", after=None, steps=[]))
    assert rec["reason"] == "the body is not JSON (no tool history)"
    rec = to_record(job(status="unchanged", reason="no tool history", before=b'{"messages": []}', after=None))
    assert rec["reason"] == "no tool history"


_TEXT = st.text(alphabet=st.sampled_from('ab\x00\n"{}[]é😀'), max_size=12)


@given(
    pieces=st.lists(_TEXT, min_size=1, max_size=6),
    cuts=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 40), st.integers(0, 40)), max_size=6),
    extra=_TEXT,
)
def test_steps_refer_to_before_and_resolve_to_themselves(pieces, cuts, extra):
    """bodydiff.refer/resolve: whatever the strings (NUL, quotes, astral characters, JSON text),
    the steps come back exactly; only strings ``before`` holds become references."""
    from native_bridge.records import bodydiff

    texts = [p * 9 for p in pieces]  # long enough to be referred to (least=8 below)
    before = {
        "messages": [{"content": t} for t in texts],
        "args": orjson.dumps({"k": texts[0], "n": [texts[-1]]}).decode(),
    }
    strings = [texts[i % len(texts)][a : a + b] for i, a, b in cuts] + [extra * 9, texts[0] + "\x00" + texts[-1]]
    steps = [{"s": s, "nested": {"list": [s, 1, None]}} for s in strings]
    written = bodydiff.refer(steps, before, least=8)
    assert bodydiff.resolve(written, before) == steps
    assert bodydiff.resolve(orjson.loads(orjson.dumps(written)), orjson.loads(orjson.dumps(before))) == steps
    assert bodydiff.resolve(steps, before) == steps  # records before version 3: steps in full


def test_a_step_referring_to_what_before_does_not_hold_is_an_error():
    from native_bridge.records import bodydiff

    before = {"messages": [{"content": "x" * 600}]}
    written = bodydiff.refer([{"out": "x" * 600}], before)
    assert written == [{"out": {"$before": ["messages", 0, "content"]}}]
    with pytest.raises(ValueError, match="does not hold it"):
        bodydiff.resolve(written, {"messages": []})


def _session_jobs(turns: int, secret_at: int) -> list[RecordJob]:
    """A chat session's records, one round longer each turn, as the chat hop makes them (observe
    and rewrite alike: before, after and steps), a credential in one tool result."""
    from native_bridge.chat_hop.addon import ChatHop
    from native_bridge.chat_hop.jobs import Job, bridge
    from native_bridge.core.memo.store import Memo
    from support.histories.agent import Session

    config, memo, out = ChatHop().config, Memo(), []
    for t in range(1, turns + 1):
        doc = orjson.loads(Session("chat", parallel=2, seed=8).body(t))
        if t >= secret_at:  # from this turn on the history holds a key a command printed
            doc["messages"][secret_at]["content"] = "export OPENAI_API_KEY=sk-proj-4fJx9Qw2Lm8Zr7Tb1Kc0"
        raw = orjson.dumps(doc)
        o = bridge(Job(raw, config, "/v1/chat/completions", "claude-cli/2.0.0", emit=True, record=True), memo)
        out.append(job(before=raw, after=o.body, steps=o.steps, accounting=o.accounting, status=o.status))
    return out


def test_a_record_worker_redacts_only_the_items_it_has_not_seen(monkeypatch):
    """The record of turn t holds the history of turn t - 1 again: the worker's remembered texts
    (redact.Texts) redact only the new items, and every record is byte for byte the one a fresh
    worker renders, the credential masked in each."""
    from native_bridge.core.conversation import conversation_key
    from native_bridge.records import bodydiff, redact

    jobs = _session_jobs(12, secret_at=3)
    calls, walked = [], []
    text, collect = redact.text, bodydiff._collect
    monkeypatch.setattr(redact, "text", lambda v: calls.append(v) or text(v))
    monkeypatch.setattr(bodydiff, "_collect", lambda node, *a: walked.append(node) or collect(node, *a))
    texts, index = redact.Texts(), bodydiff.Index()
    for i, j in enumerate(jobs):
        calls.clear(), walked.clear()
        warm = records._dump(to_record(j, texts, index))
        warm_calls, warm_walks = len(calls), len(walked)
        calls.clear(), walked.clear()
        cold = records._dump(to_record(j, redact.Texts()))
        assert warm == cold == records._dump(to_record(j, redact.Texts(), bodydiff.Index()))
        assert b'"$before"' in warm  # the steps refer to the tool output before holds
        assert orjson.loads(warm)["conversation"] == conversation_key(j.headers, j.before) is not None
        if i >= 3:
            assert b"sk-proj-4fJx9Qw2Lm8Zr7Tb1Kc0" not in warm and b"OPENAI_API_KEY=<redacted>" in warm
        if i >= 5:  # one round is new: a small part of what a fresh worker reads and walks
            assert warm_calls * 4 < len(calls), (i, warm_calls, len(calls))
            assert warm_walks * 4 < len(walked), (i, warm_walks, len(walked))


@pytest.mark.parametrize("nesting", [196, 197, 198, 199, 260])
@pytest.mark.parametrize("where", ["item", "field"])
def test_remembered_items_keep_the_depth_rule(nesting, where):
    """A body nested too deep for a record is kept as text, whether the depth lies in an item of
    a top-level array (remembered by a worker) or elsewhere; below the limit, as JSON."""
    from native_bridge.records import redact

    deep: object = "Authorization: Bearer sk-deep-secret-0123456789"
    for _ in range(nesting):
        deep = [deep]
    doc = {"model": "m", "messages": [{"role": "user", "content": "x" * 100}]}
    if where == "item":
        doc["messages"].append({"role": "tool", "content": deep})
    else:
        doc["metadata"] = {"trace": deep}
    j = job(before=orjson.dumps(doc) if nesting < 250 else json.dumps(doc).encode(), after=None)
    plain = records._dump(to_record(j))
    for texts in (redact.Texts(), redact.Texts(items_budget=300)):
        assert records._dump(to_record(j, texts)) == records._dump(to_record(j, texts)) == plain
    rec = to_record(j)
    levels = nesting + (3 if where == "item" else 2)  # the body, its array or object, the item's own
    assert (rec["before"] is None) == (levels > 200) and b"sk-deep-secret" not in plain


def test_remembered_items_stay_within_their_budget():
    from native_bridge.records import redact

    texts = redact.Texts(items_budget=20_000)
    for j in _session_jobs(10, secret_at=2):
        assert records._dump(to_record(j, texts)) == records._dump(to_record(j))
        assert texts._items_size <= texts.items_budget
        assert texts._items_size == sum(map(len, texts._items))


def test_a_record_writes_the_placements_the_chat_hop_hands_over_as_their_json() -> None:
    """The chat hop hands a record its accounting as placements (making every turn's whole-history
    accounting JSON is left to the renderer, off the turn): the record holds what to_json gives,
    reasons redacted as before, the same as a job that carried the JSON itself."""
    placed = [
        Placement("call", 3, 1, "toolu_1", "Bash", step=0),
        Placement("result", 4, 1, "toolu_1", "Bash", step=0),
        Placement("call", 5, 2, "toolu_2", "Fetch", code="unmapped", reason="sk-reason-secret-1234567890 in it"),
        Placement("call", 6, 2, "toolu_3", "run", step=1, mapped="declared as a shell"),
    ]
    as_json = [p.to_json() for p in placed]
    rec = to_record(job(accounting=placed))
    assert rec == to_record(job(accounting=as_json))
    assert [a.get("step") for a in rec["accounting"]] == [0, 0, None, 1] and rec["accounting"][3]["mapped"]
    assert "sk-reason-secret" not in json.dumps(rec["accounting"])
