"""Tool names → step kind: the design brief's names and those of the clients in CLIENTS.md,
"Tool names" (each client's source is named there; scripts/doc_tables.py reads the client from
the comment beside each name). Extend or override without code with the addon option
bridge_tools (name=kind, kinds.tool_map)."""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_TOOL_KINDS: Mapping[str, str] = {
    # view_file
    "Read": "view_file",  # Claude Code
    "read_file": "view_file",  # Gemini CLI, Codex, Cline, Roo Code, Zed, Continue
    "view_file": "view_file",  # Cascade
    "read": "view_file",  # opencode
    "view": "view_file",  # Crush
    # run_command
    "Bash": "run_command",  # Claude Code, Continue CLI
    "PowerShell": "run_command",  # Claude Code (Windows)
    "shell": "run_command",  # Codex, goose
    "shell_command": "run_command",  # Codex
    "exec_command": "run_command",  # Codex, OpenAI Agents SDK sandbox
    "local_shell": "run_command",  # OpenAI Responses local_shell_call
    "shell_call": "run_command",  # OpenAI Responses shell_call
    "run_command": "run_command",  # Cascade
    "run_shell_command": "run_command",  # Gemini CLI
    "execute_command": "run_command",  # Cline, Roo Code
    "bash": "run_command",  # opencode, Crush
    "terminal": "run_command",  # Zed
    "execute_bash": "run_command",  # OpenHands
    "developer__shell": "run_command",  # goose (MCP developer extension)
    "run_terminal_command": "run_command",  # Continue
    "run_terminal_cmd": "run_command",  # Cursor
    "run_commands": "run_command",  # Cline v4 (one command per call only)
    "Shell": "run_command",  # Kimi CLI (its command described as a shell's until 1.28 only)
    # find
    "Glob": "find",  # Claude Code
    "glob": "find",  # Gemini CLI, opencode, Crush
    "find": "find",  # Cascade
    "find_path": "find",  # Zed
    "file_glob_search": "find",  # Continue
    # grep_search_v2
    "Grep": "grep_search_v2",  # Claude Code
    "grep": "grep_search_v2",  # opencode, Crush, Zed
    "grep_search": "grep_search_v2",  # Cascade, Gemini CLI, Continue
    "grep_search_v2": "grep_search_v2",  # Cascade
    "search_file_content": "grep_search_v2",  # Gemini CLI (before 2026-02)
    "search_files": "grep_search_v2",  # Cline, Roo Code
    "grep_files": "grep_search_v2",  # Codex
    # write_to_file
    "Write": "write_to_file",  # Claude Code
    "write_to_file": "write_to_file",  # Cascade, Cline, Roo Code
    "write_file": "write_to_file",  # Gemini CLI
    "write": "write_to_file",  # opencode, Crush, goose
    "create_new_file": "write_to_file",  # Continue
    # list_directory
    "LS": "list_directory",  # Claude Code (older builds)
    "list_dir": "list_directory",  # Cascade
    "list_directory": "list_directory",  # Gemini CLI, Zed
    "list": "list_directory",  # opencode
    "ls": "list_directory",  # Crush, Continue
    "list_files": "list_directory",  # Cline, Roo Code
    # propose_code
    "Edit": "propose_code",  # Claude Code
    "MultiEdit": "propose_code",  # Claude Code (older builds)
    "edit": "propose_code",  # opencode, Crush, goose
    "multiedit": "propose_code",  # Crush, opencode
    "replace": "propose_code",  # Gemini CLI
    "single_find_and_replace": "propose_code",  # Continue
    "multi_edit": "propose_code",  # Continue
    # search_web
    "WebSearch": "search_web",  # Claude Code
    "web_search": "search_web",  # Cline, Crush
    "google_web_search": "search_web",  # Gemini CLI
    "search_web": "search_web",  # Continue
    "websearch": "search_web",  # opencode
    # read_url_content
    "WebFetch": "read_url_content",  # Claude Code
    "webfetch": "read_url_content",  # opencode
    "fetch": "read_url_content",  # Crush, Zed
    "fetch_url_content": "read_url_content",  # Continue
    "web_fetch": "read_url_content",  # Cline (Gemini CLI's has no url: refused)
    "read_url_content": "read_url_content",  # Cascade
}
