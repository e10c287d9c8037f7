"""bridge_state's server URLs (runtime/store_url.py): what they name, and never their password."""

from __future__ import annotations

import pytest
from native_bridge.runtime import store_url
from native_bridge.runtime.store_url import Location, LocationError, parse

SECRET = "s3cr3t-Pa55word"


def test_a_path_is_not_a_url_and_a_redis_url_is():
    assert not store_url.is_url("/var/lib/bridge/state.sqlite")
    assert not store_url.is_url("redis.sqlite")
    assert store_url.is_url("redis://h:6379/0")
    assert store_url.is_url("REDISS://h/1")


def test_the_parts_and_the_password_kept_apart():
    where = parse(f"redis://bridge:{SECRET}@10.0.0.5:6380/2", environ={})
    assert where == Location("redis", "10.0.0.5", 6380, 2, "bridge", SECRET)
    assert where.shown == "redis://bridge@10.0.0.5:6380/2"
    assert SECRET not in repr(where) and SECRET not in where.shown
    assert not where.tls and parse("rediss://h", environ={}).tls


def test_defaults_and_a_password_only():
    where = parse(f"redis://:{SECRET}@cache", environ={})
    assert (where.host, where.port, where.db, where.user, where.password) == ("cache", 6379, 0, None, SECRET)
    assert where.shown == "redis://cache:6379/0"


def test_the_password_from_the_environment_when_the_url_has_none():
    where = parse("redis://bridge@cache:6379/0", environ={store_url.PASSWORD_ENV: SECRET})
    assert where.password == SECRET
    assert parse(f"redis://:{SECRET}x@cache", environ={store_url.PASSWORD_ENV: SECRET}).password == SECRET + "x"
    assert store_url.inline_password(f"redis://:{SECRET}@cache") and not store_url.inline_password("redis://cache")


def test_a_percent_encoded_password_and_an_ipv6_host():
    where = parse("redis://u:p%40ss%3A1@[::1]:7000/3", environ={})
    assert where.password == "p@ss:1" and where.host == "::1"
    assert where.shown == "redis://u@[::1]:7000/3"


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@host:99999/0",
        f"redis://:{SECRET}@host:6379/db",
        f"redis://:{SECRET}@host:6379/0?ssl_cert_reqs=none",
        f"redis://:{SECRET}@/0",
        f"memcache://:{SECRET}@host:6379/0",
    ],
)
def test_a_bad_url_is_refused_without_quoting_its_password(url: str):
    with pytest.raises(LocationError) as e:
        parse(url, environ={})
    assert SECRET not in str(e.value)
