"""The state both hops share: one store, chosen by the ``bridge_state`` option."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from typing import Any

from mitmproxy import ctx, exceptions

from .dispatch import Dispatch
from .store import MemoryStore, SQLiteStore, Store

logger = logging.getLogger(__name__)


class BridgeState:
    """What both hops share, handed to each (addons/bridge.py): the store (ledger and observations),
    the dispatch (where and when each hop's work runs, and the worker process), the chat hop's
    readings still in the worker and its record writer. Neither hop holds the other."""

    def __init__(self) -> None:
        self.store: Store = MemoryStore()
        # Chat requests still being read in the worker, by flow id: the planner hop waits for
        # their evidence before it corrects a step.
        self.readings: dict[str, asyncio.Future[None]] = {}
        self.dispatch = Dispatch(self.readings, lambda: self.store.unfinished())
        self.recorder: Any = None  # the chat hop's records.writer.Recorder (the planner hop's too, by default)

    def load(self, loader) -> None:
        loader.add_option(
            "bridge_state",
            str | None,
            None,
            "SQLite file for the per-cascade ledger (WAL mode), the chat hop's observations in logs "
            "beside it (<file>-obs-<day>); several mitmdump processes may share them. Unset: memory "
            "only, forgotten on restart.",
        )

    def configure(self, updated: set[str]) -> None:
        if "bridge_state" not in updated:
            return
        path = ctx.options.bridge_state
        try:
            store: Store = SQLiteStore(path) if path else MemoryStore()
        except (OSError, sqlite3.Error) as e:
            raise exceptions.OptionsError(f"bridge_state: cannot open {path!r}: {e}") from e
        self.store.close()
        self.store = store
        if path:
            logger.info(f"bridge: state in {path}")

    def done(self) -> None:
        self.dispatch.close()
        self.store.close()
