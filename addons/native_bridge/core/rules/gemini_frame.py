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
# What stands around the frame (read off before it), Gemini CLI's scheduler writing it for any tool:
# - the truncation preface, at the start: since v0.26.0 (28805a4b2d, 2026-02) one line,
#   packages/core/src/utils/fileUtils.ts formatTruncatedToolOutput, the frame's head and tail
#   below it (the wrapper too, since v0.49); up to v0.25.x (and Qwen Code through 0.24.4) a
#   paragraph ending on "Truncated part of the output:", truncateAndSaveToFile;
GEMINI_TRUNCATED: re.Pattern[str] = re.compile(
    r"\AOutput too large\. Showing first .{1,40} and last .{1,40} characters\. For full output see: [^\n]*\n"
    r"|\ATool output was too large and has been truncated\.\n(?:[^\n]*\n){0,12}?Truncated part of the output:\n"
)
# - the hook's note, at the end: packages/core/src/scheduler/tool-executor.ts (d1dc4902fd,
#   2026-03) and core/coreToolHookTriggers.ts (with the keys it changed).
GEMINI_HOOK_NOTE: re.Pattern[str] = re.compile(
    r"\n\n\[System\] Tool input parameters(?: \([^)\n]*\))? were modified by a hook before execution\.\Z"
)
# - a gateway that passes the functionResponse object on as a Chat Completions tool message:
#   the whole result is ``{"output": "…"}`` (packages/core/src/utils/
#   generateContentResponseUtilities.ts convertToFunctionResponse).
GEMINI_RESPONSE_KEY = "output"
