"""Driver build time from empty caches, per client, side by side in one run.

    python -m benchmarks.driver_build [--client python --client java --client go --client rust]

Each driver is built by the project's own build code (`drivers.<client>.build`, the Python wheel's
virtualenv of `drivers.python.versions`), into a scratch folder and with every cache that build
would reuse pointed at an empty one: Maven's local repository, Go's module and build caches,
Cargo's registry and target folder, pip's cache. So the figure includes the downloads from Maven
Central, the Go module proxy, crates.io and PyPI, which is what a clean CI machine pays once. The
project's own built drivers are left alone. A client whose toolchain is missing is named, with why.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator
from unittest import mock

_CLIENTS = ("python", "java", "go", "rust")


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _python(scratch: Path) -> str:
    import importlib.metadata

    from drivers.python import versions

    version = importlib.metadata.version(versions.PACKAGE)  # the wheel the project's own venv runs
    with _environment(PIP_NO_CACHE_DIR="1"), mock.patch.object(versions, "env_dir", lambda v: scratch / "venv" / v):
        versions.ensure(version)
    return f"pulsar-client {version} (wheel into a fresh virtualenv)"


def _java(scratch: Path) -> str:
    from drivers.java import build

    version = build.default_version()
    repository = scratch / "m2"
    maven_opts = f"{os.environ.get('MAVEN_OPTS', '')} -Dmaven.repo.local={repository}".strip()
    with _environment(MAVEN_OPTS=maven_opts), mock.patch.object(build, "build_dir", lambda v: scratch / "out" / v):
        build.build(version, force=True, say=lambda line: None)
    return f"pulsar-client {version} (Maven, empty local repository)"


def _go(scratch: Path) -> str:
    from drivers.go import build

    version = build.client_version()
    with _environment(GOMODCACHE=str(scratch / "gomod"), GOCACHE=str(scratch / "gocache")), \
            mock.patch.object(build, "build_dir", lambda version=None: scratch / "out"):
        build.build(force=True)
    # Go makes its module cache read-only; the scratch folder has to be writable to be removed.
    for folder, _, files in os.walk(scratch / "gomod"):
        os.chmod(folder, 0o755)
    return f"pulsar-client-go {version} (empty module and build caches)"


def _rust(scratch: Path) -> str:
    from drivers.rust import build

    with _environment(CARGO_HOME=str(scratch / "cargo")), mock.patch.object(build, "build_dir", lambda: scratch / "out"):
        build.build(force=True)
    return f"pulsar {build.crate_version()} (empty Cargo home and target folder)"


_BUILDS: dict[str, Callable[[Path], str]] = {"python": _python, "java": _java, "go": _go, "rust": _rust}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", action="append", choices=_CLIENTS, default=None,
                        help="a driver to build (repeatable; default: all four)")
    args = parser.parse_args()
    rows = []
    for client in args.client or _CLIENTS:
        scratch = Path(tempfile.mkdtemp(prefix=f"driver-build-{client}-"))
        started = time.monotonic()
        try:
            what = _BUILDS[client](scratch)
            rows.append((client, f"{time.monotonic() - started:6.0f} s", what))
        except Exception as error:  # noqa: BLE001  (the benchmark names what could not be built, and goes on)
            rows.append((client, "not built", str(error).splitlines()[0]))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"{rows[-1][0]:<7} {rows[-1][1]:>10}  {rows[-1][2]}", flush=True)


if __name__ == "__main__":
    main()
