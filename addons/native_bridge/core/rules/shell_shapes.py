"""Shell tools by their shape (issue 39 item 7): what a declared tool's schema must look like to
be a command line to run, whatever the tool's name (core/mapping.py reads it). A name in
tool_names.py keeps its kind; these take only the tools no name maps.

Two shapes, each read from the clients that declare it (tests/fixtures/paths/clients-b.md, "Shell
tools we do not map", holds their schemas as sent):

- a command line: one required string parameter named ``command`` or ``cmd``, whose own
  description calls it a shell's, a terminal's or bash's; no other required parameter but
  those that only steer the client (a label, a time limit, a working directory, running in the
  background). "command" alone is no shell's: a git subcommand, an editor's command ID, Claude
  Code's slash command are "commands" too, and a step would then claim a shell ran them. The
  tool's own description does not count: it is free text (Claude Code's SlashCommand lists the
  user's commands in it, whatever words they use);
- a ``language`` + ``code`` pair (both required strings): a shell tool for the calls whose
  language is a shell's, and only for them. Code in another language is no command line, and
  none is ever made of it: such a call stays a message. A declared ``language`` enum with no
  shell in it is no shell tool at all.
"""

from __future__ import annotations

import re

from .arguments import BACKGROUND_ARGS, CWD_ARGS, IGNORABLE_ARGS

# The parameter that holds the command line, by its name.
COMMAND_PARAMS: tuple[str, ...] = ("command", "cmd")
# The words that call it a shell's command line, in the parameter's description.
SHELL_WORDS: re.Pattern[str] = re.compile(
    r"\b(?:shell|bash|zsh|sh|fish|ksh|powershell|pwsh|terminal|command[- ]line|cmd\.exe)\b", re.IGNORECASE
)
# The language + code pair, and the languages whose code is a command line (compared in lower case).
CODE_PARAMS: tuple[str, str] = ("language", "code")
SHELL_LANGUAGES: frozenset[str] = frozenset({"bash", "sh", "shell", "zsh", "fish", "ksh", "dash", "powershell", "pwsh"})
# Required parameters beside the command line that only steer the client: they leave it a shell tool.
STEERING: frozenset[str] = IGNORABLE_ARGS | frozenset(CWD_ARGS) | frozenset(BACKGROUND_ARGS)

# The shell tools no name maps that these shapes take, with where their schemas were read.
SOURCES: tuple[tuple[str, str, str], ...] = (
    (
        "GitHub Copilot",
        "run_in_terminal(command, explanation, isBackground)",
        "microsoft/vscode src/vs/workbench/contrib/terminalContrib/chatAgentTools/browser/tools/runInTerminalTool.ts",
    ),
    (
        "Open Interpreter",
        "execute(language, code)",
        "OpenInterpreter/open-interpreter interpreter/core/llm/run_tool_calling_llm.py tool_schema",
    ),
)
