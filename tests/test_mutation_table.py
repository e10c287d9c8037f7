"""The mutation check's table holds in this tree, with no test run (scripts/mutation_check.py runs the
mutations themselves: ``scripts/dev mutation``). A refactor that moves a mutation's code without its
``# mutation: <name>`` marker, or changes the statement under it, fails here at once."""

from __future__ import annotations

import re
from pathlib import Path

import mutation_check as mc
from native_bridge.core.rules.exit_frames import RULES

ROOT = Path(__file__).resolve().parents[1]


def test_every_mutation_applies_and_every_truth_rule_has_one() -> None:
    assert mc.problems(ROOT) == []


def test_the_readme_rules_are_the_table_rules() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("## What the bridge guarantees", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^(\d+)\. \*\*", section, re.M)
    assert listed and set(listed) <= set(mc.TRUTH_RULES), listed


def test_every_client_frame_has_its_deletion() -> None:
    assert mc.frame_names(ROOT) == [r.name for r in RULES]


def _tree(tmp_path: Path, code: str) -> Path:
    (tmp_path / mc.PACKAGE).mkdir(parents=True, exist_ok=True)
    (tmp_path / mc.PACKAGE / "m.py").write_text(code)
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_m.py").write_text("")
    return tmp_path


CODE = "def f(x: int) -> int:\n    # mutation: demo\n    if x > 1:\n        return 1\n    return 0\n"
DEMO = mc.Mutation("demo", "1", "the demo's guard removed", ("tests/test_m.py",), (mc.Edit(r"if x > 1:", "if False:"),))


def _about_demo(tree: Path) -> list[str]:
    return [p for p in mc.problems(tree, [DEMO]) if "demo" in p]


def test_a_marked_statement_is_mutated(tmp_path: Path) -> None:
    tree = _tree(tmp_path, CODE)
    assert _about_demo(tree) == []
    assert mc.mutated(tree, DEMO) == {f"{mc.PACKAGE}/m.py": CODE.replace("if x > 1:", "if False:")}


def test_a_retired_anchor_is_a_failure_not_a_skip(tmp_path: Path) -> None:
    gone = _tree(tmp_path / "gone", CODE.replace("    # mutation: demo\n", ""))
    assert any("exactly once" in p for p in _about_demo(gone))
    twice = _tree(tmp_path / "twice", CODE + "\n\n# mutation: demo\nY = 1\n")
    assert any("exactly once" in p for p in _about_demo(twice))
    moved = _tree(tmp_path / "moved", CODE.replace("if x > 1:", "if x >= 2:"))
    assert any("matches 0 times" in p for p in _about_demo(moved))


def test_a_marker_without_its_mutation_and_a_rule_without_a_mutation_are_failures(tmp_path: Path) -> None:
    tree = _tree(tmp_path, CODE + "\n\n# mutation: orphan\nY = 1\n")
    found = mc.problems(tree, [DEMO])
    assert any("`# mutation: orphan`" in p and "belongs to no mutation" in p for p in found)
    assert any(p.startswith("truth rule 2 ") for p in found)


def test_a_mutation_that_breaks_the_syntax_is_no_catch(tmp_path: Path) -> None:
    broken = mc.Mutation("demo", "1", "d", ("tests/test_m.py",), (mc.Edit(r"if x > 1:", "if x >"),))
    assert any("does not parse" in p for p in mc.problems(_tree(tmp_path, CODE), [broken]))
