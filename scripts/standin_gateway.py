#!/usr/bin/env python3
"""The stand-in gateway (dwgx/WindsurfAPI v3.9.27 on the wire) as a program: what the deployment
tests run where the real gateway cannot be. The gateway itself (flags, behaviour) is
support/standin_gateway.py.

    LS_BINARY_PATH=scripts/language-server-shim scripts/standin_gateway.py --port 3003 [--ls-port 42100]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_PYTHON = (3, 12)


def _bootstrap() -> None:
    """Run under the checkout's Python 3.12+ with its packages (h2, protobuf, native_bridge)."""
    if sys.version_info >= MIN_PYTHON:
        try:
            import h2  # noqa: F401
            import native_bridge  # noqa: F401

            return
        except ImportError:
            pass
    venv = ROOT / ".venv" / "bin" / "python"
    if venv.exists() and Path(sys.executable).resolve() != venv.resolve():
        os.execv(str(venv), [str(venv), str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit(f"standin_gateway: needs Python 3.12+ with h2 and native_bridge (tried {sys.executable} and {venv})")


if __name__ == "__main__":
    _bootstrap()
    from support import cli
    from support.standin_gateway import main

    cli.run(main)
