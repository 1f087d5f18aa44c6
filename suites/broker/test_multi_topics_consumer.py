"""A consumer of several topics without partitions, by their names or by a pattern: what
model/partitions.py takes from the broker for `Spec.multi_topics`.

Observed on Pulsar 4.0.7 with the Python client (C++ underneath), the Java client 4.0.7, the Go
client v0.21.0 and the Rust crate pulsar 6.9.1, each through its driver, on two topics made
through the admin API before the program (`<topic>-0`, `<topic>-1`), subscribed by
`ConsumerBuilder.topics` (the crate's `with_topics`) or by `topicsPattern` (`with_topic_regex`)
(`<topic>-[0-9]+$`); the suite's router picks each send's topic (by key, round robin without one):

- each send lands on the topic it was sent to, and the consumer gets every topic's messages, each
  topic's in publish order;
- an acknowledge_cumulative acknowledges the messages of its message's topic up to it, and none of
  the other topic, even one published before it;
- a pattern consumer is the same consumer as one subscribed by the names;
- each topic has a cursor of its own, which a cursor read reads in the topic's own entries;
- under a dead-letter policy each topic's messages go to a dead-letter topic when nacked past the
  limit: one per topic with the Java and C++ clients (`<topic-i>-<subscription>-DLQ`, each topic's
  consumer names it after its own topic), the one the driver names with the Go client and the
  crate, which need a name for a consumer of several topics (`<topic>-<subscription>-DLQ`).

Each history is checked by the model (one topic's model per topic) and refused by the model of one
topic, which reads the same history as one cursor.
"""

from __future__ import annotations

import pytest

from drivers import wire
from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.broker.several_cursors import (check_a_cumulative_ack_of_one_cursor, check_a_cursor_read_of_each_cursor,
                                           check_nacks_past_the_limit_dead_letter)
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

m = o.MessageId
BY = {"names": False, "pattern": True}


@pytest.fixture(scope="module", params=["python", "java", "go", "rust"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


@pytest.mark.guarantee("order")
@pytest.mark.parametrize("by", BY)
def test_each_send_lands_on_its_topic_and_each_topic_comes_in_order(client, names, by):
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, multi_topics=2, topics_pattern=BY[by]), target)
    keys = [None] * 4 + ["k0", "k1"] * 2
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send(keys=(k,)) for k in keys))
    topics = logged.placed()
    assert set(topics.values()) == {0, 1}, topics
    admin = target.broker.admin
    per_topic = [admin.messages_in(t) for t in wire.multi_topics(target.broker.topic, 2)]
    assert per_topic == [sum(1 for t in topics.values() if t == i) for i in range(2)], per_topic
    got = received(logged, "a")
    assert sorted(got) == [m(e) for e in range(len(keys))]
    for i in range(2):
        mine = [g for g in got if topics[g.entry] == i]
        assert mine == sorted(mine), got
    assert replay(spec, logged.history, drained=True).step is None


@pytest.mark.guarantee("no-redelivery-after-ack")
@pytest.mark.parametrize("by", BY)
def test_a_cumulative_ack_acknowledges_its_own_topic_only(client, names, by):
    """Six messages round robin over two topics; a cumulative ack of the last one of m0's topic,
    a close; the next consumer gets the other topic's messages, all of them, though some were
    published before the acked one (suites/broker/several_cursors.py)."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, multi_topics=2, topics_pattern=BY[by]), target)
    check_a_cumulative_ack_of_one_cursor(target, spec, names, alone=spec.with_(multi_topics=0, topics_pattern=False))


@pytest.mark.guarantee("cursor")
def test_a_cursor_read_shows_each_topic_s_cursor(client, names):
    """Each topic's cursor, in its own entries (suites/broker/several_cursors.py)."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, multi_topics=2), target)
    check_a_cursor_read_of_each_cursor(target, spec, names)


@pytest.mark.guarantee("dead-letter")
def test_a_message_nacked_past_the_limit_goes_to_a_dead_letter_topic(client, names, request):
    """Four messages over two topics, nacked past a dead-letter policy of one redelivery
    (suites/broker/several_cursors.py), each in the dead-letter topic its client names. The crate
    dead-letters each at its first redelivery, as on one topic (KD-25)."""
    name, target = client
    if name == "rust":
        request.applymarker(pytest.mark.xfail(strict=True, raises=AssertionError,
                                              reason="KD-25: the crate dead-letters a message one redelivery early"))
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, multi_topics=2, max_redeliver_count=1,
                       nack_delay_ms=100), target)
    check_nacks_past_the_limit_dead_letter(target, spec, names, name, lambda topic: wire.multi_topics(topic, 2))
