"""The chat hop's addon around the core: select flows, read (or rewrite), annotate, record."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence

from mitmproxy import ctx, exceptions, flowfilter, http

from ..core.kinds import KINDS, tool_map
from ..core.memo import LIGHT_FROM, Memo
from ..core.pipeline import DIALECTS, Config, Rewrite, rewrite
from ..evidence import Observation
from ..records.writer import Limits, Recorder, parse_age, parse_size, prepare_directory
from ..runtime import META
from ..runtime.dispatch import Dispatch
from ..runtime.h2c import H2CListener, is_planner
from ..runtime.later import (
    Original,
    after_forward,
    back_up,
    deferrable,
    keeps_backups,
    original,
    shows_flows,
    turn_running,
)
from ..runtime.state import BridgeState
from ..runtime.store import Store
from . import websocket
from .jobs import Job, Outcome, bridge, resume, sent_first
from .verdict import announce, calm_level, comment, error, record_job

logger = logging.getLogger(__name__)

# Chat Completions, Anthropic Messages and OpenAI Responses endpoints: ~u searches the whole URL, so the
# regex is anchored on the path's end and never looks past the "?" (a query string, /messages/count_tokens
# and /chat/completions/extra are not selected).
# Second branch: Responses over WebSocket (Codex), a GET /responses whose handshake the server accepted
# (~websocket: the flow carries a WebSocket); its client frames go to the websocket_message hook
# (websocket.py). A plain GET /responses (no upgrade) is not selected.
CHAT_URL = (
    r"^[^?#]*(/(chat/completions|messages|responses)"
    r"|/models/[^/?#:]+:(generateContent|streamGenerateContent))([?#]|$)"
)
WEBSOCKET_URL = r"^[^?#]*/responses([?#]|$)"
DEFAULT_FILTER = f'(~m POST & ~u "{CHAT_URL}") | (~websocket & ~m GET & ~u "{WEBSOCKET_URL}")'


class DefaultFilter:
    """DEFAULT_FILTER as mitmproxy evaluates it (the same regexes and case rule), with its URL
    regexes run on the request's path: they are meant for the path alone, and building the whole
    URL (``pretty_url``) is most of the filter's cost, about 25 µs on every chat request. The
    path alone decides: a ``Host`` header can neither select a request (``Host: x/messages?``,
    or ``Host: models`` before ``/gemini:generateContent``, would for ``~u``) nor hide one (a
    ``Host`` with a ``?`` in it)."""

    def __init__(self) -> None:
        case = flowfilter.maybe_ignore_case
        self.post, self.get = re.compile(b"POST", case), re.compile(b"GET", case)
        self.chat, self.websocket = re.compile(CHAT_URL, case), re.compile(WEBSOCKET_URL, case)

    def __call__(self, flow: http.HTTPFlow) -> bool:
        req = flow.request
        if self.post.search(req.data.method) and self.chat.search(req.path):
            return True
        return flow.websocket is not None and bool(self.get.search(req.data.method) and self.websocket.search(req.path))


def parse_tool_map(entries: Sequence[str]) -> dict[str, str]:
    """The bridge_tools option as a tool table (kinds.tool_map), refused with a message when malformed."""
    try:
        return tool_map(entries)
    except ValueError as e:
        raise exceptions.OptionsError(f"bridge_tools: {e}") from e


MAX_BODY = 32 * 1024 * 1024  # bridge_max_body's default

# observe: read the history, record what it states and hand it to the planner hop, send the body as it came.
# rewrite: also move the pairs that became steps into additional_steps (for a gateway that reads that field).
MODES = ("observe", "rewrite")


RECORD_OPTIONS = {
    "bridge_records",
    "bridge_records_max_record",
    "bridge_records_max_total",
    "bridge_records_max_age",
    "bridge_records_skipped_bodies",
}


def add_record_options(loader) -> None:
    loader.add_option(
        "bridge_records_max_record",
        str,
        "16M",
        "Largest record (e.g. 500K, 16M; 0: no cap): a larger one is written without its bodies.",
    )
    loader.add_option(
        "bridge_records_max_total",
        str,
        "2G",
        "Most the records directory holds (e.g. 500M, 2G; 0: no cap): the oldest records are removed beyond it.",
    )
    loader.add_option(
        "bridge_records_max_age",
        str,
        "14d",
        "Records older than this are removed (e.g. 12h, 14d, 2w; 0: kept forever).",
    )
    loader.add_option(
        "bridge_records_skipped_bodies",
        bool,
        False,
        "Record the content of bodies the bridge skipped (over bridge_max_body, streamed, ...); off: their size only.",
    )


def record_limits(opts) -> Limits:
    """The record options as limits, refused with a message when malformed."""
    values = {}
    for name, parse in (("max_record", parse_size), ("max_total", parse_size), ("max_age", parse_age)):
        try:
            values[name] = parse(getattr(opts, f"bridge_records_{name}"))
        except ValueError as e:
            raise exceptions.OptionsError(f"bridge_records_{name}: {e}") from e
    max_record, max_total, max_age = values["max_record"], values["max_total"], values["max_age"]
    if max_total and max_record and max_record > max_total:
        raise exceptions.OptionsError("bridge_records_max_record must not be larger than bridge_records_max_total")
    if max_total and not max_record:
        raise exceptions.OptionsError(
            "bridge_records_max_total needs bridge_records_max_record (one record could fill it)"
        )
    return Limits(max_record, max_total, max_age, opts.bridge_records_skipped_bodies)


def _header_values(req: http.Request) -> tuple[str | None, str | None]:
    """``Headers.get`` of content-encoding and user-agent, both read in one pass over the
    fields (folded with ", ", as mitmproxy folds them): the mapping's ``get`` makes about a
    dozen calls per lookup, on every chat request."""
    encoding: list[bytes] = []
    agent: list[bytes] = []
    for name, value in req.data.headers.fields:
        name = name.lower()
        if name == b"content-encoding":
            encoding.append(value)
        elif name == b"user-agent":
            agent.append(value)
    return (
        b", ".join(encoding).decode("utf-8", "surrogateescape") if encoding else None,
        b", ".join(agent).decode("utf-8", "surrogateescape") if agent else None,
    )


def decode(req: http.Request, limit: int, encoding: str | None) -> tuple[bytes | None, Rewrite | None]:
    """The decoded body (at most ``limit`` bytes: bridge_max_body), or why it cannot be rewritten;
    ``encoding``: its content-encoding header."""
    content = req.data.content
    if req.stream or content is None:
        return None, Rewrite("skipped", "body is streamed (stream_large_bodies), it cannot be rewritten")
    if len(content) > limit:
        return None, _too_big(limit)
    if not encoding:  # what get_content gives for a body sent as it is
        return content, None
    try:
        raw = req.get_content()
    except ValueError as e:
        return None, Rewrite("skipped", f"cannot decode the body: {e}")
    if raw is None or len(raw) > limit:
        return None, _too_big(limit)
    return raw, None


def _too_big(limit: int) -> Rewrite:
    return Rewrite("skipped", f"body larger than bridge_max_body ({limit} bytes)")


class ChatHop:
    record_limits = Limits()  # the bridge_records_* options (configure)

    def __init__(self, state: BridgeState | None = None, h2c: H2CListener | None = None) -> None:
        self._own_state = state is None  # a hop on its own (tests) stops the worker it started
        self.state = state or BridgeState()
        self.h2c = h2c  # the planner listeners: their gRPC flows are never chat requests
        self.config = Config()
        self.filter: flowfilter.TFilter | DefaultFilter | None = None
        self.recorder: Recorder | None = None
        # The conversations this addon has read: a resumed one costs only its new part. Light
        # (configure) in observe mode without records: then it holds about one body per conversation
        # (a long one's: a short history's entry stays whole, memo.LIGHT_FROM).
        self.memo = Memo()
        self._tees: dict[str, bytearray] = {}  # flow id → copy of a streamed SSE reply
        # The options read on every request, as configure last saw them (ctx.options copies a
        # value on each read).
        self.on, self.emit, self.max_body, self.stream_replies = True, False, MAX_BODY, True
        self.calm: int | None = logging.INFO  # verdict.calm_level
        self.backups = True  # a rewritten flow is backed up (later.keeps_backups)
        self.verdicts_at_reply = True  # a reply waits for its request's reading (later.shows_flows)

    def load(self, loader) -> None:
        loader.add_option("bridge", bool, True, "Bridge planner-bound chat requests (see bridge_mode).")
        loader.add_option(
            "bridge_mode",
            str,
            "observe",
            "observe: read each chat request's tool history, record it and share it with the planner hop; the "
            "body goes upstream untouched (safe in front of any gateway). rewrite: also move the pairs that "
            "became steps into additional_steps, for a gateway that reads that field.",
        )
        loader.add_option(
            "bridge_filter",
            str,
            DEFAULT_FILTER,
            "Flow filter choosing the planner-bound chat requests to rewrite.",
        )
        loader.add_option(
            "bridge_records",
            str | None,
            None,
            "Directory for one JSON record per selected request (before/after, steps, accounting). Unset: no records.",
        )
        loader.add_option(
            "bridge_kinds",
            Sequence[str],
            list(KINDS),
            f"Step kinds to bridge; pairs of other kinds stay messages. Choices: {', '.join(KINDS)}.",
        )
        loader.add_option(
            "bridge_tools",
            Sequence[str],
            [],
            "Extra tool-name mappings as name=kind (name= unmaps a default name).",
        )
        loader.add_option(
            "bridge_dialect",
            str,
            "auto",
            "Request dialect: auto (by path, then body shape), or one of: " + ", ".join(DIALECTS) + ".",
        )
        loader.add_option(
            "bridge_stream_replies",
            bool,
            True,
            "Pass the planner's text/event-stream replies to the client as they arrive, keeping a copy for the UI.",
        )
        loader.add_option(
            "bridge_max_body",
            int,
            MAX_BODY,
            "Largest request body (bytes, decoded) the bridge rewrites; larger ones pass untouched.",
        )
        add_record_options(loader)

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "bridge_filter" in updated:
            try:
                is_default = opts.bridge_filter == DEFAULT_FILTER
                self.filter = DefaultFilter() if is_default else flowfilter.parse(opts.bridge_filter)
            except ValueError as e:
                raise exceptions.OptionsError(f"bridge_filter: {e}") from e
        if updated & {"bridge_kinds", "bridge_tools", "bridge_dialect"}:
            unknown = sorted(set(opts.bridge_kinds) - set(KINDS))
            if unknown:
                raise exceptions.OptionsError(f"bridge_kinds: unknown {', '.join(unknown)} (one of {', '.join(KINDS)})")
            if opts.bridge_dialect != "auto" and opts.bridge_dialect not in DIALECTS:
                choices = ", ".join(["auto", *DIALECTS])
                raise exceptions.OptionsError(f"bridge_dialect: {opts.bridge_dialect!r} is not one of {choices}")
            self.config = Config(frozenset(opts.bridge_kinds), parse_tool_map(opts.bridge_tools), opts.bridge_dialect)
        if "bridge_mode" in updated and opts.bridge_mode not in MODES:
            raise exceptions.OptionsError(f"bridge_mode: {opts.bridge_mode!r} is not one of {', '.join(MODES)}")
        if "bridge_max_body" in updated and opts.bridge_max_body <= 0:
            raise exceptions.OptionsError("bridge_max_body must be positive")
        if updated & RECORD_OPTIONS:
            self.record_limits = record_limits(opts)
            if self.recorder is not None and "bridge_records" not in updated:
                self.recorder.limits = self.record_limits
        if "bridge_records" in updated:
            if opts.bridge_records:
                try:  # a bad path is refused now, not at the first write after traffic has started
                    directory = prepare_directory(opts.bridge_records)
                except OSError as e:
                    message = f"bridge_records: cannot write records to {opts.bridge_records}: {e}"
                    raise exceptions.OptionsError(message) from e
            if self.recorder is not None:
                self.recorder.close()
                self.recorder = None
            if opts.bridge_records:
                self.recorder = Recorder(directory, isolate=True, limits=self.record_limits)
            self.state.recorder = self.recorder  # the planner hop writes there too, unless it has its own
        self.on, self.emit, self.max_body = opts.bridge, opts.bridge_mode == "rewrite", opts.bridge_max_body
        self.stream_replies, self.calm = opts.bridge_stream_replies, calm_level(opts)
        self.backups = keeps_backups(ctx.master, opts)
        self.verdicts_at_reply = shows_flows(ctx.master, opts)
        light = not self.emit and self.recorder is None
        if light != self.memo.light:  # a light memo can neither write a body nor record steps (memo.py)
            self.memo = Memo(light=light, light_from=LIGHT_FROM)
        if "stream_large_bodies" in updated and opts.stream_large_bodies and opts.bridge:
            logger.warning("bridge: stream_large_bodies is set; streamed request bodies cannot be rewritten")

    def done(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        if self._own_state:
            self.state.dispatch.close()

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        if not self.on or META in flow.metadata:
            return
        if flow.live and (flow.response or flow.error):
            return
        if self.h2c is not None and is_planner(flow.client_conn, self.h2c.specs):
            return
        if flow.websocket is not None or websocket.is_handshake(flow.request):
            return  # a WebSocket's frames are its requests: websocket_message
        if self.filter is None or not self.filter(flow):
            return
        return self.run(flow)

    def websocket_message(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        return websocket.on_message(self, flow)  # Responses over WebSocket: response.create client frames

    def responseheaders(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        reading = self.state.readings.get(flow.id)
        if reading is not None and self.verdicts_at_reply:
            # The reply waits for the reading: a -w capture and mitmweb see its verdict. mitmdump
            # without either shows no flow, so its reply goes on (the verdict follows it: the log
            # line, the record; a planner call waits for the reading itself).
            return self._after(reading, lambda: self._stream(flow))
        self._stream(flow)
        return None

    def readings(self) -> list[asyncio.Future[None]]:
        """The chat requests still being read in the worker (the planner hop waits for them)."""
        return list(self.state.readings.values())

    @staticmethod
    async def _after(reading: asyncio.Future[None], then: Callable[[], None]) -> None:
        await asyncio.shield(reading)  # a reply or connection that ends must not cancel the reading
        then()

    def _stream(self, flow: http.HTTPFlow) -> None:
        # mitmproxy buffers a reply unless told to stream it: an agent waiting on SSE
        # would see nothing until the planner finished.
        resp = flow.response
        if META not in flow.metadata or not self.stream_replies or resp is None or resp.stream:
            return
        if resp.raw_content is not None:  # already whole (server replay, -nr, an addon's reply): nothing streams
            return
        if not resp.headers.get("content-type", "").startswith("text/event-stream"):
            return
        if ctx.options.store_streamed_bodies:
            resp.stream = True  # mitmproxy keeps the copy itself
            return
        copy = self._tees[flow.id] = bytearray()

        def tee(chunk: bytes) -> bytes:
            copy.extend(chunk)
            return chunk

        resp.stream = tee

    def response(self, flow: http.HTTPFlow) -> None:
        copy = self._tees.pop(flow.id, None)
        if copy is not None and flow.response is not None:
            flow.response.raw_content = bytes(copy)  # the reply as streamed, for mitmweb and -w files
        self._turn_over(flow)

    def error(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        self._tees.pop(flow.id, None)
        reading = self.state.readings.get(flow.id)
        if reading is not None:  # its verdict, and so its record, comes with the reading
            return self._after(reading, lambda: self._turn_over(flow))
        self._turn_over(flow)
        return None

    def _turn_over(self, flow: http.HTTPFlow) -> None:
        """The record held since the verdict (account) goes to the writer once the reply is out."""
        if self.recorder is not None and META in flow.metadata:  # a flow the hop bridged
            recorder, flow_id = self.recorder, flow.id
            after_forward(lambda: recorder.release(flow_id))

    def run(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        """Bridge one selected flow; the dispatch decides where and when (runtime/dispatch.py):
        an awaitable when the request waits for a reading in the worker process."""
        return self.state.dispatch.run(_Request(self, flow))

    def account(self, flow: http.HTTPFlow, raw: bytes | None, out: Outcome, came: Original | None = None) -> None:
        """The backup of a rewritten flow (mitmweb's revert: ``came``, the request as it came),
        the verdict on the flow (mark, comment, metadata), its log line and its record."""
        if came is not None:
            back_up(flow, came)
        announce(logger, flow, f"flow {flow.id}", out, self.calm)
        flow.comment = comment(out, out.summary)
        flow.metadata[META] = {"status": out.status, "reason": out.reason, **out.summary}
        if self.recorder is not None:
            before = raw if raw is not None else flow.request.raw_content
            # Not rewritten, not recorded: its size and conversation, not 40 MB of it.
            omit = out.status == "skipped" and not self.record_limits.skipped_bodies
            # Rendered once the turn is over (its reply written out): not on the turn's CPU.
            self.recorder.submit(record_job(flow, out, before, flow.comment, omit_before=omit), held=turn_running(flow))


class _Request:
    """One chat request as the dispatch runs it (runtime/dispatch.Work): decoded, read on the loop
    (its new part only, when a large history goes on from the memo) or in the worker, applied
    (observations; the new body in rewrite mode) and accounted."""

    original = "request"
    wait = False

    def __init__(self, hop: ChatHop, flow: http.HTTPFlow) -> None:
        self.hop, self.flow = hop, flow
        self.where = f"flow {flow.id}"
        self.emit = emit = hop.emit
        goes, shared = deferrable(flow), hop.state.store.shared
        # Observe mode: the body goes as it came, so it need not wait for the reading; the planner
        # hop waits for it (this process's for its task; with a shared state file, another
        # process's for the end its log records: begun in prepare, ended in apply).
        self.later = goes and not emit
        # Rewrite mode with the state in this process: only the new body is needed before the
        # request goes; the verdict, the observations and the memo's new entry wait (account).
        self.defer = goes and emit and not shared
        self.size = 0
        self.job: Job | None = None
        self.came: Original | None = None
        self.begun = 0  # the shared store's token for this reading, until its end is written
        self.began: Store | None = None

    @property
    def raw(self) -> bytes | None:
        """The decoded body (None: it could not be read)."""
        return self.job.raw if self.job is not None else None

    def prepare(self) -> Outcome | None:
        req = self.flow.request
        encoding, ua = _header_values(req)
        raw, skipped = decode(req, self.hop.max_body, encoding)
        if skipped is not None:
            return Outcome(skipped.status, skipped.reason)
        assert raw is not None
        self.size = len(raw)
        self.job = Job(raw, self.hop.config, req.path, ua, emit=self.emit, record=self.hop.recorder is not None)
        store = self.hop.state.store
        if self.later and store.shared:
            self.began = store  # its end goes there, even if bridge_state changes meanwhile
            self.begun = store.begin(self.size)
        return None

    def fresh(self) -> int:
        # A conversation this process holds: only its new part is read (a light memo; rewriting
        # and recording keep whole entries in the worker, and the new body is written whole).
        memo = self.hop.memo
        return self.size - memo.continues(self.raw or b"") if memo.light else self.size

    def here(self, whole: bool) -> Outcome | None:
        assert self.job is not None
        if self.defer:
            return sent_first(self.job, self.hop.memo, whole, rewrite)
        return bridge(self.job, self.hop.memo, rewrite) if whole else resume(self.job, self.hop.memo)

    async def away(self, dispatch: Dispatch) -> Outcome:
        assert self.job is not None and self.raw is not None
        out = await dispatch.worker.run(self.job)
        memo = self.hop.memo
        if out.entry is not None and memo.light:  # the worker's reading of this conversation
            memo.adopt(out.entry, self.raw)
            out.entry = None
        return out

    def failed(self, e: Exception) -> Outcome:
        return error(e)

    def apply(self, out: Outcome) -> None:
        if self.begun:
            self._end(out.observations)
        elif out.observations:
            self.hop.state.store.observe(out.observations)
        if out.status == "rewritten":
            assert out.body is not None
            came = original(self.flow.request) if self.hop.backups else None
            self.flow.request.set_content(out.body)  # encodes first: on failure the request is unchanged
            self.came = came

    def _end(self, observations: list[Observation]) -> None:
        """The reading's observations and its end, in one record of the shared store. Its end
        alone (a failed reading's) is worth a try only: else it ends when its time is up."""
        assert self.began is not None
        try:
            self.began.observe(observations, ended=self.begun)
        except Exception:
            if observations:
                raise  # the dispatch fails open, then applies the failed result: its end alone
            logger.exception(
                f"bridge: {self.where}: cannot say the reading ended; a planner hop waits until its time is up"
            )
        self.begun = 0

    def account(self, out: Outcome) -> None:
        if out.later is not None:
            out = self._rest(out)
        self.hop.account(self.flow, self.raw, out, self.came)

    def _rest(self, out: Outcome) -> Outcome:
        """What waited until the request had gone (a deferred Outcome's observations and entry);
        fails open like the dispatch, the request having gone as decided."""
        try:
            assert out.later is not None
            later, out.later = out.later, None
            later()
            if out.observations:
                self.hop.state.store.observe(out.observations)
        except Exception:
            logger.exception(f"bridge: {self.where}: reading failed after the request went upstream")
            out.observations = []  # the body went as decided, its verdict stands: only the rest is lost
        return out
