"""The state both hops share: one store, chosen by the ``bridge_state`` option."""

from __future__ import annotations

import logging
import sqlite3

from mitmproxy import ctx, exceptions

from .store import MemoryStore, SQLiteStore, Store

logger = logging.getLogger(__name__)


class BridgeState:
    """Holds the store (ledger and observations); the chat and planner addons read it at request time."""

    def __init__(self) -> None:
        self.store: Store = MemoryStore()

    def load(self, loader) -> None:
        loader.add_option(
            "bridge_state",
            str | None,
            None,
            "SQLite file for the per-cascade ledger and the chat hop's observations (WAL mode; "
            "several mitmdump processes may share it). Unset: memory only, forgotten on restart.",
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
        self.store.close()
