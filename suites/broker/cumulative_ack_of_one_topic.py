"""The cumulative-ack program of a consumer of several cursors (a partitioned topic's partitions, or
several topics), shared by suites/broker/test_partitioned_topic.py and test_multi_topics_consumer.py.

Exclusive, six messages round robin over two cursors, all received; an acknowledge_cumulative of
the last message of m0's cursor, a close; the next consumer must get the other cursor's messages,
all of them, though some were published before the acked one. The model of one cursor per topic
takes the history; the model of one topic alone, which reads it as one cursor, refuses it.
"""

from __future__ import annotations

from model import ops as o
from suites.broker.logged import Logged, received
from suites.replay.stored import replay

m = o.MessageId


def check_a_cumulative_ack_of_one_cursor(target, spec, names, *, alone) -> None:
    """Run the program on `spec` (two cursors) and assert what the module says; `alone`: the spec of
    one topic that must refuse the history."""
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
