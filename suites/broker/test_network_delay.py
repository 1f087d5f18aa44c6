"""What a network that delays does to acknowledgements, for the `stall_network` and `slow_network`
ops of the generated programs to be modelled on (model/transitions/__init__.py: a stall is a wait;
a slow network lands every redelivery late).

The broker runs behind the suite's Toxiproxy proxy (fixtures/network.py, suites/broker/conftest.py).
A stall lets nothing through for a while on connections that stay open, then everything it held,
in order: a short partition as TCP lives it. Far shorter than the keep-alive interval (30 s), it
closes no connection: the broker keeps every consumer, an ack whose flush the stall held reaches
it once the stall ends, a nack's redelivery request too (the message comes back after the stall,
counted once, never before its delay), and what a consumer held it still holds, so nothing comes
again. A slow network (every byte late by as much each way) closes nothing either: an ack reaches
the cursor late, a nacked message comes back its delay and a round trip after the nack.
"""

from __future__ import annotations

import shutil
import time

import pulsar
import pytest

from fixtures.pulsar import poll, position_of
from fixtures.targets.lockstep import Lockstep
from suites.broker.proxied import acked_and_nacked, topic_for
from model import ops as o
from model.spec import Spec, SubscriptionType

pytestmark = [pytest.mark.broker, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("go") is None, reason="Toxiproxy is built with Go: go is not on PATH")]

SUBSCRIPTION = "stall"
NACK_DELAY_MS = 200
STALL_S = 2.0  # ten times the nack delay and twenty times the ack grouping: both fire inside it


def _received(client, request, *, sent: int, received: int):
    """A Shared consumer with the nack delay, `sent` messages published and the first `received`
    of them received: the topic, the consumer, the positions and the messages."""
    topic = topic_for(request)
    consumer = client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    producer = client.create_producer(topic, batching_enabled=False)
    positions = [position_of(producer.send(f"m{i}".encode())) for i in range(sent)]
    return topic, consumer, positions, [consumer.receive(timeout_millis=5000) for _ in range(received)]


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause", "no-redelivery-after-ack", "cursor", "redelivery-count")
def test_a_stall_loses_nothing_and_what_it_held_arrives_once_it_ends(behind_a_proxy, proxied_client, request):
    broker, proxy = behind_a_proxy
    topic, consumer, positions, (m0, m1, _) = _received(proxied_client, request, sent=4, received=3)
    proxy.stall()
    try:
        stalled = time.monotonic()
        consumer.acknowledge(m0)  # grouped: flushed 100 ms later, into the stall
        consumer.negative_acknowledge(m1)  # its redelivery request goes 200 ms later, into the stall
        time.sleep(STALL_S)
        assert not broker.admin.cursor(topic, SUBSCRIPTION).is_acknowledged(positions[0])  # the flush is held
        assert len(broker.admin.subscription_stats(topic, SUBSCRIPTION).consumers) == 1  # no connection closed
    finally:
        proxy.clear()
    got = []
    while True:
        try:
            message = consumer.receive(timeout_millis=2000)
        except pulsar.Timeout:
            break
        got.append((message.data(), message.redelivery_count(), time.monotonic() - stalled))
        consumer.acknowledge(message)
    # m3 (in the receiver queue, or dispatched into the stall) first; m1 came back once its request
    # got through, counted once; m2, still held, did not come again; m0, acknowledged, did not either.
    assert [(data, count) for data, count, _ in got] == [(b"m3", 0), (b"m1", 1)]
    assert got[1][2] >= STALL_S
    cursor = broker.admin.cursor(topic, SUBSCRIPTION)
    assert [cursor.is_acknowledged(p) for p in positions] == [True, True, False, True]
    assert len(broker.admin.subscription_stats(topic, SUBSCRIPTION).consumers) == 1


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause", "no-redelivery-after-ack", "cursor", "redelivery-count")
@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.EXCLUSIVE], ids=["Shared", "Exclusive"])
def test_the_model_accepts_what_a_stall_leaves(proxied_target, request, kind):
    """`stall_network` in lock-step with the model: an ack and a nack just before a stall, their
    flush and redelivery request held by it; the model accepts the cursor read after it and
    every delivery to the drain (the model's checks fail the lock-step run otherwise)."""
    spec = Spec(subscription_type=kind, nack_delay_ms=100)
    run = Lockstep(proxied_target, spec, topic_for(request).rsplit("/", 1)[1])
    acked_and_nacked(run)
    run.do(o.StallNetwork(ms=1000))
    cursor = run.do(o.ReadCursor()).value
    assert cursor.mark_delete == 0  # the held flush arrived once the stall ended
    again = [d.message for d in run.drain("c0")]
    # m1 comes back (on Exclusive the nack's rewind brings m2 after it); m0 never does.
    assert again == ([o.MessageId(1)] if kind is SubscriptionType.SHARED else [o.MessageId(1), o.MessageId(2)])


LATENCY_MS = 300


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause", "cursor", "redelivery-count")
def test_a_slow_network_delays_each_request_and_dispatch_and_loses_nothing(behind_a_proxy, proxied_client, request):
    broker, proxy = behind_a_proxy
    topic, consumer, positions, (m0, m1) = _received(proxied_client, request, sent=2, received=2)
    proxy.latency(LATENCY_MS)
    try:
        started = time.monotonic()
        consumer.acknowledge(m0)
        consumer.negative_acknowledge(m1)
        acked = poll(lambda: broker.admin.cursor(topic, SUBSCRIPTION), lambda c: c.is_acknowledged(positions[0]))
        assert acked.is_acknowledged(positions[0])
        assert time.monotonic() - started >= LATENCY_MS / 1000  # the flush crossed the slow network
        back = consumer.receive(timeout_millis=5000)
        waited = time.monotonic() - started
        assert (back.data(), back.redelivery_count()) == (b"m1", 1)
        # The tracker's timer, then the request and the dispatch, each across the slow network.
        assert waited >= (NACK_DELAY_MS + 2 * LATENCY_MS) / 1000
        assert len(broker.admin.subscription_stats(topic, SUBSCRIPTION).consumers) == 1  # no connection closed
        consumer.acknowledge(back)
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=1500)  # nothing else comes: m0 was acknowledged
    finally:
        proxy.clear()


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause", "no-redelivery-after-ack", "cursor", "redelivery-count")
@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.EXCLUSIVE], ids=["Shared", "Exclusive"])
def test_the_model_accepts_what_a_slow_network_leaves(proxied_target, request, kind):
    """`slow_network` in lock-step with the model: an ack, a nack and a redelivery request made
    across a slow network, a wait past the nack's window (not past it and a round trip), an unload
    (the admin API, not slowed) and a cursor read; the model accepts every delivery to the drains."""
    spec = Spec(subscription_type=kind, nack_delay_ms=100)
    run = Lockstep(proxied_target, spec, topic_for(request).rsplit("/", 1)[1])
    run.do(o.Subscribe(consumer="c0"))
    for _ in range(3):
        run.do(o.Send())
    assert [run.receive("c0", timeout_ms=5000).message for _ in range(3)] == [o.MessageId(i) for i in range(3)]
    run.do(o.SlowNetwork(ms=100))
    run.do(o.Acknowledge(consumer="c0", message=o.MessageId(0)))
    run.do(o.NegativeAcknowledge(consumer="c0", message=o.MessageId(1)))
    run.do(o.Tick(ms=spec.nack_window_ms[1] + 10))
    first = [d.message for d in run.drain("c0")]
    assert o.MessageId(1) in first and o.MessageId(0) not in first
    run.do(o.RedeliverUnacknowledgedMessages(consumer="c0"))
    run.do(o.Unload())
    run.do(o.ReadCursor())
    again = [d.message for d in run.drain("c0")]
    assert o.MessageId(0) not in again
