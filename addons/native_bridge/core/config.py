"""The rewrite's configuration (:class:`Config`): which kinds of step to make, each tool's kind,
the dialect and the client. Here, below the memo, so that the memo's entries name the config
they were made with (pipeline.py re-exports it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .kinds import KINDS
from .rules.tool_names import DEFAULT_TOOL_KINDS


@dataclass(frozen=True, slots=True)
class Config:
    kinds: frozenset[str] = frozenset(KINDS)
    tool_kinds: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TOOL_KINDS))
    dialect: str = "auto"  # or a name in DIALECTS: skip detection
    client: str | None = None  # the client (clients.py) whose words count; None: identify it per request
    # for_client's configs, kept by the config they were made from (the root): never pickled.
    _for: dict[str | None, Config] = field(default_factory=dict, init=False, repr=False, compare=False)
    _root: Config | None = field(default=None, init=False, repr=False, compare=False)

    def for_client(self, client: str | None) -> Config:
        """This config with ``client``: one object per client, so the memo finds its entries by
        identity, not by comparing tool tables on every request. Asked of another client's
        config, the answer is the same object."""
        if client == self.client:
            return self
        root = self._root or self
        if client == root.client:
            return root
        config = root._for.get(client)
        if config is None:
            config = replace(root, client=client)
            object.__setattr__(config, "_root", root)
            root._for[client] = config
        return config

    def __reduce__(self) -> tuple[Any, ...]:
        # Its four fields only: a job pickled in a thread must not see the loop add to the cache.
        return (Config, (self.kinds, self.tool_kinds, self.dialect, self.client))
