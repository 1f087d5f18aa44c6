"""The broker behind the suite's network-fault proxy (fixtures/network.py) that the network tests
share, one per run: every connection a client opens through `proxied_client` or `proxied_target`
goes through the proxy, which the broker advertises to lookups."""

from __future__ import annotations

import os

import pytest

from fixtures.broker.config import default_version
from fixtures.network import proxied_broker


@pytest.fixture(scope="session")
def behind_a_proxy(request):
    version = request.config.getoption("--pulsar-version", default=None) or default_version()
    with proxied_broker(version, f"pytest-network-{os.getpid()}") as (broker, proxy):
        yield broker, proxy


@pytest.fixture
def proxied_client(behind_a_proxy):
    """A Python client whose connections go through the proxy."""
    from drivers.python.client import new_client
    from fixtures.pulsar import client_logger

    _, proxy = behind_a_proxy
    connection = new_client(f"pulsar://127.0.0.1:{proxy.listen}", logger=client_logger(), operation_timeout_seconds=10)
    yield connection
    connection.close()


@pytest.fixture
def proxied_target(behind_a_proxy):
    """The Python client's target on the broker behind the proxy, with the broker side that cuts
    and stalls the network, for lock-step runs with the model."""
    from fixtures.targets.pulsar_target import PulsarTarget

    broker, proxy = behind_a_proxy
    driven = PulsarTarget(f"pulsar://127.0.0.1:{proxy.listen}", broker.config.admin_url, controller=broker,
                          network=proxy)
    yield driven
    driven.close()
