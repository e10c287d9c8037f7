"""Both hops' entries re-checked, one report: each request as it was recorded and what would change.

Every line goes out redacted: flow files are not, and command lines or tool output may hold
credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.pipeline import Config
from ...records import redact
from . import chat
from . import planner as planner_replay
from .entry import Entry


def compare(entry: Entry, config: Config) -> list[str]:
    """What would change for this entry under the current core; empty when nothing would."""
    if entry.planner is not None:
        return planner_replay.recheck(entry.planner.case, entry.planner.evidence(entry.time, config))
    return chat.recheck(entry, config)


def describe(entry: Entry) -> str:
    if entry.planner is not None:
        return planner_replay.describe(entry.planner.case)
    return chat.describe(entry)


def check(
    entries: Sequence[Entry],
    unseen: Sequence[str],
    config: Config,
    quiet: bool = False,
    out: Callable[[str], None] = print,
) -> int:
    """Report every entry (with ``quiet``, only those that would change) and the flows with no
    baseline, then the counts; how many entries would change."""

    def say(line: str) -> None:
        out(redact.text(line))

    changed = 0
    for entry in sorted(entries, key=lambda e: (e.time, e.flow_id)):
        changes = compare(entry, config)
        if changes:
            changed += 1
        elif quiet:
            continue
        head = f"{'CHANGED' if changes else 'same   '}  {entry.time}  {entry.flow_id}  {entry.method} {entry.path}"
        say(head)
        say(f"         recorded: {describe(entry)}")
        for line in changes:
            say(f"         {line}")
    for line in unseen:
        if not quiet:
            say(f"skipped  {line}: not seen by the bridge (no baseline)")
    out(f"\n{len(entries)} checked, {len(entries) - changed} same, {changed} would change, {len(unseen)} skipped")
    return changed
