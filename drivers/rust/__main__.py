"""`python -m drivers.rust [build|run]`: build the Rust client's driver (only when a source or the lock
file changed), or build it and run it (a driver process on this stdin/stdout)."""

from __future__ import annotations

import argparse
import os
import sys

from drivers.rust.build import BuildError, build, command, crate_version


def main() -> None:
    parser = argparse.ArgumentParser(description="the Rust client (crate pulsar) as a conformance driver")
    parser.add_argument("action", nargs="?", choices=("build", "run"), default="run",
                        help="build: build it only (./dev setup); run: build if needed, then be the driver")
    args = parser.parse_args()
    try:
        if args.action == "build":
            path = build()
            print(f"Rust driver (crate pulsar {crate_version()}): {path}")
            return
        argv = command()
    except BuildError as error:
        sys.exit(f"error: {error}")
    os.execv(argv[0], list(argv))


if __name__ == "__main__":
    main()
