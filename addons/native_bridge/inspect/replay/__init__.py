"""Offline replay of both hops: a capture (records, a record, a ``-w`` flow file) re-run through
today's bridge, and what would change (scripts/replay_check.py is its command line).

- ``sources.py``: the capture read into entries, each flow once (``entry.py``: an entry);
- ``chat.py``: a chat request's original body through today's core, compared with its record;
- ``planner.py``: a planner-hop call corrected again, under the ledger, settings and chat-hop
  evidence it had;
- ``check.py``: both hops' entries compared, one report.
"""

from __future__ import annotations

from .check import check, compare, describe
from .entry import Entry
from .sources import read_sources

__all__ = ["Entry", "check", "compare", "describe", "read_sources"]
