"""A broker whose owner is gone is stopped and removed (fixtures/broker/reap.py): a replay killed
mid-run leaves `.pulsar/brokers/replay-<pid>-<token>` and its JVM; the next replay or pytest
session that starts a broker of its own reaps it, and never a broker whose owner still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fixtures.broker import BrokerError
from fixtures.broker.process import _MAIN_CLASS, _alive


def _gone_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


@pytest.fixture
def jvm():
    """A process that passes for the broker's JVM (its command line names the main class)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", _MAIN_CLASS],
                               start_new_session=True)
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def _home(root, name, pid=None):
    home = root / "brokers" / name
    (home / "data").mkdir(parents=True)
    if pid is not None:
        (home / "state.json").write_text(json.dumps({"pid": pid, "version": "4.0.7", "broker_port": 1,
                                                     "web_port": 2}))
    return home


def test_a_replay_broker_whose_replay_is_gone_is_stopped_and_removed(tmp_path, jvm):
    from fixtures.broker.reap import reap_abandoned_brokers

    dead = _gone_pid()
    _home(tmp_path, f"replay-{dead}-1a2b3c", pid=jvm.pid)
    _home(tmp_path, f"replay-{os.getpid()}-4d5e6f")
    _home(tmp_path, "default")
    _home(tmp_path, "replayed")
    assert reap_abandoned_brokers(tmp_path) == [f"replay-{dead}-1a2b3c"]
    assert not _alive(jvm.pid)
    assert sorted(p.name for p in (tmp_path / "brokers").iterdir()) == [
        "default", f"replay-{os.getpid()}-4d5e6f", "replayed"]


def test_a_replay_reaps_before_it_starts_its_own(tmp_path, monkeypatch):
    from fixtures.broker.config import HOME_ENV
    from fixtures.broker.process import Broker
    from fixtures.targets import replay

    monkeypatch.setenv(HOME_ENV, str(tmp_path))
    left = _home(tmp_path, f"replay-{_gone_pid()}-1a2b3c")

    def no_broker(self, *, fresh=False):
        raise BrokerError("not started in this test")

    monkeypatch.setattr(Broker, "start", no_broker)
    with pytest.raises(BrokerError, match="not started in this test"):
        replay._start_broker("4.0.7")
    assert not left.exists()
    assert list((tmp_path / "brokers").iterdir()) == []
