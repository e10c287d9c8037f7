from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CortexStepType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_STEP_TYPE_UNSPECIFIED: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_DUMMY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FINISH: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PLAN_INPUT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_MQUERY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CODE_ACTION: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GIT_COMMIT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GREP_SEARCH: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_VIEW_FILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LIST_DIRECTORY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_COMPILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_INFORM: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FILE_BREAKDOWN: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_VIEW_CODE_ITEM: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_USER_INPUT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PLANNER_RESPONSE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_WRITE_TO_FILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_ERROR_MESSAGE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CLUSTER_QUERY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LIST_CLUSTERS: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_INSPECT_CLUSTER: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RUN_COMMAND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RELATED_FILES: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CHECKPOINT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PROPOSE_CODE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FIND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SEARCH_KNOWLEDGE_BASE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SUGGESTED_RESPONSES: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_COMMAND_STATUS: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_MEMORY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LOOKUP_KNOWLEDGE_BASE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_URL_CONTENT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_VIEW_CONTENT_CHUNK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SEARCH_WEB: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RETRIEVE_MEMORY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_AUTO_CASCADE_BROADCAST: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CUSTOM_TOOL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CREATE_RECIPE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_MCP_TOOL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_MANAGER_FEEDBACK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TOOL_CALL_CHOICE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TRAJECTORY_CHOICE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PROXY_WEB_SERVER: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_DEPLOY_WEB_APP: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CLIPBOARD: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_DEPLOYMENT_CONFIG: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_VIEW_FILE_OUTLINE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_CHECK_DEPLOY_STATUS: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_POST_PR_REVIEW: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_KNOWLEDGE_BASE_ITEM: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LIST_RESOURCES: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_RESOURCE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LINT_DIFF: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FIND_ALL_REFERENCES: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_BRAIN_UPDATE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RUN_EXTENSION_CODE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_ADD_ANNOTATION: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PROPOSAL_FEEDBACK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TRAJECTORY_SEARCH: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_TERMINAL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GET_DOM_TREE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_ARTIFACT_SUMMARY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RESOLVE_TASK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_TODO_LIST: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_BLOCKING: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_EXPLORE_RESPONSE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_NOTEBOOK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_EDIT_NOTEBOOK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SUPERCOMPLETE_ACTIVE_DOC: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FIND_CODE_CONTEXT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SUPERCOMPLETE_FEEDBACK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LINT_FIX_MESSAGE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GREP_SEARCH_V2: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_UPSERT_CODEMAP: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SUGGEST_CODEMAP: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SMART_FRIEND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_DO_TESTING: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_REPORT_BUGS: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_EXIT_PLAN_MODE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_ASK_USER_QUESTION: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SKILL: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SUPERCOMPLETE_EPHEMERAL_FEEDBACK: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_ARENA_TRAJECTORY_CONVERGE: _ClassVar[CortexStepType]

class CortexStepStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_STEP_STATUS_UNSPECIFIED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_PENDING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_RUNNING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_DONE: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_INVALID: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_CLEARED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_CANCELED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_ERROR: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_GENERATING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_WAITING: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_HALTED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_SKIPPING: _ClassVar[CortexStepStatus]

class RunCommandAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_COMMAND_ACTION_UNSPECIFIED: _ClassVar[RunCommandAction]
    RUN_COMMAND_ACTION_CONFIRM: _ClassVar[RunCommandAction]
    RUN_COMMAND_ACTION_REJECT: _ClassVar[RunCommandAction]
    RUN_COMMAND_ACTION_SKIP: _ClassVar[RunCommandAction]

class ReadUrlContentAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    READ_URL_CONTENT_ACTION_UNSPECIFIED: _ClassVar[ReadUrlContentAction]
    READ_URL_CONTENT_ACTION_ALLOW_ONCE: _ClassVar[ReadUrlContentAction]
    READ_URL_CONTENT_ACTION_REJECT: _ClassVar[ReadUrlContentAction]
    READ_URL_CONTENT_ACTION_ALWAYS_ALLOW_ORIGIN: _ClassVar[ReadUrlContentAction]
CORTEX_STEP_TYPE_UNSPECIFIED: CortexStepType
CORTEX_STEP_TYPE_DUMMY: CortexStepType
CORTEX_STEP_TYPE_FINISH: CortexStepType
CORTEX_STEP_TYPE_PLAN_INPUT: CortexStepType
CORTEX_STEP_TYPE_MQUERY: CortexStepType
CORTEX_STEP_TYPE_CODE_ACTION: CortexStepType
CORTEX_STEP_TYPE_GIT_COMMIT: CortexStepType
CORTEX_STEP_TYPE_GREP_SEARCH: CortexStepType
CORTEX_STEP_TYPE_VIEW_FILE: CortexStepType
CORTEX_STEP_TYPE_LIST_DIRECTORY: CortexStepType
CORTEX_STEP_TYPE_COMPILE: CortexStepType
CORTEX_STEP_TYPE_INFORM: CortexStepType
CORTEX_STEP_TYPE_FILE_BREAKDOWN: CortexStepType
CORTEX_STEP_TYPE_VIEW_CODE_ITEM: CortexStepType
CORTEX_STEP_TYPE_USER_INPUT: CortexStepType
CORTEX_STEP_TYPE_PLANNER_RESPONSE: CortexStepType
CORTEX_STEP_TYPE_WRITE_TO_FILE: CortexStepType
CORTEX_STEP_TYPE_ERROR_MESSAGE: CortexStepType
CORTEX_STEP_TYPE_CLUSTER_QUERY: CortexStepType
CORTEX_STEP_TYPE_LIST_CLUSTERS: CortexStepType
CORTEX_STEP_TYPE_INSPECT_CLUSTER: CortexStepType
CORTEX_STEP_TYPE_RUN_COMMAND: CortexStepType
CORTEX_STEP_TYPE_RELATED_FILES: CortexStepType
CORTEX_STEP_TYPE_CHECKPOINT: CortexStepType
CORTEX_STEP_TYPE_PROPOSE_CODE: CortexStepType
CORTEX_STEP_TYPE_FIND: CortexStepType
CORTEX_STEP_TYPE_SEARCH_KNOWLEDGE_BASE: CortexStepType
CORTEX_STEP_TYPE_SUGGESTED_RESPONSES: CortexStepType
CORTEX_STEP_TYPE_COMMAND_STATUS: CortexStepType
CORTEX_STEP_TYPE_MEMORY: CortexStepType
CORTEX_STEP_TYPE_LOOKUP_KNOWLEDGE_BASE: CortexStepType
CORTEX_STEP_TYPE_READ_URL_CONTENT: CortexStepType
CORTEX_STEP_TYPE_VIEW_CONTENT_CHUNK: CortexStepType
CORTEX_STEP_TYPE_SEARCH_WEB: CortexStepType
CORTEX_STEP_TYPE_RETRIEVE_MEMORY: CortexStepType
CORTEX_STEP_TYPE_AUTO_CASCADE_BROADCAST: CortexStepType
CORTEX_STEP_TYPE_CUSTOM_TOOL: CortexStepType
CORTEX_STEP_TYPE_CREATE_RECIPE: CortexStepType
CORTEX_STEP_TYPE_MCP_TOOL: CortexStepType
CORTEX_STEP_TYPE_MANAGER_FEEDBACK: CortexStepType
CORTEX_STEP_TYPE_TOOL_CALL_PROPOSAL: CortexStepType
CORTEX_STEP_TYPE_TOOL_CALL_CHOICE: CortexStepType
CORTEX_STEP_TYPE_TRAJECTORY_CHOICE: CortexStepType
CORTEX_STEP_TYPE_PROXY_WEB_SERVER: CortexStepType
CORTEX_STEP_TYPE_DEPLOY_WEB_APP: CortexStepType
CORTEX_STEP_TYPE_CLIPBOARD: CortexStepType
CORTEX_STEP_TYPE_READ_DEPLOYMENT_CONFIG: CortexStepType
CORTEX_STEP_TYPE_VIEW_FILE_OUTLINE: CortexStepType
CORTEX_STEP_TYPE_CHECK_DEPLOY_STATUS: CortexStepType
CORTEX_STEP_TYPE_POST_PR_REVIEW: CortexStepType
CORTEX_STEP_TYPE_READ_KNOWLEDGE_BASE_ITEM: CortexStepType
CORTEX_STEP_TYPE_LIST_RESOURCES: CortexStepType
CORTEX_STEP_TYPE_READ_RESOURCE: CortexStepType
CORTEX_STEP_TYPE_LINT_DIFF: CortexStepType
CORTEX_STEP_TYPE_FIND_ALL_REFERENCES: CortexStepType
CORTEX_STEP_TYPE_BRAIN_UPDATE: CortexStepType
CORTEX_STEP_TYPE_RUN_EXTENSION_CODE: CortexStepType
CORTEX_STEP_TYPE_ADD_ANNOTATION: CortexStepType
CORTEX_STEP_TYPE_PROPOSAL_FEEDBACK: CortexStepType
CORTEX_STEP_TYPE_TRAJECTORY_SEARCH: CortexStepType
CORTEX_STEP_TYPE_READ_TERMINAL: CortexStepType
CORTEX_STEP_TYPE_GET_DOM_TREE: CortexStepType
CORTEX_STEP_TYPE_ARTIFACT_SUMMARY: CortexStepType
CORTEX_STEP_TYPE_RESOLVE_TASK: CortexStepType
CORTEX_STEP_TYPE_TODO_LIST: CortexStepType
CORTEX_STEP_TYPE_BLOCKING: CortexStepType
CORTEX_STEP_TYPE_EXPLORE_RESPONSE: CortexStepType
CORTEX_STEP_TYPE_READ_NOTEBOOK: CortexStepType
CORTEX_STEP_TYPE_EDIT_NOTEBOOK: CortexStepType
CORTEX_STEP_TYPE_SUPERCOMPLETE_ACTIVE_DOC: CortexStepType
CORTEX_STEP_TYPE_FIND_CODE_CONTEXT: CortexStepType
CORTEX_STEP_TYPE_SUPERCOMPLETE_FEEDBACK: CortexStepType
CORTEX_STEP_TYPE_LINT_FIX_MESSAGE: CortexStepType
CORTEX_STEP_TYPE_GREP_SEARCH_V2: CortexStepType
CORTEX_STEP_TYPE_UPSERT_CODEMAP: CortexStepType
CORTEX_STEP_TYPE_SUGGEST_CODEMAP: CortexStepType
CORTEX_STEP_TYPE_SMART_FRIEND: CortexStepType
CORTEX_STEP_TYPE_DO_TESTING: CortexStepType
CORTEX_STEP_TYPE_REPORT_BUGS: CortexStepType
CORTEX_STEP_TYPE_EXIT_PLAN_MODE: CortexStepType
CORTEX_STEP_TYPE_ASK_USER_QUESTION: CortexStepType
CORTEX_STEP_TYPE_SKILL: CortexStepType
CORTEX_STEP_TYPE_SUPERCOMPLETE_EPHEMERAL_FEEDBACK: CortexStepType
CORTEX_STEP_TYPE_ARENA_TRAJECTORY_CONVERGE: CortexStepType
CORTEX_STEP_STATUS_UNSPECIFIED: CortexStepStatus
CORTEX_STEP_STATUS_PENDING: CortexStepStatus
CORTEX_STEP_STATUS_RUNNING: CortexStepStatus
CORTEX_STEP_STATUS_DONE: CortexStepStatus
CORTEX_STEP_STATUS_INVALID: CortexStepStatus
CORTEX_STEP_STATUS_CLEARED: CortexStepStatus
CORTEX_STEP_STATUS_CANCELED: CortexStepStatus
CORTEX_STEP_STATUS_ERROR: CortexStepStatus
CORTEX_STEP_STATUS_GENERATING: CortexStepStatus
CORTEX_STEP_STATUS_WAITING: CortexStepStatus
CORTEX_STEP_STATUS_HALTED: CortexStepStatus
CORTEX_STEP_STATUS_SKIPPING: CortexStepStatus
RUN_COMMAND_ACTION_UNSPECIFIED: RunCommandAction
RUN_COMMAND_ACTION_CONFIRM: RunCommandAction
RUN_COMMAND_ACTION_REJECT: RunCommandAction
RUN_COMMAND_ACTION_SKIP: RunCommandAction
READ_URL_CONTENT_ACTION_UNSPECIFIED: ReadUrlContentAction
READ_URL_CONTENT_ACTION_ALLOW_ONCE: ReadUrlContentAction
READ_URL_CONTENT_ACTION_REJECT: ReadUrlContentAction
READ_URL_CONTENT_ACTION_ALWAYS_ALLOW_ORIGIN: ReadUrlContentAction

class CortexErrorDetails(_message.Message):
    __slots__ = ("user_error_message", "short_error", "full_error", "is_benign", "details", "error_id", "error_code")
    USER_ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SHORT_ERROR_FIELD_NUMBER: _ClassVar[int]
    FULL_ERROR_FIELD_NUMBER: _ClassVar[int]
    IS_BENIGN_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    ERROR_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    user_error_message: str
    short_error: str
    full_error: str
    is_benign: bool
    details: str
    error_id: str
    error_code: int
    def __init__(self, user_error_message: _Optional[str] = ..., short_error: _Optional[str] = ..., full_error: _Optional[str] = ..., is_benign: _Optional[bool] = ..., details: _Optional[str] = ..., error_id: _Optional[str] = ..., error_code: _Optional[int] = ...) -> None: ...

class CortexStepGrepSearch(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CortexStepViewFile(_message.Message):
    __slots__ = ("absolute_path_uri", "content", "offset", "limit")
    ABSOLUTE_PATH_URI_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    absolute_path_uri: str
    content: str
    offset: int
    limit: int
    def __init__(self, absolute_path_uri: _Optional[str] = ..., content: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class CortexStepListDirectory(_message.Message):
    __slots__ = ("directory_path_uri", "children")
    DIRECTORY_PATH_URI_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    directory_path_uri: str
    children: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, directory_path_uri: _Optional[str] = ..., children: _Optional[_Iterable[str]] = ...) -> None: ...

class CortexStepWriteToFile(_message.Message):
    __slots__ = ("target_file_uri", "code_content", "file_created")
    TARGET_FILE_URI_FIELD_NUMBER: _ClassVar[int]
    CODE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    FILE_CREATED_FIELD_NUMBER: _ClassVar[int]
    target_file_uri: str
    code_content: _containers.RepeatedScalarFieldContainer[str]
    file_created: bool
    def __init__(self, target_file_uri: _Optional[str] = ..., code_content: _Optional[_Iterable[str]] = ..., file_created: _Optional[bool] = ...) -> None: ...

class RunCommandOutput(_message.Message):
    __slots__ = ("full",)
    FULL_FIELD_NUMBER: _ClassVar[int]
    full: str
    def __init__(self, full: _Optional[str] = ...) -> None: ...

class CortexStepRunCommand(_message.Message):
    __slots__ = ("cwd", "stdout", "stderr", "exit_code", "blocking", "command_id", "combined_output", "command_line", "proposed_command_line", "shell_name")
    CWD_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    BLOCKING_FIELD_NUMBER: _ClassVar[int]
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    COMBINED_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    SHELL_NAME_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    stdout: str
    stderr: str
    exit_code: int
    blocking: bool
    command_id: str
    combined_output: RunCommandOutput
    command_line: str
    proposed_command_line: str
    shell_name: str
    def __init__(self, cwd: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., blocking: _Optional[bool] = ..., command_id: _Optional[str] = ..., combined_output: _Optional[_Union[RunCommandOutput, _Mapping]] = ..., command_line: _Optional[str] = ..., proposed_command_line: _Optional[str] = ..., shell_name: _Optional[str] = ...) -> None: ...

class PathScopeItem(_message.Message):
    __slots__ = ("absolute_uri",)
    ABSOLUTE_URI_FIELD_NUMBER: _ClassVar[int]
    absolute_uri: str
    def __init__(self, absolute_uri: _Optional[str] = ...) -> None: ...

class ReplacementChunk(_message.Message):
    __slots__ = ("target_content", "replacement_content", "allow_multiple")
    TARGET_CONTENT_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_CONTENT_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    target_content: str
    replacement_content: str
    allow_multiple: bool
    def __init__(self, target_content: _Optional[str] = ..., replacement_content: _Optional[str] = ..., allow_multiple: _Optional[bool] = ...) -> None: ...

class ActionSpecCommand(_message.Message):
    __slots__ = ("instruction", "is_edit", "file", "replacement_chunks")
    INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    IS_EDIT_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    instruction: str
    is_edit: bool
    file: PathScopeItem
    replacement_chunks: _containers.RepeatedCompositeFieldContainer[ReplacementChunk]
    def __init__(self, instruction: _Optional[str] = ..., is_edit: _Optional[bool] = ..., file: _Optional[_Union[PathScopeItem, _Mapping]] = ..., replacement_chunks: _Optional[_Iterable[_Union[ReplacementChunk, _Mapping]]] = ...) -> None: ...

class ActionSpec(_message.Message):
    __slots__ = ("command",)
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: ActionSpecCommand
    def __init__(self, command: _Optional[_Union[ActionSpecCommand, _Mapping]] = ...) -> None: ...

class CortexStepProposeCode(_message.Message):
    __slots__ = ("action_spec", "code_instruction")
    ACTION_SPEC_FIELD_NUMBER: _ClassVar[int]
    CODE_INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    action_spec: ActionSpec
    code_instruction: str
    def __init__(self, action_spec: _Optional[_Union[ActionSpec, _Mapping]] = ..., code_instruction: _Optional[str] = ...) -> None: ...

class CortexStepFind(_message.Message):
    __slots__ = ("pattern", "search_directory", "raw_output")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    SEARCH_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    search_directory: str
    raw_output: str
    def __init__(self, pattern: _Optional[str] = ..., search_directory: _Optional[str] = ..., raw_output: _Optional[str] = ...) -> None: ...

class KnowledgeBaseItem(_message.Message):
    __slots__ = ("document_id", "text", "url", "title", "summary")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    text: str
    url: str
    title: str
    summary: str
    def __init__(self, document_id: _Optional[str] = ..., text: _Optional[str] = ..., url: _Optional[str] = ..., title: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

class CortexStepReadUrlContent(_message.Message):
    __slots__ = ("url", "web_document", "resolved_url", "latency_ms", "user_rejected")
    URL_FIELD_NUMBER: _ClassVar[int]
    WEB_DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_URL_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    USER_REJECTED_FIELD_NUMBER: _ClassVar[int]
    url: str
    web_document: KnowledgeBaseItem
    resolved_url: str
    latency_ms: int
    user_rejected: bool
    def __init__(self, url: _Optional[str] = ..., web_document: _Optional[_Union[KnowledgeBaseItem, _Mapping]] = ..., resolved_url: _Optional[str] = ..., latency_ms: _Optional[int] = ..., user_rejected: _Optional[bool] = ...) -> None: ...

class CortexStepSearchWeb(_message.Message):
    __slots__ = ("query", "domain", "summary")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    query: str
    domain: str
    summary: str
    def __init__(self, query: _Optional[str] = ..., domain: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

class CortexStepGrepSearchV2(_message.Message):
    __slots__ = ("pattern", "path", "glob", "output_mode", "lines_after", "lines_before", "lines_both", "case_insensitive", "type", "head_limit", "multiline", "raw_output")
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    GLOB_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    LINES_AFTER_FIELD_NUMBER: _ClassVar[int]
    LINES_BEFORE_FIELD_NUMBER: _ClassVar[int]
    LINES_BOTH_FIELD_NUMBER: _ClassVar[int]
    CASE_INSENSITIVE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    HEAD_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MULTILINE_FIELD_NUMBER: _ClassVar[int]
    RAW_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    pattern: str
    path: str
    glob: str
    output_mode: str
    lines_after: int
    lines_before: int
    lines_both: int
    case_insensitive: bool
    type: str
    head_limit: int
    multiline: bool
    raw_output: str
    def __init__(self, pattern: _Optional[str] = ..., path: _Optional[str] = ..., glob: _Optional[str] = ..., output_mode: _Optional[str] = ..., lines_after: _Optional[int] = ..., lines_before: _Optional[int] = ..., lines_both: _Optional[int] = ..., case_insensitive: _Optional[bool] = ..., type: _Optional[str] = ..., head_limit: _Optional[int] = ..., multiline: _Optional[bool] = ..., raw_output: _Optional[str] = ...) -> None: ...

class CortexStepCommandStatus(_message.Message):
    __slots__ = ("command_id", "status", "stdout", "stderr", "exit_code", "error", "output_character_count", "combined", "wait_duration_seconds", "waited_duration_seconds", "delta")
    COMMAND_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_CHARACTER_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMBINED_FIELD_NUMBER: _ClassVar[int]
    WAIT_DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WAITED_DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    command_id: str
    status: CortexStepStatus
    stdout: str
    stderr: str
    exit_code: int
    error: CortexErrorDetails
    output_character_count: int
    combined: str
    wait_duration_seconds: int
    waited_duration_seconds: int
    delta: str
    def __init__(self, command_id: _Optional[str] = ..., status: _Optional[_Union[CortexStepStatus, str]] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., error: _Optional[_Union[CortexErrorDetails, _Mapping]] = ..., output_character_count: _Optional[int] = ..., combined: _Optional[str] = ..., wait_duration_seconds: _Optional[int] = ..., waited_duration_seconds: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class CortexStepErrorMessage(_message.Message):
    __slots__ = ("error", "should_show_model", "should_show_user")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHOW_MODEL_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHOW_USER_FIELD_NUMBER: _ClassVar[int]
    error: CortexErrorDetails
    should_show_model: bool
    should_show_user: bool
    def __init__(self, error: _Optional[_Union[CortexErrorDetails, _Mapping]] = ..., should_show_model: _Optional[bool] = ..., should_show_user: _Optional[bool] = ...) -> None: ...

class CortexStepUserInput(_message.Message):
    __slots__ = ("query", "user_response", "items", "images")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    USER_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    query: str
    user_response: str
    items: _containers.RepeatedCompositeFieldContainer[TextOrScopeItem]
    images: _containers.RepeatedCompositeFieldContainer[ImageData]
    def __init__(self, query: _Optional[str] = ..., user_response: _Optional[str] = ..., items: _Optional[_Iterable[_Union[TextOrScopeItem, _Mapping]]] = ..., images: _Optional[_Iterable[_Union[ImageData, _Mapping]]] = ...) -> None: ...

class CortexTrajectoryStep(_message.Message):
    __slots__ = ("type", "status", "error", "grep_search", "view_file", "list_directory", "user_input", "write_to_file", "error_message", "run_command", "propose_code", "find", "command_status", "read_url_content", "search_web", "grep_search_v2")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    GREP_SEARCH_FIELD_NUMBER: _ClassVar[int]
    VIEW_FILE_FIELD_NUMBER: _ClassVar[int]
    LIST_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    USER_INPUT_FIELD_NUMBER: _ClassVar[int]
    WRITE_TO_FILE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_COMMAND_FIELD_NUMBER: _ClassVar[int]
    PROPOSE_CODE_FIELD_NUMBER: _ClassVar[int]
    FIND_FIELD_NUMBER: _ClassVar[int]
    COMMAND_STATUS_FIELD_NUMBER: _ClassVar[int]
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_WEB_FIELD_NUMBER: _ClassVar[int]
    GREP_SEARCH_V2_FIELD_NUMBER: _ClassVar[int]
    type: CortexStepType
    status: CortexStepStatus
    error: CortexErrorDetails
    grep_search: CortexStepGrepSearch
    view_file: CortexStepViewFile
    list_directory: CortexStepListDirectory
    user_input: CortexStepUserInput
    write_to_file: CortexStepWriteToFile
    error_message: CortexStepErrorMessage
    run_command: CortexStepRunCommand
    propose_code: CortexStepProposeCode
    find: CortexStepFind
    command_status: CortexStepCommandStatus
    read_url_content: CortexStepReadUrlContent
    search_web: CortexStepSearchWeb
    grep_search_v2: CortexStepGrepSearchV2
    def __init__(self, type: _Optional[_Union[CortexStepType, str]] = ..., status: _Optional[_Union[CortexStepStatus, str]] = ..., error: _Optional[_Union[CortexErrorDetails, _Mapping]] = ..., grep_search: _Optional[_Union[CortexStepGrepSearch, _Mapping]] = ..., view_file: _Optional[_Union[CortexStepViewFile, _Mapping]] = ..., list_directory: _Optional[_Union[CortexStepListDirectory, _Mapping]] = ..., user_input: _Optional[_Union[CortexStepUserInput, _Mapping]] = ..., write_to_file: _Optional[_Union[CortexStepWriteToFile, _Mapping]] = ..., error_message: _Optional[_Union[CortexStepErrorMessage, _Mapping]] = ..., run_command: _Optional[_Union[CortexStepRunCommand, _Mapping]] = ..., propose_code: _Optional[_Union[CortexStepProposeCode, _Mapping]] = ..., find: _Optional[_Union[CortexStepFind, _Mapping]] = ..., command_status: _Optional[_Union[CortexStepCommandStatus, _Mapping]] = ..., read_url_content: _Optional[_Union[CortexStepReadUrlContent, _Mapping]] = ..., search_web: _Optional[_Union[CortexStepSearchWeb, _Mapping]] = ..., grep_search_v2: _Optional[_Union[CortexStepGrepSearchV2, _Mapping]] = ...) -> None: ...

class TextOrScopeItem(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class Metadata(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CascadeConfig(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ImageData(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SendUserCascadeMessageRequest(_message.Message):
    __slots__ = ("cascade_id", "items", "metadata", "cascade_config", "images", "additional_steps")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CASCADE_CONFIG_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    items: _containers.RepeatedCompositeFieldContainer[TextOrScopeItem]
    metadata: Metadata
    cascade_config: CascadeConfig
    images: _containers.RepeatedCompositeFieldContainer[ImageData]
    additional_steps: _containers.RepeatedCompositeFieldContainer[CortexTrajectoryStep]
    def __init__(self, cascade_id: _Optional[str] = ..., items: _Optional[_Iterable[_Union[TextOrScopeItem, _Mapping]]] = ..., metadata: _Optional[_Union[Metadata, _Mapping]] = ..., cascade_config: _Optional[_Union[CascadeConfig, _Mapping]] = ..., images: _Optional[_Iterable[_Union[ImageData, _Mapping]]] = ..., additional_steps: _Optional[_Iterable[_Union[CortexTrajectoryStep, _Mapping]]] = ...) -> None: ...

class SendUserCascadeMessageResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CascadeRunCommandInteraction(_message.Message):
    __slots__ = ("confirm", "proposed_command_line", "submitted_command_line", "action")
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    confirm: bool
    proposed_command_line: str
    submitted_command_line: str
    action: RunCommandAction
    def __init__(self, confirm: _Optional[bool] = ..., proposed_command_line: _Optional[str] = ..., submitted_command_line: _Optional[str] = ..., action: _Optional[_Union[RunCommandAction, str]] = ...) -> None: ...

class CascadeReadUrlContentInteraction(_message.Message):
    __slots__ = ("action", "url", "origin")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    action: ReadUrlContentAction
    url: str
    origin: str
    def __init__(self, action: _Optional[_Union[ReadUrlContentAction, str]] = ..., url: _Optional[str] = ..., origin: _Optional[str] = ...) -> None: ...

class CascadeUserInteraction(_message.Message):
    __slots__ = ("trajectory_id", "step_index", "run_command", "read_url_content")
    TRAJECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_INDEX_FIELD_NUMBER: _ClassVar[int]
    RUN_COMMAND_FIELD_NUMBER: _ClassVar[int]
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    trajectory_id: str
    step_index: int
    run_command: CascadeRunCommandInteraction
    read_url_content: CascadeReadUrlContentInteraction
    def __init__(self, trajectory_id: _Optional[str] = ..., step_index: _Optional[int] = ..., run_command: _Optional[_Union[CascadeRunCommandInteraction, _Mapping]] = ..., read_url_content: _Optional[_Union[CascadeReadUrlContentInteraction, _Mapping]] = ...) -> None: ...

class HandleCascadeUserInteractionRequest(_message.Message):
    __slots__ = ("cascade_id", "interaction")
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    INTERACTION_FIELD_NUMBER: _ClassVar[int]
    cascade_id: str
    interaction: CascadeUserInteraction
    def __init__(self, cascade_id: _Optional[str] = ..., interaction: _Optional[_Union[CascadeUserInteraction, _Mapping]] = ...) -> None: ...

class HandleCascadeUserInteractionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReplayGroundTruthTrajectoryRequest(_message.Message):
    __slots__ = ("metadata", "replay_steps", "cascade_id", "cascade_config")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    REPLAY_STEPS_FIELD_NUMBER: _ClassVar[int]
    CASCADE_ID_FIELD_NUMBER: _ClassVar[int]
    CASCADE_CONFIG_FIELD_NUMBER: _ClassVar[int]
    metadata: Metadata
    replay_steps: _containers.RepeatedCompositeFieldContainer[CortexTrajectoryStep]
    cascade_id: str
    cascade_config: CascadeConfig
    def __init__(self, metadata: _Optional[_Union[Metadata, _Mapping]] = ..., replay_steps: _Optional[_Iterable[_Union[CortexTrajectoryStep, _Mapping]]] = ..., cascade_id: _Optional[str] = ..., cascade_config: _Optional[_Union[CascadeConfig, _Mapping]] = ...) -> None: ...

class ReplayGroundTruthTrajectoryResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
