"""Reading a command's exit status out of the result text a client sent back.

Only the client's own status line counts: a header above an ``Output:`` line,
else the first line, else the last line, matched as a whole line. Words that
merely appear inside the program's output never count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

_NUM = r"(-?\d{1,10})"
# Each pattern must match a whole (stripped) line.
_STATUS_LINES = [
    re.compile(rf"(?i)exit[ _](?:code|status):?\s*{_NUM}\.?"),
    re.compile(
        rf"(?i)(?:(?:the )?(?:process|command|program|shell|script) )?"
        rf"exited with (?:exit )?(?:code|status):?\s*{_NUM}\.?"
    ),
]
_BRACKETED = re.compile(r"[\[(](.*)[\])]")
_OUTPUT_MARKER = re.compile(r"(?i)^output:")
_HEADER_LIMIT = 12
_ERROR_PREFIX = "[tool error]"


@dataclass(frozen=True, slots=True)
class ExitStatus:
    code: int | None  # None: no number and no failure signal (absent, not 0)
    source: str  # where the code came from, for the record


def _status_line(line: str) -> int | None:
    line = line.strip()
    m = _BRACKETED.fullmatch(line)
    if m:
        line = m.group(1).strip()
    for pat in _STATUS_LINES:
        m = pat.fullmatch(line)
        if m:
            return _int32(int(m.group(1)))
    return None


def _int32(n: int) -> int | None:
    return n if -(2**31) <= n < 2**31 else None


def _json_code(text: str) -> int | None:
    if not text.startswith("{"):
        return None
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    for holder in (doc, doc.get("metadata")):
        if isinstance(holder, dict):
            code = holder.get("exit_code")
            if type(code) is int:
                return _int32(code)
    return None


def _text_code(text: str) -> tuple[int | None, str]:
    lines = text.splitlines()
    # A header closed by an "Output:" line is the client's own framing.
    for i, line in enumerate(lines[:_HEADER_LIMIT]):
        if _OUTPUT_MARKER.match(line):
            for head in lines[:i]:
                code = _status_line(head)
                if code is not None:
                    return code, "header"
            break
    if lines:
        code = _status_line(lines[0])
        if code is not None:
            return code, "first line"
        last = next((ln for ln in reversed(lines) if ln.strip()), "")
        code = _status_line(last)
        if code is not None:
            return code, "last line"
    return None, ""


def has_error_prefix(text: str) -> bool:
    return text.lstrip()[: len(_ERROR_PREFIX)].lower() == _ERROR_PREFIX


def parse_exit_status(text: str, is_error: bool | None = None) -> ExitStatus:
    """The exit code a shell result states, or the failure it signals."""
    stripped = text.strip()
    flagged = has_error_prefix(stripped)
    if flagged:
        stripped = stripped.lstrip()[len(_ERROR_PREFIX) :].strip()
    code = _json_code(stripped)
    if code is not None:
        return ExitStatus(code, "json")
    code, where = _text_code(stripped)
    if code is not None:
        return ExitStatus(code, where)
    if is_error:
        return ExitStatus(1, "error flag")
    if flagged:
        return ExitStatus(1, "error prefix")
    return ExitStatus(None, "")
