"""The reference planner as a program (the planner itself, which the demo and the tests run in
process, is support/reference_planner.py).

    .venv/bin/python scripts/reference_planner.py --port 8765   # GET /_received lists what it got
"""

from __future__ import annotations

from support import cli
from support.reference_planner import main

if __name__ == "__main__":
    cli.run(main)
