"""A run on a real broker split over pytest-xdist workers (`-n 2`) shares one embedded broker: the
controller names it and stops it at the end, the first worker that needs it starts it
(fixtures/pulsar.py), the others use it. A test that restarts or crashes the broker
(`restarts_broker`) cannot share it: it gets a broker of its own on its worker.

Each run gets a state folder of its own (`$PULSAR_CONFORMANCE_HOME`, with the resolved release
linked in), so the brokers under its `brokers/` are the run's and no others'. Skipped, saying why,
where pytest-xdist is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.broker import Broker, BrokerConfig
from fixtures.broker.config import HOME_ENV, state_root

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.broker, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                                 reason="pytest-xdist is not installed (pip install pytest-xdist)")]


def _run(tmp_path: Path, *selection: str) -> tuple[subprocess.Popen, str, Path]:
    """Run pytest -n 2 on the pulsar target over `selection`: the finished process (its pid is the
    controller's), its output and its state folder."""
    home = tmp_path / "pulsar"
    home.mkdir()
    for shared in ("dist", "drivers"):  # the resolved release and the built drivers, not their brokers
        if (state_root() / shared).exists():
            (home / shared).symlink_to(state_root() / shared)
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), "--target", "pulsar", "--reports-dir", str(out), *selection],
        cwd=ROOT, env={**os.environ, HOME_ENV: str(home), "PYTHONPATH": str(ROOT)},
        text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        output = run.communicate(timeout=900)[0]
    except subprocess.TimeoutExpired:
        run.kill()  # its controller's end stops the shared broker; a broker of a worker is reaped later
        raise
    return run, output, home


def _brokers(home: Path) -> dict[str, bool]:
    """The run's broker folders, each with whether its broker still runs."""
    return {folder.name: Broker(BrokerConfig(root=home, instance=folder.name)).status().running
            for folder in sorted((home / "brokers").iterdir()) if folder.is_dir()}


def test_workers_share_one_broker_stopped_at_the_end(tmp_path):
    run, output, home = _run(tmp_path, "-k", "individual_ack and Shared", "suites/conformance/test_individual_ack.py")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    totals = summary["totals"]  # a divergence Pulsar shows is beside the point; an unknown (no broker) is not
    assert run.returncode in (0, 1) and totals["passed"] + totals["failed"] == 3 and not totals["unknown"], \
        output[-3000:]
    assert summary["run"]["pulsar"]["embedded"] is True
    brokers = _brokers(home)
    assert list(brokers) == [f"pytest-shared-{run.pid}"], f"brokers started: {sorted(brokers)}"
    assert not any(brokers.values()), f"a broker still runs after the run: {brokers}"


def test_a_test_that_restarts_the_broker_gets_one_of_its_own(tmp_path):
    run, output, home = _run(tmp_path, "-rA", "-k", "cumulative_ack or graceful", "suites/broker/test_cumulative_ack.py",
                             "suites/broker/test_persistence.py")
    assert run.returncode == 0 and "4 passed" in output, output[-3000:]
    assert "PASSED suites/broker/test_persistence.py::test_acks_survive_a_graceful_restart[own-broker]" in output
    brokers = _brokers(home)
    shared = [name for name in brokers if name == f"pytest-shared-{run.pid}"]
    own = [name for name in brokers if name.startswith(("pytest-gw0-", "pytest-gw1-"))]
    assert len(shared) == 1 and len(own) == 1 and len(brokers) == 2, f"brokers started: {sorted(brokers)}"
    assert not any(brokers.values()), f"a broker still runs after the run: {brokers}"
