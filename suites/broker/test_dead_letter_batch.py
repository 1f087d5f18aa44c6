"""A batch index nacked past the dead-letter limit, on the Python client (C++ underneath).

The C++ client keeps what it may dead-letter per batch entry: a batch received with redelivery
count >= maxRedeliverCount is stored under the entry's id with all its messages
(ConsumerImpl: possibleSendToDeadLetterTopicMessages_.put(batchedMessage.getMessageId(), ...)),
and its NegativeAcksTracker asks for the entry, not the index. So a nack of one index at the limit
sends every message of the batch to the dead-letter topic and acknowledges each
(ConsumerImpl::processPossibleToDLQ), also those the application holds and never nacked: they
never come back, not even after a close. Documented (DeadLetterPolicy): only a message redelivered
`maxRedeliverCount` times and nacked again goes to the dead-letter topic. Found by the nightly
`dead_letter_by_nack[Key_Shared-dlq1]` (a batch entry lost after a client crash); KD-32, the C++
form of apache/pulsar#5891.
"""

import time

import pulsar
import pytest

from fixtures.pulsar import drain
from suites.broker.dead_letter import batch_received, dead_lettering

pytestmark = pytest.mark.broker


@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_nack_of_one_batch_index_past_the_limit_dead_letters_the_whole_batch(pulsar_client, names):
    topic = names.topic()
    letters, consumer = dead_lettering(pulsar_client, topic)
    producer, first = batch_received(pulsar_client, topic, consumer)
    consumer.negative_acknowledge(first[1])
    again = drain(consumer, idle_ms=1000)  # the whole entry comes back, counted once
    assert [(m.data(), m.redelivery_count()) for m in again] == [(b"m0.0", 1), (b"m0.1", 1), (b"m0.2", 1)]
    consumer.negative_acknowledge(again[1])  # m0.1 at the limit: it goes to the dead-letter topic
    time.sleep(1.0)
    dead = [m.data() for m in drain(letters, idle_ms=1000)]
    consumer.close()  # m0.0 and m0.2 were held, never acknowledged nor nacked again
    after = pulsar_client.subscribe(topic, "app", consumer_type=pulsar.ConsumerType.Shared)
    back = [m.data() for m in drain(after, idle_ms=1500)]
    after.close()
    letters.close()
    producer.close()
    assert (dead, back) == ([b"m0.0", b"m0.1", b"m0.2"], []), \
        f"dead-lettered {dead}, back after the close {back}: KD-32 may be wrong"
