"""The test infrastructure for the shared store: a real redis-server (support.redis_server) and real
hosts as network namespaces (support.hosts). What the multi-host tests rely on, checked on its own:
the password is required and never on a command line, TLS verifies, stop/restart/pause do what they
say, hosts reach each other by address and nothing else, and nothing outlives the test process."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import procs
import pytest
import redis
from support import hosts as hosts_support
from support.hosts import Hosts
from support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e

MakeHosts = Callable[[Sequence[str]], Hosts]


# -- redis-server -------------------------------------------------------------------------------------


def test_the_password_is_required(redis_server: RedisServer) -> None:
    with pytest.raises(redis.AuthenticationError):
        redis_server.client(anonymous=True).ping()
    with pytest.raises(redis.AuthenticationError):
        redis_server.client(password="not-the-password").ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(redis_server.url_without_password).ping()
    assert redis_server.client().ping()
    assert redis.Redis.from_url(redis_server.url).ping()
    assert redis_server.url.startswith("redis://:") and redis_server.password in redis_server.url
    assert redis_server.password not in redis_server.url_without_password


@pytest.mark.usefixtures("need_redis_server")
def test_an_acl_user() -> None:
    with RedisServer(acl_user="bridge") as server:
        assert server.client("bridge").acl_whoami() == "bridge"
        assert redis.Redis.from_url(server.acl_url).acl_whoami() == "bridge"
        assert server.client().acl_whoami() == "default"
        with pytest.raises(redis.AuthenticationError):
            server.client("bridge", server.password).ping()  # the default user's password is not its


def test_tls_verifies_with_the_ca_and_fails_without_it(redis_tls_server: RedisServer) -> None:
    server = redis_tls_server
    assert server.url.startswith("rediss://") and server.ca_file is not None
    assert server.client().ping()
    assert redis.Redis.from_url(server.url, ssl_ca_certs=str(server.ca_file)).ping()
    with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        server.client(trust_ca=False).ping()
    with pytest.raises(redis.ConnectionError):
        server.client(ssl=False).ping()  # plain TCP to the TLS port


async def test_an_asyncio_client(redis_tls_server: RedisServer) -> None:
    client = redis_tls_server.async_client()
    try:
        assert await client.ping()
        assert await client.set("k", "v") and await client.get("k") == b"v"
    finally:
        await client.aclose()


@pytest.mark.usefixtures("need_redis_server")
def test_the_password_is_on_no_command_line_and_its_file_is_private() -> None:
    with RedisServer(acl_user="bridge", tls=True) as server:
        secrets = [server.password.encode(), (server.acl_password or "").encode()]
        for pid in procs.pids():
            for what in ("cmdline", "environ"):
                try:
                    data = Path(f"/proc/{pid}/{what}").read_bytes()
                except OSError:
                    continue
                assert not any(s in data for s in secrets), f"a password in /proc/{pid}/{what}: {procs.cmdline(pid)}"
        assert server.password.encode() in server.config_file.read_bytes()
        assert stat.S_IMODE(server.config_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(server.config_file.parent.stat().st_mode) == 0o700
        assert "redis-server" in procs.cmdline(server.pid or 0)


@pytest.mark.usefixtures("need_redis_server")
def test_a_failed_start_shows_the_log_without_the_password() -> None:
    server = RedisServer()
    server.extra_config = (f"no-such-directive {server.password}",)
    try:
        with pytest.raises(RuntimeError, match="no-such-directive") as failed:
            server.start()
        assert server.password not in str(failed.value) and "<password>" in str(failed.value)
        assert not server.alive()
    finally:
        server.close()


def test_restart_loses_the_data_unless_told_to_keep_it(redis_server: RedisServer) -> None:
    port = redis_server.port
    redis_server.client().set("k", "v")
    redis_server.restart(keep_data=True)
    assert redis_server.port == port
    assert redis_server.client().get("k") == b"v"
    redis_server.restart()
    assert redis_server.port == port
    assert redis_server.client().get("k") is None


def test_stop_and_start_again(redis_server: RedisServer) -> None:
    assert redis_server.stop() == 0
    assert not redis_server.alive()
    with pytest.raises(redis.ConnectionError):
        redis_server.client().ping()
    redis_server.start()
    assert redis_server.client().ping()
    redis_server.kill()
    assert not redis_server.alive()


def test_a_paused_server_accepts_but_does_not_answer_until_resumed(redis_server: RedisServer) -> None:
    redis_server.pause()
    with pytest.raises(redis.TimeoutError):
        redis_server.client(socket_timeout=0.2).ping()
    with socket.create_connection((redis_server.host, redis_server.port), timeout=0.2) as s:
        s.sendall(f"AUTH {redis_server.password}\r\nPING\r\n".encode())  # accepted by the kernel
        with pytest.raises(TimeoutError):
            s.recv(100)
        redis_server.resume()
        s.settimeout(5)
        got = b""
        while got.count(b"\r\n") < 2:
            got += s.recv(100)
        assert got == b"+OK\r\n+PONG\r\n"  # what queued while it was stopped, answered now
    redis_server.pause()
    assert redis_server.stop() == 0  # a paused server stops too


# -- hosts ----------------------------------------------------------------------------------------------

CONNECT = """
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2) as s:
    s.sendall(b"PING\\r\\n")
    print(s.recv(100).decode().strip())
"""


@pytest.mark.usefixtures("need_redis_server")
def test_hosts_reach_each_other_by_address_and_nothing_else(make_hosts: MakeHosts) -> None:
    hosts = make_hosts(["chat", "redis"])
    chat, store = hosts["chat"], hosts["redis"]
    assert (chat.addr, store.addr) == ("10.231.0.10", "10.231.0.11")
    with RedisServer(bind=store.addr, prefix=store.prefix) as server:
        assert server.client(unix=True).ping()  # this process reaches it by its Unix socket only
        done = chat.run([sys.executable, "-c", CONNECT, store.addr, str(server.port)], text=True, timeout=10)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("-NOAUTH"), done.stdout  # a real answer from the server on the other host
        with pytest.raises(OSError):  # the root namespace has no way there
            socket.create_connection((store.addr, server.port), timeout=0.3).close()
    routes = chat.run(["ip", "route"], text=True, check=True).stdout
    assert "default" not in routes and "10.231.0.0/24 dev eth0" in routes


@pytest.mark.usefixtures("make_hosts")  # skips (or fails, in CI) where hosts cannot be made
def test_nothing_remains_after_exit() -> None:
    with Hosts(["a", "b"]) as hosts:
        names = hosts.netns_names
        assert set(names) <= set(hosts_support.namespaces())
        left_running = hosts["a"].popen(["sleep", "600"])
        deadline = time.monotonic() + 5
        while left_running.pid not in hosts["a"].pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert left_running.pid in hosts["a"].pids()
    assert not set(names) & set(hosts_support.namespaces())
    assert left_running.wait(5) == -signal.SIGKILL  # what still ran on a host was ended


KILLED = """
import sys, time
from support.hosts import Hosts
from support.redis_server import RedisServer
hosts = Hosts(["a"]).start()
a = hosts["a"]
sleeper = a.popen(["sleep", "600"])
server = RedisServer(bind=a.addr, prefix=a.prefix).start()
print(sleeper.pid, server.pid, server.dir, *hosts.netns_names, flush=True)
time.sleep(600)
"""


@pytest.mark.usefixtures("need_redis_server")
def test_a_killed_test_process_leaves_nothing_running_and_its_namespaces_go_next_time(make_hosts: MakeHosts) -> None:
    """PR_SET_PDEATHSIG survives ``ip netns exec`` (it execs its command): SIGKILL the python that
    started a process and a redis-server on a host, both end; its namespaces stay (it ran no
    cleanup) until the next Hosts is made."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    owner = subprocess.Popen(
        [sys.executable, "-c", KILLED], cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    line: list[str] = []
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().split()
        assert line, f"the owner ended early (exit {owner.wait()})"
        sleeper, server, server_dir, *names = int(line[0]), int(line[1]), Path(line[2]), *line[3:]
        assert procs.cmdline(sleeper) == "sleep 600" and "redis-server" in procs.cmdline(server)
        assert os.readlink(f"/proc/{sleeper}/ns/net") != os.readlink("/proc/self/ns/net")
        assert set(names) <= set(hosts_support.namespaces()) and server_dir.is_dir()
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        left = procs.wait_gone({sleeper, server}, 5)
        assert not left, f"left behind: {[procs.cmdline(p) for p in left]}"
        # What it left (ran no cleanup) goes with the next Hosts and RedisServer made on this machine:
        # ours below, or a parallel run's already.
        make_hosts(["x"])
        assert not set(names) & set(hosts_support.namespaces())
        with RedisServer():
            assert not server_dir.exists()  # its redis.conf held a (throwaway) password
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if line:
            shutil.rmtree(server_dir, ignore_errors=True)  # the killed owner could not remove it
