"""bridge_state and its options (runtime/state.py): which store each value opens, and where the password goes."""

from __future__ import annotations

import logging

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons
from native_bridge.runtime import redis_store
from native_bridge.runtime import state as state_module
from native_bridge.runtime.redis_store import RedisStore
from native_bridge.runtime.state import BridgeState
from native_bridge.runtime.store import MemoryStore, SQLiteStore
from native_bridge.runtime.store_url import PASSWORD_ENV
from support.redis_server import RedisServer


@pytest.fixture(autouse=True)
def _logged(monkeypatch):
    for module in (state_module, redis_store):
        monkeypatch.setattr(module.logger, "disabled", False)  # whatever logging setup ran before


@pytest.fixture
def state():
    s = BridgeState()
    with taddons.context(s) as tctx:
        yield s, tctx
    s.done()


def test_unset_is_memory_and_a_path_is_sqlite(state, tmp_path):
    s, tctx = state
    assert isinstance(s.store, MemoryStore)
    tctx.configure(s, bridge_state=str(tmp_path / "st.db"))
    assert isinstance(s.store, SQLiteStore)


def test_a_url_with_its_password_opens_the_server_and_the_option_keeps_no_password(
    state, redis_server: RedisServer, caplog: pytest.LogCaptureFixture, monkeypatch
):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    caplog.set_level(logging.DEBUG, logger="native_bridge")
    s, tctx = state
    tctx.configure(s, bridge_state=redis_server.url + "/0")
    assert isinstance(s.store, RedisStore)
    shown = redis_server.url_without_password + "/0"
    assert tctx.options.bridge_state == shown, "mitmweb's options view shows the URL without its password"
    store = s.store
    tctx.configure(s, bridge_state=shown)  # the option as it now reads: the same server, the same store
    assert s.store is store
    assert redis_server.password not in caplog.text
    assert f"state on {shown}" in caplog.text


def test_the_password_from_the_environment(state, redis_server: RedisServer, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, redis_server.password)
    s, tctx = state
    tctx.configure(s, bridge_state=redis_server.url_without_password + "/3")
    assert isinstance(s.store, RedisStore) and s.store.where.db == 3


def test_an_acl_user_in_the_url(state, need_redis_server, monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    s, tctx = state
    with RedisServer(acl_user="bridge") as server:
        tctx.configure(s, bridge_state=server.acl_url + "/0")
        assert isinstance(s.store, RedisStore)
        assert tctx.options.bridge_state == f"redis://bridge@{server.host}:{server.port}/0"


def test_tls_verifies_the_server(state, redis_tls_server: RedisServer, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, redis_tls_server.password)
    s, tctx = state
    url = redis_tls_server.url_without_password.replace("127.0.0.1", "localhost") + "/0"
    with pytest.raises(exceptions.OptionsError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        tctx.configure(s, bridge_state=url)  # the system's CAs do not know the test's CA
    tctx.configure(s, bridge_state=url, bridge_state_ca=str(redis_tls_server.ca_file))
    assert isinstance(s.store, RedisStore) and s.store.where.tls


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bridge_state_ca": "/etc/ssl/ca.pem", "bridge_state": "/tmp/x.db"}, "only for bridge_state=rediss"),
        ({"bridge_state_timeout_ms": 0}, "positive"),
        ({"bridge_state": "redis://:pw-not-shown@host:1/zero"}, "database number"),
    ],
)
def test_bad_settings_are_refused(state, options, message):
    s, tctx = state
    with pytest.raises(exceptions.OptionsError, match=message) as e:
        tctx.configure(s, **options)
    assert "pw-not-shown" not in str(e.value)
