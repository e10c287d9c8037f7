"""Planted secrets on every path the project writes, and no client value as a path.

Paths the project writes:
- records (``bridge_records``, the Recorder): redacted, files 0600 in a 0700 directory;
- exports (``bridge.export``, through the same Recorder) and command output (``bridge.diff``);
- what the addon adds to a flow, which mitmproxy then writes to ``-w`` files: ``flow.comment``
  and ``flow.metadata["bridge"]``;
- the scripts' output (scripts/demo.py; every other script is reviewed in ``SCRIPTS``).

Not ours: a ``-w`` flow file is mitmproxy's own full-fidelity capture. It holds the client's
request as sent (Authorization included), because ``-nr``/``-C`` replays need it; the bridge
does not redact it and adds no secret to it (tested below). Redacted copies of bridged flows
are what ``bridge_records`` and ``bridge.export`` write.

Every planted secret carries ``PLANTED``; a path passes when the bytes it wrote hold none.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from mitmproxy import hooks, io
from mitmproxy.test import taddons, tflow
from native_bridge.chat_hop.addon import ChatHop
from native_bridge.inspect import commands
from native_bridge.records import redact
from native_bridge.records import writer as records
from native_bridge.records.writer import Recorder, RecordJob, record_name
from native_bridge.runtime import META

ROOT = Path(__file__).resolve().parent.parent
MARK = "PLANTED"
SECRET_HEADERS = {
    "Authorization": f"Bearer {MARK}-authorization-0001",
    "Proxy-Authorization": f"Basic {MARK}-proxy-0002",
    "x-api-key": f"{MARK}-xapikey-0003",
    "api-key": f"{MARK}-apikey-0004",
    "x-goog-api-key": f"{MARK}-goog-0005",
    "Cookie": f"session={MARK}-cookie-0006; theme=dark",
}
QUERY = f"?key={MARK}-key-0007&api_key={MARK}-apikey-0008&model=m"


# The requests are Qwen Code's (its user agent as captured with 0.24.4, tests/fixtures/corpus/qwen-code.json):
# its run_shell_command frame states the exit code, which the record must keep through redaction.
QWEN_UA = "QwenCode/0.24.4 (linux; x64)"


def bash(cid: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {"id": cid, "type": "function", "function": {"name": "run_shell_command", "arguments": arguments}}


def qwen_shell(command: str, output: str, code: int) -> str:
    return (
        f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\nExit Code: {code}\n"
        "Signal: (none)\nProcess Group PGID: (none)"
    )


CURL = f"curl -fH 'Authorization: Bearer {MARK}-cmdbearer-0011' 'https://h/x?api_key={MARK}-cmdq-0012'"


def planted_body(**extra: Any) -> dict[str, Any]:
    """A chat request with secrets in body fields, in a tool result that becomes a step, in one that
    stays a message, and in a command line."""
    return {
        "model": "m",
        "api_key": f"{MARK}-bodykey-0009",
        "metadata": {"user_id": "u-1", "token": f"{MARK}-metatoken-0010"},
        "messages": [
            {"role": "user", "content": "deploy it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    bash("c1", CURL),
                    bash("c2", "env"),
                    {
                        "id": "c3",
                        "type": "function",
                        "function": {"name": "TodoWrite", "arguments": json.dumps({"api_key": f"{MARK}-argkey-0013"})},
                    },
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": qwen_shell(CURL, f"HTTP 401\nAuthorization: Bearer {MARK}-resultbearer-0014", 22),
            },
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": f"OPENAI_API_KEY=sk-{MARK}-envkey-0015\nGITHUB_TOKEN={MARK}-envtoken-0016",
            },
            {"role": "tool", "tool_call_id": "c3", "content": f"stored, Bearer {MARK}-keptbearer-0017"},
        ],
        **extra,
    }


def planted(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return sorted(set(re.findall(MARK + r"-[a-z]+-\d{4}", text)))


@pytest.fixture
def bridge(tmp_path: Path):
    hop = ChatHop()
    with taddons.context(hop) as tctx:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        tctx.configure(hop, bridge_mode="rewrite", bridge_records=str(tmp_path / "records"))
        yield hop, tmp_path / "records"
        hop.done()


def send(hop: ChatHop, body: bytes, path: str = "/v1/chat/completions" + QUERY, headers=SECRET_HEADERS):
    f = tflow.tflow()
    f.request.method, f.request.path = "POST", path
    f.request.headers["content-type"] = "application/json"
    f.request.headers["user-agent"] = QWEN_UA
    for k, v in headers.items():
        f.request.headers[k] = v
    f.request.content = body
    hop.request(f)
    return f


def written(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


# ---- records ---------------------------------------------------------------------------------


BODIES = {
    "rewritten": orjson.dumps(planted_body()),
    "skipped (not JSON)": orjson.dumps(planted_body())[:-5],
    "skipped (wrong types)": orjson.dumps(planted_body(messages={"tool_calls": f"Bearer {MARK}-typebearer-0018"})),
    "unchanged": orjson.dumps(
        {
            "model": "m",
            "api_key": f"{MARK}-bodykey-0009",
            "messages": [{"role": "user", "content": "x"}],
            "tool_calls": 1,
        }
    ),
}


@pytest.mark.parametrize("case", list(BODIES))
def test_record_holds_no_planted_secret(bridge, case: str) -> None:
    hop, directory = bridge
    f = send(hop, BODIES[case])
    assert f.metadata[META]["status"] == case.split()[0]
    assert hop.recorder.flush(10)
    (path,) = written(directory)
    data = path.read_bytes()
    assert planted(data) == []
    rec = orjson.loads(data)
    # Redacted, not emptied: the record still says what happened.
    assert rec["status"] == f.metadata[META]["status"]
    assert ["Authorization", redact.REDACTED] in rec["request_headers"]
    assert "model=m" in rec["url"]
    if case == "rewritten":
        codes = [s["runCommand"].get("exitCode") for s in rec["steps"] if "runCommand" in s]
        assert 22 in codes
        assert records.after_doc(rec)["metadata"] == {"user_id": "u-1", "token": redact.REDACTED}


def test_record_of_an_error_holds_no_planted_secret(bridge, monkeypatch) -> None:
    """The fail-open path: the exception text (which may quote the body) is redacted too."""
    hop, directory = bridge

    def boom(raw, config, path):
        raise ValueError(f"cannot handle Authorization: Bearer {MARK}-exception-0019 in {raw[:20]!r}")

    monkeypatch.setattr("native_bridge.chat_hop.request.rewrite", boom)
    f = send(hop, BODIES["rewritten"])
    assert f.metadata[META]["status"] == "error"
    assert hop.recorder.flush(10)
    (path,) = written(directory)
    assert planted(path.read_bytes()) == []


def test_flow_annotations_that_go_into_w_files_hold_no_planted_secret(bridge) -> None:
    """What the bridge adds to a flow (comment, metadata) is written by mitmproxy to -w files."""
    hop, _ = bridge
    for body in BODIES.values():
        f = send(hop, body)
        assert planted(f.comment) == []
        assert planted(orjson.dumps(f.metadata[META])) == []


def test_w_file_holds_only_the_clients_own_secrets(bridge, tmp_path: Path) -> None:
    """A -w file is mitmproxy's capture of the request as sent: the client's own credentials are in it
    (replays need them); the bridge adds none. The documented decision: -w files are not redacted."""
    hop, _ = bridge
    f = send(hop, BODIES["rewritten"])
    out = tmp_path / "flows"
    with out.open("wb") as fh:
        io.FlowWriter(fh).add(f)
    data = out.read_bytes()
    assert f"{MARK}-authorization-0001".encode() in data  # the client's own request, kept for replay
    ours = orjson.dumps({"comment": f.comment, "metadata": f.metadata})
    assert planted(ours) == []


def test_record_files_are_owner_only_even_under_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        rec = Recorder(str(tmp_path / "a" / "records"))
        path = rec.write(RecordJob("f1", 1.7e9, "POST", "http://h/", [], "skipped", "r", None, b"{}"))
    finally:
        os.umask(old)
    assert path is not None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "records").st_mode) == 0o700
    leftovers = [p for p in (tmp_path / "a" / "records").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_redact_text_catches_credentials_quoted_in_tool_output() -> None:
    text = (
        f"curl -H 'x-api-key: {MARK}-a-0001' -H \"Cookie: s={MARK}-b-0002; t=1\" https://h/?token={MARK}-c-0003\n"
        f"export ANTHROPIC_API_KEY={MARK}-d-0004; --api-key={MARK}-e-0005 password='{MARK}-f-0006'\n"
        f"Authorization: Basic {MARK}-g-0007"
    )
    assert planted(redact.text(text)) == []
    kept = "max_tokens=512 cache_key=abc sort_key=2 monkey=banana a == b"
    assert redact.text(kept) == kept


# ---- no client value becomes a path ------------------------------------------------------------

HOSTILE = ["../../../etc/passwd", "/etc/cron.d/evil", "..", ".", "", "a/../../b", "..\\..\\win", "x\x00y", "~root/x"]
SAFE_NAME = re.compile(r"^(\d{8}T\d{6}\.\d{6})-[A-Za-z0-9_-]+\.json$")


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_never_reach_a_file_name(bridge, value: str, tmp_path: Path) -> None:
    """Every value a client controls (headers, body fields, path, query) and the flow id."""
    hop, directory = bridge
    body = orjson.dumps(
        planted_body(model=value, user=value, metadata={"user_id": value, "session_id": value}, prompt_cache_key=value)
    )
    headers = {"x-session-id": value.replace("\x00", ""), "x-request-id": value.replace("\x00", ""), "host": "h"}
    f = tflow.tflow()
    f.id = value  # a flow loaded from a doctored -w file (mitmdump -nr) carries any id
    f.request.method, f.request.path = "POST", "/v1/chat/completions?f=" + value.replace("\x00", "")
    for k, v in headers.items():
        f.request.headers[k] = v
    f.request.content = body
    hop.request(f)
    assert hop.recorder.flush(10)
    names = [p.name for p in directory.iterdir()]
    assert len(names) == 1 and SAFE_NAME.match(names[0]), names
    everything = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert everything == ["records", f"records/{names[0]}"]


@pytest.mark.parametrize("value", [*HOSTILE, "a" * 10_000, "\udcff/../x", "CON", "nul.json"])
def test_record_name_is_one_safe_component(value: str) -> None:
    job = RecordJob(value, 1.7e9, "POST", "http://h/", [], "skipped", "", None, None)
    name = record_name(job)
    assert SAFE_NAME.match(name) and len(name) < 120
    assert os.path.basename(name) == name and ".." not in name.removesuffix(".json")


@pytest.mark.e2e
def test_doctored_flow_file_ids_stay_inside_the_records_directory(tmp_path: Path) -> None:
    """mitmdump -nr with flows whose ids are paths: the records land in the directory, safely named."""
    flows = tmp_path / "in.flows"
    with flows.open("wb") as fh:
        w = io.FlowWriter(fh)
        for value in ["../../../../tmp/evil", "/tmp/evil-abs", "..", "a/b"]:
            f = tflow.tflow(resp=True)
            f.id = value
            f.request.method, f.request.path = "POST", "/v1/chat/completions"
            f.request.headers["content-type"] = "application/json"
            f.request.content = BODIES["rewritten"]
            w.add(f)
    records = tmp_path / "sub" / "records"
    mitmdump = Path(sys.executable).with_name("mitmdump")
    proc = subprocess.run(
        [str(mitmdump), "-nr", str(flows), "-s", str(ROOT / "addons" / "bridge.py"),
         "--set", f"bridge_records={records}", "--set", f"confdir={tmp_path / 'conf'}"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = sorted(p.name for p in records.iterdir())
    assert len(names) == 4 and all(SAFE_NAME.match(n) for n in names), names
    assert not Path("/tmp/evil").exists() and not Path("/tmp/evil-abs").exists()
    created = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")} - {"in.flows", "sub", "sub/records"}
    assert all(p.startswith(("sub/records/", "conf")) for p in created), created
    for n in names:
        data = (records / n).read_bytes()
        assert planted(data) == [] and oct(os.stat(records / n).st_mode & 0o777) == "0o600"


# ---- commands (exports) ---------------------------------------------------------------------------


def test_export_command_is_redacted(bridge, tmp_path: Path) -> None:
    hop, _ = bridge
    flows = [send(hop, body) for body in BODIES.values()]
    out = tmp_path / "export"
    commands.BridgeCommands().export(flows, str(out))
    files = written(out)
    assert len(files) == len(BODIES)
    for p in files:
        assert planted(p.read_bytes()) == []
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


def test_diff_command_output_is_redacted(bridge) -> None:
    hop, _ = bridge
    f = send(hop, BODIES["rewritten"])
    assert planted(commands.BridgeCommands().diff([f])) == []


# ---- scripts' output ----------------------------------------------------------------------------

# Every script in scripts/ and what it prints or writes. A new script fails test_every_script_is_reviewed
# until it is listed here with the reason its output cannot carry a secret (or a test proves it).
SCRIPTS = {
    "demo.py": "sends a session (any --session file) and prints commands and reasons: tested with planted secrets",
    "fuzz/__main__.py": "the fuzzer's command line (fuzz/runner.py)",
    "fuzz/runner.py": "generated bodies only; prints case numbers, mutation names and problems; --save writes the "
    "failing generated bodies (their planted secrets are fakes)",
    "fuzz/__init__.py": "the fuzzer's description; runs nothing",
    "fuzz/cases.py": "generated bodies with planted fake secrets; writes nothing",
    "fuzz/mutations.py": "damages generated bodies; writes nothing",
    "fuzz/encoding.py": "writes generated bodies to bytes in memory; writes nothing",
    "fuzz/oracle.py": "checks the core's answers in memory; writes nothing",
    "fuzz/addon.py": "the addon under taddons, records rendered in memory and checked for the planted secrets",
    "mutation_check.py": "runs the test suite on a copy; prints test names and verdicts",
    "bench/__init__.py": "the bench's description; runs nothing",
    "bench/__main__.py": "the bench's command line (bench/cli.py)",
    "bench/cli.py": "generated histories only; prints timings and the target table; --golden-save writes digests",
    "bench/golden.py": "rewrites the bundled synthetic sessions and generated histories in memory; digests only",
    "bench/timing.py": "times jobs in memory; writes nothing",
    "bench/core.py": "generated histories only; prints timings",
    "bench/e2e.py": "generated histories through mitmdump; prints timings",
    "bench/shapes.py": "generated histories through mitmdump; prints timings",
    "bench/stall.py": "generated histories through mitmdump; prints timings and memory",
    "bench/loopmem.py": "generated histories through mitmdump; prints memory",
    "bench/planner.py": "generated planner-hop bodies through mitmdump; prints timings",
    "bench/load.py": "generated conversations through stand-in gateways, shims and mitmdumps (a throwaway Redis "
    "password in a 0600 file and their environment, never printed); prints timings and counts, on a failure the "
    "tails of the gateways' and planner hops' logs (the shim masks the password)",
    "bench/targets.py": "prints the limits and what was measured; no request data",
    "bench/proxies.py": "starts mitmdumps (their output in a temp file it deletes) and a planner that answers a "
    "fixed reply; sends generated histories; prints nothing",
    "doc_tables.py": "prints tables from the code (rules, tool names); no request data",
    "gen_proto.py": "regenerates protobuf code from proto/",
    "support/known_gateway.py": "a library (the known defective translation); writes nothing",
    "reference_planner.py": "runs support/reference_planner.py (below); prints its address",
    "support/reference_planner.py": "a test fixture; GET /_received returns the requests it got, to its own client on "
    "loopback only (the planner side: what the proxy forwarded, credentials included)",
    "replay_check.py": "reads records (redacted) and -w flow files (not redacted): tested with planted secrets",
    "summary.py": "reads records (redacted) and -w flow files (not redacted): tested with planted secrets",
    "fake_language_server.py": "runs support/fake_language_server.py (below) as a program",
    "support/fake_language_server.py": "a test fixture (the planner side): its capture_log/rpc_log hold the requests "
    "as the language server received them, credentials included, like any language server's own logs; loopback only",
    "standin_gateway.py": "runs support/standin_gateway.py (below) as a program",
    "support/standin_gateway.py": "a test fixture (the known gateway): logs routes, cascade ids and step counts, never "
    "a header, a body or Metadata; the agent's credential only as a digest in memory; its api_key is a planted fake",
    "interop.py": "installs agent clients and runs pytest; prints install logs and test output, no request data",
    "real_gateway.py": "prints the steps (commands, outputs, reasons) the gateway sent and the language server got, "
    "never Metadata; its --state folder holds the stand-in language server's captures (the planner side, as above)",
    "rebuild_record.py": "prints a record's rewritten body, rebuilt from the record (redacted)",
    "record_size.py": "bundled synthetic sessions only; prints sizes",
    "support/__init__.py": "the package's description; runs nothing",
    "support/lifetime.py": "a library (processes end with their parent); prints nothing",
    "support/shim.py": "the language-server shim's parts (its entry point is reviewed with the shim): masks a store's "
    "password in everything it prints, hands it to mitmdump by its environment only",
    "support/launcher.py": "a library (children forked from one long-lived thread, ending with this process); prints "
    "nothing",
    "support/certs.py": "writes a throwaway test CA and server certificate (its key 0600) where told; prints nothing",
    "support/redis_server.py": "starts a real redis-server; its random passwords only in a 0600 redis.conf in a 0700 "
    "temp dir, never on a command line or in the environment; the log it shows on a failure has them replaced; url "
    "and client() hand them to the tests",
    "support/hosts.py": "makes network namespaces for multi-host tests and runs commands in them; prints nothing",
    "support/cli.py": "the scripts' entry point (exit code, quiet end on a closed pipe); prints nothing",
    "support/mitmdump.py": "starts a real mitmdump with the bridge and keeps its output in memory (for the report and "
    "the tests); reads records (redacted); prints nothing",
    "make_sessions.py": "writes the bundled synthetic sessions (support/histories/bundled) and prints their paths",
    "support/histories/__init__.py": "generated histories (synthetic, no secrets); writes nothing",
    "support/histories/agent.py": "generated histories (synthetic, no secrets); writes nothing",
    "support/histories/chat.py": "builders of history items; writes nothing",
    "support/histories/anthropic.py": "builders of history items; writes nothing",
    "support/histories/responses.py": "builders of history items; writes nothing",
    "support/histories/seeds.py": "generated histories (synthetic, no secrets); writes nothing",
    "support/histories/encodings.py": "a document in each JSON style clients write (synthetic); writes nothing",
    "support/histories/cascade.py": "generated planner-hop bodies (the gateway capture's planted fake key at most, "
    "from ../shared when present); writes nothing",
    "support/histories/bundled/__init__.py": "the bundled synthetic sessions' helpers; writes nothing",
    "support/histories/bundled/chat_session.py": "the bundled synthetic session; writes nothing",
    "support/histories/bundled/anthropic_session.py": "the bundled synthetic session; writes nothing",
    "support/histories/bundled/responses_session.py": "the bundled synthetic session; writes nothing",
    "support/demo/__init__.py": "the demo's parts, described; runs nothing",
    "support/demo/inputs.py": "the demo's inputs: the bundled session, the gateway's captures (a planted fake key) "
    "and the probe's synthetic text; prints nothing",
    "support/demo/table.py": "formats the demo's tables; prints nothing",
    "support/demo/chat.py": "the demo's chat-hop tables, returned to demo.py (tested with planted secrets): counts, "
    "exit codes, commands through redact.text, the record's accounting (records are redacted)",
    "support/demo/h2_client.py": "one gRPC call on loopback, its reply returned; prints nothing",
    "support/demo/planner.py": "sends the gateway's captures (a planted fake key) through the planner hop; its table "
    "shows counts, exit codes and commands through redact.text, never Metadata",
    "support/demo/probe.py": "sends a synthetic probe (no credentials) through both hops; returns exit codes",
    "support/real_gateway/__init__.py": "real_gateway.py's parts, described and named for the tests; runs nothing",
    "support/real_gateway/config.py": "the run's settings: the gateway's client key and its language-server key "
    "(the fixtures' planted fakes); probes unshare; prints nothing",
    "support/real_gateway/state.py": "writes the shim's and the stand-in language server's settings (paths, no key); "
    "names the files that hold the gateway's planted key, never the key",
    "support/real_gateway/namespace.py": "starts the gateway (its fake keys in its environment only) and the chat "
    "hop's mitmdump (output to the --state folder's logs); posts the fixture turns; prints nothing",
    "support/real_gateway/report.py": "prints each step's kind, status, command line and exit code, never Metadata; "
    "out/summary.json holds the decoded steps (the planner side, as real_gateway.py above)",
}


def test_every_script_is_reviewed() -> None:
    present = {str(p.relative_to(ROOT / "scripts")) for p in (ROOT / "scripts").rglob("*.py")}
    new = sorted(present - set(SCRIPTS))
    assert not new, f"scripts not yet reviewed for secrets in their output (add them to SCRIPTS): {new}"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("demo-secrets")
    session = tmp / "session.json"
    session.write_bytes(orjson.dumps(planted_body()))
    records = tmp / "records"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--session", str(session), "--records", str(records)],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )  # fmt: skip
    return proc, records


@pytest.mark.e2e
def test_demo_records_hold_no_planted_secret(demo_run) -> None:
    proc, records = demo_run
    files = written(records)
    assert files, proc.stdout + proc.stderr
    for p in files:
        assert planted(p.read_bytes()) == []


@pytest.mark.e2e
def test_demo_output_holds_no_planted_secret(demo_run) -> None:
    proc, _ = demo_run
    assert planted(proc.stdout + proc.stderr) == [], proc.stdout


@pytest.fixture(scope="module")
def planted_flows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A -w file made behind the bridge: every planted body, plus a flow the bridge never saw."""
    path = tmp_path_factory.mktemp("flows") / "planted.flows"
    hop = ChatHop()
    with taddons.context(hop) as tctx, path.open("wb") as fh:
        tctx.master.addons.invoke_addon_sync(hop, hooks.ConfigureHook(set(tctx.options.keys())))
        w = io.FlowWriter(fh)
        for body in BODIES.values():
            f = send(hop, body)
            f.response = tflow.tresp()
            w.add(f)
        f = tflow.tflow(resp=True)
        f.request.path = "/v1/models" + QUERY
        f.request.headers["Authorization"] = SECRET_HEADERS["Authorization"]
        w.add(f)
    return path


def run_script(name: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args], capture_output=True, text=True, timeout=60, check=False
    )
    return proc.stdout + proc.stderr


def test_summary_of_a_flow_file_holds_no_planted_secret(planted_flows: Path) -> None:
    out = run_script("summary.py", str(planted_flows))
    assert "rewritten" in out
    assert planted(out) == []


def test_replay_check_of_a_flow_file_holds_no_planted_secret(planted_flows: Path) -> None:
    out = run_script("replay_check.py", str(planted_flows))
    assert "checked" in out
    assert planted(out) == []


def test_integrity_signatures_in_bodies_are_kept_and_url_signatures_are_not() -> None:
    """A thinking block's signature (Anthropic) or a thoughtSignature (Gemini) is checked by the API
    on replay, not a credential: records keep it. A presigned URL's signature is a credential."""
    doc = {
        "messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "EqQB"}]}],
        "contents": [{"parts": [{"text": "x", "thoughtSignature": "CiIB"}]}],
        "api_key": f"{MARK}-k-0001",
    }
    out = redact.body(doc)
    assert out["messages"] == doc["messages"] and out["contents"] == doc["contents"]
    assert planted(orjson.dumps(out)) == []
    url = f"https://b.s3.amazonaws.com/k?X-Amz-Signature={MARK}-s-0002&sig={MARK}-s-0003&x=1"
    assert planted(redact.url(url)) == [] and "x=1" in redact.url(url)
