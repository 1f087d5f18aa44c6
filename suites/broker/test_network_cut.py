"""What a network cut between the clients and the broker does to acknowledgements: the broker's
side of the guarantees once the clients reconnect, for the network-fault ops of the generated
programs to be modelled on.

The broker runs behind a Toxiproxy proxy (fixtures/network.py) that it advertises to lookups, so
every connection a client opens goes through the proxy. A cut closes them all and refuses new ones
for a while (the broker's host going away and coming back); the broker sees each consumer leave.
It has applied every ack that reached it: those stay. A held message was never acknowledged, so it
comes again after the reconnect; on Shared the redelivery count starts from 0 again, since every
consumer of the subscription left (the count resets when the last consumer leaves, as at a close).
An ack made while the connection is down never reaches the broker (the client's grouping tracker
finds no connection and drops it, KD-31's mechanism at an unload), so its message comes again.
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

SUBSCRIPTION = "cut"
SHARED = Spec(subscription_type=SubscriptionType.SHARED)
EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
CUT_S = 1.0  # the clients retry their connection every 100 ms, then back off


def _cut(proxy) -> None:
    proxy.for_a_while("cut", CUT_S)


def _drain(consumer, timeout_ms: int = 3000) -> list[tuple[bytes, int]]:
    got = []
    while True:
        try:
            message = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return got
        got.append((message.data(), message.redelivery_count()))
        timeout_ms = 1000


@pytest.mark.guarantee("no-redelivery-after-ack", "no-loss", "redelivery-count")
@pytest.mark.parametrize("kind", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.Exclusive], ids=["Shared", "Exclusive"])
def test_after_a_cut_what_was_held_comes_again_and_what_was_acked_does_not(behind_a_proxy, proxied_client, request, kind):
    broker, proxy = behind_a_proxy
    topic = topic_for(request)
    consumer = proxied_client.subscribe(topic, SUBSCRIPTION, consumer_type=kind)
    producer = proxied_client.create_producer(topic, batching_enabled=False)
    first = position_of(producer.send(b"m0"))
    for data in (b"m1", b"m2"):
        producer.send(data)
    held = [consumer.receive(timeout_millis=5000) for _ in range(3)]
    assert [m.data() for m in held] == [b"m0", b"m1", b"m2"]
    consumer.acknowledge(held[0])
    assert poll(lambda: broker.admin.cursor(topic, SUBSCRIPTION), lambda c: c.is_acknowledged(first)).is_acknowledged(first)
    _cut(proxy)
    # Every consumer left: the count starts from 0 again (Shared); Exclusive never counts.
    assert _drain(consumer) == [(b"m1", 0), (b"m2", 0)]


@pytest.mark.guarantee("no-redelivery-after-ack", "cursor")
def test_an_ack_made_while_the_connection_is_cut_never_reaches_the_broker(behind_a_proxy, proxied_client, request):
    broker, proxy = behind_a_proxy
    topic = topic_for(request)
    consumer = proxied_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared)
    producer = proxied_client.create_producer(topic, batching_enabled=False)
    first = position_of(producer.send(b"m0"))
    message = consumer.receive(timeout_millis=5000)
    proxy.cut()
    consumer.acknowledge(message)  # returns at once; the grouping tracker's flush finds no connection
    time.sleep(CUT_S)
    proxy.restore()
    assert _drain(consumer) == [(b"m0", 0)]
    assert not broker.admin.cursor(topic, SUBSCRIPTION).is_acknowledged(first)


@pytest.mark.guarantee("no-loss")
def test_the_consumers_leave_at_a_cut_and_come_back_after_it(behind_a_proxy, proxied_client, request):
    broker, proxy = behind_a_proxy
    topic = topic_for(request)
    consumer = proxied_client.subscribe(topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared)
    producer = proxied_client.create_producer(topic, batching_enabled=False)
    consumers = lambda: broker.admin.subscription_stats(topic, SUBSCRIPTION).consumers  # noqa: E731
    proxy.cut()
    try:
        assert poll(consumers, lambda c: not c) == ()  # the broker saw the connection close
    finally:
        proxy.restore()
    assert len(poll(consumers, lambda c: len(c) == 1, timeout_s=10)) == 1
    producer.send(b"m0")  # the producer reconnected too
    assert _drain(consumer, timeout_ms=10_000) == [(b"m0", 0)]


@pytest.mark.guarantee("no-redelivery-after-ack", "no-loss", "redelivery-count")
@pytest.mark.parametrize("spec", [SHARED, EXCLUSIVE], ids=["Shared", "Exclusive"])
def test_the_model_accepts_what_a_cut_leaves(proxied_target, request, spec):
    """`cut_network` in lock-step with the model (model/transitions/__init__.py: a cut is an unload
    to the clients): an ack flushed before the cut stays, what was held comes again, a nacked
    message's redelivery asked before the cut comes too."""
    run = Lockstep(proxied_target, spec, topic_for(request).rsplit("/", 1)[1])
    acked_and_nacked(run)
    run.do(o.Tick(ms=300))  # the ack is flushed, the nack's redelivery asked
    run.do(o.CutNetwork(ms=1000))
    run.do(o.Tick(ms=2000))  # the client's reconnection backs off while the network is cut
    again = {d.message for d in run.drain("c0")}
    # What was held comes again; the model allows it (not owed: the application holds it).
    assert again == {o.MessageId(1), o.MessageId(2)}
    # What a stall's failure would show of the broker: c0 is back, the two still in the backlog.
    state = proxied_target.broker.dispatcher_state()
    assert state.startswith("backlog 2, ") and "consumers: c0: " in state


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_a_reproduction_that_cuts_the_network_replays_on_a_broker_behind_a_proxy():
    """What a failure's reproduction runs (fixtures/targets/replay.py): without a broker given, a
    program with a cut gets a broker of its own behind the proxy, not one it cannot cut."""
    from fixtures.targets.replay import replay

    history = replay("pulsar", SHARED, [
        o.Subscribe(consumer="c0"), o.Send(), o.Receive(consumer="c0", timeout_ms=5000),
        o.CutNetwork(ms=300), o.Tick(ms=1500), o.Receive(consumer="c0", timeout_ms=5000)])
    deliveries = [c.value.message for op, c in history if isinstance(c.value, o.Delivery)]
    assert deliveries == [o.MessageId(0), o.MessageId(0)]  # held at the cut, so it came again
