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


# ---- the README's shell blocks, as a user types them (issue 12) ---------------------------------

SHELL_BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)
# mitmproxy's tools are installed into .venv by `scripts/dev setup`, never on PATH: typed bare they fail.
BARE = ("mitmdump", "mitmweb", "mitmproxy")


def shell_commands() -> list[str]:
    """Every command in the README's sh blocks: continuations joined, comments and env assignments kept."""
    out = []
    for block in SHELL_BLOCKS:
        heredoc = None  # the end word of a here-document being skipped (its lines are data, not commands)
        for line in block.replace("\\\n", " ").splitlines():
            if heredoc is not None:
                heredoc = None if line.strip() == heredoc else heredoc
                continue
            command = re.sub(r"(^|\s)#.*$", "", line).strip()
            if command:
                out.append(command)
                if m := re.search(r"<<-?\s*['\"]?(\w+)['\"]?", command):
                    heredoc = m.group(1)
    return out


def program(command: str) -> str:
    words = command.split()
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value prefixes
        words.pop(0)
    return words[0] if words else ""


def test_every_readme_command_uses_the_installed_tools() -> None:
    commands = shell_commands()
    assert len(commands) > 15
    for command in commands:
        prog = program(command)
        assert prog not in BARE, f"README command does not work as typed after scripts/dev: {command}"
        if prog.startswith((".venv/", "scripts/")):  # what the checkout and scripts/dev setup provide
            assert prog.split("/")[0] == ".venv" or (ROOT / prog).exists(), f"{prog} (in: {command})"
    # and no prose or inline code tells the user to type a bare mitmdump/mitmweb either
    bare = re.findall(r"`(?:mitmdump|mitmweb) -[^`]*`", README)
    assert not bare, f"bare mitmdump/mitmweb in the README (not on PATH after scripts/dev): {bare}"


def test_every_readme_path_and_option_exists() -> None:
    from mitmproxy.test import taddons
    from mitmproxy.tools.web.web_columns import AVAILABLE_WEB_COLUMNS
    from mitmproxy.tools.web.webaddons import WebAddon

    with taddons.context(WebAddon()) as tctx:
        names = set(tctx.options.keys())  # mitmproxy's and mitmweb's
    for source in (ROOT / "addons" / "native_bridge").rglob("*.py"):  # every addon of addons/bridge.py
        names |= set(re.findall(r'add_option\(\s*"(\w+)"', source.read_text()))
    for command in shell_commands():
        for path in re.findall(r"(?<![\w/.])((?:scripts|addons|proto)/[\w./-]+)", command):
            assert (ROOT / path).exists(), f"{path} (in: {command})"
        for name, value in re.findall(r"--set (\w+)=(\S*)", command):
            assert name in names, f"--set {name}: no such option (in: {command})"
            if name == "web_columns":
                assert value in AVAILABLE_WEB_COLUMNS, f"web_columns={value} (in: {command})"
    assert "--listen-host 127.0.0.1" in README.split("**Reverse proxy**")[1].split("```")[1]
    for cited in ("design brief", "Cascade planner", "CortexTrajectoryStep"):
        first = README.lower().index(cited.lower())
        assert first < README.index("## Quick start"), f"{cited} is cited before it is explained"
