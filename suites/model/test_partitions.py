"""A partitioned topic in the model (model/partitions.py): one topic's model per partition, the
program's ops routed to the partition they name.

The rules are the broker's, shown with the Python and Java clients by
suites/broker/test_partitioned_topic.py; these tests say them on hand-written histories.
"""

import pytest

from model import cursor as cur
from model import ops as o
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, check_receiver_queues, start
from model.partitions import NotModelled, PartitionedState
from model.spec import Spec, SubscriptionType

m = o.MessageId
EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE, partitions=2)
SHARED = Spec(subscription_type=SubscriptionType.SHARED, partitions=2)


def _run(spec, steps):
    verdict = start(spec)
    at = 0
    for op, completion in steps:
        at += 1
        verdict = apply(verdict, op, o.Completion(outcome=completion.outcome, at=at, value=completion.value,
                                                  error=completion.error, partition=completion.partition))
    return verdict


def _sends(*partitions):
    return [(o.Send(), o.ok((m(e),), partition=p)) for e, p in enumerate(partitions)]


def _receive(consumer, message, count=0):
    return o.Receive(consumer=consumer), o.ok(o.Delivery(message=message, redelivery_count=count))


SUBSCRIBE_A = (o.Subscribe(consumer="a"), o.ok())


def test_a_cumulative_ack_acknowledges_its_own_partition_up_to_its_message_and_no_other():
    # m0 and m2 on partition 0, m1 on partition 1: a cumulative ack of m2 leaves m1 unacknowledged.
    acked = [SUBSCRIBE_A, *_sends(0, 1, 0), *(_receive("a", m(e)) for e in (0, 1, 2)),
             (o.AcknowledgeCumulative(consumer="a", message=m(2)), o.ok()), (o.Close(consumer="a"), o.ok()),
             (o.Subscribe(consumer="b"), o.ok())]
    assert _run(EXCLUSIVE, [*acked, _receive("b", m(1))]).ok
    again = _run(EXCLUSIVE, [*acked, _receive("b", m(0))])
    assert again.violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    lost = check_nothing_lost(_run(EXCLUSIVE, acked))
    assert lost.violation.guarantee is Guarantee.NO_LOSS and "m1" in lost.violation.detail


def test_each_partition_comes_in_publish_order_and_partitions_in_any_order():
    sent = [SUBSCRIBE_A, *_sends(0, 1, 0, 1)]
    assert _run(SHARED, [*sent, *(_receive("a", m(e)) for e in (1, 3, 0, 2))]).ok
    out_of_order = _run(SHARED, [*sent, _receive("a", m(2)), _receive("a", m(0))])
    assert out_of_order.violation.guarantee is Guarantee.ORDER


def test_a_violation_names_its_partition_and_the_programs_message():
    """Partition 1's own first entry is the program's m3: the report says m3."""
    verdict = _run(SHARED, [SUBSCRIBE_A, *_sends(0, 0, 0, 1, 1), _receive("a", m(4)), _receive("a", m(3))])
    assert verdict.violation.guarantee is Guarantee.ORDER
    assert verdict.violation.detail.startswith("partition 1: ") and "m3" in verdict.violation.detail


def test_a_redelivery_request_reaches_every_partition():
    held = [SUBSCRIBE_A, *_sends(0, 1), _receive("a", m(0)), _receive("a", m(1)),
            (o.RedeliverUnacknowledgedMessages(consumer="a"), o.ok())]
    # Each partition's redelivery tracker counts its own message's redelivery.
    assert _run(SHARED, [*held, _receive("a", m(0), 1), _receive("a", m(1), 1)]).ok
    lost = check_nothing_lost(_run(SHARED, [*held, _receive("a", m(0), 1)]))
    assert lost.violation.guarantee is Guarantee.NO_LOSS and lost.violation.detail.startswith("partition 1: ")


def test_a_message_never_published_is_a_phantom():
    verdict = _run(SHARED, [SUBSCRIBE_A, *_sends(0), _receive("a", m(5))])
    assert verdict.violation.guarantee is Guarantee.NO_PHANTOM


def test_a_send_that_does_not_name_its_partition_is_the_targets_error():
    with pytest.raises(ValueError, match="must say which partition"):
        _run(SHARED, [(o.Send(), o.ok((m(0),)))])
    with pytest.raises(ValueError, match="must say which partition"):
        _run(SHARED, [(o.Send(), o.ok((m(0),), partition=2))])


def test_a_cursor_read_shows_each_partition_s_cursor_in_its_own_entries():
    """m0, m2 on partition 0 (its entries 0, 1), m1 on partition 1 (its entry 0): a cumulative ack
    of m2 deletes partition 0's entries up to 1, and nothing of partition 1."""
    acked = [SUBSCRIBE_A, *_sends(0, 1, 0), *(_receive("a", m(e)) for e in (0, 1, 2)),
             (o.AcknowledgeCumulative(consumer="a", message=m(2)), o.ok()), (o.Close(consumer="a"), o.ok())]
    read = o.ReadCursor()
    assert _run(EXCLUSIVE, [*acked, (read, o.ok((cur.mark_delete(cur.Cursor(), 1), cur.Cursor())))]).ok
    wrong = _run(EXCLUSIVE, [*acked, (read, o.ok((cur.Cursor(), cur.mark_delete(cur.Cursor(), 0))))])
    assert wrong.violation.guarantee is Guarantee.CURSOR
    assert wrong.violation.detail.startswith("partition 0: ") and "its entries 0=m0, 1=m2" in wrong.violation.detail
    # A read that shows nothing (the admin API did not answer) proves nothing.
    assert _run(EXCLUSIVE, [*acked, (read, o.info("AdminError"))]).ok


def test_what_the_broker_has_not_shown_yet_is_refused():
    retry = Spec(subscription_type=SubscriptionType.SHARED, retry_letter_topic=True, max_redeliver_count=1)
    with pytest.raises(NotModelled):
        _run(retry, [SUBSCRIBE_A, (o.Send(), o.ok((m(0),))), _receive("a", m(0)), (o.ReadCursor(), o.ok())])


def test_a_seek_resets_its_message_s_partition_and_leaves_the_others_owed():
    # m0, m2 on partition 0, m1, m3 on partition 1: a seek to m1 (its consumer skips the target)
    # brings m3 again and leaves partition 0's m2 owed: its absence is KD-44's loss.
    sought = [SUBSCRIBE_A, *_sends(0, 1, 0, 1), _receive("a", m(0)), _receive("a", m(1)), _receive("a", m(3)),
              (o.Seek(consumer="a", message=m(1)), o.ok())]
    assert _run(EXCLUSIVE, [*sought, _receive("a", m(3)), _receive("a", m(2))]).ok
    lost = check_nothing_lost(_run(EXCLUSIVE, [*sought, _receive("a", m(3))]))
    assert lost.violation.guarantee is Guarantee.NO_LOSS and lost.violation.detail.startswith("partition 0"), lost
    # The seek rewinds partition 1 alone: m0, received on partition 0, is not given again.
    again = _run(EXCLUSIVE, [*sought, _receive("a", m(0))])
    assert again.violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_the_view_holds_every_partitions_messages_under_the_programs_ids():
    verdict = _run(SHARED, [SUBSCRIBE_A, *_sends(1, 0, 1), _receive("a", m(2))])
    state = next(iter(verdict.states))
    assert isinstance(state, PartitionedState)
    assert [msg.id for msg in verdict.view.messages] == [m(0), m(1), m(2)]
    assert [msg.holder for msg in verdict.view.messages] == [None, None, "a"]
    assert state.placed == ((1, 0), (0, 0), (1, 1))


def test_a_partitioned_spec_has_at_least_two_partitions_and_a_receiver_queue():
    with pytest.raises(ValueError, match="partitions"):
        Spec(partitions=1)
    with pytest.raises(ValueError, match="the client refuses it"):
        Spec(partitions=2, receiver_queue_size=0)


def test_a_stored_history_keeps_the_partition_of_each_send():
    from model.history import completion_of, event_of, from_json_line, op_of, to_json_line

    steps = [SUBSCRIBE_A, *_sends(1, 0), _receive("a", m(1)), _receive("a", m(0))]
    lines = [to_json_line(event_of("p", SHARED, i, op, c)) for i, (op, c) in enumerate(steps)]
    read = [(op_of(e), completion_of(e)) for e in map(from_json_line, lines)]
    assert [c.partition for _, c in read] == [c.partition for _, c in steps] == [None, 1, 0, None, None]
    assert _run(SHARED, read).ok


@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
def test_on_a_single_active_consumer_one_partition_s_ack_timeout_brings_back_every_partition(kind):
    """m0 on partition 0 received at 10 ms, m1 on partition 1 at 5 s, an ack timeout of 10 s: the
    multi-topics consumer's one tracker times m0 out and rewinds both partitions, so m1 may come
    back from then on, before its own timeout; on Shared each message keeps its own."""
    spec = Spec(subscription_type=kind, partitions=2, ack_timeout_ms=10_000, failover_delay_ms=0)
    at = lambda t, completion: o.Completion(outcome=completion.outcome, at=t, value=completion.value,
                                            partition=completion.partition)
    program = [(SUBSCRIBE_A[0], at(1, SUBSCRIBE_A[1])), *((op, at(2 + e, c)) for e, (op, c) in enumerate(_sends(0, 1))),
               (_receive("a", m(0))[0], at(10, _receive("a", m(0))[1])),
               (o.Tick(ms=4990), o.ok(at=5000)), (_receive("a", m(1))[0], at(5001, _receive("a", m(1))[1])),
               (o.Tick(ms=6500), o.ok(at=11_500))]
    back = (_receive("a", m(1))[0], at(11_501, _receive("a", m(1))[1]))

    def run(spec_, steps):
        verdict = start(spec_)
        for op, completion in steps:
            verdict = apply(verdict, op, completion)
        return verdict

    assert run(spec, program + [back]).ok
    shared = run(spec.with_(subscription_type=SubscriptionType.SHARED),
                 program + [(back[0], at(11_501, o.ok(o.Delivery(message=m(1), redelivery_count=1))))]).violation
    assert shared is not None and shared.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


@pytest.mark.parametrize("java", [False, True])
def test_an_idle_consumer_of_two_partitions_holds_its_receiver_queue_on_each_and_the_java_client_s_own_queue(java):
    """Shared, receiver queue 1, a idle while b drained: what a kept of one partition must fit its
    receiver queue there (1), with the Java client's multi-topics queue on top: max(2, 1, 2) and
    one more per other partition, any of it this partition's (3)
    (suites/broker/test_receiver_queues_of_several_topics.py)."""
    spec = SHARED.with_(receiver_queue_size=1, multi_topics_queue=java)
    room = 4 if java else 1
    subscribed = [SUBSCRIBE_A, (o.Subscribe(consumer="b"), o.ok())]
    sends = _sends(*([0] * 6 + [1] * 2))  # m0..m5 on partition 0, m6 and m7 on 1
    b_takes = lambda entries: [(o.Receive(consumer="b"), o.ok(o.Delivery(message=m(e), redelivery_count=0)))
                               for e in entries]
    drained = frozenset({"b"})
    fits = _run(spec, subscribed + sends + b_takes(range(room, 6)) + b_takes([6]))
    assert check_receiver_queues(fits, drained).ok
    beyond = _run(spec, subscribed + sends + b_takes(range(room + 1, 6)) + b_takes([6]))
    assert check_receiver_queues(beyond, drained).violation.guarantee is Guarantee.RECEIVER_QUEUE
