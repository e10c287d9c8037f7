"""The README and its reference pages stay true: generated tables match the code, every option is
documented, the two set-up commands are what CI runs (scripts/doc_tables.py --write refreshes
tables), every command works as typed and every relative link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import doc_tables
from native_bridge.core.rules.exit_frames import RULES
from native_bridge.core.rules.tool_names import DEFAULT_TOOL_KINDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# The reference pages the README links to, beside what they describe.
PAGES = (
    "proto/README.md",
    "addons/README.md",
    "addons/native_bridge/records/RECORDS.md",
    "addons/native_bridge/core/rules/CLIENTS.md",
    "addons/native_bridge/core/rules/EXIT_STATUS.md",
    "scripts/BENCH.md",
    "tests/README.md",
)
DOCS = {"README.md": README} | {page: (ROOT / page).read_text() for page in PAGES}


def test_generated_tables_match_the_code() -> None:
    assert sorted(n for names in doc_tables.PAGES.values() for n in names) == sorted(doc_tables.TABLES)
    for page, names in doc_tables.PAGES.items():
        assert page in PAGES
        text = DOCS[page]
        assert doc_tables.refresh(text, names, page) == text, f"{page} is stale: run scripts/doc_tables.py --write"
    assert "<!-- generated:" not in README  # the tables live beside their rules, not in the README


def test_every_rule_and_tool_name_is_in_the_pages() -> None:
    formats = DOCS["addons/native_bridge/core/rules/EXIT_STATUS.md"]
    tools = DOCS["addons/native_bridge/core/rules/CLIENTS.md"]
    for rule in RULES:
        assert f"| {rule.name} |" in formats
    for name in DEFAULT_TOOL_KINDS:
        assert f"`{name}` (" in tools


def test_the_readme_is_a_manual() -> None:
    assert len(README.splitlines()) <= 500
    for page in PAGES:  # every reference page is linked from the README
        assert f"]({page}" in README, f"{page} is not linked from the README"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose, re.M):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_every_relative_link_resolves() -> None:
    checked = 0
    for page, text in DOCS.items():
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (ROOT / page).parent / path if path else ROOT / page
            assert file.resolve().is_relative_to(ROOT) and file.exists(), f"{page}: {target}: no such file"
            if anchor:
                assert file.suffix == ".md", f"{page}: {target}: an anchor into a file that is not a page"
                key = str(file.resolve().relative_to(ROOT))
                assert anchor in _anchors(DOCS.get(key) or file.read_text()), f"{page}: {target}: no such heading"
            checked += 1
    assert checked > 30


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

SHELL_BLOCKS = [b for text in DOCS.values() for b in re.findall(r"```sh\n(.*?)```", text, re.S)]
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
    for page, text in DOCS.items():
        bare = re.findall(r"`(?:mitmdump|mitmweb) -[^`]*`", text)
        assert not bare, f"bare mitmdump/mitmweb in {page} (not on PATH after scripts/dev): {bare}"


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
