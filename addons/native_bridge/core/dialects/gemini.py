"""The Gemini API (``…/models/<model>:generateContent`` and ``:streamGenerateContent``):
``functionCall`` parts in ``model`` contents, ``functionResponse`` parts in user contents.

As Gemini CLI sends them (packages/core/src/utils/generateContentResponseUtilities.ts,
convertToFunctionResponse; scheduler/): ``{"functionCall": {"id", "name", "args"}}`` and
``{"functionResponse": {"id", "name", "response": {"output": text}}}``, or
``{"response": {"error": text}}`` for a failed or cancelled call. Older Gemini CLI
releases and other clients send no ``id``: without one nothing is correlated (truth
rule 1), the pairs stay contents. ``{"error": …}`` is the dialect's error flag
(``is_error``). A cancelled call (``[Operation Cancelled] …``) is the client's stand-in,
not an observation. A response that is not exactly one text ``output`` or ``error``
(binary parts nested or beside it, a structured object) is not text.

The writer keeps the request valid for the API: no content without parts; contents a
removal brings together are merged (Gemini CLI itself coalesces same-role neighbours
before sending, or the API answers 400); ``thought`` parts of a model content whose
calls all became steps go with them. A ``thoughtSignature`` belongs to the part that
carries it: Gemini 3 rejects an active loop whose model content's first function call
has none, so a stepped call whose part carries one is pinned unless its whole content
goes. A request that ended on the user's content never ends on a model content.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..history import History, ToolCall, ToolResult, TurnRole
from . import Cursor, DialectError, Output, opt_str

NAME = "gemini"
ITEMS = "contents"
MARKERS = (b"functionCall", b"functionResponse")

CANCELLED = "[Operation Cancelled]"
PIN_SIGNATURE = "its part carries the turn's thoughtSignature and its content stays: the API needs them together"
PIN_END = "taking it out would leave the request ending on a model content, not on the user's"


def _parts(
    contents: Any, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, dict[str, Any], list[dict[str, Any]]]]:
    if not isinstance(contents, list):
        raise DialectError("'contents' is not a list")
    for i in range(start, len(contents) if stop is None else stop):
        c = contents[i]
        if not isinstance(c, dict):
            raise DialectError(f"content {i} is not an object")
        parts = c.get("parts")
        if parts is None:
            parts = []
        if not isinstance(parts, list):
            raise DialectError(f"content {i}: 'parts' is not a list")
        for j, p in enumerate(parts):
            if not isinstance(p, dict):
                raise DialectError(f"content {i}: part {j} is not an object")
        yield i, c, parts


def _is_call(c: dict[str, Any], p: dict[str, Any]) -> bool:
    return c.get("role") == "model" and isinstance(p.get("functionCall"), dict)


def _is_result(c: dict[str, Any], p: dict[str, Any]) -> bool:
    return c.get("role") != "model" and isinstance(p.get("functionResponse"), dict)


def _response(fr: dict[str, Any], binary_beside: bool) -> tuple[str | None, bool, bool]:
    """(text, error flag, the client's stand-in) of one functionResponse."""
    response = fr.get("response")
    if binary_beside or fr.get("parts") or not isinstance(response, dict):
        return None, False, False
    if set(response) == {"output"} and isinstance(response["output"], str):
        return response["output"], False, False
    error = response.get("error")
    if isinstance(error, str) and error.startswith(CANCELLED):
        return error, True, True  # cancelled, with or without what it printed first: no outcome
    if set(response) == {"error"} and isinstance(error, str):
        return error, True, False
    return None, False, False


def read(body: dict[str, Any]) -> History:
    h = History()
    read_items(body.get(ITEMS), Cursor(), h)
    return h


def read_items(contents: Any, at: Cursor, h: History, stop: int | None = None) -> Cursor:
    """Read ``contents[at.index:stop]`` into ``h``, continuing from ``at``; where it stopped.

    One content is one turn. A user content with function responses and text (Gemini CLI
    coalesces a function response content with the prompt after it) is the user speaking:
    it ends the round."""
    pos = at.pos
    end = at.index
    for i, c, parts in _parts(contents, at.index, stop):
        end = i + 1
        role: TurnRole = "other"
        spoke = False
        for j, p in enumerate(parts):
            if _is_call(c, p):
                role = "calls"
                fc = p["functionCall"]
                args = fc.get("args")
                h.calls.append(
                    ToolCall(
                        pos,
                        i,
                        opt_str(fc.get("id")),
                        opt_str(fc.get("name")) or "",
                        args if isinstance(args, dict) else None,
                    )
                )
                pos += 1
            elif _is_result(c, p):
                role = "results" if role != "calls" else role
                fr = p["functionResponse"]
                nxt = parts[j + 1] if j + 1 < len(parts) else None
                beside = nxt is not None and ("inlineData" in nxt or "fileData" in nxt)
                text, flagged, standin = _response(fr, beside)
                h.results.append(ToolResult(pos, i, opt_str(fr.get("id")), text, flagged, placeholder=standin))
                pos += 1
            elif c.get("role") != "model" and isinstance(p.get("text"), str) and p["text"].strip():
                spoke = True
        h.turns.append("other" if role == "results" and spoke else role)
    return Cursor(end, pos, end)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, "parts": list(a.get("parts") or []) + list(b.get("parts") or [])}


def write(body: dict[str, Any], stepped: frozenset[int]) -> list[Any]:
    out = Output([], 0)
    write_items(body.get(ITEMS), 0, stepped, out)
    return out.items


def write_items(contents: Any, start: int, stepped: Collection[int], out: Output, stop: int | None = None) -> None:
    """Write ``contents[start:stop]`` onto ``out``, continuing from its state."""
    items, pos = out.items, out.pos
    dropped, gap, pins = out.dropped, out.gap, out.pins  # merge only neighbours that a removal brought together
    for i, c, parts in _parts(contents, start, stop):
        owned = {}
        for j, p in enumerate(parts):
            if _is_call(c, p) or _is_result(c, p):
                owned[j] = pos
                pos += 1
        gone = {j for j, p in owned.items() if p in stepped}
        if gone:
            # Thoughts (Gemini CLI strips them before sending; other clients may not) go with
            # the calls when nothing else of the content stays.
            whole = all(j in gone or parts[j].get("thought") is True for j in range(len(parts)))
            if not whole:
                for j in gone:
                    if _is_call(c, parts[j]) and "thoughtSignature" in parts[j]:
                        pins[owned[j]] = (PIN_SIGNATURE, i)
                keep = [p for j, p in enumerate(parts) if j not in gone]
            else:
                keep = []
            if not keep:
                dropped = True
                gap += tuple(owned[j] for j in sorted(gone) if _is_result(c, parts[j]))
                continue
            c = {**c, "parts": keep}
        if dropped and items and items[-1].get("role") == c.get("role"):
            items[-1] = _merge(items[-1], c)
        else:
            items.append(c)
        dropped, gap = False, ()
    out.pos, out.dropped, out.gap = pos, dropped, gap


def end_pins(contents: Any, out: Output) -> dict[int, tuple[str, int]]:
    """A request that ended on the user's content must not end on a model content (or on none)."""
    if not out.gap or not isinstance(contents, list) or not contents:
        return {}
    last = contents[-1]
    if not isinstance(last, dict) or last.get("role") == "model":
        return {}
    if out.items and out.items[-1].get("role") != "model":
        return {}
    return {out.gap[-1]: (PIN_END, len(contents))}
