"""Redaction keeps prose intact (issue 12): secrets are found by their shape and their place.

Real system prompts and tool descriptions talk about auth, tokens, passwords and keys all the
time; a record that rewrites "basic searches" into "basic <redacted>" is no longer the request
the planner got. Every text here must pass through redaction unchanged, and so must tool
definitions whose parameters are named like credentials. The planted-secret tests
(tests/test_redact.py, tests/test_secrets.py) keep proving that real secrets still go.
"""

from __future__ import annotations

import copy

import pytest
from native_bridge.records import redact

REDACTED = redact.REDACTED

CLAUDE_CODE_GREP = """A powerful search tool built on ripgrep

Usage:
- ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command.
- Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+")
- Filter files with glob parameter (e.g., "*.js", "**/*.tsx") or type parameter (e.g., "js", "py", "rust")
- Output modes: "content" shows matching lines, "files_with_matches" shows only file paths (default)
- Use Task tool for open-ended searches requiring multiple rounds
- Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use `interface\\{\\}` to find
  `interface{}` in Go code)
- For basic searches, prefer this tool over running find or grep yourself; it respects .gitignore."""

CLAUDE_CODE_SYSTEM = """You are an interactive CLI tool that helps users with software engineering tasks.
IMPORTANT: Assist with defensive security tasks only. Refuse to create, modify, or improve code that may be
used maliciously. Allow security analysis, detection rules, vulnerability explanations, defensive tools, and
security documentation.

# Tone and style
You should be concise, direct, and to the point. Keep your output within token limits: answer in fewer than
4 lines unless the user asks for detail. Never print an API key, password or access token that you read from
a file; refer to it by the variable that holds it instead (e.g. "the value of OPENAI_API_KEY").

# Following conventions
When making changes to files, first understand the file's code conventions. Mimic code style, use existing
libraries and utilities, and follow existing patterns. Never introduce code that exposes or logs secrets and
keys. Never commit secrets or keys to the repository.

# Doing tasks
- Use the available search tools to understand the codebase and the user's query. Basic primitives like
  Glob, Grep and Read are cheap: use them in parallel.
- If the login form has a password field, do not prefill it in tests; use the fixtures in tests/auth.
- Bearer authentication is configured in src/server/middleware.ts; basic auth is only enabled in development."""

CODEX_SHELL = """Runs a shell command and returns its output.
- The arguments to `shell` will be passed to execvp(). Most terminal commands should be prefixed with
  ["bash", "-lc"].
- Always set the `workdir` param when using the shell function. Do not use `cd` unless absolutely necessary.
- Commands that need network access (package installs, API calls with a bearer token from the environment)
  require with_escalated_permissions; explain why in `justification`.
- Authorization: required for commands that write outside the workspace. Ask the user first."""

API_KEY_SETUP = """## API key setup instructions

1. Open the dashboard and choose Settings, then API keys.
2. Create a key. Keys are shown once; store the key in your password manager.
3. Export it: `export ANTHROPIC_API_KEY=<your key>` (never paste the key itself into a chat).
4. Requests send it in the x-api-key header; the gateway also accepts Authorization with a Bearer token.
5. Token limits: each key has a per-minute token budget; the response headers report the remaining tokens.
6. Rotate keys every 90 days. A leaked key must be revoked at once.

Cookie: the session cookie is httpOnly and is refreshed by the server.
Basic troubleshooting: a 401 means the key is missing or revoked; a 429 means you hit the token limit."""

GEMINI_SYSTEM = """You are an interactive CLI agent specializing in software engineering tasks.
# Core Mandates
- Conventions: Rigorously adhere to existing project conventions when reading or modifying code.
- Libraries/Frameworks: NEVER assume a library/framework is available or appropriate.
- Security First: Always apply security best practices. Never introduce code that exposes, logs, or commits
  secrets, API keys, or other sensitive information. Treat tokens, credentials and private keys as secret.
- Basic operations such as listing a directory or reading a file do not need confirmation.
- When the user asks to "reset the password", explain how the password reset flow works before editing."""

OPENCODE_WEBFETCH = """- Fetches content from a specified URL
- Takes a URL and a format as input; fetches the URL content, converts HTML to markdown
- Use this tool when you need to retrieve and analyze web content
- Usage notes:
  - IMPORTANT: if another tool is present that offers better web fetching capabilities, use that one.
  - The URL must be a fully-formed valid URL; HTTP URLs are upgraded to HTTPS
  - This tool is read-only and does not modify any files
  - Pages behind basic authentication or an OAuth bearer login cannot be fetched
  - Results may be summarized if the content is very large; scikit-learn's sk-learn-compat docs are large"""

PROSE = {
    "claude-code-grep": CLAUDE_CODE_GREP,
    "claude-code-system": CLAUDE_CODE_SYSTEM,
    "codex-shell": CODEX_SHELL,
    "api-key-setup": API_KEY_SETUP,
    "gemini-system": GEMINI_SYSTEM,
    "opencode-webfetch": OPENCODE_WEBFETCH,
    "short-phrases": "basic searches; basic primitives; Basic Authentication; bearer of news; Bearer tokens; "
    "the token budget; password field; api key setup; Authorization: required. Cookie: none",
}


@pytest.mark.parametrize("name", list(PROSE))
def test_prose_passes_through_unchanged(name: str) -> None:
    assert redact.text(PROSE[name]) == PROSE[name]


def anthropic_tools() -> list[dict]:
    return [
        {"name": "Grep", "description": CLAUDE_CODE_GREP, "input_schema": {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "The regular expression pattern to search for"},
        }, "required": ["pattern"]}},
        {"name": "login", "description": "Log in to the staging site with basic auth.", "input_schema": {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "Account name"},
                "password": {"type": "string", "description": "The password field's value, from the vault"},
                "token": {"type": "string", "description": "An access token, when the site uses bearer auth"},
                "api_key": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "An API key"},
                "credentials": {"type": "object", "properties": {"secret": {"type": "string"}}},
            },
            "required": ["username"],
        }},
    ]  # fmt: skip


def test_request_bodies_with_prompts_and_credential_named_parameters_pass_unchanged() -> None:
    bodies = [
        {"model": "claude-sonnet-4-5", "system": CLAUDE_CODE_SYSTEM, "tools": anthropic_tools(), "messages": []},
        {
            "model": "gpt-5-codex",
            "instructions": CODEX_SHELL,
            "tools": [
                {"type": "function", "name": "shell", "description": CODEX_SHELL, "parameters": {
                    "type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                }},
            ],
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": API_KEY_SETUP}]}],
        },
        {"model": "gpt-4.1", "messages": [{"role": "system", "content": GEMINI_SYSTEM}], "tools": [
            {"type": "function", "function": {"name": "webfetch", "description": OPENCODE_WEBFETCH, "parameters": {
                "type": "object", "properties": {"url": {"type": "string"}, "token": {"type": "string"}},
            }}},
        ]},
    ]  # fmt: skip
    for doc in bodies:
        assert redact.body(copy.deepcopy(doc)) == doc


@pytest.mark.parametrize(
    "text, secret",
    [
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl", "eyJhbGciOiJI"),
        ("curl -u x -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://h", "dXNlcjpwYXNzd29yZA=="),
        ("token ghp_0123456789abcdefABCDEF0123456789abcd in the log", "ghp_0123456789abcdef"),
        ("pat github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11AAAAAAA"),
        ("aws AKIAIOSFODNN7EXAMPLE key", "AKIAIOSFODNN7EXAMPLE"),
        ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
        ("gitlab glpat-AbCdEf0123456789xyz", "glpat-AbCdEf0123456789"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl alone", "eyJhbGciOiJI"),
        ("x-api-key: sk-ant-api03-AbCdEf0123456789", "sk-ant-api03"),
        ("Authorization: required; use Bearer AbCdEf0123456789xyz", "AbCdEf0123456789xyz"),
        ("Cookie: session=0123456789abcdef; theme=dark", "session=0123456789abcdef"),
        ("bearer abcdefghijklmnop", "abcdefghijklmnop"),
    ],
)
def test_secrets_are_found_by_their_shape_and_place(text: str, secret: str) -> None:
    out = redact.text(text)
    assert secret not in out and REDACTED in out


def test_a_credential_field_with_a_value_is_still_redacted_whole() -> None:
    doc = {"metadata": {"api_key": "sk-live-0123456789", "token": "plain-looking", "password": "hunter2"}}
    assert redact.body(doc) == {"metadata": {"api_key": REDACTED, "token": REDACTED, "password": REDACTED}}
    # an object under a credential name that is not a parameter schema is redacted whole, as before
    assert redact.body({"credentials": {"user": "alice", "pass": "x"}}) == {"credentials": REDACTED}
