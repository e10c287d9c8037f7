"""The whole rewrite of one request body: bytes in, bytes (or a reason) out.

This is the core's public entry point; it knows nothing of mitmproxy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

import orjson

from . import layout as _layouts
from .builder import Part, Plan, _Decision, assemble, decide, delta_start, exit_code
from .clients import identify
from .config import Config
from .dialects import Cursor, Dialect, DialectError, Output, anthropic, chat, gemini, responses
from .history import History
from .kinds import KINDS
from .mapping import for_request
from .memo import fill as _fill
from .memo import light as _light
from .memo import resume as _resume
from .memo.entry import MAX_MARKS
from .memo.fill import ReadAt, WroteAt
from .memo.light import Gone
from .memo.resume import Begun, Resumed
from .memo.store import Memo
from .settle import Settled, settle
from .splice import Reuse, Written, encode

STEPS_KEY = "additional_steps"
DELTA_KEY = "additional_steps_delta_start"

DIALECTS: Mapping[str, Dialect] = {d.NAME: d for d in (chat, anthropic, responses, gemini)}

# rewritten: new body; unchanged: nothing to do; skipped: not rewritable (reason says why);
# error: the bridge itself failed; observed: the addon's observe mode kept a rewritten body back.
# Only "rewritten" changes the request.
Status = Literal["rewritten", "observed", "unchanged", "skipped", "error"]
# The statuses of a request whose history became steps (sent, or kept back in observe mode).
STEPPED: frozenset[Status] = frozenset({"rewritten", "observed"})


@dataclass(slots=True)
class Rewrite:
    status: Status
    reason: str
    dialect: str | None = None
    body: bytes | None = None  # the new body, when rewritten
    plan: Plan | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # proto3 JSON
    notes: list[str] = field(default_factory=list)  # facts worth a line in the record
    history: History | None = field(default=None, repr=False)  # what was read (observe mode uses it)
    # The part of ``history`` decided by this call (after the memo's cut; all of it on a full
    # read) and, when made for every kind, those decisions: observe.py needs nothing else.
    fresh: History | None = field(default=None, repr=False)
    decisions: list[_Decision] | None = field(default=None, repr=False)
    written: Written | None = field(default=None, repr=False)  # the body's arrays, for the memo (splice.py)
    # The memo's new entry for this body, made when called (read(..., later=True)): once the
    # request has gone. Made at once otherwise, and then None.
    remember: Callable[[], None] | None = field(default=None, repr=False)

    def summary(self) -> dict[str, Any]:
        if self.plan is None:
            return {"steps": 0}
        t = self.plan.counted()
        return {
            "steps": t.steps,
            "delta_start": self.plan.delta_start,
            "failed": len(t.failed),
            "failed_exit_codes": list(t.failed),
            "kept": t.kept,
            "kept_by_code": dict(t.kept_by_code),
            "unobserved": t.unobserved,
        }

    def turn(self) -> dict[str, Any] | None:
        """What a resumed reading added to its history: the new steps and the exit codes they
        state (a log line says this, not the whole history again); None: read in full."""
        plan = self.plan
        if plan is None or plan.tally is None:
            return None
        new = plan.docs[plan.tally.steps :]
        return {"steps": len(new), "failed_exit_codes": [c for c in map(exit_code, new) if c not in (None, 0)]}


def failures(codes: list[int]) -> str:
    """``codes`` (each failed step's exit code) as counts per code, most frequent first: as long
    for a thousand steps as for one (``3 failed: exit 1 ×2, exit 2 ×1``)."""
    counts: dict[int, int] = {}
    for c in codes:
        counts[c] = counts.get(c, 0) + 1
    per_code = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"{len(codes)} failed: " + ", ".join(f"exit {c} ×{n}" for c, n in per_code)


def _may_hold(raw: bytes, markers: tuple[bytes, ...]) -> bool:
    """Whether ``raw`` may hold tool history: it has a marker, or could spell one with escapes.

    Markers are found early in a body that has tool history; proving their absence costs
    a scan of the body, still far less than parsing it. A marker spelled with escapes needs
    a ``\\u00XX`` escape of an ASCII letter or "_" (0x40-0x7f); the escapes clients write for
    other characters (non-ASCII text, controls, Go's <>&) cannot spell one."""
    for m in markers:  # a loop, not any() over a generator: one marker is the common case
        if m in raw:
            return True
    i = raw.find(b"\\u00")
    while i != -1:
        if raw[i + 4 : i + 5] in (b"4", b"5", b"6", b"7"):
            return True
        i = raw.find(b"\\u00", i + 4)
    return False


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise DialectError(f"body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise DialectError("body is not a JSON object")
    return doc


def dialect_for_path(path: str | None) -> Dialect | None:
    """The dialect an endpoint path names, if it names one."""
    p = (path or "").split("?", 1)[0].rstrip("/")
    if p.endswith("/chat/completions"):
        return chat
    if p.endswith("/messages"):
        return anthropic
    if p.endswith("/responses"):
        return responses
    if p.endswith((":generateContent", ":streamGenerateContent")) and "/models/" in p:
        return gemini  # /v1beta/models/<model>:generateContent, Vertex's …/publishers/google/models/<model>:…
    return None


def dialect_for_body(body: dict[str, Any]) -> Dialect | None:
    """The dialect a body's shape says, when the path does not."""
    if "input" in body and "messages" not in body:
        return responses
    if "contents" in body and "messages" not in body:
        return gemini
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool" or "tool_calls" in m:
            return chat
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return anthropic
    return chat if "system" not in body else anthropic


def rewrite(
    raw: bytes,
    config: Config = Config(),
    path: str | None = None,
    memo: Memo | None = None,
    client_hint: str | None = None,
    *,
    emit: bool = True,
    later: bool = False,
) -> Rewrite:
    """Rewrite one request body; never raises for bad input, only reports.

    With a ``memo`` (the caller's: the addon holds one), a body that continues a
    conversation rewritten with it before reuses that work (same result, byte for byte: memo/__init__.py says why).
    ``client_hint``: the request's User-Agent header, to identify the client (clients.py); without
    it the client is identified from the body alone, or not at all (then every known exit-status
    frame counts at its place, and no client's success wording: truth rules 3 and 5).
    ``emit=False``: the caller will not send a new body (observe mode): everything is decided and
    the memo filled as usual, but the body is not written; the status is then "observed".
    ``later``: the memo's new entry is left to the caller, as the Rewrite's ``remember`` (to be
    made once the request has gone)."""
    result = read(raw, config, path, memo, client_hint, emit=emit)
    assert result is not None
    return result.finish(later) if isinstance(result, Reading) else result


def resume(
    raw: bytes,
    config: Config,
    path: str | None,
    memo: Memo,
    client_hint: str | None,
    *,
    emit: bool = True,
    later: bool = False,
) -> Rewrite | None:
    """:func:`rewrite` when ``raw`` goes on from the memo's bytes and a resume reads only its new
    part (or it holds no tool history); None otherwise, without parsing the body (the caller
    reads it in full elsewhere: in a worker, off the event loop)."""
    result = read(raw, config, path, memo, client_hint, emit=emit, resume_only=True)
    return result.finish(later) if isinstance(result, Reading) else result


@dataclass(slots=True)
class Reading:
    """A rewrite decided as far as its pairs (:func:`read`): ``fresh`` and ``decisions`` as the
    finished Rewrite will hold them (observe.py reads them); ``finish`` does the rest."""

    fresh: History
    decisions: list[_Decision] | None
    _rest: Callable[[], Rewrite] = field(repr=False)
    _raw: bytes = field(repr=False)

    def finish(self, later: bool = False) -> Rewrite:
        """The Rewrite: settled, written, remembered (once: a second call is a bug). ``later``:
        the memo's new entry is left to the caller, as the Rewrite's ``remember``."""
        result = self._rest()
        remember, result.remember = result.remember, None
        result = _checked(self._raw, result)  # a body it refuses is still remembered, as read
        if remember is not None:
            if later:
                result.remember = remember
            else:
                remember()
        return result


def _checked(raw: bytes, result: Rewrite) -> Rewrite:
    # orjson reads an integer beyond 64 bits as a float and writes it back as one ("1e+30"):
    # the rewrite would change a field it does not own, so the body goes as it came.
    body = result.body
    if body is not None and _has_e_plus(body) and body.count(b"e+") > raw.count(b"e+"):
        return Rewrite("skipped", "a number in the body would not survive re-encoding", result.dialect)
    return result


def _has_e_plus(data: bytes, looks: int = 64) -> bool:
    """``b"e+" in data``, found by its rare "+" (a memchr scan, some 40x faster than the two-byte
    search over a body where "e" is everywhere); a body with many a "+" is searched whole."""
    at = data.find(b"+", 1)
    for _ in range(looks):
        if at < 0:
            return False
        if data[at - 1] == 101:  # "e"
            return True
        at = data.find(b"+", at + 1)
    return at >= 0 and b"e+" in data[at - 1 :]


def read(
    raw: bytes,
    config: Config,
    path: str | None,
    memo: Memo | None,
    hint: str | None,
    *,
    emit: bool = True,
    resume_only: bool = False,
) -> Rewrite | Reading | None:
    """:func:`rewrite` (:func:`resume` with ``resume_only``) in two halves: a Rewrite when that
    is all (nothing to decide), else a :class:`Reading` whose pairs are decided (what the planner
    hop's observations need) and whose ``finish()`` settles, writes and remembers the rest, the
    same Rewrite the whole call gives."""
    dialect = DIALECTS.get(config.dialect) or dialect_for_path(path)
    # Cheap pre-check: without tool history there is nothing to rewrite, so do not parse.
    markers = dialect.MARKERS if dialect else (chat.MARKERS + anthropic.MARKERS + responses.MARKERS + gemini.MARKERS)
    if not _may_hold(raw, markers):
        return Rewrite("unchanged", "no tool history", dialect.NAME if dialect else None)
    return _read(_Call(raw, path, memo, hint, emit), dialect, config, resume_only, resumable=True)


@dataclass(frozen=True, slots=True)
class _Call:
    """What :func:`read` was given that each half of the reading needs."""

    raw: bytes
    path: str | None
    memo: Memo | None
    hint: str | None  # the user agent
    emit: bool


def _read(
    call: _Call, dialect: Dialect | None, config: Config, resume_only: bool, resumable: bool
) -> Rewrite | Reading | None:
    """:func:`read` once the body may hold tool history (``dialect``: named by the config or the
    path); ``resumable=False``: read in full (in place of a resume that could not be completed)."""
    raw, memo, hint = call.raw, call.memo, call.hint
    # The client decides whose words count; the memo keeps its decisions per config, client included.
    # Known before parsing (configured, or named by the user agent), the memo may resume from raw bytes.
    early = config.client or identify(hint, None)
    if early is not None:
        config = config.for_client(early)
    tried = memo is not None and dialect is not None  # a resume from the bytes as they came
    if resumable and memo is not None and dialect is not None:
        # A client no user agent names is told by its declared tools, read with the new part.
        client_of = None if early is not None else partial(identify, hint)
        begun = _begin(memo, raw, dialect, config, client_of)
        # A body that declares other shell-shaped tools than the entry's (mapping.py) is read below.
        if begun is not None and _for_tools(begun.config, begun.doc) is begun.config:
            return _Resume(call, memo, begun, config).reading()
    if resume_only:
        return None
    try:
        body = _parse(raw)
        dialect = dialect or dialect_for_body(body)
        if dialect is None:
            raise DialectError("body is not a chat request of a known dialect")
        # mutation: rewrite-of-rewritten
        if STEPS_KEY in body:
            return Rewrite("skipped", f"already carries {STEPS_KEY}", dialect.NAME)
        if early is None:  # its declared tools may name it
            config = config.for_client(identify(hint, body))
        named = config
        config = _for_tools(config, body)  # and map shell tools by their shape (mapping.py)
        items = body.get(dialect.ITEMS)
        reads = None  # the reader's states at the cuts, when the memo is filled
        if memo is not None and isinstance(items, list):  # the memo is filled: note where it may cut
            # The dialect told by the body, or shell tools mapped by their shape: a resume from the bytes now.
            if resumable and (not tried or config is not named):
                begun = _begin(memo, raw, dialect, config)
                if begun is not None:
                    del body, items  # the memo holds the items before the cut: free these first
                    return _Resume(call, memo, begun, config).reading()
            history = History(client=config.client)
            reads = _fill.read_marked(dialect, items, Cursor(), history)
        else:
            history = dialect.read(body)
            history.client = config.client
    except DialectError as e:
        return Rewrite("skipped", str(e), dialect.NAME if dialect else None)
    if not history.calls and not history.results:
        return Rewrite("unchanged", "no tool history", dialect.NAME)
    decisions = decide(history, config.kinds, config.tool_kinds)
    full = _Full(call, dialect, config, body, items, history, decisions, reads)
    return Reading(history, _kinds_all(decisions, config), full.rest, raw)


def _for_tools(config: Config, body: dict[str, Any]) -> Config:
    """``config`` with the shell tools ``body`` declares mapped by their shape (mapping.py); itself
    when the request's table is its own."""
    table = for_request(config.tool_kinds, body)
    return config if table is config.tool_kinds else replace(config, tool_kinds=table)


@dataclass(slots=True)
class _Full:
    """A full read decided as far as its pairs; :meth:`rest` settles, writes and leaves the memo's
    new entry to the Rewrite's ``remember``."""

    call: _Call
    dialect: Dialect
    config: Config
    body: dict[str, Any]
    items: Any  # the body's ITEMS value, any JSON (a reader raises on a shape it does not know)
    history: History
    decisions: list[_Decision]
    reads: list[ReadAt] | None  # None: no memo to fill

    def rest(self) -> Rewrite:
        dialect, config, history, memo = self.dialect, self.config, self.history, self.call.memo
        part = assemble(history, config.kinds, config.tool_kinds, prior=self.decisions)
        # Taking the pairs out must leave a request valid for its API: the writer may pin some back.
        settled = settle(dialect, self.items, history, config.kinds, config.tool_kinds, part, self.write)
        assert settled is not None  # only a pin before the floor gives None, and a full read has no floor
        keep = self.reads is not None and memo is not None and not memo.light
        result = _finish(dialect, self.body, history, settled.part, settled.out.items, self.call.emit, keep=keep)
        _fresh(result, history, self.decisions, config)
        if self.reads is not None and memo is not None:
            result.remember = _RememberRead(memo, self, self.reads, settled, result).put
        return result

    def write(self, stepped: frozenset[int]) -> tuple[Output, dict[int, WroteAt]]:
        """settle's ``write``: the items afresh, noting the writer's states at the cuts when the
        memo is filled (else none: an empty table)."""
        out = Output([], 0)
        if self.reads is None:
            self.dialect.write_items(self.items, 0, stepped, out)
            return out, {}
        return out, _fill.write_marked(self.dialect, self.items, 0, stepped, out)


@dataclass(slots=True)
class _RememberRead:
    """A full read's new memo entry (Rewrite.remember: once the request has gone, when the caller
    leaves it until then)."""

    memo: Memo
    full: _Full
    reads: list[ReadAt]
    settled: Settled[dict[int, WroteAt]]
    result: Rewrite  # its written arrays, which the next turn copies (splice.py)

    def put(self) -> None:
        full, raw = self.full, self.full.call.raw
        # Where the items lie in the body's own bytes, whatever their style (layout.py).
        where = _layout(raw, full.body, full.dialect.ITEMS) if full.items else None
        entry = _fill.remember(raw, full.body, full.dialect, full.config, full.history, self.reads, self.settled, where)
        if entry is not None:
            entry.written = self.result.written
            self.memo.put(entry)


@dataclass(slots=True)
class _Resume:
    """A resume begun; :meth:`rest` completes it, or reads in full when it cannot be completed (a
    pin before the cut, an item a light entry dropped)."""

    call: _Call
    memo: Memo
    begun: Begun
    config: Config  # the reading's, for a full read in the resume's place

    def reading(self) -> Reading:
        begun = self.begun
        return Reading(begun.fresh, _kinds_all(begun.decisions, begun.config), self.rest, begun.raw)

    def rest(self) -> Rewrite:
        memo, call = self.memo, self.call
        r = _complete(memo, self.begun)
        if r is None:
            dialect = DIALECTS.get(self.config.dialect) or dialect_for_path(call.path)
            result = _read(call, dialect, self.config, resume_only=False, resumable=False)
            assert result is not None  # only a resume_only read gives None
            return result.finish(later=True) if isinstance(result, Reading) else result
        # Finished under the entry's config (the client an unnamed one was told to be); the entry
        # remembered with the body's arrays the next turn copies (splice.py).
        dialect = self.begun.entry.dialect
        result = _finish(dialect, r.doc, r.history, r.part, r.out, call.emit, r.delta, not memo.light, r.reuse)
        _fresh(result, r.fresh, r.decisions, r.config)
        result.remember = _RememberResume(memo, r, result.written).put
        return result


@dataclass(slots=True)
class _RememberResume:
    """A resume's new memo entry, in its entry's place (Rewrite.remember)."""

    memo: Memo
    resumed: Resumed
    written: Written | None

    def put(self) -> None:
        r = self.resumed
        entry = r.successor()
        entry.written = self.written
        self.memo.put(entry, r.replaces, r.shared)


def _begin(
    memo: Memo,
    raw: bytes,
    dialect: Dialect,
    config: Config,
    client_of: Callable[[dict[str, Any]], str | None] | None = None,
) -> Begun | None:
    """The memo's head start, or None; a fault in it costs only speed (the full rewrite runs)."""
    try:
        return _resume.begin(memo, raw, dialect, config, STEPS_KEY, client_of)
    except Exception as e:
        _missed(memo, e)
        return None


def _complete(memo: Memo, begun: Begun) -> Resumed | None:
    try:
        return _resume.complete(memo, begun)
    except Exception as e:
        _missed(memo, e)
        return None


def _missed(memo: Memo, e: Exception) -> None:
    """A resume that raised: counted, and the full rewrite runs."""
    if isinstance(e, Gone):  # a light entry no longer holds an item the resume would read
        memo.misses += 1
    else:
        memo.errors += 1  # tests assert there are none


def _layout(raw: bytes, body: dict[str, Any], key: str) -> _layouts.Layout | None:
    """Where the items lie in ``raw``, with the spans of as many as a light entry reads again and
    of those the memo may cut after."""
    return _layouts.layout(raw, body, key, max(_light.LIGHT_ITEMS, MAX_MARKS + 1))


def _fresh(result: Rewrite, fresh: History | None, decisions: list[_Decision] | None, config: Config) -> None:
    """Note what this call decided, for observe.py (decisions made for fewer kinds are not its)."""
    result.fresh = fresh
    result.decisions = _kinds_all(decisions, config)


def _kinds_all(decisions: list[_Decision] | None, config: Config) -> list[_Decision] | None:
    return decisions if config.kinds >= _ALL_KINDS else None


_ALL_KINDS = frozenset(KINDS)


def _finish(
    dialect: Dialect,
    body: dict[str, Any],
    history: History,
    part: Part,
    out: list[Any] | None,
    emit: bool = True,
    delta: int | None = None,
    keep: bool = False,
    reuse: Reuse | None = None,
) -> Rewrite:
    """The rewrite's result from its plan; ``out`` is the written history (None: write it now);
    ``delta``: delta_start, when a resume made it; ``keep``: the memo keeps the body's arrays
    (``Rewrite.written``), and ``reuse`` holds the previous turn's (splice.py)."""
    if delta is None:
        delta = delta_start(history, part.step_calls)
    plan = Plan(part.docs, part.step_calls, part.placements, delta, part.stepped, part.sources)
    plan.tally = part.tally
    notes = []
    if dialect is responses and body.get("previous_response_id"):
        # The server holds the earlier items; this input is only what is new.
        plan.delta_start = 0
        notes.append("previous_response_id: input holds only new items, all steps are the delta")
    steps = plan.docs[:]  # a light memo's resume: a light.Tail (the earlier steps are its tally's)
    if not steps:
        return Rewrite("unchanged", "no pair became a step", dialect.NAME, plan=plan, notes=notes, history=history)
    if not emit:  # observe mode: the body would not be sent, so it is not written
        return Rewrite("observed", "", dialect.NAME, None, plan, steps, notes, history)
    items = dialect.write(body, plan.stepped) if out is None else out
    try:
        written = None
        if keep or reuse is not None:
            written = encode(body, dialect.ITEMS, items, STEPS_KEY, steps, DELTA_KEY, plan.delta_start, reuse)
        if written is not None:  # the very bytes orjson.dumps writes for the whole (splice.py)
            data = written.body
        else:
            new = dict(body)
            new[dialect.ITEMS], new[STEPS_KEY], new[DELTA_KEY] = items, steps, plan.delta_start
            data = orjson.dumps(new)
    except orjson.JSONEncodeError as e:  # orjson reads 1024 levels deep but writes only 254
        reason = f"the rewritten body cannot be encoded: {e}"
        return Rewrite("skipped", reason, dialect.NAME, plan=plan, notes=notes, history=history)
    done = Rewrite("rewritten", "", dialect.NAME, data, plan, steps, notes, history)
    done.written = written if keep else None
    return done
