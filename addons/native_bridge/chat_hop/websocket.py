"""Responses over WebSocket: the chat hop for ``response.create`` client frames.

Codex CLI with the built-in OpenAI provider opens ``GET /v1/responses`` with
``Upgrade: websocket`` and sends each model call as one text frame
``{"type": "response.create", <Responses request fields>}`` (a warm-up frame with
``"generate": false`` first); the server answers with the Responses stream events,
one JSON text frame each. mitmproxy hands those frames to the ``websocket_message``
hook, never to ``request``: this module gives each client frame the same treatment
as an HTTP request body (same core, same truth rules, observe/rewrite modes, fail
open) and leaves the server's frames alone.

What a frame leaves behind, per message index ``i`` (its place in
``flow.websocket.messages``):

- ``flow.metadata["bridge_ws"][str(i)]``: the verdict (status, reason, summary), and
  for a rewritten frame the original content (``original``), which the views and
  ``bridge.diff`` compare with the frame as sent (inspect/websocket_view.py). An index
  present there is never bridged again: ``mitmdump -nr`` replays every
  ``websocket_message`` hook of a saved flow, whose frames are already the rewritten ones.
- one record per frame (``websocket_message`` = i, file name ``…-<flow id>-m<i>.json``).
- ``flow.comment`` / ``flow.marked`` for the flow as a whole: the latest frame's
  verdict, marked when any frame states a failure or kept unobserved calls.

``previous_response_id``: over a WebSocket Codex sends only the new items, so a frame's
outputs answer calls that the server holds (the previous response's output). Those calls
went through this very connection as server frames (``response.completed``'s output, or
``response.output_item.done`` events between ``response.created`` and the completion):
the calls answered in the frame are taken from there, by ``call_id`` (as the server sent
them, never guessed), put before the frame's items for the core, and taken out again of
the body written back (the server holds them). The pairs follow the same rules as any
other; the calls used are kept with the frame's verdict and its record
(``websocket_context``) so views and replays re-derive the same result.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from mitmproxy import http
from mitmproxy.proxy.layers.websocket import Fragmentizer

from ..core.dialects import responses
from ..core.pipeline import Config, Rewrite, rewrite
from ..runtime.worker import by_reference
from . import jobs
from .jobs import Outcome
from .verdict import announce, comment, error, record_job


class FrameHost(Protocol):
    """What a frame needs of the chat hop that saw it (chat_hop.addon.ChatHop), named here so
    that this module does not import the addon that imports it."""

    config: Config
    filter: Any
    memo: Any
    recorder: Any
    state: Any
    # the options read per frame, as its configure last saw them
    on: bool
    emit: bool
    max_body: int
    calm: int | None  # verdict.calm_level


logger = logging.getLogger(__name__)

WS_META = "bridge_ws"  # flow.metadata key: {str(message index): what the bridge did with that client frame}
FRAME_TYPE = "response.create"
_FRAME_MARK = FRAME_TYPE.encode()


def is_handshake(req: http.Request) -> bool:
    """A WebSocket opening handshake (a GET asking to become a WebSocket; RFC 6455 allows no other method)."""
    return req.method.upper() == "GET" and "websocket" in req.headers.get("upgrade", "").lower()


def model_call(content: bytes) -> dict[str, Any] | None:
    """The frame parsed, when it is a ``response.create`` model call (None: another frame, or not JSON)."""
    try:
        doc = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) and doc.get("type") == FRAME_TYPE else None


def frames(flow: http.HTTPFlow) -> dict[str, dict[str, Any]]:
    """What the bridge did with the client frames of this flow, by message index (as text)."""
    meta = flow.metadata.get(WS_META)
    return meta if isinstance(meta, dict) else {}


def bridged_indexes(flow: http.HTTPFlow) -> list[int]:
    """The message indexes of the client frames the bridge saw, in order."""
    n = len(flow.websocket.messages) if flow.websocket is not None else 0
    return sorted(int(k) for k in frames(flow) if k.isdigit() and int(k) < n)


def wire(body: bytes) -> bytes:
    """The rewritten frame as it can travel through mitmproxy unharmed.

    mitmproxy resends a modified message in ``Fragmentizer.FRAGMENT_SIZE`` byte chunks,
    each decoded on its own (``errors="replace"``): a multi-byte character cut at a chunk
    boundary would reach the server as U+FFFD. Non-ASCII characters can only be inside
    JSON strings, so writing them as ``\\uXXXX`` escapes sends the same JSON value, in
    ASCII that no cut can damage. A body short enough for one chunk goes as it is."""
    if len(body) <= Fragmentizer.FRAGMENT_SIZE or body.isascii():
        return body
    text = body.decode("utf-8")
    out = []
    for ch in text:
        o = ord(ch)
        if o < 0x80:
            out.append(ch)
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:  # a surrogate pair, as JSON spells characters beyond the BMP
            o -= 0x10000
            out.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}")
    return "".join(out).encode("ascii")


_DONE = ("response.completed", "response.incomplete", "response.failed", "response.done")
# The server events the context is read from; the many others (text deltas above all) are never parsed.
_EVENT_MARKS = tuple(f'"{t}"'.encode() for t in ("response.created", "response.output_item.done", *_DONE))


def _server_events(flow: http.HTTPFlow, stop: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The server's JSON events before message ``stop``, newest first, each parsed only when the
    caller gets that far (cheap byte checks first): a long session holds thousands of them."""
    assert flow.websocket is not None
    for j in range(stop - 1, -1, -1):
        m = flow.websocket.messages[j]
        if m.from_client or not m.is_text or not any(mark in m.content for mark in _EVENT_MARKS):
            continue
        try:
            doc = orjson.loads(m.content)
        except orjson.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            yield j, doc


def _rid(doc: dict[str, Any]) -> Any:
    r = doc.get("response")
    return r.get("id") if isinstance(r, dict) else None


def _calls_of(events: Iterable[tuple[int, dict[str, Any]]], response_id: str) -> list[dict[str, Any]] | None:
    """The call items of the response ``response_id`` among the server's events (newest first):
    its completion's output, else the items done since it was created; None: the response is
    not among them. Reads the events only as far back as that response."""

    def calls(items: Any) -> list[dict[str, Any]]:
        items = items if isinstance(items, list) else []
        return [it for it in items if responses.item_type(it) in responses.CALLS]

    seen: list[dict[str, Any]] = []  # the events read so far, newest first
    done = start = None
    for _, d in events:
        k = len(seen)
        seen.append(d)
        kind = d.get("type")
        if done is None and kind in _DONE and _rid(d) == response_id:
            done = k
            output = d["response"].get("output")
            if isinstance(output, list) and output:
                return calls(output)
        elif start is None and kind == "response.created" and _rid(d) == response_id:
            start = k
        if done is not None and start is not None:
            break
    if start is None:
        return None
    between = seen[done if done is not None else 0 : start]  # the events of that response, newest first
    return calls([d.get("item") for d in reversed(between) if d.get("type") == "response.output_item.done"])


def previous_calls(flow: http.HTTPFlow, index: int, response_id: str) -> list[dict[str, Any]] | None:
    """The call items of the response ``response_id`` as the server sent them on this WebSocket
    before message ``index`` (None: the response is not on this connection)."""
    return _calls_of(_server_events(flow, index), response_id)


def held_calls(flow: http.HTTPFlow, index: int) -> dict[str, list[dict[str, Any]]]:
    """The call items of every response the server sent on this WebSocket before message
    ``index``, by response id (what a frame bridged in the worker may answer)."""
    events = list(_server_events(flow, index))  # parsed once for every response
    ids = {r for _, d in events if isinstance(r := _rid(d), str)}
    return {r: calls for r in ids if (calls := _calls_of(events, r)) is not None}


def answered_context(
    doc: Any, held: Callable[[str], list[dict[str, Any]] | None]
) -> tuple[list[dict[str, Any]], str | None]:
    """The server-held calls that the frame's outputs answer (``held``: a response id's calls,
    None when the response is not on this connection), and the response they came from."""
    prev = doc.get("previous_response_id") if isinstance(doc, dict) else None
    items = doc.get("input") if isinstance(doc, dict) else None
    if not isinstance(prev, str) or not prev or not isinstance(items, list):
        return [], None
    answered = {
        c for it in items if responses.item_type(it) in responses.RESULTS and isinstance(c := it.get("call_id"), str)
    }
    if not answered:
        return [], None
    return [c for c in held(prev) or [] if c.get("call_id") in answered], prev


def context_for(flow: http.HTTPFlow, index: int, doc: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The server-held calls that the frame's outputs answer, and the response they came from."""
    return answered_context(doc, lambda prev: previous_calls(flow, index, prev))


def bridge_body(
    raw: bytes,
    context: list[dict[str, Any]],
    config: Config,
    path: str | None,
    memo: Any = None,
    client_hint: str | None = None,
    emit: bool = True,
) -> Rewrite:
    """The core's rewrite of one frame (``emit`` False: observe mode, no body written); with
    ``context`` (server-held calls), those calls come first for the core and are taken out of
    the body again (the server holds them)."""
    if not context:
        return rewrite(raw, config, path, memo, client_hint, emit=emit)
    doc = orjson.loads(raw)
    body = {**doc, "input": [*context, *doc["input"]]}
    result = rewrite(orjson.dumps(body), config, path, None, client_hint, emit=emit)
    result.notes.append(
        f"previous_response_id: {len(context)} call(s) it answers taken from that response, "
        "as the server sent it on this WebSocket"
    )
    if result.body is None:
        return result
    new = orjson.loads(result.body)
    items, left, k = new["input"], list(context), 0
    while k < len(items) and left and items[k] == left[0]:  # kept calls: at the front, in order
        left.pop(0)
        items.pop(k)
    ids = {c.get("call_id") for c in context}
    if any(
        responses.item_type(it) in responses.CALLS and isinstance(c := it.get("call_id"), str) and c in ids
        for it in items
    ):
        raise ValueError("a server-held call stayed inside the rewritten input")
    result.body = orjson.dumps(new)
    return result


def on_message(hop: FrameHost, flow: http.HTTPFlow) -> Awaitable[None] | None:
    """The ``websocket_message`` hook: bridge the newest message when it is a selected client frame.
    The dispatch decides where (runtime/dispatch.py): a frame of ``OFFLOAD_BYTES`` or more is read
    and bridged in the worker process, and then this returns an awaitable (mitmproxy holds the
    frame until it is done) while the loop serves the rest."""
    ws = flow.websocket
    if not hop.on or ws is None or not ws.messages:
        return None
    message = ws.messages[-1]
    if not message.from_client or not message.is_text or message.dropped:
        return None
    index = len(ws.messages) - 1
    if str(index) in frames(flow):  # bridged before (a replay of a saved flow): never twice
        return None
    if hop.filter is None or not hop.filter(flow):
        return None
    return hop.state.dispatch.run(_Frame(hop, flow, index))


def frame_outcome(
    raw: bytes,
    context: list[dict[str, Any]],
    config: Config,
    path: str | None,
    memo: Any,
    hint: str | None,
    emit: bool,
    record: bool,
) -> tuple[Outcome, bytes | None]:
    """One frame bridged (on the loop or in the worker): the outcome, and the frame to send
    instead (None: the frame goes as the client sent it)."""
    out = jobs.outcome(bridge_body(raw, context, config, path, memo, hint, emit), config.tool_kinds, record)
    if out.status != "rewritten":
        return out, None
    assert out.body is not None
    return out, wire(out.body)


@dataclass(frozen=True, slots=True)
class FrameJob:
    """A large client frame for the worker: it is parsed there, and its outputs matched with
    the server-held calls of the responses on this connection (``held``, by response id)."""

    raw: bytes
    held: dict[str, list[dict[str, Any]]]
    config: Config
    path: str | None
    hint: str | None
    emit: bool
    record: bool

    __reduce__ = by_reference  # the frame crosses to the worker without a copy

    def run(self, memo: Any) -> FrameDone | None:
        """The worker's part (offload.work calls it): :func:`frame_work`."""
        return frame_work(self, memo)


FrameDone = tuple[list[dict[str, Any]], Outcome, bytes | None]  # context, outcome, frame to send


def frame_work(job: FrameJob, memo: Any) -> FrameDone | None:
    """The worker's part for a large frame: None when it is no model call, else what
    :func:`frame_outcome` gives. A failure raises (the worker reports it, the dispatch fails open)."""
    doc = model_call(job.raw)
    if doc is None:
        return None
    context, _ = answered_context(doc, job.held.get)
    del doc  # the core parses the frame again: not both at once (a frame may be 30 MB)
    out, sent = frame_outcome(job.raw, context, job.config, job.path, memo, job.hint, job.emit, job.record)
    return context, out, sent


@dataclass(frozen=True, slots=True)
class Done:
    """What became of a frame: its outcome (None: not a model call, nothing of the bridge's),
    the frame sent instead (None: as the client sent it) and the server-held calls it answers."""

    out: Outcome | None
    sent: bytes | None = None
    context: list[dict[str, Any]] = field(default_factory=list)


class _Frame:
    """One client frame as the dispatch runs it (runtime/dispatch.Work): observed or rewritten
    on the loop, or in the worker when large; annotated and recorded."""

    original = "frame"
    later = False  # the frame waits: a rewritten one replaces it
    wait = False

    def __init__(self, hop: FrameHost, flow: http.HTTPFlow, index: int) -> None:
        assert flow.websocket is not None
        self.hop, self.flow, self.index = hop, flow, index
        self.message = flow.websocket.messages[index]
        self.raw = self.message.content  # as the client sent it
        self.where = f"flow {flow.id} message {index}"
        self.size = len(self.raw)
        self.emit = hop.emit

    def prepare(self) -> Done | None:
        content, limit = self.raw, self.hop.max_body
        if _FRAME_MARK not in content:  # cheap: every frame the bridge wants names its type
            return Done(None)
        if len(content) > limit:
            return Done(Outcome("skipped", f"frame larger than bridge_max_body ({limit} bytes)"))
        return None  # whether it is a model call is known once parsed, here or in the worker

    def fresh(self) -> int:
        return self.size

    def here(self, whole: bool) -> Done:
        raw, req = self.raw, self.flow.request
        doc = model_call(raw)
        if doc is None:
            return Done(None)
        context, _ = context_for(self.flow, self.index, doc)
        del doc  # the core parses the frame again: not both at once
        ua, record = req.headers.get("user-agent"), self.hop.recorder is not None
        out, sent = frame_outcome(raw, context, self.hop.config, req.path, self.hop.memo, ua, self.emit, record)
        return Done(out, sent, context)

    async def away(self, dispatch: Any) -> Done:
        raw, req = self.raw, self.flow.request
        held = held_calls(self.flow, self.index) if b'"previous_response_id"' in raw else {}
        ua, record = req.headers.get("user-agent"), self.hop.recorder is not None
        done = await dispatch.worker.run(FrameJob(raw, held, self.hop.config, req.path, ua, self.emit, record))
        if done is None:
            return Done(None)  # not a model call: nothing of the bridge's
        context, out, sent = done
        return Done(out, sent, context)

    def failed(self, e: Exception) -> Done:
        return Done(error(e))

    def apply(self, done: Done) -> None:
        if done.sent is not None:
            self.message.content = done.sent  # the last step: on any failure before it the frame is untouched

    def account(self, done: Done) -> None:
        if done.out is not None:
            _annotate(self.hop, self.flow, self.index, self.raw, done.out, done.sent, done.context)


def _annotate(
    hop: FrameHost,
    flow: http.HTTPFlow,
    index: int,
    raw: bytes,
    result: Outcome,
    sent: bytes | None,
    context: list[dict[str, Any]],
) -> None:
    """Hand the observations over; the frame's verdict, log line and record."""
    if result.observations:  # what the client's results say, for the planner hop
        hop.state.store.observe(result.observations)
    announce(logger, flow, f"flow {flow.id} message {index}", result, hop.calm)
    line = comment(result, result.summary)
    entry: dict[str, Any] = {"status": result.status, "reason": result.reason, **result.summary}
    if sent is not None:
        entry["original"] = raw  # what the views and bridge.diff compare the frame with
    if context:
        entry["context"] = context  # the server-held calls the frame answers (views re-derive with them)
    flow.metadata.setdefault(WS_META, {})[str(index)] = entry
    flow.comment = f"bridge: websocket message {index}: {line.removeprefix('bridge: ')}"
    if hop.recorder is not None:
        timestamp = flow.websocket.messages[index].timestamp if flow.websocket else None
        hop.recorder.submit(
            record_job(
                flow, result, raw, line, timestamp=timestamp, websocket_message=index, websocket_context=context or None
            )
        )
