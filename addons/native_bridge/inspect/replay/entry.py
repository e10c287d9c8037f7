"""One request of a capture as offline replay holds it: what the bridge saw and what became of it.

A chat request carries its original body and the recorded steps; a planner-hop send carries its
:class:`.planner.PlannerCase` and, to rebuild the chat hop's evidence, the chat requests of the
same sources (filled in by :func:`.sources.read_sources`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...core.pipeline import Config
from ...records import redact
from . import planner as planner_replay


@dataclass(slots=True)
class Entry:
    """One request the bridge saw, as recorded: the original and what became of it."""

    source: str  # file (and flow id) it came from
    flow_id: str
    time: str
    method: str
    url: str
    status: str
    reason: str
    dialect: str | None
    before: bytes | None  # the original body (redacted when it comes from a record)
    after: dict[str, Any] | None
    steps: list[dict[str, Any]]
    accounting: list[dict[str, Any]] | None  # None: not known (a flow file holds no accounting)
    conversation: str | None
    summary: dict[str, Any] = field(default_factory=dict)
    redacted: bool = True
    client_hint: str | None = None  # the User-Agent the addon passed to the core (it names the client)
    context: list[dict[str, Any]] | None = None  # a WebSocket frame's server-held calls (chat_hop/websocket.py)

    planner: PlannerSend | None = None  # a planner-hop send: re-checked by planner.py

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"


@dataclass(slots=True)
class PlannerSend:
    """A SendUserCascadeMessage the planner hop saw, and the chat requests of the same sources."""

    case: planner_replay.PlannerCase
    chats: list[Entry] = field(default_factory=list)
    _seen: dict[int, list[Any]] = field(default_factory=dict)

    def evidence(self, time: str, config: Config) -> planner_replay.StoreEvidence:
        """What the chat hop had observed when this send was made (chat requests up to its time)."""
        seen = []
        for chat in self.chats:
            if chat.before is None or chat.time > time:
                continue
            if id(chat) not in self._seen:
                hint = getattr(chat, "client_hint", None)  # the User-Agent the addon saw, when the entry has it
                self._seen[id(chat)] = planner_replay.observations_of(chat.before, config, chat.path, hint)
            seen += self._seen[id(chat)]
        return planner_replay.evidence(seen)


def planner_entry(case: planner_replay.PlannerCase, rec: dict[str, Any], source: str) -> Entry:
    return Entry(
        source=source,
        flow_id=str(rec.get("flow_id")),
        time=str(rec.get("time", "")),
        method=str(rec.get("method", "")),
        url=redact.url(str(rec.get("url", ""))),
        status=case.status,
        reason=case.reason,
        dialect=planner_replay.DIALECT,
        before=None,
        after=None,
        steps=case.steps_after or [],
        accounting=None,
        conversation=f"cascade {case.cascade_id}" if case.cascade_id else None,
        summary={"steps_in": case.steps_in, "steps_out": case.steps_out, "delta_start": case.delta_start},
        redacted=case.redacted,
        planner=PlannerSend(case),
    )
