"""A nack repeated on one delivery, with a dead-letter policy, on the Go client: KD-33's loss.

The program of suites/broker/test_java_dead_letter_repeated_nack.py through the Go driver
(drivers/go, pulsar-client-go of go.mod): m0 received with count 0 and nacked, then the same
delivery nacked again, 1 ms or 0.4 s later (max redeliveries 1, nack delay 100 ms); the consumer
closes a second later without receiving. Nacked once, m0 comes to the next consumer and is not
dead-lettered. Nacked twice, its copy of count 1, which the application never took, goes to the
dead-letter topic (`<topic>-<subscription>-DLQ`, the Go client's default) and m0 never comes
again: the Go client dead-letters it as the C++ and Java clients do (KD-33), on a topic without
partitions and on each partition of a partitioned one. What a repeated nack asks of the Go
client's nack tracker is not read here; the outcome is.
"""

from __future__ import annotations

import pytest

from suites.broker.repeated_nack import nacked

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("partitions", [0, 2], ids=["one-topic", "partitioned"])
@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_go_nack_made_once_brings_the_message_back_after_a_close(pulsar_broker, pulsar_client, names, partitions):
    back, dead = nacked(pulsar_broker, pulsar_client, names.topic(), client="go", gap_s=None, partitions=partitions)
    assert [data for data, _ in back] == [b"0"] and dead == [], (back, dead)


@pytest.mark.parametrize("partitions", [0, 2], ids=["one-topic", "partitioned"])
@pytest.mark.parametrize("gap_s", [0.001, 0.4], ids=["1ms", "400ms"])
@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_go_nack_repeated_on_one_delivery_dead_letters_the_copy_nobody_nacked(pulsar_broker, pulsar_client,
                                                                                 names, gap_s, partitions):
    back, dead = nacked(pulsar_broker, pulsar_client, names.topic(), client="go", gap_s=gap_s, partitions=partitions)
    assert (back, dead) == ([], [b"0"]), f"back after the close {back}, dead-lettered {dead}: KD-33 may be wrong"
