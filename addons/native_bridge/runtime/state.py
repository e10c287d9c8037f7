"""What both hops share, made once and handed to each: the store (chosen by the ``bridge_state``
option), the dispatch and its worker, the chat hop's memo and record writer, and the two
options both hops read (``bridge``, ``bridge_max_body``)."""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from typing import Any

from mitmproxy import ctx, exceptions

from ..core.memo.store import Memo
from . import store_url
from .dispatch import Dispatch
from .redis_store import RedisStore, StoreUnreachable
from .store import MemoryStore, SQLiteStore, Store

logger = logging.getLogger(__name__)

STORE_OPTIONS = frozenset({"bridge_state", "bridge_state_prefix", "bridge_state_ca", "bridge_state_timeout_ms"})
MAX_BODY = 32 * 1024 * 1024  # bridge_max_body's default


class BridgeState:
    """What both hops share, made once and handed to each (addons/bridge.py; a hop made without
    one makes its own, and loads and configures it itself): the store (ledger and observations),
    the dispatch (where and when each hop's work runs, its worker process and the chat readings
    still in it), the chat hop's memo and record writer (the planner hop's too, by default), and
    the options both hops read, as configure last saw them. Neither hop holds the other."""

    def __init__(self) -> None:
        self.store: Store = MemoryStore()
        self.dispatch = Dispatch(lambda: self.store.unfinished())
        # The conversations the chat hop has read: a resumed one costs only its new part. Light
        # (the chat hop's configure) in observe mode without records: then it holds about one
        # body per conversation (a long one's: a short history's entry stays whole, memo.LIGHT_FROM).
        self.memo = Memo()
        self.recorder: Any = None  # the chat hop's records.writer.Recorder (bridge_records; configure)
        self.on = True  # bridge
        self.max_body = MAX_BODY  # bridge_max_body
        # A password given inside bridge_state's URL, by the URL shown without it: the option then
        # holds the URL without it (mitmweb's options view shows options), this the secret.
        self._passwords: dict[str, str] = {}
        self._opened: tuple[Any, ...] | None = None  # the settings the store was opened with

    def load(self, loader) -> None:
        loader.add_option("bridge", bool, True, "Bridge planner-bound chat requests (see bridge_mode).")
        loader.add_option(
            "bridge_max_body",
            int,
            MAX_BODY,
            "Largest request body (bytes, decoded) the bridge rewrites; larger ones pass untouched.",
        )
        loader.add_option(
            "bridge_state",
            str | None,
            None,
            "Where both hops share the per-cascade ledger and the chat hop's observations. A path: a SQLite "
            "file (WAL mode) and observation logs beside it (<file>-obs-<day>), for mitmdump processes on one "
            "machine. redis://[user@]host:port/db or rediss:// (TLS): a Redis-protocol server, for hops on "
            f"several hosts; its password from {store_url.PASSWORD_ENV} (or the URL: then removed from this "
            "option). Unset: memory only, forgotten on restart.",
        )
        loader.add_option(
            "bridge_state_prefix",
            str,
            "bridge:",
            "bridge_state on a server: the prefix of every key the bridge writes (several deployments may share "
            "one server with different prefixes).",
        )
        loader.add_option(
            "bridge_state_ca",
            str | None,
            None,
            "bridge_state=rediss://...: a CA file (PEM) the server's certificate is verified against. "
            "Unset: the system's CAs.",
        )
        loader.add_option(
            "bridge_state_timeout_ms",
            int,
            250,
            "bridge_state on a server: milliseconds a planner call waits for the server's answer (beyond the "
            "chat readings it waits for, each until it ends or its own bound). Past it the call is corrected "
            "without the chat hop's evidence.",
        )

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        if "bridge_max_body" in updated and opts.bridge_max_body <= 0:
            raise exceptions.OptionsError("bridge_max_body must be positive")
        self.on, self.max_body = opts.bridge, opts.bridge_max_body
        if updated & STORE_OPTIONS:
            self._configure_store()

    def _configure_store(self) -> None:
        opts = ctx.options
        value = opts.bridge_state
        if opts.bridge_state_timeout_ms <= 0:
            raise exceptions.OptionsError("bridge_state_timeout_ms: must be a positive number of milliseconds")
        if opts.bridge_state_ca and not (value and value.lower().startswith("rediss://")):
            raise exceptions.OptionsError("bridge_state_ca: only for bridge_state=rediss://...")
        if value and store_url.is_url(value):
            self._configure_server(value)
            return
        settings = ("file", value)
        if settings == self._opened:
            return
        try:
            store: Store = SQLiteStore(value) if value else MemoryStore()
        except (OSError, sqlite3.Error) as e:
            raise exceptions.OptionsError(f"bridge_state: cannot open {value!r}: {e}") from e
        self._replace(store, settings)
        if value:
            logger.info(f"bridge: state in {value}")

    def _configure_server(self, value: str) -> None:
        opts = ctx.options
        try:
            where = store_url.parse(value)
        except store_url.LocationError as e:
            raise exceptions.OptionsError(f"bridge_state: {e}") from None
        if store_url.inline_password(value) and where.password:
            self._passwords[where.shown] = where.password
        elif where.password is None and where.shown in self._passwords:  # the option, its password removed
            where = dataclasses.replace(where, password=self._passwords[where.shown])
        timeout = opts.bridge_state_timeout_ms / 1000
        settings = ("server", where, opts.bridge_state_prefix, opts.bridge_state_ca, timeout)
        if settings != self._opened:
            try:
                store = RedisStore(where, prefix=opts.bridge_state_prefix, ca=opts.bridge_state_ca, timeout=timeout)
            except StoreUnreachable as e:
                raise exceptions.OptionsError(f"bridge_state: {e}") from None
            self._replace(store, settings)
            logger.info(f"bridge: state on {where.shown} (keys {opts.bridge_state_prefix}*)")
        if value != where.shown:  # the option keeps no password (mitmweb shows options)
            opts.update(bridge_state=where.shown)

    def _replace(self, store: Store, settings: tuple[Any, ...]) -> None:
        self.store.close()
        self.store = store
        self._opened = settings

    def done(self) -> None:
        self.dispatch.close()
        self.store.close()
