"""The broker's lifecycle fails loudly and loses nothing: missing tools, busy ports, a broker that
will not start (its log tail is shown), stale data from another version."""

import json
import socket

import pytest

from fixtures.broker import Broker, BrokerConfig, BrokerError, free_port
from fixtures.broker.provision import resolve


def _config(tmp_path, **changes):
    # A private root, with the real resolved jars linked in, so nothing of the user's brokers is
    # touched; without the failpoint, whose agent the private root has not got (fixtures/broker/failpoint.py).
    shared_dist = BrokerConfig().root / "dist"
    (tmp_path / "dist").symlink_to(shared_dist, target_is_directory=True)
    return BrokerConfig(root=tmp_path, instance="lifecycle", broker_port=free_port(), web_port=free_port(),
                        **{"failpoint": False, **changes})


def test_missing_java_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrokerError, match="Java was not found"):
        Broker(BrokerConfig(root=tmp_path)).start()


def test_unresolved_version_without_maven_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrokerError, match=r"Maven \(mvn\) is not on PATH"):
        resolve("4.0.7", root=tmp_path)
    assert not (tmp_path / "dist" / "4.0.7").exists()


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        config = BrokerConfig(root=tmp_path, broker_port=squatter.getsockname()[1], web_port=free_port())
        with pytest.raises(BrokerError, match=f"port {config.broker_port} is already in use"):
            Broker(config).start()
    assert not (config.home / "data").exists()


@pytest.mark.broker
def test_a_broker_that_exits_while_starting_shows_its_log_tail(tmp_path):
    broker = Broker(_config(tmp_path, heap="1k"))
    with pytest.raises(BrokerError, match="exited with code") as failure:
        broker.start()
    assert "heap" in str(failure.value).lower(), "the JVM's own complaint is in the error"
    assert not broker.status().running


@pytest.mark.broker
def test_a_broker_that_is_not_ready_in_time_is_stopped_and_its_log_shown(tmp_path):
    broker = Broker(_config(tmp_path, ready_timeout_s=0.5))
    with pytest.raises(BrokerError, match=r"did not become usable within 0 s.*Log tail", ) as failure:
        broker.start()
    assert "=== start" in str(failure.value)
    assert not broker.status().running


def test_data_from_another_version_is_kept_and_refused(tmp_path):
    config = _config(tmp_path)
    data = config.home / "data"
    data.mkdir(parents=True)
    (data / "PULSAR_VERSION").write_text("3.0.7\n")
    (data / "precious").write_text("cursor")
    with pytest.raises(BrokerError, match="written by Pulsar 3.0.7.*--fresh"):
        Broker(config).start()
    assert (data / "precious").read_text() == "cursor"


def test_a_stale_pid_from_a_dead_run_reads_as_stopped(tmp_path):
    config = BrokerConfig(root=tmp_path, instance="stale")
    config.home.mkdir(parents=True)
    (config.home / "state.json").write_text(json.dumps({"pid": 2**22 + 7, "version": config.version,
                                                         "broker_port": 1, "web_port": 2}))
    assert not Broker(config).status().running
    assert Broker(config).stop() is False


def test_a_corrupt_state_file_is_named(tmp_path):
    config = BrokerConfig(root=tmp_path, instance="corrupt")
    config.home.mkdir(parents=True)
    (config.home / "state.json").write_text("{not json")
    with pytest.raises(BrokerError, match="state.json is not valid JSON"):
        Broker(config).status()


@pytest.mark.parametrize("changes, message", [
    ({"version": "4.0"}, "not a Pulsar release version"),
    ({"broker_port": 0}, "must be a TCP port"),
    ({"broker_port": 7000, "web_port": 7000}, "must differ"),
    ({"instance": "../x"}, "instance name"),
])
def test_bad_settings_are_refused_with_the_reason(changes, message):
    with pytest.raises(BrokerError, match=message):
        BrokerConfig(**changes)


def test_a_free_port_is_never_one_the_kernel_gives_clients():
    """A client reconnecting to a dead broker on an ephemeral port can connect to itself and hold
    the port the broker needs back (a crash test's restart once found its port taken)."""
    import random

    from fixtures.broker.process import ephemeral_ports

    low, high = ephemeral_ports()
    ports = {free_port(random.Random(seed)) for seed in range(50)}
    assert all(10_000 <= port < low for port in ports) and len(ports) > 40


def test_the_session_broker_of_a_pytest_run_that_is_gone_is_removed_and_no_other(tmp_path):
    """Each pytest session names its broker after its own process; a session killed before its
    teardown leaves one behind, which the next session removes (a leftover on other ports once
    made a session wait 120 s for a broker that was not there)."""
    import os
    import subprocess

    from fixtures.pulsar import reap_abandoned_session_brokers

    gone = subprocess.Popen(["true"])
    gone.wait()
    for name in (f"pytest-main-{gone.pid}", f"pytest-main-{os.getpid()}", "pytest-main", "default"):
        (tmp_path / "brokers" / name / "data").mkdir(parents=True)
    assert reap_abandoned_session_brokers(tmp_path) == ["pytest-main", f"pytest-main-{gone.pid}"]
    assert sorted(p.name for p in (tmp_path / "brokers").iterdir()) == ["default", f"pytest-main-{os.getpid()}"]
