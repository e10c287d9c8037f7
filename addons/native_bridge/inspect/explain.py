"""What the planner was told, as text a person reads: steps, accounting, history diff.

Pure (no mitmproxy import): the mitmweb content views (view.py), the commands
(commands.py) and the scripts read bodies or records through these functions, and
re-derive the accounting with the same core (:func:`..core.pipeline.rewrite`), never with a
second copy of the rules.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..core.pipeline import DELTA_KEY, DIALECTS, STEPS_KEY, Config, Rewrite, failures, rewrite
from ..records import bodydiff

EXCERPT_LINES = 3
EXCERPT_WIDTH = 100
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(slots=True)
class Explained:
    """One bridged request, as the views and scripts show it."""

    dialect: str | None
    before: dict[str, Any] | None  # the body the client sent (None: not available)
    after: dict[str, Any] | None  # the body sent upstream
    steps: list[dict[str, Any]]  # proto3 JSON, as sent
    accounting: list[dict[str, Any]] | None  # Placement.to_json() per call and result; None: not known
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def load_json(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def summarize(steps: list[dict[str, Any]], accounting: list[dict[str, Any]] | None, delta: Any) -> dict[str, Any]:
    """The same shape as :meth:`Rewrite.summary`, from the JSON forms (body or record)."""
    codes = [s.get("runCommand", {}).get("exitCode") for s in steps if isinstance(s, dict)]
    failed = [c for c in codes if c not in (None, 0)]
    out: dict[str, Any] = {"steps": len(steps), "delta_start": delta}
    out.update(failed=len(failed), failed_exit_codes=failed)
    if accounting is not None:
        kept = [p for p in accounting if "step" not in p]
        out["kept"] = len(kept)
        out["kept_by_code"] = dict(sorted(Counter(str(p.get("kept")) for p in kept).items()))
        out["unobserved"] = sum(1 for p in kept if p.get("item") == "call" and p.get("kept") == "unobserved")
    return out


def explain_bodies(
    before: bytes | None,
    after: bytes | None,
    path: str | None = None,
    config: Config | None = None,
    client_hint: str | None = None,
) -> Explained:
    """From the original and the rewritten body: steps as sent, accounting re-derived by the core.

    The accounting is shown only when the current rules, run on ``before``, give
    exactly ``after``; otherwise a note says why it is missing. ``client_hint``: the
    request's User-Agent, as the addon passed it to the core (it names the client).
    """
    after_doc = load_json(after)
    before_doc = load_json(before)
    steps = _steps_of(after_doc)
    notes: list[str] = []
    accounting = None
    dialect = None
    if before is None:
        notes.append("the original body is not available (no backup of this flow): no accounting, no diff")
    else:
        result: Rewrite = rewrite(before, config or Config(), path, client_hint=client_hint)
        dialect = result.dialect
        if result.status == "rewritten" and result.body == after:
            assert result.plan is not None
            accounting = [p.to_json() for p in result.plan.accounting]
            notes.extend(result.notes)
        elif result.status == "rewritten":
            notes.append(
                "the current rules, run on the original body, no longer give this request "
                "(rules or bridge options changed, or the request was edited): accounting not shown"
            )
        else:
            notes.append(f"the current rules leave the original body {result.status} ({result.reason})")
    delta = after_doc.get(DELTA_KEY) if after_doc else None
    return Explained(dialect, before_doc, after_doc, steps, accounting, summarize(steps, accounting, delta), notes)


def explain_record(rec: dict[str, Any]) -> Explained:
    """From a record written by the recorder (bodies there are redacted JSON)."""

    after = bodydiff.after_doc(rec)
    after = after if isinstance(after, dict) else None
    before = rec.get("before") if isinstance(rec.get("before"), dict) else None
    steps = bodydiff.steps_of(rec) or _steps_of(after)
    accounting = rec.get("accounting") if rec.get("status") == "rewritten" else None
    delta = (after or {}).get(DELTA_KEY, rec.get("summary", {}).get("delta_start"))
    notes = list(rec.get("notes") or [])
    return Explained(rec.get("dialect"), before, after, steps, accounting, summarize(steps, accounting, delta), notes)


def _steps_of(doc: dict[str, Any] | None) -> list[dict[str, Any]]:
    steps = (doc or {}).get(STEPS_KEY)
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


# ---- one step ---------------------------------------------------------------------


def step_kind(step: dict[str, Any]) -> str:
    """The kind of the step's body (what the planner reads); the type only for a step without one
    (a gateway's type may name another kind: proto/README.md, "Step type numbers")."""
    body = _body_key(step)
    if body:
        return _CAMEL.sub("_", body).lower()
    t = step.get("type")
    if isinstance(t, str) and t.startswith("CORTEX_STEP_TYPE_"):
        return t.removeprefix("CORTEX_STEP_TYPE_").lower()
    return "?"


def step_status(step: dict[str, Any]) -> str:
    s = step.get("status")
    return s.removeprefix("CORTEX_STEP_STATUS_") if isinstance(s, str) else "?"


def _body_key(step: dict[str, Any]) -> str | None:
    return next((k for k, v in step.items() if k not in ("type", "status", "error") and isinstance(v, dict)), None)


def exit_label(step: dict[str, Any]) -> str:
    """``exit N`` for a command with a known exit code, ``exit ?`` when the client gave none."""
    run = step.get("runCommand")
    if not isinstance(run, dict):
        return ""
    code = run.get("exitCode")
    return f"exit {code}" if code is not None else "exit ?"


def step_subject(step: dict[str, Any]) -> str:
    """What the step acted on: the command, file, pattern, URL or query."""
    key = _body_key(step)
    b: dict[str, Any] = step.get(key, {}) if key else {}
    match key:
        case "runCommand":
            text = "$ " + str(b.get("commandLine", ""))
            return text + (f"   (in {b['cwd']})" if b.get("cwd") else "")
        case "viewFile":
            rng = ""
            if b.get("offset") or b.get("limit"):
                rng = f"   (offset {b.get('offset', 0)}, limit {b.get('limit', '-')})"
            return str(b.get("absolutePathUri", "")) + rng
        case "grepSearchV2":
            text = f"grep {b.get('pattern', '')!r} in {b.get('path', '.')}"
            return text + (f" --glob {b['glob']}" if b.get("glob") else "")
        case "find":
            return f"find {b.get('pattern', '')!r} in {b.get('searchDirectory', '.')}"
        case "listDirectory":
            return str(b.get("directoryPathUri", ""))
        case "writeToFile":
            return str(b.get("targetFileUri", "")) + ("   (created)" if b.get("fileCreated") else "")
        case "proposeCode":
            cmd = b.get("actionSpec", {}).get("command", {})
            chunks = len(cmd.get("replacementChunks", []))
            return f"{cmd.get('file', {}).get('absoluteUri', '')}   ({chunks} replacement chunk{'s' * (chunks != 1)})"
        case "searchWeb":
            return f"search {b.get('query', '')!r}" + (f" on {b['domain']}" if b.get("domain") else "")
        case "readUrlContent":
            return str(b.get("url", ""))
    return excerpt(orjson.dumps(b).decode(), 1)[0] if b else ""


def step_output(step: dict[str, Any]) -> tuple[str, str] | None:
    """(label, text) of what the step observed."""
    key = _body_key(step)
    b: dict[str, Any] = step.get(key, {}) if key else {}
    match key:
        case "runCommand":
            if isinstance(b.get("combinedOutput"), dict):
                return "output", str(b["combinedOutput"].get("full", ""))
            parts = [str(b[k]) for k in ("stdout", "stderr") if b.get(k)]
            return "output", "\n".join(parts)
        case "viewFile":
            return "content", str(b.get("content", ""))
        case "grepSearchV2" | "find":
            return "output", str(b.get("rawOutput", ""))
        case "listDirectory":
            return "children", "\n".join(str(c) for c in b.get("children", []))
        case "writeToFile":
            return "content", "".join(str(c) for c in b.get("codeContent", []))
        case "proposeCode":
            chunks = b.get("actionSpec", {}).get("command", {}).get("replacementChunks", [])
            return "replacement", "\n".join(str(c.get("replacementContent", "")) for c in chunks)
        case "searchWeb" | "readUrlContent":
            return "summary", str(b.get("summary", ""))
    return None


def excerpt(text: str, lines: int = EXCERPT_LINES, width: int = EXCERPT_WIDTH) -> list[str]:
    """The first lines of ``text``, each cut to ``width``, and a line saying how much is left."""
    all_lines = text.splitlines() or [""]
    out = [line if len(line) <= width else line[: width - 1] + "…" for line in all_lines[:lines]]
    if len(all_lines) > lines:
        out.append(f"… {len(all_lines) - lines} more lines, {len(text)} chars in all")
    return out


def step_brief(i: int, step: dict[str, Any]) -> str:
    """One line: index, kind, status, exit code, subject."""
    return f"#{i:<3} {step_kind(step):<16} {step_status(step):<6} {exit_label(step):<8} {step_subject(step)}".rstrip()


def changed_fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The fields (one level into a body, as ``runCommand.exitCode``) that differ between two steps."""
    out = []
    for k in sorted({*a, *b}):
        va, vb = a.get(k), b.get(k)
        if va == vb:
            continue
        if isinstance(va, dict) and isinstance(vb, dict):
            out += [f"{k}.{f}" for f in sorted({*va, *vb}) if va.get(f) != vb.get(f)]
        else:
            out.append(k)
    return out


def step_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    """Step by step, what differs between the steps sent then and the steps sent now (replay checks)."""
    out = []
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if a == b:
            continue
        if a is None:
            assert b is not None
            out.append(f"new step   {step_brief(i, b)}")
        elif b is None:
            out.append(f"lost step  {step_brief(i, a)}")
        elif step_brief(i, a) != step_brief(i, b):
            out += [f"step was   {step_brief(i, a)}", f"     now   {step_brief(i, b)}"]
        else:
            out.append(f"step body  #{i} {step_kind(a)}: {', '.join(changed_fields(a, b))} changed")
    return out


def step_lines(i: int, step: dict[str, Any], indent: str = "  ") -> list[str]:
    out = [indent + step_brief(i, step)]
    got = step_output(step)
    if got is not None:
        label, text = got
        pad = indent + " " * 6
        if not text:
            out.append(f"{pad}{label}: (empty)")
        else:
            first, *rest = excerpt(text)
            out.append(f"{pad}{label}: {first}")
            out.extend(f"{pad}{' ' * (len(label) + 2)}{line}" for line in rest)
    return out


# ---- the views --------------------------------------------------------------------


def headline(summary: dict[str, Any]) -> str:
    n = summary.get("steps", 0)
    text = f"bridge: {n} step{'' if n == 1 else 's'}"
    if summary.get("failed"):
        text += f" ({failures(summary.get('failed_exit_codes', []))})"
    if "kept" in summary:
        text += f", {summary['kept']} kept as messages"
    if summary.get("unobserved"):
        text += f", {summary['unobserved']} unobserved"
    return text


def placement_text(p: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    step = p.get("step")
    if step is not None:
        kind = step_kind(steps[step]) if isinstance(step, int) and 0 <= step < len(steps) else "?"
        return f"became step #{step} ({kind})"
    return f"kept as a message [{p.get('kept')}]: {p.get('reason')}"


def accounting_lines(ex: Explained) -> list[str]:
    if ex.accounting is None:
        return ["  (not known)"]
    if not ex.accounting:
        return ["  (no tool calls or results)"]
    rows = [
        (str(p.get("turn", "")), str(p.get("item", "")), str(p.get("name") or "?"), str(p.get("id") or "(no id)"))
        for p in ex.accounting
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + "  " + placement_text(p, ex.steps)
        for row, p in zip(rows, ex.accounting, strict=True)
    ]


def steps_text(ex: Explained) -> str:
    """The "Bridge steps" view: verdict, every step, then where every call and result went."""
    s = ex.summary
    out = [headline(s)]
    info = [f"dialect {ex.dialect}"] if ex.dialect else []
    if s.get("delta_start") is not None:
        info.append(f"{DELTA_KEY} {s['delta_start']} (a resumed planner gets steps #{s['delta_start']} on)")
    if info:
        out.append("; ".join(info))
    if s.get("kept_by_code"):
        out.append("kept as messages, by code: " + ", ".join(f"{k} {v}" for k, v in s["kept_by_code"].items()))
    out.extend(f"note: {n}" for n in ex.notes)
    out += ["", f"STEPS ({STEPS_KEY}, {len(ex.steps)}; exit ? = the client reported no exit status)"]
    for i, step in enumerate(ex.steps):
        out.extend(step_lines(i, step))
    if not ex.steps:
        out.append("  (none)")
    out += ["", "ACCOUNTING (every tool call and result of the original request)"]
    out.extend(accounting_lines(ex))
    return "\n".join(out) + "\n"


# ---- the message history diff ------------------------------------------------------


def _short(text: Any, width: int = 70) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
    return "" if content is None else str(content)


def _gemini_line(item: dict[str, Any]) -> str:
    parts: list[str] = []
    for p in item["parts"]:
        if not isinstance(p, dict):
            continue
        fc, fr = p.get("functionCall"), p.get("functionResponse")
        if isinstance(fc, dict):
            parts.append(f"call {fc.get('name')}#{fc.get('id')}")
        elif isinstance(fr, dict):
            response = fr.get("response") if isinstance(fr.get("response"), dict) else {}
            err = " (error)" if "error" in response else ""
            shown = response.get("error", response.get("output", ""))
            parts.append(f"result #{fr.get('id')}{err}: {_short(shown, 40)}")
        elif p.get("thought") is True:
            parts.append("thought")
        elif "text" in p:
            parts.append(repr(_short(p.get("text", ""), 50)))
        else:
            parts.append(next(iter(p), "part"))
    return f"{item.get('role')}: " + ("; ".join(parts) if parts else "(empty)")


def item_line(item: Any) -> str:
    """One history item (chat or Anthropic message, Responses input item, Gemini content) in one line."""
    if not isinstance(item, dict):
        return _short(item)
    if isinstance(item.get("parts"), list):
        return _gemini_line(item)
    parts: list[str] = []
    role = item.get("role")
    kind = item.get("type")
    if kind and kind != "message":  # Responses items: function_call, function_call_output, ...
        call_id = item.get("call_id") or item.get("id")
        if "output" in item:
            return f"{kind} #{call_id}: {_short(_text_of(item.get('output')), 50)}"
        return f"{kind} {item.get('name', '')}#{call_id}".rstrip()
    content = item.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in _BLOCKS for b in content):
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "tool_use":
                parts.append(f"call {b.get('name')}#{b.get('id')}")
            elif t == "tool_result":
                err = " (is_error)" if b.get("is_error") else ""
                parts.append(f"result #{b.get('tool_use_id')}{err}: {_short(_text_of(b.get('content')), 40)}")
            elif t == "text":
                parts.append(repr(_short(b.get("text", ""), 50)))
            else:
                parts.append(str(t))
    else:
        text = _text_of(content)
        if text:
            parts.append(repr(_short(text, 60)))
        for tc in item.get("tool_calls") or []:
            if isinstance(tc, dict):
                parts.append(f"call {tc.get('function', {}).get('name')}#{tc.get('id')}")
        if role == "tool":
            return f"tool: result #{item.get('tool_call_id')}: {_short(text, 50)}"
    return f"{role}: " + ("; ".join(parts) if parts else "(empty)")


def item_ids(item: Any) -> list[str]:
    """The call and result ids one history item carries, in any dialect."""
    if not isinstance(item, dict):
        return []
    ids = [item.get("tool_call_id"), item.get("call_id")]
    ids += [tc.get("id") for tc in item.get("tool_calls") or [] if isinstance(tc, dict)]
    content = item.get("content")
    if isinstance(content, list):
        ids += [b.get("id") or b.get("tool_use_id") for b in content if isinstance(b, dict)]
    parts = item.get("parts")  # Gemini
    if isinstance(parts, list):
        for p in parts:
            x = p.get("functionCall") or p.get("functionResponse") if isinstance(p, dict) else None
            if isinstance(x, dict):
                ids.append(x.get("id"))
    return [i for i in ids if isinstance(i, str)]


_BLOCKS = frozenset({"tool_use", "tool_result", "text", "image", "thinking", "redacted_thinking", "document"})


def history_items(doc: dict[str, Any] | None, dialect: str | None) -> tuple[str, list[Any]]:
    """The body key holding the history, and its items (a Responses string input as one user item)."""
    if doc is None:
        return "messages", []
    key = DIALECTS[dialect].ITEMS if dialect in DIALECTS else ("input" if "input" in doc else "messages")
    items = doc.get(key)
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    return key, items if isinstance(items, list) else []


def diff_lines(ex: Explained) -> list[str]:
    if ex.before is None or ex.after is None:
        return ["(the original or the rewritten body is not available as JSON: no diff)"]
    key, before = history_items(ex.before, ex.dialect)
    _, after = history_items(ex.after, ex.dialect)
    old = [item_line(i) for i in before]
    new = [item_line(i) for i in after]
    out = [f"{key}: {len(before)} items before, {len(after)} after ('-' removed, '+' added, ' ' unchanged)"]
    step_of = {p.get("id"): p["step"] for p in ex.accounting or [] if "step" in p}
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out.extend(f"  [{i:>3}→{j:>3}] {old[i]}" for i, j in zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        for i in range(i1, i2):
            went = sorted({step_of[x] for x in item_ids(before[i]) if x in step_of})
            where = f"   → step{'s' * (len(went) > 1)} " + ", ".join(f"#{n}" for n in went) if went else ""
            out.append(f"- [{i:>3}     ] {old[i]}{where}")
        out.extend(f"+ [    {j:>3}] {new[j]}" for j in range(j1, j2))
    other = sorted((set(ex.before) | set(ex.after)) - {key})
    changed = [k for k in other if k not in (STEPS_KEY, DELTA_KEY) and ex.before.get(k) != ex.after.get(k)]
    out.append("")
    for k in (STEPS_KEY, DELTA_KEY):
        if k in ex.after and k not in ex.before:
            value = ex.after[k]
            if isinstance(value, list):
                shown = f"{len(value)} step{'' if len(value) == 1 else 's'}"
            else:
                shown = orjson.dumps(value).decode()
            out.append(f"+ {k}: {shown}")
    out.append("other fields: " + (", ".join(f"{k} changed" for k in changed) if changed else "unchanged"))
    return out


def diff_text(ex: Explained) -> str:
    """The "Bridge diff" view: the message history before and after, item by item."""
    return "\n".join([headline(ex.summary), *diff_lines(ex)]) + "\n"
