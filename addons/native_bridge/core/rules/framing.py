"""How clients frame a tool result without saying anything of its outcome: what exitstatus.py
strips or steps over before it reads a frame that does (exit_frames.py, structures.py).
"""

from __future__ import annotations

import re

# A prefix that flags a result as an error, whoever the client (design brief, truth rule 3).
ERROR_PREFIX = "[tool error]"
# SWE-agent's observation prefix, before every result: its default config's next_step_template
# (`OBSERVATION:` on a line of its own) and TemplateConfig's default (`Observation: `), SWE-agent/SWE-agent
# config/default.yaml, sweagent/agent/agents.py TemplateConfig.
OBSERVATION: re.Pattern[str] = re.compile(r"\A(?:OBSERVATION:[ \t]*\n|Observation: )")
# Gemini CLI wraps results since 2026-06 (google-gemini/gemini-cli).
UNTRUSTED: re.Pattern[str] = re.compile(r"(?s)\A<untrusted_context>\n?(.*?)\n?</untrusted_context>\Z")
# Cline's first line: "[execute_command for '...'] Result:" (cline/cline).
CLINE_PREFIX: re.Pattern[str] = re.compile(r"\[[\w.-]+ for .*\] Result:")
# The end of a header: a bare line, as Codex, Cline and Roo Code print it; Roo Code's saved
# output ends its header too.
OUTPUT_MARKER: re.Pattern[str] = re.compile(r"Output:|Output \([\d.]+ ?[KMG]?B\) persisted\. Artifact ID: .*")
# Lines that only frame a result (no verdict of their own) and may sit in a trailer.
FRAME_LINES: re.Pattern[str] = re.compile(
    r"\[Current working directory: .*\]|\[Python interpreter: .*\]"  # OpenHands
    r"|<cwd>.*</cwd>"  # Crush
    r"|</?(?:shell|bash)_metadata>"  # opencode
    r"|\[Status: .*\]"  # Continue (statuses with a verdict are rules, matched first)
    r"|\(Note: output limit reduced due to .*\)"  # Continue CLI (parallel tool calls' truncation note)
    r"|You will be notified when it completes\."  # Claude Code 2.1.x (after its background move)
)
