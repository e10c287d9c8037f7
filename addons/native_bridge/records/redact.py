"""Secrets never reach a file we write: headers, query strings and body fields."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

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
    return isinstance(name, str) and _secret_field(name)


@functools.lru_cache(maxsize=4096)  # a body repeats a few dozen names thousands of times
def _secret_field(name: str) -> bool:
    if not is_secret_name(name):
        return False
    words = _WORD.findall(name)
    return not words or words[-1].lower() not in _BODY_INTEGRITY


_SCHEMA_WORDS = frozenset(
    {
        "type", "description", "title", "properties", "required", "items", "enum", "const", "default", "examples",
        "format", "pattern", "minLength", "maxLength", "minimum", "maximum", "additionalProperties", "anyOf",
        "oneOf", "allOf", "not", "$ref", "$schema", "nullable", "deprecated", "minItems", "maxItems",
    }
)  # fmt: skip
_SCHEMA_TYPES = frozenset({"string", "object", "array", "integer", "number", "boolean", "null"})


def _is_schema(value: Any) -> bool:
    """A JSON Schema: what a tool definition says about a parameter (named ``password``, ``api_key``, ...)."""
    if not isinstance(value, dict) or not value or not set(value) <= _SCHEMA_WORDS:
        return False
    kind = value.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    typed = "type" in value and all(isinstance(k, str) and k in _SCHEMA_TYPES for k in kinds)
    return typed or any(k in value for k in ("$ref", "anyOf", "oneOf", "allOf", "properties"))


def _secret_value(value: Any, texts: Callable[[str], str]) -> Any:
    """The value of a secret-named field, redacted whole; a JSON Schema under the name is a tool's
    parameter definition (a ``password`` parameter), prose and structure, kept and redacted like any other."""
    if _is_schema(value):
        return body(value, texts)
    return REDACTED if value else value


def body(doc: Any, texts: Callable[[str], str] | None = None) -> Any:
    """A copy of a JSON document: secret-named fields redacted, secret-looking strings masked
    (``texts``: :func:`text`, or a :class:`Texts` that remembers long strings)."""
    texts = texts or text
    if isinstance(doc, dict):
        return {k: (_secret_value(v, texts) if _body_secret(k) else body(v, texts)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [body(v, texts) for v in doc]
    if isinstance(doc, str):
        return texts(doc)
    return doc


class Texts:
    """:func:`text`, remembering what it gave for long strings (up to ``budget`` characters): an
    agent's history comes back in the record of every turn of its conversation, one round longer.
    :meth:`document` remembers whole items the same way (up to ``items_budget`` bytes of them)."""

    def __init__(self, budget: int = 16 << 20, least: int = 256, items_budget: int = 16 << 20) -> None:
        self.budget, self.least, self.items_budget = budget, least, items_budget
        self._seen: dict[str, str] = {}  # oldest first
        self._size = 0
        self._items: dict[bytes, tuple[Any, int]] = {}  # an item's JSON -> its redacted copy, its depth
        self._items_size = 0

    def __call__(self, value: str) -> str:
        if not self.least <= len(value) <= self.budget // 4:
            return text(value)
        out = self._seen.pop(value, None)
        if out is None:
            out = text(value)
            self._size += len(value) + len(out)
            while self._size > self.budget and self._seen:
                old = next(iter(self._seen))
                self._size -= len(old) + len(self._seen.pop(old))
        self._seen[value] = out  # the newest last
        return out

    def document(self, doc: dict[str, Any], limit: int) -> tuple[Any, bool]:
        """:func:`body` of ``doc`` and whether it nests deeper than ``limit`` (then no copy): the
        items of its top-level arrays (a history's messages, its tools) are remembered by their
        JSON, so a body that repeats the previous turn's history redacts only its new items."""
        out = {}
        for k, v in doc.items():
            if _body_secret(k) or not isinstance(v, list):
                if depth(v) > limit - 1:
                    return None, True
                out[k] = _secret_value(v, self) if _body_secret(k) else body(v, self)
                continue
            items = []
            for item in v:
                copy, nesting = self._item(item)
                if nesting > limit - 2:
                    return None, True
                items.append(copy)
            out[k] = items
        return out, False

    def _item(self, item: Any) -> tuple[Any, int]:
        """An array item's redacted copy and depth (0: not a container), remembered when large."""
        if not isinstance(item, dict | list):
            return body(item, self), 0
        try:
            key = orjson.dumps(item)  # the same JSON is the same value: the same copy
        except orjson.JSONEncodeError:  # nested past what orjson writes: deeper than any limit
            return None, 1 << 30
        if len(key) < _LEAST_ITEM or len(key) > self.items_budget // 4:
            return body(item, self), depth(item)
        hit = self._items.pop(key, None)
        if hit is None:
            hit = body(item, self), depth(item)
            self._items_size += len(key)
            while self._items_size > self.items_budget and self._items:
                old = next(iter(self._items))
                del self._items[old]
                self._items_size -= len(old)
        self._items[key] = hit  # the newest last
        return hit


_LEAST_ITEM = 64  # bytes: a smaller item costs less to redact than to look up


def listed(values: list[Any], texts: Callable[[str], str] | None = None) -> list[Any]:
    """:func:`body` of a list (a record's steps, its accounting); a :class:`Texts` remembers its
    items, which come back in the next turn's record with one round more."""
    if isinstance(texts, Texts):
        return [texts._item(v)[0] for v in values]
    return body(values, texts)


def document(doc: Any, texts: Callable[[str], str], limit: int) -> tuple[Any, bool]:
    """:func:`body` of a request body and whether it nests deeper than ``limit`` (then no copy);
    a :class:`Texts` remembers its top-level arrays' items (:meth:`Texts.document`)."""
    if isinstance(texts, Texts) and isinstance(doc, dict):
        return texts.document(doc, limit)
    return (None, True) if depth(doc) > limit else (body(doc, texts), False)


def depth(doc: Any) -> int:
    """How deep containers nest in ``doc`` (0: a string or a number; 1: a flat list or object)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


# Secrets in free text are found by their shape and their place, never by a word alone: "basic searches",
# "bearer of news", "token limits" and "the password field" are prose. A candidate after "Bearer"/"Basic"
# or after a credential header's colon must look like a token (see _token_like); key formats are
# recognised by their prefixes (sk-, AIza, ghp_, github_pat_, xoxb-, glpat-, AKIA, JWTs).
_TEXT_SECRETS = re.compile(
    r"(?i)\b(?P<scheme>(?:bearer|basic)\s+)(?P<token>[A-Za-z0-9._~+/=-]{8,})"
    r"|(?-i:\b(?P<key>(?:sk-|AIza|gh[pousr]_|github_pat_|xox[abprs]-|glpat-)(?P<tail>[A-Za-z0-9_-]{8,})"
    r"|AKIA[0-9A-Z]{16}\b|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}))"
    # A credential header quoted in text: curl -H 'x-api-key: ...', a logged request.
    r"|(?P<header>\b(?:proxy-authorization|authorization|x-api-key|api-key|x-goog-api-key|x-auth-token"
    r"|x-access-token|cookie)[ \t]*:[ \t]*(?:(?:bearer|basic)[ \t]+)?)(?P<value>[^\r\n'\"]+)"
)
# What every match of _TEXT_SECRETS holds, in lower case: one search for these literals skips
# through a string, while the pattern is tried at every position of it (about 100 ns a character).
_TEXT_SECRET_MARKS = (
    "bearer", "basic", "sk-", "aiza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxa-", "xoxb-",
    "xoxp-", "xoxr-", "xoxs-", "glpat-", "akia", "eyj", "authorization", "api-key", "auth-token", "access-token",
    "cookie",
)  # fmt: skip
_ANY_MARK = re.compile("|".join(map(re.escape, _TEXT_SECRET_MARKS)))
# The characters besides A-Z that a case-insensitive pattern letter matches (the re module's own
# case folding): tests/test_redact.py checks this against every code point.
_CASE_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_FOLDED = tuple(chr(c) for c in _CASE_FOLD)


def _may_hold_secret(value: str) -> bool:
    if not value.isascii() and any(c in value for c in _FOLDED):  # rare: translate() is slow
        value = value.translate(_CASE_FOLD)
    return _ANY_MARK.search(value.lower()) is not None


# A word of prose: letters, an initial capital at most, hyphenated parts ("Authentication", "well-known").
_PROSE_WORD = re.compile(r"[A-Z]?[a-z]+(?:-[a-z]+)*|[A-Z]+(?:-[A-Z]+)*")


def _token_like(value: str) -> bool:
    """A credential, not a word: a digit, a symbol, mixed case inside the word, or 16+ letters."""
    return len(value) >= 16 or not _PROSE_WORD.fullmatch(value)


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
        if m.group("token") is not None:
            return m.group("scheme") + REDACTED if _token_like(m.group("token")) else m.group(0)
        if m.group("header") is not None:
            words = m.group("value").split()
            if words and _token_like(words[0].rstrip(".,;:!?)")):
                return m.group("header") + REDACTED
            return m.group("header") + _TEXT_SECRETS.sub(sub, m.group("value"))  # prose: still look inside
        if m.group("tail") is not None and not _token_like(m.group("tail")):
            return m.group(0)  # "sk-learn-compatible" is a word, "sk-proj-4fJ..." a key
        return REDACTED

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

    if _may_hold_secret(value):
        value = _TEXT_SECRETS.sub(sub, value)
    if '"' in value:
        value = _JSON_PAIR.sub(pair, value)
    return _ASSIGNMENT.sub(assignment, value) if "=" in value else value
