"""No module-level mutable state in the package (issue 41 item 2): what a request or the
bridge holds lives in an object made for it (a hop's request, the shared state, the worker's
reader), never in a module or a class body, where every caller would share it.

Two checks, each over every module of ``native_bridge`` (the generated ``_proto`` aside):

- **no ``global`` statement**: a module name is never rebound after import;
- **every name bound at module level, and every class attribute, holds an immutable value** once
  the module is imported: constants, tuples and frozensets of them, compiled regexes, structs,
  loggers, classes, functions, frozen dataclasses, enum members, read-only mappings. A dict, list
  or set is a constant table only when nothing in the package ever changes it: no item
  assignment or deletion, no ``setattr``-like attribute assignment, no mutating method call, on
  that name (bare, or as an attribute of anything: ``module.NAME``, ``self.NAME``). Any other
  object (an instance that is not frozen) is state, whatever it is called.

The checker is tested on a module written to break each rule, so that it cannot pass by
seeing nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import importlib
import inspect
import linecache
import logging
import operator
import re
import struct
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import native_bridge

PACKAGE = Path(native_bridge.__file__).parent
GENERATED = "_proto"

# The methods that change a dict, list, set or bytearray in place.
MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
        "__setitem__",
        "__delitem__",
        "__iadd__",
        "__ior__",
    }
)
CONTAINERS = (dict, list, set, bytearray)


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == GENERATED:
            continue
        parts = ("native_bridge", *rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def bound_names(body: list[ast.stmt]) -> list[str]:
    """The names a module or class body binds by assignment (also under a top-level if/try/with)."""
    names: list[str] = []
    for node in body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target] if getattr(node, "value", True) is not None else []
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                inner.extend(handler.body)
            names.extend(bound_names(inner))
            continue
        else:
            continue
        for target in targets:
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    names.append(n.id)
    return names


def classes(tree: ast.Module) -> Iterator[tuple[list[str], ast.ClassDef]]:
    """Every class (nested ones too, outside functions), with its qualified name's parts."""

    def walk(body: list[ast.stmt], outer: list[str]) -> Iterator[tuple[list[str], ast.ClassDef]]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                yield [*outer, node.name], node
                yield from walk(node.body, [*outer, node.name])

    yield from walk(tree.body, [])


def changed_names(tree: ast.AST) -> set[str]:
    """The names whose value some code changes in place (module.NAME and self.NAME by NAME)."""

    def name_of(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        return None

    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Subscript) and (n := name_of(t.value)):
                found.add(n)
            elif isinstance(t, ast.Attribute) and (n := name_of(t.value)):
                found.add(n)  # an attribute set on the object the name holds
        if isinstance(node, ast.AugAssign) and (n := name_of(node.target)):
            found.add(n)  # += on a list or set changes it in place
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and (n := name_of(node.func.value))
        ):
            found.add(n)
    return found


def frozen(value: object, depth: int = 0) -> bool:
    """Whether ``value`` cannot change: the kinds the module docstring lists."""
    if depth > 20:
        return False
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, range, enum.Enum)):
        return True
    if isinstance(value, frozenset):
        return all(frozen(v, depth + 1) for v in value)
    if isinstance(value, tuple):  # (a tuple of tables is a table: judge)
        return all(frozen(v, depth + 1) or table(v) for v in value)
    if isinstance(value, types.MappingProxyType):
        return all(frozen(k, depth + 1) and frozen(v, depth + 1) for k, v in value.items())
    if isinstance(value, (re.Pattern, struct.Struct, logging.Logger, type, types.ModuleType)):
        return True
    if isinstance(
        value,
        (
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            types.MethodDescriptorType,
            types.WrapperDescriptorType,
            types.MemberDescriptorType,
            types.GetSetDescriptorType,
            staticmethod,
            classmethod,
            property,
            functools.partial,
        ),
    ):
        return True
    # A bounded cache of a pure function: what it answers never depends on what came before.
    if type(value).__name__ == "_lru_cache_wrapper":
        return True
    if type(value) is object:  # a sentinel
        return True
    aliases = (types.GenericAlias, types.UnionType, typing.TypeVar)
    if isinstance(value, (operator.attrgetter, operator.itemgetter, *aliases)):
        return True
    if type(value).__module__ in ("typing", "_collections_abc"):
        return True  # type aliases (X | None, tuple[...]) and special forms
    if type(value).__module__.startswith("google."):
        return True  # protobuf descriptors (the generated code's, read-only)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(type(value), "__dataclass_params__", None)
        return bool(params and params.frozen) and all(
            frozen(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        )
    cls = type(value)
    if cls.__init__ is object.__init__ and cls.__setattr__ is object.__setattr__:
        # Made empty, and nothing of its own ever puts anything in it.
        own = [c for c in cls.__mro__ if c.__module__ not in ("builtins", "typing", "abc", "_collections_abc")]
        return not getattr(value, "__dict__", None) and not any(sets_attributes(c) for c in own)
    return False


def sets_attributes(cls: type) -> bool:
    """Whether a method of ``cls`` assigns an attribute of ``self`` (True when its source is unknown)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return True
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                return True
    return False


def table(value: object) -> bool:
    """A dict, list, set or bytearray (or a tuple holding them): constant only while unchanged."""
    if isinstance(value, CONTAINERS):
        return True
    return isinstance(value, tuple) and any(table(v) for v in value)


def problems(module: types.ModuleType, tree: ast.Module, changed: set[str]) -> list[str]:
    """What the module holds that is state (module docstring), one line each."""
    rebinds = [n for n in ast.walk(tree) if isinstance(n, ast.Global)]
    found = [f"{module.__name__}:{n.lineno}: `global {', '.join(n.names)}`" for n in rebinds]

    def judge(where: str, name: str, value: object) -> None:
        if table(value):
            if name in changed:
                found.append(f"{where}.{name}: a {type(value).__name__} that code changes in place")
        elif not frozen(value):
            found.append(f"{where}.{name}: holds a {type(value).__qualname__}, which can change")

    for name in dict.fromkeys(bound_names(tree.body)):
        if name in vars(module) and not name.startswith("__"):
            judge(module.__name__, name, vars(module)[name])
    for parts, node in classes(tree):
        cls: object = module
        for part in parts:
            cls = getattr(cls, part, None)
        if not isinstance(cls, type):
            continue
        for name in dict.fromkeys(bound_names(node.body)):
            if name in vars(cls) and name not in ("__slots__", "__match_args__", "__reduce__"):
                judge(f"{module.__name__}.{'.'.join(parts)}", name, vars(cls)[name])
    return found


def test_no_module_or_class_holds_state() -> None:
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in modules()}
    changed: set[str] = set()
    for tree in trees.values():
        changed |= changed_names(tree)
    found, judged = [], 0
    for name, tree in trees.items():
        module = importlib.import_module(name)
        judged += len(bound_names(tree.body))
        found.extend(problems(module, tree, changed))
    assert judged > 200, "the checker found almost no module-level names: it reads nothing"
    assert not found, "module-level state:\n" + "\n".join(found)


STATEFUL = """
import dataclasses
import re
import types

LIMIT = 10
PATTERN = re.compile("x")
TABLE = {"a": 1}
_CACHE: dict[str, int] = {}
_SEEN = []
_LAST = None
_COUNTER = dataclasses.make_dataclass("Counter", ["n"])(0)
_SPACE = types.SimpleNamespace(hits=0)


class _Tally:
    def see(self):
        self.seen = True


_TALLY = _Tally()


class _Quiet:
    def say(self):
        return "nothing kept"


QUIET = _Quiet()

def remember(key):
    global _LAST
    _LAST = key
    _CACHE[key] = 1
    _SEEN.append(key)

class Hop:
    shared = set()
    table = ("a", "b")

    def see(self, x):
        self.shared.add(x)
"""


def test_the_checker_finds_each_kind_of_state() -> None:
    module = types.ModuleType("stateful_probe")
    module.__file__ = "stateful_probe.py"  # its source for inspect, from linecache
    linecache.cache[module.__file__] = (len(STATEFUL), None, STATEFUL.splitlines(True), module.__file__)
    sys.modules[module.__name__] = module
    try:
        exec(compile(STATEFUL, module.__file__, "exec"), vars(module))
        tree = ast.parse(STATEFUL)
        found = "\n".join(problems(module, tree, changed_names(tree)))
    finally:
        del sys.modules[module.__name__]
        linecache.cache.pop(module.__file__, None)
    for expected in ("global _LAST", "._CACHE:", "._SEEN:", "._COUNTER:", "._SPACE:", "._TALLY:", "Hop.shared:"):
        assert expected in found, f"{expected!r} not found in:\n{found}"
    for constant in (".LIMIT", ".PATTERN", ".TABLE", "table", ".QUIET"):
        assert constant + ":" not in found, f"{constant} is a constant:\n{found}"
