#!/usr/bin/env python3
"""The stand-in Windsurf language server as a program: what ``LS_BINARY_PATH`` or the shim's
``ls_binary`` names in the tests and in scripts/real_gateway.py. The server itself (flags,
settings, behaviour) is support/fake_language_server.py.

    scripts/fake_language_server.py --server_port=42100 [--config PATH]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_PYTHON = (3, 12)


def _bootstrap() -> None:
    """Run under the checkout's Python 3.12+ (the gateway's PATH may only have an older python3)."""
    if sys.version_info >= MIN_PYTHON:
        try:
            import h2  # noqa: F401

            return
        except ImportError:
            pass
    venv = ROOT / ".venv" / "bin" / "python"
    if venv.exists() and Path(sys.executable).resolve() != venv.resolve():
        os.execv(str(venv), [str(venv), str(Path(__file__).resolve()), *sys.argv[1:]])
    sys.exit(f"fake_language_server: needs Python 3.12+ with h2 (tried {sys.executable} and {venv})")


if __name__ == "__main__":
    _bootstrap()
    from support.fake_language_server import main

    sys.exit(main())
