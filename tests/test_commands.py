"""bridge.diff, bridge.export and bridge.stats: registered with help, run on chosen flows (@marked, filters)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import exceptions, flow, hooks, http
from mitmproxy.addons import view as view_addon
from mitmproxy.test import taddons, tflow
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.inspect.commands import BridgeCommands
from native_bridge.records.redact import REDACTED

ROOT = Path(__file__).resolve().parent.parent
BRIDGE_SCRIPT = ROOT / "addons" / "bridge.py"
# Claude Code's tools over Chat Completions (a gateway in front of it: no is_error, so no exit
# codes), and Claude Code over its own Messages API (its failures flagged, with their codes).
SESSION = (ROOT / "tests" / "fixtures" / "sessions" / "chat_session.json").read_bytes()
ANTHROPIC_SESSION = (ROOT / "tests" / "fixtures" / "sessions" / "anthropic_session.json").read_bytes()
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
CLAUDE_UA = "claude-cli/2.1.332 (external, cli)"
QWEN_UA = "QwenCode/0.24.4 (linux; x64)"  # as captured with 0.24.4 (tests/fixtures/corpus/qwen-code.json)
COMMANDS = ("bridge.diff", "bridge.export", "bridge.stats")
SECRET = "sk-live-secret-0123456789"


def chat_call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


# Qwen Code: a failed command in its run_shell_command frame (exit 2), an unmapped tool (kept
# with its result), an unobserved call. Sent with QWEN_UA.
MIXED = orjson.dumps(
    {
        "model": "m",
        "api_key": SECRET,
        "messages": [
            {"role": "user", "content": "fix it"},
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
                "content": "Command: make\nDirectory: (root)\nOutput: make: *** [all] Error 2\nError: (none)\n"
                "Exit Code: 2\nSignal: (none)\nProcess Group PGID: (none)",
            },
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        ],
    }
)
PLAIN = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
# Each body is sent with its client's user agent, as the client sends it.
USER_AGENT = {SESSION: CLAUDE_UA, ANTHROPIC_SESSION: CLAUDE_UA, MIXED: QWEN_UA}


def flow_of(content: bytes, path: str = CHAT) -> http.HTTPFlow:
    f = tflow.tflow(resp=True)
    f.live = False
    f.request.method = "POST"
    f.request.path = path
    f.request.headers["content-type"] = "application/json"
    f.request.headers["authorization"] = f"Bearer {SECRET}"
    f.request.headers["x-session-id"] = "sess-1"
    if content in USER_AGENT:
        f.request.headers["user-agent"] = USER_AGENT[content]
    f.request.content = content
    return f


@pytest.fixture
def ctx(tmp_path):
    """mitmproxy's test master with the view (it resolves @marked, @all, filters), the bridge and the commands."""
    hop, cmds, view = ChatHop(), BridgeCommands(), view_addon.View()
    with taddons.context(hop, cmds, view) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite", bridge_records=str(tmp_path / "live-records"))
        yield hop, tctx, view
        hop.done()


def load(hop: ChatHop, view: view_addon.View, *bodies: tuple[bytes, str]) -> list[http.HTTPFlow]:
    flows = []
    for content, path in bodies:
        f = flow_of(content, path)
        hop.request(f)
        flows.append(f)
    view.add(flows)
    return flows


def run(tctx, cmd: str) -> Any:
    return tctx.master.commands.execute(cmd)


# ---- registration --------------------------------------------------------------------


def test_entry_script_registers_the_commands_with_help():
    with taddons.context() as tctx:
        module = tctx.script(str(BRIDGE_SCRIPT))
        try:
            assert [type(a).__name__ for a in module.addons] == [
                "BridgeState",
                "H2CListener",
                "ChatHop",
                "PlannerHop",
                "BridgeCommands",
            ]
            registered = tctx.master.commands.commands
            for name in COMMANDS:
                cmd = registered[name]
                assert cmd.help and len(cmd.help) > 40, name
                assert cmd.parameters[0].type == Sequence[flow.Flow]  # so @marked, @all and filters work
                assert cmd.signature_help().startswith(f"{name} flows")
                assert cmd.return_type is str
            assert registered["bridge.export"].signature_help() == "bridge.export flows path -> str"
        finally:
            for addon in module.addons:
                if hasattr(addon, "done"):
                    addon.done()


# ---- bridge.stats ----------------------------------------------------------------------


def test_stats_over_all_flows(ctx):
    hop, tctx, view = ctx
    load(
        hop,
        view,
        (SESSION, CHAT),
        (ANTHROPIC_SESSION, MESSAGES),
        (MIXED, CHAT),
        (PLAIN, CHAT),
        (MIXED, "/v1/embeddings"),
    )
    text = run(tctx, "bridge.stats @all")
    rows = dict(line.rsplit(None, 1) for line in text.splitlines())
    rows = {k.strip(): int(v) for k, v in rows.items()}
    assert rows["flows chosen"] == 5
    assert rows["seen by the bridge"] == 4  # the embeddings request is not selected
    assert rows["rewritten"] == 3 and rows["unchanged"] == 1
    assert rows["steps sent"] == 21 + 19 + 1
    # The Anthropic session's exit 1 and exit 2, MIXED's exit 2; the chat session states none.
    assert rows["failures found (commands with exit != 0)"] == 3
    assert rows["exit 1"] == 1 and rows["exit 2"] == 2
    assert rows["calls never observed (unobserved)"] == 3
    assert rows["items kept as messages"] == 14 + 21 + 3
    assert rows["unmapped"] == 4 + 6 + 2 and rows["unobserved"] == 3 and rows["orphan"] == 1
    assert rows["untranslatable"] == 8 + 12 and rows["validity"] == 2


def test_stats_on_marked_flows_and_a_filter(ctx):
    hop, tctx, view = ctx
    session, mixed, plain = load(hop, view, (SESSION, CHAT), (MIXED, CHAT), (PLAIN, CHAT))
    # The bridge marks flows with a failure or an unobserved call: both rewritten ones, not the plain one.
    assert session.marked and mixed.marked and not plain.marked
    assert "seen by the bridge                        2" in run(tctx, "bridge.stats @marked")
    text = run(tctx, 'bridge.stats "~b acme_todo"')
    assert "flows chosen                              1" in text
    assert "steps sent                                1" in text


def test_stats_logs_its_table(ctx, caplog):
    hop, tctx, view = ctx
    load(hop, view, (MIXED, CHAT))
    with caplog.at_level(logging.INFO, logger="native_bridge.inspect.commands"):
        text = run(tctx, "bridge.stats @all")
    assert text.rstrip("\n") in caplog.text


# ---- bridge.diff -----------------------------------------------------------------------


def test_diff_shows_steps_and_the_history_change(ctx):
    hop, tctx, view = ctx
    [f] = load(hop, view, (MIXED, CHAT))
    text = run(tctx, "bridge.diff @all")
    lines = text.splitlines()
    assert lines[0] == f"== flow {f.id}: POST {f.request.pretty_url}"
    assert lines[1] == "bridge: 1 step (1 failed: exit 2 ×1), 3 kept as messages, 1 unobserved"
    assert any(
        line.startswith("  #0") and "run_command" in line and "exit 2" in line and "$ make" in line for line in lines
    )
    assert "messages: 4 items before, 3 after ('-' removed, '+' added, ' ' unchanged)" in lines
    removed = [line for line in lines if line.startswith("- [")]
    added = [line for line in lines if line.startswith("+ [")]
    assert any("call run_shell_command#c1" in line and line.endswith("→ step #0") for line in removed)
    assert any("result #c1" in line and line.endswith("→ step #0") for line in removed)
    assert any(
        "call acme_todo#c2" in line and "call run_shell_command#c3" in line and "#c1" not in line for line in added
    )
    assert "+ additional_steps: 1 step" in lines


def test_diff_of_flows_the_bridge_did_not_rewrite(ctx):
    hop, tctx, view = ctx
    load(hop, view, (PLAIN, CHAT), (MIXED, "/v1/embeddings"))
    text = run(tctx, "bridge.diff @all")
    assert "bridge: unchanged (no tool history): the request went upstream as the client sent it" in text
    assert text.count("== flow") == 1  # the unselected flow was never seen by the bridge
    assert "none of the 1 chosen flows" in run(tctx, 'bridge.diff "!~u completions"')


# ---- bridge.export ---------------------------------------------------------------------


def test_export_writes_the_records_the_recorder_writes(ctx, tmp_path):
    hop, tctx, view = ctx
    session, mixed, plain = load(hop, view, (ANTHROPIC_SESSION, MESSAGES), (MIXED, CHAT), (PLAIN, CHAT))
    assert hop.recorder is not None and hop.recorder.flush(timeout=10)
    out = tmp_path / "exported"
    text = run(tctx, f"bridge.export @all {out}")
    assert text == f"bridge.export: wrote 3 records to {out}"
    exported = {r["flow_id"]: r for r in (json.loads(p.read_text()) for p in out.glob("*.json"))}
    live = {r["flow_id"]: r for r in (json.loads(p.read_text()) for p in (tmp_path / "live-records").glob("*.json"))}
    assert set(exported) == set(live) == {session.id, mixed.id, plain.id}
    for fid, rec in exported.items():
        for key in ("status", "reason", "dialect", "conversation", "summary", "comment", "url", "request_headers"):
            assert rec[key] == live[fid][key], (fid, key)
        for key in ("before", "after_patch", "after_sha256", "steps", "accounting"):
            assert rec.get(key) == live[fid].get(key), (fid, key)
    assert exported[mixed.id]["conversation"].startswith("x-session-id:")
    assert exported[session.id]["summary"]["failed_exit_codes"] == [1, 2]
    raw = "".join(p.read_text() for p in out.glob("*.json"))
    assert SECRET not in raw
    assert ["authorization", REDACTED] in exported[mixed.id]["request_headers"]
    assert exported[mixed.id]["before"]["api_key"] == REDACTED


def test_export_of_marked_flows_only(ctx, tmp_path):
    hop, tctx, view = ctx
    load(hop, view, (SESSION, CHAT), (PLAIN, CHAT), (MIXED, "/v1/embeddings"))
    text = run(tctx, f"bridge.export @all {tmp_path / 'all'}")
    assert text.endswith("(1 chosen flows were not seen by the bridge)")
    run(tctx, f"bridge.export @marked {tmp_path / 'marked'}")
    [rec] = [json.loads(p.read_text()) for p in (tmp_path / "marked").glob("*.json")]
    assert rec["status"] == "rewritten" and rec["summary"]["steps"] == 21


def test_export_to_an_unwritable_place_is_a_command_error(ctx, tmp_path):
    hop, tctx, view = ctx
    load(hop, view, (MIXED, CHAT))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(exceptions.CommandError, match="no record could be written"):
        run(tctx, f"bridge.export @all {blocker / 'sub'}")
