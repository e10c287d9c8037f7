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
# A name whose last word says it holds a credential (header, query key or body field):
# api_key, apiKey, clientSecret, aws_secret_access_key, x-auth-token, key, ...
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "signature",
        "sig",
    }
)
# Names that end like a secret but are not one.
_NOT_SECRET = frozenset({"prompt_cache_key", "cache_key", "idempotency_key", "partition_key", "sort_key"})
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def is_secret_name(name: str) -> bool:
    if name.lower() in _SECRET_HEADERS:
        return True
    words = [w.lower() for w in _WORD.findall(name)]
    return bool(words) and words[-1] in _SECRET_WORDS and "_".join(words) not in _NOT_SECRET


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
    _, at, netloc = parts.netloc.rpartition("@")
    if at:
        netloc = f"{REDACTED}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def body(doc: Any) -> Any:
    """A copy of a JSON document: secret-named fields redacted, secret-looking strings masked."""
    if isinstance(doc, dict):
        return {k: (REDACTED if isinstance(k, str) and is_secret_name(k) and v else body(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [body(v) for v in doc]
    if isinstance(doc, str):
        return text(doc)
    return doc


_TEXT_SECRETS = re.compile(
    r"(?i)((?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|(\"(?:api[-_]?key|apikey|token|access_token|secret|password|authorization)\"\s*:\s*\")[^\"]*"
    r"|\b((?:sk-|sk-ant-|AIza)[A-Za-z0-9_-]{8,})"
)


def text(value: str) -> str:
    """Best-effort redaction of a body that is not JSON."""

    def sub(m: re.Match[str]) -> str:
        return (m.group(1) or m.group(2) or "") + REDACTED

    return _TEXT_SECRETS.sub(sub, value)
