"""`python -m reports gate|compare|html|guarantees ...`: the same as `python -m reports.gate` and friends."""

from __future__ import annotations

import sys

COMMANDS = ("gate", "compare", "html", "guarantees")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m reports {{{','.join(COMMANDS)}}} ...  (each takes --help)", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "gate":
        from reports.gate import main as run
    elif command == "compare":
        from reports.compare import main as run
    elif command == "guarantees":
        from reports.guarantees import main as run
    else:
        from reports.html import main as run
    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
