"""The Gemini CLI family's shell frame (Gemini CLI, Qwen Code ``run_shell_command``): a fixed frame
around the output, read as a whole by exitstatus.py (its slots, not one line at a time).

Sources: google-gemini/gemini-cli packages/core/src/tools/shell.ts; QwenLM/qwen-code
packages/core/src/tools/shell.ts.
"""

from __future__ import annotations

import re

GEMINI_CLIENTS: tuple[str, ...] = ("gemini-cli",)  # the family: Gemini CLI, Qwen Code
# ``[Command: …][Directory: …]Output: …`` at the start.
GEMINI_START: re.Pattern[str] = re.compile(r"\A(?:Command: .*\n)?(?:Directory: .*\n)?Output: ")
# The frame's closing lines, in the order the client writes them (each at most once).
GEMINI_SLOTS: tuple[str, ...] = ("Error", "Exit Code", "Signal", "Background PIDs", "Process Group PGID")
# A slot's value that states nothing.
GEMINI_NONE: tuple[str, ...] = ("(none)", "")
# Qwen Code appends a hint after its frame when a foreground command ran long.
QWEN_NOTE: re.Pattern[str] = re.compile(r"\n\nNote: this foreground command ran for \d+s\.[^\n]*\Z")
