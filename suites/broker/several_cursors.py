"""Programs of a consumer of several cursors (a partitioned topic's partitions, or several topics),
shared by suites/broker/test_partitioned_topic.py and test_multi_topics_consumer.py. Each asserts
what the broker shows, that the model of one cursor per topic takes the history, and that the
model refuses a history the broker would have to get wrong.
"""

from __future__ import annotations

from fixtures.targets.protocol import declares
from model import ops as o
from suites.broker.logged import Logged, received
from suites.replay.stored import replay

m = o.MessageId


def check_a_cumulative_ack_of_one_cursor(target, spec, names, *, alone) -> None:
    """Exclusive, six messages round robin over two cursors, all received; an acknowledge_cumulative
    of the last message of m0's cursor, a close; the next consumer must get the other cursor's
    messages, all of them, though some were published before the acked one. `alone`: the spec of
    one topic, whose model reads the history as one cursor and must refuse it."""
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(6)))
    placed = logged.placed()
    assert sorted(received(logged, "a")) == [m(e) for e in range(6)]
    last = max(e for e, p in placed.items() if p == placed[0])
    other = [m(e) for e, p in placed.items() if p != placed[0]]
    assert other and min(other).entry < last, placed  # the other cursor has earlier messages
    assert logged.invoke(o.AcknowledgeCumulative(consumer="a", message=m(last))).outcome is o.Outcome.OK
    logged.invoke(o.Close(consumer="a"))
    logged.invoke(o.Subscribe(consumer="b"))
    assert sorted(received(logged, "b")) == other
    assert replay(spec, logged.history, drained=True).step is None
    assert replay(alone, logged.history, drained=True).step is not None


def check_a_cursor_read_of_each_cursor(target, spec, names) -> None:
    """Shared, four messages round robin over two cursors, all received; an individual ack of m1 and
    m2 (one of each cursor), past the ack grouping time a cursor read: each cursor shows its own
    acked entry in its own numbering, and the model takes the read. The same read with the two
    cursors swapped is refused."""
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(4)))
    placed = logged.placed()
    assert set(placed.values()) == {0, 1}, placed
    assert sorted(received(logged, "a")) == [m(e) for e in range(4)]
    for entry in (1, 2):
        logged.invoke(o.Acknowledge(consumer="a", message=m(entry)))
    logged.invoke(o.Tick(ms=300))  # past the ack grouping time: the acks have reached the broker
    read = logged.invoke(o.ReadCursor())
    cursors = read.value
    assert isinstance(cursors, tuple) and len(cursors) == 2, read
    for cursor, topic in zip(cursors, (0, 1)):
        own = [e for e, p in placed.items() if p == topic]  # the program's entries on it, in order
        shown = {own[k] for k in cursor.acknowledged(len(own))}
        assert shown == {e for e in (1, 2) if placed[e] == topic}, (topic, cursor, placed)
    assert replay(spec, logged.history, drained=False).step is None
    swapped = logged.history[:-1] + [(o.ReadCursor(), o.ok(cursors[::-1], at=read.at))]
    if cursors[0] != cursors[1]:
        refused = replay(spec, swapped, drained=False).verdict.violation
        assert refused is not None and refused.guarantee.value == "cursor", swapped[-1]


def check_nacks_past_the_limit_dead_letter(target, spec, names, name: str, own_topics) -> None:
    """Shared, two cursors, a dead-letter policy of one redelivery: four messages received and
    nacked twice come twice (counts 0 and 1, when the client shows them), then never again. The
    model takes the history, and refuses it with m0 once more. Each message is in the dead-letter
    topic of its cursor's own topic (`own_topics(topic)`: `<own topic>-<subscription>-DLQ`), with
    the Go client and the crate in the one their driver names for the consumer
    (`<topic>-<subscription>-DLQ`)."""
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(4)))
    placed = logged.placed()
    assert len(set(placed.values())) == 2, placed
    for count in (0, 1):
        got = [logged.invoke(o.Receive(consumer="a", timeout_ms=2000)).value for _ in range(4)]
        assert all(isinstance(d, o.Delivery) for d in got), got
        assert sorted(d.message for d in got) == [m(e) for e in range(4)], got
        shown = {count} if declares(target, "redelivery_count") else {None}
        assert {d.redelivery_count for d in got} == shown, got
        for delivery in got:
            logged.invoke(o.NegativeAcknowledge(consumer="a", message=delivery.message))
        logged.invoke(o.Tick(ms=500))  # past the nack delay: the client asked for the redelivery
    assert received(logged, "a") == []
    assert replay(spec, logged.history, drained=True).step is None
    again = logged.forged(m(0), "a", redelivery_count=2)
    refused = replay(spec, again, drained=False).verdict.violation
    assert refused is not None, again[-1]
    topic, subscription, admin = target.broker.topic, target.broker.subscription, target.broker.admin
    if name in ("go", "rust"):
        assert admin.messages_in(f"{topic}-{subscription}-DLQ") == 4
    else:
        per_topic = [admin.messages_in(f"{t}-{subscription}-DLQ") for t in own_topics(topic)]
        assert per_topic == [sum(1 for q in placed.values() if q == i) for i in range(2)], per_topic
