"""The fuzzer's command line: ``.venv/bin/python scripts/fuzz --cases 100000`` (see fuzz/__init__.py)."""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as ``python scripts/fuzz``: this folder is first on the path, not scripts/
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from support import cli

from fuzz.runner import main

if __name__ == "__main__":
    cli.run(main)
