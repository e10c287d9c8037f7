"""addons/bridge.py loads under a real mitmdump from a checkout and from an installed package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MITMDUMP = Path(sys.executable).with_name("mitmdump")

# A second script that reports which native_bridge the first one loaded, then exits.
PROBE = """
import sys
from mitmproxy import ctx

def running():
    print("LOADED-FROM", sys.modules["native_bridge"].__file__, "BRIDGE", "bridge" in ctx.options, flush=True)
    ctx.master.shutdown()
"""

pytestmark = pytest.mark.e2e


def _load(script: Path, tmp_path: Path, env: dict[str, str]) -> str:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    proc = subprocess.run(
        [str(MITMDUMP), "-n", "-q", "-s", str(script), "-s", str(probe)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    line = next((ln for ln in out.splitlines() if ln.startswith("LOADED-FROM")), None)
    assert line is not None, out
    assert line.endswith("BRIDGE True"), out
    return line.split()[1]


def test_loads_from_checkout(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    loaded = _load(ROOT / "addons" / "bridge.py", tmp_path, env)
    assert Path(loaded).is_relative_to(ROOT / "addons" / "native_bridge")


def test_loads_from_installed_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (site / "native_bridge" / "_proto" / "cortex_pb2.py").exists()
    # The entry script on its own, away from the checkout's addons/ directory.
    script = tmp_path / "elsewhere" / "bridge.py"
    script.parent.mkdir()
    shutil.copy(ROOT / "addons" / "bridge.py", script)
    env = {**os.environ, "PYTHONPATH": str(site)}
    loaded = _load(script, tmp_path, env)
    assert Path(loaded).is_relative_to(site), loaded
