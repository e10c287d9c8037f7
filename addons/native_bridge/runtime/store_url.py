"""Where the shared state lives, as ``bridge_state`` names it, and how it is named without its secret.

A path is the one-machine store (SQLite beside its observation logs); ``redis://`` and
``rediss://`` (TLS) name a Redis-protocol server. The server's password is a secret like an API
key: it comes from the URL or from ``BRIDGE_STATE_PASSWORD`` and is never part of
:attr:`Location.shown`, the only form that goes into a log line, an error, a record or an option.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field

SCHEMES = ("redis", "rediss")
PASSWORD_ENV = "BRIDGE_STATE_PASSWORD"  # the password when the URL has none (the shim sets it)


class LocationError(ValueError):
    """A ``bridge_state`` value that names no store we can use (the message holds no password)."""


@dataclass(frozen=True, slots=True)
class Location:
    """A Redis-protocol server: host, port, database, user and (kept apart) password."""

    scheme: str
    host: str
    port: int
    db: int
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def tls(self) -> bool:
        return self.scheme == "rediss"

    @property
    def shown(self) -> str:
        """The URL without its password: what logs, errors and the options show."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{urllib.parse.quote(self.user, safe='')}@" if self.user else ""
        return f"{self.scheme}://{user}{host}:{self.port}/{self.db}"


def is_url(value: str) -> bool:
    """Whether ``bridge_state`` names a server rather than a file."""
    return value.split("://", 1)[0].lower() in SCHEMES and "://" in value


def parse(value: str, environ: dict[str, str] | os._Environ[str] | None = None) -> Location:
    """The server a ``redis://`` or ``rediss://`` URL names. The password: the URL's, else
    ``BRIDGE_STATE_PASSWORD``. Raises :class:`LocationError` (never quoting the password)."""
    environ = os.environ if environ is None else environ
    try:
        u = urllib.parse.urlsplit(value)
        port = u.port or 6379
    except ValueError as e:  # a bad port; urlsplit's message quotes no credentials
        raise LocationError(f"not a redis:// URL: {e}") from None
    scheme = u.scheme.lower()
    shown = f"{scheme}://{u.hostname or ''}"
    if scheme not in SCHEMES:
        raise LocationError(f"{shown}: the scheme must be redis or rediss")
    if not u.hostname:
        raise LocationError(f"{shown}: no host")
    path = u.path.strip("/") or "0"
    if not path.isdigit():
        raise LocationError(f"{shown}:{port}: the path must be a database number, e.g. /0")
    if u.query or u.fragment:
        raise LocationError(f"{shown}:{port}: no query or fragment (use the bridge_state_* options)")
    user = urllib.parse.unquote(u.username) if u.username else None
    password = urllib.parse.unquote(u.password) if u.password is not None else None
    if not password:
        password = environ.get(PASSWORD_ENV) or None
    return Location(scheme, u.hostname, port, int(path), user, password)


def inline_password(value: str) -> bool:
    """Whether the URL itself carries a password."""
    try:
        return bool(urllib.parse.urlsplit(value).password)
    except ValueError:
        return False
