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

import time

import pulsar
import pytest

from drivers import wire
from fixtures.pulsar import drain
from fixtures.targets.driver_target import DriverProcess, driver_command
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

ASKED_AND_LANDED_S = 0.4  # as in test_dead_letter_repeated_nack.py: after the first redelivery landed


def nacked(pulsar_broker, pulsar_client, topic, *, gap_s):
    """m0 received by the Java driver and nacked twice `gap_s` apart (None: once), then its consumer
    closed without receiving again. What comes to the next consumer, what went to the dead-letter
    topic (the Java client's default, <topic>-<subscription>-DLQ)."""
    letters = pulsar_client.subscribe(f"{topic}-app-DLQ", "letters")
    driver = DriverProcess(driver_command("java", version=pulsar_broker.version))
    try:
        driver.request(wire.hello(pulsar_broker.service_url), 60_000)
        spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100, max_redeliver_count=1)
        assert driver.request(wire.reset(spec, topic, "app"), 30_000)["outcome"] == "ok"

        def op(**request) -> dict:
            reply = driver.request({"type": "op", **request}, 30_000)
            assert reply["outcome"] == "ok", reply
            return reply

        op(op="subscribe", consumer="c0")
        op(op="send", entry=0, keys=[None], batched=False)
        first = op(op="receive", consumer="c0", ms=5000)
        assert (first.get("delivered_entry"), first.get("redelivery_count")) == (0, 0), first
        op(op="negative_acknowledge", consumer="c0", entry=0, index=-1)
        if gap_s is not None:
            time.sleep(gap_s)
            op(op="negative_acknowledge", consumer="c0", entry=0, index=-1)  # the same delivery again
        time.sleep(1.0)  # the count-1 copy lands in the receiver queue; the application never takes it
        op(op="close", consumer="c0")
    finally:
        driver.stop()
    after = pulsar_client.subscribe(topic, "app", consumer_type=pulsar.ConsumerType.Shared)
    back = [(m.data(), m.redelivery_count()) for m in drain(after, idle_ms=1500)]
    dead = [m.data() for m in drain(letters, idle_ms=1000)]
    for closing in (after, letters):
        closing.close()
    return back, dead


@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_java_nack_made_once_brings_the_message_back_after_a_close(pulsar_broker, pulsar_client, names):
    back, dead = nacked(pulsar_broker, pulsar_client, names.topic(), gap_s=None)
    assert [data for data, _ in back] == [b"0"] and dead == [], (back, dead)


@pytest.mark.guarantee("no-loss", "dead-letter")
def test_a_java_nack_repeated_on_one_delivery_dead_letters_the_copy_nobody_nacked(pulsar_broker, pulsar_client,
                                                                                   names):
    back, dead = nacked(pulsar_broker, pulsar_client, names.topic(), gap_s=ASKED_AND_LANDED_S)
    assert (back, dead) == ([], [b"0"]), f"back after the close {back}, dead-lettered {dead}: KD-33 may be wrong"
