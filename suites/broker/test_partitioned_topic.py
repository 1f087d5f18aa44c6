"""A partitioned topic through the client's multi-topics consumer: what model/partitions.py takes
from the broker.

Observed on Pulsar 4.0.7 with the Python client (C++ underneath), the Java client 4.0.7 and the Go
client v0.21.0, each through its driver, on topics of 2 and 3 partitions made through the admin API:

- a send's message id names its partition; the messages of one key all go to one partition, and
  messages without a key are spread over the partitions;
- each partition's messages come in publish order; across partitions there is no order;
- an acknowledge_cumulative acknowledges the messages of its message's partition up to it, and
  none of another partition, even one published before it;
- redeliver_unacknowledged_messages brings back what the consumer holds on every partition (the Go
  client has no such op);
- a cursor read reads each partition's cursor, in its own entries;
- under a dead-letter policy each partition's messages go to a dead-letter topic when nacked past
  the limit: one per partition with the Java and C++ clients, one for the topic with the Go client.

Each history is checked by the model (model/partitions.py: one topic's model per partition) and
refused by the model of one topic without partitions, which reads the same history as one cursor.
"""

from __future__ import annotations

import pytest

from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from suites.broker.several_cursors import (check_a_cumulative_ack_of_one_cursor, check_a_cursor_read_of_each_cursor,
                                           check_nacks_past_the_limit_dead_letter)
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

m = o.MessageId


@pytest.fixture(scope="module", params=["python", "java", "go"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def _in_partition_order(got: list[o.MessageId], partitions: dict[int, int]) -> bool:
    return all(sorted(ids) == ids for ids in ([g for g in got if partitions[g.entry] == p]
                                               for p in set(partitions.values())))


@pytest.mark.guarantee("order")
def test_a_send_names_its_partition_a_key_stays_on_one_and_each_partition_comes_in_order(client, names):
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, partitions=3), target)
    keys = [None] * 6 + ["k0", "k1"] * 3
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send(keys=(k,)) for k in keys))
    partitions = logged.placed()
    assert sorted(partitions) == list(range(len(keys))) and set(partitions.values()) <= {0, 1, 2}
    assert len({partitions[e] for e, k in enumerate(keys) if k is None}) > 1, partitions
    for key in ("k0", "k1"):
        assert len({partitions[e] for e, k in enumerate(keys) if k == key}) == 1, partitions
    got = received(logged, "a")
    assert sorted(got) == [m(e) for e in range(len(keys))]
    assert _in_partition_order(got, partitions), got
    assert replay(spec, logged.history, drained=True).step is None


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_a_cumulative_ack_acknowledges_its_own_partition_only(client, names):
    """Six messages round robin over two partitions; a cumulative ack of the last one of a
    partition, a close; the next consumer gets the other partition's messages, all of them
    (suites/broker/several_cursors.py)."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, partitions=2), target)
    check_a_cumulative_ack_of_one_cursor(target, spec, names, alone=spec.with_(partitions=0))


@pytest.mark.guarantee("cursor")
def test_a_cursor_read_shows_each_partition_s_cursor(client, names):
    """Each partition's cursor, read through the admin API of its own topic, in its own entries
    (suites/broker/several_cursors.py)."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, partitions=2), target)
    check_a_cursor_read_of_each_cursor(target, spec, names)


@pytest.mark.guarantee("no-loss")
def test_a_redelivery_request_brings_back_what_the_consumer_holds_on_every_partition(client, names):
    name, target = client
    if name == "go":
        pytest.skip("the Go client has no redeliver_unacknowledged_messages")
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, partitions=2), target)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(4)))
    partitions = logged.placed()
    assert len(set(partitions.values())) == 2, partitions
    assert sorted(received(logged, "a")) == [m(e) for e in range(4)]
    logged.invoke(o.Acknowledge(consumer="a", message=m(0)))
    logged.invoke(o.Tick(ms=300))  # past the ack grouping time: the ack has reached the broker
    logged.invoke(o.RedeliverUnacknowledgedMessages(consumer="a"))
    again = received(logged, "a")
    assert sorted(set(again)) == [m(1), m(2), m(3)]
    assert replay(spec, logged.history, drained=True).step is None


@pytest.mark.guarantee("dead-letter")
def test_a_message_nacked_past_the_limit_goes_to_a_dead_letter_topic(client, names):
    """Shared, two partitions, a dead-letter policy of one redelivery: four messages received and
    nacked twice come twice (counts 0 and 1), then never again. Each went to a dead-letter topic:
    the Java and C++ clients keep one per partition (`<topic>-partition-<i>-<subscription>-DLQ`, the
    partition's consumer names it after its own topic), the Go client one for the whole topic
    (`<topic>-<subscription>-DLQ`). The model takes the history, and refuses it with m0 once more."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, partitions=2, max_redeliver_count=1,
                       nack_delay_ms=100), target)
    check_nacks_past_the_limit_dead_letter(target, spec, names, name,
                                           lambda topic: [f"{topic}-partition-{p}" for p in range(2)])


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_a_cumulative_ack_ends_the_ack_timeout_of_what_it_acknowledges_on_its_partition(client, names):
    """Exclusive, an ack timeout (the client's least: 10 s for Python, 1 s for Java): a cumulative ack of the last
    message of one partition, then a wait past the timeout and its tick. None of the acknowledged
    partition's messages comes again (the multi-topics consumer's unacked-message tracker let go
    of them); the other partition's messages come again, timed out. The Python client may lose
    those too, all of them or none, as their ids compare with the acked one (KD-41)."""
    name, target = client
    if name == "go":
        pytest.skip("the Go client has no ack timeout")
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, partitions=2, ack_timeout_ms=_timeout(name)),
                  target)
    acked, again, own, other, replayed = _cumulative_ack_then_the_timeout(target, spec, names)
    assert acked.outcome is o.Outcome.OK
    assert not again & own, again
    if again == other:
        assert replayed.step is None
        return
    assert name != "java" and not again, (again, other)
    assert replayed.verdict.violation.guarantee.value == "no-loss"
    pytest.xfail(f"KD-41 with the {name} client: the other partition's {', '.join(map(str, sorted(other)))} never "
                 "came again after the cumulative ack")


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_on_exclusive_one_partition_s_ack_timeout_rewinds_every_partition(client, names):
    """Exclusive, an ack timeout: m0 received, half the timeout later a message of the other
    partition; past m0's timeout both come again, the other partition's before its own timeout ran
    out: the multi-topics consumer keeps one unacked-message tracker for every partition, and turns
    a timeout into a redelivery of everything unacknowledged, on every partition
    (MultiTopicsConsumerImpl.redeliverUnacknowledgedMessages, Java and C++)."""
    name, target = client
    if name == "go":
        pytest.skip("the Go client has no ack timeout")
    timeout = 10_000 if name == "python" else 6_000  # m0's timeout and tick well inside the other's
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, partitions=2, ack_timeout_ms=timeout), target)
    window = spec.ack_timeout_window_ms
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), o.Send(), o.Send())
    partitions = logged.placed()
    assert partitions[0] != partitions[1], partitions
    first = logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message
    logged.invoke(o.Tick(ms=timeout // 2))
    second = logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message
    assert {first, second} == {m(0), m(1)}
    received_second = logged.history[-1][1].at
    logged.invoke(o.Tick(ms=window[1] - timeout // 2 + 300))  # past the first one's timeout and its tick
    again = received(logged, "a")
    assert sorted(again) == [m(0), m(1)], again
    back = next(c.at for op, c in logged.history if isinstance(c.value, o.Delivery) and c.value.message == second
                and c.at > received_second)
    assert back < received_second + window[0], (back, received_second)  # before its own timeout
    assert replay(spec, logged.history, drained=True).step is None


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_kd43_the_java_multi_topics_consumer_keeps_timing_what_a_cumulative_ack_acknowledged(client, names):
    """Exclusive, an ack timeout: m0's partition's message received, half the timeout later the
    other partition's; an acknowledge_cumulative of the first, well before its timeout; past that
    timeout nothing may come (the other message's own timeout is still to run out). The Python
    client takes the acked message out of the multi-topics consumer's tracker, and nothing comes.
    The Java client 4.0.7 does not (MultiTopicsConsumerImpl.doAcknowledge passes a cumulative ack
    to the partition's consumer only; the fix, apache/pulsar#18407, was closed unmerged): the
    acked message times out, every partition rewinds, and the other message comes again before
    its own timeout (KD-43, KNOWN_DIVERGENCES.md)."""
    name, target = client
    if name == "go":
        pytest.skip("the Go client has no ack timeout")
    timeout = 10_000 if name == "python" else 6_000
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, partitions=2, ack_timeout_ms=timeout), target)
    window = spec.ack_timeout_window_ms
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), o.Send(), o.Send())
    assert logged.placed()[0] != logged.placed()[1]
    first = logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message
    logged.invoke(o.Tick(ms=timeout // 2))
    second = logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message
    received_second = logged.history[-1][1].at
    assert logged.invoke(o.AcknowledgeCumulative(consumer="a", message=first)).outcome is o.Outcome.OK
    logged.invoke(o.Tick(ms=window[1] - timeout // 2 + 300))  # past the first one's timeout and its tick
    early = logged.invoke(o.Receive(consumer="a", timeout_ms=500)).value
    assert logged.history[-1][1].at < received_second + window[0]  # the second one's own timeout is still to come
    replayed = replay(spec, logged.history, drained=False)
    if name != "java":
        assert early is None and replayed.step is None, (early, replayed)
        return
    assert early is not None and early.message == second, early
    assert replayed.verdict.violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    pytest.xfail(f"KD-43 with the {name} client: {second} came again at {first}'s timeout, which the cumulative ack "
                 "should have ended")


@pytest.mark.guarantee("no-loss")
def test_kd41_a_refused_cumulative_ack_ends_the_ack_timeouts_of_the_cpp_multi_topics_consumer(client, names):
    """Shared, an ack timeout (the client's least): the consumer holds four messages of two partitions, and its
    acknowledge_cumulative of the last message of one partition is refused (cumulative acks are
    not allowed on Shared). Past the timeout, every held message must come again. The Java client
    brings back all four. The Python client (C++ underneath) never asks again for those of the
    refused ack's partition up to it, and the other partition's come again all or none:
    `MultiTopicsConsumerImpl::acknowledgeCumulativeAsync` takes every tracked message whose id
    compares at or below the acked one's (ledger first, whatever the partition) out of its
    unacked-message tracker before the partition's consumer refuses the ack (KD-41,
    KNOWN_DIVERGENCES.md)."""
    name, target = client
    if name == "go":
        pytest.skip("the Go client has no ack timeout")
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, partitions=2, ack_timeout_ms=_timeout(name)), target)
    refused, again, own, other, replayed = _cumulative_ack_then_the_timeout(target, spec, names)
    assert refused.outcome is o.Outcome.FAIL and refused.error == "CumulativeAcknowledgementNotAllowedError"
    if name == "java":
        assert again == own | other and replayed.step is None, (again, replayed)
        return
    assert again in (other, set()), (again, own, other)
    assert replayed.verdict.violation.guarantee.value == "no-loss"
    pytest.xfail(f"KD-41 with the {name} client: {', '.join(map(str, sorted((own | other) - again)))} never came "
                 "again after the refused cumulative ack")


def _timeout(client: str) -> int:
    """The least ack timeout the client takes: 10 s for the Python client, 1 s for the Java client."""
    return 10_000 if client == "python" else 1_000


def _cumulative_ack_then_the_timeout(target, spec, names):
    """Four messages round robin over two partitions, all received; an acknowledge_cumulative of
    the last message of m0's partition; a wait past the ack timeout and its tick. The ack's
    completion, what came again, the messages of the ack's partition up to it, the other
    partition's, and the model's replay of the history."""
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(4)))
    partitions = logged.placed()
    assert sorted(received(logged, "a")) == [m(e) for e in range(4)]
    last = max(e for e, p in partitions.items() if p == partitions[0])
    own = {m(e) for e, p in partitions.items() if p == partitions[0] and e <= last}
    other = {m(e) for e, p in partitions.items() if p != partitions[0]}
    assert other and min(other).entry < last, partitions  # the other partition has earlier messages
    acked = logged.invoke(o.AcknowledgeCumulative(consumer="a", message=m(last)))
    logged.invoke(o.Tick(ms=spec.ack_timeout_window_ms[1] + 500))  # past the timeout and its tick
    again = set(received(logged, "a"))
    return acked, again, own, other, replay(spec, logged.history, drained=True)


@pytest.mark.guarantee("no-loss")
def test_kd44_a_seek_on_one_partition_loses_what_the_other_partitions_had_queued(client, names):
    """Exclusive, two partitions, six messages spread over both: the consumer receives until it
    holds a message of each partition, then seeks to the last one it received whose other partition
    still has messages to come (a partition's messages may all come before the other's first). That
    partition comes again after the target (its client skips the target), and the model takes the
    history so far; the other partition's messages not received yet must still come. A wait before the seek lets them
    reach the consumer's queue (a loaded machine has them still on their way). The Python and Java clients
    clear the multi-topics consumer's whole receiver queue at a seek (C++ and Java
    MultiTopicsConsumerImpl beforeSeek; apache/pulsar#22208, open): what the other partition had
    queued never comes to the consumer, only after its close (KD-44, KNOWN_DIVERGENCES.md). The Go
    client refuses a seek on a partitioned topic."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.EXCLUSIVE, partitions=2), target)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), *(o.Send() for _ in range(6)))
    partitions = logged.placed()
    got = []
    while len({partitions[g.entry] for g in got}) < 2:
        got.append(logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message)
    def waiting(partition):  # the other partitions' messages not received yet
        return [m(e) for e, p in partitions.items() if p != partition and m(e) not in got]
    # The last message received whose other partition still has messages to come: the second
    # partition's first, or the first's last when the consumer took in all of the first before it.
    sought = next((g for g in reversed(got) if waiting(partitions[g.entry])), None)
    assert sought is not None, (partitions, got)
    logged.invoke(o.Tick(ms=1000))  # the other partition's messages reach the multi-topics consumer's queue
    seek = logged.invoke(o.Seek(consumer="a", message=sought))
    after = received(logged, "a")
    others = waiting(partitions[sought.entry])
    if name == "go":
        assert seek.outcome is not o.Outcome.OK and "individual partitions" in (seek.error or ""), seek
        assert set(others) <= set(after)
        return
    assert seek.outcome is o.Outcome.OK, seek
    own = [m(e) for e, p in partitions.items() if p == partitions[sought.entry] and e > sought.entry]
    assert set(own) <= set(after) and sought not in after, (own, after)
    lost = [o_ for o_ in others if o_ not in after]
    assert replay(spec, logged.history, drained=False).step is None
    drained = replay(spec, logged.history, drained=True).verdict.violation
    assert lost and drained is not None and drained.guarantee is Guarantee.NO_LOSS, (others, after, drained)
    logged.invoke(o.Close(consumer="a"))
    logged.invoke(o.Subscribe(consumer="b"))
    assert set(lost) <= set(received(logged, "b"))  # handed back at the close
    pytest.xfail(f"KD-44 with the {name} client: the seek to {sought} lost {', '.join(map(str, lost))} of the other "
                 "partition, queued in the multi-topics consumer")
