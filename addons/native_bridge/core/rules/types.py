"""The record types the tables are made of, and the few names they share."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

# code: the rule states the number; success: the client states success (0);
# failed: a failure with no number (encoded as 1); running: no outcome yet;
# not_run: the command never ran (rejected, denied, invalid); conflict: the client's signals
# disagree; declined: a number is stated that the step cannot carry or the rules do not read
# for this client (both no claim: the code stays absent, never 1).
Verdict = Literal["code", "success", "failed", "running", "not_run", "conflict", "declined", "unknown"]
Where = Literal["json", "header", "trailer", "first", "last"]

ANY = "*"  # a rule's clients: the generic families; as a reader: every frame (the screen)
CODE = r"(?P<code>-?\d{1,19})"  # an exit code in a frame; wider than int32: an out-of-range code is still a failure


@dataclass(frozen=True, slots=True)
class Client:
    id: str
    name: str
    family: str  # rules name a client by its id or by its family
    user_agent: re.Pattern[str] | None  # matched at the start of the User-Agent header
    # Tool-set signatures: the request declares every name of one of them. A name may carry
    # the parameters its schema must declare ("bash(command)" : a tool "bash" whose
    # parameters are exactly {"command"}).
    tools: tuple[frozenset[str], ...]
    source: str  # where the user agent and tool names were read


@dataclass(frozen=True, slots=True)
class Rule:
    """One exit-status frame of a shell result (exit_frames.py)."""

    name: str
    client: str  # who writes this frame, in words (README)
    source: str  # where the format is defined (repository and path)
    where: tuple[Where, ...]  # the places it counts at
    pattern: re.Pattern[str]  # matched against one whole stripped line
    verdict: Verdict
    examples: tuple[str, ...]  # realistic results, each tested in tests/test_exitstatus_clients.py
    clients: tuple[str, ...] = ()  # the clients (ids or families, clients.py) for which the frame counts
    flag: bool | None = None  # True: the client writes it only on a result it flags as an error

    def scoped(self, clients: tuple[str, ...], flag: bool | None = None) -> Rule:
        return replace(self, clients=clients, flag=flag)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One client's own words for a non-shell tool's success (truth rule 5)."""

    name: str
    kind: str
    clients: tuple[str, ...]  # ids or families (clients.py)
    tool: str  # the client's tool name, for the README
    pattern: re.Pattern[str]  # matched at the start of the result
    source: str
    example: str  # a real result, tested in tests/test_clients.py
    file_created: bool | None = None  # write_to_file: what the wording says (None: it does not say)
    # list_directory: one entry line of the listing after the matched header; group "name".
    entry: re.Pattern[str] | None = None
    # The dialect's explicit "not an error" is the client's own success channel (Gemini API
    # ``{"output": …}`` against ``{"error": …}``): with it, the result needs no words.
    unflagged: bool = False


@dataclass(frozen=True, slots=True)
class Envelope:
    """A client's (or its framework's) words around an error a tool call raised (envelopes.py): a
    failure flag in words, the way ``[tool error]`` is one."""

    name: str
    client: str  # who writes it, in words (README)
    source: str  # where the format is defined (repository and path)
    # Matched against the whole result (stripped). Its group ``inner``, if any, is the error it
    # wraps; without one the result is a JSON object and the inner text is its ``inner_key``.
    pattern: re.Pattern[str]
    examples: tuple[str, ...]  # realistic results, each tested in tests/test_exitstatus_words.py
    clients: tuple[str, ...] = ()  # ids or families it counts for by name; every one counts for a client we cannot name
    inner_key: str | None = None


# The ways a client's shell tool can end (issue 39 item 1), each a column of EXIT_STATUS.md's path
# tables: every client has a row for each, or says why it has none (paths.py, NONE).
PathKind = Literal[
    "success",
    "non-zero exit",
    "signal",
    "timeout",
    "inactivity",
    "cancelled",
    "not run",
    "spawn error",
    "truncated",
    "background",
    "error envelope",
]
# What a result states under truth rule 3: a number; "absent" (no number, no failure); "failed" (a
# failure with no number: 1, or the pair stays a message with its flag); "running", "not_run" (no step).
States = int | Literal["absent", "failed", "running", "not_run"]


@dataclass(frozen=True, slots=True)
class ResultPath:
    """One way a client's shell tool writes its result (paths.py), with where and since when."""

    id: str  # the research row (tests/fixtures/paths/clients-*.md) or the client's own; its example has this id
    client: str  # an id of clients.py
    tool: str
    path: PathKind
    versions: str
    source: str  # repository and path (function) where the text is written
    states: States  # the truth (rule 3)
    reads: States | None = None  # what the bridge states instead, a gap left (note says why); None: the truth
    unnamed: States | None = None  # read as a client we cannot name, where that differs (note says why)
    note: str = ""
