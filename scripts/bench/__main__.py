"""The bench's command line: ``.venv/bin/python scripts/bench`` (see bench/__init__.py)."""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as ``python scripts/bench``: this folder is first on the path, not scripts/
    sys.path[0] = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "addons"))  # this checkout's bridge, not an installed one

from support import cli, lifetime

lifetime.forks_exec_at_once()  # before bench.planner imports grpc

from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    cli.run(main)
