"""Which tool is which step kind: by its name (rules/tool_names.py, the bridge_tools option), and
for a shell tool no name maps, by the shape of the schema the request declares for it (issue 39
item 7; rules/shell_shapes.py says what a shell tool's schema looks like, and why).

A request's declarations make its tool table: the configured table with each shell-shaped tool
added, as a :class:`ToolKinds` that also says which tools it took by shape and why (the builder
puts that in the accounting). Pure: it reads a request body's ``tools``, in every dialect's form.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .rules.shell_shapes import CODE_PARAMS, COMMAND_PARAMS, SHELL_LANGUAGES, SHELL_WORDS, STEERING

SHELL_KIND = "run_command"


class NotAShellCall(Exception):
    """A call of a language + code tool whose language is no shell's: its code is no command line."""


@dataclass(frozen=True, slots=True)
class Shape:
    """A declared tool that is a shell tool by its schema."""

    form: Literal["command", "code"]  # a command line parameter, or a language + code pair
    param: str  # the parameter that holds the command line
    why: str  # for the accounting: what in the schema made it a shell tool

    def arguments(self, tool: str, args: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """A call's arguments as the shell step reads them (``command``). The code of a call whose
        language is no shell's is no command line: :class:`NotAShellCall`, the pair stays a message."""
        if self.form == "command" or args is None:
            return args
        language = args.get(CODE_PARAMS[0])
        if not isinstance(language, str) or language.strip().lower() not in SHELL_LANGUAGES:
            raise NotAShellCall(
                f"tool {tool!r} runs code; language {language!r} is not a shell, and no command line is made "
                "from code in another language"
            )
        rest = {k: v for k, v in args.items() if k not in CODE_PARAMS}
        return {**rest, "command": args.get(CODE_PARAMS[1])}


class ToolKinds(dict[str, str]):
    """A tool table (name → step kind) with the tools a request's declarations map by shape, and
    the names the operator unmapped (bridge_tools ``name=``: no shape maps them either)."""

    __slots__ = ("off", "shaped")

    def __init__(
        self, table: Mapping[str, str], shaped: Mapping[str, Shape] | None = None, off: frozenset[str] = frozenset()
    ) -> None:
        super().__init__(table)
        self.shaped: dict[str, Shape] = dict(shaped or {})
        self.off = off

    def __eq__(self, other: object) -> bool:
        return (
            dict.__eq__(self, other) is True
            and getattr(other, "shaped", {}) == self.shaped
            and getattr(other, "off", frozenset()) == self.off
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __reduce__(self) -> tuple[type[ToolKinds], tuple[dict[str, str], dict[str, Shape], frozenset[str]]]:
        return (ToolKinds, (dict(self), self.shaped, self.off))


def shape_of(tool_kinds: Mapping[str, str], name: str) -> Shape | None:
    """The shape ``tool_kinds`` took the tool ``name`` by; None: by its name, or not at all."""
    shaped = getattr(tool_kinds, "shaped", None)
    return shaped.get(name) if shaped else None


def for_request(tool_kinds: Mapping[str, str], body: Mapping[str, Any]) -> Mapping[str, str]:
    """The tool table for a request: ``tool_kinds`` (without the shapes of another request) with
    the shell-shaped tools ``body`` declares that no name maps. ``tool_kinds`` itself when it is
    already that table (the common case: nothing declared by shape)."""
    shaped = getattr(tool_kinds, "shaped", None) or {}
    off: frozenset[str] = getattr(tool_kinds, "off", frozenset())
    base = {k: v for k, v in tool_kinds.items() if k not in shaped} if shaped else tool_kinds
    found = dict(_shapes(body, base, off))
    if found == shaped:
        return tool_kinds
    if not found:
        return ToolKinds(base, None, off) if off else base
    return ToolKinds({**base, **dict.fromkeys(found, SHELL_KIND)}, found, off)


def _declarations(body: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, parameters schema) of each function tool ``body`` declares: Chat's
    ``{"function": {…}}``, Anthropic's ``input_schema``, Responses' flat tools, Gemini's
    ``functionDeclarations``."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return
    for t in tools:
        if not isinstance(t, dict):
            continue
        decls = t.get("functionDeclarations", t.get("function_declarations"))
        for fn in decls if isinstance(decls, list) else [t.get("function", t)]:
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                schema = fn.get("parameters", fn.get("input_schema", fn.get("parametersJsonSchema")))
                yield fn["name"], schema


def _shapes(body: Mapping[str, Any], base: Mapping[str, str], off: frozenset[str]) -> Iterator[tuple[str, Shape]]:
    for name, schema in _declarations(body):
        if name not in base and name not in off:
            found = shape(schema)
            if found is not None:
                yield name, found


def _string(spec: Any) -> bool:
    return isinstance(spec, dict) and isinstance(spec.get("type"), str) and spec["type"].lower() == "string"


def _said(text: Any) -> str | None:
    m = SHELL_WORDS.search(text) if isinstance(text, str) else None
    return m.group(0) if m else None


def shape(schema: Any) -> Shape | None:
    """The shape that makes a declared tool a shell tool (rules/shell_shapes.py); None: not one."""
    if not isinstance(schema, dict):
        return None
    props, required = schema.get("properties"), schema.get("required")
    if not isinstance(props, dict) or not isinstance(required, list):
        return None
    needed = {r for r in required if isinstance(r, str)}
    named = [p for p in COMMAND_PARAMS if p in props]
    if named:
        param = named[0]
        if len(named) > 1 or not _string(props[param]) or param not in needed or needed - {param} - STEERING:
            return None
        said = _said(props[param].get("description"))
        if said is None:
            return None
        why = f"by its shape: a required string {param!r} described as a {said} command line"
        return Shape("command", param, why)
    if not all(p in props and _string(props[p]) for p in CODE_PARAMS) or not needed >= set(CODE_PARAMS):
        return None
    if needed - set(CODE_PARAMS) - STEERING:
        return None
    enum = props[CODE_PARAMS[0]].get("enum")
    if isinstance(enum, list) and enum and not any(isinstance(e, str) and e.lower() in SHELL_LANGUAGES for e in enum):
        return None
    why = "by its shape: language + code, a command line for the calls whose language is a shell"
    return Shape("code", CODE_PARAMS[1], why)
