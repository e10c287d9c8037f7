"""Secrets never reach a file we write: headers, query strings and body fields."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "<redacted>"

_SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "openai-organization",
        "x-auth-token",
        "x-access-token",
    }
)
# A name that says it holds a credential (header, query key or body field).
_SECRET_NAME = re.compile(
    r"(?i)(?:^|[-_.])(?:api[-_]?key|apikey|token|access[-_]?token|secret|password|passwd|auth|authorization|"
    r"credentials?|session[-_]?key|private[-_]?key|signature|sig|cookie)$"
)


def is_secret_name(name: str) -> bool:
    return name.lower() in _SECRET_HEADERS or bool(_SECRET_NAME.search(name))


def headers(fields: list[tuple[str, str]]) -> list[list[str]]:
    return [[k, REDACTED if is_secret_name(k) else v] for k, v in fields]


def url(value: str) -> str:
    parts = urlsplit(value)
    if not parts.query and not parts.username and not parts.password:
        return value
    query = urlencode(
        [(k, REDACTED if is_secret_name(k) else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)],
        safe="<>",
    )
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    if parts.username or parts.password:
        netloc = f"{REDACTED}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def body(doc: Any) -> Any:
    """A copy of a JSON document with every secret-named field's value redacted."""
    if isinstance(doc, dict):
        return {k: (REDACTED if isinstance(k, str) and is_secret_name(k) and v else body(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [body(v) for v in doc]
    return doc


_TEXT_SECRETS = re.compile(
    r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|(\"(?:api[-_]?key|apikey|token|access_token|secret|password|authorization)\"\s*:\s*\")[^\"]*"
    r"|\b(sk-[A-Za-z0-9_-]{8,})"
)


def text(value: str) -> str:
    """Best-effort redaction of a body that is not JSON."""

    def sub(m: re.Match[str]) -> str:
        return (m.group(1) or m.group(2) or "") + REDACTED

    return _TEXT_SECRETS.sub(sub, value)
