"""The chat hop's addon: its options, and hooks that only select flows and hand each chat
request (request.py) or client frame (websocket.py) to the shared dispatch, and the reply's
events back (the stream, the record held until the reply is out)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Sequence

from mitmproxy import ctx, exceptions, flowfilter, http

from ..core.kinds import KINDS, tool_map
from ..core.memo.store import LIGHT_FROM, Memo
from ..core.pipeline import DIALECTS, Config
from ..records.writer import Limits, Recorder, parse_age, parse_size, prepare_directory
from ..runtime import META
from ..runtime.h2c import H2CListener, is_planner
from ..runtime.later import after_forward, keeps_backups, shows_flows
from ..runtime.state import BridgeState
from . import websocket
from .request import ChatRequest, ChatSettings
from .verdict import calm_level

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


# observe: read the history, record what it states and hand it to the planner hop, send the body as it came.
# rewrite: also move the pairs that became steps into additional_steps (for a gateway that reads that field).
MODES = ("observe", "rewrite")


RECORD_OPTIONS = frozenset(
    {
        "bridge_records",
        "bridge_records_max_record",
        "bridge_records_max_total",
        "bridge_records_max_age",
        "bridge_records_skipped_bodies",
    }
)


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


class Tee:
    """A streamed SSE reply's copy, kept on the reply itself (``resp.stream``) while it streams."""

    __slots__ = ("copy",)

    def __init__(self) -> None:
        self.copy = bytearray()

    def __call__(self, chunk: bytes) -> bytes:
        self.copy.extend(chunk)
        return chunk


class ChatHop:
    """The chat hop's addon: its options, and its hooks, each a translation of a mitmproxy event
    into the request or frame it concerns (chat_hop/request.py, websocket.py), which the shared
    dispatch runs (runtime/dispatch.py), and back."""

    def __init__(self, state: BridgeState | None = None, h2c: H2CListener | None = None) -> None:
        # A hop on its own (tests) loads, configures and stops the shared state it made.
        self._own_state = state is None
        self.state = state or BridgeState()
        self.h2c = h2c  # the planner listeners: their gRPC flows are never chat requests
        self.filter: flowfilter.TFilter | DefaultFilter | None = None
        self.settings = ChatSettings()  # the options each request reads, as configure last saw them
        self.record_limits = Limits()  # the bridge_records_* options

    @property
    def config(self) -> Config:
        return self.settings.config

    @config.setter
    def config(self, config: Config) -> None:
        """The requests selected from now on read with ``config`` (configure makes it from the options)."""
        self.settings = dataclasses.replace(self.settings, config=config)

    @property
    def memo(self) -> Memo:
        """The conversations this hop has read (the shared state's)."""
        return self.state.memo

    @property
    def recorder(self) -> Recorder | None:
        """The record writer (bridge_records), the shared state's: the planner hop writes there too."""
        return self.state.recorder

    @recorder.setter
    def recorder(self, recorder: Recorder | None) -> None:
        self.state.recorder = recorder

    # ---- options --------------------------------------------------------------------------------

    def load(self, loader) -> None:
        if self._own_state:
            self.state.load(loader)
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
        add_record_options(loader)

    def configure(self, updated: set[str]) -> None:
        if self._own_state:
            self.state.configure(updated)
        opts = ctx.options
        config = self.settings.config
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
            config = Config(frozenset(opts.bridge_kinds), parse_tool_map(opts.bridge_tools), opts.bridge_dialect)
        if "bridge_mode" in updated and opts.bridge_mode not in MODES:
            raise exceptions.OptionsError(f"bridge_mode: {opts.bridge_mode!r} is not one of {', '.join(MODES)}")
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
            if opts.bridge_records:  # the planner hop writes there too, unless it has its own
                self.recorder = Recorder(directory, isolate=True, limits=self.record_limits)
        emit = opts.bridge_mode == "rewrite"
        self.settings = ChatSettings(
            config,
            emit,
            calm_level(opts),
            keeps_backups(ctx.master, opts),
            self.record_limits.skipped_bodies,
            opts.bridge_stream_replies,
            getattr(opts, "store_streamed_bodies", False),  # mitmproxy's (its StreamBodies addon); absent in tests
            shows_flows(ctx.master, opts),
        )
        light = not emit and self.recorder is None
        if light != self.memo.light:  # a light memo can neither write a body nor record steps (core/memo/light.py)
            self.state.memo = Memo(light=light, light_from=LIGHT_FROM)
        if "stream_large_bodies" in updated and opts.stream_large_bodies and opts.bridge:
            logger.warning("bridge: stream_large_bodies is set; streamed request bodies cannot be rewritten")

    def done(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        if self._own_state:
            self.state.done()

    # ---- hooks: mitmproxy's events in, the request's or frame's stages out ----------------------

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        """A selected chat request, run by the dispatch: an awaitable when the request waits for
        a reading in the worker process (mitmproxy awaits it)."""
        if not self.state.on or META in flow.metadata:
            return None
        if flow.live and (flow.response or flow.error):
            return None
        if self.h2c is not None and is_planner(flow.client_conn, self.h2c.specs):
            return None
        if flow.websocket is not None or websocket.is_handshake(flow.request):
            return None  # a WebSocket's frames are its requests: websocket_message
        if self.filter is None or not self.filter(flow):
            return None
        return self.state.dispatch.run(ChatRequest(flow, self.settings, self.state))

    def websocket_message(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        """Responses over WebSocket: the newest message, when it is a client frame to bridge
        (websocket.py), run by the dispatch; an awaitable while a large one is read in the worker
        (mitmproxy holds the frame until it is done)."""
        if not self.state.on:
            return None
        index = websocket.new_client_frame(flow)
        if index is None or self.filter is None or not self.filter(flow):
            return None
        return self.state.dispatch.run(websocket.ClientFrame(flow, index, self.settings, self.state))

    def responseheaders(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        reading = self.state.dispatch.readings.get(flow.id)
        if reading is not None and self.settings.verdicts_at_reply:
            # The reply waits for the reading: a -w capture and mitmweb see its verdict. mitmdump
            # without either shows no flow, so its reply goes on (the verdict follows it: the log
            # line, the record; a planner call waits for the reading itself).
            return self._after(reading, lambda: self._stream(flow))
        self._stream(flow)
        return None

    def readings(self) -> list[asyncio.Future[None]]:
        """The chat requests still being read in the worker (the planner hop waits for them)."""
        return list(self.state.dispatch.readings.values())

    @staticmethod
    async def _after(reading: asyncio.Future[None], then: Callable[[], None]) -> None:
        await asyncio.shield(reading)  # a reply or connection that ends must not cancel the reading
        then()

    def _stream(self, flow: http.HTTPFlow) -> None:
        # mitmproxy buffers a reply unless told to stream it: an agent waiting on SSE
        # would see nothing until the planner finished.
        resp = flow.response
        if not self.settings.stream_replies or resp is None or resp.stream:
            return
        if META not in flow.metadata and not self.state.dispatch.busy(flow.id):  # not a flow the hop bridges
            return
        if resp.raw_content is not None:  # already whole (server replay, -nr, an addon's reply): nothing streams
            return
        if not resp.headers.get("content-type", "").startswith("text/event-stream"):
            return
        if self.settings.store_streamed:
            resp.stream = True  # mitmproxy keeps the copy itself
            return
        resp.stream = Tee()

    def response(self, flow: http.HTTPFlow) -> None:
        resp = flow.response
        if resp is not None and isinstance(resp.stream, Tee):
            resp.raw_content = bytes(resp.stream.copy)  # the reply as streamed, for mitmweb and -w files
        self._turn_over(flow)

    def error(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        reading = self.state.dispatch.readings.get(flow.id)
        if reading is not None:  # its verdict, and so its record, comes with the reading
            return self._after(reading, lambda: self._turn_over(flow))
        self._turn_over(flow)
        return None

    def _turn_over(self, flow: http.HTTPFlow) -> None:
        """A reading that waited for the reply begins; the record held since the verdict
        (account) goes to the writer once the reply is out."""
        self.state.dispatch.replied(flow.id)
        if self.recorder is not None and META in flow.metadata:  # a flow the hop bridged
            recorder, flow_id = self.recorder, flow.id
            after_forward(lambda: recorder.release(flow_id))
