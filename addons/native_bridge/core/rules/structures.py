"""Whole-result structures: a shell result that IS a client's own structure (JSON, or tags), so
its fields are the client's, not the program's. One row per structure: its name (the reader in
exitstatus.py that reads it), the clients that write it, its shape (for EXIT_STATUS.md) and the
source of the format.
"""

from __future__ import annotations

import re

from .types import ANY

STRUCTURED: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    # (name, clients, shape, source)
    (
        "codex-json",
        ("codex",),
        '`{"output": …, "metadata": {"exit_code": N}}`',
        "openai/codex codex-rs/core/src/tools/mod.rs format_exec_output_for_model_structured",
    ),
    (
        "mini-swe-agent-json",
        ("mini-swe-agent",),
        '`{"returncode": N, "output": …}` (`-1` with `exception_info`: failure; "action was not executed": never ran)',
        "SWE-agent/mini-swe-agent src/minisweagent/config/mini.yaml observation_template",
    ),
    (
        "mini-swe-agent-xml",
        ("mini-swe-agent",),
        "`<returncode>N</returncode>` then `<output>` (an `<exception>` first: as above)",
        "SWE-agent/mini-swe-agent src/minisweagent/config/default.yaml observation_template",
    ),
    (
        "cline-v4-json",
        ("cline",),
        '`[{"success": …, "error": "Command exited with code N"}]`',
        "cline/cline sdk/packages/core/src/extensions/tools/definitions.ts",
    ),
    (
        "json-exit-code",
        (ANY,),
        '`{"exit_code": N}`, `{"exitCode": N}`, `{"metadata": {"exit_code": N}}` (the reference fix\'s families)',
        "design brief, truth rule 3",
    ),
)

# mini-swe-agent's observation, as its templates write it (the sources of its two rows above):
# the keys of its JSON object (long output: head and tail), its stand-in for a command it did
# not run, and its tagged form.
MINI_KEYS: frozenset[str] = frozenset({"returncode", "output", "exception_info"})
MINI_LONG_KEYS: frozenset[str] = frozenset(
    {"returncode", "output_head", "output_tail", "elided_chars", "warning", "exception_info"}
)
MINI_NOT_RUN = "action was not executed"
MINI_XML: re.Pattern[str] = re.compile(
    r"\A(?:<exception>(?P<info>.*?)</exception>\s*)?<returncode>(?P<code>-?\d{1,19})</returncode>\s*"
    r"<(?:output|warning)>",
    re.S,
)
