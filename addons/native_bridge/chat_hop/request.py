"""One chat request, the one object that holds everything about it from the hook that selected
it to its verdict; runtime/dispatch.py drives it through its stages (addons/README.md):

``SELECTED`` (the hook chose it) → ``READY`` (:meth:`ChatRequest.prepare`: decoded, its job
made; a body it cannot read is ``DECIDED`` at once, skipped) → ``DECIDED`` (read on the loop,
its new part only when a large history goes on from the memo, or in the worker; or failed open)
→ ``APPLIED`` (:meth:`~ChatRequest.apply`: the observations handed over, the new body set in
rewrite mode) → ``ACCOUNTED`` (:meth:`~ChatRequest.account`: the backup, the verdict on the
flow, its log line and its record).

When it reads, and what waits until it has gone upstream, is fixed when it is selected:
``goes_first`` (observe mode: the body goes as it came, the reading follows it) or ``splits``
(rewrite mode with the state in this process: the new body now, the rest once it has gone);
``after_reply`` when nothing but the next request or a planner call of this process waits for
the rest: it then waits for the reply (runtime/STATE.md, "When the chat hop reads").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mitmproxy import http

from ..core.memo.store import Memo
from ..core.pipeline import Config, Rewrite, rewrite
from ..evidence import Observation
from ..runtime import META
from ..runtime import dispatch as dispatching
from ..runtime.dispatch import Dispatch, Request, Stage
from ..runtime.later import Original, back_up, deferrable, original, turn_running
from ..runtime.state import BridgeState
from ..runtime.store import Store
from .jobs import Job, Outcome, bridge, resume, sent_first
from .verdict import announce, comment, error, record_job

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """The chat hop's options as its configure last saw them, handed to each request it selects
    (``ctx.options`` copies a value on each read; a reading in the worker cannot read them)."""

    config: Config = field(default_factory=Config)
    emit: bool = False  # bridge_mode=rewrite: write the new body
    calm: int | None = logging.INFO  # verdict.calm_level
    backups: bool = True  # a rewritten flow is backed up (later.keeps_backups)
    skipped_bodies: bool = False  # bridge_records_skipped_bodies
    stream_replies: bool = True  # bridge_stream_replies
    store_streamed: bool = False  # store_streamed_bodies: mitmproxy keeps a streamed reply's copy itself
    verdicts_at_reply: bool = True  # a reply waits for its request's reading (later.shows_flows)


@dataclass(frozen=True, slots=True)
class Begun:
    """A reading begun in the shared store (a planner hop of another process waits for its end):
    its end goes to that store, even if bridge_state changes meanwhile."""

    store: Store
    token: int


def header_values(req: http.Request) -> tuple[str | None, str | None]:
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


class ChatRequest(Request[Outcome]):
    """One chat request (module docstring): a :class:`~runtime.dispatch.Work` for the dispatch."""

    def __init__(self, flow: http.HTTPFlow, settings: ChatSettings, state: BridgeState) -> None:
        super().__init__(flow, f"flow {flow.id}")
        self.settings, self.state = settings, state
        self.max_body = state.max_body
        goes, emit = deferrable(flow), settings.emit
        # Observe mode: the body goes as it came, so it need not wait for the reading; the planner
        # hop waits for it (this process's for its task; with a shared state file, another
        # process's for the end its log records: begun in prepare, ended in apply).
        self.goes_first = goes and not emit
        # Rewrite mode with the state in this process: the reading splits in two. Only the new
        # body is needed before the request goes; the verdict, the observations and the memo's
        # new entry wait until it has gone (account).
        self.splits = goes and emit and not state.store.shared
        self.job: Job | None = None  # made once the body is decoded (prepare)
        self.begun: Begun | None = None  # until its end is written (apply)
        self.as_came: Original | None = None  # the request as it came, for the backup (apply)

    @property
    def raw(self) -> bytes | None:
        """The decoded body (None: it could not be read)."""
        return self.job.raw if self.job is not None else None

    @property
    def memo(self) -> Memo:
        return self.state.memo

    # ---- SELECTED → READY: decoded ----------------------------------------------------------

    def prepare(self) -> Outcome | None:
        req = self.flow.request
        encoding, ua = header_values(req)
        raw, skipped = decode(req, self.max_body, encoding)
        if skipped is not None:
            return Outcome(skipped.status, skipped.reason)
        assert raw is not None
        self.size = len(raw)
        # Its reading (observe mode), or the rest of its split reading (rewrite mode: observations,
        # memo entry), and its verdict wait for the reply, or for the next request or planner call
        # of this process (dispatch.Dispatch.replied), when neither the reply (no flow view shows
        # its verdict) nor a planner hop of another process (no shared state) waits for them, and
        # the body is read on the loop: one read off it keeps the loop free anyway.
        self.after_reply = (
            deferrable(self.flow)
            and not self.settings.verdicts_at_reply
            and not self.state.store.shared
            and self.size < dispatching.OFFLOAD_BYTES
        )
        record = self.state.recorder is not None
        self.job = Job(raw, self.settings.config, req.path, ua, emit=self.settings.emit, record=record)
        store = self.state.store
        small = self.size < dispatching.OFFLOAD_BYTES and self.fresh() < dispatching.ONE_WRITE_BYTES
        if self.goes_first and store.remote and small:
            # A small reading (a resumed turn's new part) is done before it goes: its observations
            # are one write from the hook (before the gateway's planner call can ask for them), not
            # a begin and an end (two round trips). A resume that fails reads the body on the loop.
            self.goes_first = False
        if self.goes_first and store.shared:
            token = store.begin(self.size)
            self.begun = Begun(store, token) if token else None
        self.move(Stage.READY, Stage.SELECTED)
        return None

    # ---- READY → DECIDED: read here or away (the dispatch decides; it hands the result to decided)

    def fresh(self) -> int:
        # A conversation this process holds: only its new part is read (a light memo; rewriting
        # and recording keep whole entries in the worker, and the new body is written whole).
        memo = self.memo
        return self.size - memo.continues(self.raw or b"") if memo.light else self.size

    def here(self, whole: bool) -> Outcome | None:
        assert self.job is not None
        if self.splits:
            return sent_first(self.job, self.memo, whole, rewrite)
        return bridge(self.job, self.memo, rewrite) if whole else resume(self.job, self.memo)

    async def away(self, dispatch: Dispatch) -> Outcome:
        assert self.job is not None and self.raw is not None
        out = await dispatch.worker.run(self.job)
        memo = self.memo
        if out.entry is not None and memo.light:  # the worker's reading of this conversation
            memo.adopt(out.entry, self.raw)
            out.entry = None
        return out

    def failed(self, e: Exception) -> Outcome:
        return error(e)

    # ---- DECIDED → APPLIED: the observations handed over, the new body set -------------------

    def apply(self) -> None:
        out = self.result
        assert out is not None
        if self.begun is not None:
            self._end(out.observations)
        elif out.observations:
            self.state.store.observe(out.observations)
        if out.status == "rewritten":
            assert out.body is not None
            came = original(self.flow.request) if self.settings.backups else None
            self.flow.request.set_content(out.body)  # encodes first: on failure the request is unchanged
            self.as_came = came
        self.move(Stage.APPLIED, Stage.DECIDED)

    def _end(self, observations: list[Observation]) -> None:
        """The reading's observations and its end, in one record of the shared store. Its end
        alone (a failed reading's) is worth a try only: else it ends when its time is up."""
        assert self.begun is not None
        try:
            self.begun.store.observe(observations, ended=self.begun.token)
        except Exception:
            if observations:
                raise  # the dispatch fails open, then applies the failed result: its end alone
            logger.exception(
                f"bridge: {self.where}: cannot say the reading ended; a planner hop waits until its time is up"
            )
        self.begun = None

    # ---- APPLIED → ACCOUNTED: the verdict ----------------------------------------------------

    def account(self) -> None:
        """The rest of a split reading; the backup of a rewritten flow (mitmweb's revert: the
        request as it came), the verdict on the flow (mark, comment, metadata), its log line and
        its record."""
        self.move(Stage.ACCOUNTED, Stage.APPLIED)
        out = self.result
        assert out is not None
        if out.rest is not None:
            out = self._rest(out)
        flow = self.flow
        if self.as_came is not None:
            back_up(flow, self.as_came)
        announce(logger, flow, self.where, out, self.settings.calm)
        flow.comment = comment(out, out.summary)
        flow.metadata[META] = {"status": out.status, "reason": out.reason, **out.summary}
        recorder = self.state.recorder
        if recorder is not None:
            before = self.raw if self.raw is not None else flow.request.raw_content
            # Not rewritten, not recorded: its size and conversation, not 40 MB of it.
            omit = out.status == "skipped" and not self.settings.skipped_bodies
            # Rendered once the turn is over (its reply written out): not on the turn's CPU.
            recorder.submit(record_job(flow, out, before, flow.comment, omit_before=omit), held=turn_running(flow))

    def _rest(self, out: Outcome) -> Outcome:
        """What waited until the request had gone (a split reading's observations and memo
        entry); fails open like the dispatch, the request having gone as decided."""
        try:
            assert out.rest is not None
            rest, out.rest = out.rest, None
            rest()
            if out.observations:
                self.state.store.observe(out.observations)
        except Exception:
            logger.exception(f"bridge: {self.where}: reading failed after the request went upstream")
            out.observations = []  # the body went as decided, its verdict stands: only the rest is lost
        return out
