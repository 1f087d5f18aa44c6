"""Cumulative acknowledgement: one ack for a message and everything before it, never on Shared.

Pulsar docs (concepts-messaging, "Acknowledgment"): a cumulative ack of M means M and every
earlier message are acknowledged; the broker moves markDeletePosition to M. It is not allowed on
Shared and Key_Shared subscriptions; the client refuses it before anything reaches the broker
(C++ `ConsumerImpl::isCumulativeAcknowledgementAllowed`), with
`CumulativeAcknowledgementNotAllowedError`.
"""

import pulsar
import pytest

from fixtures.admin import Position
from fixtures.pulsar import drain, poll, position_of

pytestmark = pytest.mark.broker

SUBSCRIPTION = "cumulative"


def _publish(client, topic, count):
    producer = client.create_producer(topic)
    positions = [position_of(producer.send(str(n).encode())) for n in range(1, count + 1)]
    producer.close()
    return positions


@pytest.mark.guarantee("cursor")
def test_cumulative_ack_on_exclusive_moves_mark_delete_over_all_earlier_messages(pulsar_broker, pulsar_client, names):
    topic = names.topic()
    consumer = pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Exclusive)
    positions = _publish(pulsar_client, topic, 5)
    messages = drain(consumer, idle_ms=500)
    assert [int(m.data()) for m in messages] == [1, 2, 3, 4, 5]

    consumer.acknowledge_cumulative(messages[2])
    cursor = poll(lambda: pulsar_broker.admin.cursor(topic, SUBSCRIPTION),
                  lambda c: c.mark_delete_position == positions[2])
    assert cursor.mark_delete_position == positions[2]
    assert cursor.individually_deleted == ()
    consumer.close()

    again = pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Exclusive)
    assert [int(m.data()) for m in drain(again)] == [4, 5]


@pytest.mark.parametrize("consumer_type", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared],
                         ids=["Shared", "Key_Shared"])
@pytest.mark.guarantee("cumulative-refused-on-shared")
def test_cumulative_ack_is_refused_on_shared_subscriptions(pulsar_broker, pulsar_client, names, consumer_type):
    topic = names.topic()
    consumer = pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=consumer_type)
    positions = _publish(pulsar_client, topic, 3)
    messages = drain(consumer, idle_ms=500)
    assert len(messages) == 3

    with pytest.raises(pulsar.CumulativeAcknowledgementNotAllowedError):
        consumer.acknowledge_cumulative(messages[-1])
    consumer.close()

    cursor = pulsar_broker.admin.cursor(topic, SUBSCRIPTION)
    assert cursor.mark_delete_position == Position(positions[0].ledger, positions[0].entry - 1)
    assert cursor.individually_deleted == ()
    again = pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=consumer_type)
    assert [int(m.data()) for m in drain(again)] == [1, 2, 3]
