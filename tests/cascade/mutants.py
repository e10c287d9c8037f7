"""Mutation check for native_bridge.cascade: each mutant breaks one rule, and the suite must fail.

Run from the repository root: ``.venv/bin/python tests/cascade/mutants.py``. Each mutant is
written into the source, the cascade tests run, and the original is put back (also on error).
"""

import pathlib
import subprocess
import sys

C = pathlib.Path(__file__).resolve().parents[2] / "addons" / "native_bridge" / "cascade"
ROOT = C.parents[2]
M = [
    (
        "unobserved run_command kept",
        "corrections.py",
        "if rc.stdout is None and rc.stderr is None and not rc.combined_output:",
        "if False:",
    ),
    (
        "gateway exit code kept",
        "corrections.py",
        "fixed = rewrap(step, v, edit(body, v.body_fields, drop=drop, varint=varint))",
        "fixed = step",
    ),
    (
        "stdout duplicate kept",
        "corrections.py",
        "twice = STDOUT if rc.combined_output and rc.stdout is not None and rc.stdout == rc.full else None",
        "twice = None",
    ),
    (
        "non-shell failure kept",
        "corrections.py",
        "if text is not None and signals_failure(",
        "if False and signals_failure(",
    ),
    (
        "evidence ignored",
        "corrections.py",
        'obs = lookup("run_command", subject, text) if lookup and subject is not None else None',
        "obs = None",
    ),
    (
        "conflict claims anyway",
        "corrections.py",
        "if failed is not None and failed != (obs.exit_code != 0):",
        "if False:",
    ),
    (
        "a step not over dropped as never observed",
        "corrections.py",
        "        if not v.done:  # a step not over yet (RUNNING, PENDING, ...) claims no outcome\n"
        "            return step, []",
        "        pass",
    ),
    (
        "a step not over left unjudged",
        "corrections.py",
        "    claim = _exit_claim(text, obs, client)\n    if claim.action",
        "    if not v.done:\n        return step, []\n    claim = _exit_claim(text, obs, client)\n    if claim.action",
    ),
    (
        "command_status left unjudged",
        "corrections.py",
        '_SHELL_FIXES = {"run_command": _run_command, "command_status": _command_status}',
        '_SHELL_FIXES = {"run_command": _run_command}',
    ),
    (
        "splice appends at end",
        "request.py",
        "        if i == 0:\n            out += encoded",
        "        if False:\n            out += encoded",
    ),
    (
        "splice not identity",
        "request.py",
        "    if list(new_steps) == req.steps:\n        return payload",
        "    if False:\n        return payload",
    ),
    ("redaction no-op", "request.py", "len_field(g.number, REDACTED) if g.number in SECRET_METADATA_FIELDS else ", ""),
    (
        "ledger as a set",
        "ledger.py",
        "        if old != new:\n            break\n",
        "        if new not in known:\n            break\n",
    ),
    (
        "digests of corrected steps",
        "correct.py",
        "delivery=Delivery(req.steps, known)",
        "delivery=Delivery(correct(req.steps, evidence, client=client).steps, known)",
    ),
    ("delivered steps not removed", "correct.py", "start = delivered_prefix(delivered, req.steps)", "start = 0"),
    (
        "empty send not withheld",
        "correct.py",
        "    if req.steps and not fixed.steps and not req.items:",
        "    if False:",
    ),
    ("replay cut by the ledger", "correct.py", "    if not call.cut_delivered:", "    if False:"),
    ("evidence exit code ignored", "corrections.py", "if obs is not None and obs.exit_code is not None:", "if False:"),
    (
        "bomb inflated whole",
        "framing.py",
        "out += d.decompress(chunk, max_size + 1 - len(out))",
        "out += d.decompress(chunk)",
    ),
    ("trailing bytes accepted", "framing.py", "    if end < len(body):", "    if False:"),
    ("end-stream accepted", "framing.py", "    if flags & _END_STREAM:\n", "    if False:\n"),
    ("gzip with timestamp", "framing.py", "gzip.compress(payload, mtime=0)", "gzip.compress(payload, mtime=12345)"),
    (
        "exit code unsigned",
        "steps.py",
        "elif number == EXIT_CODE:\n            exit_code = int32(varint_value(body, f))",
        "elif number == EXIT_CODE:\n            exit_code = varint_value(body, f)",
    ),
    ("negative varint 5 bytes", "wire.py", "        n += 1 << 64", "        n &= 0xFFFFFFFF"),
    (
        "rewrap drops unknown step fields",
        "steps.py",
        "            return step[: f.start] + len_field(v.body_field, new_body) + step[f.end :]",
        "            return bytes(step[v.fields[0].start : v.fields[1].end]) + len_field(v.body_field, new_body)",
    ),
    (
        "edit drops unknown fields",
        "steps.py",
        "        elif f.number not in drop:\n",
        "        elif f.number not in drop and f.number < 50:\n",
    ),
    (
        "group accepted",
        "wire.py",
        "        elif wire_type in (SGROUP, EGROUP):\n            raise",
        "        elif wire_type in (SGROUP, EGROUP):\n            value_start = pos; continue\n            raise",
    ),
    (
        "two bodies accepted",
        "steps.py",
        "            if body is not None:\n                raise",
        "            if False:\n                raise",
    ),
]
survived = 0
for name, file, old, new in M:
    p = C / file
    src = p.read_text()
    assert src.count(old) == 1, (name, src.count(old))
    p.write_text(src.replace(old, new))
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "tests/cascade"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        lines = [x for x in r.stdout.splitlines() if x.startswith("FAILED")]
        survived += not r.returncode
        print(f"{'KILLED' if r.returncode else 'SURVIVED'}: {name}: {lines[0][7:90] if lines else ''}", flush=True)
    finally:
        p.write_text(src)
sys.exit(1 if survived else 0)
