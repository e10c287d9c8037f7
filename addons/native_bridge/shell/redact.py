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


# In a URL a signature is a credential (a presigned URL's X-Amz-Signature, an Azure SAS "sig"); in a
# request body it is an integrity check the API verifies (Anthropic thinking blocks' "signature",
# Gemini's "thoughtSignature"), and a record that drops it no longer replays.
_BODY_INTEGRITY = frozenset({"signature", "sig"})


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


def _body_secret(name: Any) -> bool:
    if not isinstance(name, str) or not is_secret_name(name):
        return False
    words = _WORD.findall(name)
    return not words or words[-1].lower() not in _BODY_INTEGRITY


def body(doc: Any) -> Any:
    """A copy of a JSON document: secret-named fields redacted, secret-looking strings masked."""
    if isinstance(doc, dict):
        return {k: (REDACTED if v and _body_secret(k) else body(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [body(v) for v in doc]
    if isinstance(doc, str):
        return text(doc)
    return doc


_TEXT_SECRETS = re.compile(
    r"(?i)((?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\b((?:sk-|sk-ant-|AIza)[A-Za-z0-9_-]{8,})"
    # A credential header quoted in text: curl -H 'x-api-key: ...', a logged request.
    r"|(\b(?:proxy-authorization|authorization|x-api-key|api-key|x-goog-api-key|x-auth-token|x-access-token"
    r"|cookie)[ \t]*:[ \t]*(?:(?:bearer|basic)[ \t]+)?)[^\r\n'\"]+"
)
# "name": "value" in text, also JSON-escaped inside a JSON string (tool arguments in a body that is not
# JSON as a whole), redacted when the name says credential (is_secret_name).
_JSON_PAIR = re.compile(
    r'("([A-Za-z][\w.-]*)"\s*:\s*")((?:[^"\\]|\\.)*)'  # "name": "value"
    r'|(\\"([A-Za-z][\w.-]*)\\"\s*:\s*\\")((?:[^"\\]|\\[^"])*)'  # \"name\": \"value\" (inside a string)
)
# name=value in text (a query string in a command line, an environment variable, --api-key=...),
# redacted when the name says credential: TOKEN=..., api_key=..., OPENAI_API_KEY=...
_ASSIGNMENT = re.compile(r"\b([A-Za-z][A-Za-z0-9_.-]*)=([\"']?)([^\s&'\"<>;,]+)")


def text(value: str) -> str:
    """Best-effort redaction of free text: a body that is not JSON, a tool's output, a reason."""

    def sub(m: re.Match[str]) -> str:
        return (m.group(1) or m.group(3) or "") + REDACTED

    def pair(m: re.Match[str]) -> str:
        prefix, name, secret = m.groups()[:3] if m.group(1) else m.groups()[3:]
        if secret and _body_secret(name):
            return prefix + REDACTED
        # Not a secret itself, but its value may hold escaped pairs (tool arguments as a JSON string).
        return prefix + _JSON_PAIR.sub(pair, secret) if "\\" in secret else m.group(0)

    def assignment(m: re.Match[str]) -> str:
        name, quote, secret = m.groups()
        if secret == REDACTED or not is_secret_name(name):
            return m.group(0)
        return f"{name}={quote}{REDACTED}"

    value = _TEXT_SECRETS.sub(sub, value)
    if '"' in value:
        value = _JSON_PAIR.sub(pair, value)
    return _ASSIGNMENT.sub(assignment, value) if "=" in value else value
