"""The mitmproxy shell: options, flow selection, rewrite in place, annotations, fail-open, records."""

from __future__ import annotations

import gzip
import json
import logging
import re
from pathlib import Path

import pytest
from mitmproxy import exceptions, flowfilter, hooks, http, io
from mitmproxy.net import encoding
from mitmproxy.test import taddons, tflow
from native_bridge.chat_hop import addon as addon_module
from native_bridge.chat_hop import request as request_module
from native_bridge.chat_hop.addon import DEFAULT_FILTER, ChatHop, parse_tool_map
from native_bridge.chat_hop.request import header_values
from native_bridge.core.kinds import KINDS
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS
from native_bridge.evidence import match_key
from native_bridge.records import writer as records
from native_bridge.records.redact import REDACTED
from native_bridge.runtime import MARKER, META

BRIDGE_SCRIPT = Path(__file__).resolve().parent.parent / "addons" / "bridge.py"
BRIDGE_LOGGER = "native_bridge"  # the hop's lines and the dispatch's fail-open (runtime/dispatch.py)


# ---- building requests -------------------------------------------------------


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def result(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def chat(*messages: dict) -> bytes:
    return json.dumps(
        {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "fix the build"}, *messages]}
    ).encode()


def calls(*tool_calls: dict) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(tool_calls)}


# One successful command: a step, nothing kept.
OK_BODY = chat(calls(call("c1", "Bash", command="ls")), result("c1", "a.txt\nb.txt"))

# Qwen Code over Chat Completions, as captured with 0.24.4 (tests/fixtures/corpus/qwen-code.json): its user
# agent identifies it, and its run_shell_command frame states every command's exit code.
QWEN_UA = "QwenCode/0.24.4 (linux; x64)"
CLAUDE_UA = "claude-cli/2.1.332 (external, cli)"


def qwen_shell(command: str, output: str, code: int) -> str:
    return (
        f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\nExit Code: {code}\n"
        "Signal: (none)\nProcess Group PGID: (none)"
    )


# A failed command (exit 2), a successful one, a tool no table maps (kept with its result) and
# an unobserved call (kept).
MIXED_BODY = chat(
    calls(
        call("c1", "run_shell_command", command="make"),
        call("c2", "run_shell_command", command="ls"),
        call("c3", "acme_todo", todos=[]),
        call("c4", "run_shell_command", command="sleep 100"),
    ),
    result("c1", qwen_shell("make", "make: *** [all] Error 2", 2)),
    result("c2", qwen_shell("ls", "a.txt", 0)),
    result("c3", "ok"),
)
FAILED_BODY = chat(calls(call("c1", "run_shell_command", command="make")), result("c1", qwen_shell("make", "boom", 2)))
# A frame-looking line inside the output, away from every frame's place: no client's frame, named or not.
INSIDE_BODY = chat(calls(call("c1", "Bash", command="make")), result("c1", "make\nExit code: 2\nboom"))
UNOBSERVED_BODY = chat(
    calls(call("c1", "Bash", command="ls"), call("c2", "Bash", command="pwd")),
    result("c1", "a.txt"),
)


def chat_flow(
    content: bytes = OK_BODY,
    *,
    method: str = "POST",
    path: str = "/v1/chat/completions",
    headers: dict[str, str] | None = None,
    user_agent: str | None = None,
) -> http.HTTPFlow:
    f = tflow.tflow()
    f.request.method = method
    f.request.path = path
    f.request.headers["content-type"] = "application/json"
    if user_agent is not None:
        f.request.headers["user-agent"] = user_agent
    for k, v in (headers or {}).items():
        f.request.headers[k] = v
    f.request.content = content
    return f


def body_of(f: http.HTTPFlow) -> dict:
    return json.loads(f.request.get_content())


def error_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(BRIDGE_LOGGER) and r.levelno >= logging.ERROR]


# ---- the addon under mitmproxy's test context --------------------------------


@pytest.fixture
def bridge():
    """The addon, configured the way mitmdump configures a script: every option at once."""
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite")  # these tests are about the rewrite; observe has its own
        yield hop, tctx
        hop.done()


# ---- options -----------------------------------------------------------------


def test_options_are_declared_with_defaults(bridge):
    hop, tctx = bridge
    opts = tctx.options
    assert opts.bridge is True
    assert opts.bridge_filter == DEFAULT_FILTER
    assert opts.bridge_records is None
    assert list(opts.bridge_kinds) == list(KINDS)
    assert list(opts.bridge_tools) == []
    assert opts.bridge_max_body == 32 * 1024 * 1024
    assert opts.bridge_dialect == "auto"
    assert hop.filter is not None
    assert hop.recorder is None
    assert hop.config.kinds == frozenset(KINDS)
    assert dict(hop.config.tool_kinds) == dict(DEFAULT_TOOL_KINDS)


def test_bad_filter_is_refused(bridge):
    hop, tctx = bridge
    with pytest.raises(exceptions.OptionsError, match="bridge_filter"):
        tctx.configure(hop, bridge_filter="~m POST & ~nonsense(")
    assert tctx.options.bridge_filter == DEFAULT_FILTER  # rolled back
    tctx.configure(hop, bridge_filter="~u /v1/messages")
    assert hop.filter(chat_flow(path="/v1/messages"))
    assert not hop.filter(chat_flow())


_PATHS = [
    f"{prefix}{end}{tail}"
    for prefix in ("", "/v1", "/api/openai/v1", "/V1")
    for end in (
        "/chat/completions",
        "/CHAT/Completions",
        "/messages",
        "/messages/count_tokens",
        "/responses",
        "/responses/resp_1",
        "/chat/completions/extra",
        "/completions",
        "/models/gemini-2.5-pro:generateContent",
        "/models/gemini-2.5-pro:streamGenerateContent",
        "/models/a/b:generateContent",
        "/models/gemini:countTokens",
        "/",
    )
    for tail in ("", "?alt=sse", "?x=/messages", "#/chat/completions", "/")
]


@pytest.mark.parametrize("method", ["POST", "post", "GET", "PUT"])
@pytest.mark.parametrize("websocket", [False, True])
def test_the_default_filter_selects_what_mitmproxy_would(bridge, method, websocket):
    """The default filter is read from the path (addon.DefaultFilter), with mitmproxy's own answer
    for every method, path, query and fragment."""
    hop, _ = bridge
    assert isinstance(hop.filter, addon_module.DefaultFilter)
    reference = flowfilter.parse(DEFAULT_FILTER)
    for path in _PATHS:
        f = tflow.twebsocketflow() if websocket else chat_flow(path=path)
        f.request.method, f.request.path = method, path
        assert hop.filter(f) == reference(f), (method, path, websocket)
    assert hop.filter(chat_flow(path="/v1/chat/completions"))  # the corpus selects some and not others
    assert not hop.filter(chat_flow(path="/v1/chat/completions/extra"))


def test_the_default_filter_ignores_the_host_header(bridge):
    """``~u`` would search the URL built from a Host header; the default filter reads the path only."""
    hop, _ = bridge
    f = chat_flow(path="/v1/other")
    f.request.headers["host"] = "gateway/v1/messages?"
    assert flowfilter.parse(DEFAULT_FILTER)(f)  # mitmproxy's ~u finds the path in the Host header
    assert not hop.filter(f)


@pytest.mark.parametrize("kinds", [["run_command", "teleport"], ["RUN_COMMAND"], ["Bash"]])
def test_unknown_kinds_are_refused(bridge, kinds):
    hop, tctx = bridge
    with pytest.raises(exceptions.OptionsError, match="bridge_kinds: unknown"):
        tctx.configure(hop, bridge_kinds=kinds)
    assert hop.config.kinds == frozenset(KINDS)


@pytest.mark.parametrize(
    "entry, message",
    [
        ("run_terminal_cmd", "is not name=kind"),
        ("=run_command", "is not name=kind"),
        ("  =view_file", "is not name=kind"),
        ("run_terminal_cmd=teleport", "unknown kind 'teleport'"),
        ("x=Bash", "unknown kind 'Bash'"),
    ],
)
def test_bad_tool_entries_are_refused(bridge, entry, message):
    hop, tctx = bridge
    with pytest.raises(exceptions.OptionsError, match=message):
        tctx.configure(hop, bridge_tools=[entry])
    assert dict(hop.config.tool_kinds) == dict(DEFAULT_TOOL_KINDS)


@pytest.mark.parametrize("value", ["", "openai", "Chat", "Gemini", "vertex"])
def test_unknown_dialect_is_refused(bridge, value):
    hop, tctx = bridge
    with pytest.raises(exceptions.OptionsError, match="bridge_dialect"):
        tctx.configure(hop, bridge_dialect=value)
    assert hop.config.dialect == "auto"


@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_max_body_is_refused(bridge, value):
    hop, tctx = bridge
    with pytest.raises(exceptions.OptionsError, match="bridge_max_body"):
        tctx.configure(hop, bridge_max_body=value)
    assert tctx.options.bridge_max_body == 32 * 1024 * 1024
    tctx.configure(hop, bridge_max_body=1)


def test_parse_tool_map_adds_overrides_and_removes():
    table = parse_tool_map(["acme_exec=run_command", " Bash = ", "Read=find", "never_mapped="])
    assert table["acme_exec"] == "run_command"
    assert "Bash" not in table
    assert table["Read"] == "find"
    assert "never_mapped" not in table
    assert DEFAULT_TOOL_KINDS["Bash"] == "run_command"  # the default table is not mutated


def test_entry_script_loads_the_addon_with_its_options():
    with taddons.context() as tctx:
        module = tctx.script(str(BRIDGE_SCRIPT))
        hop = module.chat  # the chat hop (the script's other addons: tests/test_commands.py)
        try:
            assert isinstance(hop, ChatHop)
            assert tctx.options.bridge_filter == DEFAULT_FILTER
            assert tctx.options.bridge_mode == "observe"  # the default never removes history
            tctx.options.update(bridge_mode="rewrite")  # a script's addons are configured by its loader:
            tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook({"bridge_mode"}))
            f = chat_flow()
            hop.request(f)
            assert "additional_steps" in body_of(f)
        finally:
            hop.done()


# ---- the rewrite -------------------------------------------------------------


def test_selected_request_is_rewritten_in_place(bridge):
    hop, _ = bridge
    f = chat_flow(MIXED_BODY, user_agent=QWEN_UA)
    hop.request(f)
    body = body_of(f)
    steps = body["additional_steps"]
    assert [s["runCommand"]["commandLine"] for s in steps] == ["make", "ls"]
    assert steps[0]["runCommand"]["exitCode"] == 2
    assert steps[1]["runCommand"]["exitCode"] == 0  # Qwen Code states 0: its frame, at its place
    assert all(s["status"] == "CORTEX_STEP_STATUS_DONE" for s in steps)
    # What did not become a step is still in the messages, in the client's dialect.
    kept_calls = [tc["id"] for m in body["messages"] for tc in m.get("tool_calls", [])]
    kept_results = [m["tool_call_id"] for m in body["messages"] if m.get("role") == "tool"]
    assert kept_calls == ["c3", "c4"]
    assert kept_results == ["c3"]
    assert body["model"] == "gpt-4o" and body["stream"] is True
    assert f.request.headers["content-length"] == str(len(f.request.raw_content))


def test_the_same_request_from_an_unidentified_client_states_the_same_codes(bridge):
    """Without the user agent (issue 17) every frame we know counts at its place: Qwen Code's
    ``Exit Code: 2`` and its stated 0 are read as the client wrote them."""
    hop, _ = bridge
    f = chat_flow(MIXED_BODY)
    hop.request(f)
    steps = body_of(f)["additional_steps"]
    assert [s["runCommand"]["commandLine"] for s in steps] == ["make", "ls"]
    assert [s["runCommand"].get("exitCode") for s in steps] == [2, 0]
    assert f.comment == "bridge: 2 steps (1 failed: exit 2 ×1), 3 kept as messages, 1 unobserved"
    assert f.metadata[META]["failed"] == 1


def test_a_frame_line_inside_the_output_is_no_exit_code(bridge):
    hop, _ = bridge
    f = chat_flow(INSIDE_BODY)
    hop.request(f)
    [step] = body_of(f)["additional_steps"]
    assert step["runCommand"]["commandLine"] == "make"
    assert "exitCode" not in step["runCommand"]
    assert f.comment == "bridge: 1 step, 0 kept as messages"
    assert not f.marked


def test_rewrite_is_backed_up_and_revertible(bridge):
    hop, _ = bridge
    f = chat_flow(MIXED_BODY)
    assert not f.modified()
    hop.request(f)
    assert f.modified()
    assert f.request.content != MIXED_BODY
    f.revert()
    assert f.request.content == MIXED_BODY
    assert f.request.headers["content-length"] == str(len(MIXED_BODY))
    assert not f.modified()


def test_comment_marker_and_metadata_for_a_failure_and_an_unobserved_call(bridge):
    hop, _ = bridge
    f = chat_flow(MIXED_BODY, user_agent=QWEN_UA)
    hop.request(f)
    assert f.comment == "bridge: 2 steps (1 failed: exit 2 ×1), 3 kept as messages, 1 unobserved"
    assert f.marked == MARKER
    meta = f.metadata[META]
    assert meta["status"] == "rewritten"
    assert meta["steps"] == 2
    assert meta["failed"] == 1
    assert meta["failed_exit_codes"] == [2]
    assert meta["kept"] == 3
    assert meta["unobserved"] == 1
    assert meta["kept_by_code"] == {"unmapped": 2, "unobserved": 1}
    json.dumps(meta)  # plain data only


def test_failure_alone_marks_the_flow(bridge):
    hop, _ = bridge
    f = chat_flow(FAILED_BODY, user_agent=QWEN_UA)
    hop.request(f)
    assert f.comment == "bridge: 1 step (1 failed: exit 2 ×1), 0 kept as messages"
    assert f.marked == MARKER


def test_unobserved_call_alone_marks_the_flow(bridge):
    hop, _ = bridge
    f = chat_flow(UNOBSERVED_BODY)
    hop.request(f)
    assert f.comment == "bridge: 1 step, 1 kept as messages, 1 unobserved"
    assert f.marked == MARKER


def test_clean_rewrite_is_not_marked(bridge):
    hop, _ = bridge
    f = chat_flow(OK_BODY)
    hop.request(f)
    assert f.comment == "bridge: 1 step, 0 kept as messages"
    assert not f.marked
    assert f.metadata[META]["failed"] == 0


def test_rewritten_flow_round_trips_through_a_flow_file(bridge, tmp_path):
    hop, _ = bridge
    f = chat_flow(MIXED_BODY)
    hop.request(f)
    path = tmp_path / "flows.mitm"
    with path.open("wb") as fo:
        io.FlowWriter(fo).add(f)
    with path.open("rb") as fi:
        [g] = list(io.FlowReader(fi).stream())
    assert g.id == f.id
    assert g.metadata[META] == f.metadata[META]
    assert g.comment == f.comment
    assert g.marked == MARKER
    assert g.request.content == f.request.content


def test_replayed_flow_is_not_rewritten_twice(bridge, tmp_path):
    hop, _ = bridge
    f = chat_flow(MIXED_BODY)
    hop.request(f)
    path = tmp_path / "flows.mitm"
    with path.open("wb") as fo:
        io.FlowWriter(fo).add(f)
    with path.open("rb") as fi:
        [g] = list(io.FlowReader(fi).stream())
    rewritten, comment, meta = g.request.content, g.comment, dict(g.metadata[META])
    hop.request(g)  # mitmdump -nr re-runs the hook on the loaded flow
    assert g.request.content == rewritten
    assert g.comment == comment
    assert g.metadata[META] == meta
    # The same object seen a second time (client replay of a live flow) is not touched either.
    before = f.request.content
    hop.request(f)
    assert f.request.content == before


def test_body_already_carrying_steps_passes_untouched(bridge):
    hop, _ = bridge
    first = chat_flow(MIXED_BODY)
    hop.request(first)
    already = first.request.content
    f = chat_flow(already)
    hop.request(f)
    assert f.request.content == already
    assert not f.modified()
    assert f.metadata[META]["status"] == "skipped"
    assert "already carries additional_steps" in f.comment
    assert not f.marked


def test_request_without_tool_history_is_unchanged(bridge):
    hop, _ = bridge
    content = chat({"role": "assistant", "content": "hello"})
    f = chat_flow(content)
    hop.request(f)
    assert f.request.content == content
    assert not f.modified()
    assert f.comment == "bridge: unchanged (no tool history)"
    assert f.metadata[META] == {"status": "unchanged", "reason": "no tool history", "steps": 0}
    assert not f.marked


def test_non_json_body_passes_untouched(bridge):
    hop, _ = bridge
    content = b'{"messages": [{"tool_calls": ' + b"x" * 10
    f = chat_flow(content)
    hop.request(f)
    assert f.request.content == content
    assert f.metadata[META]["status"] == "skipped"
    assert f.comment.startswith("bridge: skipped (body is not JSON")


# ---- selection ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/responses",
        "/v1/chat/completions?api-version=2024-10-21",
        "/v1/messages?beta=true",
        "/v1/responses?x=/embeddings",
        "/openai/deployments/gpt/chat/completions",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
    ],
)
def test_default_filter_selects_the_endpoint_path_with_or_without_a_query(bridge, path):
    """The default filter matches the path exactly, never the query string (issue 12)."""
    hop, _ = bridge
    f = chat_flow(path=path)
    hop.request(f)
    assert META in f.metadata


@pytest.mark.parametrize(
    "flow",
    [
        pytest.param(lambda: chat_flow(method="GET"), id="GET"),
        pytest.param(lambda: chat_flow(path="/v1/embeddings"), id="other-path"),
        pytest.param(lambda: chat_flow(path="/v1/models"), id="models"),
        pytest.param(lambda: chat_flow(path="/v1/messages/count_tokens"), id="count-tokens"),
        pytest.param(lambda: chat_flow(path="/v1/embeddings?next=/responses"), id="query-names-an-endpoint"),
        pytest.param(lambda: chat_flow(path="/v1/chat/completions/extra"), id="path-continues"),
        pytest.param(lambda: chat_flow(path="/v1/models?x=/v1/messages"), id="query-names-messages"),
        pytest.param(lambda: chat_flow(path="/v1/responsesX"), id="longer-last-segment"),
        pytest.param(lambda: chat_flow(path="/v1beta/models/gemini-2.5-pro:countTokens"), id="gemini-count-tokens"),
        pytest.param(lambda: chat_flow(path="/v1beta/models/g:generateContentX"), id="gemini-longer-method"),
        pytest.param(lambda: chat_flow(path="/v1beta/files?x=/models/g:generateContent"), id="gemini-in-query"),
    ],
)
def test_non_selected_flows_are_untouched(bridge, flow):
    hop, _ = bridge
    f = flow()
    state = f.get_state()
    hop.request(f)
    assert f.request.content == OK_BODY
    assert f.comment == ""
    assert META not in f.metadata
    assert not f.modified()
    assert f.get_state() == state


def test_filter_not_matching_leaves_the_flow_alone(bridge):
    hop, tctx = bridge
    tctx.configure(hop, bridge_filter="~d planner.example.com")
    f = chat_flow()
    hop.request(f)
    assert f.request.content == OK_BODY
    assert f.comment == "" and META not in f.metadata
    f2 = chat_flow()
    f2.request.host = "planner.example.com"
    hop.request(f2)
    assert "additional_steps" in body_of(f2)


def test_bridge_false_disables(bridge):
    hop, tctx = bridge
    tctx.configure(hop, bridge=False)
    f = chat_flow(MIXED_BODY)
    hop.request(f)
    assert f.request.content == MIXED_BODY
    assert f.comment == "" and META not in f.metadata and not f.marked
    tctx.configure(hop, bridge=True)
    hop.request(f)
    assert "additional_steps" in body_of(f)


def test_flow_that_already_has_a_response_is_left_alone(bridge):
    hop, _ = bridge
    f = chat_flow()
    f.response = tflow.tresp()
    hop.request(f)
    assert f.request.content == OK_BODY
    assert META not in f.metadata


# ---- encodings ---------------------------------------------------------------


@pytest.mark.parametrize("enc", ["gzip", "zstd", "br", "deflate"])
def test_encoded_body_is_rewritten_and_stays_encoded(bridge, enc):
    hop, _ = bridge
    f = chat_flow(headers={"content-encoding": enc})
    f.request.raw_content = encoding.encode(MIXED_BODY, enc)
    original_raw = f.request.raw_content
    hop.request(f)
    assert f.request.headers["content-encoding"] == enc
    assert f.request.raw_content != original_raw
    decoded = encoding.decode(f.request.raw_content, enc)
    assert "additional_steps" in json.loads(decoded)
    assert f.request.headers["content-length"] == str(len(f.request.raw_content))
    f.revert()
    assert f.request.raw_content == original_raw


def test_gzip_body_decodes_with_the_standard_library(bridge):
    hop, _ = bridge
    f = chat_flow(headers={"content-encoding": "gzip"})
    f.request.raw_content = gzip.compress(OK_BODY)
    hop.request(f)
    assert "additional_steps" in json.loads(gzip.decompress(f.request.raw_content))


def test_body_that_does_not_decode_passes_untouched(bridge):
    hop, _ = bridge
    f = chat_flow(headers={"content-encoding": "gzip"})
    f.request.raw_content = b"this is not gzip"
    hop.request(f)
    assert f.request.raw_content == b"this is not gzip"
    assert f.metadata[META]["status"] == "skipped"
    assert "cannot decode" in f.comment


# ---- bodies that cannot be rewritten -----------------------------------------


@pytest.mark.parametrize("flow_detail,verbosity", [(None, None), (1, None), (0, None), (0, "info"), (0, "debug")])
def test_a_verdict_line_per_request_unless_mitmdump_is_quiet(bridge, caplog, flow_detail, verbosity):
    """One info line per bridged request; with flow_detail=0 (mitmdump's own per-flow lines off)
    only a verdict that needs attention (a failure stated, an unobserved call) stays at info,
    and the others are debug lines, made only when termlog_verbosity=debug shows them."""
    hop, tctx = bridge
    # mitmdump's dumper and termlog declare these; mitmweb and the tests have none
    if flow_detail is not None:
        tctx.options.add_option("flow_detail", int, 1, "")
        tctx.options.update(flow_detail=flow_detail)
    if verbosity is not None:
        tctx.options.add_option("termlog_verbosity", str, "info", "")
        tctx.options.update(termlog_verbosity=verbosity)
    caplog.set_level(logging.DEBUG, logger=BRIDGE_LOGGER)
    lines = {}
    for name, body in (("ok", OK_BODY), ("failed", FAILED_BODY), ("unobserved", UNOBSERVED_BODY)):
        f = chat_flow(body)
        hop.request(f)
        lines[name] = [r.levelno for r in caplog.records if f.id in r.getMessage()]
    ok = [logging.INFO]
    if flow_detail == 0:
        ok = [logging.DEBUG] if verbosity == "debug" else []
    assert lines == {"ok": ok, "failed": [logging.INFO], "unobserved": [logging.INFO]}


def test_streamed_body_passes_with_a_visible_skip(bridge, caplog):
    hop, _ = bridge
    caplog.set_level(logging.WARNING, logger=BRIDGE_LOGGER)
    f = chat_flow(MIXED_BODY)
    f.request.stream = True
    hop.request(f)
    assert f.request.content == MIXED_BODY
    assert not f.modified()
    assert f.metadata[META]["status"] == "skipped"
    assert f.comment.startswith("bridge: skipped (body is streamed")
    assert any(f.id in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_body_already_gone_to_the_stream_is_skipped(bridge):
    hop, _ = bridge
    f = chat_flow()
    f.request.raw_content = None
    hop.request(f)
    assert f.request.raw_content is None
    assert f.metadata[META]["status"] == "skipped"
    assert "streamed" in f.comment


def test_oversized_body_passes_untouched(bridge):
    hop, tctx = bridge
    tctx.configure(hop, bridge_max_body=len(MIXED_BODY) - 1)
    f = chat_flow(MIXED_BODY)
    hop.request(f)
    assert f.request.content == MIXED_BODY
    assert not f.modified()
    assert f.metadata[META]["status"] == "skipped"
    assert "bridge_max_body" in f.comment
    tctx.configure(hop, bridge_max_body=len(MIXED_BODY))
    g = chat_flow(MIXED_BODY)
    hop.request(g)
    assert g.metadata[META]["status"] == "rewritten"


def test_oversized_encoded_body_is_not_decoded(bridge):
    """The raw size is checked before decoding, so a huge encoded body is never decompressed."""
    hop, tctx = bridge
    tctx.configure(hop, bridge_max_body=100)
    f = chat_flow(headers={"content-encoding": "gzip"})
    f.request.raw_content = b"not gzip at all " * 20  # would fail to decode, were it decoded
    hop.request(f)
    assert f.request.raw_content == b"not gzip at all " * 20
    assert "bridge_max_body" in f.comment
    assert "cannot decode" not in f.comment


def test_body_oversized_only_once_decoded_passes_untouched(bridge):
    hop, tctx = bridge
    padded = chat(
        calls(call("c1", "Bash", command="ls")),
        result("c1", "a" * 4000),
    )
    raw = encoding.encode(padded, "gzip")
    assert len(raw) < 1000 < len(padded)
    tctx.configure(hop, bridge_max_body=1000)
    f = chat_flow(headers={"content-encoding": "gzip"})
    f.request.raw_content = raw
    hop.request(f)
    assert f.request.raw_content == raw
    assert f.metadata[META]["status"] == "skipped"
    assert "bridge_max_body" in f.comment


# ---- fail open ---------------------------------------------------------------


def _explode(*args, **kwargs):
    raise RuntimeError("core exploded")


def test_core_exception_fails_open(bridge, monkeypatch, caplog, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records=str(tmp_path / "records"))
    caplog.set_level(logging.DEBUG, logger=BRIDGE_LOGGER)
    monkeypatch.setattr(request_module, "rewrite", _explode)
    f = chat_flow(MIXED_BODY)
    raw_before = f.request.raw_content
    headers_before = f.request.headers.copy()
    hop.request(f)  # must not raise
    assert f.request.raw_content == raw_before
    assert f.request.headers == headers_before
    assert not f.modified()
    errors = error_lines(caplog)
    assert len(errors) == 1
    assert f.id in errors[0].getMessage()
    assert f.metadata[META]["status"] == "error"
    assert "RuntimeError: core exploded" in f.comment
    assert hop.recorder.flush(timeout=10)
    [record] = list((tmp_path / "records").glob("*.json"))
    rec = json.loads(record.read_text())
    assert rec["status"] == "error"
    assert rec["flow_id"] == f.id
    assert rec["reason"] == "RuntimeError: core exploded"
    assert records.after_doc(rec) is None
    assert rec["before"]["messages"][1]["tool_calls"][0]["id"] == "c1"


def test_core_exception_on_an_encoded_body_records_the_decoded_body(bridge, monkeypatch, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records=str(tmp_path / "records"))
    monkeypatch.setattr(request_module, "rewrite", _explode)
    f = chat_flow(headers={"content-encoding": "gzip"})
    f.request.raw_content = gzip.compress(MIXED_BODY)
    raw_before = f.request.raw_content
    hop.request(f)
    assert f.request.raw_content == raw_before  # fail-open holds either way
    assert hop.recorder.flush(timeout=10)
    [record] = list((tmp_path / "records").glob("*.json"))
    assert json.loads(record.read_text())["before"] == json.loads(MIXED_BODY)


def test_failure_writing_the_new_body_fails_open(bridge, monkeypatch, caplog):
    hop, _ = bridge
    caplog.set_level(logging.DEBUG, logger=BRIDGE_LOGGER)

    def broken_set_content(self, value):
        raise ValueError("cannot encode")

    f = chat_flow(headers={"content-encoding": "gzip"})
    f.request.raw_content = gzip.compress(MIXED_BODY)
    raw_before = f.request.raw_content
    monkeypatch.setattr(http.Request, "set_content", broken_set_content)
    hop.request(f)  # must not raise
    assert f.request.raw_content == raw_before
    assert f.request.headers["content-encoding"] == "gzip"
    assert f.metadata[META]["status"] == "error"
    assert "ValueError: cannot encode" in f.comment
    assert not f.marked
    errors = error_lines(caplog)
    assert len(errors) == 1 and f.id in errors[0].getMessage()


def test_core_exception_without_records_writes_nothing(bridge, monkeypatch, tmp_path, caplog):
    hop, _ = bridge
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(request_module, "rewrite", _explode)
    f = chat_flow(MIXED_BODY)
    hop.request(f)
    assert f.request.content == MIXED_BODY
    assert hop.recorder is None
    assert list(tmp_path.iterdir()) == []


# ---- records -----------------------------------------------------------------


def test_rewritten_flow_is_recorded_redacted(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records=str(tmp_path / "records"))
    f = chat_flow(MIXED_BODY, headers={"authorization": "Bearer sk-live-secret-0123456789"})
    f.request.path = "/v1/chat/completions?api_key=sk-query-0123456789"
    hop.request(f)
    assert hop.recorder.flush(timeout=10)
    [record] = list((tmp_path / "records").glob("*.json"))
    raw = record.read_text()
    assert "sk-live-secret-0123456789" not in raw and "sk-query-0123456789" not in raw
    rec = json.loads(raw)
    assert rec["flow_id"] == f.id
    assert rec["status"] == "rewritten"
    assert rec["dialect"] == "chat"
    assert rec["comment"] == f.comment
    assert rec["summary"] == {k: v for k, v in f.metadata[META].items() if k not in ("status", "reason")}
    assert rec["summary"]["steps"] == 2
    assert rec["before"] == json.loads(MIXED_BODY)
    assert records.after_doc(rec) == body_of(f)
    assert rec["steps"] == body_of(f)["additional_steps"]
    assert ["authorization", REDACTED] in rec["request_headers"]
    assert len(rec["accounting"]) == 7  # 4 calls + 3 results, each placed once


def test_encoded_body_is_recorded_decoded(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records=str(tmp_path / "records"))
    f = chat_flow(headers={"content-encoding": "zstd"})
    f.request.raw_content = encoding.encode(OK_BODY, "zstd")
    hop.request(f)
    assert hop.recorder.flush(timeout=10)
    [record] = list((tmp_path / "records").glob("*.json"))
    rec = json.loads(record.read_text())
    assert rec["before"] == json.loads(OK_BODY)
    assert "additional_steps" in records.after_doc(rec)


def test_non_selected_flows_write_no_record(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records=str(tmp_path / "records"))
    hop.request(chat_flow(method="GET"))
    assert hop.recorder.flush(timeout=10)
    assert list((tmp_path / "records").iterdir()) == []  # created at start-up, nothing written


def test_unsetting_records_closes_the_recorder(bridge, tmp_path):
    hop, tctx = bridge
    tctx.configure(hop, bridge_records=str(tmp_path / "records"))
    rec = hop.recorder
    assert rec is not None and rec.directory == str(tmp_path / "records")
    tctx.configure(hop, bridge_records=None)
    assert hop.recorder is None


# ---- tool map and kinds ------------------------------------------------------


def test_bridge_tools_adds_a_mapping(bridge):
    hop, tctx = bridge
    assert "acme_exec" not in DEFAULT_TOOL_KINDS
    content = chat(calls(call("c1", "acme_exec", command="ls")), result("c1", "a.txt"))
    f = chat_flow(content)
    hop.request(f)
    assert f.request.content == content
    assert f.metadata[META]["status"] == "unchanged"

    tctx.configure(hop, bridge_tools=["acme_exec=run_command"])
    g = chat_flow(content)
    hop.request(g)
    [step] = body_of(g)["additional_steps"]
    assert step["runCommand"]["commandLine"] == "ls"


def test_bridge_tools_removes_a_mapping(bridge):
    hop, tctx = bridge
    tctx.configure(hop, bridge_tools=["Bash="])
    f = chat_flow(OK_BODY)
    hop.request(f)
    assert f.request.content == OK_BODY
    assert f.metadata[META]["status"] == "unchanged"
    assert f.metadata[META]["kept_by_code"] == {"unmapped": 2}


def test_bridge_kinds_restricts_kinds(bridge):
    hop, tctx = bridge
    # Claude Code (through a Chat Completions gateway): its Read result is the file in its own
    # numbered-lines words, the evidence a view_file step needs.
    content = chat(
        calls(call("c1", "Bash", command="ls"), call("c2", "Read", file_path="/repo/a.txt")),
        result("c1", "a.txt"),
        result("c2", "     1\thello"),
    )
    tctx.configure(hop, bridge_kinds=["view_file"])
    f = chat_flow(content, user_agent=CLAUDE_UA)
    hop.request(f)
    body = body_of(f)
    assert [s["type"] for s in body["additional_steps"]] == ["CORTEX_STEP_TYPE_VIEW_FILE"]
    assert [tc["id"] for m in body["messages"] for tc in m.get("tool_calls", [])] == ["c1"]
    assert f.metadata[META]["kept_by_code"] == {"kind_off": 2}

    tctx.configure(hop, bridge_kinds=[])
    g = chat_flow(content, user_agent=CLAUDE_UA)
    hop.request(g)
    assert g.request.content == content
    assert g.metadata[META]["status"] == "unchanged"


# ---- issue 12: failed body write, per-flow log line ---------------------------


def test_a_body_that_cannot_be_written_leaves_the_flow_unmodified(bridge, monkeypatch, caplog):
    """set_content failing (e.g. the encoder) sends the original: the flow must not be marked modified."""
    hop, _ = bridge
    f = chat_flow(OK_BODY)

    def broken(self, value):
        raise ValueError("cannot encode")

    monkeypatch.setattr(http.Request, "set_content", broken)
    with caplog.at_level(logging.ERROR, logger=BRIDGE_LOGGER):
        hop.request(f)
    assert f.request.content == OK_BODY
    assert f.metadata[META]["status"] == "error"
    assert not f.modified()
    assert f._backup is None  # nothing to revert to: mitmweb shows no "modified" and no Revert


def test_a_flow_modified_before_keeps_its_backup_when_the_write_fails(bridge, monkeypatch):
    hop, _ = bridge
    f = chat_flow(OK_BODY)
    f.backup()
    f.request.headers["x-other-addon"] = "1"  # another addon changed it first
    monkeypatch.setattr(http.Request, "set_content", lambda self, value: (_ for _ in ()).throw(ValueError("x")))
    hop.request(f)
    assert f.modified()  # still the other addon's change, revertible to the original
    f.revert()
    assert "x-other-addon" not in f.request.headers


def test_one_info_line_per_bridged_flow(bridge, caplog):
    hop, _ = bridge
    f = chat_flow(FAILED_BODY, user_agent=QWEN_UA)
    with caplog.at_level(logging.INFO, logger=BRIDGE_LOGGER):
        hop.request(f)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith(BRIDGE_LOGGER) and r.levelno == logging.INFO]
    # No URL: a query string can carry a key (Gemini's ?key=...).
    assert lines == [f"bridge: flow {f.id}: 1 step (1 failed: exit 2 ×1), 0 kept as messages"]


def test_the_log_line_does_not_grow_with_the_history(caplog):
    """A verdict line counts failures per code, of this turn's new steps where the turn resumed
    (issue 40): a long conversation's 100th line is as long as its 2nd, up to the width of its numbers."""
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        messages: list[dict] = []
        lines = []
        for turn in range(100):
            cid = f"c{turn:03d}"
            code = 2 if turn % 10 == 9 else 1
            shell = qwen_shell("make", "x", code)
            messages += [calls(call(cid, "run_shell_command", command="make")), result(cid, shell)]
            f = chat_flow(chat(*messages), user_agent=QWEN_UA)
            caplog.clear()
            with caplog.at_level(logging.INFO, logger=BRIDGE_LOGGER):
                hop.request(f)
            [line] = [r.getMessage() for r in caplog.records if r.name.startswith(BRIDGE_LOGGER)]
            lines.append(line.replace(f.id, "<id>"))
        hop.done()
    assert lines[0] == "bridge: flow <id>: observed 1 step (1 failed: exit 1 ×1), 0 kept as messages"
    assert lines[1] == "bridge: flow <id>: observed 2 steps, 1 new (1 failed: exit 1 ×1), 0 kept as messages"
    assert lines[99] == "bridge: flow <id>: observed 100 steps, 1 new (1 failed: exit 2 ×1), 0 kept as messages"
    assert {re.sub(r"\d+", "#", line) for line in lines[1:]} == {re.sub(r"\d+", "#", lines[1])}
    # The flow's comment (and record) counts the whole history, per code.
    assert f.comment == "bridge: observed 100 steps (100 failed: exit 1 ×90, exit 2 ×10), 0 kept as messages"


# ---- the reference fix's probe, in the default configuration (issue 17) -------------------

PROBE = "Exit code: 2\nOutput:\nls: cannot access /nope"
PROBE_BODY = chat(calls(call("call_1", "Bash", command="ls /nope")), result("call_1", PROBE))


def test_the_reference_probe_in_the_default_configuration_is_exit_2():
    """Chat Completions, no User-Agent, no tools: observe mode (the default) leaves the body
    and states exit 2 in its verdict and its observation for the planner hop; rewrite mode
    sends exitCode 2."""
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        assert tctx.options.bridge_mode == "observe"
        f = chat_flow(PROBE_BODY)
        hop.request(f)
        assert f.request.get_content() == PROBE_BODY  # observe: the body goes as it came
        assert f.comment == "bridge: observed 1 step (1 failed: exit 2 ×1), 0 kept as messages"
        assert f.metadata[META]["failed"] == 1
        key = match_key("run_command", "ls /nope", PROBE)
        [o] = hop.state.store.candidates(key)
        assert (o.exit_code, o.failed) == (2, True)
        tctx.configure(hop, bridge_mode="rewrite")
        f = chat_flow(PROBE_BODY)
        hop.request(f)
        [step] = body_of(f)["additional_steps"]
        assert step["runCommand"]["exitCode"] == 2
        hop.done()


@pytest.mark.parametrize(
    "fields",
    [
        [],
        [(b"User-Agent", b"claude-cli/1.0.0 (external, cli)")],
        [(b"user-agent", b"a/1"), (b"Content-Type", b"application/json"), (b"USER-AGENT", b"b/2")],
        [(b"Content-Encoding", b"gzip"), (b"content-encoding", b"br"), (b"user-agent", b"")],
        [(b"content-encoding", b""), (b"X-User-Agent", b"not it"), (b"user-agent", b"caf\xc3\xa9 \xff")],
    ],
)
def test_header_values_read_as_mitmproxys_headers_get(fields: list[tuple[bytes, bytes]]) -> None:
    """The chat hop reads content-encoding and user-agent in one pass over the fields: the same
    strings Headers.get gives (folded with ", ", case-insensitive names, undecodable bytes kept)."""
    req = tflow.treq()
    req.headers = http.Headers(fields)
    expected = (req.headers.get("content-encoding"), req.headers.get("user-agent"))
    assert header_values(req) == expected
