"""Prior-knowledge HTTP/2 (h2c) on the planner listeners.

The gateway talks gRPC to the language server over cleartext HTTP/2 with prior
knowledge (no TLS, no upgrade). mitmproxy 12.3 only speaks HTTP/2 after ALPN and
its built-in ``disable_h2c`` kills a bare ``PRI *`` preface. A script addon runs
before the built-in ``next_layer``: stating ``h2`` as the negotiated protocol on
both sides of a planner listener makes mitmproxy run its HTTP/2 layers there.
Every other listener is left alone. (mitmproxy PR #8127 adds h2c upstream;
until then pyproject.toml pins the minor version this is tested with.)
"""

from __future__ import annotations

from mitmproxy import connection
from mitmproxy.proxy import layer, server_hooks

H2 = b"h2"


def is_planner(client: connection.Client, specs: frozenset[str]) -> bool:
    """Whether a client connection came in on one of the planner listeners (by mode spec)."""
    mode = client.proxy_mode
    return mode is not None and mode.full_spec in specs


class H2CListener:
    """Makes the listeners whose mode spec is in ``specs`` speak prior-knowledge HTTP/2."""

    def __init__(self) -> None:
        self.specs: frozenset[str] = frozenset()

    def next_layer(self, nextlayer: layer.NextLayer) -> None:
        client = nextlayer.context.client
        if nextlayer.layer is None and client.alpn is None and is_planner(client, self.specs):
            client.alpn = H2  # the built-in next_layer then builds an HTTP/2 server layer

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if is_planner(data.client, self.specs) and data.server.alpn is None:
            data.server.alpn = H2
