"""The language-server shim in process (support/shim.py; its entry point scripts/language-server-shim),
without mitmdump: its settings (a Redis store's URL, its
password and CA), the command line and environments it gives its children, and the reason it
finds in mitmdump's output. The processes themselves: tests/e2e/test_shim.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import shim

ROOT = Path(__file__).resolve().parents[1]
FAKE_LS = ROOT / "scripts" / "fake_language_server.py"
PASSWORD = "s3cret-Pw"


def settings(tmp_path: Path, body: str, mitmdump: bool = True) -> Path:
    """A shim.toml in ``tmp_path/conf`` naming an existing ls_binary (and mitmdump), plus ``body``."""
    path = tmp_path / "conf" / "shim.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = f'ls_binary = "{FAKE_LS}"\n' + (f'mitmdump = "{FAKE_LS}"\n' if mitmdump else "")
    path.write_text(head + body)
    return path


def secret_file(tmp_path: Path, content: str, mode: int = 0o600) -> Path:
    path = tmp_path / "conf" / "redis.pass"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    path.chmod(mode)
    return path


def refused(path: Path) -> str:
    with pytest.raises(shim.ShimError) as e:
        shim.load_settings(path)
    return str(e.value)


# ------------------------------------------------------------------ the URL


@pytest.mark.parametrize(
    ("url", "shown", "password"),
    [
        ("redis://10.0.0.5:6379/0", "redis://10.0.0.5:6379/0", None),
        ("redis://10.0.0.5", "redis://10.0.0.5:6379/0", None),
        ("redis://10.0.0.5/", "redis://10.0.0.5:6379/0", None),
        ("REDIS://Store.Example:7000/3", "redis://store.example:7000/3", None),
        ("rediss://bridge@store:6380/1", "rediss://bridge@store:6380/1", None),
        (f"redis://:{PASSWORD}@store:6379/0", "redis://store:6379/0", PASSWORD),
        (f"redis://bridge:{PASSWORD}@store/2", "redis://bridge@store:6379/2", PASSWORD),
        ("redis://bridge:p%40ss%2Fw%3Ard@store", "redis://bridge@store:6379/0", "p@ss/w:rd"),
        ("redis://[::1]:6379/0", "redis://[::1]:6379/0", None),
        ("redis://we%40rd@store", "redis://we%40rd@store:6379/0", None),
    ],
)
def test_a_redis_url_is_split_into_what_mitmdump_may_show_and_the_password(url, shown, password):
    got = shim.store_url(url)
    assert (got.shown, got.password) == (shown, password)
    assert got.tls == url.lower().startswith("rediss://")
    assert PASSWORD not in repr(got)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"postgres://u:{PASSWORD}@db:5432/x", "the scheme must be redis:// or rediss://"),
        (f"http://u:{PASSWORD}@store:6379/0", "the scheme must be redis:// or rediss://"),
        (f"redis://u:{PASSWORD}@:6379/0", "no host"),
        (f"redis://u:{PASSWORD}@store:port/0", "the port must be a number from 1 to 65535"),
        (f"redis://u:{PASSWORD}@store:70000/0", "the port must be a number from 1 to 65535"),
        (f"redis://u:{PASSWORD}@store:0/0", "the port must be a number from 1 to 65535"),
        (f"redis://u:{PASSWORD}@store:6379/zero", "the path must be a database number"),
        (f"redis://u:{PASSWORD}@store:6379/0/1", "the path must be a database number"),
        (f"redis://u:{PASSWORD}@store:6379/0?ssl_cert_reqs=none", "no query or fragment"),
        (f"redis://u:{PASSWORD}@store:6379/0#x", "no query or fragment"),
        ("redis://u:pa/ss" + PASSWORD + "@store:6379/0", "percent-encode it"),
        ("redis://u:pa#ss" + PASSWORD + "@store:6379/0", "percent-encode it"),
        (f"redis://u:{PASSWORD}@[::1:6379/0", "not a URL"),
    ],
)
def test_a_bad_url_is_a_clear_error_that_never_quotes_the_password(tmp_path: Path, url: str, message: str):
    path = settings(tmp_path, f'state = "{url}"\n')
    error = refused(path)
    assert message in error
    assert str(path) in error
    assert PASSWORD not in error
    assert "u:***@" in error, "the URL is named, its password masked"


def test_a_redis_url_is_not_a_path(tmp_path: Path):
    """Before: joined onto the settings directory, password and all (a file named after it)."""
    got = shim.load_settings(settings(tmp_path, f'state = "redis://bridge:{PASSWORD}@store:6379/0"\n'))
    assert got.state == "redis://bridge@store:6379/0"
    assert isinstance(got.state, str)
    assert got.state_password == PASSWORD
    assert PASSWORD not in repr(got)


def test_a_path_stays_a_path_relative_to_the_settings(tmp_path: Path):
    got = shim.load_settings(settings(tmp_path, 'state = "state/bridge.sqlite"\n'))
    assert got.state == tmp_path / "conf" / "state" / "bridge.sqlite"
    assert got.state_password is None


# ------------------------------------------------------------------ the password file, the CA


def test_the_password_comes_from_a_file_stripped(tmp_path: Path):
    secret = secret_file(tmp_path, f"  {PASSWORD}\n")
    got = shim.load_settings(
        settings(tmp_path, f'state = "redis://bridge@store:6379/0"\nstate_password_file = "{secret.name}"\n')
    )
    assert (got.state, got.state_password) == ("redis://bridge@store:6379/0", PASSWORD)
    assert got.warnings == []


def test_a_password_file_others_may_read_is_warned_about(tmp_path: Path):
    """Kubernetes mounts secrets 0644 unless told otherwise: a warning, not a refusal."""
    secret_file(tmp_path, PASSWORD, mode=0o644)
    got = shim.load_settings(settings(tmp_path, 'state = "redis://store"\nstate_password_file = "redis.pass"\n'))
    assert got.state_password == PASSWORD
    [warning] = got.warnings
    assert "readable by group or others (mode 0644)" in warning
    assert PASSWORD not in warning


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("\n  \n", "is empty"),
        (f"{PASSWORD}\nsecond line\n", "must hold the password alone, on one line"),
        (None, "cannot read it (No such file or directory)"),
        (b"\xff\xfe" + PASSWORD.encode(), "not UTF-8 text"),
    ],
    ids=["empty", "two-lines", "missing", "not-utf8"],
)
def test_a_bad_password_file_is_refused_without_its_content(tmp_path: Path, content, message):
    path = settings(tmp_path, 'state = "redis://store"\nstate_password_file = "redis.pass"\n')
    if isinstance(content, bytes):
        (tmp_path / "conf" / "redis.pass").write_bytes(content)
    elif content is not None:
        secret_file(tmp_path, content)
    error = refused(path)
    assert message in error
    assert PASSWORD not in error


def test_a_password_in_the_url_and_a_password_file_is_refused(tmp_path: Path):
    secret_file(tmp_path, "other")
    error = refused(settings(tmp_path, f'state = "redis://:{PASSWORD}@store"\nstate_password_file = "redis.pass"\n'))
    assert "holds a password and state_password_file is set" in error
    assert PASSWORD not in error


def test_the_ca_file_is_relative_to_the_settings_and_for_rediss_only(tmp_path: Path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    got = shim.load_settings(settings(tmp_path, 'state = "rediss://store:6380/0"\nstate_ca = "ca.pem"\n'))
    assert got.state_ca == tmp_path / "conf" / "ca.pem"
    assert "rediss://..." in refused(settings(tmp_path, 'state = "redis://store"\nstate_ca = "ca.pem"\n'))
    assert "not a file" in refused(settings(tmp_path, 'state = "rediss://store"\nstate_ca = "none.pem"\n'))


@pytest.mark.parametrize(
    "body",
    ['state = "/var/lib/x.sqlite"\nstate_ca = "ca.pem"\n', 'state_password_file = "redis.pass"\n'],
    ids=["ca-with-a-path", "password-file-without-state"],
)
def test_store_settings_without_a_redis_state_are_refused(tmp_path: Path, body: str):
    assert 'are for state = "redis://..." only' in refused(settings(tmp_path, body))


# ------------------------------------------------------------------ nothing on a command line


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("options", '["bridge_state=redis://store"]', 'set state = "..." instead of options entry bridge_state'),
        ("options", '["bridge_state_ca=/ca.pem"]', 'set state_ca = "..." instead'),
        ("options", f'["bridge_state_prefix=redis://u:{PASSWORD}@x"]', "would be on a command line"),
        ("args", f'["--set", "bridge_state=redis://:{PASSWORD}@store"]', "would be on a command line"),
        ("options", f'["redis://:{PASSWORD}@store"]', "options entries are name=value"),
    ],
)
def test_a_store_set_around_the_settings_is_refused(tmp_path: Path, key: str, value: str, message: str):
    error = refused(settings(tmp_path, f"{key} = {value}\n"))
    assert message in error
    assert PASSWORD not in error


def test_mitmdump_gets_the_url_without_the_password_and_the_password_by_its_environment(tmp_path: Path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ca.pem").write_text("")
    got = shim.load_settings(
        settings(tmp_path, f'state = "rediss://bridge:{PASSWORD}@store:6380/2"\nstate_ca = "ca.pem"\n')
    )
    cmd = shim.mitmdump_command(got, 42100, 42101)
    assert "bridge_state=rediss://bridge@store:6380/2" in cmd
    assert f"bridge_state_ca={tmp_path / 'conf' / 'ca.pem'}" in cmd
    assert not [arg for arg in cmd if PASSWORD in arg]
    inherited = {"HOME": "/home/gw", "PATH": "/usr/bin", "BRIDGE_STATE_PASSWORD": "from-the-gateway"}
    ls_env, mitmdump_env = shim.environments(got, inherited)
    assert ls_env == {"HOME": "/home/gw", "PATH": "/usr/bin"}, "the real binary never gets it"
    assert mitmdump_env == {**inherited, "BRIDGE_STATE_PASSWORD": PASSWORD}


def test_without_a_password_mitmdump_keeps_its_environment(tmp_path: Path):
    got = shim.load_settings(settings(tmp_path, 'state = "redis://store"\n'))
    assert shim.environments(got, {"HOME": "/h"}) == ({"HOME": "/h"}, {"HOME": "/h"})


# ------------------------------------------------------------------ why mitmdump ended

UNREACHABLE = """\
[18:06:29.557] Loading script addons/bridge.py
[18:06:29.730] error in script addons/bridge.py
Traceback (most recent call last):
  File "/work/main/addons/native_bridge/runtime/state.py", line 115, in _configure_server
    raise exceptions.OptionsError(f"bridge_state: {e}") from None
mitmproxy.exceptions.OptionsError: bridge_state: cannot reach redis://bridge@127.0.0.1:1/0: Connection refused
[18:06:29.732] HTTP(S) proxy listening at 127.0.0.1:51687.
[18:06:29.733][127.0.0.1:60580] client connect
[18:06:29.734][127.0.0.1:60580] error establishing server connection: connection cancelled
Error logged during startup, exiting...
"""
BUSY = """\
[17:54:37.324] [Errno 98] reverse proxy to http://127.0.0.1:1 failed to listen on 127.0.0.1:52095 with [Errno 98] \
error while attempting to bind on address ('127.0.0.1', 52095): [errno 98] address already in use
[17:54:37.324] Loading script addons/bridge.py
Error logged during startup, exiting...
"""


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (UNREACHABLE, ["bridge_state: cannot reach redis://bridge@127.0.0.1:1/0: Connection refused"]),
        (BUSY, [BUSY.splitlines()[0].removeprefix("[17:54:37.324] ")]),
        (
            "usage: mitmdump [options] [filter]\nmitmdump: error: unrecognized arguments: --x\n",
            ["mitmdump: error: unrecognized arguments: --x"],
        ),
        (
            "Traceback (most recent call last):\n  File x\nModuleNotFoundError: No module named 'redis'\n",
            ["ModuleNotFoundError: No module named 'redis'"],
        ),
        (
            "[10:00:00.000] Loading script a.py\n[10:00:00.001] something odd\n",
            ["Loading script a.py", "something odd"],
        ),
        ("", []),
    ],
    ids=["unreachable-store", "busy-port", "bad-flag", "traceback", "no-error-line", "nothing"],
)
def test_the_reason_is_found_in_mitmdumps_output(output: str, expected: list[str]):
    assert shim.reasons(output) == expected


def test_a_password_in_what_is_echoed_is_masked():
    shim.keep_secret("p@ss/word-123")
    out = shim.reasons(
        "mitmproxy.exceptions.OptionsError: bridge_state: bad p@ss/word-123 and p%40ss%2Fword-123\n"
        "[10:00:00.000] error: rediss://user:other-pw@host:6380/0 unreachable\n"
    )
    assert out == ["bridge_state: bad *** and ***", "error: rediss://user:***@host:6380/0 unreachable"]


def test_the_shims_own_messages_mask_a_url_password(capsys):
    shim.fail(f"state redis://u:{PASSWORD}@h bad")
    shim.say(f"REDIS://:{PASSWORD}@h")
    err = capsys.readouterr().err
    assert PASSWORD not in err
    assert "redis://u:***@h" in err and "REDIS://:***@h" in err


def test_the_log_file_is_read_from_where_this_run_began(tmp_path: Path):
    log = tmp_path / "mitmdump.log"
    log.write_text("mitmproxy.exceptions.OptionsError: an old run's error\n")
    run = shim.Shim(shim.Settings(path=tmp_path / "s.toml", ls_binary=FAKE_LS, mitmdump=FAKE_LS, log=log), [])
    run._log_start = os.path.getsize(log)
    with open(log, "a") as f:
        f.write("mitmproxy.exceptions.OptionsError: bridge_state: this run's error\n")
    assert run._why() == f": bridge_state: this run's error (mitmdump's output: {log})"
