"""The whole rewrite of one request body: bytes in, bytes (or a reason) out.

This is the core's public entry point; it knows nothing of mitmproxy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

import orjson

from .builder import Plan, build
from .dialects import DialectError, anthropic, chat, responses
from .encoder import step_json
from .kinds import DEFAULT_TOOL_KINDS, KINDS

STEPS_KEY = "additional_steps"
DELTA_KEY = "additional_steps_delta_start"

DIALECTS: Mapping[str, ModuleType] = {d.NAME: d for d in (chat, anthropic, responses)}

# rewritten: new body; unchanged: nothing to do; skipped: not rewritable (reason says why);
# error: the bridge itself failed. Only "rewritten" changes the request.
Status = Literal["rewritten", "unchanged", "skipped", "error"]


@dataclass(frozen=True, slots=True)
class Config:
    kinds: frozenset[str] = frozenset(KINDS)
    tool_kinds: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TOOL_KINDS))
    dialect: str = "auto"  # or a name in DIALECTS: skip detection


@dataclass(slots=True)
class Rewrite:
    status: Status
    reason: str
    dialect: str | None = None
    body: bytes | None = None  # the new body, when rewritten
    plan: Plan | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # proto3 JSON
    notes: list[str] = field(default_factory=list)  # facts worth a line in the record

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


def dialect_for_path(path: str | None) -> ModuleType | None:
    """The dialect an endpoint path names, if it names one."""
    p = (path or "").split("?", 1)[0].rstrip("/")
    if p.endswith("/chat/completions"):
        return chat
    if p.endswith("/messages"):
        return anthropic
    if p.endswith("/responses"):
        return responses
    return None


def dialect_for_body(body: dict[str, Any]) -> ModuleType | None:
    """The dialect a body's shape says, when the path does not."""
    if "input" in body and "messages" not in body:
        return responses
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


def rewrite(raw: bytes, config: Config = Config(), path: str | None = None) -> Rewrite:
    """Rewrite one request body; never raises for bad input, only reports."""
    dialect = DIALECTS.get(config.dialect) or dialect_for_path(path)
    # Cheap pre-check: without tool history there is nothing to rewrite, so do not parse.
    markers = dialect.MARKERS if dialect else (chat.MARKERS + anthropic.MARKERS + responses.MARKERS)
    if b"\\u" not in raw and not any(m in raw for m in markers):
        return Rewrite("unchanged", "no tool history", dialect.NAME if dialect else None)
    try:
        body = _parse(raw)
        dialect = dialect or dialect_for_body(body)
        if dialect is None:
            raise DialectError("body is not a chat request of a known dialect")
        if STEPS_KEY in body:
            return Rewrite("skipped", f"already carries {STEPS_KEY}", dialect.NAME)
        history = dialect.read(body)
    except DialectError as e:
        return Rewrite("skipped", str(e), dialect.NAME if dialect else None)
    if not history.calls and not history.results:
        return Rewrite("unchanged", "no tool history", dialect.NAME)
    plan = build(history, config.kinds, config.tool_kinds)
    notes = []
    if dialect is responses and body.get("previous_response_id"):
        # The server holds the earlier items; this input is only what is new.
        plan.delta_start = 0
        notes.append("previous_response_id: input holds only new items, all steps are the delta")
    steps = [step_json(s) for s in plan.steps]
    if not steps:
        return Rewrite("unchanged", "no pair became a step", dialect.NAME, plan=plan, notes=notes)
    new = dict(body)
    new[dialect.ITEMS] = dialect.write(body, plan.stepped)
    new[STEPS_KEY] = steps
    new[DELTA_KEY] = plan.delta_start
    return Rewrite("rewritten", "", dialect.NAME, orjson.dumps(new), plan, steps, notes)
