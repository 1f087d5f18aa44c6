"""A nack repeated on one delivery, with a dead-letter policy, on the Java client: KD-33's loss.

The same program as suites/broker/test_dead_letter_repeated_nack.py, through the Java driver
(drivers/java, the Java client of the broker's version): m0 received with count 0 and nacked, then
the same delivery nacked again after the first redelivery has landed (max redeliveries 1, nack
delay 100 ms); the consumer closes a second later without receiving. The Java client's
NegativeAcksTracker asks for a redelivery at each nack's due time; the first ask brings the copy of
count 1, which the client, holding it in its receiver queue, files as one it may dead-letter
(count >= maxRedeliverCount, ConsumerImpl's possibleSendToDeadLetterTopicMessages); the second ask
finds it there and sends it to the dead-letter topic. Nobody nacked that copy, and after the close
m0 never comes again. This is KD-29's loss (`dead_letter_by_nack[Key_Shared-dlq1]` with
`--client java`: m0 nacked three times): neither Key_Shared nor a batch is needed for it.
"""

from __future__ import annotations

import pytest

from suites.broker.repeated_nack import nacked

pytestmark = pytest.mark.broker

ASKED_AND_LANDED_S = 0.4  # as in test_dead_letter_repeated_nack.py: after the first redelivery landed


@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_java_nack_made_once_brings_the_message_back_after_a_close(pulsar_broker, pulsar_client, names):
    back, dead = nacked(pulsar_broker, pulsar_client, names.topic(), client="java", gap_s=None)
    assert [data for data, _ in back] == [b"0"] and dead == [], (back, dead)


@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_java_nack_repeated_on_one_delivery_dead_letters_the_copy_nobody_nacked(pulsar_broker, pulsar_client,
                                                                                   names):
    back, dead = nacked(pulsar_broker, pulsar_client, names.topic(), client="java", gap_s=ASKED_AND_LANDED_S)
    assert (back, dead) == ([], [b"0"]), f"back after the close {back}, dead-lettered {dead}: KD-33 may be wrong"
