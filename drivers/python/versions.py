"""Older (or newer) C++ clients through their Python wheels: `--client python==X.Y.Z`.

Each `pulsar-client` wheel pins a C++ client (3.1.0 -> C++ 3.1.2, 3.5.0 -> 3.5.1, 3.9.0 -> 4.0.0,
3.13.0 -> 4.2.0), so an older C++ client is one wheel away. `ensure(version)` makes a virtualenv
with that wheel alone (the driver needs nothing else: drivers.python and the model's records are
plain Python, reached through PYTHONPATH) in `.pulsar/drivers/python/<version>/`, once: a stamp
says it is complete. A version PyPI does not publish (for this Python and platform) is a clear
`VersionError` with the tail of pip's output. The driver's `hello` reports the installed wheel's
version, so the report names the client that really ran.

    python -m drivers.python.versions ensure 3.5.0
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fixtures.broker.config import state_root
from fixtures.kit import module

PACKAGE = "pulsar-client"
CLIENT_PREFIX = "python=="
_VERSION = re.compile(r"^\d+\.\d+\.\d+(?:\.post\d+)?$")
_STAMP = "INSTALLED"
_TAIL_LINES = 15
_PIP_TIMEOUT_S = 900


class VersionError(RuntimeError):
    """The wheel of that version could not be installed; the message says why."""


def env_dir(version: str) -> Path:
    return state_root() / "drivers" / "python" / version


def python_of(version: str) -> Path:
    return env_dir(version) / "bin" / "python"


def ensure(version: str) -> Path:
    """The Python of a virtualenv with pulsar-client `version`, made when missing; return its path."""
    if not _VERSION.match(version):
        raise VersionError(f"{PACKAGE} version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 3.5.0")
    target = env_dir(version)
    if (target / _STAMP).exists() and python_of(version).exists():
        return python_of(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{version}.partial-", dir=target.parent))
    try:
        started = time.monotonic()
        _run([sys.executable, "-m", "venv", str(scratch)], f"could not make a virtualenv for {PACKAGE} {version}")
        done = subprocess.run([str(scratch / "bin" / "python"), "-m", "pip", "install", "-q",
                               "--disable-pip-version-check", f"{PACKAGE}=={version}"],
                              capture_output=True, text=True, timeout=_PIP_TIMEOUT_S)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()
            tail = "\n".join(output.splitlines()[-_TAIL_LINES:])
            if "No matching distribution" in output or "Could not find a version" in output:
                raise VersionError(f"{PACKAGE} {version} is not published on PyPI for Python "
                                   f"{sys.version_info.major}.{sys.version_info.minor} on this platform; pip's last lines (the "
                                   f"versions it found among them):\n{tail}")
            raise VersionError(f"pip could not install {PACKAGE} {version} (exit {done.returncode}; is PyPI "
                               f"reachable?); its last lines:\n{tail}")
        installed = _installed_version(scratch / "bin" / "python")
        (scratch / _STAMP).write_text(f"{PACKAGE} {installed}: installed in {time.monotonic() - started:.1f} s\n")
        if target.exists():
            shutil.rmtree(target)
        scratch.rename(target)  # its python finds its packages wherever it lives (pip is run as python -m pip)
    except subprocess.TimeoutExpired:
        raise VersionError(f"pip did not install {PACKAGE} {version} within {_PIP_TIMEOUT_S} s") from None
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return python_of(version)


def command(version: str) -> tuple[str, ...]:
    """The command that starts the Python driver on pulsar-client `version` (its virtualenv made first)."""
    return (str(ensure(version)), "-m", module("drivers.python"))


def _installed_version(python: Path) -> str:
    done = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({PACKAGE!r}))"],
                          capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise VersionError(f"{what}: {(done.stdout + done.stderr).strip()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=f"a virtualenv per {PACKAGE} version, for --client python==X.Y.Z")
    parser.add_argument("action", choices=("ensure",))
    parser.add_argument("version", help=f"a published {PACKAGE} version, e.g. 3.5.0")
    args = parser.parse_args()
    try:
        python = ensure(args.version)
    except VersionError as error:
        sys.exit(f"error: {error}")
    print(f"{PACKAGE} {_installed_version(python)}: {python}")


if __name__ == "__main__":
    main()
