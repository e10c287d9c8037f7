"""Success evidence: each client's own words for a non-shell tool's success (truth rule 5).

A step kind with no field to state a failure becomes a step only when its result starts with
one of these (kinds.evidence); each row names the clients it counts for and the source of the
wording, and carries a real result as its example. CLIENTS.md, "Success evidence", is generated
from this table."""

from __future__ import annotations

import re

from .types import Evidence


def _e(
    name: str,
    kind: str,
    clients: tuple[str, ...],
    tool: str,
    pattern: str,
    source: str,
    example: str,
    file_created: bool | None = None,
    entry: str | None = None,
) -> Evidence:
    return Evidence(
        name,
        kind,
        clients,
        tool,
        re.compile(pattern),
        source,
        example,
        file_created,
        re.compile(entry) if entry else None,
    )


_CC = "Claude Code 2.1.332 (captured; the wording is in its published binary)"
_GEM = "google-gemini/gemini-cli packages/core/src/tools/"
_QWEN = "QwenLM/qwen-code packages/core/src/tools/"
_OC = "sst/opencode packages/opencode/src/tool/"

EVIDENCE: tuple[Evidence, ...] = (
    # ---- Claude Code ----------------------------------------------------------------
    _e(
        "claude-read",
        "view_file",
        ("claude-code",),
        "Read",
        r"[ \t]*\d+(?:\t|\u2192)",
        _CC + " Read",
        "1\thello interop\n2\tsecond line\n3\n",
    ),
    _e(
        "claude-write-created",
        "write_to_file",
        ("claude-code",),
        "Write",
        r"File created successfully at: \S",
        _CC + " Write",
        "File created successfully at: /w/new.txt",
        file_created=True,
    ),
    _e(
        "claude-write-updated",
        "write_to_file",
        ("claude-code",),
        "Write",
        r"The file \S.* has been updated successfully\.",
        _CC + " Write",
        "The file /w/hello.txt has been updated successfully.",
        file_created=False,
    ),
    _e(
        "claude-edit",
        "propose_code",
        ("claude-code",),
        "Edit",
        r"The file \S.* has been updated(?: successfully)?\.",
        _CC + " Edit",
        "The file /w/hello.txt has been updated successfully. (file state is current in your context)",
    ),
    _e(
        "claude-glob",
        "find",
        ("claude-code",),
        "Glob",
        r"(?:No files found|/[^\n]*)(?:\n|\Z)",
        _CC + " Glob",
        "/w/a.py\n/w/b.py",
    ),
    _e(
        "claude-grep",
        "grep_search_v2",
        ("claude-code",),
        "Grep",
        r"(?:Found \d+ files?\b[^\n]*|No files found|No matches found)(?:\n|\Z)",
        _CC + " Grep",
        "Found 2 files\n/w/a.py\n/w/b.py",
    ),
    _e(
        "claude-web-search",
        "search_web",
        ("claude-code",),
        "WebSearch",
        r'Web search results for query: ".*"\n',
        _CC + " WebSearch",
        'Web search results for query: "mitmproxy"\n\nLinks: []\n',
    ),
    # ---- Gemini CLI family (Gemini CLI, Qwen Code) ------------------------------------
    _e(
        "gemini-write-created",
        "write_to_file",
        ("gemini-cli",),
        "write_file",
        r"Successfully created and wrote to new file: \S",
        _GEM + "write-file.ts; " + _QWEN + "write-file.ts",
        "Successfully created and wrote to new file: /w/new.txt.",
        file_created=True,
    ),
    _e(
        "gemini-write-overwrote",
        "write_to_file",
        ("gemini-cli",),
        "write_file",
        r"Successfully overwrote file: \S",
        _GEM + "write-file.ts; " + _QWEN + "write-file.ts",
        "Successfully overwrote file: /w/hello.txt.",
        file_created=False,
    ),
    _e(
        "gemini-edit",
        "propose_code",
        ("gemini-cli",),
        "replace",
        r"Successfully modified file: \S.* \(\d+ replacements?\)\.",
        _GEM + "edit.ts",
        "Successfully modified file: /w/hello.txt (1 replacements).\nHere is the updated code:\n...",
    ),
    _e(
        "qwen-edit",
        "propose_code",
        ("qwen-code",),
        "edit",
        r"The file: \S.* has been updated\.",
        _QWEN + "edit.ts",
        "The file: /w/hello.txt has been updated.",
    ),
    _e(
        "gemini-list",
        "list_directory",
        ("gemini-cli",),
        "list_directory",
        r"Directory listing for \S.*:\n",
        _GEM + "ls.ts",
        "Directory listing for /w:\n[DIR] src\nhello.txt (26 bytes)",
        entry=r"\[DIR\] (?P<name>.+)|(?P<file>.+) \(\d+ bytes\)",
    ),
    _e(
        "qwen-list",
        "list_directory",
        ("qwen-code",),
        "list_directory",
        r"Listed \d+ item\(s\) in \S.*:\n---\n",
        _QWEN + "ls.ts",
        "Listed 2 item(s) in /w:\n---\n[DIR] src\nhello.txt",
        entry=r"(?:\[DIR\] )?(?P<name>.+)",
    ),
    _e(
        "gemini-glob",
        "find",
        ("gemini-cli",),
        "glob",
        r'(?:Found \d+ file\(s\) matching ".*"|No files found matching pattern ".*")',
        _GEM + "glob.ts",
        'Found 1 file(s) matching "*.txt" within /w, sorted by modification time (newest first):\n/w/hello.txt',
    ),
    _e(
        "gemini-grep",
        "grep_search_v2",
        ("gemini-cli",),
        "grep_search",
        r'(?:Found \d+ match(?:es)? for pattern ".*"|No matches found for pattern ".*")',
        _GEM + "grep.ts",
        'Found 1 match for pattern "hello" in path "/w":\n---\nFile: hello.txt\nL1: hello interop\n---',
    ),
    _e(
        "gemini-web-search",
        "search_web",
        ("gemini-cli",),
        "google_web_search",
        r'Web search results for (?:query: )?".*"',
        _GEM + "web-search.ts",
        'Web search results for "mitmproxy":\n\nmitmproxy is an interactive HTTPS proxy.',
    ),
    Evidence(
        "gemini-read-output",
        "view_file",
        ("gemini-cli",),  # Gemini CLI itself, over the Gemini API; not Qwen Code over Chat Completions
        "read_file",
        re.compile(r"(?!)"),
        "google-gemini/gemini-cli packages/core/src/utils/generateContentResponseUtilities.ts "
        "(functionResponse {output} on success, {error} on failure); captured with 0.61.0",
        "hello interop\nsecond line\n",
        unflagged=True,
    ),
    # ---- OpenHands (file_editor) ---------------------------------------------------------
    _e(
        "openhands-view",
        "view_file",
        ("openhands",),
        "file_editor (view)",
        r"Here's the result of running `cat -n` on \S[^\n]*:\n",
        "OpenHands/software-agent-sdk openhands-tools/openhands/tools/file_editor/editor.py; captured with 1.58.2",
        "Here's the result of running `cat -n` on /w/hello.txt:\n     1\thello interop\n",
    ),
    _e(
        "openhands-edit",
        "propose_code",
        ("openhands",),
        "file_editor (str_replace)",
        r"The file \S.* has been edited\.",
        "OpenHands/software-agent-sdk openhands-tools/openhands/tools/file_editor/editor.py; captured with 1.58.2",
        "The file /w/hello.txt has been edited. Here's the result of running `cat -n` on a snippet of /w/hello.txt:",
    ),
    # ---- opencode family (opencode, Kilo CLI) -----------------------------------------
    _e(
        "opencode-read",
        "view_file",
        ("opencode",),
        "read",
        r"<path>[^\n]+</path>\n<type>file</type>\n<content>\n",
        _OC + "read.ts",
        "<path>/w/hello.txt</path>\n<type>file</type>\n<content>\n1: hello interop\n"
        "(End of file - total 1 lines)\n</content>",
    ),
    _e(
        "opencode-write",
        "write_to_file",
        ("opencode",),
        "write",
        r"Wrote file successfully\.",
        _OC + "write.ts",
        "Wrote file successfully.",
    ),
    _e(
        "opencode-edit",
        "propose_code",
        ("opencode",),
        "edit",
        r"Edit applied successfully\.",
        _OC + "edit.ts",
        "Edit applied successfully.",
    ),
    _e(
        "opencode-glob",
        "find",
        ("opencode",),
        "glob",
        r"(?:No files found|/[^\n]*)(?:\n|\Z)",
        _OC + "glob.ts",
        "/w/hello.txt",
    ),
    _e(
        "opencode-grep",
        "grep_search_v2",
        ("opencode",),
        "grep",
        r"(?:Found \d+ matches\b[^\n]*|No files found)(?:\n|\Z)",
        _OC + "grep.ts",
        "Found 1 matches\n/w/hello.txt:\n  Line 1: hello interop",
    ),
)
