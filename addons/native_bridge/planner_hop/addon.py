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
from ..runtime.dispatch import OFFLOAD_BYTES, Dispatch
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


@dataclass(frozen=True, slots=True)
class _Pending:
    cascade_id: str
    delivery: Delivery


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


class PlannerHop:
    def __init__(self, state: BridgeState | None = None, h2c: H2CListener | None = None) -> None:
        self.state = state or BridgeState()
        self.h2c = h2c or H2CListener()
        self.evidence = StoreEvidence(lambda: self.state.store)
        self.own_recorder: Recorder | None = None
        self._pending: dict[str, _Pending] = {}  # flow id -> what to store once the reply says ok
        self.backups = True  # a corrected flow is backed up (later.keeps_backups)

    def load(self, loader) -> None:
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
        opts = ctx.options
        self.backups = keeps_backups(ctx.master, opts)
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

    @property
    def recorder(self) -> Recorder | None:
        return self.own_recorder or self.state.recorder  # the chat hop's, unless bridge_planner_records is set

    def done(self) -> None:
        if self.own_recorder is not None:
            self.own_recorder.close()

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        """Correct one call of the table (cascade.calls). The dispatch decides where and when
        (runtime/dispatch.py): a correction waits for the chat hop's readings still in its worker
        (their evidence), and a body of ``OFFLOAD_BYTES`` or more is corrected in a thread (the
        field scan is Python that gives the GIL up every few milliseconds); then this returns an
        awaitable, which mitmproxy awaits while the loop serves the rest."""
        specs = self.h2c.specs
        if not specs or META in flow.metadata or not ctx.options.bridge or not is_planner(flow.client_conn, specs):
            return None
        call = call_of(flow.request.path)
        if call is None:
            return None  # polls and other calls pass as they came (GetCascadeTrajectorySteps runs every 50 ms)
        return self.state.dispatch.run(_Call(self, flow, call))

    def account(self, flow: http.HTTPFlow, result: PlannerResult, came: Original) -> None:
        req = flow.request
        if result.status == "corrected":
            if self.backups:
                back_up(flow, came)  # mitmweb shows the flow as modified and can revert it
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
            "planner_client": ctx.options.bridge_planner_client,
            "planner_types": ctx.options.bridge_planner_types,
            "change_list": result.change_list(),
        }
        if result.status == "corrected":
            logger.info(f"bridge: planner flow {flow.id}: {flow.comment.removeprefix('bridge: planner ')}")
        if self.recorder is not None:
            self._record(flow, result, came[0])

    def correct(
        self,
        flow: http.HTTPFlow,
        call: Call,
        settings: _Settings,
        delivered: Callable[[str], Delivered] | None = None,
        evidence: Evidence | None = None,
    ) -> PlannerResult:
        """Correct the request's steps (may run in a thread: ``settings`` were read on the loop).
        ``delivered``, ``evidence``: the ledger and the chat hop's evidence; by default the store's."""
        req = flow.request
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
            call=call,
        )

    def response(self, flow: http.HTTPFlow) -> None:
        pending = self._pending.pop(flow.id, None)
        if pending is None or flow.response is None:
            return
        if grpc_ok(flow.response):
            self.state.store.deliver(pending.cascade_id, pending.delivery)
        else:
            logger.info(
                f"bridge: planner flow {flow.id}: the language server refused the call "
                f"(HTTP {flow.response.status_code}, grpc-status {grpc_status(flow.response)}); ledger unchanged"
            )

    def error(self, flow: http.HTTPFlow) -> None:
        self._pending.pop(flow.id, None)

    def _record(self, flow: http.HTTPFlow, result: PlannerResult, before: bytes | None) -> None:
        """Hand the raw material to the recorder: decoding, proto3 JSON and redaction run in its worker."""
        recorder = self.recorder
        assert recorder is not None
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
                    "planner_client": ctx.options.bridge_planner_client,
                    "planner_types": ctx.options.bridge_planner_types,
                },
                comment=flow.comment,
                planner=PlannerJob(before, {k.lower(): v for k, v in req.headers.items()}, result),
            )
        )


@dataclass(frozen=True, slots=True)
class _Settings:
    """The options a correction reads, taken on the loop (a correction may run in a thread)."""

    max_size: int
    client: str | None
    types: Any

    @staticmethod
    def now() -> _Settings:
        opts = ctx.options
        max_size = min(opts.bridge_max_body, DEFAULT_MAX_SIZE)
        return _Settings(max_size, opts.bridge_planner_client, opts.bridge_planner_types)


def _same(a: Delivered, b: Delivered) -> bool:
    """Whether two ledger entries are one (the store's answer is the entry this process guessed with)."""
    return a is b or (len(a) == 0 and len(b) == 0)


class _Call:
    """One planner call as the dispatch runs it (runtime/dispatch.Work): after the chat hop's
    readings in flight, corrected on the loop or (large) in a thread; the corrected body put on
    the request, the ledger entry kept until the reply says it was accepted; accounted."""

    original = "request"
    later = False  # the corrected body is what goes upstream
    wait = True  # the chat hop's readings still in its worker: their evidence comes first

    def __init__(self, hop: PlannerHop, flow: http.HTTPFlow, call: Call) -> None:
        self.hop, self.flow, self.call = hop, flow, call
        self.store = hop.state.store  # the one asked, even if bridge_state changes meanwhile
        self.settings = _Settings.now()
        self.where = f"planner flow {flow.id}"
        self.size = 0
        self.came: Original | None = None  # the request as it came (apply)

    def prepare(self) -> PlannerResult | None:
        req, method = self.flow.request, self.call.method
        if HANDLED_HEADER in req.headers:
            reason = f"already corrected by a bridge upstream ({HANDLED_HEADER}: {req.headers[HANDLED_HEADER]})"
            return PlannerResult("skipped", reason, method=method)
        if req.stream or req.raw_content is None:
            reason = "body is streamed (stream_large_bodies), it cannot be corrected"
            return PlannerResult("skipped", reason, method=method)
        self.size = len(req.raw_content)
        return None

    def fresh(self) -> int:
        return self.size

    def here(self, whole: bool) -> PlannerResult | None:
        if self.store.remote:
            return None  # the store answers over the network: away, awaited
        return self.hop.correct(self.flow, self.call, self.settings)

    def away(self, dispatch: Dispatch) -> Awaitable[PlannerResult]:
        if self.store.remote:
            return self._asking(dispatch, cast(RemoteStore, self.store))
        return dispatch.thread(lambda: self.hop.correct(self.flow, self.call, self.settings))

    async def _asking(self, dispatch: Dispatch, store: RemoteStore) -> PlannerResult:
        """Correct with a store on a server: first with the steps' own text and the ledger this
        process wrote last (what goes if the store is away or slow, truth rule 9), noting the
        observations it would look up; then, once the store answered (one round trip), again
        only if its ledger or an observation changes the reading."""
        large = self.size >= OFFLOAD_BYTES

        async def read(delivered: Callable[[str], Delivered], evidence: RecalledEvidence) -> PlannerResult:
            def run() -> PlannerResult:
                return self.hop.correct(self.flow, self.call, self.settings, delivered, evidence)

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

    def apply(self, result: PlannerResult) -> None:
        req = self.flow.request
        self.came = original(req)
        if result.status == "corrected":
            assert result.body is not None
            req.raw_content = result.body  # framed and compressed as it came
            req.headers[HANDLED_HEADER] = "corrected"
        # Whichever call delivered steps (a send, a replay): the ledger learns them once accepted. An
        # interaction, a skipped call and a send withheld for being empty deliver nothing.
        if result.cascade_id is not None and result.status != "skipped" and result.delivery is not None:
            self.hop._pending[self.flow.id] = _Pending(result.cascade_id, result.delivery)

    def account(self, result: PlannerResult) -> None:
        assert self.came is not None
        self.hop.account(self.flow, result, self.came)
