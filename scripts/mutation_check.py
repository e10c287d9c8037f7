"""Mutation check of the truth rules: re-introduce each known defect, one at a time, and show the tests fail.

    .venv/bin/python scripts/mutation_check.py              # every mutation, each with its own tests
    .venv/bin/python scripts/mutation_check.py --list       # rule -> mutations, without running anything
    .venv/bin/python scripts/mutation_check.py -k delta -k stdout --jobs 1
    scripts/dev mutation                                    # the same, as CI runs it (.ci/run)

Each mutation is a small source edit that puts back one defect of the known gateway (design brief,
"The problem") or breaks one truth rule. It is anchored by a marker the code keeps: the comment
``# mutation: <name>`` on its own line stands above the statement the mutation edits, and the edit's
pattern must match exactly once in that statement. Moving or refactoring the code moves the marker
with it; a marker that is gone, found twice, or above a statement the pattern no longer matches is a
FAILURE of the check (exit 1 before anything runs), never a skip. ``tests/test_mutation_table.py``
checks the same in the default suite, with no test run: every anchor, every truth rule covered.

Each mutation names the tests that catch it (a few fast files), so the whole check stays short. The
checkout is never touched: the files (tracked and untracked, as git lists them, minus ignored ones)
are copied to a temporary directory per worker, the mutation is applied there, and its tests run
there with ``PYTHONPATH`` pointing at the copy's ``addons/`` (ahead of the editable install). A
baseline run of the unmutated copy (every selected test) must pass first.

A mutation is caught when its test run fails; the first failing test is shown. Exit status: 0 when
every mutation applies and is caught, 1 when an anchor is missing or a mutation survives, 2 when the
baseline fails. The last lines are a Markdown table.
"""

from __future__ import annotations

import argparse
import ast
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "addons/native_bridge"
MARKER = re.compile(r"^\s*#\s*mutation:\s*(?P<names>\S.*?)\s*$")

# The design brief's truth rules (README, "What the bridge guarantees", lists 1-9; 10 is the planner hop's).
TRUTH_RULES = {
    "1": "correlate by id, never by position",
    "2": "no step without an observation",
    "3": "failure stays failure, in the client's own words",
    "4": "one copy of the output",
    "5": "say only what the step can say",
    "6": "nothing is lost",
    "7": "send each step once",
    "8": "idempotent and deterministic",
    "9": "fail open for traffic, closed for claims",
    "10": "correct, never invent (planner hop)",
}
# What else a mutation may guard: no truth rule, but a defect the planner's wire must refuse.
OTHER_GUARDS = {
    "wire": "the planner's wire read strictly (framing, protobuf)",
    "secrets": "Metadata credentials redacted on every path we write",
}

# Each mutation's tests: a few files that catch it in seconds.
BUILDER = ("tests/test_builder.py", "tests/test_probe.py")
KINDS = ("tests/test_kinds.py", "tests/test_probe.py")
EXIT = ("tests/test_exitstatus.py", "tests/test_exitstatus_clients.py")
FRAMES = ("tests/test_exitstatus_clients.py",)
CLIENTS = ("tests/test_clients.py",)  # each client's words for a non-shell result
CORRECT = ("tests/cascade/test_cascade_correct.py", "tests/cascade/test_cascade_calls.py")
CALLS = ("tests/cascade/test_cascade_calls.py", "tests/cascade/test_cascade_request.py")
LEDGER = ("tests/cascade/test_cascade_ledger.py", *CALLS)
WIRE = (
    "tests/cascade/test_cascade_framing.py",
    "tests/cascade/test_cascade_wire.py",
    "tests/cascade/test_cascade_gateway_requests.py",
)


@dataclass(frozen=True)
class Edit:
    pattern: str  # a regex that must match exactly once in the statement under the marker
    replacement: str  # re.sub replacement (backreferences allowed)
    marker: str = ""  # the marker it stands under; default: the mutation's name


@dataclass(frozen=True)
class Mutation:
    name: str
    rule: str  # the truth rule it breaks (TRUTH_RULES), or what else it guards (OTHER_GUARDS)
    defect: str  # the defect it re-introduces
    tests: tuple[str, ...]  # pytest arguments: the tests that must catch it
    edits: tuple[Edit, ...]


def _m(name: str, rule: str, defect: str, tests: tuple[str, ...], *edits: Edit) -> Mutation:
    return Mutation(name, rule, defect, tests, edits)


def _lit(old: str, new: str, marker: str = "") -> Edit:
    """An edit of exact text (no regex)."""
    return Edit(re.escape(old), new.replace("\\", r"\\"), marker)


MUTATIONS: list[Mutation] = [
    # ---- the chat hop: builder, kinds, exit status, dialects ------------------------------------
    _m(
        "correlate-by-position",
        "1",
        "results paired with calls by position, not by id",
        BUILDER,
        Edit(
            r"results = \{r\.call_id: r for r in history\.results\}",
            r"results = dict(zip([c.id for c in history.calls], history.results)); "
            r"result_ids = {k: 1 for k in results}",
        ),
    ),
    _m(
        "duplicate-result-last-wins",
        "1",
        "a call answered twice: the last result wins (ambiguous pair stepped)",
        BUILDER,
        Edit(r"if n_results > 1:\n", r"if False:\n"),
    ),
    _m(
        "result-before-call",
        "1",
        "a result that comes before its call is paired anyway",
        BUILDER,
        Edit(r"if result\.pos < call\.pos:", r"if False:"),
    ),
    _m(
        "done-without-result",
        "2",
        "a call with no result becomes a DONE step (empty output)",
        BUILDER,
        Edit(
            r"if n_results == 0:\n(\s+)d\.code, d\.reason = \"unobserved\", [^\n]*\n\s+continue\n",
            r"if n_results == 0:\n\1results[call.id] = ToolResult(call.pos, call.turn, call.id, '')\n"
            r"\1result_ids[call.id] = 1\n",
        ),
    ),
    _m(
        "aborted-over-chat-observed",
        "2",
        "Codex's `aborted` stand-in over Chat Completions becomes a DONE step",
        CLIENTS,
        Edit(r'placeholder=text == "aborted"', r"placeholder=False"),
    ),
    _m(
        "exit-code-zero",
        "3",
        "run_command exit_code forced to 0",
        KINDS,
        Edit(r"if code is not None:\n(\s+)out\[\"exit_code\"\] = code", r"if True:\n\1out['exit_code'] = 0"),
    ),
    _m(
        "is-error-ignored",
        "3",
        "Anthropic is_error thrown away before translation",
        ("tests/test_anthropic.py", "tests/test_probe.py"),
        Edit(r"is_error = b\.get\(\"is_error\"\)", r"is_error = None"),
    ),
    _m(
        "failure-without-number-is-zero",
        "3",
        "a failure signal without a number encoded as exit 0",
        EXIT,
        Edit(r"FAILED_WITHOUT_CODE = 1", r"FAILED_WITHOUT_CODE = 0"),
    ),
    _m(
        "declined-number-becomes-1",
        "3",
        "a stated number beyond int32 (declined) becomes exit 1 instead of absent",
        EXIT,
        Edit(r'return ExitStatus\(None, source, "declined"\)', r'return ExitStatus(1, source, "failed")'),
    ),
    _m(
        "frames-count-for-every-client",
        "3",
        "every client's frame tried on every client's output (a program's line decides the verdict)",
        (*FRAMES, "tests/test_clients.py"),
        Edit(r"    if client is None:\n        return False\n", r"    return True\n"),
    ),
    _m(
        "gemini-frame-deleted",
        "3",
        "the Gemini CLI family's frame deleted",
        EXIT,
        Edit(r"(\n(\s+)\"\"\"[^\"]*\"\"\"\n)", r"\1\2return None\n"),
    ),
    _m(
        "gemini-signal-0-is-failure",
        "3",
        "Gemini CLI family: `Signal: 0` read as a failure (every command exit 1)",
        EXIT,
        Edit(r'signalled = signal not in GEMINI_NONE and signal != "0"', r"signalled = signal not in GEMINI_NONE"),
    ),
    _m(
        "mini-swe-agent-frame-deleted",
        "3",
        "mini-swe-agent's result structure deleted (its failures reach the planner as unknown)",
        EXIT,
        Edit(r"(def _mini_json\(doc: dict\[str, object\]\) -> ExitStatus \| None:\n)", r"\1    return None\n"),
    ),
    _m(
        "codex-json-for-any-client",
        "3",
        "a JSON `metadata.exit_code` printed by a program (`cat status.json`) read as the status",
        EXIT,
        Edit(r"if _for\(client, _STRUCTURED_CLIENTS\[name\]\):", r"if True:"),
    ),
    _m(
        "error-flag-precedence",
        "3",
        "a flagged result whose text says exit 0 is sent as exit 0",
        EXIT,
        Edit(r'if found\.code == 0 or found\.verdict in \("success", "conflict"\):', r"if False:"),
    ),
    _m(
        "output-in-stdout",
        "4",
        "the output written twice: stdout and combined_output",
        KINDS,
        Edit(r"\{\"combined_output\": \{\"full\": ([^\n]+?)\}\}", r"{'combined_output': {'full': \1}, 'stdout': \1}"),
    ),
    _m(
        "failed-read-stepped",
        "5",
        "a failed file read becomes a DONE view_file step (the error as content)",
        KINDS,
        Edit(r"_succeeded_text\(r, \"view_file\", client\)", r"_result_text(r, 'view_file')"),
    ),
    _m(
        "non-shell-without-evidence",
        "5",
        "a non-shell step without the client's words for success (an unknown wording taken as success)",
        KINDS,
        Edit(r"if found is None:\n", r"if False:\n"),
    ),
    _m(
        "failure-words-deleted",
        "5",
        "the non-shell failure phrases deleted (a failed list/edit in words is not a failure)",
        CLIENTS,
        Edit(
            r"TOOL_FAILED: re\.Pattern\[str\] = re\.compile\(\n",
            r"TOOL_FAILED: re.Pattern[str] = re.compile(r'(?!)') or re.compile(\n",
        ),
    ),
    _m(
        "file-created-guessed",
        "5",
        "file_created stated false for a client that words creation differently",
        CLIENTS,
        Edit(
            r'return \{\} if found\.file_created is None else \{"file_created": found\.file_created\}',
            r'return {"file_created": bool(found.file_created)}',
        ),
    ),
    _m(
        "orphan-dropped",
        "6",
        "an orphan result (no call carries its id) dropped from the messages",
        BUILDER,
        Edit(r"(p\.pos for p in placements if p\.step is not None)", r"\1 or p.code == 'orphan'"),
    ),
    _m(
        "unmapped-dropped",
        "6",
        "an unmapped tool's call and result dropped from the messages",
        BUILDER,
        Edit(r"(p\.pos for p in placements if p\.step is not None)", r"\1 or p.code == 'unmapped'"),
    ),
    _m(
        "whole-history-resent",
        "7",
        "the whole history re-sent on a resumed turn (delta_start forced to 0)",
        BUILDER,
        Edit(r"(\n(\s+)\"\"\"[^\n]*\"\"\"\n)", r"\1\2return 0\n"),
    ),
    _m(
        "rewrite-of-rewritten",
        "8",
        "a body that already carries additional_steps is rewritten again",
        ("tests/test_chat.py", "tests/test_properties.py::test_idempotent"),
        Edit(r"if STEPS_KEY in body:", r"if False:"),
    ),
    _m(
        "chat-fail-closed",
        "9",
        "a failure in a hop's work stops the request instead of sending the original",
        ("tests/test_dispatch.py",),
        Edit(r"return work\.failed\(e\)", r"raise e"),
    ),
    # ---- the planner hop: corrections, ledger, splice ------------------------------------------
    _m(
        "planner-unobserved-kept",
        "2",
        "a DONE run_command without output (never observed) kept",
        CORRECT,
        _lit("if rc.stdout is None and rc.stderr is None and not rc.combined_output:", "if False:"),
    ),
    _m(
        "planner-running-step-dropped",
        "2",
        "a step not over yet (RUNNING) dropped as never observed (only DONE claims an outcome)",
        CORRECT,
        _lit("if not v.done:  # a step not over yet (RUNNING, PENDING, ...) claims no outcome\n", "if False:\n"),
    ),
    _m(
        "planner-exit-code-kept",
        "3",
        "the gateway's exit code (always 0) kept",
        CORRECT,
        _lit("fixed = rewrap(step, v, edit(body, v.body_fields, drop=drop, varint=varint))", "fixed = step"),
    ),
    _m(
        "planner-evidence-ignored",
        "3",
        "the chat hop's observation ignored (the client's error flag lost)",
        CORRECT,
        _lit('obs = lookup("run_command", subject, text) if lookup and subject is not None else None', "obs = None"),
    ),
    _m(
        "planner-observed-exit-code-ignored",
        "3",
        "the exit code the chat hop observed ignored",
        CORRECT,
        _lit("if obs is not None and obs.exit_code is not None:", "if False:"),
    ),
    _m(
        "planner-conflict-claims",
        "3",
        "conflicting signals (flag vs. stated code) make a claim anyway",
        CORRECT,
        _lit("if failed is not None and failed != (obs.exit_code != 0):", "if False:"),
    ),
    _m(
        "planner-exit-code-unsigned",
        "3",
        "a negative exit code read as unsigned (a 10-byte varint taken as 2**64 - n)",
        CORRECT,
        _lit("exit_code = int32(varint_value(body, f))", "exit_code = varint_value(body, f)"),
    ),
    _m(
        "planner-stdout-duplicate-kept",
        "4",
        "stdout repeating combined_output.full kept",
        CORRECT,
        _lit(
            "twice = STDOUT if rc.combined_output and rc.stdout is not None and rc.stdout == rc.full else None",
            "twice = None",
        ),
    ),
    _m(
        "planner-non-shell-failure-kept",
        "5",
        "a non-shell step whose result is a failure in words kept",
        CORRECT,
        _lit("if text is not None and signals_failure(", "if False and signals_failure("),
    ),
    _m(
        "planner-ledger-as-set",
        "7",
        "delivered steps matched as a set, not a prefix (a command run twice loses its second run)",
        LEDGER,
        _lit("if old != new:\n            break\n", "if new not in known:\n            break\n"),
    ),
    _m(
        "planner-ledger-of-corrected-steps",
        "7",
        "the ledger holds the corrected steps (the next turn's identical gateway step is not recognised)",
        CALLS,
        _lit(
            "delivery=Delivery(req.steps, known)",
            "delivery=Delivery(correct(req.steps, evidence, client=client).steps, known)",
        ),
    ),
    _m(
        "planner-delivered-resent",
        "7",
        "a resumed cascade's delivered steps sent again",
        CALLS,
        _lit("start = delivered_prefix(delivered, req.steps)", "start = 0"),
    ),
    _m(
        "planner-replay-cut",
        "7",
        "a replay (the whole trajectory stated again) cut by the ledger",
        CALLS,
        _lit("if not call.cut_delivered:", "if False:"),
    ),
    _m(
        "planner-splice-not-identity",
        "8",
        "a request with nothing to correct re-encoded instead of sent as it came",
        CALLS,
        _lit("if list(new_steps) == req.steps:\n        return payload", "if False:\n        return payload"),
    ),
    _m(
        "wire-gzip-timestamp",
        "8",
        "a gzip envelope stamped with a time (the same input no longer gives the same bytes)",
        WIRE,
        _lit("gzip.compress(payload, mtime=0)", "gzip.compress(payload, mtime=12345)"),
    ),
    _m(
        "planner-fail-closed",
        "9",
        "a bug in the planner hop's correction raises instead of sending the gateway's body",
        ("tests/cascade/test_cascade_gateway_requests.py",),
        Edit(r'return PlannerResult\("skipped", f"internal error: [^\n]*', r"raise"),
    ),
    _m(
        "planner-running-step-unjudged",
        "10",
        "a step not over yet (RUNNING) left unjudged (its false exit code and duplicate output kept)",
        CORRECT,
        Edit(r"^(\s+)claim = ", r"\1if not v.done:\n\1    return step, []\n\1claim = "),
    ),
    _m(
        "planner-command-status-unjudged",
        "10",
        "command_status bodies left unjudged",
        CORRECT,
        _lit(
            '_SHELL_FIXES = {"run_command": _run_command, "command_status": _command_status}',
            '_SHELL_FIXES = {"run_command": _run_command}',
        ),
    ),
    _m(
        "planner-type-kept",
        "10",
        "a type that names another kind than its body kept",
        CORRECT,
        _lit('if new is not None and types == "official":', "if False:"),
    ),
    _m(
        "planner-splice-appends",
        "10",
        "corrected steps appended at the end instead of in the first one's place",
        CALLS,
        _lit("if i == 0:\n            out += encoded", "if False:\n            out += encoded"),
    ),
    _m(
        "planner-empty-send",
        "10",
        "a correction that leaves neither items nor steps sent anyway",
        CALLS,
        _lit("if req.steps and not fixed.steps and not req.items:", "if False:"),
    ),
    _m(
        "planner-unknown-step-fields-lost",
        "10",
        "a step's unknown fields dropped when its body is rewritten",
        CORRECT,
        _lit(
            "return step[: f.start] + len_field(v.body_field, new_body) + step[f.end :]",
            "return bytes(step[v.fields[0].start : v.fields[1].end]) + len_field(v.body_field, new_body)",
        ),
    ),
    _m(
        "planner-unknown-body-fields-lost",
        "10",
        "a body's unknown fields dropped when it is edited",
        CORRECT,
        _lit("elif f.number not in drop:\n", "elif f.number not in drop and f.number < 50:\n"),
    ),
    _m(
        "planner-metadata-not-redacted",
        "secrets",
        "Metadata api_key and user_jwt written to records as they came",
        CALLS,
        _lit("len_field(g.number, REDACTED) if g.number in SECRET_METADATA_FIELDS else ", ""),
    ),
    _m(
        "wire-bomb-inflated",
        "wire",
        "a gzip envelope inflated whole (no size limit: a decompression bomb)",
        WIRE,
        _lit("out += d.decompress(chunk, max_size + 1 - len(out))", "out += d.decompress(chunk)"),
    ),
    _m(
        "wire-trailing-bytes",
        "wire",
        "bytes after the last envelope accepted",
        WIRE,
        _lit("if end < len(body):", "if False:"),
    ),
    _m(
        "wire-end-stream",
        "wire",
        "a Connect end-stream envelope accepted in a request",
        WIRE,
        _lit("if flags & _END_STREAM:\n", "if False:\n"),
    ),
    _m(
        "wire-negative-varint",
        "wire",
        "a negative int32 read from its 5 low bytes",
        CORRECT,
        _lit("n += 1 << 64", "n &= 0xFFFFFFFF"),
    ),
    _m(
        "wire-group",
        "wire",
        "a protobuf group (wire types 3/4) accepted",
        WIRE,
        _lit(
            "elif wire_type in (SGROUP, EGROUP):\n            raise",
            "elif wire_type in (SGROUP, EGROUP):\n            value_start = pos; continue\n            raise",
        ),
    ),
    _m(
        "wire-two-bodies",
        "wire",
        "a step holding two bodies accepted",
        WIRE,
        _lit("if body is not None:\n                raise", "if False:\n                raise"),
    ),
]


def frame_names(source: Path = ROOT) -> list[str]:
    """The client frames of rules/exit_frames.py, by name, from the table under its marker."""
    found = _markers(source).get("frame-deleted", [])
    if len(found) != 1:
        return []
    path, line = found[0]
    text = (source / path).read_text()
    start, end = _statement(text, line)
    return re.findall(r'_r\(\n\s+"([a-z0-9-]+)",', text[start:end])


def _frame_deletions(source: Path) -> list[Mutation]:
    """One mutation per client frame: the frame counts for no client (its scope emptied)."""
    return [
        _m(
            f"frame-deleted:{name}",
            "3",
            f"the client frame {name} deleted (counts for no client)",
            FRAMES,
            Edit(
                rf'(_r\(\n\s+"{re.escape(name)}",\n(?:(?!    _r\().*\n)*?\s+\)\.scoped\()\([^)]*\)',
                r"\1()",
                "frame-deleted",
            ),
        )
        for name in frame_names(source)
    ]


def all_mutations(source: Path = ROOT) -> list[Mutation]:
    return MUTATIONS + _frame_deletions(source)


# ---- the anchors --------------------------------------------------------------------------------


class AnchorError(Exception):
    """A mutation that cannot be applied: its marker or its statement is gone. A failure, never a skip."""


def _markers(source: Path) -> dict[str, list[tuple[str, int]]]:
    """Marker name -> every (file, line) that carries it, in the package."""
    found: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path in sorted((source / PACKAGE).rglob("*.py")):
        text = path.read_text()
        if "mutation:" not in text:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            m = MARKER.match(line)
            if m:
                for name in m["names"].split(","):
                    found[name.strip()].append((str(path.relative_to(source)), n))
    return found


@functools.lru_cache(maxsize=64)
def _ends(text: str) -> dict[int, int]:
    """First line -> last line of the statements that start on it (the outermost one's)."""
    out: dict[int, int] = {}
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.stmt):
            out[n.lineno] = max(out.get(n.lineno, 0), n.end_lineno or n.lineno)
    return out


def _statement(text: str, marker_line: int) -> tuple[int, int]:
    """The character span of the statement the marker on ``marker_line`` stands above (the
    first line after it that is neither blank nor a comment starts it), whole lines."""
    lines = text.splitlines(keepends=True)
    i = marker_line  # 0-based: the line after the marker
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        i += 1
    end = _ends(text).get(i + 1)
    if end is None:
        raise AnchorError(f"line {marker_line}: the marker stands above no statement")
    return sum(map(len, lines[:i])), sum(map(len, lines[:end]))


def _find(texts: dict[str, str], source: Path, marker: str, index: dict[str, list[tuple[str, int]]]) -> tuple[str, int]:
    """The marker's file and its line in the file's current text (an earlier edit may have moved it)."""
    where = index.get(marker, [])
    if len(where) != 1:
        said = ", ".join(f"{p}:{n}" for p, n in where) or f"nowhere under {PACKAGE}/"
        raise AnchorError(f"`# mutation: {marker}` must be in the code exactly once, found {said}")
    path = where[0][0]
    text = texts.setdefault(path, (source / path).read_text())
    lines = [n for n, line in enumerate(text.splitlines(), 1) if (m := MARKER.match(line)) and
             marker in [s.strip() for s in m["names"].split(",")]]  # fmt: skip
    return path, lines[0]


def mutated(source: Path, mutation: Mutation, index: dict[str, list[tuple[str, int]]] | None = None) -> dict[str, str]:
    """The files ``mutation`` changes (relative path -> new text); raises :class:`AnchorError`."""
    index = _markers(source) if index is None else index
    texts: dict[str, str] = {}
    for e in mutation.edits:
        marker = e.marker or mutation.name
        path, line = _find(texts, source, marker, index)
        text = texts[path]
        try:
            start, end = _statement(text, line)
        except AnchorError as err:
            raise AnchorError(f"{path}: {err}") from None
        n = len(re.findall(e.pattern, text[start:end], re.M))
        if n != 1:
            first = text[start:end].strip().splitlines()[0][:70]
            raise AnchorError(f"{path}:{line + 1}: /{e.pattern[:50]}/ matches {n} times in `{first}`")
        texts[path] = text[:start] + re.sub(e.pattern, e.replacement, text[start:end], count=1, flags=re.M) + text[end:]
    for path, text in texts.items():
        try:
            ast.parse(text)
        except SyntaxError as err:  # a broken file fails every test: that would be no catch
            raise AnchorError(f"{path}: the mutated code does not parse: {err}") from None
    return texts


def problems(source: Path = ROOT, mutations: list[Mutation] | None = None) -> list[str]:
    """Why the table cannot be trusted in ``source``; empty when every mutation applies, every
    marker is used, every truth rule has a mutation and every mutation's tests exist."""
    mutations = all_mutations(source) if mutations is None else mutations
    index = _markers(source)
    out = []
    names = [m.name for m in mutations]
    out += [f"{n}: two mutations of this name" for n in sorted({n for n in names if names.count(n) > 1})]
    if not any(m.name.startswith("frame-deleted:") for m in mutations):
        out.append("frame-deleted: no client frame found under `# mutation: frame-deleted`")
    for m in mutations:
        try:
            mutated(source, m, index)
        except AnchorError as e:
            out.append(f"{m.name}: {e}")
        if m.rule not in TRUTH_RULES and m.rule not in OTHER_GUARDS:
            out.append(f"{m.name}: rule {m.rule!r} is no truth rule")
        for t in m.tests:
            if not (source / t.split("::")[0]).exists():
                out.append(f"{m.name}: its test {t} is not in the tree")
    used = {e.marker or m.name for m in mutations for e in m.edits}
    out += [
        f"`# mutation: {k}` in {v[0][0]}:{v[0][1]} belongs to no mutation" for k, v in index.items() if k not in used
    ]
    covered = {m.rule for m in mutations}
    out += [f"truth rule {r} ({TRUTH_RULES[r]}) has no mutation" for r in TRUTH_RULES if r not in covered]
    return out


# ---- the copy ----------------------------------------------------------------------------------


_SKIP = {".git", ".venv", "__pycache__", ".hypothesis", ".pytest_cache", ".ruff_cache", "build", "dist", "records",
         "demo-records"}  # fmt: skip


def checkout_files(source: Path) -> list[str]:
    """Tracked and untracked files as git lists them (ignored ones left out), that exist; without git,
    every file outside the usual build and cache directories."""
    proc = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=source, capture_output=True
    )
    if proc.returncode == 0:
        return [f for f in proc.stdout.decode().split("\0") if f and (source / f).is_file()]
    files = []
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d not in _SKIP and not d.endswith(".egg-info")]
        files += [str(Path(dirpath, f).relative_to(source)) for f in filenames]
    return [f for f in files if not Path(source, f).is_symlink()]


def make_copy(source: Path, dest: Path) -> None:
    for rel in checkout_files(source):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, target)


def run_tests(copy: Path, tests: list[str], timeout: float, full: bool = False) -> tuple[bool, str, float]:
    """(passed, the failing test(s) or a tail of the output, seconds); ``full``: run on after a failure."""
    env = dict(os.environ, PYTHONPATH=str(copy / "addons"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", *([] if full else ["-x"]), "-q", "-p", "no:cacheprovider", "-rfE"]
    cmd += ["--no-header", *tests]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f}s", time.perf_counter() - t
    seconds = time.perf_counter() - t
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return True, "", seconds
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    if not failed:
        return False, out.strip().splitlines()[-1][:200], seconds
    if full and len(failed) > 1:
        return False, f"{failed[0]} and {len(failed) - 1} more", seconds
    return False, failed[0], seconds


@dataclass
class Verdict:
    mutation: Mutation
    caught: bool
    by: str
    seconds: float


def check(copy: Path, mutation: Mutation, tests: list[str], timeout: float, full: bool = False) -> Verdict:
    texts = mutated(copy, mutation)  # the anchors were checked before anything ran
    originals = {p: (copy / p).read_text() for p in texts}
    try:
        for p, text in texts.items():
            (copy / p).write_text(text)
        passed, by, seconds = run_tests(copy, tests, timeout, full)
    finally:
        for p, text in originals.items():
            (copy / p).write_text(text)
    return Verdict(mutation, not passed, by, seconds)


# ---- the report ---------------------------------------------------------------------------------


def rule_table(mutations: list[Mutation]) -> str:
    """Each truth rule (and other guard) and the mutations that break it."""
    by_rule: dict[str, list[str]] = defaultdict(list)
    for m in mutations:
        by_rule[m.rule].append(m.name)
    lines = []
    for rule, what in [*TRUTH_RULES.items(), *OTHER_GUARDS.items()]:
        names = by_rule.get(rule, [])
        frames = [n for n in names if n.startswith("frame-deleted:")]
        shown = [n for n in names if not n.startswith("frame-deleted:")]
        shown += [f"frame-deleted:* ({len(frames)} client frames)"] if frames else []
        lines.append(f"rule {rule:7} {what}: {len(names)} mutation(s)\n    " + ("\n    ".join(shown) or "NONE"))
    return "\n".join(lines)


def markdown(verdicts: list[Verdict]) -> str:
    lines = ["| Mutation (defect re-introduced) | Rule | Verdict | Caught by |", "|---|---|---|---|"]
    for v in verdicts:
        verdict = "caught" if v.caught else "**NOT CAUGHT**"
        by = f"`{v.by}`" if v.caught else v.by or "-"
        lines.append(f"| `{v.mutation.name}`: {v.mutation.defect} | {v.mutation.rule} | {verdict} | {by} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", action="append", default=[], help="only mutations whose name contains this")
    parser.add_argument("--list", action="store_true", help="print each rule's mutations and check the anchors")
    parser.add_argument("--jobs", type=int, default=2, help="copies tested in parallel (default 2)")
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout to copy (default: this one)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per test run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    parser.add_argument(
        "--full", action="store_true", help="run every selected test per mutation (count all that fail)"
    )
    parser.add_argument("tests", nargs="*", help="pytest arguments for every mutation (default: each mutation's own)")
    args = parser.parse_args(argv)
    source = args.source.resolve()
    everything = all_mutations(source)
    chosen = [m for m in everything if not args.k or any(k in m.name for k in args.k)]
    wrong = problems(source, everything)
    if args.list:
        print(rule_table(everything))
    if wrong:
        print(
            f"\nMUTATION CHECK FAILED: {len(wrong)} problem(s) with the mutations' anchors or coverage:",
            file=sys.stderr,
        )
        for p in wrong:
            print(f"  {p}", file=sys.stderr)
        return 1
    if args.list:
        return 0
    if not chosen:
        print(f"no mutation matches {args.k}", file=sys.stderr)
        return 1
    selection = sorted({t for m in chosen for t in (args.tests or m.tests)})
    tmp = Path(tempfile.mkdtemp(prefix="bridge-mutation-"))
    jobs = max(1, min(args.jobs, len(chosen)))
    copies = [tmp / f"copy{i}" for i in range(jobs)]
    try:
        t0 = time.perf_counter()
        for c in copies:
            make_copy(source, c)
        print(f"mutation check: {len(chosen)} mutations, {jobs} copies of {source} in {tmp}")
        passed, by, seconds = run_tests(copies[0], selection, args.timeout)
        print(f"baseline (no mutation): pytest {' '.join(selection)}")
        print(f"baseline {'passes' if passed else 'FAILS: ' + by} in {seconds:.0f}s")
        if not passed:
            print("the unmutated tests must pass first; nothing was checked", file=sys.stderr)
            return 2
        queue = list(enumerate(chosen))
        verdicts: list[Verdict | None] = [None] * len(chosen)

        def worker(copy: Path) -> None:
            while queue:
                i, m = queue.pop(0)
                v = check(copy, m, args.tests or list(m.tests), args.timeout, args.full)
                verdicts[i] = v
                print(
                    f"  {m.name:40} {'caught' if v.caught else 'NOT CAUGHT':10} {v.seconds:4.0f}s  {v.by}", flush=True
                )

        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(worker, copies))
        done = [v for v in verdicts if v is not None]
        survived = [v for v in done if not v.caught]
        print(f"\n{len(done) - len(survived)} of {len(done)} mutations caught in {time.perf_counter() - t0:.0f}s\n")
        print(markdown(done))
        if survived:
            print(f"\nMUTATION CHECK FAILED: {len(survived)} mutation(s) not caught", file=sys.stderr)
        return 1 if survived else 0
    finally:
        if args.keep:
            print(f"copies kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    from support import cli

    cli.run(main)
