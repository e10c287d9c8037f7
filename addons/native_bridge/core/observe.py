"""What the chat hop saw: each correlated (call, result) pair, reduced to a verdict.

The planner hop cannot see the client's error flags or know the client: the
gateway dropped both. The chat hop hands it these observations; a planner step
takes one only when exactly one observation matches its kind, subject (command
line or path) and output (cascade/corrections.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..evidence import Observation, call_key, match_key
from .builder import _Decision, decide
from .history import History
from .kinds import KINDS, Refusal, signals_failure
from .mapping import SHELL_KIND

# The field of a kind's inputs that names what the call acted on, as the planner step states it.
SUBJECT = {"run_command": "command_line", "view_file": "absolute_path_uri"}


def observations(
    history: History, tool_kinds: Mapping[str, str], decisions: Sequence[_Decision] | None = None
) -> list[Observation]:
    """One observation per pair the builder correlates by id (truth rule 1) whose tool has a kind.

    ``decisions``: the builder's own for ``history`` with every kind and these ``tool_kinds``
    (pipeline.Rewrite.decisions), so that nothing is decided twice; None: decide here."""
    out = []
    if decisions is None:
        decisions = decide(history, frozenset(KINDS), tool_kinds)
    for d in decisions:
        # A tool the request's declarations map by shape (mapping.py) is not in the addon's table.
        result, kind = d.result, d.kind or tool_kinds.get(d.call.name) or (SHELL_KIND if d.mapped else None)
        if result is None or kind is None or result.text is None or not d.call.id:
            continue
        inputs = d.inputs
        if inputs is None:
            try:
                inputs = KINDS[kind].inputs(d.call.arguments)
            except Refusal:
                continue  # nothing to match a planner step by
        field = SUBJECT.get(kind)
        subject = inputs.get(field) if field else ""
        if not isinstance(subject, str):
            continue
        exit_code: int | None = None
        failed: bool | None = None
        if d.observed is not None:  # the pair became a step: the kind's rules found its outcome
            if kind == "run_command":
                exit_code = d.observed.get("exit_code")
                failed = None if exit_code is None else exit_code != 0
            else:
                failed = False
        elif d.code == "untranslatable" and signals_failure(result):
            failed = True
        if exit_code is None and failed is None:
            continue  # says nothing the planner step does not already say
        key, call = match_key(kind, subject, result.text), call_key("", d.call.id)
        out.append(Observation(exit_code, failed, history.client, key, call))
    return out
