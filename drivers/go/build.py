"""The Go client's driver (drivers/go: a main package on github.com/apache/pulsar-client-go), built
once per client version into the project's ignored folder, and the command that starts it.

`build()` runs the machine's `go build` on this folder: the client's version is the one go.mod
pins (the module proxy's `@latest` may be stale, so the pin is explicit) and go.sum fixes every
module's hash; the modules come from the Go module proxy (`GOPROXY`) into the machine's module
cache. The binary lands in `.pulsar/drivers/go/<version>/`. A build is redone only when a source,
go.mod, go.sum or the Go toolchain changed (their hash is kept in the folder's stamp); it goes to a
scratch folder first and is renamed into place only when complete. What is missing (`go`, the
proxy) is a clear `BuildError` with the tail of Go's output.
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
from fixtures.scratch import replacing

PROJECT = Path(__file__).resolve().parent
MODULE = "github.com/apache/pulsar-client-go"
BINARY = "pulsar-go-driver"
_STAMP = "BUILT"
_TAIL_LINES = 25
_BUILD_TIMEOUT_S = 1800


class BuildError(RuntimeError):
    """The Go driver could not be built; the message says what is missing."""


def client_version() -> str:
    """The pulsar-client-go version go.mod pins ("0.21.0")."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+v(\S+)", (PROJECT / "go.mod").read_text(), re.M)
    if match is None:
        raise BuildError(f"drivers/go/go.mod does not require {MODULE}")
    return match.group(1)


def build_dir(version: str | None = None) -> Path:
    return state_root() / "drivers" / "go" / (version or client_version())


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("the Go driver needs `go` on PATH to be built (Go 1.25 or newer, as pulsar-client-go "
                         f"{client_version()} requires: https://go.dev/doc/install)")
    return go


def sources_hash(go: str) -> str:
    """What the build depends on: go.mod, go.sum, every Go source, by content, and the toolchain."""
    digest = hashlib.sha256()
    toolchain = subprocess.run([go, "version"], capture_output=True, text=True).stdout.strip()
    digest.update(toolchain.encode() + b"\0")
    for path in sorted([PROJECT / "go.mod", PROJECT / "go.sum", *PROJECT.glob("*.go")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def up_to_date(go: str) -> bool:
    stamp = build_dir() / _STAMP
    return stamp.exists() and (build_dir() / BINARY).exists() and stamp.read_text().splitlines()[0] == sources_hash(go)


def build(*, force: bool = False) -> Path:
    """Build the driver unless it is up to date; return the binary's path."""
    go = _go()
    target = build_dir()
    if not force and up_to_date(go):
        return target / BINARY
    with replacing(target) as scratch:
        started = time.monotonic()
        env = {**os.environ, "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=readonly".strip()}
        try:
            done = subprocess.run([go, "build", "-trimpath", "-o", str(scratch / BINARY), "."], cwd=PROJECT, env=env,
                                  capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise BuildError(f"go build of the Go driver did not finish within {_BUILD_TIMEOUT_S} s") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-_TAIL_LINES:])
            raise BuildError(f"go could not build the Go driver for pulsar-client-go {target.name} (exit "
                             f"{done.returncode}; is the Go module proxy {env.get('GOPROXY') or 'proxy.golang.org'} "
                             f"reachable?); its last lines:\n{tail}")
        (scratch / _STAMP).write_text(f"{sources_hash(go)}\npulsar-client-go {target.name}: built in "
                                      f"{time.monotonic() - started:.1f} s\n")
    return target / BINARY


def command() -> tuple[str, ...]:
    """The command that starts the Go driver (built first when it is not up to date)."""
    return (str(build()),)
