"""The README stays true: generated tables match the code, every option is documented,
and the two set-up commands are what CI runs (scripts/doc_tables.py --write refreshes tables)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from native_bridge.core.exitstatus import RULES
from native_bridge.core.kinds import DEFAULT_TOOL_KINDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _doc_tables():
    spec = importlib.util.spec_from_file_location("doc_tables", ROOT / "scripts" / "doc_tables.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_match_the_code() -> None:
    assert _doc_tables().refresh(README) == README, "README.md is stale: run scripts/doc_tables.py --write"


def test_every_rule_and_tool_name_is_in_the_readme() -> None:
    for rule in RULES:
        assert f"| {rule.name} |" in README
    for name in DEFAULT_TOOL_KINDS:
        assert f"`{name}` (" in README


def test_every_addon_option_is_documented() -> None:
    options: list[str] = []
    for source in (ROOT / "addons" / "native_bridge").rglob("*.py"):
        options += re.findall(r'add_option\(\s*"(\w+)"', source.read_text())
    assert "bridge_records" in options
    for option in options:
        assert f"| `{option}` |" in README, f"option {option} is not in the README's options table"


def test_readme_commands_are_what_ci_runs() -> None:
    assert "scripts/dev demo" in README and "scripts/dev test" in README
    assert "scripts/dev test" in (ROOT / ".ci" / "run").read_text()
