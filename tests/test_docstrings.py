"""Every module and file a docstring or comment in addons/ names exists (issue 41): a rename that
leaves ``renderer.py`` or :func:`rewrite.rewrite` behind in prose fails here.

Three forms are checked: a file path (``records/writer.py``), a dotted name in a Sphinx role
(:func:`.framing.unframe`, :mod:`.steps`) and a dotted name in plain prose whose last part is a
function or class of the package (``worker.serve``): its first part must then be a module of the
package, a module Python can import, or a name the file itself uses (``dialect.read_items``)."""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import native_bridge

PACKAGE = Path(native_bridge.__file__).resolve().parent
ROOT = PACKAGE.parents[1]
FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.py)\b")
ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj):`~?([\w.]+)`")
PLAIN = re.compile(r"(?<![\w.`/~-])([a-z_]\w*(?:\.\w+)+)\b(?![`(/-])")


def _sources() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_proto" not in path.parts:  # generated code
            yield path


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring."""
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                yield node.body[0].lineno, doc


@cache
def _tree_files() -> tuple[str, ...]:
    skip = {".git", ".venv", "__pycache__", "node_modules", ".hypothesis", ".pytest_cache", ".ruff_cache"}
    out = []
    for top, dirs, names in os.walk(ROOT):
        # Hidden folders hold what is not ours (.venv, .interop's installed clients, caches).
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".") and not d.endswith(".egg-info")]
        out += [os.path.relpath(os.path.join(top, n), ROOT) for n in names if n.endswith(".py")]
    return tuple(out)


@cache
def _modules() -> dict[str, Path]:
    """Dotted module name (native_bridge.x.y) -> its file."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


@cache
def _names(path: Path) -> dict[str, tuple[str, frozenset[str], str]]:
    """A module's top-level names: (kind, a class's members, what an import names: a module, or a
    module and a name); kind is def, class, import or value."""
    here = _here(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: dict[str, tuple[str, frozenset[str], str]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = ("def", frozenset(), "")
        elif isinstance(node, ast.ClassDef):
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            members |= {t.id for n in node.body if isinstance(n, ast.AnnAssign | ast.Assign) for t in _targets(n)}
            out[node.name] = ("class", frozenset(members), "")
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            out.update({t.id: ("value", frozenset(), "") for t in _targets(node)})
        elif isinstance(node, ast.Import):
            out.update({(a.asname or a.name).split(".")[0]: ("import", frozenset(), a.name) for a in node.names})
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            source = ".".join(p for p in (base, node.module) if p)
            out.update({a.asname or a.name: ("import", frozenset(), f"{source}.{a.name}") for a in node.names})
    return out


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.Name]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t for t in targets if isinstance(t, ast.Name)]


@cache
def _functions_and_classes() -> frozenset[str]:
    return frozenset(n for p in _sources() for n, (kind, _, _) in _names(p).items() if kind in ("def", "class"))


def _in_module(module: str, rest: list[str], depth: int = 0) -> bool:
    """Whether ``rest`` names something in the package module ``module``."""
    if not rest:
        return True
    if f"{module}.{rest[0]}" in _modules():
        return _in_module(f"{module}.{rest[0]}", rest[1:], depth)
    kind, members, target = _names(_modules()[module]).get(rest[0], ("", frozenset(), ""))
    if kind == "def":
        return len(rest) == 1
    if kind == "class":
        return len(rest) == 1 or rest[1] in members
    if kind == "import" and depth < 5:
        return _in_dotted(target.split(".") + rest[1:], depth + 1)
    return kind == "value"  # what a value holds is not known here


def _in_dotted(parts: list[str], depth: int = 0) -> bool:
    """Whether an absolute dotted name resolves: in the package, or its first part importable."""
    modules = _modules()
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in modules:
            return _in_module(head, parts[n:], depth)
    return parts[0] != native_bridge.__name__ and importlib.util.find_spec(parts[0]) is not None


def _resolves(name: str, path: Path) -> bool:
    """A dotted name as a docstring of ``path`` writes it: relative (``.steps.view``), a name of the
    module itself (``Evidence.lookup``), absolute, or a package module by its last parts (``steps.view``)."""
    here = _here(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    parts = name.lstrip(".").split(".")
    dots = len(name) - len(name.lstrip("."))
    if dots:
        return _in_module(package.rsplit(".", dots - 1)[0], parts)
    if parts[0] in _names(path):
        return _in_module(here, parts)
    tails = [m for m in _modules() if m.endswith(f".{parts[0]}")]
    return any(_in_module(m, parts[1:]) for m in tails) or _in_dotted(parts)


def _here(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _used(path: Path, text: str) -> set[str]:
    """Every name the file binds or reads (parameters, variables, imports)."""
    tree = ast.parse(text)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arg) for a in [n]}
    return used | set(_names(path))


def stale(path: Path, text: str | None = None) -> list[str]:
    """What the prose of ``path`` (or ``text`` as if it were that module's) names that is not in the tree."""
    text = path.read_text() if text is None else text
    files, found = _tree_files(), []
    used = _used(path, text)
    top_dirs = {p.name for p in ROOT.iterdir() if p.is_dir()} | {p.name for p in PACKAGE.rglob("*") if p.is_dir()}
    for line, prose in _prose(text):
        where = f"{path.relative_to(ROOT)}:{line}"
        for m in FILE.finditer(prose):
            named = m.group(1)
            if "/" in named and named.split("/")[0] not in top_dirs:
                continue  # another project's file (gptme/tools/shell.py)
            if not any(f == named or f.endswith("/" + named) for f in files):
                found.append(f"{where} names the file {named}")
        for m in ROLE.finditer(prose):
            if "." in m.group(1) and not _resolves(m.group(1), path):
                found.append(f"{where} names {m.group(0)}")
        for m in PLAIN.finditer(prose):
            name = m.group(1)
            first, last = name.split(".")[0], name.split(".")[-1]
            if name.endswith(".py") or last not in _functions_and_classes() or first in used:
                continue
            if not _resolves(name, path):
                found.append(f"{where} names {name}")
    return found


def test_every_module_a_docstring_or_comment_names_exists() -> None:
    found = [s for p in _sources() for s in stale(p)]
    assert not found, "docstrings and comments that name what is not in the tree:\n" + "\n".join(found)


def test_a_stale_name_is_found() -> None:
    """The check itself: prose (read as a module of the package's) that names a file, a module and
    a function that are gone: the three stale forms issue 41 found."""
    probe = (
        '"""Rendered in renderer.py; see :func:`rewrite.rewrite` and :mod:`.no_such`."""\n\n\n'
        "def work() -> None:\n    # renderer.serve calls it\n    pass\n"
    )
    found = stale(PACKAGE / "runtime" / "offload.py", probe)
    assert sorted(f.split(" names ", 1)[1] for f in found) == [
        ":func:`rewrite.rewrite`",
        ":mod:`.no_such`",
        "renderer.serve",
        "the file renderer.py",
    ]
