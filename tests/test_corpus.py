"""Every real tool result in tests/fixtures/corpus/ (captured from real clients by tests/interop/),
replayed through the core, fast and offline: a minimal request in the entry's dialect with
the call and the result exactly as the client sent it, the client's tool set and its
User-Agent, must give the entry's ground truth.

- shell: the step's exitCode is the real exit code when the client's words state it; when they
  do not (``client_states_status`` false), an absent exitCode is the truth too; never a wrong
  number, never 0 for a failure; a killed command is never exit 0; a command still running or
  never run is never a step;
- read, edit: a failed read or edit never becomes a step. A success becomes its step where the
  client's own words (or its dialect) say it succeeded (truth rule 5; SUCCESS_STEP); where they
  do not, or the bridge maps no step kind to the tool, the pair stays a message, which is no
  false claim and loses nothing (NO_SUCCESS_STEP, each with its reason). Every successful read
  and edit of the corpus is in one of the two tables.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from native_bridge import rewrite

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"

# (client, tool) → the step a successful read or edit becomes: the client states the success.
SUCCESS_STEP: dict[tuple[str, str], str] = {
    ("claude-code", "Read"): "viewFile",  # the file in numbered lines ("     1\t…")
    ("claude-code", "Edit"): "proposeCode",  # "The file … has been updated successfully."
    ("gemini-cli", "read_file"): "viewFile",  # the Gemini API's {"output": …}, not {"error": …}
    ("gemini-cli", "replace"): "proposeCode",  # "Successfully modified file: … (1 replacements)."
    ("opencode", "read"): "viewFile",  # "<path>…</path>\n<type>file</type>\n<content>"
    ("opencode", "edit"): "proposeCode",  # "Edit applied successfully."
    ("kilo", "read"): "viewFile",  # opencode's tools
    ("kilo", "edit"): "proposeCode",
    ("qwen-code", "edit"): "proposeCode",  # "The file: … has been updated."
}
# (client, tool) → why a successful read or edit stays a message.
NO_SUCCESS_STEP: dict[tuple[str, str], str] = {
    ("qwen-code", "read_file"): "the file as it is, no words of success, and Chat Completions has no error flag",
    # Continue's CLI: identified by its tool set, but no wording of its reads and edits is known evidence.
    ("continue-cli", "Read"): "'Content of <path>:' is no known evidence of success",
    ("continue-cli", "MultiEdit"): "'Successfully edited …' is no known evidence of success",
    ("openhands", "file_editor"): "one tool for view, create and edit (its command decides): no step kind is mapped",
    ("codex", "apply_patch"): "a patch is not one propose_code step: no step kind is mapped",
    ("openai-agents", "apply_patch"): "a patch is not one propose_code step: no step kind is mapped",
}


def _load() -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    out = []
    for path in sorted(CORPUS.glob("*.json")):
        doc = json.loads(path.read_text())
        if isinstance(doc, list):
            entries, tools = doc, {}
        else:
            entries, tools = doc.get("entries") or [], doc.get("tools") or {}
        for i, e in enumerate(entries):
            variant = e.get("variant") or e.get("client")
            tool_list = next((v for k, v in tools.items() if k == variant or k.startswith(f"{variant} (")), [])
            out.append((f"{path.stem}-{i}-{e.get('scenario', '')}-{e.get('tool')}", e, tool_list))
    return out


ENTRIES = _load()


def _schema(summary: dict[str, Any]) -> dict[str, Any]:
    props = {k: {"type": "string"} for k in summary.get("properties") or []}
    return {"type": "object", "properties": props, "required": summary.get("required") or []}


def _args(e: dict[str, Any]) -> Any:
    return e["arguments"]


def body_for(e: dict[str, Any], tools: list[dict[str, Any]]) -> tuple[bytes, str]:
    """A minimal request of the entry's dialect: one call, its result as sent; and its path."""
    dialect, cid, name, result = e["dialect"], e.get("call_id") or "call_1", e["tool"], e["result"]
    user = "Use the tool you are asked to use, then reply with one word."
    if dialect == "anthropic":
        body = {
            "model": "m",
            "max_tokens": 100,
            "tools": [{"name": t["name"], "input_schema": _schema(t)} for t in tools if t.get("name")],
            "messages": [
                {"role": "user", "content": user},
                {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": name, "input": _args(e)}]},
                {"role": "user", "content": [result]},
            ],
        }
        return orjson.dumps(body), "/v1/messages"
    if dialect == "chat":
        call = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(_args(e))}}
        body = {
            "model": "m",
            "tools": [
                {"type": "function", "function": {"name": t["name"], "parameters": _schema(t)}}
                for t in tools
                if t.get("name")
            ],
            "messages": [
                {"role": "user", "content": user},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                result,
            ],
        }
        return orjson.dumps(body), "/v1/chat/completions"
    if dialect == "responses":
        if isinstance(_args(e), str):
            item = {"type": "custom_tool_call", "call_id": cid, "name": name, "input": _args(e)}
        else:
            item = {"type": "function_call", "call_id": cid, "name": name, "arguments": json.dumps(_args(e))}
        defs = []
        for t in tools:
            if t.get("type") == "custom":
                defs.append({"type": "custom", "name": t["name"], "format": {"type": t.get("format") or "text"}})
            elif t.get("type") == "function":
                defs.append({"type": "function", "name": t["name"], "parameters": _schema(t)})
        body = {
            "model": "m",
            "tools": defs,
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]},
                item,
                result,
            ],
        }
        return orjson.dumps(body), "/v1/responses"
    if dialect == "gemini":
        fr = result.get("functionResponse", {}) if isinstance(result, dict) else {}
        fc: dict[str, Any] = {"name": name, "args": _args(e)}
        if fr.get("id"):
            fc["id"] = fr["id"]
        body = {
            "tools": [
                {
                    "functionDeclarations": [
                        {"name": t["name"], "parametersJsonSchema": _schema(t)} for t in tools if t.get("name")
                    ]
                }
            ],
            "contents": [
                {"role": "user", "parts": [{"text": user}]},
                {"role": "model", "parts": [{"functionCall": fc}]},
                {"role": "user", "parts": [result]},
            ],
        }
        return orjson.dumps(body), "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    raise AssertionError(f"unknown dialect {dialect!r}")


def _rewrite(raw: bytes, path: str, user_agent: str | None) -> Any:
    kw: dict[str, Any] = {"path": path}
    params = inspect.signature(rewrite).parameters
    if "memo" in params:
        kw["memo"] = None
    if "client_hint" in params:
        kw["client_hint"] = user_agent
    return rewrite(raw, **kw)


def problems_for(e: dict[str, Any], result: Any) -> list[str]:
    out = e["outcome"]
    states = e.get("client_states_status", True)
    text = json.dumps(e["result"])[:500]
    if result.status in ("error", "skipped"):
        return [f"the core did not handle the request: {result.status}: {result.reason}; result {text}"]
    steps = result.steps
    assert len(steps) <= 1, f"one pair gave {len(steps)} steps"
    step = steps[0] if steps else None
    kind, code, ok = out["kind"], out.get("exit_code"), out.get("ok")
    if out.get("running"):
        return [f"false claim: a command still running / never run became a step {step}; result {text}"] if step else []
    if kind == "shell":
        if step is None:
            if states:
                return [f"the client states the status but the pair stayed a message ({result.reason}); result {text}"]
            return []
        if "runCommand" not in step:
            return [f"became {step.get('type')}, not a run_command step"]
        got = step["runCommand"].get("exitCode")
        if code is None:  # killed
            if got == 0:
                return [f"false claim: exit 0 for a killed command; result {text}"]
            if got is None and states:
                return [f"lost failure: a killed command stated by the client has no exit code; result {text}"]
            return []
        if got == code or (got is None and not states):
            return []
        if got is None:
            return [f"{'success' if code == 0 else 'failure'} lost: exitCode absent, truth {code}; result {text}"]
        return [f"false claim: exitCode {got}, truth {code}; result {text}"]
    if kind in ("read", "edit"):
        if not ok:
            if step is not None:
                return [f"false claim: a failed {kind} became a {step.get('type')} step; result {text}"]
            return []
        key = (e["client"], e["tool"])
        if key in SUCCESS_STEP:
            want = SUCCESS_STEP[key]
            if step is None or want not in step:
                got = step.get("type") if step else f"no step ({result.reason})"
                return [f"the client states this {kind} succeeded but it became {got}, not {want}; result {text}"]
            return []
        if key in NO_SUCCESS_STEP:
            if step is not None:
                return [f"a {kind} the bridge has no evidence for became a {step.get('type')} step; result {text}"]
            return []
        return [f"successful {kind} of {key}: say in SUCCESS_STEP or NO_SUCCESS_STEP what is true; result {text}"]
    return [f"unknown outcome kind {kind!r}"]


def test_corpus_is_there() -> None:
    assert ENTRIES, f"no corpus entries in {CORPUS}"
    clients = {e["client"] for _, e, _ in ENTRIES}
    for _, e, _ in ENTRIES:
        assert e.get("client") and e.get("version"), "every entry names its client and version"
        assert e["outcome"]["kind"] in ("shell", "read", "edit")
    assert len(clients) >= 1


@pytest.mark.parametrize(("entry", "tools"), [pytest.param(e, t, id=i) for i, e, t in ENTRIES])
def test_corpus_entry_truth(entry: dict[str, Any], tools: list[dict[str, Any]]) -> None:
    raw, path = body_for(entry, tools)
    ua = (entry.get("request_headers_subset") or {}).get("user-agent")
    result = _rewrite(raw, path, ua)
    problems = problems_for(entry, result)
    assert not problems, (
        f"{entry['client']} {entry['version']} {entry['tool']} {json.dumps(entry['arguments'])[:200]}:\n"
        + "\n".join(problems)
    )
