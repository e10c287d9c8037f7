"""The planner hop: correct the steps of every call that carries tool history, in flight.

Only flows that came in on a planner listener (``bridge_planner``: mode specs) and
call one of cascade.calls' table are touched: SendUserCascadeMessage (its field 9),
ReplayGroundTruthTrajectory (its field 2) and HandleCascadeUserInteraction (recorded,
never rewritten); every other call passes as it came, unrecorded. The ledger entry
for a cascade is written when the language server accepted the request, whichever
call delivered the steps, so a failed send is sent again in full next time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from mitmproxy import ctx, exceptions, http
from mitmproxy.proxy import mode_specs

from ..cascade.calls import Call, call_of
from ..cascade.correct import DEFAULT_MAX_SIZE, METHOD, PlannerResult, correct_request
from ..cascade.corrections import TYPES, Evidence
from ..cascade.ledger import Delivered, Delivery
from ..core.rules.clients import CLIENTS
from ..records.planner import DIALECT, PlannerJob
from ..records.writer import Recorder, RecordJob
from ..runtime import MARKER, META
from ..runtime.dispatch import OFFLOAD_BYTES, Dispatch, Request, Stage
from ..runtime.h2c import H2CListener, is_planner
from ..runtime.later import Original, back_up, keeps_backups, original
from ..runtime.state import BridgeState
from ..runtime.store import RecalledEvidence, RemoteStore, StoreEvidence

logger = logging.getLogger(__name__)

# Set on every request this hop corrected: a second bridge downstream (two proxies chained) leaves
# such a request alone, since it lacks the evidence the first one used and would undo its claims
# (an exit code the chat hop observed) or take a repeated step for one already delivered. gRPC and
# Connect servers ignore metadata they do not know; the body is not touched for it. The name is the
# product's (not the hop's) and stays: a deployed bridge downstream in a chain knows a corrected send
# only by it (README, "Never twice").
HANDLED_HEADER = "x-native-bridge"


def summary(result: PlannerResult) -> dict[str, Any]:
    counts = result.counts()
    return {
        "steps_in": len(result.steps_before),
        "steps_out": len(result.steps_after),
        "delta_start": result.delta_start,
        "changes": counts,
    }


def comment(result: PlannerResult, s: dict[str, Any] | None = None) -> str:
    """The one-line verdict (``s``: the result's summary, when already made)."""
    hop = "planner" if result.method == METHOD else f"planner {result.method}"
    if result.status != "corrected":
        return f"bridge: {hop} {result.status} ({result.reason})"
    s = s or summary(result)
    return f"bridge: {hop} {s['steps_in']} -> {s['steps_out']} steps ({result.reason})"


def grpc_status(resp: http.Response) -> str | None:
    """The gRPC status: in the trailers, or in the headers of a trailers-only reply."""
    return (resp.trailers or {}).get("grpc-status") or resp.headers.get("grpc-status")


def grpc_ok(resp: http.Response) -> bool:
    """Whether the language server accepted the call (gRPC status 0, or Connect without an error)."""
    if resp.status_code != 200:
        return False
    ctype = resp.headers.get("content-type", "")
    if ctype.startswith("application/grpc"):
        return grpc_status(resp) == "0"
    if ctype.startswith("application/connect+"):
        body = resp.raw_content or b""
        # The last envelope ends the stream (flag 0x02); an "error" key in its JSON is a failure.
        return b'"error"' not in body[-4096:]
    return True  # Connect unary: the HTTP status is the verdict


@dataclass(frozen=True, slots=True)
class Settings:
    """The planner hop's options as configure last saw them: what a correction reads (it may run
    in a thread, where ``ctx.options`` is not read) and what its verdict states."""

    client: str | None = None  # bridge_planner_client
    types: str = "official"  # bridge_planner_types
    backups: bool = True  # a corrected flow is backed up (later.keeps_backups)


class PlannerHop:
    """The planner hop's addon: its options, and its hooks, each a translation of a mitmproxy
    event into the call it concerns (:class:`PlannerCall`), which the shared dispatch runs
    (runtime/dispatch.py), and back."""

    def __init__(self, state: BridgeState | None = None, h2c: H2CListener | None = None) -> None:
        # A hop on its own (tests) loads and configures the shared state it made.
        self._own_state = state is None
        self.state = state or BridgeState()
        self.h2c = h2c or H2CListener()
        self.evidence = StoreEvidence(lambda: self.state.store)
        self.own_recorder: Recorder | None = None
        self.settings = Settings()
        # The calls that deliver steps, by flow id, until their reply: the ledger learns what it accepted.
        self.calls: dict[str, PlannerCall] = {}

    def load(self, loader) -> None:
        if self._own_state:
            self.state.load(loader)
        loader.add_option(
            "bridge_planner",
            Sequence[str],
            [],
            "Planner listeners: proxy mode specs (exactly as given to --mode, e.g. "
            "reverse:http://127.0.0.1:42101@42100) that speak gRPC over prior-knowledge HTTP/2 "
            "and whose SendUserCascadeMessage and ReplayGroundTruthTrajectory steps are corrected "
            "(HandleCascadeUserInteraction is recorded, never rewritten).",
        )
        loader.add_option(
            "bridge_planner_client",
            str | None,
            None,
            "The agent client behind the gateway, when one client is (e.g. claude-code): its own "
            "result frames then count in the planner's step text. Unset: only signals no program "
            "output can forge, and what the chat hop observed.",
        )
        loader.add_option(
            "bridge_planner_types",
            str,
            "official",
            "Planner hop: a step whose type names another kind than its body, by the official schema. "
            "official: it gets the body's official type (recorded as a change). keep: every type goes as sent.",
        )
        loader.add_option(
            "bridge_planner_records",
            str | None,
            None,
            "Directory for the planner hop's records (one per call it covers). Unset: bridge_records.",
        )

    def configure(self, updated: set[str]) -> None:
        if self._own_state:
            self.state.configure(updated)
        opts = ctx.options
        if updated & {"bridge_planner", "mode"}:
            specs = []
            for spec in opts.bridge_planner:
                try:
                    parsed = mode_specs.ProxyMode.parse(spec)
                except ValueError as e:
                    raise exceptions.OptionsError(f"bridge_planner: {spec!r}: {e}") from e
                if parsed.full_spec not in {mode_specs.ProxyMode.parse(m).full_spec for m in opts.mode}:
                    listeners = ", ".join(opts.mode)
                    raise exceptions.OptionsError(f"bridge_planner: {spec!r} is not a listener here ({listeners})")
                specs.append(parsed.full_spec)
            self.h2c.specs = frozenset(specs)
        if "bridge_planner_client" in updated and opts.bridge_planner_client is not None:
            known = [c.id for c in CLIENTS]
            if opts.bridge_planner_client not in known:
                raise exceptions.OptionsError(
                    f"bridge_planner_client: {opts.bridge_planner_client!r} is not one of {', '.join(known)}"
                )
        if "bridge_planner_types" in updated and opts.bridge_planner_types not in TYPES:
            raise exceptions.OptionsError(
                f"bridge_planner_types: {opts.bridge_planner_types!r} is not one of {', '.join(TYPES)}"
            )
        if "bridge_planner_records" in updated:
            if self.own_recorder is not None:
                self.own_recorder.close()
                self.own_recorder = None
            if opts.bridge_planner_records:
                self.own_recorder = Recorder(opts.bridge_planner_records, isolate=True)
        backups = keeps_backups(ctx.master, opts)
        self.settings = Settings(opts.bridge_planner_client, opts.bridge_planner_types, backups)

    @property
    def recorder(self) -> Recorder | None:
        return self.own_recorder or self.state.recorder  # the chat hop's, unless bridge_planner_records is set

    def done(self) -> None:
        if self.own_recorder is not None:
            self.own_recorder.close()
        if self._own_state:
            self.state.done()

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        """Correct one call of the table (cascade.calls). The dispatch decides where and when
        (runtime/dispatch.py): a correction waits for the chat hop's readings still in its worker
        (their evidence), and a body of ``OFFLOAD_BYTES`` or more is corrected in a thread (the
        field scan is Python that gives the GIL up every few milliseconds); then this returns an
        awaitable, which mitmproxy awaits while the loop serves the rest."""
        specs = self.h2c.specs
        if not specs or META in flow.metadata or not self.state.on or not is_planner(flow.client_conn, specs):
            return None
        call = call_of(flow.request.path)
        if call is None:
            return None  # polls and other calls pass as they came (GetCascadeTrajectorySteps runs every 50 ms)
        planner_call = PlannerCall(flow, call, self.settings, self.state, self.evidence, self.recorder)
        pending = self.state.dispatch.run(planner_call)
        if pending is None:
            self._await_answer(planner_call)
            return None
        return self._ran(pending, planner_call)

    async def _ran(self, pending: Awaitable[None], call: PlannerCall) -> None:
        await pending
        self._await_answer(call)

    def _await_answer(self, call: PlannerCall) -> None:
        """A call that delivers steps (applied: its request goes as decided) is kept until its reply."""
        if call.delivery is not None:
            self.calls[call.flow.id] = call

    def response(self, flow: http.HTTPFlow) -> None:
        call = self.calls.pop(flow.id, None)
        if call is not None and flow.response is not None:
            call.answered(flow.response)

    def error(self, flow: http.HTTPFlow) -> None:
        self.calls.pop(flow.id, None)  # no reply: the ledger stays as it was


@dataclass(frozen=True, slots=True)
class Correcting:
    """What a correction reads, taken on the loop when its call is selected (it may run in a thread)."""

    max_size: int
    client: str | None
    types: Any


def _same(a: Delivered, b: Delivered) -> bool:
    """Whether two ledger entries are one (the store's answer is the entry this process guessed with)."""
    return a is b or (len(a) == 0 and len(b) == 0)


class PlannerCall(Request[PlannerResult]):
    """One planner call, the one object that holds everything about it; the dispatch
    (runtime/dispatch.py) drives it: ``SELECTED`` → ``READY`` (a body to correct, not marked as
    corrected upstream) → ``DECIDED`` (after the chat hop's readings in flight, corrected on the
    loop or, large or with a store on a server, off it; or failed open) → ``APPLIED`` (the
    corrected body on the request; what it delivers kept for the ledger) → ``ACCOUNTED`` (the
    backup, the verdict on the flow, its log line and record) → ``ANSWERED`` (the reply came:
    the ledger learns what the language server accepted)."""

    wait = True  # the chat hop's readings still in its worker: their evidence comes first

    def __init__(
        self,
        flow: http.HTTPFlow,
        call: Call,
        settings: Settings,
        state: BridgeState,
        evidence: Evidence,
        recorder: Recorder | None,
    ) -> None:
        super().__init__(flow, f"planner flow {flow.id}")
        self.call, self.settings, self.state, self.evidence = call, settings, state, evidence
        self.recorder = recorder  # as when the call came, like its store
        self.store = state.store  # the one asked, even if bridge_state changes meanwhile
        self.correcting = Correcting(min(state.max_body, DEFAULT_MAX_SIZE), settings.client, settings.types)
        self.as_came: Original | None = None  # the request as it came (apply)
        self.delivery: tuple[str, Delivery] | None = None  # cascade id, steps: for the ledger once accepted

    # ---- SELECTED → READY ------------------------------------------------------------------------

    def prepare(self) -> PlannerResult | None:
        req, method = self.flow.request, self.call.method
        if HANDLED_HEADER in req.headers:
            reason = f"already corrected by a bridge upstream ({HANDLED_HEADER}: {req.headers[HANDLED_HEADER]})"
            return PlannerResult("skipped", reason, method=method)
        if req.stream or req.raw_content is None:
            reason = "body is streamed (stream_large_bodies), it cannot be corrected"
            return PlannerResult("skipped", reason, method=method)
        self.size = len(req.raw_content)
        self.move(Stage.READY, Stage.SELECTED)
        return None

    # ---- READY → DECIDED: corrected here or away (the dispatch hands the result to decided) ----

    def fresh(self) -> int:
        return self.size

    def here(self, whole: bool) -> PlannerResult | None:
        if self.store.remote:
            return None  # the store answers over the network: away, awaited
        return self.correct()

    def away(self, dispatch: Dispatch) -> Awaitable[PlannerResult]:
        if self.store.remote:
            return self._asking(dispatch, cast(RemoteStore, self.store))
        return dispatch.thread(self.correct)

    def correct(
        self, delivered: Callable[[str], Delivered] | None = None, evidence: Evidence | None = None
    ) -> PlannerResult:
        """Correct the request's steps (may run in a thread: what it reads was taken on the loop).
        ``delivered``, ``evidence``: the ledger and the chat hop's evidence; by default the store's."""
        req, settings = self.flow.request, self.correcting
        headers = {k.lower(): v for k, v in req.headers.items()}
        body = req.raw_content or b""
        return correct_request(
            body,
            headers.get("content-type", ""),
            headers,
            delivered or self.state.store.delivered,
            evidence or self.evidence,
            settings.max_size,
            client=settings.client,
            types=settings.types,
            call=self.call,
        )

    async def _asking(self, dispatch: Dispatch, store: RemoteStore) -> PlannerResult:
        """Correct with a store on a server: first with the steps' own text and the ledger this
        process wrote last (what goes if the store is away or slow, truth rule 9), noting the
        observations it would look up; then, once the store answered (one round trip), again
        only if its ledger or an observation changes the reading."""
        large = self.size >= OFFLOAD_BYTES

        async def read(delivered: Callable[[str], Delivered], evidence: RecalledEvidence) -> PlannerResult:
            def run() -> PlannerResult:
                return self.correct(delivered, evidence)

            return await dispatch.thread(run) if large else run()

        noted = RecalledEvidence()
        first = await read(store.front, noted)
        cascade = first.cascade_id
        if not first.steps_before:
            return first  # no steps (unreadable, an interaction, none sent): nothing the store could change
        recall = await store.recall(cascade, noted.unasked)
        if recall is None:
            return first
        if _same(recall.delivered, store.front(cascade or "")) and not any(len(v) == 1 for v in recall.found.values()):
            return first
        evidence = RecalledEvidence(recall)
        result = await read(lambda _: recall.delivered, evidence)
        if evidence.unasked:  # the ledger was not the one guessed: steps it did not cover were read
            more = await store.recall(cascade, [*recall.asked, *evidence.unasked], wait=False)
            if more is not None:
                result = await read(lambda _: more.delivered, RecalledEvidence(more))
        return result

    def failed(self, e: Exception) -> PlannerResult:
        return PlannerResult("skipped", f"internal error: {type(e).__name__}: {e}", method=self.call.method)

    # ---- DECIDED → APPLIED: the corrected body on the request ----------------------------------

    def apply(self) -> None:
        result = self.result
        assert result is not None
        req = self.flow.request
        self.as_came = original(req)
        if result.status == "corrected":
            assert result.body is not None
            req.raw_content = result.body  # framed and compressed as it came
            req.headers[HANDLED_HEADER] = "corrected"
        # Whichever call delivered steps (a send, a replay): the ledger learns them once accepted. An
        # interaction, a skipped call and a send withheld for being empty deliver nothing.
        if result.cascade_id is not None and result.status != "skipped" and result.delivery is not None:
            self.delivery = (result.cascade_id, result.delivery)
        self.move(Stage.APPLIED, Stage.DECIDED)

    # ---- APPLIED → ACCOUNTED: the verdict ------------------------------------------------------

    def account(self) -> None:
        self.move(Stage.ACCOUNTED, Stage.APPLIED)
        result, flow, settings = self.result, self.flow, self.settings
        assert result is not None and self.as_came is not None
        req = flow.request
        if result.status == "corrected":
            if settings.backups:
                back_up(flow, self.as_came)  # mitmweb shows the flow as modified and can revert it
            if result.corrections:
                flow.marked = MARKER
        elif result.status == "skipped" and HANDLED_HEADER in req.headers:
            logger.info(f"bridge: planner flow {flow.id}: {result.reason}")
        elif result.status == "skipped":
            logger.warning(f"bridge: planner flow {flow.id}: passed through untouched: {result.reason}")
        s = summary(result)
        flow.comment = comment(result, s)
        flow.metadata[META] = {
            "status": result.status,
            "reason": result.reason,
            "dialect": DIALECT,
            "method": result.method,
            **s,
            "held": result.held,
            # The settings the steps were judged under: replay_check re-runs them with these.
            "planner_client": settings.client,
            "planner_types": settings.types,
            "change_list": result.change_list(),
        }
        if result.status == "corrected":
            logger.info(f"bridge: planner flow {flow.id}: {flow.comment.removeprefix('bridge: planner ')}")
        if self.recorder is not None:
            self._record(self.recorder, result, self.as_came[0])

    def _record(self, recorder: Recorder, result: PlannerResult, before: bytes | None) -> None:
        """Hand the raw material to the recorder: decoding, proto3 JSON and redaction run in its worker."""
        flow, settings = self.flow, self.settings
        req = flow.request
        recorder.submit(
            RecordJob.of(
                flow,
                status=result.status,
                reason=result.reason,
                dialect=DIALECT,
                before=None,
                summary={
                    **summary(result),
                    "planner_client": settings.client,
                    "planner_types": settings.types,
                },
                comment=flow.comment,
                planner=PlannerJob(before, {k.lower(): v for k, v in req.headers.items()}, result),
            )
        )

    # ---- → ANSWERED: the reply ------------------------------------------------------------------

    def answered(self, response: http.Response) -> None:
        """The language server answered: the ledger learns the steps this call delivered, when it
        accepted them (a failed send is sent again in full next time)."""
        if self.delivery is None:
            return  # nothing delivered: the ledger has nothing to learn
        self.move(Stage.ANSWERED, Stage.APPLIED, Stage.ACCOUNTED)
        (cascade_id, delivery), self.delivery = self.delivery, None
        if grpc_ok(response):
            self.state.store.deliver(cascade_id, delivery)
        else:
            logger.info(
                f"bridge: {self.where}: the language server refused the call "
                f"(HTTP {response.status_code}, grpc-status {grpc_status(response)}); ledger unchanged"
            )
