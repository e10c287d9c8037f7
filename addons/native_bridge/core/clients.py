"""Which client sent a request: a client's words count only for that client (truth rule 3).

Every client frames its tool results in its own words, and the program's own output can
print any of those words. So a frame is read only for the client that writes it: the
exit-status rules (rules/exit_frames.py) and the success wordings of non-shell tools
(rules/success_evidence.py) each name the clients they belong to. A client that cannot be
identified gets every known exit-status frame read at its place, and no client's
success wording (exitstatus.py says how; truth rules 3 and 5).

A client is identified from what the request itself carries, never from a tool result
(a result's text is what a program can forge):

1. the ``User-Agent`` header, when it names the client (the shell passes it in);
2. the tools the request declares: a set of names (and, where names are shared, the
   parameters of one of them) that only that client declares together.

Clients that share their tool code share a *family* (Gemini CLI and its fork Qwen Code;
opencode and its fork Kilo CLI): a rule may name a family instead of each member. The
clients are a table, rules/clients.py; core/rules/CLIENTS.md, "Clients", is generated from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .rules.clients import CLIENTS
from .rules.types import Client

# The table (rules/clients.py) by id.
BY_ID: Mapping[str, Client] = {c.id: c for c in CLIENTS}


def counts_for(client: str | None, names: Iterable[str]) -> bool:
    """Whether a rule that names ``names`` (client ids or families) counts for ``client``."""
    # mutation: frames-count-for-every-client
    if client is None:
        return False
    c = BY_ID.get(client)
    family = c.family if c else client
    return any(n in (client, family) for n in names)


def _declared(body: Mapping[str, Any]) -> dict[str, frozenset[str] | None]:
    """The tools a request declares: name → its parameter names (None when not an object schema)."""
    tools = body.get("tools")
    out: dict[str, frozenset[str] | None] = {}
    if not isinstance(tools, list):
        return out
    for t in tools:
        if not isinstance(t, dict):
            continue
        wrapped = t.get("function")
        fn: dict[str, Any] = wrapped if isinstance(wrapped, dict) else t  # Chat wraps it in "function"
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        schema = fn.get("parameters", fn.get("input_schema"))
        props = schema.get("properties") if isinstance(schema, dict) else None
        out[name] = frozenset(props) if isinstance(props, dict) else None
    return out


_SIG = re.compile(r"(?P<name>[^()!]+)(?:\((?P<params>[^)]*)\))?(?P<only>!)?")


def _fits(signature: frozenset[str], declared: dict[str, frozenset[str] | None]) -> bool:
    for entry in signature:
        m = _SIG.fullmatch(entry)
        if m is None or m["name"] not in declared:
            return False
        if m["params"] is not None and declared[m["name"]] != frozenset(p for p in m["params"].split(",") if p):
            return False
        if m["only"] and len(declared) != 1:  # "!": the request declares no other tool
            return False
    return True


def identify(user_agent: str | None, body: Mapping[str, Any] | None) -> str | None:
    """The id of the client that sent ``body`` with ``user_agent``; None when it cannot be told.

    The user agent decides when it names a client; otherwise the declared tools, when
    exactly one client's signature fits them."""
    if user_agent:
        for c in CLIENTS:
            if c.user_agent is not None and c.user_agent.match(user_agent):
                return c.id
    if not isinstance(body, Mapping):
        return None
    declared = _declared(body)
    if not declared:
        return None
    fits = {c.id for c in CLIENTS if any(_fits(sig, declared) for sig in c.tools)}
    return fits.pop() if len(fits) == 1 else None
