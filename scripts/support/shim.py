"""The language-server shim's parts (scripts/language-server-shim is its entry point): its
settings (shim.toml), the flags it rewrites, the two children it starts and watches, and the reason
it gives when mitmdump does not come up. See the entry script's docstring for what it does."""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import tomllib
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .lifetime import die_with_parent, ending_with

ROOT = Path(__file__).resolve().parents[2]

NAME = "language-server-shim"
SETTINGS = Path(".config") / "native-bridge" / "shim.toml"
DEFAULT_PORT = 42100  # the gateway's default --server_port
HOST = "127.0.0.1"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE = 10.0  # seconds a child gets to end after SIGTERM (mitmdump flushes its records)
# mitmdump listens even when its start-up logged an error, then exits (~0.3 s later): a listener
# that stays up this long is taken as started.
SETTLE = 1.0
PASSWORD_ENV = "BRIDGE_STATE_PASSWORD"  # where mitmdump reads the store's password (never a --set)
STORE_SCHEMES = ("redis", "rediss")
REDIS_PORT = 6379
MASK = "***"
TAIL_LINES = 400  # mitmdump's output kept for the reason it ended (when it goes to the shim's stderr)
TAIL_BYTES = 64 * 1024  # the same, read back from the log file
REASONS = 5  # error lines at most in the shim's own error line


class ShimError(Exception):
    """A problem the user must fix (settings, flags, a listener that never came up)."""


# ------------------------------------------------------------------ secrets

_secrets: set[str] = set()
# A password inside a redis:// URL (what is echoed may hold one the settings did not name).
_URL_PASSWORD = re.compile(r"(?i)\b(rediss?://[^\s/@:]*:)[^\s@]+@")


def keep_secret(value: str) -> None:
    """Mask ``value`` (as given and percent-encoded) in everything the shim prints from now on."""
    _secrets.update(v for v in (value, urllib.parse.quote(value, safe="")) if v)


def redact(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):  # longest first: one may contain the other
        text = text.replace(secret, MASK)
    return _URL_PASSWORD.sub(rf"\g<1>{MASK}@", text)


def fail(message: str, code: int = 2) -> int:
    print(f"{NAME}: error: {redact(message)}", file=sys.stderr, flush=True)
    return code


def say(message: str) -> None:
    print(f"{NAME}: {redact(message)}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ settings


@dataclass
class Settings:
    path: Path
    ls_binary: Path
    mitmdump: Path
    state: Path | str | None = None  # a SQLite file, or a redis:// URL without its password
    state_password: str | None = field(default=None, repr=False)  # for mitmdump's environment only
    state_ca: Path | None = None
    records: Path | None = None
    client: str | None = None
    options: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    log: Path | None = None
    startup_timeout: float = 20.0
    warnings: list[str] = field(default_factory=list)  # printed at start, not fatal


_KNOWN = {
    "ls_binary",
    "mitmdump",
    "state",
    "state_password_file",
    "state_ca",
    "records",
    "client",
    "options",
    "args",
    "log",
    "startup_timeout",
}
# Set by the shim's own settings, which keep the password off mitmdump's command line.
_OWN_OPTIONS = {"bridge_state": "state", "bridge_state_ca": "state_ca"}
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def masked_url(value: str) -> str:
    """``value`` with the password of its user part replaced, even when the URL is malformed."""
    scheme, sep, rest = value.partition("://")
    userinfo, at, after = rest.rpartition("@")  # the last @: a password may hold an unencoded one
    if not (sep and at):
        return value
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}{sep}{user}{':' + MASK if colon else ''}@{after}"


@dataclass(frozen=True)
class StoreURL:
    shown: str  # scheme://[user@]host:port/db: what mitmdump's command line gets
    password: str | None = field(default=None, repr=False)

    @property
    def tls(self) -> bool:
        return self.shown.startswith("rediss://")


def store_url(value: str) -> StoreURL:
    """A ``redis://`` or ``rediss://`` URL taken apart (as the addon's bridge_state reads it); a
    ShimError that never quotes the password when it is not one."""
    shown = masked_url(value)

    def bad(why: str) -> ShimError:
        return ShimError(f"state {shown}: {why}")

    try:
        u = urllib.parse.urlsplit(value)
    except ValueError as e:  # e.g. an unclosed [ of an IPv6 host; the message quotes no credentials
        raise bad(f"not a URL ({e})") from None
    scheme = u.scheme.lower()
    if scheme not in STORE_SCHEMES:
        raise bad("the scheme must be redis:// or rediss:// (TLS); anything else must be a path")
    if "@" in value.partition("://")[2] and "@" not in u.netloc:
        raise bad("the user or password holds a '/', '?' or '#': percent-encode it, or use state_password_file")
    if not u.hostname:
        raise bad("no host")
    try:
        port = u.port
    except ValueError:
        port = 0
    if port == 0:
        raise bad("the port must be a number from 1 to 65535")
    if not re.fullmatch(r"/?|/\d+", u.path):
        raise bad("the path must be a database number, e.g. /0")
    if u.query or u.fragment:
        raise bad("no query or fragment (mitmdump's bridge_state_* options go in options)")
    user = urllib.parse.unquote(u.username) if u.username else None
    password = urllib.parse.unquote(u.password) if u.password else None
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    who = f"{urllib.parse.quote(user, safe='')}@" if user else ""
    db = int(u.path.strip("/") or 0)
    return StoreURL(f"{scheme}://{who}{host}:{port or REDIS_PORT}/{db}", password)


def read_password_file(path: Path, warnings: list[str]) -> str:
    """The password a file holds (a mounted secret): its content without surrounding white space."""
    try:
        mode = path.stat().st_mode  # through symlinks: Kubernetes mounts secrets as links into ..data/
        content = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ShimError(f"state_password_file {path}: cannot read it ({e.strerror or type(e).__name__})") from None
    except UnicodeDecodeError:  # its message would quote a byte of the secret
        raise ShimError(f"state_password_file {path}: not UTF-8 text") from None
    password = content.strip()
    if not password:
        raise ShimError(f"state_password_file {path} is empty")
    if "\n" in password or "\r" in password:
        raise ShimError(f"state_password_file {path} must hold the password alone, on one line")
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        warnings.append(
            f"state_password_file {path} is readable by group or others (mode {stat.S_IMODE(mode):04o}): "
            "chmod 600 it (Kubernetes: the secret volume's defaultMode)"
        )
    return password


def settings_path(env: dict[str, str]) -> Path:
    home = env.get("HOME")
    if not home:
        raise ShimError(f"HOME is not set, so there is no settings file (~/{SETTINGS}) to read")
    return Path(home) / SETTINGS


def load_settings(path: Path) -> Settings:
    if not path.is_file():
        raise ShimError(
            f'no settings file at {path}: it must name the real language server (ls_binary = "..."); '
            "see the top of scripts/language-server-shim"
        )
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ShimError(f"{path}: cannot read it as TOML: {e}") from e
    unknown = sorted(set(doc) - _KNOWN)
    if unknown:
        raise ShimError(f"{path}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(_KNOWN))})")

    def text(key: str) -> str | None:
        value = doc.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ShimError(f"{path}: {key} must be a non-empty string, not {value!r}")
        return value

    def a_path(key: str) -> Path | None:
        value = text(key)
        return None if value is None else path.parent / Path(value).expanduser()

    def strings(key: str) -> list[str]:
        value = doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ShimError(f"{path}: {key} must be a list of strings, not {value!r}")
        return value

    def state() -> tuple[Path | str | None, str | None, Path | None]:
        """bridge_state (a path, or the URL without its password), the password, bridge_state_ca."""
        value, password_file, ca = text("state"), a_path("state_password_file"), a_path("state_ca")
        if value is None or not _URL.match(value):
            if password_file is not None or ca is not None:
                raise ShimError(f'{path}: state_password_file and state_ca are for state = "redis://..." only')
            return (None if value is None else path.parent / Path(value).expanduser()), None, None
        try:
            url = store_url(value)
        except ShimError as e:
            raise ShimError(f"{path}: {e}") from None
        password = url.password
        if password is not None:
            keep_secret(password)
        if password_file is not None:
            if password is not None:
                raise ShimError(f"{path}: state {masked_url(value)} holds a password and state_password_file is set")
            try:
                password = read_password_file(password_file, warnings)
            except ShimError as e:
                raise ShimError(f"{path}: {e}") from None
            keep_secret(password)
        if ca is not None:
            if not url.tls:
                raise ShimError(f'{path}: state_ca is for state = "rediss://..." (TLS) only, not {url.shown}')
            if not ca.is_file():
                raise ShimError(f"{path}: state_ca {ca} is not a file")
        return url.shown, password, ca

    warnings: list[str] = []
    state_value, state_password, state_ca = state()  # first: any password is masked in the errors below
    ls_binary = a_path("ls_binary")
    if ls_binary is None:
        raise ShimError(f"{path}: ls_binary (the real language server) is required")
    if not (ls_binary.is_file() and os.access(ls_binary, os.X_OK)):
        raise ShimError(f"{path}: ls_binary {ls_binary} is not an executable file")
    mitmdump = a_path("mitmdump") or ROOT / ".venv" / "bin" / "mitmdump"
    if not (mitmdump.is_file() and os.access(mitmdump, os.X_OK)):
        raise ShimError(f'{path}: mitmdump {mitmdump} is not an executable file (set mitmdump = "...")')
    options = strings("options")
    for option in options:
        if "=" not in option:
            raise ShimError(f"{path}: options entries are name=value (given to --set), not {redact(option)!r}")
        if (own := _OWN_OPTIONS.get(option.partition("=")[0])) is not None:
            raise ShimError(f'{path}: set {own} = "..." instead of options entry {option.partition("=")[0]}')
    args = strings("args")
    for arg in [*options, *args]:
        if _URL_PASSWORD.search(arg):  # it would be on mitmdump's command line
            raise ShimError(f"{path}: a password in options or args would be on a command line: {redact(arg)!r}")
    timeout = doc.get("startup_timeout", 20.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ShimError(f"{path}: startup_timeout must be a positive number of seconds, not {timeout!r}")
    return Settings(
        path=path,
        ls_binary=ls_binary,
        mitmdump=mitmdump,
        state=state_value,
        state_password=state_password,
        state_ca=state_ca,
        records=a_path("records"),
        client=text("client"),
        options=options,
        args=args,
        log=a_path("log"),
        startup_timeout=float(timeout),
        warnings=warnings,
    )


# ------------------------------------------------------------------ flags


def server_port(argv: list[str]) -> tuple[int, int | None]:
    """The port the gateway asked for, and the index of the flag carrying it (None: not given)."""
    for i, arg in enumerate(argv):
        name, sep, value = arg.partition("=")
        if name in ("--server_port", "-server_port"):
            if not sep:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            try:
                return int(value), i
            except ValueError:
                raise ShimError(f"--server_port: not a port number: {value!r}") from None
    return DEFAULT_PORT, None


def with_port(argv: list[str], index: int | None, port: int) -> list[str]:
    """The same flags with --server_port set to ``port``."""
    if index is None:
        return [*argv, f"--server_port={port}"]
    out = list(argv)
    name, sep, _ = out[index].partition("=")
    if sep:
        out[index] = f"{name}={port}"
    else:
        out[index + 1] = str(port)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def mitmdump_command(settings: Settings, listen: int, upstream: int) -> list[str]:
    spec = f"reverse:http://{HOST}:{upstream}@{listen}"
    cmd = [
        str(settings.mitmdump),
        "--mode",
        spec,
        "--listen-host",
        HOST,
        "-s",
        str(ROOT / "addons" / "bridge.py"),
        "--set",
        f"bridge_planner={spec}",
    ]
    for option, value in (
        ("bridge_state", settings.state),  # a URL here never holds the password (load_settings took it out)
        ("bridge_state_ca", settings.state_ca),
        ("bridge_records", settings.records),
    ):
        if value is not None:
            cmd += ["--set", f"{option}={value}"]
    if settings.client:
        cmd += ["--set", f"bridge_planner_client={settings.client}"]
    for option in settings.options:
        cmd += ["--set", option]
    return cmd + settings.args


def environments(settings: Settings, environ: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The real binary's environment and mitmdump's: only mitmdump gets the store's password."""
    ls = {name: value for name, value in environ.items() if name != PASSWORD_ENV}
    mitmdump = dict(environ)
    if settings.state_password is not None:
        mitmdump[PASSWORD_ENV] = settings.state_password
    return ls, mitmdump


# ------------------------------------------------------------------ why mitmdump ended

_STAMP = re.compile(r"^\[\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\]\s*")  # termlog's [HH:MM:SS.mmm]
# A client connection's own line ([127.0.0.1:50312] ...): a flow's fate (the shim's own probe among
# them), never why mitmdump ended.
_CONNECTION = re.compile(r"^\[[^\]\s]*:\d+\]")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception|Exit))(?::\s*(.*))?$")
_ERRORISH = re.compile(
    r"(?i)\b(errors?|failed|fails?|cannot|can't|could not|unable|refused|denied|invalid|unrecognized|"
    r"no such|not found|unknown|timed out|timeout)\b"
)
# Lines that say an error happened, not which: the traceback's last line or the next one says it.
_NOISE = re.compile(r"(?i)^(errors? logged during startup|error in script |traceback \(most recent call last\))")


def reasons(output: str, limit: int = REASONS, *, newest: bool = False) -> list[str]:
    """The lines of mitmdump's output that say why it ended: exception lines (an OptionsError by its
    message alone), error-like log lines, the first ones (at start-up the first error is the cause;
    ``newest``: the last ones, after a long run); else its last lines. Passwords masked."""
    found: list[str] = []
    last: list[str] = []
    for raw in redact(output).splitlines():
        if not raw.strip() or raw[0].isspace():  # traceback frames, continuation lines
            continue
        line = _STAMP.sub("", raw).strip()
        if _NOISE.match(line) or _CONNECTION.match(line):
            continue
        last.append(line)
        if m := _EXCEPTION.match(line):
            name, message = m.groups()
            line = message if name == "OptionsError" and message else f"{name}: {message}" if message else name
        elif not _ERRORISH.search(line):
            continue
        if line not in found:
            found.append(line)
    found = found[-limit:] if newest else found[:limit]
    return [line[:500] for line in (found or last[-3:])]


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"exited with {returncode} ({signal.Signals(-returncode).name})"
    return f"exited with {returncode}"


# ------------------------------------------------------------------ processes


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, port)) == 0


def exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class Shim:
    def __init__(self, settings: Settings, argv: list[str]) -> None:
        self.settings = settings
        self.argv = argv
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.pgid: int | None = None
        self.signalled: int | None = None
        self._log_file: Any = None
        self._log_start = 0  # where this run's mitmdump output begins in the log file
        self._tail: collections.deque[bytes] = collections.deque(maxlen=TAIL_LINES)
        self._tee_thread: threading.Thread | None = None
        self.mitmdump_listened = False

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signalled = self.signalled or signum
        for _, child in self.children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signum)

    def _spawn(self, name: str, cmd: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(
            cmd,
            process_group=self.pgid or 0,
            preexec_fn=ending_with(os.getpid()),  # ends with the shim, even when it is SIGKILLed
            **kwargs,
        )
        if self.pgid is None:
            self.pgid = child.pid
        self.children.append((name, child))
        return child

    def _first_exit(self) -> tuple[str, int] | None:
        for name, child in self.children:
            if child.poll() is not None:
                return name, child.returncode
        return None

    def _wait_listening(self, name: str, port: int) -> tuple[str, int] | None:
        """Wait until ``port`` listens; a child's exit or a signal ends the wait early."""
        deadline = time.monotonic() + self.settings.startup_timeout
        while not listening(port):
            if (ended := self._first_exit()) is not None or self.signalled is not None:
                return ended
            if time.monotonic() > deadline:
                raise ShimError(f"{name} did not listen on {HOST}:{port} within {self.settings.startup_timeout:g}s")
            time.sleep(0.05)
        return None

    def _settle(self) -> tuple[str, int] | None:
        """A child that exits within SETTLE of mitmdump listening (mitmdump after a start-up error)."""
        deadline = time.monotonic() + min(SETTLE, self.settings.startup_timeout)
        while time.monotonic() < deadline:
            if (ended := self._first_exit()) is not None or self.signalled is not None:
                return ended
            time.sleep(0.05)
        return None

    def _spawn_mitmdump(self, asked: int, upstream: int, env: dict[str, str]) -> None:
        if self.settings.log is not None:
            self.settings.log.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.settings.log, "ab")  # noqa: SIM115 (closed in _shutdown)
            self._log_start = os.fstat(self._log_file.fileno()).st_size
            output: Any = self._log_file
        else:  # through the shim: its stderr still gets everything, and the shim keeps the tail
            output = subprocess.PIPE
        child = self._spawn(
            "mitmdump",
            mitmdump_command(self.settings, asked, upstream),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
        )
        if child.stdout is not None:
            self._tee_thread = threading.Thread(target=self._tee, args=(child.stdout,), daemon=True)
            self._tee_thread.start()

    def _tee(self, pipe: Any) -> None:
        """mitmdump's output to the shim's stderr line by line (passwords masked), its tail kept."""
        with pipe:
            for line in iter(pipe.readline, b""):
                line = redact(line.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
                self._tail.append(line)
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.buffer.write(line)
                    sys.stderr.buffer.flush()

    def mitmdump_output(self) -> str:
        """What mitmdump wrote in this run (the end of it)."""
        if self.settings.log is None:
            return b"".join(self._tail).decode("utf-8", "replace")
        try:
            with open(self.settings.log, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(self._log_start, size - TAIL_BYTES))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _why(self, newest: bool = False) -> str:
        """``: <mitmdump's error lines>`` (or where to look), for the shim's own error line."""
        found = reasons(self.mitmdump_output(), newest=newest)
        where = f" (mitmdump's output: {self.settings.log})" if self.settings.log is not None else ""
        return f": {'; '.join(found)}{where}" if found else f"; it wrote no reason{where}"

    def _wait_first_exit(self) -> tuple[str, int] | None:
        """The first child to exit; after a (forwarded) signal, give them the grace period to do so."""
        signalled_at: float | None = None
        while (ended := self._first_exit()) is None:
            if self.signalled is not None:
                signalled_at = signalled_at or time.monotonic()
                if time.monotonic() - signalled_at > GRACE:
                    return None
            time.sleep(0.05)
        return ended

    def run(self) -> int:
        for sig in FORWARDED:
            signal.signal(sig, self._on_signal)
        die_with_parent(signal.SIGTERM, os.getppid())  # end with the gateway that started us
        asked, index = server_port(self.argv)
        upstream = free_port()
        ls_env, mitmdump_env = environments(self.settings, dict(os.environ))
        started = False
        try:
            ls = self._spawn(
                "language server", [str(self.settings.ls_binary), *with_port(self.argv, index, upstream)], env=ls_env
            )
            ended = self._wait_listening("the language server", upstream)
            if ended is None and self.signalled is None:
                self._spawn_mitmdump(asked, upstream, mitmdump_env)
                ended = self._wait_listening("mitmdump", asked)
                if ended is None and self.signalled is None:
                    self.mitmdump_listened = True
                    ended = self._settle()
            if ended is None and self.signalled is None:
                started = True
                say(f"planner hop on {HOST}:{asked} -> language server (pid {ls.pid}) on {HOST}:{upstream}")
            ended = ended or self._wait_first_exit()
        except ShimError as e:
            self._shutdown()
            why = self._why() if any(name == "mitmdump" for name, _ in self.children) else ""  # its time-out
            return fail(f"{e}{why}", 1)
        except BaseException:  # KeyboardInterrupt, a failed spawn: no child stays behind
            self._shutdown()
            raise
        # mitmdump ending on its own with an error (an unreachable store, a busy port): the reason is
        # in its output, which the gateway may not show; the shim's last line names it.
        failed = ended is not None and ended[0] == "mitmdump" and ended[1] != 0 and self.signalled is None
        if ended is not None and not failed:
            say(f"{ended[0]} {describe_exit(ended[1])}; ending the rest")
        self._shutdown()
        if failed:
            assert ended is not None
            when = "" if started else " during start-up" if self.mitmdump_listened else " before listening"
            return fail(f"mitmdump {describe_exit(ended[1])}{when}{self._why(newest=started)}", exit_code(ended[1]))
        return exit_code(ended[1]) if ended is not None else 128 + (self.signalled or 0)

    def _shutdown(self) -> None:
        """SIGTERM to every child still running, SIGKILL after the grace period, then to the whole group."""
        for _, child in self.children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.terminate()
        deadline = time.monotonic() + GRACE
        for _, child in self.children:
            try:
                child.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if self.pgid is not None:  # grandchildren (a worker, the real binary's helpers)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
        if self._tee_thread is not None:  # every writer is gone: the pipe ends
            self._tee_thread.join(2.0)
        if self._log_file is not None:
            self._log_file.close()


def main(argv: list[str]) -> int:
    try:
        settings = load_settings(settings_path(dict(os.environ)))
    except ShimError as e:
        return fail(str(e))
    for warning in settings.warnings:
        say(f"warning: {warning}")
    try:
        return Shim(settings, argv).run()
    except ShimError as e:
        return fail(str(e))
