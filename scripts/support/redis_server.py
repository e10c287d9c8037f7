"""A real ``redis-server`` for the tests: a free port, a private temporary directory, a random password.

    with RedisServer() as server:                       # 127.0.0.1, plain TCP
        server.client().set("k", "v")                   # a redis.Redis that authenticates
        server.url                                      # redis://:PASSWORD@127.0.0.1:PORT (tests only)
        server.pause(); ...; server.resume()            # a hung store (SIGSTOP / SIGCONT)
        server.restart()                                # same port, data gone (keep_data=True keeps it)

    RedisServer(tls=True)                               # rediss://, a throwaway CA: server.ca_file
    RedisServer(acl_user="bridge")                      # and an ACL user: server.acl_password, server.acl_url
    RedisServer(bind=host.addr, prefix=host.prefix)     # inside a network namespace (support.hosts)

The password is never on a command line (``ps``) nor in the environment: it is written into
``redis.conf`` (mode 0600) in the temporary directory and the server is started as
``redis-server /tmp/.../redis.conf``. Output shown on a failure has it replaced by ``<password>``.

Readiness is a PING (after AUTH) on the server's Unix socket in the same directory: it is reached
from this process also when the server runs in another network namespace, and the server opens
it only after its TCP or TLS listener. Nothing is persisted by default (``save ""``, no AOF), so
a restart loses the data unless ``keep_data=True`` (then ``SHUTDOWN SAVE`` writes an RDB first).

The server ends with this process, also when it is SIGKILLed (support.launcher: PR_SET_PDEATHSIG,
kept across the exec of a ``prefix`` such as ``ip netns exec NAME``, which must exec, not fork).
``BRIDGE_REDIS_SERVER`` names another server binary (valkey-server speaks the same protocol).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from . import launcher
from .certs import make_server_pki

if TYPE_CHECKING:
    import redis
    import redis.asyncio

ENV_BINARY = "BRIDGE_REDIS_SERVER"


def redis_server_path() -> str | None:
    """The server binary: ``$BRIDGE_REDIS_SERVER``, else ``redis-server`` on PATH or in /usr/bin, /usr/sbin."""
    if named := os.environ.get(ENV_BINARY):
        return shutil.which(named)  # a path or a name on PATH; None unless an executable file
    candidates = ("redis-server", "/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server")
    return next((found for c in candidates if (found := shutil.which(c))), None)


def available() -> str | None:
    """None when a server can be started here, else why not."""
    if redis_server_path() is None:
        how = f"${ENV_BINARY} is {os.environ[ENV_BINARY]!r}" if os.environ.get(ENV_BINARY) else "not on PATH"
        return f"redis-server is not installed ({how}; Debian: apt-get install redis-server)"
    return None


def _free_port(bind: str) -> int:
    """A port free now on ``bind`` (or on loopback when ``bind`` is not an address of this namespace)."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    for host, fam in ((bind, family), ("127.0.0.1", socket.AF_INET)):
        try:
            with socket.socket(fam, socket.SOCK_STREAM) as s:
                s.bind((host, 0))
                return s.getsockname()[1]
        except OSError:
            continue
    raise OSError(f"no free port found for {bind}")


DIR_PREFIX = "redis-"  # its temporary directory: redis-<pid>-<starttime>-<random>


def cleanup_stale() -> list[Path]:
    """Remove the temporary directories of runs that are gone (SIGKILLed before their cleanup):
    their redis.conf holds a (throwaway) password. The directories removed."""
    stale = []
    for d in Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}*-*-*"):
        tag = "-".join(d.name.removeprefix(DIR_PREFIX).split("-")[:2])
        if d.is_dir() and not launcher.owner_alive(tag):
            shutil.rmtree(d, ignore_errors=True)
            stale.append(d)
    return stale


def _resp(*args: str | bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _line(s: socket.socket) -> bytes:
    """One reply line (b"" when the server closed the connection)."""
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = s.recv(1)
        if not chunk:
            break
        data += chunk
    return data.removesuffix(b"\r\n")


class RedisServer:
    """One real ``redis-server`` process and its temporary directory (removed by :meth:`close`)."""

    def __init__(
        self,
        *,
        bind: str = "127.0.0.1",
        port: int | None = None,
        tls: bool = False,
        tls_names: Sequence[str] = (),
        acl_user: str | None = None,
        prefix: Sequence[str] = (),
        extra_config: Sequence[str] = (),
        start_timeout: float = 10.0,
    ) -> None:
        """``bind``: the address it listens on; ``port``: else a free one; ``tls``: TLS only (``port 0``,
        ``tls-port``), certificate SANs ``bind``, ``localhost`` and ``tls_names``; ``acl_user``: an ACL
        user besides ``default`` (own random password, all commands and keys); ``prefix``: a command the
        server runs under, which must exec it (``["ip", "netns", "exec", NAME]``); ``extra_config``:
        more redis.conf lines."""
        binary = redis_server_path()
        if binary is None:
            raise FileNotFoundError(available())
        self.binary = binary
        self.bind = bind
        self.tls = tls
        self.tls_names = tuple(tls_names)
        self.acl_user = acl_user
        self.prefix = tuple(prefix)
        self.extra_config = tuple(extra_config)
        self.start_timeout = start_timeout
        self.password = secrets.token_hex(24)
        self.acl_password: str | None = secrets.token_hex(24) if acl_user else None
        self._chosen_port = port is None
        self.port = port if port is not None else 0
        self.dir: Path | None = None
        self.ca_file: Path | None = None
        self._cert: tuple[Path, Path] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    # -- where it is --------------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The address a client connects to (loopback for a wildcard bind)."""
        if self.bind in ("0.0.0.0", "*"):
            return "127.0.0.1"
        if self.bind in ("::", "::0"):
            return "::1"
        return self.bind

    @property
    def _netloc_host(self) -> str:
        try:
            return f"[{self.host}]" if ipaddress.ip_address(self.host).version == 6 else self.host
        except ValueError:
            return self.host

    @property
    def scheme(self) -> str:
        return "rediss" if self.tls else "redis"

    @property
    def url(self) -> str:
        """``redis://:PASSWORD@host:port`` (``rediss://`` with TLS; trust :attr:`ca_file`). For tests only."""
        return f"{self.scheme}://:{quote(self.password, safe='')}@{self._netloc_host}:{self.port}"

    @property
    def url_without_password(self) -> str:
        return f"{self.scheme}://{self._netloc_host}:{self.port}"

    @property
    def acl_url(self) -> str:
        """``redis://USER:PASSWORD@host:port`` for the ACL user."""
        if self.acl_user is None or self.acl_password is None:
            raise ValueError("this server has no ACL user (RedisServer(acl_user=...))")
        user, password = quote(self.acl_user, safe=""), quote(self.acl_password, safe="")
        return f"{self.scheme}://{user}:{password}@{self._netloc_host}:{self.port}"

    @property
    def unix_socket(self) -> Path:
        """The server's Unix socket (no TLS on it): reachable from this process in any network namespace."""
        return self._dir / "redis.sock"

    @property
    def config_file(self) -> Path:
        return self._dir / "redis.conf"

    @property
    def log_file(self) -> Path:
        return self._dir / "redis.log"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def _dir(self) -> Path:
        if self.dir is None:
            raise RuntimeError("the server has not been started")
        return self.dir

    # -- clients ------------------------------------------------------------------------------------

    def client_kwargs(
        self,
        username: str | None = None,
        password: str | None = None,
        *,
        anonymous: bool = False,
        trust_ca: bool = True,
        unix: bool = False,
        asyncio: bool = False,
        **overrides: Any,
    ) -> dict[str, Any]:
        """Keyword arguments for ``redis.Redis`` (``asyncio``: ``redis.asyncio.Redis``): see :meth:`client`."""
        from redis.backoff import NoBackoff

        if asyncio:
            from redis.asyncio.retry import Retry
        else:
            from redis.retry import Retry

        kw: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0, "retry": Retry(NoBackoff(), 0)}
        if unix:
            kw["unix_socket_path"] = str(self.unix_socket)
        else:
            kw.update(host=self.host, port=self.port)
            if self.tls:
                kw.update(ssl=True, ssl_cert_reqs="required", ssl_ca_certs=str(self.ca_file) if trust_ca else None)
        if not anonymous:
            if username is not None and username == self.acl_user and password is None:
                password = self.acl_password
            kw.update(username=username, password=password if password is not None else self.password)
        kw.update(overrides)
        return kw

    def client(
        self,
        username: str | None = None,
        password: str | None = None,
        *,
        anonymous: bool = False,
        trust_ca: bool = True,
        unix: bool = False,
        **overrides: Any,
    ) -> redis.Redis:
        """A sync ``redis.Redis``: the default user with :attr:`password`, or ``username`` (the ACL user's
        password found for it); ``anonymous``: no AUTH; ``trust_ca=False``: verify against the system's
        CAs only (fails on this server's certificate); ``unix``: over :attr:`unix_socket`. 5 s socket
        timeouts and no retries unless ``overrides`` say otherwise."""
        import redis

        return redis.Redis(
            **self.client_kwargs(username, password, anonymous=anonymous, trust_ca=trust_ca, unix=unix, **overrides)
        )

    def async_client(
        self,
        username: str | None = None,
        password: str | None = None,
        *,
        anonymous: bool = False,
        trust_ca: bool = True,
        unix: bool = False,
        **overrides: Any,
    ) -> redis.asyncio.Redis:
        """The same as :meth:`client`, a ``redis.asyncio.Redis`` (close it with ``await c.aclose()``)."""
        import redis.asyncio

        kw = self.client_kwargs(
            username, password, anonymous=anonymous, trust_ca=trust_ca, unix=unix, asyncio=True, **overrides
        )
        return redis.asyncio.Redis(**kw)

    # -- life ---------------------------------------------------------------------------------------

    def _config(self) -> str:
        d = self._dir
        lines = [
            f"bind {self.bind}",
            *(["port 0", f"tls-port {self.port}"] if self.tls else [f"port {self.port}"]),
            "daemonize no",
            "supervised no",
            "always-show-logo no",
            f'dir "{d}"',
            f'logfile "{self.log_file}"',
            "loglevel notice",
            f'unixsocket "{self.unix_socket}"',
            "unixsocketperm 700",
            'save ""',
            "appendonly no",
            "dbfilename dump.rdb",
            f"requirepass {self.password}",
        ]
        if self.acl_user is not None:
            lines.append(f"user {self.acl_user} on >{self.acl_password} ~* &* +@all")
        if self.tls:
            assert self._cert is not None and self.ca_file is not None
            lines += [
                f'tls-cert-file "{self._cert[0]}"',
                f'tls-key-file "{self._cert[1]}"',
                f'tls-ca-cert-file "{self.ca_file}"',
                "tls-auth-clients no",
            ]
        return "\n".join([*lines, *self.extra_config, ""])

    def _write_config(self) -> None:
        fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self._config())

    def _redact(self, text: str) -> str:
        for secret in (self.password, self.acl_password):
            if secret:
                text = text.replace(secret, "<password>")
        return text

    def output(self, lines: int = 40) -> str:
        """The tail of the server's log and of what it wrote to stdout/stderr, passwords replaced."""
        parts = []
        for path in (self.log_file, self._dir / "stdout.log"):
            with contextlib.suppress(OSError):
                text = path.read_text(errors="replace").splitlines()[-lines:]
                if text:
                    parts.append(f"--- {path.name} ---\n" + "\n".join(text))
        return self._redact("\n".join(parts) or "(the server wrote nothing)")

    def _command(self, *args: str, timeout: float = 1.0) -> bytes:
        """AUTH, then one command on the Unix socket: the command's first reply line (b"" if it closed)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.unix_socket))
            s.sendall(_resp("AUTH", self.password))  # its reply first: SHUTDOWN would leave it unsent
            auth = _line(s)
            if not auth.startswith(b"+OK"):
                raise ConnectionError(
                    f"AUTH on the Unix socket answered {self._redact(auth.decode(errors='replace'))!r}"
                )
            s.sendall(_resp(*args))
            return _line(s)

    def ping(self) -> bool:
        """PONG on the Unix socket (false while it loads its data, paused, or not up)."""
        try:
            return self._command("PING") == b"+PONG"
        except OSError:  # not there yet, refused, timed out, reset
            return False

    def start(self) -> RedisServer:
        """Start (again, after :meth:`stop`: same port, same directory and passwords); return once it answers PING."""
        if self._proc is not None and self._proc.poll() is None:
            raise RuntimeError("the server is already running")
        if self.dir is None:
            cleanup_stale()
            # 0700; short enough for the socket path; named for this process, see cleanup_stale
            self.dir = Path(tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{launcher.owner_tag()}-"))
            if self.tls:
                pki = make_server_pki(self.dir, [self.host, "localhost", *self.tls_names])
                self.ca_file, self._cert = pki.ca_file, (pki.cert_file, pki.key_file)
        attempts = 5 if self._chosen_port and self.port == 0 else 1
        for attempt in range(attempts):
            if self._chosen_port and (self.port == 0 or attempt):
                self.port = _free_port(self.bind)
            if self._launch():
                return self
            if attempt + 1 < attempts and "Address already in use" in self.output():
                continue  # another process took the free port between our look and its bind
            break
        hung = self.alive()
        code = self.kill()
        argv = " ".join([*self.prefix, self.binary, str(self.config_file)])
        what = f"did not answer PING within {self.start_timeout}s (killed)" if hung else f"exited {code}"
        raise RuntimeError(f"redis-server for {self.host}:{self.port} {what}: {argv}\n{self.output()}")

    def _launch(self) -> bool:
        with contextlib.suppress(FileNotFoundError):
            self.unix_socket.unlink()
        self._write_config()
        with open(self._dir / "stdout.log", "ab") as out:
            self._proc = launcher.popen(
                [*self.prefix, self.binary, str(self.config_file)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self._dir,
            )
        self.paused = False
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if self.unix_socket.exists() and self.ping():
                return True
            time.sleep(0.01)
        return False

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _state(self) -> str | None:
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return None
        return stat[stat.rfind(")") + 2 :].split()[0]

    def _signal_until(self, sig: int, stopped: bool, timeout: float = 5.0) -> None:
        if not self.alive():
            raise RuntimeError("the server is not running")
        assert self._proc is not None
        self._proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        while (self._state() in ("T", "t")) != stopped and time.monotonic() < deadline:
            time.sleep(0.002)

    def pause(self) -> None:
        """SIGSTOP: connections open and commands are accepted by the kernel, but nothing answers."""
        self._signal_until(signal.SIGSTOP, stopped=True)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT: it answers again, everything that queued meanwhile first."""
        self._signal_until(signal.SIGCONT, stopped=False)
        self.paused = False

    def kill(self) -> int | None:
        """SIGKILL, as a crash: nothing saved."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.kill()
        self.paused = False
        return self._proc.wait()

    def stop(self, *, save: bool = False, timeout: float = 10.0) -> int | None:
        """End the server (SIGTERM; ``save``: ``SHUTDOWN SAVE``, an RDB the next start loads). Its
        directory stays, for :meth:`start` or :meth:`restart`, until :meth:`close`. The exit code."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            if self.paused:
                self.resume()
            if save:
                reply = self._command("SHUTDOWN", "SAVE", timeout=timeout)
                if reply.startswith(b"-"):
                    raise RuntimeError(f"SHUTDOWN SAVE failed: {reply.decode(errors='replace')}\n{self.output()}")
            else:
                self._proc.terminate()
        return self._halt(timeout)

    def _halt(self, timeout: float = 10.0) -> int | None:
        if self._proc is None:
            return None
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self.paused = False
        return self._proc.returncode

    def restart(self, *, keep_data: bool = False) -> RedisServer:
        """Stop and start again on the same port: empty unless ``keep_data`` (saved at the stop)."""
        self.stop(save=keep_data)
        if not keep_data:
            self.forget_data()
        return self.start()

    def forget_data(self) -> None:
        """Remove what a stopped server saved (RDB, AOF): the next start begins empty."""
        with contextlib.suppress(FileNotFoundError):
            (self._dir / "dump.rdb").unlink()
        shutil.rmtree(self._dir / "appendonlydir", ignore_errors=True)

    def close(self) -> None:
        """Stop it and remove its directory."""
        try:
            self.stop()
        finally:
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None

    def __enter__(self) -> RedisServer:
        try:
            return self.start()
        except BaseException:
            self.close()  # with never calls __exit__ when __enter__ raises: its directory goes now
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "paused" if self.paused else "running" if self.alive() else "stopped"
        return f"<RedisServer {self.url_without_password} {state} pid={self.pid}>"
