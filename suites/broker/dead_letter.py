"""The start the dead-letter broker tests share: a Shared consumer with a nack delay of 100 ms and
at most one redelivery before the dead-letter topic, whose letters another subscription reads; and
a batch of three messages it has received once."""

import pulsar

from fixtures.pulsar import drain


def dead_lettering(pulsar_client, topic):
    """(letters, consumer): the dead-letter topic's reader and the consumer under test."""
    letters = pulsar_client.subscribe(f"{topic}-dlq", "letters")
    consumer = pulsar_client.subscribe(topic, "app", consumer_type=pulsar.ConsumerType.Shared,
                                       negative_ack_redelivery_delay_ms=100,
                                       dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(1, f"{topic}-dlq"))
    return letters, consumer


def batch_received(pulsar_client, topic, consumer):
    """(producer, messages): m0.0-m0.2 sent as one batch entry and received by `consumer`, count 0."""
    producer = pulsar_client.create_producer(topic, batching_enabled=True, batching_max_messages=1000,
                                             batching_max_publish_delay_ms=60_000)
    for index in range(3):
        producer.send_async(f"m0.{index}".encode(), None)
    producer.flush()
    first = drain(consumer, idle_ms=500)
    assert [(m.data(), m.redelivery_count()) for m in first] == [(b"m0.0", 0), (b"m0.1", 0), (b"m0.2", 0)]
    return producer, first
