"""The failpoint's harness side (fixtures/broker/failpoint.py), without a broker: which topic it is
armed for, how a broker JVM loads it, and a clear refusal where it cannot be used. What it reaches
on the real broker: suites/broker/test_persistence.py."""

from __future__ import annotations

import json

import pytest

from fixtures.broker import Broker, BrokerConfig, BrokerError
from fixtures.broker import failpoint


def test_it_is_armed_for_one_topic_by_its_managed_ledger_name(tmp_path):
    failpoint.arm(tmp_path, "persistent://public/default/orders-1")
    assert failpoint.armed_file(tmp_path).read_text() == "public/default/persistent/orders-1"
    failpoint.disarm(tmp_path)
    assert not failpoint.armed_file(tmp_path).exists()
    failpoint.disarm(tmp_path)  # disarming twice is harmless


@pytest.mark.parametrize("topic", ["non-persistent://public/default/t", "orders", "persistent://public/t"])
def test_a_topic_without_a_managed_ledger_is_refused(tmp_path, topic):
    with pytest.raises(BrokerError, match="persistent topic's full name"):
        failpoint.arm(tmp_path, topic)
    assert not failpoint.armed_file(tmp_path).exists()


def test_the_broker_jvm_loads_the_agent_only_once_it_was_fetched(tmp_path):
    home = tmp_path / "brokers" / "b"
    assert failpoint.jvm_args(home, tmp_path) == []
    jar = failpoint.agent_jar(tmp_path)
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    args = failpoint.jvm_args(home, tmp_path)
    assert args == [f"-javaagent:{jar}=script:{failpoint.RULES}",
                    f"-D{failpoint.ARMED_PROPERTY}={failpoint.armed_file(home)}"]
    assert failpoint.ARMED_PROPERTY in failpoint.RULES.read_text(), "the rule reads the file the harness arms"
    assert failpoint.HALTED in failpoint.RULES.read_text(), "the harness knows a halt by the line the rule logs"


def test_a_broker_started_without_the_agent_says_how_to_get_it(tmp_path, monkeypatch):
    broker = Broker(BrokerConfig(instance="no-agent", root=tmp_path))
    broker.home.mkdir(parents=True)
    (broker.home / "state.json").write_text(json.dumps({"pid": 4242, "version": "4.0.7", "failpoint": False}))
    monkeypatch.setattr(Broker, "_running_pid", lambda self: 4242)
    assert not broker.has_failpoint()
    with pytest.raises(BrokerError, match="without the failpoint.*fixtures.broker resolve"):
        broker.crash_at_persist("persistent://public/default/t", within_s=1)
    assert not failpoint.armed_file(broker.home).exists(), "nothing armed on a broker that cannot halt"


def test_a_start_fetches_the_agent_or_goes_on_without_it_saying_why(tmp_path, monkeypatch):
    said = []
    broker = Broker(BrokerConfig(instance="fetching", root=tmp_path))
    fetched = []

    def fetch(root):
        fetched.append(root)
        failpoint.agent_jar(root).parent.mkdir(parents=True, exist_ok=True)
        failpoint.agent_jar(root).write_bytes(b"")
        return failpoint.agent_jar(root)

    monkeypatch.setattr(failpoint, "fetch_agent", fetch)
    assert broker._failpoint_args(said.append) == failpoint.jvm_args(broker.home, tmp_path) != []
    assert fetched == [tmp_path] and said == []

    def refused(root):
        raise BrokerError("Maven (mvn) is not on PATH")

    monkeypatch.setattr(failpoint, "fetch_agent", refused)
    failpoint.agent_jar(tmp_path).unlink()
    assert broker._failpoint_args(said.append) == []
    assert said == ["the broker starts without the failpoint (a crash at a cursor's persist): Maven (mvn) is not on PATH"]
    assert Broker(BrokerConfig(instance="without", root=tmp_path, failpoint=False))._failpoint_args(said.append) == []
