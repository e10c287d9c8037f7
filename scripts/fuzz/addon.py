"""The addon under mitmproxy's test context (``taddons``/``tflow``): a case through
``ChatHop.request``, its verdict, its body and its record checked."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson
from native_bridge.core.pipeline import rewrite

from .cases import SECRET, Case
from .oracle import STATUSES, known


class _Jobs:
    """Stands in for the Recorder: keeps the jobs, renders them as the writer thread would."""

    def __init__(self) -> None:
        self.jobs: list[Any] = []

    def submit(self, job: Any, *, held: bool = False) -> None:
        self.jobs.append(job)  # held or not (Recorder.submit): kept at once, as the turn is over here

    def release(self, flow_id: str) -> None:
        pass  # every job is kept when submitted

    def close(self, timeout: float = 0) -> None:
        pass


class AddonHarness:
    def __init__(self) -> None:
        from mitmproxy import hooks
        from mitmproxy.test import taddons
        from native_bridge.chat_hop.addon import ChatHop

        self.nb = ChatHop()
        self._ctx = taddons.context(self.nb)
        self.tctx = self._ctx.__enter__()
        self.tctx.master.addons.invoke_addon_sync(self.nb, hooks.ConfigureHook(set(self.tctx.options.keys())))
        self.tctx.configure(self.nb, bridge_mode="rewrite", bridge_max_body=2 * 1024 * 1024)
        self.jobs = _Jobs()
        self.nb.recorder = self.jobs  # type: ignore[assignment]

    def close(self) -> None:
        self.nb.recorder = None
        self.nb.done()  # the offload worker, if a big body started one
        self._ctx.__exit__(None, None, None)

    def check(self, case: Case) -> list[str]:
        from mitmproxy import io
        from mitmproxy.test import tflow
        from native_bridge.records import writer as records
        from native_bridge.runtime import META

        f = tflow.tflow()
        req = f.request
        req.method = "POST" if case.index % 13 else "GET"
        req.path = (case.path or "/v1/chat/completions") + case.query
        req.headers["content-type"] = "application/json"
        if case.user_agent:
            req.headers["user-agent"] = case.user_agent
        for k, v in case.secrets:
            req.headers[k] = v
        if case.index % 17 == 0:
            req.headers[b"x-undecodable"] = b"\xff\xfe../\x00"
        if case.encoding:
            req.headers["content-encoding"] = case.encoding
            req.raw_content = case.encoded
        else:
            req.raw_content = case.raw
        raw_before, headers_before = req.raw_content, req.headers.fields
        try:
            decoded = req.get_content()
        except ValueError:
            decoded = None
        selected = bool(self.nb.filter and self.nb.filter(f))
        self.nb.config = case.config
        self.jobs.jobs.clear()
        try:
            pending = self.nb.request(f)
            if pending is not None:  # a big body is bridged in a worker: mitmproxy awaits the hook
                asyncio.run(pending)  # type: ignore[arg-type]
        except BaseException as e:
            return [f"addon raised {type(e).__name__}: {str(e)[:200]}"]
        problems: list[str] = []
        meta = f.metadata.get(META)
        if not selected:
            if meta is not None or self.jobs.jobs or req.raw_content != raw_before:
                problems.append("a flow the filter does not select was touched")
            return problems
        if not isinstance(meta, dict) or meta.get("status") not in STATUSES:
            return [f"selected flow without a verdict: {meta!r}"]
        status = meta["status"]
        if status != "rewritten":
            if req.raw_content != raw_before or req.headers.fields != headers_before:
                problems.append(f"status {status} but the request changed")
            if not meta.get("reason"):
                problems.append(f"status {status} without a reason")
            if status == "error":  # the fail-open caught an exception of the core: a bug unless known
                reason = str(meta.get("reason", ""))
                problems.append(
                    f"raised {reason[:160]}" if known(f"raised {reason}") else f"addon error: {reason[:160]}"
                )
        else:
            if req.headers.get("content-encoding") != (case.encoding or None):
                problems.append("content-encoding changed")
            expect = rewrite(decoded or b"", case.config, req.path, client_hint=case.user_agent)
            if req.get_content() != expect.body:
                problems.append("the body sent is not the core's rewrite")
        if len(self.jobs.jobs) != 1:
            problems.append(f"{len(self.jobs.jobs)} record jobs for one flow")
        else:
            job = self.jobs.jobs[0]
            data = records._render(job)
            rec = orjson.loads(data)
            if "record_error" in rec:
                problems.append(f"record kept short: {rec['record_error'][:120]}")
            if rec.get("status") != status:
                problems.append("record status differs from the flow's")
            leaked = _planted(data, case)
            if leaked:
                problems.append(f"planted secret in the record: {leaked}")
        # The flow stays writable to a -w file (metadata serializable).
        try:
            io.FlowWriter(_Sink()).add(f)
        except Exception as e:
            problems.append(f"flow no longer serializable: {type(e).__name__}: {e}")
        return problems


class _Sink:
    def write(self, data: bytes) -> int:
        return len(data)


def _planted(data: bytes, case: Case) -> list[str]:
    """Planted secrets that are still readable in a record (only where redaction is promised)."""
    text = data.decode("utf-8", "replace")
    found = [m for m in re.findall(SECRET + r"-[a-z0-9]+", text)]
    if not found:
        return []
    # Body fields are promised only when the body still is the JSON object they were planted in.
    try:
        doc = orjson.loads(case.raw)
    except orjson.JSONDecodeError:
        doc = None
    promised = {"auth", "xkey", "apikey", "cookie", "proxy", "q1", "q2", "q3"}
    if isinstance(doc, dict) and doc.get("api_key") == f"sk-{SECRET}-body":
        promised.add("body")
    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict) and doc["metadata"].get("token"):
        promised.add("meta")
    return sorted({f for f in found if f.split("-", 1)[1] in promised})
