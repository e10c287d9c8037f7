"""The whole rewrite of one request body: bytes in, bytes (or a reason) out.

This is the core's public entry point; it knows nothing of mitmproxy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from .builder import Plan, build
from .dialects import DialectError, chat
from .encoder import step_json
from .kinds import DEFAULT_TOOL_KINDS, KINDS

STEPS_KEY = "additional_steps"
DELTA_KEY = "additional_steps_delta_start"

# rewritten: new body; unchanged: nothing to do; skipped: not rewritable (reason says why);
# error: the bridge itself failed. Only "rewritten" changes the request.
Status = Literal["rewritten", "unchanged", "skipped", "error"]


@dataclass(frozen=True, slots=True)
class Config:
    kinds: frozenset[str] = frozenset(KINDS)
    tool_kinds: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TOOL_KINDS))


@dataclass(slots=True)
class Rewrite:
    status: Status
    reason: str
    dialect: str | None = None
    body: bytes | None = None  # the new body, when rewritten
    plan: Plan | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # proto3 JSON

    def summary(self) -> dict[str, Any]:
        if self.plan is None:
            return {"steps": 0}
        exit_codes = [s.get("runCommand", {}).get("exitCode") for s in self.steps]
        failed = [c for c in exit_codes if c not in (None, 0)]
        kept = self.plan.kept
        return {
            "steps": len(self.steps),
            "delta_start": self.plan.delta_start,
            "failed": len(failed),
            "failed_exit_codes": failed,
            "kept": len(kept),
            "kept_by_code": dict(sorted(Counter(p.code for p in kept).items())),
            "unobserved": sum(1 for p in kept if p.item == "call" and p.code == "unobserved"),
        }


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise DialectError(f"body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise DialectError("body is not a JSON object")
    return doc


def rewrite(raw: bytes, config: Config = Config()) -> Rewrite:
    """Rewrite a Chat Completions body; never raises for bad input, only reports."""
    # Cheap pre-check: without tool calls there is nothing to rewrite, so do not parse.
    if b"tool_calls" not in raw and b"\\u" not in raw:
        return Rewrite("unchanged", "no tool history")
    try:
        body = _parse(raw)
        if STEPS_KEY in body:
            return Rewrite("skipped", f"already carries {STEPS_KEY}", chat.NAME)
        history = chat.read(body)
    except DialectError as e:
        return Rewrite("skipped", str(e))
    if not history.calls and not history.results:
        return Rewrite("unchanged", "no tool history", chat.NAME)
    plan = build(history, config.kinds, config.tool_kinds)
    steps = [step_json(s) for s in plan.steps]
    if not steps:
        return Rewrite("unchanged", "no pair became a step", chat.NAME, plan=plan)
    new = dict(body)
    new[chat.MESSAGES] = chat.write(body, plan.stepped)
    new[STEPS_KEY] = steps
    new[DELTA_KEY] = plan.delta_start
    return Rewrite("rewritten", "", chat.NAME, orjson.dumps(new), plan, steps)
