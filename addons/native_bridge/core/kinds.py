"""Step kinds: how a call's arguments and its result become the fields of its kind's step body.

Translation is strict on purpose (truth rule 5): an argument that changes what the
tool did but has no field in the step body, or a result the body cannot state
truthfully (a failed read, a command still running), refuses the step and the
pair stays in the message history.

What is known of the clients is data in rules/: which tool name is which kind
(tool_names.py), argument names by meaning (arguments.py), each client's words for a
tool's success (success_evidence.py) and the words that say it failed (tool_failed.py,
not_run.py). This module reads them.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Literal, overload
from urllib.parse import quote_from_bytes

import orjson

from .clients import BY_ID, counts_for
from .exitstatus import parse_exit_status, strip_frame
from .history import ToolResult
from .mapping import ToolKinds
from .rules.arguments import BACKGROUND_ARGS, CWD_ARGS, DIR_ARGS, FILE_ARGS, IGNORABLE_ARGS
from .rules.not_run import NOT_RUN
from .rules.success_evidence import EVIDENCE
from .rules.tool_failed import TOOL_FAILED
from .rules.tool_names import DEFAULT_TOOL_KINDS
from .rules.types import Evidence


class Refusal(Exception):
    """This pair cannot become a step; the message says why."""


# Values that set nothing: such an argument is no leftover whatever its name.
_EMPTY: tuple[object, ...] = (None, False, "", [], {})


class _Args:
    """Reads a call's arguments by their possible names and refuses leftovers."""

    def __init__(self, kind: str, args: Mapping[str, Any]) -> None:
        self.kind = kind
        self.args = args
        self.used: set[str] = set()

    def _get(self, names: tuple[str, ...]) -> Any:
        for name in names:
            if name in self.args:
                self.used.add(name)
                value = self.args[name]
                if value is not None:
                    return value
        return None

    @overload
    def text(self, *names: str, required: Literal[True]) -> str: ...

    @overload
    def text(self, *names: str, required: bool = False) -> str | None: ...

    def text(self, *names: str, required: bool = False) -> str | None:
        value = self._get(names)
        if value is None:
            if required:
                raise Refusal(f"{self.kind}: missing argument {names[0]!r}")
            return None
        if not isinstance(value, str):
            raise Refusal(f"{self.kind}: argument {names[0]!r} is not a string")
        return value

    def uint(self, *names: str) -> int | None:
        value = self._get(names)
        if value is None:
            return None
        if type(value) is not int or not 0 <= value < 2**32:
            raise Refusal(f"{self.kind}: argument {names[0]!r} is not a small whole number")
        return value

    def flag(self, *names: str) -> bool | None:
        value = self._get(names)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise Refusal(f"{self.kind}: argument {names[0]!r} is not a boolean")
        return value

    def raw(self, *names: str) -> Any:
        return self._get(names)

    def done(self, fields: dict[str, Any]) -> dict[str, Any]:
        for key, value in self.args.items():
            if key in self.used or key in IGNORABLE_ARGS or value in _EMPTY:
                continue
            raise Refusal(f"{self.kind}: argument {key!r} has no field in the step")
        return {k: v for k, v in fields.items() if v is not None}


def path_uri(path: str) -> str:
    """An absolute path as a file URI; a relative path cannot be stated as one."""
    if path.startswith("file://"):
        return path
    uri = _absolute_uri(path)
    if uri is None:
        raise Refusal(f"path {path!r} is not absolute")
    return uri


_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


def _absolute_uri(path: str) -> str | None:
    # No cache (the core keeps no state): the common path costs about 1.6 µs.
    if path.startswith("/"):
        if "//" in path or "/./" in path or path.endswith(("/", "/.")):  # pathlib normalises it first
            return PurePosixPath(path).as_uri()
        # A path pathlib leaves as it is: its as_uri() without building the path (about 14 µs).
        return "file://" + quote_from_bytes(os.fsencode(path))
    if _WINDOWS_ABSOLUTE.match(path):
        return PureWindowsPath(path).as_uri()
    return None


def _result_text(result: ToolResult, kind: str) -> str:
    if result.text is None:
        raise Refusal(f"{kind}: the result holds content that is not text")
    return result.text


def signals_failure(result: ToolResult, client: str | None = None) -> bool:
    """True when the client marked this result as a failure, or it says the tool did not run.

    ``client`` is accepted for symmetry with :func:`evidence`: failure words are a reason
    to make no claim, so they count whoever the client is."""
    if result.is_error:
        return True
    return _says_failed(*strip_frame(result.text or ""))


def _says_failed(text: str, flagged: bool) -> bool:
    """:func:`signals_failure` of a result without an error flag, read from its :func:`strip_frame`."""
    return flagged or bool(NOT_RUN.match(text) or TOOL_FAILED.match(text))


def evidence(result: ToolResult, kind: str, client: str | None) -> Evidence | None:
    """The client's own words for this kind's success at the start of ``result``, if any."""
    if client is None or result.text is None:
        return None
    return _evidence(result, kind, client, strip_frame(result.text)[0])


def _evidence(result: ToolResult, kind: str, client: str, text: str) -> Evidence | None:
    """:func:`evidence` in ``text``, the result as :func:`strip_frame` leaves it."""
    rules = _EVIDENCE.get((kind, client))
    for e in _evidence_for(kind, client) if rules is None else rules:
        if (result.is_error is False) if e.unflagged else bool(e.pattern.match(text)):
            return e
    return None


def _evidence_for(kind: str, client: str) -> tuple[Evidence, ...]:
    """The evidence rules of ``kind`` that count for ``client``, in their order."""
    return tuple(e for e in EVIDENCE if e.kind == kind and counts_for(client, e.clients))


# Each known client's rules per kind, found once (a name that is no client id: found each time).
_EVIDENCE = {(e.kind, c): _evidence_for(e.kind, c) for e in EVIDENCE for c in BY_ID}


def _succeeded(result: ToolResult, kind: str, client: str | None) -> tuple[str, Evidence]:
    """The result text and the client's words for its success; a kind whose step has no field
    to state a failure becomes a step only with positive evidence (truth rule 5). The frame is
    stripped once for both readings (``signals_failure``, ``evidence``)."""
    text = _result_text(result, kind)
    stripped, flagged = strip_frame(text)
    if result.is_error or _says_failed(stripped, flagged):
        raise Refusal(f"{kind}: the tool failed and the step has no field to say so")
    found = None if client is None else _evidence(result, kind, client, stripped)
    # mutation: non-shell-without-evidence
    if found is None:
        who = f"client {client}" if client else "an unidentified client"
        raise Refusal(f"{kind}: no words of {who} say this succeeded (core/rules/CLIENTS.md: Success evidence)")
    return text, found


def _succeeded_text(result: ToolResult, kind: str, client: str | None) -> str:
    return _succeeded(result, kind, client)[0]


# ---- view_file ---------------------------------------------------------------


def _view_file_in(a: _Args) -> dict[str, Any]:
    path = a.text(*FILE_ARGS, required=True)
    if a.text("mode") not in (None, "slice"):  # Codex / Roo Code indentation mode reads a block, not a range
        raise Refusal("view_file: a read mode other than slice has no field in the step")
    return a.done({"absolute_path_uri": path_uri(path), "offset": a.uint("offset"), "limit": a.uint("limit")})


def _view_file_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    # mutation: failed-read-stepped
    return {"content": _succeeded_text(r, "view_file", client)}


# ---- run_command -------------------------------------------------------------


def _shell_join(argv: list[Any]) -> str:
    if not argv or not all(isinstance(x, str) for x in argv):
        raise Refusal("run_command: command list holds something other than strings")
    return shlex.join(argv)


def _run_command_in(a: _Args) -> dict[str, Any]:
    command = a.raw("command", "cmd", "CommandLine", "command_line")
    commands = a.raw("commands")  # Responses shell_call: one step states one command
    if command is None and isinstance(commands, list):
        if len(commands) != 1:
            raise Refusal("run_command: several commands in one call have one command line")
        command = commands[0]
    elif isinstance(command, list):
        command = _shell_join(command)
    if not isinstance(command, str) or not command:
        raise Refusal("run_command: no command line")
    if a.flag(*BACKGROUND_ARGS) or a.flag("waitForCompletion") is False:
        raise Refusal("run_command: ran in the background, its outcome is not in the result")
    if a.raw("is_input") in (True, "true"):  # OpenHands: keys sent to a running process
        raise Refusal("run_command: input to a running process is not a command")
    blocking = a.flag("Blocking", "blocking")
    cwd = a.text(*CWD_ARGS)
    return a.done({"command_line": command, "cwd": cwd, "blocking": True if blocking is None else blocking})


def _command_output(text: str) -> str:
    # Codex `shell` wraps output as {"output": ..., "metadata": {...}}: keep the output.
    if text.lstrip().startswith("{"):
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
        output = doc.get("output") if isinstance(doc, dict) and set(doc) <= {"output", "metadata"} else None
        if isinstance(output, str):
            return output
    return text


def _run_command_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    text = _result_text(r, "run_command")
    status = parse_exit_status(text, r.is_error, client)
    if status.verdict == "not_run":
        raise Refusal("run_command: the command did not run (rejected, denied or invalid)")
    if status.verdict == "running":
        raise Refusal(f"run_command: the command was still running, no outcome yet ({status.source})")
    code = r.exit_code if r.exit_code is not None else status.code
    if code in (None, 0) and status.flagged:
        # The flag is authoritative in its direction: a DONE step with no code (or 0) would drop
        # the failure the client flagged, and a declined number never becomes 1 (truth rule 3).
        raise Refusal(f"run_command: flagged as failed, and no failing exit code can be stated ({status.source})")
    # mutation: output-in-stdout
    out: dict[str, Any] = {"combined_output": {"full": _command_output(text)}}
    # mutation: exit-code-zero
    if code is not None:
        out["exit_code"] = code
    return out


# ---- find / grep -------------------------------------------------------------


def _find_in(a: _Args) -> dict[str, Any]:
    return a.done(
        {
            "pattern": a.text("pattern", "Pattern", "glob", required=True),
            "search_directory": a.text("path", "search_directory", "SearchDirectory", "dir_path"),
        }
    )


def _find_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    return {"raw_output": _succeeded_text(r, "find", client)}


def _grep_in(a: _Args) -> dict[str, Any]:
    if a.flag("IsRegex") is False or a.flag("literal_text", "fixed_strings"):
        raise Refusal("grep_search_v2: a fixed-string search has no field in the step")
    a.flag("MatchPerLine", "-n")  # display only: the raw output shows it
    includes = a.raw("Includes")
    glob = a.text("glob", "include", "include_pattern", "file_pattern")
    if includes is not None:
        if not (isinstance(includes, list) and len(includes) <= 1 and all(isinstance(x, str) for x in includes)):
            raise Refusal("grep_search_v2: several include globs have one field")
        glob = glob or (includes[0] if includes else None)
    case_insensitive = a.flag("-i", "case_insensitive", "CaseInsensitive")
    case_sensitive = a.flag("case_sensitive")
    if case_insensitive is None and case_sensitive is not None:
        case_insensitive = not case_sensitive
    return a.done(
        {
            "pattern": a.text("pattern", "query", "Query", "regex", required=True),
            "path": a.text("path", "SearchPath", "search_path", "dir_path"),
            "glob": glob,
            "output_mode": a.text("output_mode"),
            "lines_after": a.uint("-A", "lines_after", "after"),
            "lines_before": a.uint("-B", "lines_before", "before"),
            "lines_both": a.uint("-C", "context", "lines_both"),
            "case_insensitive": case_insensitive,
            "type": a.text("type"),
            "head_limit": a.uint("head_limit"),
            "multiline": a.flag("multiline"),
        }
    )


def _grep_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    return {"raw_output": _succeeded_text(r, "grep_search_v2", client)}


# ---- list_directory ----------------------------------------------------------


def _list_in(a: _Args) -> dict[str, Any]:
    path = a.text(*DIR_ARGS, required=True)
    return a.done({"directory_path_uri": path_uri(path)})


def _list_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    text, found = _succeeded(r, "list_directory", client)
    text, _ = strip_frame(text)
    header = found.pattern.match(text)
    assert header is not None and found.entry is not None
    children = []
    for line in text[header.end() :].splitlines():
        if not line.strip():
            continue
        m = found.entry.fullmatch(line.rstrip())
        if m is None:  # a note (entries ignored, truncated) or a nested listing: not children
            raise Refusal(f"list_directory: {line.strip()[:60]!r} is not an entry of the listing")
        children.append(m.group("name") or m.group("file"))
    return {"children": children}


# ---- write_to_file -----------------------------------------------------------


def _write_in(a: _Args) -> dict[str, Any]:
    path = a.text(*FILE_ARGS, "TargetFile", required=True)
    content = a.text("content", "CodeContent", "code_content", "contents", "file_text")
    if content is None:
        raise Refusal("write_to_file: no content")
    a.flag("EmptyFile")
    return a.done({"target_file_uri": path_uri(path), "code_content": [content]})


def _write_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    _, found = _succeeded(r, "write_to_file", client)
    # Whether the file was created only when the client's words say so (absent otherwise).
    # mutation: file-created-guessed
    return {} if found.file_created is None else {"file_created": found.file_created}


# ---- propose_code ------------------------------------------------------------


def _replacement(e: _Args) -> dict[str, Any]:
    """One replacement chunk, from the argument names clients use for an edit."""
    allow_multiple = e.flag("replace_all", "replaceAll", "allow_multiple")
    expected = e.uint("expected_replacements")  # Gemini CLI (older): an exact count
    if expected is not None and expected != 1:
        raise Refusal("propose_code: an exact replacement count has no field in the step")
    chunk = {
        "target_content": e.text("old_string", "oldString", "old_str", "old_text", "before", required=True),
        "replacement_content": e.text("new_string", "newString", "new_str", "new_text", "after", required=True),
        "allow_multiple": allow_multiple,
    }
    return {k: v for k, v in chunk.items() if v is not None}


def _propose_in(a: _Args) -> dict[str, Any]:
    path = a.text(*FILE_ARGS, required=True)
    edits = a.raw("edits")
    if edits is not None:
        if not isinstance(edits, list) or not edits or not all(isinstance(e, dict) for e in edits):
            raise Refusal("propose_code: edits is not a list of edits")
        chunks = []
        for edit in edits:
            e = _Args("propose_code", edit)
            chunks.append(e.done(_replacement(e)))
    else:
        chunks = [_replacement(a)]
    command: dict[str, Any] = {"is_edit": True, "file": {"absolute_uri": path_uri(path)}, "replacement_chunks": chunks}
    instruction = a.text("instruction")  # Gemini CLI replace states what the edit is for
    if instruction:
        command["instruction"] = instruction
    return a.done({"action_spec": {"command": command}})


def _propose_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    _succeeded_text(r, "propose_code", client)
    return {}


# ---- search_web / read_url_content -------------------------------------------


def _search_in(a: _Args) -> dict[str, Any]:
    domains = a.raw("allowed_domains", "domain")
    if isinstance(domains, list):
        if len(domains) > 1 or not all(isinstance(d, str) for d in domains):
            raise Refusal("search_web: several domains have one field")
        domains = domains[0] if domains else None
    if domains is not None and not isinstance(domains, str):
        raise Refusal("search_web: domain is not a string")
    return a.done({"query": a.text("query", required=True), "domain": domains})


def _search_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    return {"summary": _succeeded_text(r, "search_web", client)}


def _fetch_in(a: _Args) -> dict[str, Any]:
    return a.done({"url": a.text("url", "Url", required=True)})


def _fetch_out(r: ToolResult, inputs: dict[str, Any], client: str | None = None) -> dict[str, Any]:
    # The official result field: web_document, a KnowledgeBaseItem whose text is the page (as the
    # known gateway writes it; the official message has no summary field of its own).
    return {"web_document": {"text": _succeeded_text(r, "read_url_content", client)}}


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # also the step's oneof field
    step_type: str  # CortexStepType value name
    body: str  # body message name in proto/cortex.proto
    translate: Callable[[_Args], dict[str, Any]]
    # (result, inputs, client): the client (clients.py) whose words the result is read in
    observe: Callable[[ToolResult, dict[str, Any], str | None], dict[str, Any]]

    def inputs(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        if arguments is None:
            raise Refusal(f"{self.name}: the call's arguments could not be decoded")
        return self.translate(_Args(self.name, arguments))


def _kind(
    name: str,
    body: str,
    translate: Callable[[_Args], dict[str, Any]],
    observe: Callable[[ToolResult, dict[str, Any], str | None], dict[str, Any]],
) -> Kind:
    return Kind(name, f"CORTEX_STEP_TYPE_{name.upper()}", body, translate, observe)


KINDS: Mapping[str, Kind] = {
    k.name: k
    for k in (
        _kind("view_file", "CortexStepViewFile", _view_file_in, _view_file_out),
        _kind("run_command", "CortexStepRunCommand", _run_command_in, _run_command_out),
        _kind("find", "CortexStepFind", _find_in, _find_out),
        _kind("grep_search_v2", "CortexStepGrepSearchV2", _grep_in, _grep_out),
        _kind("list_directory", "CortexStepListDirectory", _list_in, _list_out),
        _kind("write_to_file", "CortexStepWriteToFile", _write_in, _write_out),
        _kind("propose_code", "CortexStepProposeCode", _propose_in, _propose_out),
        _kind("search_web", "CortexStepSearchWeb", _search_in, _search_out),
        _kind("read_url_content", "CortexStepReadUrlContent", _fetch_in, _fetch_out),
    )
}


def tool_map(entries: Iterable[str]) -> dict[str, str]:
    """The default tool table with ``name=kind`` entries applied; ``name=`` unmaps a name (and no
    declared schema maps it by its shape either: mapping.py)."""
    table = dict(DEFAULT_TOOL_KINDS)
    off: set[str] = set()
    for entry in entries:
        name, sep, kind = entry.partition("=")
        name, kind = name.strip(), kind.strip()
        if not sep or not name:
            raise ValueError(f"{entry!r} is not name=kind")
        if not kind:
            table.pop(name, None)
            off.add(name)
        elif kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
        else:
            table[name] = kind
            off.discard(name)
    return ToolKinds(table, None, frozenset(off)) if off else table
