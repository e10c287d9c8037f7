"""One CortexTrajectoryStep at wire level: a read-only view, and editors that
change only the fields they are asked to (every other byte, unknown fields
included, stays as it came).

Kinds are told apart by the body's oneof field number, never by the type enum:
gateways write other numbers there (one types run_command 28, officially
COMMAND_STATUS; another types every step 8, officially VIEW_FILE), and the body
is what the planner reads. :data:`OFFICIAL_TYPE` is the type that names each body
(proto/README.md, "Step type numbers").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from .._proto import cortex_pb2
from .wire import LEN, Buffer, Field, WireError, fields, int32, len_field, string, varint_field, varint_value

_STEP = cortex_pb2.CortexTrajectoryStep.DESCRIPTOR
TYPE = _STEP.fields_by_name["type"].number
STATUS = _STEP.fields_by_name["status"].number
DONE = cortex_pb2.CortexStepStatus.Value("CORTEX_STEP_STATUS_DONE")
# oneof field number -> kind name (the oneof field's name), from proto/cortex.proto.
KIND_BY_FIELD: Mapping[int, str] = {f.number: f.name for f in _STEP.oneofs_by_name["step"].fields}


def _official_types() -> dict[int, int]:
    out = {}
    for number, name in KIND_BY_FIELD.items():
        value = cortex_pb2.CortexStepType.DESCRIPTOR.values_by_name.get(f"CORTEX_STEP_TYPE_{name.upper()}")
        if value is not None:  # a body whose name is no type's (officially inform_planner) has none
            out[number] = value.number
    return out


# oneof field number -> the CortexStepType that names that body (RUN_COMMAND 21 for run_command 28).
OFFICIAL_TYPE: Mapping[int, int] = _official_types()


def type_name(number: int | None) -> str:
    """The official name of a CortexStepType number (``"RUN_COMMAND"``), or a description."""
    if number is None:
        return "absent"
    value = cortex_pb2.CortexStepType.DESCRIPTOR.values_by_number.get(number)
    return value.name.removeprefix("CORTEX_STEP_TYPE_") if value is not None else "no official type"


def _numbers(kind: str, *names: str) -> tuple[int, ...]:
    body = _STEP.fields_by_name[kind].message_type
    if body is None:
        raise TypeError(f"{kind} is not a message field of the step")
    return tuple(body.fields_by_name[n].number for n in names)


WEB_DOCUMENT = _numbers("read_url_content", "web_document")[0]
_WEB_DOCUMENT_TEXT = (WEB_DOCUMENT, cortex_pb2.KnowledgeBaseItem.DESCRIPTOR.fields_by_name["text"].number)

# The fields that carry a kind's observation (its result). An empty tuple: the kind has
# none, so an observed and an unobserved step look the same (write_to_file, propose_code;
# grep_search's fields are not modelled). Kinds not listed (user_input, error_message,
# command_status) are not judged here.
RESULT_FIELDS: Mapping[str, tuple[int, ...]] = {
    "view_file": _numbers("view_file", "content"),
    "run_command": _numbers("run_command", "stdout", "stderr", "exit_code", "combined_output"),
    "grep_search_v2": _numbers("grep_search_v2", "raw_output"),
    "find": _numbers("find", "raw_output"),
    "list_directory": _numbers("list_directory", "children"),
    "search_web": _numbers("search_web", "summary"),
    # web_document (a KnowledgeBaseItem): its text is the page, where the known gateway
    # and the chat hop put a WebFetch result.
    "read_url_content": (WEB_DOCUMENT,),
    "write_to_file": (),
    "propose_code": (),
    "grep_search": (),
}
# What a step is about, as the chat hop names it (the command line, the path, the query).
SUBJECT_FIELDS: Mapping[str, tuple[int, ...]] = {
    "view_file": _numbers("view_file", "absolute_path_uri"),
    "run_command": _numbers("run_command", "command_line"),
    "grep_search_v2": _numbers("grep_search_v2", "pattern"),
    "find": _numbers("find", "pattern"),
    "list_directory": _numbers("list_directory", "directory_path_uri"),
    "search_web": _numbers("search_web", "query"),
    "read_url_content": _numbers("read_url_content", "url"),
    "write_to_file": _numbers("write_to_file", "target_file_uri"),
    # action_spec -> command -> file -> absolute_uri
    "propose_code": (1, 1, 4, 5),
}
_RUN = cortex_pb2.CortexStepRunCommand.DESCRIPTOR.fields_by_name
COMMAND_LINE = _RUN["command_line"].number
CWD = _RUN["cwd"].number
BLOCKING = _RUN["blocking"].number
STDOUT = _RUN["stdout"].number
STDERR = _RUN["stderr"].number
EXIT_CODE = _RUN["exit_code"].number
COMBINED_OUTPUT = _RUN["combined_output"].number
COMMAND_ID = _RUN["command_id"].number
FULL = cortex_pb2.RunCommandOutput.DESCRIPTOR.fields_by_name["full"].number
_STATUS_BODY = cortex_pb2.CortexStepCommandStatus.DESCRIPTOR.fields_by_name
CS_COMMAND_ID = _STATUS_BODY["command_id"].number
CS_STDOUT = _STATUS_BODY["stdout"].number
CS_STDERR = _STATUS_BODY["stderr"].number
CS_EXIT_CODE = _STATUS_BODY["exit_code"].number
CS_COMBINED = _STATUS_BODY["combined"].number
CS_DELTA = _STATUS_BODY["delta"].number
_STATUS = cortex_pb2.CortexStepStatus


@dataclass(frozen=True, slots=True)
class StepView:
    type: int | None  # the type enum as sent
    status: int | None
    body_field: int | None  # the oneof field holding the body; None: no body we know
    body: bytes | None
    kind: str | None  # KIND_BY_FIELD[body_field]
    fields: Sequence[Field]  # the step's top-level fields
    body_fields: Sequence[Field]  # the body's fields (empty without a body)

    @property
    def done(self) -> bool:
        return self.status == DONE

    @property
    def status_name(self) -> str:
        value = _STATUS.DESCRIPTOR.values_by_number.get(self.status or 0)
        return value.name.removeprefix("CORTEX_STEP_STATUS_") if value is not None else str(self.status)


def view(step: Buffer) -> StepView:
    """Read a step; raises :class:`WireError` when it does not parse, or holds two bodies
    (protobuf would merge them; a correction of one would be a guess)."""
    top = fields(step)
    type_ = status = None
    body: Field | None = None
    for f in top:
        number = f.number
        if number == TYPE:
            type_ = varint_value(step, f)
        elif number == STATUS:
            status = varint_value(step, f)
        elif number in KIND_BY_FIELD:
            if f.wire_type != LEN:
                raise WireError(f"step body {number} with wire type {f.wire_type}")
            # mutation: wire-two-bodies
            if body is not None:
                raise WireError(f"step holds two bodies ({body.number} and {number})")
            body = f
    if body is None:
        return StepView(type_, status, None, None, None, top, ())
    payload = bytes(step[body.value_start : body.end])
    return StepView(type_, status, body.number, payload, KIND_BY_FIELD[body.number], top, fields(payload))


def has_any(body_fields: Collection[Field], numbers: Collection[int]) -> bool:
    return any(f.number in numbers for f in body_fields)


def last_string(buf: Buffer, body_fields: Collection[Field], number: int) -> str | None:
    """A string field's value (the last occurrence wins, as in protobuf); None when absent."""
    found = None
    for f in body_fields:
        if f.number == number:
            found = string(buf, f)
    return found


def strings(buf: Buffer, body_fields: Collection[Field], number: int) -> list[str]:
    return [string(buf, f) for f in body_fields if f.number == number]


def nested_string(buf: Buffer, path: tuple[int, ...]) -> str | None:
    """The string at a path of message fields (``(1, 1, 4, 5)``), last occurrences winning."""
    for depth, number in enumerate(path):
        found = [f for f in fields(buf) if f.number == number]
        if not found:
            return None
        if depth == len(path) - 1:
            return string(buf, found[-1])
        if found[-1].wire_type != LEN:
            raise WireError(f"field {number}: expected a message")
        buf = b"".join(bytes(buf[f.value_start : f.end]) for f in found)  # protobuf merges repeats
    return None


@dataclass(frozen=True, slots=True)
class RunCommand:
    command_line: str | None
    cwd: str | None
    blocking: bool | None
    stdout: str | None
    stderr: str | None
    exit_code: int | None  # proto3 optional int32: None when absent
    combined_output: bool  # the combined_output message is present (even empty)
    full: str | None  # combined_output.full


_STRINGS = frozenset({COMMAND_LINE, CWD, STDOUT, STDERR})


def run_command(body: bytes, body_fields: Collection[Field] | None = None) -> RunCommand:
    """The run_command body's values, read in one pass: the last occurrence of a scalar wins,
    every string is checked as UTF-8 (as protobuf does), repeated combined_output messages merge."""
    bf = fields(body) if body_fields is None else body_fields
    exit_code = blocking = None
    full = None
    combined = False
    text: dict[int, str] = {}
    for f in bf:
        number = f.number
        if number in _STRINGS:
            text[number] = string(body, f)
        # mutation: planner-exit-code-unsigned
        elif number == EXIT_CODE:
            exit_code = int32(varint_value(body, f))
        elif number == BLOCKING:
            blocking = bool(varint_value(body, f))
        elif number == COMBINED_OUTPUT:
            if f.wire_type != LEN:
                raise WireError("combined_output is not a message")
            combined = True
            inner = body[f.value_start : f.end]
            for g in fields(inner):
                if g.number == FULL:  # a later full wins, across repeated messages too
                    full = string(inner, g)
    return RunCommand(
        command_line=text.get(COMMAND_LINE),
        cwd=text.get(CWD),
        blocking=blocking,
        stdout=text.get(STDOUT),
        stderr=text.get(STDERR),
        exit_code=exit_code,
        combined_output=combined,
        full=full if full is not None else ("" if combined else None),
    )


@dataclass(frozen=True, slots=True)
class CommandStatus:
    """A command_status body's outcome fields (official CortexStepCommandStatus)."""

    command_id: str | None
    stdout: str | None  # deprecated officially; gateways still fill it
    stderr: str | None
    exit_code: int | None  # proto3 optional int32
    combined: str | None
    delta: str | None  # proto3 optional: the output since the previous status


_CS_STRINGS = frozenset({CS_COMMAND_ID, CS_STDOUT, CS_STDERR, CS_COMBINED, CS_DELTA})


def command_status(body: bytes, body_fields: Collection[Field] | None = None) -> CommandStatus:
    """The command_status body's values, read in one pass (the last occurrence wins)."""
    bf = fields(body) if body_fields is None else body_fields
    text: dict[int, str] = {}
    exit_code = None
    for f in bf:
        if f.number in _CS_STRINGS:
            text[f.number] = string(body, f)
        elif f.number == CS_EXIT_CODE:
            exit_code = int32(varint_value(body, f))
    return CommandStatus(
        command_id=text.get(CS_COMMAND_ID),
        stdout=text.get(CS_STDOUT),
        stderr=text.get(CS_STDERR),
        exit_code=exit_code,
        combined=text.get(CS_COMBINED),
        delta=text.get(CS_DELTA),
    )


def run_command_id(body: bytes, body_fields: Collection[Field]) -> str | None:
    """A run_command body's command_id (13): what its command_status steps name it by."""
    return last_string(body, body_fields, COMMAND_ID)


def result_text(v: StepView) -> str | None:
    """The observation text of a non-shell step (children joined by lines); None without one."""
    numbers = RESULT_FIELDS.get(v.kind or "", ())
    if v.body is None or not numbers or not has_any(v.body_fields, numbers):
        return None
    if v.kind == "read_url_content":
        return nested_string(v.body, _WEB_DOCUMENT_TEXT) or ""  # a message: its text, not its bytes
    return "\n".join(s for n in numbers for s in strings(v.body, v.body_fields, n))


def subject(v: StepView) -> str:
    """What the step is about (command line, path, pattern, query, url), "" when not stated."""
    path = SUBJECT_FIELDS.get(v.kind or "")
    if v.body is None or not path:
        return ""
    if len(path) == 1:
        return last_string(v.body, v.body_fields, path[0]) or ""
    return nested_string(v.body, path) or ""


# ---- editors: change only what is asked --------------------------------------------


def edit(
    buf: bytes,
    buf_fields: Sequence[Field],
    drop: Collection[int] = (),
    varint: tuple[int, int] | None = None,
) -> bytes:
    """``buf`` (whose fields are ``buf_fields``) without the fields numbered in ``drop`` and, with
    ``varint=(number, value)``, that varint field set: in the place of its first occurrence
    (later ones removed), or appended when absent. Every other byte is kept."""
    number, encoded = (varint[0], varint_field(*varint)) if varint else (None, b"")
    parts: list[bytes] = []
    placed = False
    for f in buf_fields:
        if f.number == number:
            if not placed:
                parts.append(encoded)
                placed = True
        # mutation: planner-unknown-body-fields-lost
        elif f.number not in drop:
            parts.append(buf[f.start : f.end])
    if varint and not placed:
        parts.append(encoded)
    out = b"".join(parts)
    return buf if out == buf else out


def rewrap(step: bytes, v: StepView, new_body: bytes) -> bytes:
    """``step`` with its body replaced by ``new_body`` (length re-encoded), all else kept."""
    if v.body_field is None:
        raise ValueError("the step has no body to replace")
    if new_body == v.body:
        return step
    for f in v.fields:
        if f.number == v.body_field:
            # mutation: planner-unknown-step-fields-lost
            return step[: f.start] + len_field(v.body_field, new_body) + step[f.end :]
    raise AssertionError("a step view's body field is among its fields")


# ---- display -------------------------------------------------------------------------


def to_json(step: bytes) -> dict[str, Any]:
    """The step's proto3 JSON with our schema, for records and views only: protobuf's JSON
    drops unknown fields, so it is never what goes on the wire."""
    try:
        msg = cortex_pb2.CortexTrajectoryStep.FromString(step)
    except DecodeError as e:
        return {"undecodable": str(e), "size": len(step)}
    return json_format.MessageToDict(msg)
