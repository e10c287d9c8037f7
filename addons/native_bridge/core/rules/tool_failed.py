"""Wordings that say a non-shell tool failed or did not run, each beside the client that writes it.

Only ever a reason to keep a pair as messages (or, on the planner hop, to drop a step), never a
claim: so they are recognised whatever the client (kinds.signals_failure). Success needs the
client's own words (success_evidence.py)."""

from __future__ import annotations

import re

# mutation: failure-words-deleted
TOOL_FAILED: re.Pattern[str] = re.compile(
    r"(?is)\A(?:The tool execution failed with the following error"  # Cline
    r"|\S+ failed with the message:"  # Continue
    r"|The tool call returned the following error"  # goose
    r"|An error occurred while running the tool"  # OpenAI Agents SDK
    r"|failed to read file:"  # Codex read_file
    r"|(?:Error: )?File does not exist\."  # Claude Code Read
    r"|Error executing "  # Cline, Roo Code
    r"|(?:Error: )?File not found"  # Gemini CLI, Qwen Code, opencode
    r"|Error (?:listing directory|reading file|reading directory|writing file)"  # Gemini CLI, opencode
    r"|Error: oldString not found|Failed to edit"  # opencode, Gemini CLI
    r"|\{\s*\"(?:error|status\"\s*:\s*\"error)\""  # JSON error objects (Cline v4, Roo Code)
    r")"
)
