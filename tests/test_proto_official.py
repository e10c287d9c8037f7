"""Our protobuf subset (proto/cortex.proto) against the official Windsurf schema (issue 19).

The official schema was extracted from the Windsurf JetBrains plugin and published in
mobb-dev/bugsy (an independent decompile, AlexStrNik/windsurf-api, agrees on every number).
The tables below are facts transcribed by hand from these files, each entry naming its file;
no proto text of theirs is copied here:

    repository  mobb-dev/bugsy, commit 3edce685be6a670a0ec9fe6c2781a44f89e29707
                (the last commit touching the three files; unchanged at 8d7cfd4)
    CORTEX      src/features/codeium_intellij/proto/exa/cortex_pb/cortex.proto
    LS          src/features/codeium_intellij/proto/exa/language_server_pb/language_server.proto
    COMMON      src/features/codeium_intellij/proto/exa/codeium_common_pb/codeium_common.proto

We follow the official schema (proto/README.md, "Step type numbers"): every message, field and enum
value we declare has its official name, number, type and label, and every enum we declare has
every official value. Any difference fails here.

Not compared, on purpose: oneof wrappers the official schema puts around a single field we
model (``ONEOF_NOT_MODELLED``): one member of a oneof has the same wire and JSON form as a
plain field. The official schema writes proto3 ``optional`` as a oneof ``_name`` of one field;
that is what proto3 ``optional`` is, so it is compared as the label "optional".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from native_bridge._proto import cortex_pb2
from native_bridge.cascade import steps as wire_steps
from native_bridge.cascade.corrections import correct
from native_bridge.cascade.framing import unframe
from native_bridge.cascade.request import SECRET_METADATA_FIELDS, parse_request
from native_bridge.cascade.wire import len_field, varint_field

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "gateway-3.9.27"


@dataclass(frozen=True)
class Official:
    number: int
    type: str  # a scalar type, or the name of the message / enum type
    label: str = ""  # "repeated", "optional" (proto3 optional), or "" (singular)
    oneof: str = ""  # the (non-synthetic) oneof the field is in


# ---- messages: each message we declare -> the file of its official namesake ----------------

OFFICIAL_FILE = {
    "CortexStepType": "CORTEX",
    "CortexStepStatus": "CORTEX",
    "RunCommandAction": "CORTEX",
    "ReadUrlContentAction": "CORTEX",
    "CortexErrorDetails": "CORTEX",
    "CortexStepGrepSearch": "CORTEX",
    "CortexStepViewFile": "CORTEX",
    "CortexStepListDirectory": "CORTEX",
    "CortexStepWriteToFile": "CORTEX",
    "RunCommandOutput": "CORTEX",
    "CortexStepRunCommand": "CORTEX",
    "PathScopeItem": "COMMON",
    "ReplacementChunk": "CORTEX",
    "ActionSpecCommand": "CORTEX",
    "ActionSpec": "CORTEX",
    "CortexStepProposeCode": "CORTEX",
    "CortexStepFind": "CORTEX",
    "KnowledgeBaseItem": "COMMON",
    "CortexStepReadUrlContent": "CORTEX",
    "CortexStepSearchWeb": "CORTEX",
    "CortexStepGrepSearchV2": "CORTEX",
    "CortexStepCommandStatus": "CORTEX",
    "CortexStepErrorMessage": "CORTEX",
    "CortexStepUserInput": "CORTEX",
    "CortexTrajectoryStep": "CORTEX",
    "TextOrScopeItem": "COMMON",
    "Metadata": "COMMON",
    "CascadeConfig": "CORTEX",
    "ImageData": "COMMON",
    "SendUserCascadeMessageRequest": "LS",
    "SendUserCascadeMessageResponse": "LS",
    "CascadeRunCommandInteraction": "CORTEX",
    "CascadeReadUrlContentInteraction": "CORTEX",
    "CascadeUserInteraction": "CORTEX",
    "HandleCascadeUserInteractionRequest": "LS",
    "HandleCascadeUserInteractionResponse": "LS",
    "ReplayGroundTruthTrajectoryRequest": "LS",
    "ReplayGroundTruthTrajectoryResponse": "LS",
}

# ---- fields: our message -> field name -> the official field of that name ------------------
# Only the fields we model; the comments name the official fields we leave out.

OFFICIAL_FIELDS: dict[str, dict[str, Official]] = {
    # CORTEX CortexErrorDetails (also structured_error_parts 8, repeated StructuredErrorPart)
    "CortexErrorDetails": {
        "user_error_message": Official(1, "string"),
        "short_error": Official(2, "string"),
        "full_error": Official(3, "string"),
        "is_benign": Official(4, "bool"),
        "details": Official(5, "string"),
        "error_id": Official(6, "string"),
        "error_code": Official(7, "uint32"),
    },
    # CORTEX CortexStepGrepSearch: query 1, includes 2, raw_output 3, results 4, ... (none modelled)
    "CortexStepGrepSearch": {},
    # CORTEX CortexStepViewFile (also start_line 2, end_line 3, max_tokens 5, ... trigger_source 17)
    "CortexStepViewFile": {
        "absolute_path_uri": Official(1, "string"),
        "content": Official(4, "string"),
        "offset": Official(11, "uint32"),
        "limit": Official(12, "uint32"),
    },
    # CORTEX CortexStepListDirectory (children is deprecated; also results 3, dir_not_found 4)
    "CortexStepListDirectory": {
        "directory_path_uri": Official(1, "string"),
        "children": Official(2, "string", "repeated"),
    },
    # CORTEX CortexStepWriteToFile (also diff 3, acknowledgement_type 5)
    "CortexStepWriteToFile": {
        "target_file_uri": Official(1, "string"),
        "code_content": Official(2, "string", "repeated"),
        "file_created": Official(4, "bool"),
    },
    # CORTEX RunCommandOutput (also truncated 2, num_lines_above 3, ansi_output 4)
    "RunCommandOutput": {"full": Official(1, "string")},
    # CORTEX CortexStepRunCommand (stdout and stderr deprecated; exit_code in oneof _exit_code,
    # i.e. proto3 optional; also command 1, args 3, ... 29)
    "CortexStepRunCommand": {
        "cwd": Official(2, "string"),
        "stdout": Official(4, "string"),
        "stderr": Official(5, "string"),
        "exit_code": Official(6, "int32", "optional"),
        "blocking": Official(11, "bool"),
        "command_id": Official(13, "string"),
        "combined_output": Official(21, "RunCommandOutput"),
        "command_line": Official(23, "string"),
        "proposed_command_line": Official(25, "string"),
        "shell_name": Official(28, "string"),
    },
    # COMMON PathScopeItem (also 1, 2 deprecated, num_files 3, num_bytes 4, 6)
    "PathScopeItem": {"absolute_uri": Official(5, "string")},
    # CORTEX ReplacementChunk (also target_has_carriage_return 4, context_lines 5, 11)
    "ReplacementChunk": {
        "target_content": Official(1, "string"),
        "replacement_content": Official(2, "string"),
        "allow_multiple": Official(3, "bool"),
    },
    # CORTEX ActionSpecCommand (file is in oneof target)
    "ActionSpecCommand": {
        "instruction": Official(1, "string"),
        "is_edit": Official(2, "bool"),
        "file": Official(4, "PathScopeItem", oneof="target"),
        "replacement_chunks": Official(9, "ReplacementChunk", "repeated"),
    },
    # CORTEX ActionSpec (command is in oneof spec; also create_file 2, parent_step_indices 3, 4)
    "ActionSpec": {"command": Official(1, "ActionSpecCommand", oneof="spec")},
    # CORTEX CortexStepProposeCode (also action_result 2, markdown_language 4, blocking 5, 6)
    "CortexStepProposeCode": {
        "action_spec": Official(1, "ActionSpec"),
        "code_instruction": Official(3, "string"),
    },
    # CORTEX CortexStepFind (also includes 2 ... truncated_total_results 15)
    "CortexStepFind": {
        "pattern": Official(1, "string"),
        "search_directory": Official(10, "string"),
        "raw_output": Official(11, "string"),
    },
    # COMMON KnowledgeBaseItem (text is deprecated; also timestamp 5, chunks 6, image 8, dom_tree 9)
    "KnowledgeBaseItem": {
        "document_id": Official(1, "string"),
        "text": Official(2, "string"),
        "url": Official(3, "string"),
        "title": Official(4, "string"),
        "summary": Official(7, "string"),
    },
    # CORTEX CortexStepReadUrlContent (also auto_run_decision 7; there is no field 5)
    "CortexStepReadUrlContent": {
        "url": Official(1, "string"),
        "web_document": Official(2, "KnowledgeBaseItem"),
        "resolved_url": Official(3, "string"),
        "latency_ms": Official(4, "uint32"),
        "user_rejected": Official(6, "bool"),
    },
    # CORTEX CortexStepSearchWeb (also web_documents 2, web_search_url 4, third_party_config 6)
    "CortexStepSearchWeb": {
        "query": Official(1, "string"),
        "domain": Official(3, "string"),
        "summary": Official(5, "string"),
    },
    # CORTEX CortexStepGrepSearchV2 (also search_path_uri 1, command_run 14, 16, 17)
    "CortexStepGrepSearchV2": {
        "pattern": Official(2, "string"),
        "path": Official(3, "string"),
        "glob": Official(4, "string"),
        "output_mode": Official(5, "string"),
        "lines_after": Official(6, "int32"),
        "lines_before": Official(7, "int32"),
        "lines_both": Official(8, "int32"),
        "case_insensitive": Official(10, "bool"),
        "type": Official(11, "string"),
        "head_limit": Official(12, "int32"),
        "multiline": Official(13, "bool"),
        "raw_output": Official(15, "string"),
    },
    # CORTEX CortexStepCommandStatus (stdout, stderr deprecated; exit_code in oneof _exit_code and
    # delta in oneof _delta, i.e. proto3 optional; also output_priority 7, deprecated)
    "CortexStepCommandStatus": {
        "command_id": Official(1, "string"),
        "status": Official(2, "CortexStepStatus"),
        "stdout": Official(3, "string"),
        "stderr": Official(4, "string"),
        "exit_code": Official(5, "int32", "optional"),
        "error": Official(6, "CortexErrorDetails"),
        "output_character_count": Official(8, "uint32"),
        "combined": Official(9, "string"),
        "wait_duration_seconds": Official(10, "uint32"),
        "waited_duration_seconds": Official(11, "uint32"),
        "delta": Official(12, "string", "optional"),
    },
    # CORTEX CortexStepErrorMessage (1 and 2 reserved)
    "CortexStepErrorMessage": {
        "error": Official(3, "CortexErrorDetails"),
        "should_show_model": Official(4, "bool"),
        "should_show_user": Official(5, "bool"),
    },
    # CORTEX CortexStepUserInput (also active_user_state 4, a ContextModuleResult)
    "CortexStepUserInput": {
        "query": Official(1, "string"),
        "user_response": Official(2, "string"),
        "items": Official(3, "TextOrScopeItem", "repeated"),
        "images": Official(5, "ImageData", "repeated"),
    },
    # CORTEX CortexTrajectoryStep: type, status and error outside the oneof; the bodies in oneof
    # step (also metadata 5, subtrajectory 6, 33, 51, requested_interaction 56, 69, 85, 86, 109,
    # and some 75 other bodies)
    "CortexTrajectoryStep": {
        "type": Official(1, "CortexStepType"),
        "status": Official(4, "CortexStepStatus"),
        "error": Official(31, "CortexErrorDetails"),
        "grep_search": Official(13, "CortexStepGrepSearch", oneof="step"),
        "view_file": Official(14, "CortexStepViewFile", oneof="step"),
        "list_directory": Official(15, "CortexStepListDirectory", oneof="step"),
        "user_input": Official(19, "CortexStepUserInput", oneof="step"),
        "write_to_file": Official(23, "CortexStepWriteToFile", oneof="step"),  # deprecated
        "error_message": Official(24, "CortexStepErrorMessage", oneof="step"),
        "run_command": Official(28, "CortexStepRunCommand", oneof="step"),
        "propose_code": Official(32, "CortexStepProposeCode", oneof="step"),
        "find": Official(34, "CortexStepFind", oneof="step"),
        "command_status": Official(37, "CortexStepCommandStatus", oneof="step"),
        "read_url_content": Official(40, "CortexStepReadUrlContent", oneof="step"),
        "search_web": Official(42, "CortexStepSearchWeb", oneof="step"),
        "grep_search_v2": Official(105, "CortexStepGrepSearchV2", oneof="step"),
    },
    # COMMON TextOrScopeItem (text is in oneof chunk, with item 2)
    "TextOrScopeItem": {"text": Official(1, "string", oneof="chunk")},
    # Messages we declare without fields: nothing to compare.
    "Metadata": {},  # COMMON; see OFFICIAL_METADATA_SECRETS
    "CascadeConfig": {},
    "ImageData": {},
    # LS SendUserCascadeMessageRequest (also experiment_config 4, deprecated; recipe_ids 7; blocking 8)
    "SendUserCascadeMessageRequest": {
        "cascade_id": Official(1, "string"),
        "items": Official(2, "TextOrScopeItem", "repeated"),
        "metadata": Official(3, "Metadata"),
        "cascade_config": Official(5, "CascadeConfig"),
        "images": Official(6, "ImageData", "repeated"),
        "additional_steps": Official(9, "CortexTrajectoryStep", "repeated"),
    },
    "SendUserCascadeMessageResponse": {},  # LS: empty
    # CORTEX CascadeRunCommandInteraction (confirm is deprecated)
    "CascadeRunCommandInteraction": {
        "confirm": Official(1, "bool"),
        "proposed_command_line": Official(2, "string"),
        "submitted_command_line": Official(3, "string"),
        "action": Official(4, "RunCommandAction"),
    },
    # CORTEX CascadeReadUrlContentInteraction
    "CascadeReadUrlContentInteraction": {
        "action": Official(1, "ReadUrlContentAction"),
        "url": Official(2, "string"),
        "origin": Official(3, "string"),
    },
    # CORTEX CascadeUserInteraction (oneof interaction also: deploy 4, run_extension_code 7,
    # resolve_task 12, upsert_codemap 14, ask_user_question 16; 3, 6, 8-11, 13 reserved)
    "CascadeUserInteraction": {
        "trajectory_id": Official(1, "string"),
        "step_index": Official(2, "uint32"),
        "run_command": Official(5, "CascadeRunCommandInteraction", oneof="interaction"),
        "read_url_content": Official(15, "CascadeReadUrlContentInteraction", oneof="interaction"),
    },
    # LS HandleCascadeUserInteractionRequest
    "HandleCascadeUserInteractionRequest": {
        "cascade_id": Official(1, "string"),
        "interaction": Official(2, "CascadeUserInteraction"),
    },
    "HandleCascadeUserInteractionResponse": {},  # LS: empty
    # LS ReplayGroundTruthTrajectoryRequest
    "ReplayGroundTruthTrajectoryRequest": {
        "metadata": Official(1, "Metadata"),
        "replay_steps": Official(2, "CortexTrajectoryStep", "repeated"),
        "cascade_id": Official(3, "string"),
        "cascade_config": Official(4, "CascadeConfig"),
    },
    "ReplayGroundTruthTrajectoryResponse": {},  # LS: trajectory 1 (CortexTrajectory), not modelled
}

# Official oneofs around a single field we model, which we declare as a plain field.
ONEOF_NOT_MODELLED = {
    "TextOrScopeItem.text": "chunk",
    "ActionSpec.command": "spec",
    "ActionSpecCommand.file": "target",
}

# COMMON, message Metadata: the credentials the records redact (request field 3).
OFFICIAL_METADATA_SECRETS = {"api_key": 3, "user_jwt": 21}

# ---- enums: every official value --------------------------------------------------------

# CORTEX, enum CortexStepType: name (without CORTEX_STEP_TYPE_) -> (number, the field of the body
# it names in CortexTrajectoryStep's oneof step; None: no body). A type names the body whose
# name is its own in lower case, but INFORM names inform_planner.
OFFICIAL_STEP_TYPE: dict[str, tuple[int, int | None]] = {
    "UNSPECIFIED": (0, None),
    "DUMMY": (1, 7),
    "FINISH": (2, 12),
    "PLAN_INPUT": (3, 8),
    "MQUERY": (4, 9),
    "CODE_ACTION": (5, 10),
    "GIT_COMMIT": (6, 11),
    "GREP_SEARCH": (7, 13),
    "VIEW_FILE": (8, 14),
    "LIST_DIRECTORY": (9, 15),
    "COMPILE": (10, 16),
    "INFORM": (11, 17),
    "FILE_BREAKDOWN": (12, 21),
    "VIEW_CODE_ITEM": (13, 22),
    "USER_INPUT": (14, 19),
    "PLANNER_RESPONSE": (15, 20),
    "WRITE_TO_FILE": (16, 23),
    "ERROR_MESSAGE": (17, 24),
    "CLUSTER_QUERY": (18, 25),
    "LIST_CLUSTERS": (19, 26),
    "INSPECT_CLUSTER": (20, 27),
    "RUN_COMMAND": (21, 28),
    "RELATED_FILES": (22, 29),
    "CHECKPOINT": (23, 30),
    "PROPOSE_CODE": (24, 32),
    "FIND": (25, 34),
    "SEARCH_KNOWLEDGE_BASE": (26, 35),
    "SUGGESTED_RESPONSES": (27, 36),
    "COMMAND_STATUS": (28, 37),
    "MEMORY": (29, 38),
    "LOOKUP_KNOWLEDGE_BASE": (30, 39),
    "READ_URL_CONTENT": (31, 40),
    "VIEW_CONTENT_CHUNK": (32, 41),
    "SEARCH_WEB": (33, 42),
    "RETRIEVE_MEMORY": (34, 43),
    "AUTO_CASCADE_BROADCAST": (35, 44),
    "CUSTOM_TOOL": (36, 45),
    "CREATE_RECIPE": (37, 46),
    "MCP_TOOL": (38, 47),
    "MANAGER_FEEDBACK": (39, 48),
    "TOOL_CALL_PROPOSAL": (40, 49),
    "TOOL_CALL_CHOICE": (41, 50),
    "TRAJECTORY_CHOICE": (42, 52),
    "PROXY_WEB_SERVER": (43, 53),
    "DEPLOY_WEB_APP": (44, 54),
    "CLIPBOARD": (45, 55),
    "READ_DEPLOYMENT_CONFIG": (46, 57),
    "VIEW_FILE_OUTLINE": (47, 58),
    "CHECK_DEPLOY_STATUS": (48, 59),
    "POST_PR_REVIEW": (49, 60),
    "READ_KNOWLEDGE_BASE_ITEM": (50, 61),
    "LIST_RESOURCES": (51, 62),
    "READ_RESOURCE": (52, 63),
    "LINT_DIFF": (53, 64),
    "FIND_ALL_REFERENCES": (54, 65),
    "BRAIN_UPDATE": (55, 66),
    "RUN_EXTENSION_CODE": (57, 68),
    "ADD_ANNOTATION": (58, 70),
    "PROPOSAL_FEEDBACK": (59, 71),
    "TRAJECTORY_SEARCH": (60, 72),
    "READ_TERMINAL": (65, 77),
    "GET_DOM_TREE": (68, None),
    "ARTIFACT_SUMMARY": (71, 83),
    "RESOLVE_TASK": (72, 84),
    "TODO_LIST": (73, 87),
    "BLOCKING": (74, 88),
    "EXPLORE_RESPONSE": (80, 94),
    "READ_NOTEBOOK": (82, 96),
    "EDIT_NOTEBOOK": (83, 97),
    "SUPERCOMPLETE_ACTIVE_DOC": (86, 100),
    "FIND_CODE_CONTEXT": (87, 101),
    "SUPERCOMPLETE_FEEDBACK": (89, 103),
    "LINT_FIX_MESSAGE": (90, 104),
    "GREP_SEARCH_V2": (91, 105),
    "UPSERT_CODEMAP": (92, 106),
    "SUGGEST_CODEMAP": (93, 107),
    "SMART_FRIEND": (94, 108),
    "DO_TESTING": (95, None),
    "REPORT_BUGS": (97, 112),
    "EXIT_PLAN_MODE": (99, 114),
    "ASK_USER_QUESTION": (100, 115),
    "SKILL": (101, 116),
    "SUPERCOMPLETE_EPHEMERAL_FEEDBACK": (102, 117),
    "ARENA_TRAJECTORY_CONVERGE": (103, 118),
}

# CORTEX, enum CortexStepStatus
OFFICIAL_STEP_STATUS = {
    "UNSPECIFIED": 0,
    "PENDING": 1,
    "RUNNING": 2,
    "DONE": 3,
    "INVALID": 4,
    "CLEARED": 5,
    "CANCELED": 6,
    "ERROR": 7,
    "GENERATING": 8,
    "WAITING": 9,
    "HALTED": 10,
    "SKIPPING": 11,
}

# CORTEX, enums RunCommandAction and ReadUrlContentAction
OFFICIAL_RUN_COMMAND_ACTION = {"UNSPECIFIED": 0, "CONFIRM": 1, "REJECT": 2, "SKIP": 3}
OFFICIAL_READ_URL_CONTENT_ACTION = {"UNSPECIFIED": 0, "ALLOW_ONCE": 1, "REJECT": 2, "ALWAYS_ALLOW_ORIGIN": 3}

OFFICIAL_ENUMS: dict[str, tuple[str, dict[str, int]]] = {
    "CortexStepType": ("CORTEX_STEP_TYPE_", {n: v for n, (v, _) in OFFICIAL_STEP_TYPE.items()}),
    "CortexStepStatus": ("CORTEX_STEP_STATUS_", OFFICIAL_STEP_STATUS),
    "RunCommandAction": ("RUN_COMMAND_ACTION_", OFFICIAL_RUN_COMMAND_ACTION),
    "ReadUrlContentAction": ("READ_URL_CONTENT_ACTION_", OFFICIAL_READ_URL_CONTENT_ACTION),
}

# LS, service LanguageServerService: the rpcs we declare, with their request and response
# (SendUserCascadeMessage first: mitmproxy's views fall back to the first method).
OFFICIAL_RPCS = [
    ("SendUserCascadeMessage", "SendUserCascadeMessageRequest", "SendUserCascadeMessageResponse"),
    ("HandleCascadeUserInteraction", "HandleCascadeUserInteractionRequest", "HandleCascadeUserInteractionResponse"),
    ("ReplayGroundTruthTrajectory", "ReplayGroundTruthTrajectoryRequest", "ReplayGroundTruthTrajectoryResponse"),
]


# ---- helpers -------------------------------------------------------------------------

_SCALAR = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_BYTES: "bytes",
}


def _ours(f: FieldDescriptor) -> Official:
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        type_ = f.message_type.name
    elif f.type == FieldDescriptor.TYPE_ENUM:
        type_ = f.enum_type.name
    else:
        type_ = _SCALAR[f.type]
    oneof = f.containing_oneof
    synthetic = oneof is not None and oneof.name == f"_{f.name}" and len(oneof.fields) == 1
    if f.is_repeated:
        label = "repeated"
    elif synthetic:
        label = "optional"
    else:
        label = ""
    return Official(f.number, type_, label, oneof.name if oneof is not None and not synthetic else "")


def _messages() -> dict[str, Descriptor]:
    return dict(cortex_pb2.DESCRIPTOR.message_types_by_name)


def _enums() -> dict[str, EnumDescriptor]:
    return dict(cortex_pb2.DESCRIPTOR.enum_types_by_name)


def _differences() -> dict[str, str]:
    found = {}
    for name, desc in _messages().items():
        table = OFFICIAL_FIELDS.get(name)
        if table is None:
            found[name] = "a message missing from this file's OFFICIAL_FIELDS table: transcribe it"
            continue
        for f in desc.fields:
            key = f"{name}.{f.name}"
            official = table.get(f.name)
            if official is None:
                found[key] = "missing from this file's OFFICIAL_FIELDS table (or not official): transcribe it"
                continue
            ours = _ours(f)
            if key in ONEOF_NOT_MODELLED and ours.oneof == "":
                ours = Official(ours.number, ours.type, ours.label, ONEOF_NOT_MODELLED[key])
            if official != ours:
                found[key] = f"ours {ours}, official {official}"
        for extra in set(table) - {f.name for f in desc.fields}:
            found[f"{name}.{extra}"] = "in the table but not in proto/cortex.proto"
    return found


# ---- (1) messages and fields ---------------------------------------------------------


def test_every_message_and_enum_we_declare_is_in_the_tables() -> None:
    assert set(_messages()) == set(OFFICIAL_FIELDS)
    assert set(_messages()) | set(_enums()) == set(OFFICIAL_FILE)
    assert set(_enums()) == set(OFFICIAL_ENUMS)


def test_every_field_is_the_official_one() -> None:
    found = _differences()
    listing = "\n".join(f"  {k}: {v}" for k, v in sorted(found.items()))
    assert not found, f"proto/cortex.proto differs from the official schema:\n{listing}"


def test_the_oneof_wrappers_left_out_hold_one_field_each() -> None:
    for key in ONEOF_NOT_MODELLED:
        message, name = key.split(".")
        assert _messages()[message].fields_by_name[name].containing_oneof is None


def test_step_bodies_are_the_official_oneof_members() -> None:
    oneof = cortex_pb2.CortexTrajectoryStep.DESCRIPTOR.oneofs_by_name["step"]
    step = OFFICIAL_FIELDS["CortexTrajectoryStep"]
    assert {f.name: f.number for f in oneof.fields} == {n: o.number for n, o in step.items() if o.oneof == "step"}


def test_exit_codes_are_proto3_optional() -> None:
    """Absent is not 0: both exit codes keep presence, as officially (oneof _exit_code)."""
    for message in (cortex_pb2.CortexStepRunCommand, cortex_pb2.CortexStepCommandStatus):
        assert message.DESCRIPTOR.fields_by_name["exit_code"].has_presence
    assert cortex_pb2.CortexStepCommandStatus(exit_code=0).SerializeToString() == b"\x28\x00"
    assert cortex_pb2.CortexStepCommandStatus().SerializeToString() == b""


def test_redacted_metadata_fields_are_the_official_credentials() -> None:
    assert set(OFFICIAL_METADATA_SECRETS.values()) == SECRET_METADATA_FIELDS


def test_rpcs_are_the_official_ones() -> None:
    # LS: package exa.language_server_pb; ours is package cortex, so only the service, method and
    # message names are compared (the views fall back by method).
    (service,) = cortex_pb2.DESCRIPTOR.services_by_name.values()
    assert service.name == "LanguageServerService"
    assert [(m.name, m.input_type.name, m.output_type.name) for m in service.methods] == OFFICIAL_RPCS


# ---- (2) enums -------------------------------------------------------------------------


@pytest.mark.parametrize("enum", sorted(OFFICIAL_ENUMS))
def test_every_enum_has_every_official_value(enum: str) -> None:
    prefix, official = OFFICIAL_ENUMS[enum]
    ours = {v.name: v.number for v in _enums()[enum].values}
    assert ours == {prefix + name: number for name, number in official.items()}


def test_each_body_has_the_official_type_that_names_it() -> None:
    """cascade/steps.py OFFICIAL_TYPE (what the planner hop writes) is the official table."""
    modelled = {f.number for f in cortex_pb2.CortexTrajectoryStep.DESCRIPTOR.oneofs_by_name["step"].fields}
    expected = {body: number for number, body in OFFICIAL_STEP_TYPE.values() if body in modelled}
    assert dict(wire_steps.OFFICIAL_TYPE) == expected
    assert wire_steps.OFFICIAL_TYPE[28] == 21  # run_command is RUN_COMMAND 21; 28 is COMMAND_STATUS
    assert wire_steps.OFFICIAL_TYPE[37] == 28  # command_status
    assert wire_steps.OFFICIAL_TYPE[14] == 8  # view_file


def test_step_type_json_names_and_numbers_agree() -> None:
    """proto3 JSON carries the name and binary the number: both now mean the official kind."""
    step = cortex_pb2.CortexTrajectoryStep(type=cortex_pb2.CORTEX_STEP_TYPE_RUN_COMMAND)
    step.run_command.command_line = "true"
    assert json_format.MessageToDict(step)["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND"
    assert step.SerializeToString().startswith(varint_field(1, 21))


def test_planner_hop_tells_the_kind_by_the_body() -> None:
    for type_ in (21, 28, 8):
        raw = varint_field(1, type_) + varint_field(4, 3) + len_field(28, len_field(23, b"true"))
        v = wire_steps.view(raw)
        assert (v.kind, v.type) == ("run_command", type_)


# ---- (3) read_url_content's result --------------------------------------------------------


def test_planner_hop_sees_a_read_url_content_result_in_web_document() -> None:
    """The official result field is web_document (2), where the known gateway puts a WebFetch
    result: such a step is observed, and its text is the document's text."""
    assert wire_steps.RESULT_FIELDS["read_url_content"] == (2,)
    document = len_field(2, b"page text") + len_field(3, b"https://example.com")  # text 2, url 3
    body = len_field(1, b"https://example.com") + len_field(2, document)
    step = varint_field(1, 31) + varint_field(4, 3) + len_field(40, body)
    fixed = correct([step])
    assert fixed.steps == [step] and not fixed.changes
    assert wire_steps.result_text(wire_steps.view(step)) == "page text"


# ---- (4) the known gateway's captures ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content_type", "headers"),
    [
        ("grpc-turn1.bin", "application/grpc", {}),
        ("grpc-turn2-resumed.bin", "application/grpc", {}),
        ("connect-turn1.bin", "application/connect+proto", {"connect-accept-encoding": "gzip"}),
    ],
)
def test_the_known_gateway_types_its_steps_by_the_body_number(name: str, content_type: str, headers: dict) -> None:
    """dwgx/WindsurfAPI 3.9.27 writes the oneof number as the type (run_command 28, officially
    COMMAND_STATUS): a type that names another kind than its body (tests/cascade: the planner hop
    gives such a step its body's type)."""
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"gateway fixture {path} is absent (it lives in ../shared/fixtures)")
    payload = unframe(path.read_bytes(), content_type, headers, 1 << 24).payload
    views = [wire_steps.view(s) for s in parse_request(payload).steps]
    assert views
    assert [(v.type, v.body_field) for v in views] == [(v.body_field, v.body_field) for v in views]
    assert {v.kind for v in views} >= {"run_command", "view_file", "grep_search_v2"}
    assert all(v.type != wire_steps.OFFICIAL_TYPE[v.body_field] for v in views if v.body_field)
