"""Tests never skip what is in the tree (issue 41): a renamed in-tree module or script must fail the
suite, not turn a test into a skip. Skips stay only for what a machine may lack (root, a browser,
redis-server, node, the real gateway's copy), each with its reason, which ``-ra`` (pyproject's
addopts) prints in the summary."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# The tree's own import roots (pytest's pythonpath: addons/ and scripts/) and its top folders.
IN_TREE_MODULES = {p.stem for d in ("addons", "scripts") for p in (ROOT / d).iterdir() if p.suffix in ("", ".py")}
IN_TREE_FOLDERS = {"addons", "scripts", "tests", "proto"}


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(TESTS.rglob("*.py")):
        if "fixtures" not in path.relative_to(TESTS).parts:
            yield path, ast.parse(path.read_text(), str(path))


def _is_call(node: ast.AST, name: str) -> TypeGuard[ast.Call]:
    """``pytest.<name>(...)`` or ``pytest.mark.<name>(...)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def test_no_importorskip_of_an_in_tree_module() -> None:
    found = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if _is_call(node, "importorskip") and node.args:
                name = next(iter(_strings(node.args[0])), "")
                if name.split(".")[0] in IN_TREE_MODULES:
                    found.append(f"{_where(path, node)} importorskip({name!r})")
    assert not found, "an in-tree module is imported, not skipped when missing:\n" + "\n".join(found)


def test_no_skip_when_an_in_tree_file_is_missing() -> None:
    """A skip under a condition that names a path in the tree (``ROOT / "scripts" / ...``)."""
    found = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and any(_is_call(n, "skip") for s in node.body for n in ast.walk(s)):
                condition = node.test
            elif _is_call(node, "skipif") and node.args:
                condition = node.args[0]
            else:
                continue
            if _strings(condition) & IN_TREE_FOLDERS:
                found.append(f"{_where(path, node)} {ast.unparse(condition)}")
    assert not found, "a missing in-tree file must fail, not skip:\n" + "\n".join(found)


def test_every_skip_says_why() -> None:
    found = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if _is_call(node, "skip") and not (node.args or node.keywords):
                found.append(_where(path, node))
            if _is_call(node, "skipif") and not any(k.arg == "reason" for k in node.keywords):
                found.append(_where(path, node))
    assert not found, "a skip without its reason:\n" + "\n".join(found)


def test_the_summary_shows_skips_with_their_reasons() -> None:
    """``-ra`` (or ``-rs``) in addopts: ``scripts/dev test`` passes its arguments on, so the summary
    lists every skip and its reason."""
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    flags = [a[2:] for a in addopts.split() if a.startswith("-r")]
    assert any("a" in f or "s" in f for f in flags), addopts
