"""Reading a shell command's outcome out of the result a client sent back.

Every client frames a command's result in its own words. Each :class:`Rule` of
rules/exit_frames.py is one frame: where in the result it stands (``where``), what a
line of it looks like, and what it says (``verdict``). A frame counts only at its own place
(the header above an ``Output:`` line, the trailing frame lines, the first line,
the last line, the whole result as a structure), matched as a whole line, so
words that merely appear inside the program's output never count.

Whose frames count (truth rule 3):

- a named client: its own frames. A line of the generic families that the client
  never writes is its program's output (the corpus holds real ones: ``echo 'Exit
  code: 3'`` through opencode, Kilo, Claude Code, the Agents SDK's local shell);
- a client we cannot name (the planner hop never can): every frame we know, read
  as each client would read the text, and the generic families (``Exit code: N``,
  ``exited with code N``, their bracketed forms, a JSON ``exit_code``), which no
  client writes with another meaning; where two readings differ, no claim.

Precedence for one client: structure > header above ``Output:`` > trailing frame
lines > the first line > the last line > the error flag. A stated number wins: a
flagged result with a number is that number; 1 only when no known frame states a
number; a number we cannot state (beyond int32) or decline (another client's frame
under a named client, unflagged) leaves the code absent, never 1. A flagged result the named
client's frames say nothing of is read in every known client's frames (``_borrowed``: an
identity is a claim, issue 39). core/rules/EXIT_STATUS.md, "Exit
status formats", lists the rules with their sources; tests/test_exitstatus_clients.py
tests each one. The other formats are data in rules/ too (structures.py, gemini_frame.py,
framing.py, not_run.py): this module reads them.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace

import orjson

from .clients import BY_ID, counts_for
from .rules.envelopes import ENVELOPES
from .rules.exit_frames import RULES
from .rules.framing import CLINE_PREFIX, ERROR_PREFIX, FRAME_LINES, OBSERVATION, OUTPUT_MARKER, UNTRUSTED
from .rules.gemini_frame import (
    GEMINI_CLIENTS,
    GEMINI_HOOK_NOTE,
    GEMINI_NONE,
    GEMINI_RESPONSE_KEY,
    GEMINI_SLOTS,
    GEMINI_START,
    GEMINI_TRUNCATED,
    QWEN_NOTE,
)
from .rules.not_run import NOT_RUN
from .rules.structures import (
    AGENTS_SDK_TIMEOUT,
    AMAZONQ_KEYS,
    AMAZONQ_STATUS,
    CLINE_V4_EXITED,
    CLINE_V4_RUNNING,
    GPTME_CODE,
    GPTME_FAILED,
    GPTME_HEADER,
    MINI_KEYS,
    MINI_LONG_KEYS,
    MINI_NOT_RUN,
    MINI_XML,
    STRUCTURED,
)
from .rules.types import ANY, Envelope, Rule, Verdict

# mutation: failure-without-number-is-zero
FAILED_WITHOUT_CODE = 1
GENERIC = "(generic)"  # as a reader: the generic families alone, one of the readings for a client we cannot name


@dataclass(frozen=True, slots=True)
class ExitStatus:
    code: int | None  # None: no number and no failure signal (absent, not 0)
    source: str  # the rule that decided, for the record
    verdict: Verdict = "unknown"
    # The result is flagged as failed (the dialect's flag, a [tool error] prefix, an error envelope):
    # a step must state a failing code or not be made (kinds.py).
    flagged: bool = False


# What a result without a flag and without a frame says: nothing (frozen, so one for all of them).
_NOTHING = ExitStatus(None, "", "unknown")

# The most lines a header (down to its ``Output:`` line) and a trailer may span.
_HEADER_LIMIT = 12
_TRAILER_LIMIT = 8

_BY_WHERE: dict[str, tuple[Rule, ...]] = {
    w: tuple(r for r in RULES if w in r.where) for w in ("header", "trailer", "first", "last")
}


def _any_of(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    """One pattern that fullmatches a line exactly when one of ``rules`` does: most lines a
    rule is tried on are the program's own output, and one regex turns them down faster than
    every rule in turn. (Each rule's global flags become scoped; its ``code`` group a plain one.)"""
    parts = []
    for rule in rules:
        p = rule.pattern.pattern.replace("(?P<code>", "(?:")
        flags = re.match(r"\(\?([a-zA-Z]+)\)", p)
        parts.append(f"(?{flags.group(1)}:{p[flags.end() :]})" if flags else f"(?:{p})")
    return re.compile("|".join(parts))


def _counted(where: str, client: str, flagged: bool) -> tuple[Rule, ...]:
    return tuple(r for r in _BY_WHERE[where] if _counts(r, client, flagged))


def _tables() -> dict[tuple[str, str, bool], tuple[tuple[Rule, ...], re.Pattern[str] | None]]:
    """For each place, known client (and ``ANY``: every client's rules, the screen of a reading
    for a client we cannot name) and error flag: the rules that count there, in order, and one
    pattern for all of them. Most lines tried are the program's own output: a client's few
    rules turn them down faster than every client's rules (or each rule's client check) would."""
    compiled: dict[tuple[Rule, ...], re.Pattern[str]] = {}
    table = {}
    for where in _BY_WHERE:
        for client in (*BY_ID, ANY, GENERIC):
            for flagged in (False, True):
                rules = _counted(where, client, flagged)
                if rules and rules not in compiled:
                    compiled[rules] = _any_of(rules)
                table[where, client, flagged] = (rules, compiled.get(rules))
    return table


def _int32(n: int) -> int | None:
    return n if -(2**31) <= n < 2**31 else None


def _code(n: int, source: str) -> ExitStatus:
    """A stated exit code; one beyond int32 (the step's field) cannot be stated: absent, never 1."""
    code = _int32(n)
    if code is None:
        # mutation: declined-number-becomes-1
        return ExitStatus(None, source, "declined")
    return ExitStatus(code, source, "code")


def _status(rule: Rule, m: re.Match[str]) -> ExitStatus:
    if rule.verdict == "code":
        return _code(int(m.group("code")), rule.name)
    if rule.verdict == "success":
        return ExitStatus(0, rule.name, "success")
    if rule.verdict == "failed":
        return ExitStatus(FAILED_WITHOUT_CODE, rule.name, "failed")
    return ExitStatus(None, rule.name, rule.verdict)


def _for(client: str, clients: tuple[str, ...]) -> bool:
    """Whether a frame of ``clients`` counts when reading for ``client``: a client's own frames,
    ``GENERIC`` the generic families, ``ANY`` every frame."""
    if client == ANY:
        return True
    if client == GENERIC:
        return ANY in clients
    return ANY not in clients and counts_for(client, clients)


def _counts(rule: Rule, client: str, is_error: bool | None) -> bool:
    return _for(client, rule.clients) and (rule.flag is None or rule.flag == bool(is_error))


_TABLES = _tables()


def _table(where: str, client: str, is_error: bool | None) -> tuple[tuple[Rule, ...], re.Pattern[str] | None]:
    found = _TABLES.get((where, client, bool(is_error)))
    if found is None:  # a name that is no client id (a family): the same rules, found the slow way
        rules = _counted(where, client, bool(is_error))
        found = (rules, _any_of(rules) if rules else None)
    return found


def _match(where: str, line: str, client: str, is_error: bool | None) -> ExitStatus | None:
    """The status the first of the client's ``where`` rules that fullmatches ``line`` says."""
    rules, any_of = _table(where, client, is_error)
    if any_of is None:
        return None
    line = line.strip()
    if not any_of.fullmatch(line):
        return None
    for rule in rules:
        m = rule.pattern.fullmatch(line)
        if m:
            return _status(rule, m)
    return None


def _header_end(lines: list[str]) -> int | None:
    """Where a client's header ends: the index of its bare ``Output:`` line, if any."""
    if "Output" not in "\n".join(lines[:_HEADER_LIMIT]):  # most results have no header
        return None
    for i, line in enumerate(lines[:_HEADER_LIMIT]):
        if OUTPUT_MARKER.fullmatch(line.strip()):
            return i
    return None


def _header(head: list[str], client: str, is_error: bool | None) -> ExitStatus | None:
    for line in head:
        found = _match("header", line, client, is_error)
        if found:
            return found
    return None


def _trailer(lines: list[str], client: str, is_error: bool | None) -> ExitStatus | None:
    """The strongest verdict among the trailing frame lines (a failure beats a code)."""
    found: list[ExitStatus] = []
    seen = 0
    for line in reversed(lines):
        if not line.strip():
            continue
        if seen == _TRAILER_LIMIT:
            break
        seen += 1
        status = _match("trailer", line, client, is_error)
        if status:
            found.append(status)
        elif not FRAME_LINES.fullmatch(line.strip()):
            break
    if not found:
        return None
    order = {"running": 0, "failed": 1, "code": 2, "success": 3}
    return min(found, key=lambda s: order.get(s.verdict, 9))


# ---- results that are JSON objects of the client's own making ------------------------------


def _codex_json(doc: dict[str, object]) -> ExitStatus | None:
    # Codex shell / local_shell (structured output): {"output": ..., "metadata": {"exit_code": N, ...}}.
    meta = doc.get("metadata")
    if set(doc) <= {"output", "metadata"} and isinstance(meta, dict) and type(meta.get("exit_code")) is int:
        return _code(meta["exit_code"], "codex-json")
    return None


def _mini(returncode: int, exception_info: str, source: str) -> ExitStatus:
    """mini-swe-agent: ``returncode`` as stated. -1 with ``exception_info`` is its own sentinel (a
    timeout or an error running the command): a stated number, so -1, never 1 (issue 39); its
    "action was not executed" stand-in: the command never ran."""
    if exception_info.strip() == MINI_NOT_RUN:
        return ExitStatus(None, source, "not_run")
    return _code(returncode, source)


# mutation: mini-swe-agent-frame-deleted
def _mini_json(doc: dict[str, object]) -> ExitStatus | None:
    keys = set(doc)
    if "returncode" not in keys or not (keys <= MINI_KEYS or keys <= MINI_LONG_KEYS):
        return None
    rc, info = doc["returncode"], doc.get("exception_info", "")
    if type(rc) is not int or not isinstance(info, str):
        return None
    return _mini(rc, info, "mini-swe-agent-json")


def _cline_json(doc: object) -> ExitStatus | None:
    # Cline v4 run_commands: [{"query", "result", "error"?, "success"}], one command per step.
    if not (isinstance(doc, list) and len(doc) == 1 and isinstance(doc[0], dict)):
        return None
    item = doc[0]
    if not isinstance(item.get("success"), bool):
        return None
    if item["success"]:
        # A command left running (detached by the user or the auto-proceed) is "success" too: its
        # result says so, and it has no outcome yet.
        result = item.get("result")
        if isinstance(result, str) and CLINE_V4_RUNNING.match(result):
            return ExitStatus(None, "cline-v4-json", "running")
        return ExitStatus(0, "cline-v4-json", "success")
    m = CLINE_V4_EXITED.fullmatch(str(item.get("error") or ""))
    if m:
        return _code(int(m.group("code")), "cline-v4-json")
    return ExitStatus(FAILED_WITHOUT_CODE, "cline-v4-json", "failed")


def _amazonq_json(doc: dict[str, object]) -> ExitStatus | None:
    # Amazon Q CLI: {"exit_status": "<string>", "stdout", "stderr"}. Its execute_bash writes a signal as
    # "0" (status.code().unwrap_or(0)): a bare 0 is no claim; "exit status: N" (execute_cmd) is.
    status = doc.get("exit_status")
    if set(doc) != AMAZONQ_KEYS or not isinstance(status, str):
        return None
    m = AMAZONQ_STATUS.fullmatch(status.strip())
    if m is None:
        return None
    if m.group("signal"):
        return ExitStatus(FAILED_WITHOUT_CODE, "amazonq-json", "failed")
    if m.group("bare") is not None:
        n = int(m.group("bare"))
        return None if n == 0 else _code(n, "amazonq-json")
    return _code(int(m.group("code")), "amazonq-json")


_GENERIC_KEYS = ("exit_code", "exitCode")
_GENERIC_TOP_KEYS = (*_GENERIC_KEYS, "returncode")  # Python's name, at the top only


def _generic_json(doc: dict[str, object]) -> ExitStatus | None:
    # Any client: a whole-result object with an integer exit_code / exitCode / returncode at the
    # top, or exit_code / exitCode in "metadata".
    meta = doc.get("metadata")
    for where, keys in ((doc, _GENERIC_TOP_KEYS), (meta if isinstance(meta, dict) else {}, _GENERIC_KEYS)):
        for key in keys:
            value = where.get(key)
            if type(value) is int:
                return _code(value, "json-exit-code")
    return None


def _gptme(t: _Text) -> ExitStatus | None:
    """gptme's shell result: its header first (``Ran command: `…```, ``Command timed out …``,
    ``Command interrupted: …``), the program's output fenced below it, and ``Return code: N`` last
    when N is not 0. Below gptme's header only: a program's own ``Return code`` line sits inside
    the fence (or elsewhere, under another client)."""
    head = GPTME_HEADER.fullmatch(t.first.strip())
    if head is None:
        return None
    last = t.last.strip()
    m = GPTME_CODE.fullmatch(last)
    if m:
        return _code(int(m.group("code") or m.group("icode")), "gptme-frame")
    if head.group("ran") is None or GPTME_FAILED.fullmatch(last):
        return ExitStatus(FAILED_WITHOUT_CODE, "gptme-frame", "failed")  # timed out, interrupted: no number
    return ExitStatus(0, "gptme-frame", "success")  # gptme writes no line for 0


_STRUCTURED_CLIENTS = {name: clients for name, clients, _, _ in STRUCTURED}  # who writes each structure
_NO_DOC = object()  # the result is no JSON document


def _structured(t: _Text, client: str) -> ExitStatus | None:
    """A whole result that is a client's own structure (JSON, mini-swe-agent's tags, gptme's
    header and closing line)."""
    text = t.body
    # The whole result only: a program's output always has an exit line above it.
    timeout_frame = text[:9] == "Chunk ID:" and AGENTS_SDK_TIMEOUT.fullmatch(text)
    if timeout_frame and _for(client, _STRUCTURED_CLIENTS["agents-sdk-timeout-frame"]):
        return ExitStatus(FAILED_WITHOUT_CODE, "agents-sdk-timeout-frame", "failed")
    if text.startswith(("Ran ", "Command ")) and _for(client, _STRUCTURED_CLIENTS["gptme-frame"]):
        found = _gptme(t)
        if found:
            return found
    if text[:1] == "<":
        m = MINI_XML.match(text)
        if m and _for(client, _STRUCTURED_CLIENTS["mini-swe-agent-xml"]):
            return _mini(int(m.group("code")), m.group("info") or "", "mini-swe-agent-xml")
        return None
    doc = t.doc
    if doc is _NO_DOC:
        return None
    if isinstance(doc, dict):
        readers = (
            ("codex-json", _codex_json),
            ("mini-swe-agent-json", _mini_json),
            ("amazonq-json", _amazonq_json),
            ("json-exit-code", _generic_json),
        )
        for name, read in readers:
            # mutation: codex-json-for-any-client
            if _for(client, _STRUCTURED_CLIENTS[name]):
                found = read(doc)
                if found:
                    return found
    if _for(client, _STRUCTURED_CLIENTS["cline-v4-json"]):
        return _cline_json(doc)
    return None


# ---- Gemini CLI family: a fixed frame around the output -----------------------------------


def _gemini_text(t: _Text) -> str:
    """The text the Gemini CLI family's frame may be in: the whole result, or the ``output`` of
    the Gemini API's response object when a gateway passes that object on as the result; without
    what stands around the frame (rules/gemini_frame.py): the hook's note at the end, the
    truncation preface at the start, the ``<untrusted_context>`` wrapper."""
    text = t.body
    if text[:1] == "{":
        doc = t.doc
        if isinstance(doc, dict) and len(doc) == 1 and isinstance(doc.get(GEMINI_RESPONSE_KEY), str):
            text = doc[GEMINI_RESPONSE_KEY].strip()
    if text.endswith("before execution."):
        m = GEMINI_HOOK_NOTE.search(text, max(0, len(text) - 400))
        if m:
            text = text[: m.start()].rstrip()
    if text[:1] in ("O", "T"):
        m = GEMINI_TRUNCATED.match(text)
        if m:
            text = text[m.end() :].lstrip("\n")
    if text.startswith("<untrusted_context>"):
        m = UNTRUSTED.match(text)
        if m:
            text = m.group(1).strip()
    return text


# mutation: gemini-frame-deleted
def _gemini_frame(text: str) -> ExitStatus | None:
    """Gemini CLI / Qwen Code ``run_shell_command``: ``[Command: …][Directory: …]Output: …`` at the
    start, then ``Error:``, ``Exit Code:``, ``Signal:``, ``Background PIDs:``, ``Process Group PGID:``
    lines at the end, each optional, in that order. Gemini CLI writes ``Exit Code`` only when it is
    not 0; Qwen Code always writes it (``(none)`` for a signal). ``Signal: 0`` or ``(none)`` is no
    signal. Only lines in the frame's own slots count: a program line that looks like one sits
    above them, in the output."""
    if not GEMINI_START.match(text):
        return None
    lines = QWEN_NOTE.sub("", text).splitlines()
    frame: dict[str, str] = {}
    slot = len(GEMINI_SLOTS)
    for line in reversed(lines[1:]):
        key, sep, value = line.partition(": ")
        if not sep or key not in GEMINI_SLOTS[:slot]:
            break
        slot = GEMINI_SLOTS.index(key)
        frame[key] = value.strip()
    if "Process Group PGID" not in frame and "Exit Code" not in frame:
        return None  # not the client's closing frame (it always ends on one of these)
    code_text = frame.get("Exit Code", "(none)")
    signal = frame.get("Signal", "(none)")
    error = frame.get("Error", "(none)")
    # mutation: gemini-signal-0-is-failure
    signalled = signal not in GEMINI_NONE and signal != "0"
    failed = signalled or error not in GEMINI_NONE
    if code_text not in GEMINI_NONE:
        if not re.fullmatch(r"-?\d{1,19}", code_text):
            return None
        status = _code(int(code_text), "gemini-frame")
        if status.code == 0 and failed:
            return ExitStatus(None, "gemini-frame", "conflict")
        return status
    if failed:
        return ExitStatus(FAILED_WITHOUT_CODE, "gemini-frame", "failed")
    if "Exit Code" in frame:  # Qwen Code: "(none)" and no signal, no error: nothing stated
        return None
    return ExitStatus(0, "gemini-frame", "success")  # Gemini CLI writes no Exit Code line for 0


def has_error_prefix(text: str) -> bool:
    return text.lstrip()[: len(ERROR_PREFIX)].lower() == ERROR_PREFIX


def strip_frame(text: str) -> tuple[str, bool]:
    """The result without client framing that carries no status; and whether it had an error prefix."""
    text = text.strip()
    flagged = has_error_prefix(text)
    if flagged:
        text = text[len(ERROR_PREFIX) :].strip()
    m = UNTRUSTED.match(text)  # Gemini CLI wraps results since 2026-06
    if m:
        text = m.group(1).strip()
    if text[:1] == "O":  # SWE-agent's observation prefix
        m = OBSERVATION.match(text)
        if m:
            text = text[m.end() :].strip()
    nl = text.find("\n")  # the first line only: no copy of the rest unless it is kept
    first = text if nl < 0 else text[:nl]
    if CLINE_PREFIX.fullmatch(first.strip()):  # Cline: "[execute_command for '...'] Result:"
        text = "" if nl < 0 else text[nl + 1 :].strip()
    return text, flagged


_EDGE = 1024  # characters read at each end of a long result


def _edges(text: str) -> tuple[list[str], list[str]]:
    """The lines a frame can stand on, as ``text.splitlines()`` gives them: the first ones (the
    first non-blank among them, the header) and the last ones (a trailer of up to
    ``_TRAILER_LIMIT`` non-blank lines, the last non-blank). A long result is not split whole:
    each end is read as far as it holds those lines complete; otherwise (a short result, or an
    end of blank or very long lines) it is split whole."""
    if len(text) > 2 * _EDGE:
        head = text[:_EDGE].splitlines()
        # The last line of each piece may be cut: only lines with a line break after (head) or
        # before (tail) them inside the piece are whole.
        tail = text[-_EDGE:].splitlines()[1:]
        head = head[:_HEADER_LIMIT] if len(head) > _HEADER_LIMIT else []
        if any(map(str.strip, head)) and sum(map(bool, map(str.strip, tail))) >= _TRAILER_LIMIT:
            return head, tail
    lines = text.splitlines()
    return lines, lines


class _Text:
    """A result's places, found once however many clients read it: the lines a frame can stand
    on, the header's end and the JSON document the whole result may be."""

    __slots__ = ("_doc", "body", "end", "first", "head", "last", "tail")

    def __init__(self, body: str) -> None:
        self.body = body
        head, tail = _edges(body)
        self.head, self.tail = head, tail
        self.first = self.last = ""  # the first and the last non-blank line
        for ln in head:
            if ln.strip():
                self.first = ln
                break
        for ln in reversed(tail):
            if ln.strip():
                self.last = ln
                break
        self.end = _header_end(head)
        self._doc: object = None

    @property
    def doc(self) -> object:
        if self._doc is None:
            self._doc = _NO_DOC
            if self.body[:1] in ("{", "["):
                with contextlib.suppress(orjson.JSONDecodeError):
                    self._doc = orjson.loads(self.body)
        return self._doc


def _frames(t: _Text, client: str, flagged: bool) -> ExitStatus | None:
    """What the frames ``client`` reads say, each at its own place; None: nothing."""
    found = _structured(t, client)
    if found:
        return found
    if _for(client, GEMINI_CLIENTS):
        found = _gemini_frame(_gemini_text(t))
        if found:
            return found
    if t.end is not None and _table("header", client, flagged)[0]:
        # A client that frames the output below its header: only the header speaks. (As the
        # screen of every frame, ANY goes on where the header says nothing: a client without
        # a header reads the other places.)
        head = _header(t.head[: t.end], client, flagged)
        head = head or (_match("first", t.first, client, flagged) if t.end else None)
        if head or client != ANY:
            return head
    return (
        _trailer(t.tail, client, flagged)
        or _match("first", t.first, client, flagged)
        or _match("last", t.last, client, flagged)
    )


_CAUTION = ("not_run", "running")  # readings that make no step: they win a disagreement


def _unnamed(t: _Text, flagged: bool) -> ExitStatus | None:
    """For a client we cannot name: the text as every known client reads it, and as the generic
    families do. One reading (the readers that read nothing aside) is the answer; readings that
    differ are no claim, except that "never ran" or "still running" wins (no step is the
    cautious answer)."""
    if _frames(t, ANY, flagged) is None:  # no frame of any client at its place: nobody reads a thing
        return None
    readings: dict[tuple[int | None, Verdict], list[str]] = {}
    for client in (*BY_ID, GENERIC):
        found = _frames(t, client, flagged)
        if found is not None:
            sources = readings.setdefault((found.code, found.verdict), [])
            if found.source not in sources:
                sources.append(found.source)
                sources.sort()
    if len(readings) == 1:
        ((code, verdict), sources), *_ = readings.items()
        return ExitStatus(code, "+".join(sources), verdict)
    for caution in _CAUTION:
        for (code, verdict), sources in readings.items():
            if verdict == caution:
                return ExitStatus(code, "+".join(sources), verdict)
    told = "; ".join(f"{'+'.join(src)} says {code if code is not None else v}" for (code, v), src in readings.items())
    return ExitStatus(None, f"clients read it differently ({told})", "conflict")


def _borrowed(t: _Text, client: str, flag: str) -> ExitStatus | None:
    """A flagged result whose named client's own frames say nothing, read in every known client's
    frames (issue 39, item 4: an identity is a claim, not a proof). A client can present itself
    with another's user agent and tool names; its own frame then stands at its place. The flag
    decides the direction (a failure), so the frame can only say which failure: the number the
    frames of the known clients state unambiguously (the reading of a client we cannot name,
    the planner hop's reading of the same text), or their failure words without a number (1).
    Frames that read it differently, or say 0, or state a number the step cannot carry: no
    number (a declined one never becomes 1), and the pair stays a message with its flag (kinds.py
    makes no step of a flagged result without a failing code). None: no known frame at all."""
    other = _unnamed(t, True)
    if other is None:
        return None
    whose = f"{flag}; {other.source}, not {client}'s own frame"
    if other.verdict in _CAUTION:
        return ExitStatus(None, whose, other.verdict)
    if other.verdict in ("code", "failed") and other.code not in (None, 0):
        return ExitStatus(other.code, whose, other.verdict)
    if other.verdict == "declined":
        return ExitStatus(None, f"{whose}: a number the step cannot carry", "declined")
    if other.verdict in ("code", "success", "conflict"):
        return ExitStatus(None, f"{whose}: against the flag", "conflict")
    return None


def _envelopes(client: str | None) -> tuple[tuple[Envelope, ...], re.Pattern[str] | None]:
    """The envelopes that count for ``client`` (every one for a client we cannot name), and one
    pattern for all of them: most results are in none, and one regex turns them down at once."""
    envs = tuple(e for e in ENVELOPES if client is None or counts_for(client, e.clients))
    parts = "|".join(f"(?:{e.pattern.pattern.replace('(?P<inner>', '(?:')})" for e in envs)
    return envs, re.compile(parts, re.S) if envs else None


_ENVELOPES = {client: _envelopes(client) for client in (*BY_ID, None)}


def _envelope(body: str, client: str | None) -> tuple[str, Envelope] | None:
    """The error an envelope of ``client``'s (any client's, for one we cannot name) wraps the whole
    result around (rules/envelopes.py), and the envelope; None: no envelope of its."""
    envs, any_of = _ENVELOPES.get(client) or _envelopes(client)
    if any_of is None or not body or not any_of.fullmatch(body):
        return None
    for env in envs:
        m = env.pattern.fullmatch(body)
        if m is None:
            continue
        if env.inner_key is None:
            return m.group("inner").strip(), env
        with contextlib.suppress(orjson.JSONDecodeError):
            doc = orjson.loads(body)
            if isinstance(doc, dict):
                inner = doc.get(env.inner_key)
                return (inner.strip() if isinstance(inner, str) else ""), env
    return None


def parse_exit_status(text: str, is_error: bool | None = None, client: str | None = None) -> ExitStatus:
    """What a shell result says about the command's outcome, for ``client`` (an id of clients.py).

    ``client`` None: the client cannot be named, so the text is read as every known client
    would read it (:func:`_unnamed`). ``is_error`` is the dialect's error flag; a ``[tool
    error]`` prefix is one too. The flag is authoritative in its direction: a flagged result
    is never exit 0 (a frame that says 0 or success conflicts with it: no claim); with a
    number a frame states, it is that number; with none, 1. When the named client's own frames
    say nothing of a flagged result, another client's frame at its place says which failure
    (:func:`_borrowed`: an identity is a claim); without the flag, another client's frame is
    the program's output (absent)."""
    body, prefixed = strip_frame(text)
    if NOT_RUN.match(body):  # refusals are never claims: recognised for every client
        return ExitStatus(None, "not-run", "not_run")
    wrapped = _envelope(body, client)  # an error envelope: a failure flag in words, around the error
    if wrapped is not None:
        body = wrapped[0]
        if NOT_RUN.match(body):  # a refusal inside it: never ran
            return ExitStatus(None, f"not-run in {wrapped[1].name}", "not_run")
    flagged = bool(is_error) or prefixed or wrapped is not None
    t = _Text(body)
    found = _frames(t, client, flagged) if client is not None else _unnamed(t, flagged)
    if found is not None and found.verdict in _CAUTION:
        return found
    if not flagged:
        return found if found is not None else _NOTHING
    if is_error:
        flag = "error flag"
    elif prefixed:
        flag = "[tool error] prefix"
    else:
        assert wrapped is not None, "flagged by nothing but an error envelope"
        flag = wrapped[1].name
    if found is None:
        borrowed = _borrowed(t, client, flag) if client is not None else None
        found = borrowed or ExitStatus(FAILED_WITHOUT_CODE, flag, "failed")
    # mutation: error-flag-precedence
    elif found.code == 0 or found.verdict in ("success", "conflict"):
        found = ExitStatus(None, f"{flag} against {found.source}", "conflict")
    return replace(found, flagged=True)
