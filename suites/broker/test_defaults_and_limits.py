"""Two defaults and a limit that decide what a spec must say, read from the real thing.

When batch-index acks became the default (PIP-391): the broker's
`acknowledgmentAtBatchIndexLevelEnabled` defaults to false up to 4.0.x and to true in 4.2.x (read
from `ServiceConfiguration` of each provisioned release); the Python client's
`batch_index_ack_enabled` defaults to false (3.13). Batch-index acks take effect only when both
are on, so with default settings a 4.0 broker redelivers a partly acked batch whole, whatever the
client says. The project's broker turns the broker side on; the specs say which client side.

Zero-queue consumers on partitioned topics: the Python (C++) client refuses them at
subscribe with `InvalidConfiguration` ("Can't use partitioned topic if the queue size is 0");
on a non-partitioned topic `receiver_queue_size=0` works (suites/model/test_fidelity_broker.py).
"""

import inspect
import subprocess

import pulsar
import pytest

from fixtures.broker.provision import distribution_dir, find_java

pytestmark = pytest.mark.broker

# What each release's ServiceConfiguration says (None: not checked here).
BROKER_BATCH_INDEX_ACK_DEFAULT = {"3.0.7": False, "4.0.7": False, "4.2.4": True}

_READ_DEFAULT = """
public class ReadDefault {
    public static void main(String[] args) {
        System.out.println(new org.apache.pulsar.broker.ServiceConfiguration().isAcknowledgmentAtBatchIndexLevelEnabled());
    }
}
"""


@pytest.mark.parametrize("version", sorted(BROKER_BATCH_INDEX_ACK_DEFAULT))
@pytest.mark.guarantee("no-redelivery-after-ack")
def test_the_broker_turns_batch_index_acks_on_by_default_from_4_2(version, pulsar_broker, tmp_path):
    lib = distribution_dir(version) / "lib"
    if not lib.is_dir():
        pytest.skip(f"Pulsar {version} is not provisioned here (python -m fixtures.broker resolve --pulsar-version {version})")
    source = tmp_path / "ReadDefault.java"
    source.write_text(_READ_DEFAULT)
    done = subprocess.run([str(find_java()), "-cp", f"{lib}/*", str(source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(BROKER_BATCH_INDEX_ACK_DEFAULT[version]).lower()


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_the_python_client_leaves_batch_index_acks_off_by_default():
    assert inspect.signature(pulsar.Client.subscribe).parameters["batch_index_ack_enabled"].default is False


@pytest.mark.guarantee("subscribe")
def test_a_zero_queue_consumer_cannot_subscribe_to_a_partitioned_topic(pulsar_broker, pulsar_client, names):
    topic = names.topic()
    pulsar_broker.admin.create_partitioned_topic(topic, 2)
    with pytest.raises(pulsar.InvalidConfiguration):
        pulsar_client.subscribe(topic, "zero", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=0)
    # The same subscription with a receiver queue works.
    consumer = pulsar_client.subscribe(topic, "zero", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=1)
    consumer.close()
