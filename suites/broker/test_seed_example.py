"""The seed example: an individual ack on a Shared subscription leaves a hole in the cursor.

From the project's first seed article (深入解析Apache Pulsar系列（一）：客户端消息确认): messages 1-6
go to two Shared consumers; the one that received message 4 acknowledges it and nothing else. Both
close. The broker's cursor now has markDeletePosition before message 1 and one individually
deleted range, `(3..4]`, the hole. A new consumer of the subscription gets exactly 1, 2, 3, 5, 6:
an acknowledged message is never delivered again, and nothing unacknowledged is lost.
"""

import pulsar
import pytest

from fixtures.admin import Position, PositionRange
from fixtures.pulsar import drain, position_of

pytestmark = pytest.mark.broker

SUBSCRIPTION = "seed"


@pytest.mark.guarantee("no-redelivery-after-ack", "cursor")
def test_individual_ack_leaves_a_hole_that_is_never_redelivered(pulsar_broker, pulsar_client, names):
    topic = names.topic()
    consumers = [
        pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=3)
        for _ in range(2)
    ]
    producer = pulsar_client.create_producer(topic)
    positions = {n: position_of(producer.send(str(n).encode())) for n in range(1, 7)}

    received = {id(c): drain(c, idle_ms=500) for c in consumers}
    payloads = sorted(int(m.data()) for batch in received.values() for m in batch)
    assert payloads == [1, 2, 3, 4, 5, 6], "each message goes to exactly one Shared consumer"

    holder = next(c for c in consumers if any(m.data() == b"4" for m in received[id(c)]))
    holder.acknowledge(next(m for m in received[id(holder)] if m.data() == b"4"))
    for consumer in consumers:
        consumer.close()  # close flushes the grouped ack before the broker removes the consumer

    cursor = pulsar_broker.admin.cursor(topic, SUBSCRIPTION)
    assert cursor.mark_delete_position == Position(positions[1].ledger, positions[1].entry - 1)
    assert cursor.individually_deleted == (PositionRange(positions[3], positions[4]),)

    newcomer = pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared)
    assert [int(m.data()) for m in drain(newcomer)] == [1, 2, 3, 5, 6]
