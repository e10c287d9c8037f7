"""The neutral tool history every dialect reader produces and the builder consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# How a turn (a message, or an input item) takes part in the tool history.
# "calls": it carries tool calls; "results": it carries tool results and nothing
# that would end a tool round; "other": anything else (user text, assistant text);
# "more": calls that go on the model response of the calls turn before the results
# turn before it (Responses: calls and outputs interleave), one round with it.
TurnRole = Literal["calls", "results", "other", "more"]


# Calls and results (and the builder's placements and tallies, the memo's marks, the readers'
# cursors) are never changed once made, yet not frozen: a frozen dataclass takes about four times
# as long to make (one object.__setattr__ per field), and a resumed turn makes some twenty (BENCH.md).
@dataclass(slots=True)
class ToolCall:
    pos: int  # order of this call among all calls and results of the history
    turn: int  # index of the turn that carries it
    id: str | None
    name: str
    # Decoded arguments; None when the client's arguments could not be decoded.
    arguments: dict[str, Any] | None


@dataclass(slots=True)
class ToolResult:
    pos: int
    turn: int
    call_id: str | None
    # The result as text; None when it holds something text cannot carry (images).
    text: str | None
    # The client's own error flag (Anthropic is_error); None when the dialect has none.
    is_error: bool | None = None
    # An exit code the dialect carries as data (Responses shell_call_output); wins over text.
    exit_code: int | None = None
    # The client wrote a stand-in for an output it never got (Codex: "aborted"): no observation.
    placeholder: bool = False


@dataclass(slots=True)
class History:
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    turns: list[TurnRole] = field(default_factory=list)
    # The client that sent the request (an id of clients.py), None when it cannot be told:
    # its results are read in its own words only (truth rule 3).
    client: str | None = None
