"""A scripted fake model server on loopback, for driving real agent clients offline.

    from fakemodel import FakeModel, ToolCall

    with FakeModel(tool_call=ToolCall("Bash", {"command": "echo hi"})) as fm:
        run_the_client(base_url=fm.base_url)          # e.g. http://127.0.0.1:PORT
        result = fm.tool_result()                     # what the client sent back for the call
        fm.requests                                   # every request, decoded (Request objects)

Dialects (chosen by path, the way the real APIs are addressed):

- OpenAI Chat Completions: ``POST .../chat/completions`` (``stream: true`` -> SSE chunks,
  else one JSON);
- Anthropic Messages: ``POST .../v1/messages`` (SSE events as Anthropic sends them, or one
  JSON); ``.../messages/count_tokens`` answers a token count;
- OpenAI Responses: ``POST .../responses`` (SSE, or one JSON when ``stream`` is false) and
  Responses over WebSocket: ``GET .../responses`` with ``Upgrade: websocket``; each
  ``response.create`` text frame is one model call, answered by the same events as the
  SSE stream, one event per text frame;
- Gemini API: ``POST /v1beta/models/{model}:generateContent`` (one JSON),
  ``:streamGenerateContent?alt=sse`` (SSE; without ``alt=sse`` a JSON array),
  ``:countTokens``.

The script: a model call that offers tools is answered with ONE call of ``tool_call``,
at most ``max_tool_calls`` times per server (default 1); the model call after that (it
carries the tool result) ends the turn with ``final_text``. With a function as
``tool_call`` and ``max_tool_calls=N``, a client can be walked through N calls in turn,
one per model turn (returning None ends the turn early).
A call without tools (titles, summaries, next-speaker checks) gets ``side_text``, as
JSON when the request asks for JSON output.

``tool_call`` may be a :class:`ToolCall` or a function ``(Request) -> ToolCall`` that
picks from the tools the client offered (``request.tool_names``).

Every request is kept, decoded (Content-Encoding gzip/deflate/br/zstd undone, JSON
parsed), in ``fm.requests``; ``fm.model_calls`` are those that reached a model
endpoint. Only the standard library (zstandard/brotli if present: mitmproxy brings them).
``stop()`` (or leaving the ``with``) closes every connection and joins every thread.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import http.server
import json
import socket
import socketserver
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["FakeModel", "Request", "ToolCall"]

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@dataclass(frozen=True)
class ToolCall:
    """The one tool call the fake model makes. ``arguments`` is a JSON object; ``raw_input``
    (a string) makes it a Responses ``custom_tool_call`` (freeform tools such as apply_patch)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_input: str | None = None
    # Responses only: "shell_call" / "local_shell_call" make the call that item, with
    # ``arguments`` as its ``action`` (the hosted shell tools of the OpenAI Agents SDK).
    item_type: str | None = None


@dataclass
class Request:
    """One request as the fake model received it."""

    method: str
    path: str  # with the query string
    headers: dict[str, str]  # lower-cased names; repeated headers joined with ", "
    body: Any  # parsed JSON, or text, or None
    transport: str = "http"  # "http" or "ws" (one response.create frame)
    dialect: str | None = None  # chat, anthropic, responses, gemini; None for other endpoints
    answer: str | None = None  # "tool_call", "final", "side" (what the fake model answered)
    call_id: str | None = None  # the id of the tool call it answered with
    time: float = field(default_factory=time.time)

    @property
    def tools(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        tools = self.body.get("tools") or []
        if self.dialect == "gemini":
            out: list[dict[str, Any]] = []
            for t in tools:
                if isinstance(t, dict):
                    out.extend(t.get("functionDeclarations") or t.get("function_declarations") or [])
            return out
        return [t for t in tools if isinstance(t, dict)]

    @property
    def tool_names(self) -> list[str]:
        names = []
        for t in self.tools:
            name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
            if name:
                names.append(name)
        return names

    def tool(self, name: str) -> dict[str, Any] | None:
        for t in self.tools:
            if (t.get("name") or (t.get("function") or {}).get("name") or t.get("type")) == name:
                return t
        return None

    def tool_results(self) -> list[Any]:
        """The tool-result items/messages/parts in this request, exactly as sent."""
        return _tool_results(self.dialect, self.body)


def _tool_results(dialect: str | None, body: Any) -> list[Any]:
    if not isinstance(body, dict):
        return []
    out: list[Any] = []
    if dialect == "chat":
        out = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"]
    elif dialect == "anthropic":
        for m in body.get("messages") or []:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                out += [b for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    elif dialect == "responses":
        items = body.get("input")
        if isinstance(items, list):
            out = [i for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("_output")]
    elif dialect == "gemini":
        for c in body.get("contents") or []:
            if isinstance(c, dict):
                out += [p for p in c.get("parts") or [] if isinstance(p, dict) and "functionResponse" in p]
    return out


def _decode(data: bytes, encoding: str) -> bytes:
    for enc in reversed([e.strip().lower() for e in encoding.split(",") if e.strip()]):
        if enc == "gzip":
            data = gzip.decompress(data)
        elif enc == "deflate":
            try:
                data = zlib.decompress(data)
            except zlib.error:
                data = zlib.decompress(data, -zlib.MAX_WBITS)
        elif enc == "br":
            import brotli  # type: ignore[import-not-found]

            data = brotli.decompress(data)
        elif enc == "zstd":
            import zstandard  # type: ignore[import-not-found]

            data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        elif enc != "identity":
            raise ValueError(f"unknown content-encoding {enc}")
    return data


def _parse(data: bytes) -> Any:
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _dialect(method: str, path: str) -> str | None:
    p = urlsplit(path).path.rstrip("/")
    if p.endswith("/chat/completions"):
        return "chat"
    if p.endswith("/messages"):
        return "anthropic"
    if p.endswith("/responses"):
        return "responses"
    if ":generateContent" in p or ":streamGenerateContent" in p:
        return "gemini"
    return None


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


class FakeModel:
    """The scripted model server. See the module docstring."""

    def __init__(
        self,
        tool_call: ToolCall | Callable[[Request], ToolCall | None] | None = None,
        final_text: str = "Done.",
        side_text: str = "ok",
        max_tool_calls: int = 1,
        model: str = "fake-model",
    ) -> None:
        self.tool_call = tool_call
        self.final_text = final_text
        self.side_text = side_text
        self.max_tool_calls = max_tool_calls
        self.model = model
        self.requests: list[Request] = []
        self.calls_made: list[tuple[str, ToolCall]] = []  # (call id, call)
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._seq = 0

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModel:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fakemodel", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_all()
        server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what tests read -------------------------------------------------------------
    @property
    def model_calls(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.answer is not None]

    def tool_result(self) -> Any:
        """The tool result the client sent for the fake model's call (the first request that
        carries one; the item exactly as sent), or None."""
        found = self.tool_result_with_request()
        return found[0] if found else None

    def tool_result_with_request(self) -> tuple[Any, Request] | None:
        ids = {cid for cid, _ in self.calls_made}
        for r in self.model_calls:
            for item in r.tool_results():
                if not ids or _result_id(item) in ids or r.dialect == "gemini":
                    return item, r
        return None

    def first_tool_request(self) -> Request | None:
        """The first model call that offered tools (its tool definitions, headers)."""
        for r in self.model_calls:
            if r.tools:
                return r
        return None

    # ---- the script ------------------------------------------------------------------
    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._seq += 1
            return f"{prefix}{self._seq:03d}{uuid.uuid4().hex[:12]}"

    def decide(self, req: Request) -> tuple[str, ToolCall | None]:
        """What to answer: ("tool_call", call) / ("final", None) / ("side", None)."""
        if not req.tools:
            return "side", None
        with self._lock:
            made = len(self.calls_made)
        if made >= self.max_tool_calls or self.tool_call is None:
            return "final", None
        call = self.tool_call(req) if callable(self.tool_call) else self.tool_call
        if call is None:
            return "final", None
        return "tool_call", call

    def record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)

    def plan(self, req: Request, id_prefix: str) -> tuple[str, ToolCall | None, str | None]:
        answer, call = self.decide(req)
        cid = None
        if call is not None:
            cid = self._next_id(id_prefix)
            with self._lock:
                self.calls_made.append((cid, call))
        req.answer, req.call_id = answer, cid
        return answer, call, cid

    def text_for(self, req: Request, answer: str) -> str:
        if answer == "final":
            return self.final_text
        body = req.body if isinstance(req.body, dict) else {}
        wants_json = (
            (body.get("response_format") or {}).get("type") in ("json_object", "json_schema")
            or ((body.get("generationConfig") or {}).get("responseMimeType") == "application/json")
            or ((body.get("text") or {}).get("format") or {}).get("type") == "json_schema"
        )
        if wants_json:
            return json.dumps({"reasoning": "fake", "next_speaker": "user", "title": "fake", "summary": "fake"})
        return self.side_text


def _result_id(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    return item.get("tool_call_id") or item.get("tool_use_id") or item.get("call_id")


# ---- responses per dialect --------------------------------------------------------------------
def _chat_reply(
    fm: FakeModel, req: Request, answer: str, call: ToolCall | None, cid: str | None
) -> tuple[int, str, bytes]:
    body = req.body if isinstance(req.body, dict) else {}
    rid = f"chatcmpl-{uuid.uuid4().hex[:20]}"
    created = int(time.time())
    model = body.get("model") or fm.model
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if call is not None:
        args = json.dumps(call.arguments)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": cid, "type": "function", "function": {"name": call.name, "arguments": args}}],
        }
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": fm.text_for(req, answer)}
        finish = "stop"
    if not body.get("stream"):
        doc = {
            "id": rid,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }
        return 200, "application/json", json.dumps(doc).encode()

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    if call is not None:
        args = json.dumps(call.arguments)
        events.append(
            (
                None,
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": cid,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                ),
            )
        )
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            events.append((None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})))
    else:
        events.append((None, chunk({"content": message["content"]})))
    events.append((None, chunk({}, finish)))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(
            (
                None,
                {
                    "id": rid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                },
            )
        )
    events.append((None, "[DONE]"))
    return 200, "text/event-stream", _sse(events)


def _anthropic_reply(
    fm: FakeModel, req: Request, answer: str, call: ToolCall | None, cid: str | None
) -> tuple[int, str, bytes]:
    body = req.body if isinstance(req.body, dict) else {}
    mid = f"msg_{uuid.uuid4().hex[:24]}"
    model = body.get("model") or fm.model
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if call is not None:
        block: dict[str, Any] = {"type": "tool_use", "id": cid, "name": call.name, "input": call.arguments}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": fm.text_for(req, answer)}
        stop = "end_turn"
    if not body.get("stream"):
        doc = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return 200, "application/json", json.dumps(doc).encode()
    start_msg = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start_msg})]
    if call is not None:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": cid, "name": call.name, "input": {}},
                },
            )
        )
        events.append(("ping", {"type": "ping"}))
        args = json.dumps(call.arguments)
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    },
                )
            )
    else:
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        events.append(("ping", {"type": "ping"}))
        events.append(
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": block["text"]}},
            )
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return 200, "text/event-stream", _sse(events)


def _responses_events(
    fm: FakeModel, req: Request, answer: str, call: ToolCall | None, cid: str | None
) -> list[dict[str, Any]]:
    """The Responses stream events (each has its ``type``), SSE or WebSocket alike."""
    body = req.body if isinstance(req.body, dict) else {}
    rid = f"resp_{uuid.uuid4().hex[:24]}"
    model = body.get("model") or fm.model
    base = {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "previous_response_id": body.get("previous_response_id"),
        "error": None,
        "incomplete_details": None,
        "usage": None,
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    seq = iter(range(10_000))
    ev: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**base, "status": "in_progress"}},
        {"type": "response.in_progress", "response": {**base, "status": "in_progress"}},
    ]
    if call is not None:
        iid = f"fc_{uuid.uuid4().hex[:24]}"
        if call.item_type in ("shell_call", "local_shell_call"):
            action = dict(call.arguments)
            if call.item_type == "local_shell_call":
                action = {"type": "exec", "env": {}, **action}
            item = {"type": call.item_type, "id": iid, "call_id": cid, "action": action, "status": "completed"}
            ev.append(
                {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}}
            )
        elif call.raw_input is not None:
            item = {
                "type": "custom_tool_call",
                "id": iid,
                "call_id": cid,
                "name": call.name,
                "input": call.raw_input,
                "status": "completed",
            }
            ev.append(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "input": "", "status": "in_progress"},
                }
            )
            ev.append(
                {
                    "type": "response.custom_tool_call_input.delta",
                    "item_id": iid,
                    "output_index": 0,
                    "delta": call.raw_input,
                }
            )
            ev.append(
                {
                    "type": "response.custom_tool_call_input.done",
                    "item_id": iid,
                    "output_index": 0,
                    "input": call.raw_input,
                }
            )
        else:
            args = json.dumps(call.arguments)
            item = {
                "type": "function_call",
                "id": iid,
                "call_id": cid,
                "name": call.name,
                "arguments": args,
                "status": "completed",
            }
            ev.append(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            ev.append(
                {"type": "response.function_call_arguments.delta", "item_id": iid, "output_index": 0, "delta": args}
            )
            ev.append(
                {"type": "response.function_call_arguments.done", "item_id": iid, "output_index": 0, "arguments": args}
            )
        ev.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    else:
        text = fm.text_for(req, answer)
        iid = f"msg_{uuid.uuid4().hex[:24]}"
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"type": "message", "id": iid, "role": "assistant", "status": "completed", "content": [part]}
        ev.append(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            }
        )
        ev.append(
            {
                "type": "response.content_part.added",
                "item_id": iid,
                "output_index": 0,
                "content_index": 0,
                "part": {**part, "text": ""},
            }
        )
        ev.append(
            {"type": "response.output_text.delta", "item_id": iid, "output_index": 0, "content_index": 0, "delta": text}
        )
        ev.append(
            {"type": "response.output_text.done", "item_id": iid, "output_index": 0, "content_index": 0, "text": text}
        )
        ev.append(
            {"type": "response.content_part.done", "item_id": iid, "output_index": 0, "content_index": 0, "part": part}
        )
        ev.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    ev.append(
        {"type": "response.completed", "response": {**base, "status": "completed", "output": [item], "usage": usage}}
    )
    for e in ev:
        e["sequence_number"] = next(seq)
    return ev


def _responses_reply(
    fm: FakeModel, req: Request, answer: str, call: ToolCall | None, cid: str | None
) -> tuple[int, str, bytes]:
    events = _responses_events(fm, req, answer, call, cid)
    body = req.body if isinstance(req.body, dict) else {}
    if not body.get("stream"):  # the API's default is a single JSON response
        return 200, "application/json", json.dumps(events[-1]["response"]).encode()
    return 200, "text/event-stream", _sse([(e["type"], e) for e in events])


def _gemini_reply(
    fm: FakeModel, req: Request, answer: str, call: ToolCall | None, cid: str | None
) -> tuple[int, str, bytes]:
    if call is not None:
        parts: list[dict[str, Any]] = [{"functionCall": {"id": cid, "name": call.name, "args": call.arguments}}]
    else:
        parts = [{"text": fm.text_for(req, answer)}]
    doc = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": fm.model,
        "responseId": cid or uuid.uuid4().hex[:16],
    }
    split = urlsplit(req.path)
    if ":streamGenerateContent" in split.path:
        if parse_qs(split.query).get("alt") == ["sse"]:
            return 200, "text/event-stream", _sse([(None, doc)])
        return 200, "application/json", json.dumps([doc]).encode()
    return 200, "application/json", json.dumps(doc).encode()


_REPLIES = {"chat": _chat_reply, "anthropic": _anthropic_reply, "responses": _responses_reply, "gemini": _gemini_reply}
_ID_PREFIX = {"chat": "call_", "anthropic": "toolu_", "responses": "call_", "gemini": "gem_"}


# ---- the server -------------------------------------------------------------------------------
class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = True
    allow_reuse_address = True
    fake: FakeModel

    def __init__(self, *a: Any, **kw: Any) -> None:
        self.conns: set[socket.socket] = set()
        self.conns_lock = threading.Lock()
        super().__init__(*a, **kw)

    def process_request_thread(self, request: Any, client_address: Any) -> None:  # type: ignore[override]
        with self.conns_lock:
            self.conns.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.conns_lock:
                self.conns.discard(request)

    def close_all(self) -> None:
        with self.conns_lock:
            conns = list(self.conns)
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self.headers.items():
            k = k.lower()
            out[k] = f"{out[k]}, {v}" if k in out else v
        return out

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status: int, ctype: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("cache-control", "no-cache")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def do_GET(self) -> None:
        fm = self.server.fake
        headers = self._headers()
        if "websocket" in headers.get("upgrade", "").lower():
            self._websocket(headers)
            return
        fm.record(Request("GET", self.path, headers, None))
        path = urlsplit(self.path).path
        if path.endswith("/models"):
            doc = {
                "object": "list",
                "data": [{"id": fm.model, "object": "model", "created": 0, "owned_by": "fake"}],
                "models": [],
            }
            self._send(200, "application/json", json.dumps(doc).encode())
        else:
            self._send(404, "application/json", b'{"error": {"message": "not found", "type": "not_found"}}')

    def do_HEAD(self) -> None:
        self.server.fake.record(Request("HEAD", self.path, self._headers(), None))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        fm = self.server.fake
        headers = self._headers()
        raw = self._body()
        try:
            data = _decode(raw, headers.get("content-encoding", ""))
        except Exception as e:  # keep what came, say why
            data = raw
            headers["x-fakemodel-decode-error"] = repr(e)
        dialect = _dialect("POST", self.path)
        path = urlsplit(self.path).path
        req = Request("POST", self.path, headers, _parse(data), dialect=dialect)
        if path.endswith("/count_tokens"):
            req.dialect = None
            fm.record(req)
            self._send(200, "application/json", b'{"input_tokens": 10}')
            return
        if path.endswith(":countTokens"):
            req.dialect = None
            fm.record(req)
            self._send(200, "application/json", b'{"totalTokens": 10}')
            return
        if dialect is None:
            fm.record(req)
            self._send(404, "application/json", b'{"error": {"message": "not found", "type": "not_found"}}')
            return
        answer, call, cid = fm.plan(req, _ID_PREFIX[dialect])
        fm.record(req)
        status, ctype, payload = _REPLIES[dialect](fm, req, answer, call, cid)
        self._send(status, ctype, payload)

    # ---- WebSocket (Responses) --------------------------------------------------------------
    def _websocket(self, headers: dict[str, str]) -> None:
        fm = self.server.fake
        fm.record(Request("GET", self.path, headers, None, transport="ws-upgrade"))
        key = headers.get("sec-websocket-key", "")
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        ws = _WebSocket(self.rfile, self.wfile)
        while True:
            msg = ws.receive()
            if msg is None:
                return
            body = _parse(msg if isinstance(msg, bytes) else msg.encode())
            req = Request("WS", self.path, headers, body, transport="ws", dialect="responses")
            if not isinstance(body, dict) or body.get("type") != "response.create":
                fm.record(req)
                continue
            req.body = {k: v for k, v in body.items() if k != "type"}
            req.headers = {**headers, "x-fakemodel-ws-frame-type": "response.create"}
            if body.get("generate") is False:  # a warm-up: no model output
                req.answer = "warmup"
                fm.record(req)
                events = _responses_events(fm, req, "side", None, None)
                events = [events[0], {**events[-1], "response": {**events[-1]["response"], "output": []}}]
            else:
                answer, call, cid = fm.plan(req, "call_")
                fm.record(req)
                events = _responses_events(fm, req, answer, call, cid)
            for e in events:
                ws.send_text(json.dumps(e, separators=(",", ":")))


class _WebSocket:
    """Just enough RFC 6455 for a server: masked client frames in, unmasked frames out."""

    def __init__(self, rfile: Any, wfile: Any) -> None:
        self.rfile, self.wfile = rfile, wfile

    def _read(self, n: int) -> bytes:
        data = self.rfile.read(n)
        if data is None or len(data) < n:
            raise EOFError
        return data

    def _frame(self) -> tuple[bool, int, bytes]:
        b1, b2 = self._read(2)
        fin, opcode = bool(b1 & 0x80), b1 & 0x0F
        n = b2 & 0x7F
        if n == 126:
            n = int.from_bytes(self._read(2), "big")
        elif n == 127:
            n = int.from_bytes(self._read(8), "big")
        mask = self._read(4) if b2 & 0x80 else b""
        data = self._read(n) if n else b""
        if mask:
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return fin, opcode, data

    def receive(self) -> str | bytes | None:
        """The next text/binary message; None when the peer closed."""
        parts: list[bytes] = []
        kind = 0
        try:
            while True:
                fin, opcode, data = self._frame()
                if opcode == 0x8:  # close
                    with contextlib.suppress(OSError):
                        self._send(0x8, data[:2])
                    return None
                if opcode == 0x9:  # ping
                    self._send(0xA, data)
                    continue
                if opcode == 0xA:
                    continue
                if opcode in (0x1, 0x2):
                    kind, parts = opcode, [data]
                elif opcode == 0x0:
                    parts.append(data)
                if fin:
                    whole = b"".join(parts)
                    return whole.decode("utf-8", "replace") if kind == 0x1 else whole
        except (EOFError, OSError, ValueError):
            return None

    def _send(self, opcode: int, data: bytes) -> None:
        n = len(data)
        if n < 126:
            head = bytes([0x80 | opcode, n])
        elif n < 1 << 16:
            head = bytes([0x80 | opcode, 126]) + n.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 127]) + n.to_bytes(8, "big")
        self.wfile.write(head + data)
        self.wfile.flush()

    def send_text(self, text: str) -> None:
        self._send(0x1, text.encode())
