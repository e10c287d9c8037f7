"""Secrets never reach a file the bridge writes: headers, URLs, JSON bodies and free text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from native_bridge.records import redact
from native_bridge.records.redact import REDACTED

SECRET = "s3cr3t-value-0123456789"


# ---- headers -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "authorization",
        "AUTHORIZATION",
        "Proxy-Authorization",
        "proxy-authorization",
        "Cookie",
        "cookie",
        "Set-Cookie",
        "X-Api-Key",
        "x-api-key",
        "X-API-KEY",
        "api-key",
        "Api-Key",
        "x-goog-api-key",
        "X-Goog-Api-Key",
        "X-Auth-Token",
        "X-Access-Token",
        "OpenAI-Organization",
        "openai-organization",
    ],
)
def test_secret_headers_are_redacted_case_insensitively(name):
    out = redact.headers([(name, SECRET)])
    assert out == [[name, REDACTED]]


@pytest.mark.parametrize(
    "name, value",
    [
        ("Content-Type", "application/json"),
        ("Content-Length", "123"),
        ("User-Agent", "codex_cli_rs/0.1"),
        ("Accept", "text/event-stream"),
        ("Host", "api.example.com"),
        ("X-Request-Id", "req-42"),
        ("Content-Encoding", "zstd"),
    ],
)
def test_ordinary_headers_are_kept(name, value):
    assert redact.headers([(name, value)]) == [[name, value]]


def test_headers_keep_order_and_repeats():
    fields = [
        ("Host", "h"),
        ("Cookie", "a=1"),
        ("Accept", "*/*"),
        ("Cookie", "b=2"),
        ("Authorization", "Bearer sk-abcdefghijkl"),
    ]
    assert redact.headers(fields) == [
        ["Host", "h"],
        ["Cookie", REDACTED],
        ["Accept", "*/*"],
        ["Cookie", REDACTED],
        ["Authorization", REDACTED],
    ]


def test_headers_output_holds_no_secret_value():
    fields = [("Authorization", f"Bearer {SECRET}"), ("x-goog-api-key", SECRET), ("X-Other", "fine")]
    assert SECRET not in repr(redact.headers(fields))


# ---- URLs --------------------------------------------------------------------


@pytest.mark.parametrize("key", ["api_key", "token", "access_token", "sig", "apiKey", "api-key", "password"])
def test_secret_query_keys_are_redacted(key):
    out = redact.url(f"https://api.example.com/v1/chat/completions?{key}={SECRET}&model=gpt")
    assert SECRET not in out
    assert f"{key}={REDACTED}" in out
    assert "model=gpt" in out
    assert out.startswith("https://api.example.com/v1/chat/completions?")


def test_bare_key_query_parameter_is_redacted():
    out = redact.url(f"https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key={SECRET}")
    assert SECRET not in out


@pytest.mark.parametrize(
    "query",
    ["model=gpt-4o", "stream=true", "max_tokens=100", "api-version=2024-10-21", "page=2&limit=50"],
)
def test_ordinary_query_keys_are_kept(query):
    out = redact.url(f"https://api.example.com/v1/x?{query}")
    assert out == f"https://api.example.com/v1/x?{query}"


def test_url_without_query_or_userinfo_is_returned_as_is():
    value = "https://api.example.com:8443/v1/chat/completions#frag"
    assert redact.url(value) == value


def test_userinfo_is_redacted_and_host_port_path_kept():
    out = redact.url(f"https://alice:{SECRET}@api.example.com:8443/v1/chat?model=m")
    assert SECRET not in out
    assert "alice" not in out
    assert out == f"https://{REDACTED}@api.example.com:8443/v1/chat?model=m"


def test_username_only_userinfo_is_redacted():
    out = redact.url(f"https://{SECRET}@api.example.com/v1")
    assert SECRET not in out
    assert out == f"https://{REDACTED}@api.example.com/v1"


def test_userinfo_and_secret_query_together():
    out = redact.url(f"http://u:{SECRET}@h.example/p?token={SECRET}&a=1")
    assert SECRET not in out
    assert out == f"http://{REDACTED}@h.example/p?token={REDACTED}&a=1"


def test_ipv6_host_survives_query_redaction():
    out = redact.url("http://[::1]:8080/v1/chat/completions?api_key=x")
    assert out == f"http://[::1]:8080/v1/chat/completions?api_key={REDACTED}"


# ---- JSON bodies -------------------------------------------------------------


def test_body_redacts_secret_fields_at_any_depth():
    doc = {
        "model": "m",
        "api_key": SECRET,
        "apiKey": SECRET,
        "password": SECRET,
        "metadata": {"token": SECRET, "user_id": "u-1", "deep": [{"access_token": SECRET, "keep": 1}]},
        "messages": [{"role": "user", "content": "hi", "extra": {"secret": SECRET}}],
    }
    out = redact.body(doc)
    assert SECRET not in repr(out)
    assert out["api_key"] == REDACTED
    assert out["apiKey"] == REDACTED
    assert out["password"] == REDACTED
    assert out["metadata"]["token"] == REDACTED
    assert out["metadata"]["user_id"] == "u-1"
    assert out["metadata"]["deep"] == [{"access_token": REDACTED, "keep": 1}]
    assert out["messages"] == [{"role": "user", "content": "hi", "extra": {"secret": REDACTED}}]


def test_body_keeps_ordinary_fields():
    doc = {
        "model": "gpt-4o",
        "max_tokens": 1024,
        "max_completion_tokens": 2048,
        "usage": {"input_tokens": 10, "output_tokens": 20, "prompt_tokens": 3, "completion_tokens": 4},
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "Bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "stream": True,
        "temperature": 0.2,
    }
    assert redact.body(doc) == doc


def test_body_redacts_a_whole_subtree_under_a_secret_name():
    out = redact.body({"credentials": {"user": "alice", "pass": SECRET}, "auth": [SECRET]})
    assert out == {"credentials": REDACTED, "auth": REDACTED}


def test_body_does_not_mutate_its_input():
    doc = {"metadata": {"token": SECRET}, "list": [{"password": SECRET}]}
    redact.body(doc)
    assert doc == {"metadata": {"token": SECRET}, "list": [{"password": SECRET}]}


def test_body_passes_scalars_and_empty_secrets_through():
    assert redact.body("plain") == "plain"
    assert redact.body(3) == 3
    assert redact.body(None) is None
    # An empty secret field states nothing worth hiding; keeping it keeps the record faithful.
    assert redact.body({"api_key": "", "token": None}) == {"api_key": "", "token": None}


@pytest.mark.parametrize("name", ["authToken", "refreshToken", "clientSecret", "secret_key", "aws_secret_access_key"])
def test_body_redacts_compound_secret_names(name):
    assert redact.body({name: SECRET}) == {name: REDACTED}


@pytest.mark.parametrize(
    "name",
    ["apiKey", "api_key", "API_KEY", "x-api-key", "accessToken", "access_token", "session_key", "privateKey"],
)
def test_is_secret_name_accepts_common_spellings(name):
    assert redact.is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "input_tokens", "content", "tool_call_id", "model", "author", "keyboard", "monkey", "tokens"],
)
def test_is_secret_name_rejects_ordinary_names(name):
    assert not redact.is_secret_name(name)


@given(st.recursive(st.integers() | st.text(max_size=5), lambda c: st.lists(c, max_size=3), max_leaves=10))
def test_body_is_identity_without_dicts(doc):
    assert redact.body(doc) == doc


# ---- free text ---------------------------------------------------------------


def test_text_redacts_bearer_tokens():
    out = redact.text(f"Authorization: Bearer {SECRET}\nnext line")
    assert SECRET not in out
    assert out == f"Authorization: Bearer {REDACTED}\nnext line"


def test_text_redacts_bearer_case_insensitively():
    out = redact.text(f"authorization: bearer {SECRET}")
    assert SECRET not in out


def test_text_redacts_sk_keys():
    key = "sk-proj-AbCdEf0123456789_xyz"
    out = redact.text(f"using key {key} for the call")
    assert key not in out
    assert out == f"using key {REDACTED} for the call"


def test_text_redacts_anthropic_style_keys():
    key = "sk-ant-api03-AbCdEf0123456789"
    assert key not in redact.text(f"x={key}")


def test_text_redacts_json_like_secret_fields():
    out = redact.text(f'not json {{"api_key": "{SECRET}", "model": "m"}}')
    assert SECRET not in out
    assert f'"api_key": "{REDACTED}"' in out
    assert '"model": "m"' in out


def test_text_keeps_ordinary_text():
    value = "ask-me anything; risk-free; the token budget is 100; bearer of news"
    assert redact.text(value) == value


def test_the_text_prefilter_folds_case_as_the_re_module_does():
    """text() runs its secret pattern only on a string that holds one of its marks, in lower case.
    The pattern is case-insensitive in places, and the re module's case folding matches a few
    characters besides A-Z to ASCII letters (the Kelvin sign to k, the long s to s, ...): each
    must fold to that letter before the marks are looked for, or a secret spelled with one
    would be missed."""
    import re
    import sys

    from native_bridge.records.redact import _CASE_FOLD

    letter = re.compile(r"(?i)[a-z]")
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        if not letter.fullmatch(c):
            continue
        matched = [x for x in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(f"(?i){x}", c)]
        assert matched == [c.translate(_CASE_FOLD).lower()], (hex(cp), matched)


@pytest.mark.parametrize(
    "secret",
    [
        "Authorization: Bearer abcdefghijklmnop1234",
        "use BA\u017fIC dXNlcjpwYXNzd29yZDEyMw== here",  # a long s: the pattern's (?i) matches it as s
        "KELVIN: \u212aey sk-proj-4fJ9aB2cD3eF4gH5 inside",
        "x-\u0130api? no: X-API-KEY: 0123456789abcdef0123",
        "token ghp_abcdefghijklmnop1234 and AKIAABCDEFGHIJKLMNOP",
        "jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f",
        "cookie: session=abcdef0123456789",
    ],
)
def test_text_with_the_prefilter_redacts_what_the_pattern_alone_does(secret):
    from native_bridge.records.redact import _TEXT_SECRETS, _may_hold_secret, text

    padded = "ordinary output line\n" * 200 + secret + "\nmore output → done\n" * 50
    assert _TEXT_SECRETS.search(padded) and _may_hold_secret(padded)
    assert "<redacted>" in text(padded)


def test_remembered_texts_give_what_text_gives_within_their_budget():
    from native_bridge.records.redact import Texts, text

    texts = Texts(budget=40_000, least=10)
    values = [f"line {i}: Authorization: Bearer abcdefghijklmnop{i:04}\n" + "output " * (i % 50) for i in range(400)]
    for round_ in range(3):
        for v in values[: 100 + 100 * round_]:  # a history, one round longer each time
            assert texts(v) == text(v)
            assert texts._size <= texts.budget
    assert texts._seen and all(texts._seen[k] == text(k) for k in texts._seen)
    assert texts._size == sum(len(k) + len(v) for k, v in texts._seen.items())
    huge = "x" * 20_000  # over a quarter of the budget: not kept
    assert texts(huge) == text(huge) and huge not in texts._seen
