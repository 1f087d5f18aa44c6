"""The Rust client's driver (drivers/rust: a Cargo project on the crate `pulsar`), built with cargo
from crates.io into the project's ignored folder, and the command that starts it.

`build()` runs `cargo build --locked` with Cargo.lock as committed: the crate's version (the
folder's name, and the driver's `hello` version) is the one the lock file pins. The binary lands in
`.pulsar/drivers/rust/<version>/`; a build is redone only when Cargo.toml, Cargo.lock, build.rs or a
source changed (their hash is kept in the folder's stamp). The crate's build needs `protoc` (Debian:
protobuf-compiler) and OpenSSL's headers (libssl-dev, pkg-config); what is missing is a clear
`BuildError`, and so is a failed download from crates.io (with the tail of cargo's output).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from fixtures.broker.config import state_root

PROJECT = Path(__file__).resolve().parent
PACKAGE = BINARY = "pulsar-conformance-driver"
_STAMP = "BUILT"
_CARGO_TAIL_LINES = 25
_LOCKED_VERSION = re.compile(r'^name = "pulsar"\nversion = "([^"]+)"', re.MULTILINE)


class BuildError(RuntimeError):
    """The Rust driver could not be built; the message says what is missing."""


def crate_version() -> str:
    """The version of the crate `pulsar` that Cargo.lock pins."""
    match = _LOCKED_VERSION.search((PROJECT / "Cargo.lock").read_text())
    if match is None:
        raise BuildError(f"{PROJECT / 'Cargo.lock'} pins no package pulsar")
    return match.group(1)


def build_dir() -> Path:
    return state_root() / "drivers" / "rust" / crate_version()


def binary() -> Path:
    return build_dir() / "debug" / BINARY


def sources_hash() -> str:
    """What the build depends on in the repository, by content."""
    digest = hashlib.sha256()
    files = [PROJECT / "Cargo.toml", PROJECT / "Cargo.lock", PROJECT / "build.rs", *(PROJECT / "src").rglob("*.rs")]
    for path in sorted(files):
        digest.update(path.relative_to(PROJECT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def up_to_date() -> bool:
    stamp = build_dir() / _STAMP
    return stamp.exists() and binary().exists() and stamp.read_text().splitlines()[0] == sources_hash()


def build(*, force: bool = False) -> Path:
    """Build the driver unless it is up to date; return the binary."""
    if not force and up_to_date():
        return binary()
    missing = [tool for tool in ("cargo", "protoc") if shutil.which(tool) is None]
    if missing:
        raise BuildError(f"the Rust driver needs {' and '.join(missing)} on PATH to be built (cargo: a Rust "
                         "toolchain, e.g. from rustup; protoc: on Debian apt-get install protobuf-compiler)")
    folder = build_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / _STAMP).unlink(missing_ok=True)
    started = time.monotonic()
    cargo, env = shutil.which("cargo"), {**os.environ, "CARGO_TARGET_DIR": str(folder)}
    # The driver's own crate is compiled again whatever the files' times say: cargo trusts
    # modification times, which a clock set back or a copied tree can leave older than the last build.
    subprocess.run([cargo, "clean", "--package", PACKAGE, "--manifest-path", str(PROJECT / "Cargo.toml")],
                   capture_output=True, text=True, env=env)
    done = subprocess.run([cargo, "build", "--locked", "--manifest-path", str(PROJECT / "Cargo.toml")],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-_CARGO_TAIL_LINES:])
        raise BuildError(f"cargo could not build the Rust driver (crate pulsar {crate_version()}, exit "
                         f"{done.returncode}; is crates.io reachable? are protoc, libssl-dev and pkg-config "
                         f"installed?); its last lines:\n{tail}")
    if not binary().exists():
        raise BuildError(f"cargo finished but {binary()} is missing")
    (folder / _STAMP).write_text(f"{sources_hash()}\npulsar {crate_version()}: built in "
                                 f"{time.monotonic() - started:.1f} s\n")
    return binary()


def command() -> tuple[str, ...]:
    """The command that starts the Rust driver (built first when it is not up to date)."""
    return (str(build()),)
