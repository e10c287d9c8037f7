"""Re-run captured requests through the current bridge core and show what would change.

    .venv/bin/python scripts/replay_check.py RECORDS_DIR_OR_FLOWS_FILE [...] [options]

Sources: a directory of records written by the addon (``bridge_records``) or by
``bridge.export``, a single record file, or a mitmproxy flow file (``-w``) made
behind the bridge. For every request the bridge saw, the original body goes
through today's :func:`native_bridge.core.pipeline` and the result is compared with
what was recorded: the status, each step (kind, status, exit code, command /
file / pattern, and the rest of its body) and where each call and result went.

Exit status: 0 when nothing would change, 1 when anything would (a regression
check for CI), 2 when a source cannot be read or holds nothing to check.

Records hold redacted bodies, so both sides are compared redacted. Flows the
bridge never saw (a capture made without it) have no baseline and are listed as
skipped.

The reading and comparing live in ``native_bridge.inspect.replay``; this is its command line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

try:
    from native_bridge.inspect import replay
except ImportError:  # run from a checkout whose package is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "addons"))
    from native_bridge.inspect import replay
from native_bridge.core.kinds import KINDS, tool_map
from native_bridge.core.pipeline import DIALECTS, Config


def _split(values: Sequence[str]) -> list[str]:
    """Repeated options, each a comma-separated list: ``--kinds a,b --kinds c``."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def config_from(args: argparse.Namespace, p: argparse.ArgumentParser | None = None) -> Config:
    p = p or parser()
    try:
        tool_kinds = tool_map(_split(args.tools))
    except ValueError as e:
        p.error(f"--tools: {e}")
    kinds = _split(args.kinds)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        p.error(f"--kinds: unknown {', '.join(map(repr, unknown))} (choose from {', '.join(KINDS)})")
    return Config(frozenset(kinds) if kinds else frozenset(KINDS), tool_kinds, args.dialect)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("sources", nargs="+", help="record directories, record files, or mitmproxy flow files")
    p.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="NAME=KIND[,...]",
        help="as the addon option bridge_tools (repeat, or separate with commas)",
    )
    p.add_argument(
        "--kinds",
        action="append",
        default=[],
        metavar="KIND[,...]",
        help=f"as bridge_kinds (repeat, or separate with commas; default: all): {', '.join(KINDS)}",
    )
    p.add_argument("--dialect", default="auto", choices=["auto", *DIALECTS], help="as bridge_dialect")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the flows that would change")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    config = config_from(args, p)
    try:
        entries, unseen = replay.read_sources(args.sources)
    except (OSError, ValueError) as e:
        print(f"replay_check: {e}", file=sys.stderr)
        return 2
    if not entries:
        print("replay_check: nothing to check (no records, or no flow the bridge saw)", file=sys.stderr)
        return 2
    changed = replay.check(entries, unseen, config, quiet=args.quiet)
    return 1 if changed else 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
