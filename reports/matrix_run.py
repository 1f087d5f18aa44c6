"""One broker, and the conformance suites once per client against it: what `python -m reports.matrix
run` does before it renders the client feature matrix (reports/matrix.py).

Each client's driver is made ready first, as a pytest run would (`driver_command` of
fixtures/targets/driver_target.py builds drivers/java, go or rust when missing or stale, makes the
virtualenv of `python==X.Y.Z`): a client whose toolchain is missing (no `go`, no `cargo`) is not
run, with the build's own message, and the broker never waits on a build. Then one broker of the
release asked for, started as a pytest session starts its own (fixtures/broker: fresh data, free
ports, an instance named after this process, so fixtures/broker/reap.py removes it should this
process be killed), stopped at the end whatever happens (an error, Ctrl-C, SIGTERM). Each client's
run is `pytest --target pulsar --client C suites/conformance -m "not slow" --service-url ...
--admin-url ... --reports-dir OUT/<client>`, its output in `OUT/<client>.log`. A run completed when
pytest exited 0 or 1 (failures are findings) and left its summary.json; otherwise the client is not
run, with pytest's exit code and the end of its output.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPLETED = (0, 1)  # pytest: all passed, some failed
TAIL_LINES = 12
INTERRUPT_GRACE_S = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRun:
    """One client's conformance run: where its reports went, how long it took, or why it did not run."""

    client: str  # as --client names it
    folder: Path  # its --reports-dir
    log: Path
    ready_s: float  # making its driver ready (a build, when one was needed)
    run_s: float | None = None
    not_run: str | None = None

    @property
    def summary_path(self) -> Path:
        return self.folder / "summary.json"


class Stopped(Exception):
    """SIGTERM: stop the client's run and the broker, as Ctrl-C does."""


def slug(client: str) -> str:
    """A folder name for a client: `python==3.5.0` -> `python-3.5.0`."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", client).strip("-")[:60] or "client"


def prepare(client: str, version: str) -> str | None:
    """Make the client's driver ready; None, or why it cannot be (the build's own message)."""
    from fixtures.targets.driver_target import driver_command

    try:
        driver_command(client, version=version)
    except ValueError as error:
        return str(error)
    return None


def run_clients(clients: list[str], *, out: Path, version: str, profile: str | None, extra: list[str],
                say: Callable[[str], None]) -> list[ClientRun]:
    """Each client's run against one broker of `version`, in the order given."""
    from fixtures.broker import Broker, BrokerConfig, free_port
    from fixtures.broker.config import BrokerError
    from fixtures.broker.reap import reap_abandoned_brokers

    out.mkdir(parents=True, exist_ok=True)
    ready: dict[str, tuple[float, str | None]] = {}
    for client in clients:
        say(f"{client}: making its driver ready")
        start = time.monotonic()
        why = prepare(client, version)
        ready[client] = (time.monotonic() - start, why)
        if why:
            say(f"{client}: not run: {why}")
    runs = [ClientRun(client=c, folder=out / slug(c), log=out / f"{slug(c)}.log", ready_s=ready[c][0],
                      not_run=ready[c][1]) for c in clients]
    if all(r.not_run for r in runs):
        return runs
    previous = signal.signal(signal.SIGTERM, _stop)
    reap_abandoned_brokers()
    broker = Broker(BrokerConfig(version=version, instance=f"pytest-matrix-{os.getpid()}",
                                 broker_port=free_port(), web_port=free_port()))
    try:
        say(f"broker: starting Pulsar {version} on {broker.config.service_url}")
        start = time.monotonic()
        try:
            broker.start(fresh=True, say=say)
        except BrokerError as error:
            return [r if r.not_run else _not_run(r, f"the broker did not start: {error}") for r in runs]
        say(f"broker: ready in {time.monotonic() - start:.0f} s")
        return [r if r.not_run else run_one(r, broker.config.service_url, broker.config.admin_url, profile, extra,
                                            say) for r in runs]
    finally:
        say("broker: stopping")
        broker.stop()
        signal.signal(signal.SIGTERM, previous)


def run_one(run: ClientRun, service_url: str, admin_url: str, profile: str | None, extra: list[str],
            say: Callable[[str], None]) -> ClientRun:
    run.summary_path.unlink(missing_ok=True)  # a summary left by an earlier run is not this one's
    command = [sys.executable, "-m", "pytest", "--target", "pulsar", "--client", run.client, "suites/conformance",
               "-m", "not slow", "--service-url", service_url, "--admin-url", admin_url,
               "--reports-dir", str(run.folder), *(["--hypothesis-profile", profile] if profile else []), *extra]
    say(f"{run.client}: running the conformance suites (log: {run.log})")
    start = time.monotonic()
    with run.log.open("w") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        child = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            code = child.wait()
        except BaseException:
            child.send_signal(signal.SIGINT)  # pytest ends its session: its drivers close, its reports are written
            try:
                child.wait(timeout=INTERRUPT_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            raise
    took = time.monotonic() - start
    if code in COMPLETED and run.summary_path.is_file():
        return ClientRun(client=run.client, folder=run.folder, log=run.log, ready_s=run.ready_s, run_s=took)
    tail = "\n".join(run.log.read_text(errors="replace").splitlines()[-TAIL_LINES:])
    why = (f"pytest exited {code}" + ("" if run.summary_path.is_file() else " without a summary.json")
           + f" after {took:.0f} s; the end of {run.log}:\n{tail}")
    return _not_run(run, why, run_s=took)


def _not_run(run: ClientRun, why: str, *, run_s: float | None = None) -> ClientRun:
    return ClientRun(client=run.client, folder=run.folder, log=run.log, ready_s=run.ready_s, run_s=run_s, not_run=why)


def _stop(signum, frame) -> None:
    raise Stopped(f"signal {signum}")
