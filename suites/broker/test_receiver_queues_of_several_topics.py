"""What an idle consumer of several topics (a partitioned topic's partitions, or topics subscribed
by their names) holds: what model/partitions.py takes from the broker for the receiver queue.

Observed on Pulsar 4.0.7, Shared, two topics, eight messages on each, the first consumer idle and
the second draining:

- the Python client (C++ underneath) holds exactly its receiver queue on each topic: each topic's
  consumer is granted receiver_queue_size permits and hands a message to the application only
  when it receives;
- the Java client holds more: each topic's ConsumerImpl gets its receiver queue (rq) and hands
  messages on to the MultiTopicsConsumerImpl's own queue, of size M = max(2, rq, topics); that
  queue stops taking from a topic once it holds M, but a topic whose receive was already armed
  hands over one more, so it holds up to M + topics - 1, from any topic (`multi_topics_queue`,
  Spec.parent_queue_size). Measured: 4 or 5 for rq 1, 6 or 7 for rq 2, 10 for rq 3, and with three
  topics 8, 11, 14: M + topics * rq, and one more per other topic when their receives were armed.

The Go client holds about ten messages more than its queue on one topic too (KD-27); the crate
has no partitioned producer it can tell the partition of, and on several topics holds more than
its queue (KD-24).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

PER_TOPIC = 8


@pytest.fixture(scope="module", params=["python", "java"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def _held(target, spec, names) -> tuple[Logged, list[int]]:
    """The first consumer idle while the second drains: how many messages of each topic the first
    one kept."""
    topics = spec.topics
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"),
                          *(o.Send() for _ in range(PER_TOPIC * topics)))
    logged.invoke(o.Tick(ms=500))  # the broker fills a's queues first
    logged.invoke(o.Subscribe(consumer="b"))
    got = {d.entry for d in received(logged, "b")}
    placed = logged.placed()
    return logged, [sum(1 for e, t in placed.items() if t == topic and e not in got) for topic in range(topics)]


def _without_the_last_of(history, consumer: str, topic: int, placed: dict[int, int], count: int):
    """The history with `consumer`'s last `count` deliveries of `topic` taken as receives that got nothing."""
    found = [i for i, (op, c) in enumerate(history) if isinstance(op, o.Receive) and op.consumer == consumer
             and isinstance(c.value, o.Delivery) and placed[c.value.message.entry] == topic]
    assert len(found) >= count, (found, count)
    dropped = set(found[len(found) - count:])
    return [(op, replace(c, value=None) if i in dropped else c) for i, (op, c) in enumerate(history)]


@pytest.mark.guarantee("receiver-queue")
@pytest.mark.parametrize("shape", ["partitions", "multi_topics"])
@pytest.mark.parametrize("rq", [1, 2])
def test_an_idle_consumer_of_two_topics_holds_its_receiver_queues_and_the_java_client_s_own(client, names, shape,
                                                                                            rq):
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, receiver_queue_size=rq, **{shape: 2}), target)
    logged, held = _held(target, spec, names)
    if name == "python":
        assert not spec.multi_topics_queue
        assert held == [rq, rq], held
    else:
        assert spec.multi_topics_queue  # the Java driver declares it
        parent = max(2, rq, 2)
        assert parent + 2 * rq <= sum(held) <= parent + 1 + 2 * rq, held
    drained = frozenset({"b"})  # b drained while a took nothing: the model checks a's queues
    assert replay(spec, logged.history, drained=drained).step is None
    room = rq + (max(2, rq, 2) + 1 if spec.multi_topics_queue else 0)  # per topic, the model's bound
    assert all(h <= room for h in held), (held, room)
    more = _without_the_last_of(logged.history, "b", 0, logged.placed(), room + 1 - held[0])
    refused = replay(spec, more, drained=drained).verdict.violation
    assert refused is not None and refused.guarantee.value == "receiver-queue", more[-1]
    if spec.multi_topics_queue and max(held) > rq:
        # The model of one receiver queue per topic refuses what the Java client holds.
        alone = replay(spec.with_(multi_topics_queue=False), logged.history, drained=drained).verdict.violation
        assert alone is not None and alone.guarantee.value == "receiver-queue", held
