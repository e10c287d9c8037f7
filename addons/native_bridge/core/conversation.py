"""Which conversation a request belongs to, so a session's turns can be listed together.

Pure: no mitmproxy import. The key names where it came from and a digest of the
value, ``"<source>:<16 hex>"``, never the value itself: a session header or a
``metadata.user_id`` can carry account ids, and a client may put anything there.

Sources, first found wins:

1. a session header (``x-session-id``, ``session_id``, ``x-claude-code-session-id``,
   ``conversation-id``, ...);
2. request metadata: ``metadata.user_id`` (Claude Code puts its session id there),
   ``metadata.session_id``, ``prompt_cache_key`` (Codex sets it to its conversation id),
   ``user``;
3. ``previous_response_id`` (OpenAI Responses: the server holds the earlier turns);
4. else ``opening:``, a digest of the opening turns (system prompt and first user
   turn), which every later turn of the same conversation repeats.

Compute it from the request as the client sent it (before the rewrite).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

# Lower-case header names that name a client session, most specific first.
SESSION_HEADERS = (
    "x-claude-code-session-id",
    "x-session-id",
    "session_id",
    "session-id",
    "x-conversation-id",
    "conversation-id",
    "conversation_id",
)
# Body fields (dotted paths) that name a session or its owner, most specific first.
BODY_FIELDS = (
    "metadata.session_id",
    "metadata.user_id",
    "metadata.conversation_id",
    "prompt_cache_key",
    "conversation",
    "user",
    "previous_response_id",
)
DIGEST_CHARS = 16


def digest(value: str | bytes) -> str:
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]


def _field(doc: dict[str, Any], path: str) -> str | None:
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    if isinstance(node, dict) and isinstance(node.get("id"), str):  # Responses: "conversation": {"id": ...}
        node = node["id"]
    return node if isinstance(node, str) and node.strip() else None


def _opening_turns(doc: dict[str, Any]) -> list[Any] | None:
    """System/instructions and every turn up to and including the first user turn."""
    opening: list[Any] = [doc.get("system"), doc.get("instructions")]
    if "messages" in doc:
        items = doc["messages"]
    else:
        items = doc.get("input")
        if isinstance(items, str):  # Responses: input as one user string
            return [*opening, items]
    if not isinstance(items, list):
        return None
    for item in items:
        opening.append(item)
        if isinstance(item, dict) and item.get("role") == "user":
            return opening
    return opening if any(x is not None for x in opening) else None


def conversation_key(headers: Iterable[tuple[str, str]], body: bytes | dict[str, Any] | None) -> str | None:
    """The conversation key of one request (headers and body as the client sent them), or None."""
    by_name: dict[str, str] = {}
    for name, value in headers:
        by_name.setdefault(name.lower(), value)
    for name in SESSION_HEADERS:
        value = by_name.get(name, "").strip()
        if value:
            return f"{name}:{digest(value)}"
    doc: Any = body
    if isinstance(body, bytes | bytearray | memoryview):
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(doc, dict):
        return None
    for path in BODY_FIELDS:
        field = _field(doc, path)
        if field is not None:
            return f"{path}:{digest(field)}"
    opening = _opening_turns(doc)
    if opening is None:
        return None
    try:
        canonical = orjson.dumps(opening, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes: no key rather than a failed record
        return None
    return "opening:" + digest(canonical)
