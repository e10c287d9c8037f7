"""Mutation check of the truth rules: re-introduce each known defect, one at a time, and show the tests fail.

    .venv/bin/python scripts/mutation_check.py              # every mutation, fast test subset + chat e2e
    .venv/bin/python scripts/mutation_check.py --list       # the mutations, without running anything
    .venv/bin/python scripts/mutation_check.py -k delta -k stdout --jobs 1

Each mutation is a small source edit that puts back one defect of the known gateway (design brief,
"The problem") or breaks one truth rule. The checkout is never touched: the files (tracked and
untracked, as git lists them, minus ignored ones) are copied to a temporary directory per worker,
the mutation is applied there, and the tests run there with ``PYTHONPATH`` pointing at the copy's
``addons/`` (ahead of the editable install). A baseline run of the unmutated copy must pass first.

A mutation is caught when the test run fails; the first failing test is shown. Exit status: 0 when
every mutation is caught, 1 when one survives or cannot be applied (its anchor is gone: update the
mutation), 2 when the baseline fails. The last lines are a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "addons/native_bridge/core"
RULES = f"{PKG}/rules"
DEFAULT_TESTS = ["tests", "--ignore=tests/e2e", "tests/e2e/test_mitmdump_chat.py"]


@dataclass(frozen=True)
class Edit:
    path: str  # relative to the checkout
    pattern: str  # a regex that must match exactly once
    replacement: str  # re.sub replacement (backreferences allowed)


@dataclass(frozen=True)
class Mutation:
    name: str
    defect: str  # the defect it re-introduces, as the README's table says it
    rule: str  # the truth rule it breaks
    alternatives: tuple[tuple[Edit, ...], ...]  # the first alternative whose edits all apply is used


def _m(name: str, defect: str, rule: str, *alternatives: tuple[Edit, ...] | Edit) -> Mutation:
    alts = tuple(a if isinstance(a, tuple) else (a,) for a in alternatives)
    return Mutation(name, defect, rule, alts)


MUTATIONS: list[Mutation] = [
    _m(
        "done-without-result",
        "a call with no result becomes a DONE step (empty output)",
        "2",
        Edit(
            f"{PKG}/builder.py",
            r"if n_results == 0:\n(\s+)d\.code, d\.reason = \"unobserved\", [^\n]*\n\s+continue\n",
            r"if n_results == 0:\n\1results[call.id] = ToolResult(call.pos, call.turn, call.id, '')\n"
            r"\1result_ids[call.id] = 1\n",
        ),
    ),
    _m(
        "exit-code-zero",
        "run_command exit_code forced to 0",
        "3",
        Edit(
            f"{PKG}/kinds.py",
            r"if code is not None:\n(\s+)out\[\"exit_code\"\] = code",
            r"if True:\n\1out['exit_code'] = 0",
        ),
    ),
    _m(
        "output-in-stdout",
        "the output written twice: stdout and combined_output",
        "4",
        Edit(
            f"{PKG}/kinds.py",
            r"\{\"combined_output\": \{\"full\": ([^\n]+?)\}\}",
            r"{'combined_output': {'full': \1}, 'stdout': \1}",
        ),
    ),
    _m(
        "whole-history-resent",
        "the whole history re-sent on a resumed turn (delta_start forced to 0)",
        "7",
        Edit(f"{PKG}/builder.py", r"(\ndef delta_start\([^)]*\)[^:]*:\n(\s+)\"\"\"[^\n]*\"\"\"\n)", r"\1\2return 0\n"),
    ),
    _m(
        "orphan-dropped",
        "an orphan result (no call carries its id) dropped from the messages",
        "6",
        Edit(f"{PKG}/builder.py", r"(p\.pos for p in placements if p\.step is not None)", r"\1 or p.code == 'orphan'"),
    ),
    _m(
        "unmapped-dropped",
        "an unmapped tool's call and result dropped from the messages",
        "6",
        Edit(
            f"{PKG}/builder.py", r"(p\.pos for p in placements if p\.step is not None)", r"\1 or p.code == 'unmapped'"
        ),
    ),
    _m(
        "correlate-by-position",
        "results paired with calls by position, not by id",
        "1",
        Edit(
            f"{PKG}/builder.py",
            r"result_ids = Counter\(r\.call_id for r in history\.results\)\n(\s+)"
            r"results = \{r\.call_id: r for r in history\.results\}",
            r"results = dict(zip([c.id for c in history.calls], history.results))\n"
            r"\1result_ids = Counter({k: 1 for k in results})",
        ),
    ),
    _m(
        "duplicate-result-last-wins",
        "a call answered twice: the last result wins (ambiguous pair stepped)",
        "1",
        Edit(f"{PKG}/builder.py", r"if n_results > 1:\n", r"if False:\n"),
    ),
    _m(
        "result-before-call",
        "a result that comes before its call is paired anyway",
        "1",
        Edit(f"{PKG}/builder.py", r"if result\.pos < call\.pos:", r"if False:"),
    ),
    _m(
        "is-error-ignored",
        "Anthropic is_error thrown away before translation",
        "3",
        Edit(f"{PKG}/dialects/anthropic.py", r"is_error = b\.get\(\"is_error\"\)", r"is_error = None"),
    ),
    _m(
        "failed-read-stepped",
        "a failed file read becomes a DONE view_file step (the error as content)",
        "5",
        Edit(f"{PKG}/kinds.py", r"_succeeded_text\(r, \"view_file\", client\)", r"_result_text(r, 'view_file')"),
    ),
    _m(
        "failure-without-number-is-zero",
        "a failure signal without a number encoded as exit 0",
        "3",
        Edit(f"{PKG}/exitstatus.py", r"\nFAILED_WITHOUT_CODE = 1\n", r"\nFAILED_WITHOUT_CODE = 0\n"),
    ),
    # ---- issue 10: a client's words count only for that client -------------------------------
    _m(
        "frames-count-for-every-client",
        "every client's frame tried on every client's output (a program's line decides the verdict)",
        "3",
        Edit(f"{PKG}/clients.py", r"    if client is None:\n        return False\n", r"    return True\n"),
    ),
    _m(
        "claude-code-frame-deleted",
        "Claude Code's frame (`Exit code N` on the first line) deleted",
        "3",
        Edit(
            f"{RULES}/exit_frames.py",
            r'\.scoped\(\("claude-code",\), flag=True\),\n(\s+)_r\(\n\s+"claude-code-timeout"',
            r'.scoped((), flag=True),\n\1_r(\n\1    "claude-code-timeout"',
        ),
    ),
    _m(
        "codex-header-deleted",
        "Codex's frame (the header above `Output:`) deleted",
        "3",
        Edit(
            f"{RULES}/exit_frames.py",
            r'\.scoped\(\("codex", "agents-sdk"\)\),\n(\s+)_r\(\n\s+"codex-exec-running"',
            r'.scoped(()),\n\1_r(\n\1    "codex-exec-running"',
        ),
    ),
    _m(
        "gemini-frame-deleted",
        "the Gemini CLI family's frame deleted",
        "3",
        Edit(
            f"{PKG}/exitstatus.py",
            r"(def _gemini_frame\(text: str\) -> ExitStatus \| None:\n(\s+)\"\"\"[^\"]*\"\"\"\n)",
            r"\1\2return None\n",
        ),
    ),
    _m(
        "gemini-signal-0-is-failure",
        "Gemini CLI family: `Signal: 0` read as a failure (every command exit 1)",
        "3",
        Edit(
            f"{PKG}/exitstatus.py",
            r'signalled = signal not in GEMINI_NONE and signal != "0"',
            r"signalled = signal not in GEMINI_NONE",
        ),
    ),
    _m(
        "mini-swe-agent-frame-deleted",
        "mini-swe-agent's result structure deleted (its failures reach the planner as unknown)",
        "3",
        Edit(
            f"{PKG}/exitstatus.py",
            r"(def _mini_json\(doc: dict\[str, object\]\) -> ExitStatus \| None:\n)",
            r"\1    return None\n",
        ),
    ),
    _m(
        "codex-json-for-any-client",
        "a JSON `metadata.exit_code` printed by a program (`cat status.json`) read as the status",
        "3",
        Edit(f"{PKG}/exitstatus.py", r"counts_for\(client, _STRUCTURED_CLIENTS\[name\]\)", r"True"),
    ),
    _m(
        "error-flag-precedence",
        "a flagged result whose text says exit 0 is sent as exit 0",
        "3",
        Edit(
            f"{PKG}/exitstatus.py", r'if found\.code == 0 or found\.verdict in \("success", "conflict"\):', r"if False:"
        ),
    ),
    _m(
        "out-of-range-loses-failure",
        "a code beyond int32 loses the failure (absent instead of 1)",
        "3",
        Edit(
            f"{PKG}/exitstatus.py",
            r'(if code is None:\n\s+)return ExitStatus\(FAILED_WITHOUT_CODE, source, "failed"\)',
            r'\1return ExitStatus(None, source, "code")',
        ),
    ),
    _m(
        "non-shell-without-evidence",
        "a non-shell step without the client's words for success (an unknown wording taken as success)",
        "5",
        Edit(f"{PKG}/kinds.py", r"    if found is None:\n        who = ", r"    if False:\n        who = "),
    ),
    _m(
        "failure-words-deleted",
        "the non-shell failure phrases deleted (a failed list/edit in words is not a failure)",
        "5",
        Edit(
            f"{RULES}/tool_failed.py",
            r"TOOL_FAILED: re\.Pattern\[str\] = re\.compile\(\n",
            r"TOOL_FAILED: re.Pattern[str] = re.compile(r'(?!)') or re.compile(\n",
        ),
    ),
    _m(
        "file-created-guessed",
        "file_created stated false for a client that words creation differently",
        "5",
        Edit(
            f"{PKG}/kinds.py",
            r'return \{\} if found\.file_created is None else \{"file_created": found\.file_created\}',
            r'return {"file_created": bool(found.file_created)}',
        ),
    ),
    _m(
        "aborted-over-chat-observed",
        "Codex's `aborted` stand-in over Chat Completions becomes a DONE step",
        "2",
        Edit(f"{PKG}/dialects/chat.py", r'placeholder=text == "aborted"', r"placeholder=False"),
    ),
]


def _frame_deletions() -> list[Mutation]:
    """One mutation per client frame in rules/exit_frames.py: the frame counts for no client."""
    text = (ROOT / RULES / "exit_frames.py").read_text()
    names = re.findall(r'_r\(\n\s+"([a-z0-9-]+)",', text)
    return [
        _m(
            f"frame-deleted:{name}",
            f"the client frame {name} deleted (counts for no client)",
            "3",
            Edit(
                f"{RULES}/exit_frames.py",
                rf'(_r\(\n\s+"{re.escape(name)}",\n(?:(?!    _r\().*\n)*?\s+\)\.scoped\()\([^)]*\)',
                r"\1()",
            ),
        )
        for name in names
    ]


MUTATIONS += _frame_deletions()


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


def apply(copy: Path, mutation: Mutation) -> dict[Path, str] | str:
    """Apply the first alternative whose every edit matches exactly once; the originals, or why not."""
    problems = []
    for alt in mutation.alternatives:
        texts: dict[Path, str] = {}
        ok = True
        for e in alt:
            path = copy / e.path
            text = texts.get(path) or (path.read_text() if path.exists() else "")
            n = len(re.findall(e.pattern, text))
            if n != 1:
                problems.append(f"{e.path}: /{e.pattern[:60]}/ matches {n} times")
                ok = False
                break
            texts[path] = re.sub(e.pattern, e.replacement, text, count=1)
        if ok:
            originals = {p: p.read_text() for p in texts}
            for p, t in texts.items():
                p.write_text(t)
            return originals
    return "; ".join(problems)


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
    applied: bool
    by: str
    seconds: float


def check(copy: Path, mutation: Mutation, tests: list[str], timeout: float, full: bool = False) -> Verdict:
    originals = apply(copy, mutation)
    if isinstance(originals, str):
        return Verdict(mutation, False, False, f"cannot apply: {originals}", 0.0)
    try:
        passed, by, seconds = run_tests(copy, tests, timeout, full)
    finally:
        for p, text in originals.items():
            p.write_text(text)
    return Verdict(mutation, not passed, True, by, seconds)


# ---- the report ---------------------------------------------------------------------------------


def markdown(verdicts: list[Verdict]) -> str:
    lines = [
        "| Mutation (defect re-introduced) | Rule | Verdict | Caught by |",
        "|---|---|---|---|",
    ]
    for v in verdicts:
        verdict = "caught" if v.caught else ("**not applied**" if not v.applied else "**NOT CAUGHT**")
        by = f"`{v.by}`" if v.caught else v.by or "-"
        lines.append(f"| `{v.mutation.name}`: {v.mutation.defect} | {v.mutation.rule} | {verdict} | {by} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", action="append", default=[], help="only mutations whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--jobs", type=int, default=2, help="copies tested in parallel (default 2)")
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout to copy (default: this one)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per test run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    parser.add_argument("--full", action="store_true", help="run every test per mutation (count all that fail)")
    parser.add_argument("tests", nargs="*", help=f"pytest arguments (default: {' '.join(DEFAULT_TESTS)})")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.k or any(k in m.name for k in args.k)]
    if args.list:
        for m in chosen:
            print(f"{m.name:32} rule {m.rule}  {m.defect}")
        return 0
    tests = args.tests or DEFAULT_TESTS
    source = args.source.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bridge-mutation-"))
    jobs = max(1, min(args.jobs, len(chosen)))
    copies = [tmp / f"copy{i}" for i in range(jobs)]
    try:
        t0 = time.perf_counter()
        for c in copies:
            make_copy(source, c)
        print(f"mutation check: {len(chosen)} mutations, {jobs} copies of {source} in {tmp}")
        print(f"tests: pytest {'' if args.full else '-x '}{' '.join(tests)}")
        passed, by, seconds = run_tests(copies[0], tests, args.timeout)
        print(f"baseline (no mutation): {'passes' if passed else 'FAILS: ' + by} in {seconds:.0f}s")
        if not passed:
            print("the unmutated suite must pass first; nothing was checked", file=sys.stderr)
            return 2
        queue = list(enumerate(chosen))
        verdicts: list[Verdict | None] = [None] * len(chosen)

        def worker(copy: Path) -> None:
            while queue:
                i, m = queue.pop(0)
                v = check(copy, m, tests, args.timeout, args.full)
                verdicts[i] = v
                state = "caught" if v.caught else ("NOT APPLIED" if not v.applied else "NOT CAUGHT")
                print(f"  {m.name:32} {state:12} {v.seconds:5.0f}s  {v.by}", flush=True)

        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(worker, copies))
        done = [v for v in verdicts if v is not None]
        survived = [v for v in done if not v.caught]
        print(f"\n{len(done) - len(survived)} of {len(done)} mutations caught in {time.perf_counter() - t0:.0f}s\n")
        print(markdown(done))
        return 1 if survived else 0
    finally:
        if args.keep:
            print(f"copies kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    from support import cli

    cli.run(main)
