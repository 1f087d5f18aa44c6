"""`python -m drivers.go [build|run]`: build the Go client's driver (only when a source, go.mod,
go.sum or the toolchain changed), or build it if needed and run it (a driver process on this
stdin/stdout)."""

from __future__ import annotations

import argparse
import os
import sys

from drivers.go.build import BuildError, build, client_version


def main() -> None:
    parser = argparse.ArgumentParser(description="the Go client (pulsar-client-go) as a conformance driver")
    parser.add_argument("action", nargs="?", choices=("build", "run"), default="run",
                        help="build: build it only (./dev setup); run: build if needed, then be the driver")
    args = parser.parse_args()
    try:
        binary = build()
    except BuildError as error:
        sys.exit(f"error: {error}")
    if args.action == "build":
        print(f"Go driver (pulsar-client-go {client_version()}): {binary}")
        return
    os.execv(binary, [str(binary)])


if __name__ == "__main__":
    main()
