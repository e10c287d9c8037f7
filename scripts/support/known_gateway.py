"""The known gateway's history translation, re-implemented to compare against.

This is deliberately wrong, in exactly the ways the design brief lists under
"The problem", so the demo can put its output next to the bridge's:

- every mapped call becomes a DONE step, even when no result exists (empty output);
- ``run_command`` gets ``exit_code`` hard-coded to 0 and the output twice, in
  ``stdout`` and ``combined_output.full``;
- error signals are ignored: a failed read becomes a DONE view_file step whose
  content is the error text;
- unmapped calls, their results and orphan results are dropped: they are neither
  steps nor messages;
- the whole history is encoded on every turn (no delta).

Correlation is by id (a dict, last result wins), which is what the gateway does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from native_bridge._proto import cortex_pb2

# The gateway's own name table (design brief, "Tool names in the wild").
TOOL_KINDS = {
    "Read": "view_file",
    "read_file": "view_file",
    "view_file": "view_file",
    "Bash": "run_command",
    "shell": "run_command",
    "run_command": "run_command",
    "Glob": "find",
    "find": "find",
    "Grep": "grep_search_v2",
    "grep_search": "grep_search_v2",
    "Write": "write_to_file",
    "write_to_file": "write_to_file",
    "LS": "list_directory",
    "list_dir": "list_directory",
    "Edit": "propose_code",
    "MultiEdit": "propose_code",
    "WebSearch": "search_web",
    "web_search": "search_web",
    "WebFetch": "read_url_content",
}


@dataclass(slots=True)
class KnownTranslation:
    messages: list[dict[str, Any]]  # the text path: what is left as messages
    steps: list[dict[str, Any]]  # proto3 JSON, the whole history every time
    step_calls: list[str]  # the call id behind each step (for the comparison only)
    dropped: list[tuple[str, str, str | None]] = field(default_factory=list)  # (item, id, tool name)


def _uri(path: str) -> str:
    return path if path.startswith("file://") else "file://" + path


def _body(kind: str, args: dict[str, Any], output: str) -> dict[str, Any]:
    if kind == "view_file":
        return {"absolute_path_uri": _uri(args.get("file_path", "")), "content": output}
    if kind == "run_command":
        return {
            "command_line": args.get("command", ""),
            "blocking": True,
            "exit_code": 0,  # hard-coded: every command "succeeded"
            "stdout": output,  # the output twice
            "combined_output": {"full": output},
        }
    if kind == "find":
        return {"pattern": args.get("pattern", ""), "search_directory": args.get("path", ""), "raw_output": output}
    if kind == "grep_search_v2":
        return {"pattern": args.get("pattern", ""), "path": args.get("path", ""), "raw_output": output}
    if kind == "list_directory":
        return {"directory_path_uri": _uri(args.get("path", "")), "children": output.splitlines()}
    if kind == "write_to_file":
        return {"target_file_uri": _uri(args.get("file_path", "")), "code_content": [args.get("content", "")]}
    if kind == "propose_code":
        chunk = {"target_content": args.get("old_string", ""), "replacement_content": args.get("new_string", "")}
        file = {"absolute_uri": _uri(args.get("file_path", ""))}
        return {"action_spec": {"command": {"is_edit": True, "file": file, "replacement_chunks": [chunk]}}}
    if kind == "search_web":
        return {"query": args.get("query", ""), "summary": output}
    if kind == "read_url_content":
        # web_document (2): text 2 and url 3, as dwgx/WindsurfAPI writes a WebFetch result
        return {"url": args.get("url", ""), "web_document": {"text": output, "url": args.get("url", "")}}
    raise AssertionError(kind)


def _step(kind: str, args: dict[str, Any], output: str) -> dict[str, Any]:
    step = cortex_pb2.CortexTrajectoryStep(
        type=cortex_pb2.CortexStepType.Value(f"CORTEX_STEP_TYPE_{kind.upper()}"),
        status=cortex_pb2.CortexStepStatus.Value("CORTEX_STEP_STATUS_DONE"),  # always DONE
    )
    json_format.ParseDict(_body(kind, args, output), getattr(step, kind))
    return json_format.MessageToDict(step)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def translate(body: dict[str, Any]) -> KnownTranslation:
    messages = body.get("messages") or []
    results = {m.get("tool_call_id"): _text(m.get("content")) for m in messages if m.get("role") == "tool"}
    call_ids = {tc.get("id") for m in messages for tc in m.get("tool_calls") or []}
    out = KnownTranslation([], [], [])
    for m in messages:
        if m.get("role") == "tool":
            # The text path carries no tool messages: unmapped and orphan results vanish.
            call_id = m.get("tool_call_id")
            if call_id not in call_ids:
                out.dropped.append(("result", call_id, None))
            continue
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            kind = TOOL_KINDS.get(fn.get("name"))
            if kind is None:
                out.dropped.append(("call", tc.get("id"), fn.get("name")))
                if tc.get("id") in results:
                    out.dropped.append(("result", tc.get("id"), fn.get("name")))
                continue
            args = json.loads(fn.get("arguments") or "{}")
            # No result: still a DONE step, with empty output.
            out.steps.append(_step(kind, args, results.get(tc.get("id"), "")))
            out.step_calls.append(tc.get("id"))
        if m.get("tool_calls"):
            if m.get("content"):
                out.messages.append({"role": m["role"], "content": m["content"]})
            continue
        out.messages.append(m)
    return out
