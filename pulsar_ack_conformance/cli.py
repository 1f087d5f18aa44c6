"""`pulsar-ack-conformance`: the installed kit's one command.

    pulsar-ack-conformance run [pytest options]     the conformance suites (--target model by default;
                                                    --target pulsar starts a broker, or --service-url)
    pulsar-ack-conformance gate [options]           the CI gate (python -m reports.gate)
    pulsar-ack-conformance broker start|stop|...    the embedded broker (python -m fixtures.broker)
    pulsar-ack-conformance matrix run ...           the client feature matrix (python -m reports.matrix)
    pulsar-ack-conformance setup                    resolve the broker's jars, build the drivers whose
                                                    toolchain is on PATH (each is also done when first needed)

`run` is pytest on the kit's conformance suites, wherever they are installed, with the reports in
`reports/out/` of the current folder; the kit's state (resolved jars, broker homes, driver
builds) is in a per-user cache folder (fixtures/broker/config.py `state_root`).
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys

from fixtures.kit import SUBCOMMANDS, module


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command, rest = (argv[0], argv[1:]) if argv else ("--help", [])
    if command == "run":
        return run(rest)
    if command == "setup":
        return setup()
    if command in SUBCOMMANDS:
        target = SUBCOMMANDS[command] + (".__main__" if command == "broker" else "")
        return importlib.import_module(module(target)).main(rest)
    print(__doc__.split("\n\n")[1], file=sys.stdout if command in ("-h", "--help") else sys.stderr)
    return 0 if command in ("-h", "--help") else 2


def run(args: list[str]) -> int:
    import pytest

    suites = importlib.import_module(module("suites.conformance"))
    folder = suites.__path__[0]
    # The suites' folder as a path, so that pytest collects them wherever the kit is installed; the
    # kit's plugin comes from its entry point (installed) or the repository's conftest.py.
    # The command imported the kit's package before pytest could mark it for assertion rewriting:
    # its modules assert nothing a user reads, so pytest's warning about it is noise.
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return int(pytest.main([folder, "-p", "no:cacheprovider", *quiet, *args]))


def setup() -> int:
    """What ./dev setup does for a clone, for an installed kit: the pinned broker's jars, and the
    drivers whose toolchain is on PATH, each built only when missing or stale."""
    status = subprocess.call([sys.executable, "-m", module("fixtures.broker"), "resolve"])
    for client, tool in (("java", "mvn"), ("go", "go"), ("rust", "cargo")):
        if shutil.which(tool) is None:
            print(f"{tool} is not on PATH: --client {client} is unavailable")
            continue
        status = subprocess.call([sys.executable, "-m", module(f"drivers.{client}"), "build"]) or status
    return status


if __name__ == "__main__":
    sys.exit(main())
