"""An acknowledgement made while the consumer reconnects after an unload (KD-31).

The Python client (C++ underneath) groups acks and sends them every 100 ms. When its flush finds
the consumer without a connection (the broker closed it at an unload and the client has not
reconnected yet), `AckGroupingTracker::doImmediateAck` sends nothing ("Connection is not ready,
ACK failed") and `AckGroupingTrackerEnabled::flush` clears the pending acks anyway: the ack is
gone, though the application's `acknowledge` returned. After the reconnect the broker has no
such ack, so the message comes again (at-least-once: an ack that never reached the broker does not
keep its message away), and the cursor does not show it.

The model allows for it (model/transitions/reconnect.py): an ack still grouped at a disconnection,
or made while the consumer may be reconnecting, may be dropped, its message owed again. On Pulsar
4.0.7 with pulsar-client 3.13.0 every try lost its ack (KD-31).
"""

import time

import pulsar
import pytest

from fixtures.pulsar import poll, position_of
from fixtures.targets.lockstep import Lockstep
from model import ops as o
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

SUBSCRIPTION = "reconnecting"
EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
SHARED = Spec(subscription_type=SubscriptionType.SHARED)
TRIES = 3  # the reconnect races the 100 ms flush timer (on 4.0.7 each of 5 tries lost its ack)


def _ack_right_after_an_unload(pulsar_broker, pulsar_client, topic) -> bool:
    """Whether an ack made right after an unload (the consumer reconnecting) is missing from the
    cursor once the consumer is back."""
    consumer = pulsar_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Exclusive)
    producer = pulsar_client.create_producer(topic)
    first = position_of(producer.send(b"m0"))
    producer.send(b"m1")
    message = consumer.receive(timeout_millis=5000)
    pulsar_broker.admin.unload(topic)
    consumer.acknowledge(message)  # returns at once: the ack waits in the grouping tracker
    time.sleep(1.0)  # the flush timer fires, the consumer reconnects
    cursor = poll(lambda: pulsar_broker.admin.cursor(topic, SUBSCRIPTION),
                  lambda c: c.is_acknowledged(first), timeout_s=2.0)
    lost = not cursor.is_acknowledged(first)
    if lost:  # the broker never had the ack: m0 comes again after the reconnect's rewind
        assert consumer.receive(timeout_millis=5000).data() == b"m0"
    consumer.close()
    producer.close()
    return lost


@pytest.mark.guarantee("cursor", "no-redelivery-after-ack")
def test_an_ack_made_while_the_consumer_reconnects_after_an_unload_can_be_lost(pulsar_broker, pulsar_client, names):
    lost = [_ack_right_after_an_unload(pulsar_broker, pulsar_client, names.topic()) for _ in range(TRIES)]
    assert any(lost), f"every ack made right after an unload reached the broker ({TRIES} tries): KD-31 may be wrong"


@pytest.mark.guarantee("no-redelivery-after-ack", "cursor")
def test_the_model_accepts_what_an_ack_dropped_while_reconnecting_leaves(pulsar_target, names):
    """The same program in lock-step with the model (model/transitions/reconnect.py): the dropped
    ack never reaches the broker, not even with the close's flush, so m0 comes to the next consumer."""
    for attempt in range(TRIES):
        run = Lockstep(pulsar_target, EXCLUSIVE, f"{names.topic().rsplit('/', 1)[1]}-{attempt}")
        run.do(o.Subscribe(consumer="c0"))
        run.do(o.Send())
        run.do(o.Send())
        assert run.receive("c0", timeout_ms=5000).message == o.MessageId(0)
        run.do(o.Unload())
        run.do(o.Acknowledge(consumer="c0", message=o.MessageId(0)))
        run.do(o.Tick(ms=1000))  # the flush timer fires, the consumer reconnects
        if run.do(o.ReadCursor()).value.acknowledged(2):
            continue  # the consumer was back before the flush
        assert o.MessageId(0) in [d.message for d in run.drain("c0")]
        run.do(o.Close(consumer="c0"))
        run.do(o.Subscribe(consumer="c0"))
        assert [d.message for d in run.drain("c0")] == [o.MessageId(0), o.MessageId(1)]
        return
    pytest.fail(f"every ack made right after an unload reached the broker ({TRIES} tries)")



@pytest.mark.guarantee("no-loss", "cursor")
def test_a_copy_received_before_the_read_that_shows_the_ack_lost_is_held(pulsar_target, names):
    """On Shared: c0's ack of m0, made while it reconnects, is dropped; c0 closes, and m0 comes to
    c1, whose application takes it before anything shows the ack lost. The cursor read that then
    shows it does not make m0 owed once more: c1 holds it, and it comes again only when c1 gives
    it back (its close)."""
    for attempt in range(TRIES):
        run = Lockstep(pulsar_target, SHARED, f"{names.topic().rsplit('/', 1)[1]}-{attempt}")
        run.do(o.Subscribe(consumer="c0"))
        run.do(o.Send())
        assert run.receive("c0", timeout_ms=5000).message == o.MessageId(0)
        run.do(o.Subscribe(consumer="c1"))
        run.do(o.Unload())
        run.do(o.Acknowledge(consumer="c0", message=o.MessageId(0)))
        run.do(o.Tick(ms=1000))  # the flush timer fires, the consumers reconnect
        run.do(o.Close(consumer="c0"))
        copy = run.receive("c1", timeout_ms=2000)
        if run.do(o.ReadCursor()).value.acknowledged(1):
            continue  # the consumer was back before the flush
        assert copy is not None and copy.message == o.MessageId(0)
        assert run.drain("c1") == []
        run.do(o.Close(consumer="c1"))
        run.do(o.Subscribe(consumer="c2"))
        assert [d.message for d in run.drain("c2")] == [o.MessageId(0)]
        return
    pytest.fail(f"every ack made right after an unload reached the broker ({TRIES} tries)")
