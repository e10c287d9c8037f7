"""Tool-call argument names by what they mean, across the clients of tool_names.py (read off
their tool schemas). kinds.py reads a call's arguments by these names and refuses any other
argument that has no field in the step (truth rule 5)."""

from __future__ import annotations

# Arguments that only steer how the client ran the tool (a label, a time limit,
# a sandbox or approval request, output paging for the model) and do not change
# what the step states.
IGNORABLE_ARGS: frozenset[str] = frozenset(
    {
        "description",
        "display_description",
        "explanation",
        "justification",
        "timeout",
        "timeout_ms",
        "timeout_secs",
        "delay_ms",
        "dangerouslyDisableSandbox",
        "with_escalated_permissions",
        "sandbox_permissions",
        "additional_permissions",
        "prefix_rule",
        "requires_approval",
        "security_risk",
        "auto_background_after",
        "SafeToAutoRun",
        "WaitMsBeforeAsync",
        "yield_time_ms",
        "max_output_tokens",
        "max_output_length",
        "login",
        "tty",
        "shell",
        "environment_id",
        "prompt",
        "format",
        "toolSummary",
        "task_progress",
        "respect_git_ignore",
        "respect_gemini_ignore",
    }
)

# The path of a file, of a directory, and a command's working directory.
FILE_ARGS: tuple[str, ...] = (
    "file_path",
    "absolute_path",
    "path",
    "filePath",
    "filepath",
    "target_file",
    "AbsolutePath",
    "absolutePath",
)
DIR_ARGS: tuple[str, ...] = (
    "path",
    "dir_path",
    "DirectoryPath",
    "directory_path",
    "dirPath",
    "dirpath",
    "target_directory",
    "directory",
)
CWD_ARGS: tuple[str, ...] = ("workdir", "cwd", "Cwd", "working_directory", "working_dir", "dir_path", "directory", "cd")
# A command run in the background: its outcome is not in its result (kinds.py refuses the step).
BACKGROUND_ARGS: tuple[str, ...] = ("run_in_background", "is_background", "isBackground")
