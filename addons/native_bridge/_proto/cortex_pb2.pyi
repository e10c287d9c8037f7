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
    CORTEX_STEP_TYPE_GREP_SEARCH: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_VIEW_FILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_LIST_DIRECTORY: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_WRITE_TO_FILE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_RUN_COMMAND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_PROPOSE_CODE: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_FIND: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_READ_URL_CONTENT: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_SEARCH_WEB: _ClassVar[CortexStepType]
    CORTEX_STEP_TYPE_GREP_SEARCH_V2: _ClassVar[CortexStepType]

class CortexStepStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CORTEX_STEP_STATUS_UNSPECIFIED: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_DONE: _ClassVar[CortexStepStatus]
    CORTEX_STEP_STATUS_GENERATING: _ClassVar[CortexStepStatus]
CORTEX_STEP_TYPE_UNSPECIFIED: CortexStepType
CORTEX_STEP_TYPE_GREP_SEARCH: CortexStepType
CORTEX_STEP_TYPE_VIEW_FILE: CortexStepType
CORTEX_STEP_TYPE_LIST_DIRECTORY: CortexStepType
CORTEX_STEP_TYPE_WRITE_TO_FILE: CortexStepType
CORTEX_STEP_TYPE_RUN_COMMAND: CortexStepType
CORTEX_STEP_TYPE_PROPOSE_CODE: CortexStepType
CORTEX_STEP_TYPE_FIND: CortexStepType
CORTEX_STEP_TYPE_READ_URL_CONTENT: CortexStepType
CORTEX_STEP_TYPE_SEARCH_WEB: CortexStepType
CORTEX_STEP_TYPE_GREP_SEARCH_V2: CortexStepType
CORTEX_STEP_STATUS_UNSPECIFIED: CortexStepStatus
CORTEX_STEP_STATUS_DONE: CortexStepStatus
CORTEX_STEP_STATUS_GENERATING: CortexStepStatus

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
    __slots__ = ("cwd", "stdout", "stderr", "exit_code", "blocking", "combined_output", "command_line")
    CWD_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    BLOCKING_FIELD_NUMBER: _ClassVar[int]
    COMBINED_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_LINE_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    stdout: str
    stderr: str
    exit_code: int
    blocking: bool
    combined_output: RunCommandOutput
    command_line: str
    def __init__(self, cwd: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., exit_code: _Optional[int] = ..., blocking: _Optional[bool] = ..., combined_output: _Optional[_Union[RunCommandOutput, _Mapping]] = ..., command_line: _Optional[str] = ...) -> None: ...

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

class ActionCommand(_message.Message):
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
    command: ActionCommand
    def __init__(self, command: _Optional[_Union[ActionCommand, _Mapping]] = ...) -> None: ...

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

class CortexStepReadUrlContent(_message.Message):
    __slots__ = ("url", "summary")
    URL_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    url: str
    summary: str
    def __init__(self, url: _Optional[str] = ..., summary: _Optional[str] = ...) -> None: ...

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

class CortexTrajectoryStep(_message.Message):
    __slots__ = ("type", "status", "grep_search", "view_file", "list_directory", "write_to_file", "run_command", "propose_code", "find", "read_url_content", "search_web", "grep_search_v2")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    GREP_SEARCH_FIELD_NUMBER: _ClassVar[int]
    VIEW_FILE_FIELD_NUMBER: _ClassVar[int]
    LIST_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    WRITE_TO_FILE_FIELD_NUMBER: _ClassVar[int]
    RUN_COMMAND_FIELD_NUMBER: _ClassVar[int]
    PROPOSE_CODE_FIELD_NUMBER: _ClassVar[int]
    FIND_FIELD_NUMBER: _ClassVar[int]
    READ_URL_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_WEB_FIELD_NUMBER: _ClassVar[int]
    GREP_SEARCH_V2_FIELD_NUMBER: _ClassVar[int]
    type: CortexStepType
    status: CortexStepStatus
    grep_search: CortexStepGrepSearch
    view_file: CortexStepViewFile
    list_directory: CortexStepListDirectory
    write_to_file: CortexStepWriteToFile
    run_command: CortexStepRunCommand
    propose_code: CortexStepProposeCode
    find: CortexStepFind
    read_url_content: CortexStepReadUrlContent
    search_web: CortexStepSearchWeb
    grep_search_v2: CortexStepGrepSearchV2
    def __init__(self, type: _Optional[_Union[CortexStepType, str]] = ..., status: _Optional[_Union[CortexStepStatus, str]] = ..., grep_search: _Optional[_Union[CortexStepGrepSearch, _Mapping]] = ..., view_file: _Optional[_Union[CortexStepViewFile, _Mapping]] = ..., list_directory: _Optional[_Union[CortexStepListDirectory, _Mapping]] = ..., write_to_file: _Optional[_Union[CortexStepWriteToFile, _Mapping]] = ..., run_command: _Optional[_Union[CortexStepRunCommand, _Mapping]] = ..., propose_code: _Optional[_Union[CortexStepProposeCode, _Mapping]] = ..., find: _Optional[_Union[CortexStepFind, _Mapping]] = ..., read_url_content: _Optional[_Union[CortexStepReadUrlContent, _Mapping]] = ..., search_web: _Optional[_Union[CortexStepSearchWeb, _Mapping]] = ..., grep_search_v2: _Optional[_Union[CortexStepGrepSearchV2, _Mapping]] = ...) -> None: ...

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
