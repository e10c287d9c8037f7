"""Real "hosts" for multi-host tests: one Linux network namespace each, on one private switch.

    with Hosts(["chat", "gw1", "gw2", "redis", "lb"]) as hosts:
        redis = RedisServer(bind=hosts["redis"].addr, prefix=hosts["redis"].prefix).start()
        hosts["chat"].run(["redis-cli", "-h", hosts["redis"].addr, "ping"])      # over the switch
        proc = hosts["gw1"].popen([...])                                         # a subprocess.Popen

The layout, all of it outside the root namespace (no default route anywhere: no packet can leave):

    switch namespace: bridge br0 ── p0 ┄┄ eth0 in host 0 (10.231.0.10/24), lo up
                                 ── p1 ┄┄ eth0 in host 1 (10.231.0.11/24), lo up
                                 ...

Namespace names are ``nbt-<pid>-<starttime>-<random>[-<host>]``: parallel runs never collide,
and a run that died without cleaning up (SIGKILLed) is recognised by the next :class:`Hosts`,
which removes its namespaces (ending what still runs in them). Processes started with
:meth:`Host.popen` or :meth:`Host.run` end with this process (support.launcher): the
PR_SET_PDEATHSIG request survives ``ip netns exec``, which execs the command.

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2's ``ip``: :func:`available` says why not.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import launcher

PREFIX = "nbt"
SUBNET = "10.231.0"  # /24; host i is SUBNET.(10 + i)
FIRST_HOST = 10
_NAME = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-([0-9a-f]+)(?:-([a-z0-9][a-z0-9-]*))?$")
_HOST_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,30}$")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = launcher.run(["ip", *args], text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _batch(lines: Sequence[str], netns: str | None = None, force: bool = False) -> None:
    """Several ``ip`` commands in one process (``ip [-n NETNS] -batch -``); the first failure raises
    (``force``: every line is tried, failures ignored)."""
    argv = ["ip", *(("-n", netns) if netns else ()), *(("-force",) if force else ()), "-batch", "-"]
    done = launcher.run(argv, input="".join(f"{line}\n" for line in lines), text=True, timeout=30)
    if done.returncode != 0 and not force:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")


NETNS_DIR = Path("/var/run/netns")  # where iproute2 names namespaces (bind mounts)


def pids_in(names: Sequence[str]) -> dict[str, list[int]]:
    """The processes in each named namespace now (what ``ip netns pids`` finds, for many at once)."""
    inodes: dict[tuple[int, int], str] = {}
    for name in names:
        with contextlib.suppress(OSError):
            st = os.stat(NETNS_DIR / name)
            inodes[(st.st_dev, st.st_ino)] = name
    found: dict[str, list[int]] = {name: [] for name in names}
    if not inodes:
        return found
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                st = os.stat(f"/proc/{entry.name}/ns/net")
            except OSError:
                continue
            if (name := inodes.get((st.st_dev, st.st_ino))) is not None:
                found[name].append(int(entry.name))
    return found


def namespaces() -> list[str]:
    """Every named network namespace (``ip netns list``)."""
    done = _ip("netns", "list", check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _owner_alive(name: str) -> bool | None:
    """None: not one of ours; else whether the run that created it still runs."""
    m = _NAME.match(name)
    if m is None:
        return None
    return launcher.owner_alive(f"{m.group(1)}-{m.group(2)}")


def remove(names: Sequence[str]) -> None:
    """End what runs in these namespaces (SIGKILL), then remove their names (the kernel frees each
    once nothing holds it)."""
    if not names:
        return
    for pids in pids_in(names).values():
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _batch([f"netns delete {name}" for name in names], force=True)


def cleanup_stale() -> list[str]:
    """Remove the namespaces of runs that are gone (SIGKILLed before their cleanup); their names."""
    stale = [n for n in namespaces() if _owner_alive(n) is False]
    remove(stale)
    return stale


def _run_id() -> str:
    return f"{PREFIX}-{launcher.owner_tag()}-{secrets.token_hex(3)}"


_availability: list[str | None] = []


def available() -> str | None:
    """None when hosts can be made here, else why not (checked once per process, by making a switch)."""
    if not _availability:
        _availability.append(_probe())
    return _availability[0]


def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux only (this is {sys.platform})"
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN (run the tests as root)"
    if shutil.which("ip") is None:
        return "no `ip` command (Debian: apt-get install iproute2)"
    name = _run_id()
    try:
        for args in (
            ("netns", "add", name),
            ("-n", name, "link", "add", "br0", "type", "bridge"),
            ("-n", name, "link", "add", "p0", "type", "veth", "peer", "name", "eth0"),
            ("-n", name, "link", "set", "p0", "master", "br0"),
            ("netns", "exec", name, "true"),
        ):
            done = _ip(*args, check=False)
            if done.returncode != 0:
                return f"network namespaces refused here: `ip {' '.join(args)}`: {done.stderr.strip()}"
    except OSError as e:
        return f"network namespaces refused here: {e}"
    finally:
        _ip("netns", "delete", name, check=False)
    return None


@dataclass(frozen=True, slots=True)
class Host:
    """One host: its network namespace, its address on the switch."""

    name: str  # the test's name for it ("chat")
    netns: str  # the namespace's name
    addr: str  # its address on the switch (10.231.0.x)

    @property
    def prefix(self) -> list[str]:
        """A command prefix that runs its command on this host (and execs it: same pid)."""
        return ["ip", "netns", "exec", self.netns]

    def argv(self, cmd: Sequence[str]) -> list[str]:
        return [*self.prefix, *cmd]

    def popen(self, cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """``subprocess.Popen`` of ``cmd`` on this host; it ends with this process (``sig=``: with which signal)."""
        return launcher.popen(self.argv(cmd), **kwargs)

    def run(self, cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        """``subprocess.run`` of ``cmd`` on this host (output captured, ``timeout=60`` unless told otherwise)."""
        return launcher.run(self.argv(cmd), **kwargs)

    def pids(self) -> list[int]:
        """The processes running in this host's namespace now."""
        return pids_in([self.netns])[self.netns]


class Hosts:
    """Hosts on one switch, made by :meth:`start` (or ``with``), all removed by :meth:`close`."""

    def __init__(self, names: Sequence[str], *, subnet: str = SUBNET) -> None:
        names = list(names)
        for n in names:
            if not _HOST_NAME.match(n):
                raise ValueError(f"host name {n!r}: lower-case letters, digits and '-' (at most 31)")
        if len(set(names)) != len(names):
            raise ValueError(f"host names repeat: {names}")
        if len(names) > 200:
            raise ValueError("at most 200 hosts on one switch")
        self.names = names
        self.subnet = subnet
        self.run_id = _run_id()
        self.switch = self.run_id  # the switch's namespace
        self.hosts = {n: Host(n, f"{self.run_id}-{n}", f"{subnet}.{FIRST_HOST + i}") for i, n in enumerate(names)}
        self._made: list[str] = []

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def __iter__(self) -> Iterator[Host]:
        return iter(self.hosts.values())

    def __len__(self) -> int:
        return len(self.hosts)

    @property
    def netns_names(self) -> list[str]:
        """Every namespace this run makes: the switch's and the hosts'."""
        return [self.switch, *(h.netns for h in self)]

    def start(self) -> Hosts:
        reason = available()
        if reason is not None:
            raise RuntimeError(f"cannot make hosts: {reason}")
        cleanup_stale()
        self._made = self.netns_names  # close() removes whichever of them exist
        try:
            _batch([f"netns add {name}" for name in self._made])
            switch = ["link set lo up", "link add br0 type bridge", "link set br0 up"]
            for i, host in enumerate(self):
                switch += [
                    f"link add p{i} type veth peer name eth0 netns {host.netns}",
                    f"link set p{i} master br0 up",
                ]
            _batch(switch, netns=self.switch)
            for host in self:
                _batch(["link set lo up", f"addr add {host.addr}/24 dev eth0", "link set eth0 up"], netns=host.netns)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """End every process still running on a host, remove every namespace made."""
        made, self._made = self._made, []
        remove(made)

    def __enter__(self) -> Hosts:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Hosts {self.run_id}: " + ", ".join(f"{h.name}={h.addr}" for h in self) + ">"
