"""End to end: what waits until a request has gone upstream (runtime/later.py) waits for it in a
real mitmdump, not only in a test that calls the hooks.

mitmdump runs each hook in an eager task, inside the event that completed the request, and
writes the request out only in a later loop step: work scheduled for "the next step" from a
hook ran before the request had gone (an observe-mode reading held the request back by its whole
length, 2 ms at 10 MB). A probe addon watches the server connection's writes and tells, for each
chat request, whether the bridge's verdict (made after its reading) was there before the
request's bytes were written, and whether it was there by the reply.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from support.histories.agent import AgentConversation
from support.mitmdump import Mitmdump
from support.reference_planner import ReferencePlanner

pytestmark = pytest.mark.e2e

CLAUDE_CODE = "claude-cli/2.1.332 (external, cli)"

# Loaded before the bridge. It reaches the server connection's writer through mitmproxy's
# Proxyserver addon, the only way to see when mitmproxy writes; a test may lean on that.
PROBE = r"""
from mitmproxy import ctx
from native_bridge.runtime import META

class Probe:
    def request(self, flow):
        try:
            handler = ctx.master.addons.get("proxyserver").connections[flow.client_conn.id]
            writer = handler.transports[flow.server_conn].writer
        except (KeyError, AttributeError):
            return  # not connected yet: nothing to watch
        write = writer.write

        def watched(data):
            writer.write = write
            print(f"probe: flow {flow.id}: verdict before the write: {META in flow.metadata}", flush=True)
            return write(data)

        writer.write = watched

    def response(self, flow):
        print(f"probe: flow {flow.id}: verdict by the reply: {META in flow.metadata}", flush=True)

addons = [Probe()]
"""
BEFORE = re.compile(r"probe: flow (\S+): verdict before the write: (True|False)")
BY_REPLY = re.compile(r"probe: flow (\S+): verdict by the reply: (True|False)")


@pytest.mark.parametrize("ua", [CLAUDE_CODE, None], ids=["named", "unnamed"])
@pytest.mark.parametrize("mode", ["observe", "rewrite"])
def test_the_verdict_comes_after_the_request_is_written_and_before_the_reply(tmp_path: Path, mode: str, ua: str | None):
    headers = {"content-type": "application/json"}
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    # Small histories (read on the loop), and a large one: its first sight read in the worker,
    # its next turns' new parts on the loop once the request has gone.
    bodies = [AgentConversation(200_000, 11, 3).body(t) for t in range(3)]
    bodies += [AgentConversation(2_000_000, 12, 3).body(t) for t in range(3)]
    with ReferencePlanner() as planner:
        # A flow file (-w) writes each flow at its reply, so the reply waits for the verdict of a reading
        # still running (the large first sight's, observing); without one, mitmdump shows no flow's
        # verdict and that reply goes on (tests/test_offload.py: the headless mitmdump's).
        options = ["--set", f"bridge_mode={mode}", "--set", f"save_stream_file={tmp_path / 'out.flows'}"]
        proxy = Mitmdump(planner.url, tmp_path / "records", tmp_path / "conf", options)
        args = proxy.args
        args[args.index("-s") : args.index("-s")] = ["-s", str(probe)]
        at = args.index(f"bridge_records={tmp_path / 'records'}")
        del args[at - 1 : at + 1]  # records off: observing, a large history's next turns are read on the loop
        with proxy, httpx.Client(base_url=proxy.url, timeout=60) as client:
            client.headers.pop("user-agent")  # httpx's own: an unnamed client sends none
            if ua:
                client.headers["user-agent"] = ua
            for body in bodies:
                assert client.post("/v1/chat/completions", content=body, headers=headers).status_code == 200
        out = proxy.output
    before = dict(BEFORE.findall(out))
    by_reply = dict(BY_REPLY.findall(out))
    assert len(by_reply) == len(bodies), out[-3000:]
    assert len(before) >= len(bodies) - 1, "the probe saw the writes (the first may come before the connection)"
    # Observing, the reading waits until the request has gone; rewriting, the new body is made
    # before it can go, and the verdict (annotations, log line, record) after.
    assert set(before.values()) == {"False"}, f"the verdict came before the request was written: {before}"
    assert set(by_reply.values()) == {"True"}, f"a reply went before its verdict: {by_reply}"
