"""`python -m drivers.java [build] [--pulsar-version X.Y.Z]`: build the Java client's driver (only
when the pom or a source changed), or build it and run it (a driver process on this stdin/stdout)."""

from __future__ import annotations

import argparse
import os
import sys

from drivers.java.build import BuildError, build, command


def main() -> None:
    parser = argparse.ArgumentParser(description="the Java client (pulsar-client) as a conformance driver")
    parser.add_argument("action", nargs="?", choices=("build", "run"), default="run",
                        help="build: build it only (./dev setup); run: build if needed, then be the driver")
    parser.add_argument("--pulsar-version", default=None,
                        help="the pulsar-client version (default: $PULSAR_VERSION or the pinned broker's)")
    args = parser.parse_args()
    try:
        if args.action == "build":
            folder = build(args.pulsar_version)
            print(f"Java driver (pulsar-client {folder.name}): {folder}")
            return
        argv = command(args.pulsar_version)
    except BuildError as error:
        sys.exit(f"error: {error}")
    os.execv(argv[0], list(argv))


if __name__ == "__main__":
    main()
