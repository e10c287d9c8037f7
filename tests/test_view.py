"""The "Bridge steps" / "Bridge diff" content views, the pure text behind them, and protobuf_definitions."""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import contentviews, hooks, http, io
from mitmproxy.test import taddons, tflow
from native_bridge._proto import cortex_pb2
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.core.pipeline import rewrite
from native_bridge.inspect import explain, view

ROOT = Path(__file__).resolve().parent.parent
# Claude Code's tools over Chat Completions (a gateway in front of it), and Claude Code over
# its own Messages API; each sent with Claude Code's user agent.
SESSION = (ROOT / "tests" / "fixtures" / "sessions" / "chat_session.json").read_bytes()
ANTHROPIC_SESSION = (ROOT / "tests" / "fixtures" / "sessions" / "anthropic_session.json").read_bytes()
CLAUDE = {"user-agent": "claude-cli/2.1.332 (external, cli)"}
# Qwen Code over Chat Completions (user agent as captured with 0.24.4, tests/fixtures/corpus/qwen-code.json).
QWEN = {"user-agent": "QwenCode/0.24.4 (linux; x64)"}
PROTO = ROOT / "proto" / "cortex.proto"
CHAT = "/v1/chat/completions"


def chat_call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def chat_body(*messages: dict[str, Any]) -> bytes:
    return orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "fix it"}, *messages]})


# A Qwen Code request: a failed command in its run_shell_command frame (exit 2), an unmapped
# tool and a call with no result. Sent with QWEN.
MIXED = chat_body(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            chat_call("c1", "run_shell_command", command="make"),
            chat_call("c2", "acme_todo", todos=[]),
            chat_call("c3", "run_shell_command", command="sleep 100"),
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Command: make\nDirectory: (root)\nOutput: make: *** [all] Error 2\nError: (none)\nExit Code: 2\n"
        "Signal: (none)\nProcess Group PGID: (none)",
    },
    {"role": "tool", "tool_call_id": "c2", "content": "ok"},
)


@pytest.fixture(autouse=True, scope="module")
def registered():
    view.register()


@pytest.fixture
def bridge():
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite")
        yield hop, tctx
        hop.done()


def flow_of(content: bytes, path: str = CHAT, headers: dict[str, str] | None = None) -> http.HTTPFlow:
    f = tflow.tflow(resp=True)
    f.live = False  # as read from a file: the addon rewrites even with a response present
    f.request.method = "POST"
    f.request.path = path
    f.request.headers["content-type"] = "application/json"
    for k, v in (headers or {}).items():
        f.request.headers[k] = v
    f.request.content = content
    return f


def bridged(hop: ChatHop, content: bytes = SESSION, **kwargs: Any) -> http.HTTPFlow:
    # Each body is sent with its client's user agent, as the client sends it.
    kwargs.setdefault("headers", {SESSION: CLAUDE, ANTHROPIC_SESSION: CLAUDE, MIXED: QWEN}.get(content, {}))
    f = flow_of(content, **kwargs)
    hop.request(f)
    return f


def pretty(f: http.HTTPFlow, message: http.Message | None = None, view_name: str = "auto"):
    return contentviews.prettify_message(message or f.request, f, view_name=view_name)


def section(text: str, title: str) -> list[str]:
    """The lines under a section title, up to the next empty line (excerpt lines are indented, never empty)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    out = []
    for line in lines[start + 1 :]:
        if line == "":
            break
        out.append(line)
    return out


# ---- the steps view ---------------------------------------------------------------


def test_steps_view_is_picked_for_a_rewritten_request_and_shows_steps_and_exit_codes(bridge):
    hop, _ = bridge
    f = bridged(hop)
    got = pretty(f)
    assert got.view_name == "Bridge steps"
    text = got.text
    # Claude Code states a failure's code (first line "Exit code N") only on a result it flags
    # is_error, and Chat Completions has no such flag: over this dialect its commands carry no code.
    assert text.splitlines()[0] == "bridge: 21 steps, 14 kept as messages, 1 unobserved"
    steps = [line for line in section(text, "STEPS") if line.startswith("  #")]
    assert len(steps) == 21
    # The commands that failed, next to their command lines: no code stated, and the view says so
    # (absent is not 0); their output, "Exit code 1" line included, is still there for the planner.
    assert any(
        "run_command" in s and "exit ?" in s and "$ python -m pytest -q tests/test_duration.py -x" in s for s in steps
    )
    assert any("run_command" in s and "exit ?" in s and "$ python -m tally report" in s for s in steps)
    assert any("exit ?" in s and "$ python -m pytest -q tests/test_regressions.py" in s for s in steps)
    assert "exit 0" not in text and "exit 1 " not in text and "exit 2 " not in text
    # Kinds and subjects of other steps, and output excerpts.
    assert any("view_file" in s and "file:///home/dev/src/tally/README.md" in s for s in steps)
    assert any("grep_search_v2" in s and "'MINUTES_PER|_UNITS'" in s for s in steps)
    assert "ERROR collecting tests/test_duration.py" in text
    assert "additional_steps_delta_start 19" in text


def test_steps_view_shows_the_exit_codes_claude_code_states(bridge):
    """Over its own Messages API Claude Code flags a failure is_error and states its code first."""
    hop, _ = bridge
    f = bridged(hop, ANTHROPIC_SESSION, path="/v1/messages")
    text = pretty(f).text
    assert (
        text.splitlines()[0] == "bridge: 19 steps (2 failed: exit 1 ×1, exit 2 ×1), 21 kept as messages, 1 unobserved"
    )
    steps = [line for line in section(text, "STEPS") if line.startswith("  #")]
    assert len(steps) == 19
    assert any("run_command" in s and "exit 1" in s and "$ python -m burndown render" in s for s in steps)
    assert any(
        "run_command" in s and "exit 2" in s and "$ .venv/bin/python -m burndown render" in s and "sprint15" in s
        for s in steps
    )
    assert any("exit ?" in s and "$ .venv/bin/pip install -q tzdata" in s for s in steps)
    assert "exit 0" not in text


def test_steps_view_accounts_for_every_call_and_result_once(bridge):
    hop, _ = bridge
    f = bridged(hop)
    text = pretty(f).text
    plan = rewrite(SESSION, path=CHAT, client_hint=CLAUDE["user-agent"]).plan
    assert plan is not None
    rows = section(text, "ACCOUNTING")
    assert len(rows) == len(plan.accounting)
    for row, p in zip(rows, plan.accounting, strict=True):
        assert p.id in row and p.item in row
        if p.step is not None:
            assert f"became step #{p.step} (" in row
        else:
            assert f"kept as a message [{p.code}]: {p.reason}" in row
    assert "kept as messages, by code: orphan 1, unmapped 4, unobserved 1, untranslatable 8" in text


def test_diff_view_shows_the_history_before_and_after(bridge):
    hop, _ = bridge
    f = bridged(hop)
    got = pretty(f, view_name="Bridge diff")
    assert got.view_name == "Bridge diff"
    lines = got.text.splitlines()
    before = json.loads(SESSION)["messages"]
    after = json.loads(f.request.content)["messages"]
    kept = [line for line in lines if line.startswith("  [")]
    removed = [line for line in lines if line.startswith("- [")]
    added = [line for line in lines if line.startswith("+ [")]
    assert len(kept) + len(removed) == len(before)
    assert len(kept) + len(added) == len(after)
    # Removed turns say which steps they went to; kept pairs stay (the orphan result, the unmapped TodoWrite).
    assert any("call Bash#toolu_01le57ocgG0g4kmj77z5LMv5" in line and line.endswith("→ step #11") for line in removed)
    assert any("result #toolu_01QnYd2wVbK7sLmR4xTzP9aE" in line for line in kept)
    assert any("call TodoWrite#" in line for line in kept)
    assert "+ additional_steps: 21 steps" in lines
    assert "+ additional_steps_delta_start: 19" in lines
    assert "other fields: unchanged" in lines


def test_views_fall_back_for_anything_the_bridge_did_not_rewrite(bridge):
    hop, _ = bridge
    plain = flow_of(orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
    hop.request(plain)  # unchanged: no tool history
    assert plain.metadata["bridge"]["status"] == "unchanged"
    unseen = flow_of(MIXED, path="/v1/embeddings")
    hop.request(unseen)
    assert "bridge" not in unseen.metadata
    rewritten = bridged(hop, MIXED)
    for f, message in ((plain, plain.request), (unseen, unseen.request), (rewritten, rewritten.response)):
        meta = contentviews.Metadata(flow=f, http_message=message, content_type="application/json")
        assert view.steps_view.render_priority(b"{}", meta) < 0
        assert view.diff_view.render_priority(b"{}", meta) < 0
        assert pretty(f, message).view_name != "Bridge steps"
    assert pretty(plain).view_name == "JSON"
    # Chosen by hand, they say why they have nothing to show instead of failing.
    assert pretty(plain, view_name="Bridge steps").text.startswith("bridge: unchanged (no tool history)")
    assert "did not see this request" in pretty(unseen, view_name="Bridge diff").text
    assert "requests only" in pretty(rewritten, rewritten.response, view_name="Bridge steps").text


def test_failed_read_and_error_flag_in_anthropic_dialect(bridge):
    hop, _ = bridge
    body = orjson.dumps(
        {
            "model": "claude",
            "max_tokens": 100,
            "messages": [
                {"role": "user", "content": "run the tests"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "boom"}],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "It failed."}]},
                {"role": "user", "content": "fix it"},
            ],
        }
    )
    f = bridged(hop, body, path="/v1/messages")
    got = pretty(f)
    assert got.view_name == "Bridge steps"
    assert "dialect anthropic" in got.text
    [step] = [line for line in section(got.text, "STEPS") if line.startswith("  #")]
    assert "exit 1" in step and "$ pytest" in step
    diff = pretty(f, view_name="Bridge diff").text
    assert "- [  1     ] assistant: call Bash#t1   → step #0" in diff
    assert "(is_error)" in diff


def test_responses_dialect(bridge):
    hop, _ = bridge
    body = orjson.dumps(
        {
            "model": "gpt-5",
            "input": [
                {"type": "message", "role": "user", "content": "list files"},
                {
                    "type": "function_call",
                    "call_id": "fc1",
                    "name": "shell",
                    "arguments": json.dumps({"command": ["ls"]}),
                },
                {"type": "function_call_output", "call_id": "fc1", "output": "a.txt\nb.txt"},
            ],
        }
    )
    f = bridged(hop, body, path="/v1/responses")
    assert f.metadata["bridge"]["status"] == "rewritten", f.metadata["bridge"]
    text = pretty(f).text
    assert "dialect responses" in text and "run_command" in text and "$ ls" in text
    diff = pretty(f, view_name="Bridge diff").text
    assert "input: 3 items before, 1 after" in diff


def test_gemini_dialect(bridge):
    hop, _ = bridge
    call = {"functionCall": {"id": "g1", "name": "run_shell_command", "args": {"command": "ls"}}}
    result = {"functionResponse": {"id": "g1", "name": "run_shell_command", "response": {"output": "a.txt"}}}
    body = orjson.dumps(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "list files"}]},
                {"role": "model", "parts": [call]},
                {"role": "user", "parts": [result]},
                {"role": "model", "parts": [{"text": "Two files."}]},
                {"role": "user", "parts": [{"text": "thanks"}]},
            ],
        }
    )
    f = bridged(hop, body, path="/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    assert f.metadata["bridge"]["status"] == "rewritten", f.metadata["bridge"]
    text = pretty(f).text
    assert "dialect gemini" in text and "run_command" in text and "$ ls" in text
    diff = pretty(f, view_name="Bridge diff").text
    assert "contents: 5 items before, 3 after" in diff
    assert any(line.startswith("- [") and "call run_shell_command#g1" in line and "→ step #0" in line
               for line in diff.splitlines())  # fmt: skip
    assert any(line.startswith("- [") and "result #g1: a.txt" in line for line in diff.splitlines())


def test_view_reads_an_encoded_original_from_the_backup(bridge):
    hop, _ = bridge
    f = flow_of(b"", headers={"content-encoding": "gzip", **QWEN})
    f.request.raw_content = gzip.compress(MIXED)
    hop.request(f)
    assert f.metadata["bridge"]["status"] == "rewritten"
    assert view.original_body(f) == MIXED
    text = pretty(f).text
    assert "kept as a message [unmapped]" in text and "kept as a message [unobserved]" in text


def test_views_identify_the_client_by_the_user_agent_the_addon_saw(bridge):
    """Qwen Code is told only by its user agent here: the views re-derive with it, in both modes."""
    hop, tctx = bridge
    for mode in ("rewrite", "observe"):
        tctx.configure(hop, bridge_mode=mode)
        f = bridged(hop, MIXED)
        text = pretty(f).text
        assert "exit 2" in text and "$ make" in text, mode
        assert "became step #0 (run_command)" in text and "accounting not shown" not in text, mode


def test_view_survives_a_flow_file_round_trip(bridge, tmp_path):
    hop, _ = bridge
    f = bridged(hop)
    before = pretty(f).text
    path = tmp_path / "out.flows"
    with path.open("wb") as fo:
        io.FlowWriter(fo).add(f)
    with path.open("rb") as fo:
        [g] = list(io.FlowReader(fo).stream())
    assert pretty(g).view_name == "Bridge steps"
    assert pretty(g).text == before


def test_edited_request_shows_steps_but_not_a_stale_accounting(bridge):
    hop, _ = bridge
    f = bridged(hop, MIXED)
    doc = json.loads(f.request.content)
    doc["additional_steps"][0]["runCommand"]["commandLine"] = "make -k"  # edited in mitmweb after the rewrite
    f.request.content = orjson.dumps(doc)
    text = pretty(f).text
    assert "$ make -k" in text and "exit 2" in text
    assert "accounting not shown" in text
    assert section(text, "ACCOUNTING") == ["  (not known)"]


def test_reverted_flow_is_no_longer_a_bridge_flow(bridge):
    hop, _ = bridge
    f = bridged(hop, MIXED)
    f.revert()
    assert "bridge" not in f.metadata
    assert pretty(f).view_name == "JSON"


def test_flow_without_a_backup_still_shows_its_steps(bridge):
    hop, _ = bridge
    f = bridged(hop, MIXED)
    f._backup = None
    text = pretty(f).text
    assert "exit 2" in text and "$ make" in text
    assert "original body is not available" in text
    assert "no diff" in pretty(f, view_name="Bridge diff").text


def test_view_uses_the_running_bridge_options(bridge):
    hop, tctx = bridge
    tctx.options.bridge_tools = ["acme_run=run_command"]
    body = chat_body(
        {"role": "assistant", "content": None, "tool_calls": [chat_call("a1", "acme_run", command="ls")]},
        {"role": "tool", "tool_call_id": "a1", "content": "a.txt"},
    )
    f = bridged(hop, body)
    text = pretty(f).text
    assert "accounting not shown" not in text
    assert "became step #0 (run_command)" in text
    # With the default options the same original would not give this request: the view must not use them.
    stale = explain.explain_bodies(view.original_body(f), f.request.content, CHAT)
    assert stale.accounting is None


def test_explain_and_conversation_do_not_import_mitmproxy():
    code = (
        "import sys; import native_bridge.inspect.explain, native_bridge.core.conversation; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'mitmproxy'); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_explain_record_matches_explain_bodies():
    r = rewrite(SESSION, path=CHAT, client_hint=CLAUDE["user-agent"])
    from_bodies = explain.explain_bodies(SESSION, r.body, CHAT)
    rec = {
        "status": "rewritten",
        "dialect": "chat",
        "before": json.loads(SESSION),
        "after": json.loads(r.body or b""),
        "steps": r.steps,
        "accounting": [p.to_json() for p in r.plan.accounting] if r.plan else [],
        "notes": [],
    }
    from_record = explain.explain_record(rec)
    assert explain.steps_text(from_record) == explain.steps_text(from_bodies)
    assert explain.diff_text(from_record) == explain.diff_text(from_bodies)
    assert from_bodies.summary == {k: v for k, v in r.summary().items()}


# ---- protobuf_definitions ----------------------------------------------------------


def send_request() -> bytes:
    req = cortex_pb2.SendUserCascadeMessageRequest(cascade_id="cascade-1")
    req.items.add(text="fix the build")
    step = req.additional_steps.add(
        type=cortex_pb2.CORTEX_STEP_TYPE_RUN_COMMAND, status=cortex_pb2.CORTEX_STEP_STATUS_DONE
    )
    step.run_command.command_line = "make test"
    step.run_command.exit_code = 2
    step.run_command.combined_output.full = "make: *** [test] Error 2"
    read = req.additional_steps.add(
        type=cortex_pb2.CORTEX_STEP_TYPE_VIEW_FILE, status=cortex_pb2.CORTEX_STEP_STATUS_DONE
    )
    read.view_file.absolute_path_uri = "file:///src/a.py"
    read.view_file.content = "print(1)"
    return req.SerializeToString()


def grpc_frame(message: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(message)) + message


@pytest.mark.parametrize(
    ("content_type", "path", "framing", "chosen", "view_name"),
    [
        # The planner's own path (package and service named differently from proto/): the first rpc is used.
        (
            "application/grpc",
            "/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage",
            grpc_frame,
            "auto",
            "gRPC",
        ),
        # The rpc exactly as declared in proto/cortex.proto.
        ("application/grpc", "/cortex.LanguageServerService/SendUserCascadeMessage", grpc_frame, "auto", "gRPC"),
        ("application/x-protobuf", "/SendUserCascadeMessage", lambda m: m, "auto", "Protobuf"),
        # Connect unary (application/proto): no built-in view picks it, the user chooses "protobuf".
        (
            "application/proto",
            "/exa.language_server_pb.LanguageServerService/SendUserCascadeMessage",
            lambda m: m,
            "protobuf",
            "Protobuf",
        ),
    ],
)
def test_protobuf_definitions_give_field_names(content_type, path, framing, chosen, view_name):
    with taddons.context() as tctx:
        f = tflow.tflow()
        f.request.path = path
        f.request.headers["content-type"] = content_type
        f.request.content = framing(send_request())

        without = pretty(f, view_name=chosen)
        assert without.view_name == view_name
        assert "additional_steps" not in without.text and "exit_code" not in without.text

        tctx.options.protobuf_definitions = str(PROTO)
        got = pretty(f, view_name=chosen)
    assert got.view_name == view_name
    text = got.text
    for expected in (
        "cascade_id: cascade-1",
        "- text: fix the build",
        "additional_steps:",
        "type: CORTEX_STEP_TYPE_RUN_COMMAND",
        "status: CORTEX_STEP_STATUS_DONE",
        "run_command:",
        "exit_code: 2",
        "command_line: make test",
        "full: 'make: *** [test] Error 2'",
        "absolute_path_uri: file:///src/a.py",
    ):
        assert expected in text, f"{expected!r} not in:\n{text}"
