"""The bundled sessions: realistic agent request bodies, written out by hand as scripts, one per
dialect (``chat_session``: Claude Code over Chat Completions; ``anthropic_session``: Claude Code
over Anthropic Messages; ``responses_session``: Codex CLI over Responses). Each module builds its
session (``build()``) and its bytes (``render()``); ``.venv/bin/python scripts/make_sessions.py``
writes them to tests/fixtures/sessions/, and the tests prove the bundled files are exactly what
they render.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import claude_read

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "sessions"
SESSION = FIXTURES / "chat_session.json"  # the demo's session
SESSIONS = sorted(FIXTURES.glob("*_session.json"))  # the bundled sessions, one per dialect
DIALECTS = ("chat", "anthropic", "responses")


def session_dialect(path: Path) -> str:
    return path.name.removesuffix("_session.json")


def generator(dialect: str) -> ModuleType:
    """The module that writes ``dialect``'s bundled session."""
    return importlib.import_module(f"{__name__}.{dialect}_session")


def encode(doc: dict[str, Any]) -> bytes:
    """A bundled session's bytes: indented JSON, UTF-8 as it is, one newline at the end."""
    return (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode()


def numbered(text: str, start: int = 1) -> str:
    """A file as Claude Code's Read tool shows it."""
    return claude_read(text.splitlines(), start)


def edited(path: str, snippet: str, start: int) -> str:
    """Claude Code's Edit result: the snippet around the change, numbered."""
    return (
        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
        + numbered(snippet, start)
    )


def digest(seed: str, n: int, urlsafe: bool = False) -> str:
    """``n`` stable base64 characters from ``seed`` (signatures, encrypted content, ids)."""
    raw = b"".join(hashlib.sha256(f"{seed}/{i}".encode()).digest() for i in range(n // 40 + 1))
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()[:n]
