"""Write the bundled sessions (support/histories/bundled/) to tests/fixtures/sessions/.

    .venv/bin/python scripts/make_sessions.py                 # all three
    .venv/bin/python scripts/make_sessions.py chat anthropic  # some
    .venv/bin/python scripts/make_sessions.py --check         # exit 1 when a file differs from its script

Deterministic: the same scripts give the same bytes (the tests check the bundled files against them).
"""

from __future__ import annotations

import argparse

from support.histories.bundled import DIALECTS, generator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dialects", nargs="*", metavar="DIALECT", help=f"any of {', '.join(DIALECTS)} (default: all)")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    if unknown := sorted(set(args.dialects) - set(DIALECTS)):
        parser.error(f"no bundled session for {', '.join(unknown)} (there are: {', '.join(DIALECTS)})")
    stale = 0
    for dialect in args.dialects or DIALECTS:
        module = generator(dialect)
        data = module.render()
        if args.check:
            same = module.OUT.exists() and module.OUT.read_bytes() == data
            stale += not same
            print(f"{module.OUT}: {'as its script writes it' if same else 'differs from its script'}")
            continue
        module.OUT.write_bytes(data)
        print(f"wrote {module.OUT} ({len(data)} bytes)")
    return 1 if stale else 0


if __name__ == "__main__":
    from support import cli

    cli.run(main)
