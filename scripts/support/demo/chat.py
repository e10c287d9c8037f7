"""The chat hop's part of the demo report: what the client sent against what the planner received,
and the same session through the known gateway against the bridge (ground truth read straight
from the session, without the bridge)."""

from __future__ import annotations

import re
from typing import Any

import orjson
from native_bridge.records import redact

from .. import known_gateway
from ..reference_planner import STEPS_KEY
from .table import table

DELTA_KEY = "additional_steps_delta_start"


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [tc for m in messages if m.get("role") == "assistant" for tc in m.get("tool_calls") or []]


def _results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == "tool"]


def _args(call: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(call["function"]["arguments"] or "{}")


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


_EXIT = re.compile(r"(?i)^exit code:? (-?\d+)$")


def session_facts(session: dict[str, Any]) -> dict[str, Any]:
    """Ground truth read straight from the session, without the bridge."""
    messages = session["messages"]
    calls, results = _calls(messages), _results(messages)
    call_ids = {c["id"] for c in calls}
    result_of = {r["tool_call_id"]: r["content"] for r in results}
    failed_bash = {}
    for c in calls:
        text = result_of.get(c["id"])
        if c["function"]["name"] == "Bash" and isinstance(text, str) and text.strip():
            lines = text.strip().splitlines()
            m = _EXIT.match(lines[0].strip()) or _EXIT.match(lines[-1].strip())
            if m and int(m.group(1)) != 0:
                failed_bash[c["id"]] = (_args(c)["command"], int(m.group(1)))
    return {
        "unanswered": [c for c in calls if c["id"] not in result_of],
        "orphans": [r["tool_call_id"] for r in results if r["tool_call_id"] not in call_ids],
        "unmapped": [c["id"] for c in calls if c["function"]["name"] not in known_gateway.TOOL_KINDS],
        "failed_read": [
            c["id"]
            for c in calls
            if c["function"]["name"] == "Read" and "<tool_use_error>" in str(result_of.get(c["id"], ""))
        ],
        "failed_bash": failed_bash,
    }


def _ids_in(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for c in _calls(messages)} | {r["tool_call_id"] for r in _results(messages)}


def _run_commands(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s["runCommand"] for s in steps if "runCommand" in s]


def before_after(session: dict[str, Any], after: dict[str, Any], record: dict[str, Any] | None) -> str:
    before_m, after_m = session["messages"], after["messages"]
    steps = after.get(STEPS_KEY, [])
    rows = [
        ("messages", len(before_m), len(after_m)),
        ("tool calls (in messages)", len(_calls(before_m)), len(_calls(after_m))),
        ("tool results (in messages)", len(_results(before_m)), len(_results(after_m))),
        (STEPS_KEY, "-", len(steps)),
        (DELTA_KEY, "-", after.get(DELTA_KEY, "-")),
    ]
    out = [table(("", "before", "after"), rows)]
    failed = [
        (i, _short(redact.text(s["runCommand"].get("commandLine", "")), 56), s["runCommand"]["exitCode"])
        for i, s in enumerate(steps)
        if s.get("runCommand", {}).get("exitCode") not in (None, 0)
    ]
    if failed:
        out += [
            "",
            "  Failed steps, with their true exit codes:",
            table(("step", "command", "exit_code"), failed, "    "),
        ]
    else:
        out += ["", "  No step states a failure: this client's words state no exit code here (see the probe below)."]
    if record is not None:
        kept = [
            (p["item"], p["name"] or "?", p["id"], p["kept"], _short(p["reason"] or "", 60))
            for p in record["accounting"]
            if "kept" in p
        ]
        out += ["", "  Kept as messages (from the record's accounting):"]
        out.append(table(("item", "tool", "id", "code", "reason"), kept, "    "))
    return "\n".join(out)


def probes(session: dict[str, Any], after: dict[str, Any], probe: tuple[str, str, str] | None = None) -> str:
    facts = session_facts(session)
    known = known_gateway.translate(session)
    known_by_call = dict(zip(known.step_calls, known.steps, strict=True))
    steps = after.get(STEPS_KEY, [])
    bridge_cmds = _run_commands(steps)

    unanswered = [_args(c).get("command", c["function"]["name"]) for c in facts["unanswered"]]
    k_unans = [
        known_by_call[c["id"]]["status"].removeprefix("CORTEX_STEP_STATUS_") if c["id"] in known_by_call else "no"
        for c in facts["unanswered"]
    ]
    b_unans = [sum(r.get("commandLine") == cmd for r in bridge_cmds) for cmd in unanswered]

    failed = facts["failed_bash"]
    k_codes = [known_by_call[i]["runCommand"].get("exitCode", "absent") for i in failed]
    b_codes = [
        next((r.get("exitCode", "absent") for r in bridge_cmds if r.get("commandLine") == cmd), "no step")
        for cmd, _ in failed.values()
    ]
    truth = [code for _, code in failed.values()]

    # proto3 JSON omits an empty string, so a no-result step shows no stdout even at the gateway.
    k_runs = _run_commands(known.steps)
    k_stdout = sum("stdout" in r for r in k_runs)
    b_stdout = sum("stdout" in r for r in bridge_cmds)

    lost = set(facts["unmapped"]) | set(facts["orphans"])
    k_kept = len(lost & _ids_in(known.messages))
    b_kept = len(lost & _ids_in(after["messages"]))

    reads = facts["failed_read"]
    k_reads = [known_by_call[i]["status"].removeprefix("CORTEX_STEP_STATUS_") for i in reads if i in known_by_call]
    b_reads = sum(i in _ids_in(after["messages"]) for i in reads)

    def codes(values: list[Any]) -> str:
        return ", ".join(map(str, values)) or "-"

    rows = [
        (
            "call with no result -> steps",
            f"{len(k_unans)} x {codes(k_unans)} step (empty output)",
            "no step" if not any(b_unans) else f"{sum(b_unans)} step(s)",
        ),
        (f"failed Bash -> exit_code (truth: {codes(truth)})", codes(k_codes), codes(b_codes)),
        (
            "separate stdout field",
            f"{'present' if k_stdout else 'absent'} ({k_stdout} of {len(k_runs)} run_command steps)",
            f"{'present' if b_stdout else 'absent'} ({b_stdout} of {len(bridge_cmds)} run_command steps)",
        ),
        (
            f"unmapped/orphan items ({len(lost)} ids)",
            f"dropped ({len(lost) - k_kept} of {len(lost)})",
            f"kept as messages ({b_kept} of {len(lost)})",
        ),
        ("failed Read -> steps", f"{codes(k_reads)} view_file step", "kept as message" if b_reads else "lost"),
        (
            "steps sent on a resumed turn",
            f"all {len(known.steps)} again",
            f"steps[{after[DELTA_KEY]}:] = {len(steps) - after[DELTA_KEY]}" if DELTA_KEY in after else "-",
        ),
        *([probe] if probe else []),
    ]
    text = table(("probe", "the known gateway", "bridge (what the planner received)"), rows)
    if truth and all(c == "absent" for c in b_codes):
        text += (
            "\n  absent, not 0: the session's client is Claude Code (named by its tools), which writes 'Exit code N'"
            "\n  only with is_error, and Chat Completions cannot carry it: that line is the program's (truth rule 3)."
            "\n  Through both hops, (d) below, the chat hop sees is_error and the planner gets the true codes. A"
            "\n  client we cannot name gets every known frame read at its place: the reference probe's 2."
        )
    return text
