"""Regenerate the checked-in protobuf code from proto/ (needs grpcio-tools).

    .venv/bin/python scripts/gen_proto.py

tests/test_proto.py fails when the checked-in code drifts from proto/.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
OUT_DIR = ROOT / "addons" / "native_bridge" / "_proto"


def generate(out_dir: Path = OUT_DIR) -> None:
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    for proto in sorted(PROTO_DIR.glob("*.proto")):
        args = ["protoc", f"-I{PROTO_DIR}", f"--python_out={out_dir}", f"--pyi_out={out_dir}", str(proto)]
        if protoc.main(args) != 0:
            sys.exit(f"protoc failed on {proto}")


def main() -> int:
    generate()
    print(f"regenerated {OUT_DIR.relative_to(ROOT)} from {PROTO_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
