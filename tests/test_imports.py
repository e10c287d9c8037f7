"""A module's imports run one way (issue 18): no import cycle among the package's modules,
counting imports inside functions and under TYPE_CHECKING (the package's __init__ aside:
importing a name from one's own package is no cycle through its modules). The folders run one
way too (issue 41): each is a layer, and no import runs up the layers or sideways between the
two hops (addons/README.md draws them). And the tests import by name: pytest's ``pythonpath``
(pyproject.toml) gives them addons/ and scripts/, so no file under tests/ edits the import path
or loads a script from its file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import native_bridge

PACKAGE = Path(native_bridge.__file__).resolve().parent
TESTS = Path(__file__).resolve().parent
# Written so that this file does not match itself: an edit of the import path (insert, append,
# extend, assignment), or a module loaded from a file path.
PATH_EDIT = re.compile(r"\bsys\.path\s*(?:\.\s*(?:insert|append|extend)\b|\[[^\]]*\]\s*=(?!=)|\+=|=(?!=))")
FILE_LOAD = re.compile(r"\bspec_from_file_loc(?:ation)\b|\bSourceFile(?:Loader)\b|\brun_pa(?:th)\(")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if "_proto" in path.parts:  # generated code
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _target(package: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, its dots resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package
    for _ in range(node.level - 1):
        base = base.rsplit(".", 1)[0]
    return f"{base}.{node.module}" if node.module else base


def _imports(name: str, path: Path, modules: dict[str, Path], packages: bool = False) -> set[str]:
    """The package's modules that ``name`` imports; with ``packages``, its folders' __init__ too
    (``from ..runtime import META`` imports the runtime layer)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):  # every import, at any depth
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            target = _target(package, node)
            found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
    return {m for m in found if m in modules and m != name and (packages or modules[m].name != "__init__.py")}


def graph(packages: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules, packages) for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_imports_inside_functions_and_type_checking() -> None:
    edges = graph()
    assert "native_bridge.cascade.corrections" in edges["native_bridge.cascade.correct"]
    assert len(edges) > 40


def test_no_import_cycle_in_the_package() -> None:
    assert cycles(graph()) == []


def _offending_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if PATH_EDIT.search(line) or FILE_LOAD.search(line)]


def test_the_path_checker_sees_every_form() -> None:
    edits = (".insert(0, str(ROOT / 'scripts'))", ".append(here)", ".extend(dirs)", "[:0] = [x]", " = [x]", " += [x]")
    for bad in (
        *("    sys." + "path" + edit for edit in edits),
        "spec = importlib.util.spec_from_" + "file_location('m', path)",
        "importlib.machinery.SourceFile" + "Loader('m', path)",
        "runpy.run_" + "path('scripts/x.py')",
    ):
        assert _offending_lines(bad), bad
    for fine in ("env = dict(PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))", "if sys.path == before:"):
        assert not _offending_lines(fine), fine


def test_no_test_edits_the_import_path_or_loads_a_script_from_its_file() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        if lines := _offending_lines(text):
            found[str(path.relative_to(TESTS))] = lines
    assert not found, f"import what you test by name (pyproject.toml's pythonpath), do not edit the path: {found}"


# The layers, bottom first (issue 41; addons/README.md draws them). A module may import its own
# folder and any layer below; never a layer above, nor a neighbour in its own layer (the two hops
# share what they both need through runtime/, never each other). A folder is named by its path in
# the package; a module belongs to the longest folder that holds it ("" is the package itself).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core.rules", "evidence"),  # data: what we know of the clients; the one Observation
    ("core",),  # chat histories (pure)
    ("cascade",),  # the planner's wire (pure); reads results with core's rules
    ("runtime",),  # what both hops share: metadata keys, state, store, worker, dispatch, h2c
    ("records",),  # the records, written off the request path by runtime's worker
    ("chat_hop", "planner_hop"),  # the two hops, side by side
    ("inspect",),  # looking at what the bridge did: views, commands, replay
    ("",),  # the package's face (native_bridge.rewrite)
)
RANK = {folder: rank for rank, layer in enumerate(LAYERS) for folder in layer}


def folder_of(module: str) -> str | None:
    """The longest of LAYERS' names that holds ``module`` (a folder, or evidence.py at the package's
    top); None: the module has no layer."""
    rest = module.removeprefix("native_bridge").removeprefix(".")
    if not rest:
        return ""
    parts = rest.split(".")
    return next((f for n in range(len(parts), 0, -1) if (f := ".".join(parts[:n])) in RANK), None)


def layering(edges: dict[str, set[str]]) -> list[str]:
    """Every import that runs up the layers or sideways, as ``module -> module (why)``."""
    bad = []
    for name, targets in sorted(edges.items()):
        mine = folder_of(name)
        for t in sorted(targets):
            theirs = folder_of(t)
            if mine is None or theirs is None or mine == theirs:
                continue
            if RANK[theirs] > RANK[mine]:
                bad.append(f"{name} -> {t} (up: {mine or 'package'} below {theirs})")
            elif RANK[theirs] == RANK[mine]:
                bad.append(f"{name} -> {t} (sideways: {mine} beside {theirs})")
    return bad


def test_the_layering_checker_sees_up_and_sideways() -> None:
    edges = {
        "native_bridge.planner_hop.addon": {"native_bridge.chat_hop.addon", "native_bridge.runtime.state"},
        "native_bridge.records.planner": {"native_bridge.inspect.planner_view", "native_bridge.runtime"},
        "native_bridge.cascade.corrections": {"native_bridge.core.kinds", "native_bridge.core.rules.clients"},
        "native_bridge.core.observe": {"native_bridge.evidence", "native_bridge.cascade"},
        "native_bridge.core.rules.types": {"native_bridge.evidence"},
    }
    assert layering(edges) == [
        "native_bridge.core.observe -> native_bridge.cascade (up: core below cascade)",
        "native_bridge.core.rules.types -> native_bridge.evidence (sideways: core.rules beside evidence)",
        "native_bridge.planner_hop.addon -> native_bridge.chat_hop.addon (sideways: planner_hop beside chat_hop)",
        "native_bridge.records.planner -> native_bridge.inspect.planner_view (up: records below inspect)",
    ]


def test_the_layering_graph_sees_function_level_relative_and_package_imports(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import native_bridge.chat_hop.addon\n"
        "def f():\n    from ..inspect import explain\n    from ..runtime import META\n    from . import bodydiff\n"
    )
    path = tmp_path / "planner.py"
    path.write_text(source)
    modules = {
        "native_bridge.records.planner": path,
        "native_bridge.records.bodydiff": PACKAGE / "records" / "bodydiff.py",
        "native_bridge.inspect.explain": PACKAGE / "inspect" / "explain.py",
        "native_bridge.runtime": PACKAGE / "runtime" / "__init__.py",
        "native_bridge.chat_hop.addon": PACKAGE / "chat_hop" / "addon.py",
    }
    assert _imports("native_bridge.records.planner", path, modules, packages=True) == {
        "native_bridge.chat_hop.addon",
        "native_bridge.records.bodydiff",
        "native_bridge.inspect.explain",
        "native_bridge.runtime",
    }


def test_every_folder_has_a_layer() -> None:
    modules = _modules()
    assert [m for m in sorted(modules) if folder_of(m) is None] == [], "a module outside the layers"
    assert [f for f in RANK if ("native_bridge." + f).rstrip(".") not in modules] == [], "a layer that is gone"
    assert folder_of("native_bridge.core.rules.types") == "core.rules"
    assert folder_of("native_bridge.core.kinds") == "core"
    assert folder_of("native_bridge.somewhere") is None


def test_imports_run_down_the_layers() -> None:
    assert layering(graph(packages=True)) == []


# mitmproxy sits above the pure layers too: what lies below runtime/ never imports it, at any depth.
PURE = tuple(folder for layer in LAYERS[: RANK["runtime"]] for folder in layer)


def mitmproxy_imports(name: str, path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        found += [f"{name} -> {n}" for n in names if n.split(".")[0] == "mitmproxy"]
    return found


def test_the_purity_checker_sees_mitmproxy_inside_a_function(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def f():\n    from mitmproxy import http\n    import mitmproxy.ctx\n")
    assert mitmproxy_imports("m", path) == ["m -> mitmproxy", "m -> mitmproxy.ctx"]


def test_the_pure_layers_import_no_mitmproxy() -> None:
    assert set(PURE) == {"core.rules", "evidence", "core", "cascade"}
    pure = {name: path for name, path in _modules().items() if folder_of(name) in PURE}
    assert "native_bridge.cascade.correct" in pure
    assert [line for name, path in sorted(pure.items()) for line in mitmproxy_imports(name, path)] == []


# Layers that are data only (issue 18): the tables of core/rules/ import nothing of the package
# but each other, so the logic reads them and never the other way round.
SELF_CONTAINED = ("native_bridge.core.rules",)


def outside_imports(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for name, targets in sorted(edges.items()):
        for layer in SELF_CONTAINED:
            if name == layer or name.startswith(layer + "."):
                bad += [f"{name} -> {t}" for t in sorted(targets) if not (t == layer or t.startswith(layer + "."))]
    return bad


def test_the_self_contained_checker_sees_a_table_that_imports_the_logic() -> None:
    edges = {
        "native_bridge.core.rules.exit_frames": {"native_bridge.core.rules.types", "native_bridge.core.clients"},
        "native_bridge.core.exitstatus": {"native_bridge.core.rules.exit_frames"},
    }
    assert outside_imports(edges) == ["native_bridge.core.rules.exit_frames -> native_bridge.core.clients"]


# What a table may build itself with, from outside the package: plain data, patterns, record types.
DATA_ONLY_MODULES = frozenset({"__future__", "re", "dataclasses", "typing", "collections.abc"})


def test_the_rules_import_nothing_but_the_rules() -> None:
    edges = graph()
    assert "native_bridge.core.rules.exit_frames" in edges["native_bridge.core.exitstatus"]
    assert "native_bridge.core.rules.types" in edges["native_bridge.core.rules.exit_frames"]
    assert outside_imports(edges) == []
    for path in (PACKAGE / "core" / "rules").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert {a.name for a in node.names} <= DATA_ONLY_MODULES, f"{path.name}: import {node.names[0].name}"
            elif isinstance(node, ast.ImportFrom) and not node.level:
                assert node.module in DATA_ONLY_MODULES, f"{path.name}: from {node.module} import ..."
