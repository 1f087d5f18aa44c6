"""What a network stall between the clients and the broker does to acknowledgements, for the
`stall_network` op of the generated programs to be modelled on (model/transitions/__init__.py: a
stall is a wait).

The broker runs behind the suite's Toxiproxy proxy (fixtures/network.py, suites/broker/conftest.py).
A stall lets nothing through for a while on connections that stay open, then everything it held,
in order: a short partition as TCP lives it. Far shorter than the keep-alive interval (30 s), it
closes no connection: the broker keeps every consumer, an ack whose flush the stall held reaches
it once the stall ends, a nack's redelivery request too (the message comes back after the stall,
counted once, never before its delay), and what a consumer held it still holds, so nothing comes
again.
"""

from __future__ import annotations

import shutil
import time

import pulsar
import pytest

from fixtures.pulsar import position_of
from fixtures.targets.lockstep import Lockstep
from suites.broker.proxied import acked_and_nacked
from model import ops as o
from model.spec import Spec, SubscriptionType

pytestmark = [pytest.mark.broker, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("go") is None, reason="Toxiproxy is built with Go: go is not on PATH")]

SUBSCRIPTION = "stall"
NACK_DELAY_MS = 200
STALL_S = 2.0  # ten times the nack delay and twenty times the ack grouping: both fire inside it


def _topic(request) -> str:
    return f"persistent://public/default/{request.node.name.replace('[', '-').replace(']', '')}-{time.time_ns()}"


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause", "no-redelivery-after-ack", "cursor", "redelivery-count")
def test_a_stall_loses_nothing_and_what_it_held_arrives_once_it_ends(behind_a_proxy, proxied_client, request):
    broker, proxy = behind_a_proxy
    topic = _topic(request)
    consumer = proxied_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared,
                                        negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    producer = proxied_client.create_producer(topic, batching_enabled=False)
    positions = [position_of(producer.send(f"m{i}".encode())) for i in range(4)]
    m0, m1, m2 = (consumer.receive(timeout_millis=5000) for _ in range(3))
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
    run = Lockstep(proxied_target, spec, _topic(request).rsplit("/", 1)[1])
    acked_and_nacked(run)
    run.do(o.StallNetwork(ms=1000))
    cursor = run.do(o.ReadCursor()).value
    assert cursor.mark_delete == 0  # the held flush arrived once the stall ended
    again = [d.message for d in run.drain("c0")]
    # m1 comes back (on Exclusive the nack's rewind brings m2 after it); m0 never does.
    assert again == ([o.MessageId(1)] if kind is SubscriptionType.SHARED else [o.MessageId(1), o.MessageId(2)])
