"""The reference model, by example: what it accepts and what it reports as a violation.

Each test is a short program (ops with the completions a target reported) and the model's verdict.
The same programs against the real broker are in suites/broker; the model must accept what the
broker did there and reject the faults a broker or client could have.
"""

import pytest

from model import cursor as cur
from model import ops as o
from model.describe import describe_completion, describe_op, describe_state
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, check_receiver_queues, start
from model.spec import InitialPosition, Spec, SubscriptionType

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=300)
EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
m = o.MessageId


def run(spec, program):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    return verdict


def got(consumer, message, count=0, at=0):
    return o.Receive(consumer=consumer), o.ok(o.Delivery(message=message, redelivery_count=count), at=at)


def send(n):
    return [(o.Send(), o.ok())] * n


def test_the_seed_example_hole_is_never_redelivered():
    program = [*send(6), (o.Subscribe(consumer="a"), o.ok()), (o.Subscribe(consumer="b"), o.ok()),
               got("a", m(0)), got("b", m(1)), got("a", m(2)), got("a", m(3)), got("b", m(4)), got("b", m(5)),
               (o.Acknowledge(consumer="a", message=m(3)), o.ok()),
               (o.Close(consumer="a"), o.ok()), (o.Close(consumer="b"), o.ok()),
               (o.ReadCursor(), o.ok(cur.delete(cur.Cursor(), [3]))),
               (o.Subscribe(consumer="c"), o.ok()),
               got("c", m(0)), got("c", m(1)), got("c", m(2)), got("c", m(4)), got("c", m(5))]
    verdict = check_nothing_lost(run(SHARED, program))
    assert verdict.ok, verdict.violation

    redelivered = run(SHARED, program + [got("c", m(3))])
    assert redelivered.violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK


def test_a_cursor_that_lost_the_hole_is_a_violation():
    program = [*send(3), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0)), got("a", m(1)),
               (o.Acknowledge(consumer="a", message=m(1)), o.ok()), (o.Close(consumer="a"), o.ok())]
    assert run(SHARED, program + [(o.ReadCursor(), o.ok(cur.delete(cur.Cursor(), [1])))]).ok
    wrong = run(SHARED, program + [(o.ReadCursor(), o.ok(cur.mark_delete(cur.Cursor(), 1)))])
    assert wrong.violation.guarantee is Guarantee.CURSOR


def test_a_pending_ack_may_or_may_not_show_in_the_cursor_yet():
    program = [*send(2), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0)),
               (o.Acknowledge(consumer="a", message=m(0)), o.ok())]
    assert run(SHARED, program + [(o.ReadCursor(), o.ok(cur.Cursor()))]).ok, "not flushed yet"
    assert run(SHARED, program + [(o.ReadCursor(), o.ok(cur.mark_delete(cur.Cursor(), 0)))]).ok, "flushed"


@pytest.mark.parametrize("spec", [SHARED, SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED)],
                         ids=["Shared", "Key_Shared"])
def test_cumulative_ack_must_be_refused_on_shared_subscriptions(spec):
    program = [*send(2), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0)), got("a", m(1))]
    refused = (o.AcknowledgeCumulative(consumer="a", message=m(1)), o.fail("CumulativeAcknowledgementNotAllowedError"))
    assert run(spec, program + [refused]).ok
    accepted = run(spec, program + [(o.AcknowledgeCumulative(consumer="a", message=m(1)), o.ok())])
    assert accepted.violation.guarantee is Guarantee.CUMULATIVE_REFUSED_ON_SHARED


def test_cumulative_ack_on_exclusive_moves_mark_delete():
    program = [*send(5), (o.Subscribe(consumer="a"), o.ok()), *[got("a", m(i)) for i in range(5)],
               (o.AcknowledgeCumulative(consumer="a", message=m(2)), o.ok()), (o.Close(consumer="a"), o.ok())]
    assert run(EXCLUSIVE, program + [(o.ReadCursor(), o.ok(cur.mark_delete(cur.Cursor(), 2)))]).ok
    assert run(EXCLUSIVE, program + [(o.ReadCursor(), o.ok(cur.mark_delete(cur.Cursor(), 1)))]).violation


def test_a_second_exclusive_consumer_is_refused():
    program = [(o.Subscribe(consumer="a"), o.ok())]
    assert run(EXCLUSIVE, program + [(o.Subscribe(consumer="b"), o.fail("ConsumerBusy"))]).ok
    assert run(EXCLUSIVE, program + [(o.Subscribe(consumer="b"), o.ok())]).violation.guarantee is Guarantee.EXCLUSIVE


def test_a_nacked_message_comes_back_inside_its_window_with_a_higher_count():
    program = [*send(1), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0), at=0),
               (o.NegativeAcknowledge(consumer="a", message=m(0)), o.ok(at=10))]
    assert run(SHARED, program + [got("a", m(0), count=1, at=320)]).ok
    too_early = run(SHARED, program + [got("a", m(0), count=1, at=100)])
    assert too_early.violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    not_counted = run(SHARED, program + [got("a", m(0), count=0, at=320)])
    assert not_counted.violation.guarantee is Guarantee.REDELIVERY_COUNT
    never_came = check_nothing_lost(run(SHARED, program + [(o.Tick(ms=500), o.ok(at=510))]))
    assert never_came.violation.guarantee is Guarantee.NO_LOSS


def test_exclusive_has_no_redelivery_count():
    program = [*send(1), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0)),
               (o.RedeliverUnacknowledgedMessages(consumer="a"), o.ok())]
    assert run(EXCLUSIVE, program + [got("a", m(0), count=0)]).ok
    assert run(EXCLUSIVE, program + [got("a", m(0), count=1)]).violation.guarantee is Guarantee.REDELIVERY_COUNT


def test_dead_letter_after_max_redeliveries():
    spec = SHARED.with_(max_redeliver_count=1)
    program = [*send(1), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0), at=0),
               (o.NegativeAcknowledge(consumer="a", message=m(0)), o.ok(at=0)), got("a", m(0), count=1, at=400),
               (o.NegativeAcknowledge(consumer="a", message=m(0)), o.ok(at=400))]
    assert check_nothing_lost(run(spec, program + [(o.Tick(ms=500), o.ok(at=900))])).ok, "it went to the DLQ"
    late = run(spec, program + [got("a", m(0), count=2, at=800)])
    assert late.violation.guarantee is Guarantee.DEAD_LETTER


def test_key_shared_keeps_a_key_with_its_connected_consumer():
    spec = SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED)
    program = [(o.Send(keys=("k",)), o.ok()), (o.Send(keys=("k",)), o.ok()),
               (o.Subscribe(consumer="a"), o.ok()), (o.Subscribe(consumer="b"), o.ok()), got("a", m(0))]
    assert run(spec, program + [got("a", m(1))]).ok
    moved = run(spec, program + [got("b", m(1))])
    assert moved.violation.guarantee is Guarantee.KEY_SHARED_STICKINESS, "not before a has acked m0 (PIP-379)"
    drained = program + [(o.Acknowledge(consumer="a", message=m(0)), o.ok()), got("b", m(1))]
    assert run(spec, drained).ok, "b joined after m0 may have been dispatched: once a acked it, k may move"
    both_there = [(o.Send(keys=("k",)), o.ok()), (o.Subscribe(consumer="a"), o.ok()),
                  (o.Subscribe(consumer="b"), o.ok()), (o.Send(keys=("k",)), o.ok()), got("a", m(0)),
                  (o.Acknowledge(consumer="a", message=m(0)), o.ok())]
    assert run(spec, both_there + [got("a", m(1))]).ok
    assert run(spec, both_there + [got("b", m(1))]).ok, "m0 may have been dispatched to a before b joined"


def test_first_deliveries_come_in_order():
    program = [*send(3), (o.Subscribe(consumer="a"), o.ok()), got("a", m(1))]
    assert run(EXCLUSIVE, program + [got("a", m(0))]).violation.guarantee is Guarantee.ORDER


def test_acks_survive_unload_and_may_be_lost_in_a_crash():
    program = [*send(3), (o.Subscribe(consumer="a"), o.ok()), *[got("a", m(i)) for i in range(3)],
               (o.Acknowledge(consumer="a", message=m(1)), o.ok()),
               (o.ReadCursor(), o.ok(cur.delete(cur.Cursor(), [1])))]
    after_unload = run(SHARED, program + [(o.Unload(), o.ok()), got("a", m(1))])
    assert after_unload.violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    assert run(SHARED, program + [(o.Unload(), o.ok()), (o.ReadCursor(), o.ok(cur.Cursor()))]).violation
    after_crash = program + [(o.Crash(), o.ok()), (o.ReadCursor(), o.ok(cur.Cursor())), got("a", m(1))]
    assert run(SHARED, after_crash).ok, "a crash may undo an ack; the message then comes back"


def test_with_no_consumer_at_a_reopening_what_was_published_comes_once():
    # No receiver queue held a copy: the new dispatcher sends each message once, as the old one
    # would have (a nacked message is back only after its delay, at most once).
    for reopening in (o.Unload(), o.Restart(), o.Crash()):
        program = [*send(2), (reopening, o.ok()), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0)), got("a", m(1))]
        assert run(SHARED, program).ok
        assert run(SHARED, program + [got("a", m(0))]).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
        nacked = program + [(o.NegativeAcknowledge(consumer="a", message=m(0)), o.ok())]
        assert run(SHARED, nacked + [got("a", m(0), count=1)]).violation, "back before the nack delay"
        assert run(SHARED, nacked + [(o.Tick(ms=300), o.ok(at=300)), got("a", m(0), count=1, at=300)]).ok
    # A consumer connected at the unload may have had them in its receiver queue: a copy may come
    # from there besides the new dispatcher's.
    queued = [*send(2), (o.Subscribe(consumer="a"), o.ok()), (o.Unload(), o.ok()), got("a", m(0)), got("a", m(0))]
    assert run(SHARED, queued).ok


def test_describers_read_as_a_story():
    assert describe_op(o.AcknowledgeCumulative(consumer="a", message=m(3))) == "a: acknowledge_cumulative m3"
    assert describe_op(o.Send(keys=("x", "y"), batched=True)) == "send batch of 2 (keys ['x', 'y'])"
    assert describe_op(o.Crash()) == "crash broker (kill -9)"
    assert describe_completion(o.ok(o.Delivery(message=m(2, 1), redelivery_count=1))) == "ok m2.1 redelivery_count=1"
    assert describe_completion(o.fail("ConsumerBusy")) == "fail (ConsumerBusy)"
    verdict = run(SHARED, [*send(2), (o.Subscribe(consumer="a"), o.ok()), got("a", m(0))])
    (state,) = verdict.states
    assert describe_state(state) == ("t=0ms consumers=[a] available=[m1] held=[m0@a] acked=[] "
                                     "cursor: markDelete=-1 deleted=none read=0")


def test_acks_reach_the_broker_as_a_prefix_of_each_consumers_calls():
    """Between "nothing flushed" and "everything flushed", what the cursor shows must be, per
    consumer and kind, the first acks called (Z3 decides; model/smt/admissibility.py)."""
    program = [*send(4), (o.Subscribe(consumer="a"), o.ok()), *[got("a", m(i)) for i in range(4)],
               (o.Acknowledge(consumer="a", message=m(1)), o.ok()),
               (o.Acknowledge(consumer="a", message=m(3)), o.ok())]
    assert run(SHARED, program + [(o.ReadCursor(), o.ok(cur.delete(cur.Cursor(), [1])))]).ok
    skipped_first = run(SHARED, program + [(o.ReadCursor(), o.ok(cur.delete(cur.Cursor(), [3])))])
    assert skipped_first.violation.guarantee is Guarantee.CURSOR
    assert "prefix" in skipped_first.violation.detail


def test_an_exclusive_rewind_redelivers_what_was_received_while_it_was_on_its_way():
    """The broker (4.0.7) does this: nack m0 (the client will rewind after the delay), receive m1 in the
    meantime; the rewind delivers m0 and m1 again."""
    program = [*send(1), (o.Subscribe(consumer="c0"), o.ok()), got("c0", m(0), at=9),
               (o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=51)), (o.Send(), o.ok(at=53)),
               got("c0", m(1), at=54), got("c0", m(0), at=153), got("c0", m(1), at=153)]
    assert run(EXCLUSIVE.with_(nack_delay_ms=100), program).ok
    assert run(EXCLUSIVE.with_(nack_delay_ms=100), program + [got("c0", m(1), at=160)]).violation


def test_each_exclusive_rewind_on_its_way_may_deliver_the_backlog_once_more():
    """The broker (4.0.7) does this: two nacks on Exclusive before the first rewind landed; the backlog,
    including a message sent after both, came three times (once, then once per rewind)."""
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(1), got("c0", m(0), at=5),
               (o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=10)),
               (o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=20)), (o.Send(), o.ok(at=25)),
               got("c0", m(1), at=30), (o.Tick(ms=200), o.ok(at=230))]
    again = [got("c0", m(0), at=231), got("c0", m(1), at=231)]
    assert run(EXCLUSIVE.with_(nack_delay_ms=100), program + again + again).ok
    assert run(EXCLUSIVE.with_(nack_delay_ms=100), program + again + again + [got("c0", m(1), at=232)]).violation


def test_a_seek_target_is_skipped_by_the_seeking_consumer_and_owed_to_the_next():
    """The broker (4.0.7, Python client): after seek(m1), the seeking consumer gets m2 only;
    m1 stays unacknowledged on the broker and a consumer that subscribes after it closes gets it."""
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(3), got("c0", m(0)), got("c0", m(1)), got("c0", m(2)),
               (o.Seek(consumer="c0", message=m(1)), o.ok()), got("c0", m(2), at=10)]
    drained = check_nothing_lost(run(EXCLUSIVE, program))
    assert drained.ok
    closed = run(EXCLUSIVE, program + [(o.Close(consumer="c0"), o.ok(at=20)), (o.Subscribe(consumer="c1"), o.ok(at=30)),
                                       got("c1", m(2), at=40)])
    assert check_nothing_lost(closed).violation.guarantee is Guarantee.NO_LOSS  # m1 is owed to c1 now
    assert "m1" in check_nothing_lost(closed).violation.detail
    assert check_nothing_lost(run(EXCLUSIVE, program[:-1])).violation.guarantee is Guarantee.NO_LOSS  # m2 is owed


def test_a_seek_that_failed_did_nothing_and_one_of_unknown_outcome_may_have_done_either():
    """The C++ client answers a seek NotConnected, sending nothing, while its consumer reconnects
    (the driver reports it `info`): the cursor stays where it was, or the seek reset it."""
    acked = [(o.Subscribe(consumer="c0"), o.ok()), *send(3), got("c0", m(0)), got("c0", m(1)), got("c0", m(2)),
             (o.ReadCursor(), o.ok(cur.Cursor()))]

    def seek(completion):
        return [(o.Seek(consumer="c0", message=m(1)), completion)]

    reset = cur.Cursor(mark_delete=0)  # everything before the target
    untouched = (o.ReadCursor(), o.ok(cur.Cursor()))
    assert run(EXCLUSIVE, acked + seek(o.ok()) + [untouched]).violation.guarantee is Guarantee.CURSOR
    assert run(EXCLUSIVE, acked + seek(o.fail("NotAllowed")) + [untouched]).ok
    assert run(EXCLUSIVE, acked + seek(o.fail("NotAllowed")) + [(o.ReadCursor(), o.ok(reset))]).violation.guarantee \
        is Guarantee.CURSOR
    for read in (untouched, (o.ReadCursor(), o.ok(reset))):
        assert run(EXCLUSIVE, acked + seek(o.info("NotConnected")) + [read]).ok


def test_a_subscription_created_at_latest_never_sees_what_was_published_before_it():
    latest = SHARED.with_(initial_position=InitialPosition.LATEST)
    program = [*send(2), (o.Subscribe(consumer="c0"), o.ok()), *send(1), got("c0", m(2))]
    assert check_nothing_lost(run(latest, program)).ok
    assert run(latest, program + [got("c0", m(0))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    assert run(latest, program + [(o.ReadCursor(), o.ok(cur.Cursor(mark_delete=1, read_position=2)))]).ok
    # Only the subscription's creation counts: a later consumer does not move the cursor.
    later = program + [(o.Subscribe(consumer="c1"), o.ok()), *send(1)]
    assert check_nothing_lost(run(latest, later)).violation.guarantee is Guarantee.NO_LOSS
    # At Earliest the same subscription owes m0 and m1.
    assert check_nothing_lost(run(SHARED, program)).violation.guarantee is Guarantee.NO_LOSS


def test_a_cursor_read_does_not_undo_a_batch_index_ack_it_cannot_show():
    """The broker (4.0.7) does this: internalStats shows no batch indexes, so a batch-index ack that
    reached the broker (the close flushed it) is still in force after a cursor read without it."""
    spec = EXCLUSIVE.with_(client_batch_index_ack=True)
    program = [(o.Send(keys=(None, None), batched=True), o.ok()), (o.Subscribe(consumer="c0"), o.ok()),
               got("c0", m(0, 0)), got("c0", m(0, 1)), (o.Acknowledge(consumer="c0", message=m(0, 1)), o.ok()),
               (o.Close(consumer="c0"), o.ok()), (o.ReadCursor(), o.ok(cur.Cursor())),
               (o.Subscribe(consumer="c0"), o.ok()), got("c0", m(0, 0))]
    assert check_nothing_lost(run(spec, program)).ok
    assert run(spec, program + [got("c0", m(0, 1))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK


def test_a_nacked_batch_index_brings_the_whole_entry_back_while_its_queued_indexes_stay_queued():
    """The broker (4.0.7, Shared, no batch-index acks): c0 received m0.0 of a batch and nacked it;
    c0's receiver queue still gave m0.1 (count 0), and the redelivered entry gave m0.0 and m0.1
    to c1 (count 1)."""
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()),
               (o.Send(keys=(None, None), batched=True), o.ok()), got("c0", m(0, 0), at=1),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=1)), got("c0", m(0, 1), at=2),
               got("c1", m(0, 0), 1, at=400), got("c1", m(0, 1), 1, at=400)]
    assert run(SHARED, program).ok
    assert run(SHARED, program + [got("c0", m(0, 1), 1, at=401)]).violation.guarantee is \
        Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_an_older_queued_copy_may_come_after_a_newer_one_with_a_lower_count():
    """The broker (4.0.7, Shared): m0.0 redelivered more than once reached c1 with count 2 while
    an older copy still sat in c0's receiver queue; c0 then got it with count 1."""
    spec = SHARED.with_(nack_delay_ms=100)
    program = [(o.Send(keys=(None, None, None), batched=True), o.ok(at=14)), (o.Subscribe(consumer="c0"), o.ok(at=698)),
               (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok(at=704)),
               (o.Subscribe(consumer="c1"), o.ok(at=706)), got("c0", m(0, 0), at=707),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=709)),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=709)),
               (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok(at=1010)), got("c1", m(0, 0), 2, at=1015)]
    assert run(spec, program + [got("c0", m(0, 0), 1, at=1017)]).ok
    # While an extra copy is on its way the lower bound stays where it was (the model does not know
    # which copy sat where; see test_a_queued_copy_keeps_its_count_after_another_consumer_nacks_its_sibling):
    # the copy c0 received at 707 had count 0, so 0 is allowed though no such copy is left.
    assert run(spec, program + [got("c0", m(0, 0), 0, at=1017)]).ok
    assert run(spec, program + [got("c0", m(0, 0), 6, at=1017)]).violation.guarantee is Guarantee.REDELIVERY_COUNT


def test_a_queued_copy_keeps_its_count_after_another_consumer_nacks_its_sibling():
    """The broker (4.0.7, Shared, batch-index acks, nightly profile): c0 nacked m0.0 while m0.2
    sat in its receiver queue with count 0; c1 got the redelivered entry (m0.2 with count 1), nacked
    and acked m0.2; then c0's queued copy of m0.2 came, still with count 0."""
    spec = SHARED.with_(nack_delay_ms=100, client_batch_index_ack=True)
    program = [(o.Send(keys=(None, None, None), batched=True), o.ok(at=7)), (o.Subscribe(consumer="c0"), o.ok(at=11)),
               got("c0", m(0, 0), at=12), got("c0", m(0, 1), at=12),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=12)),
               (o.Subscribe(consumer="c1"), o.ok(at=14)), got("c1", m(0, 0), 1, at=146),
               got("c1", m(0, 1), 1, at=152), got("c1", m(0, 2), 1, at=152),
               (o.NegativeAcknowledge(consumer="c1", message=m(0, 2)), o.ok(at=152)),
               (o.Acknowledge(consumer="c1", message=m(0, 2)), o.ok(at=153))]
    assert run(spec, program + [got("c0", m(0, 2), 0, at=319)]).ok


def test_a_failover_consumer_joining_or_leaving_may_move_the_unacked_to_another_active_consumer():
    """The broker (4.0.7) does this: the broker picks the Failover active consumer by hashing the names of
    the connected consumers, so a join or a leave may move everything unacknowledged to another
    consumer after the failover delay (c2 got m0, which c0 held, once c1 closed)."""
    failover = Spec(subscription_type=SubscriptionType.FAILOVER)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()), *send(1),
               got("c0", m(0), at=1001), (o.Subscribe(consumer="c2"), o.ok(at=1002)),
               (o.Close(consumer="c1"), o.ok(at=1003))]
    assert run(failover, program + [got("c2", m(0), at=2004)]).ok
    # Without a join or a leave nothing moves.
    steady = program[:4] + [got("c1", m(0), at=1002)]
    assert run(failover, steady).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_message_acked_after_its_redelivery_was_requested_may_still_come_once():
    """The broker (4.0.7, Key_Shared, no batch-index acks): nack m0.1 (the whole entry will be
    redelivered), then ack m0.0: m0.0 came again, counted."""
    spec = SHARED.with_(nack_delay_ms=100)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(keys=(None, None), batched=True), o.ok()),
               got("c0", m(0, 0)), got("c0", m(0, 1)), (o.NegativeAcknowledge(consumer="c0", message=m(0, 1)), o.ok()),
               (o.Acknowledge(consumer="c0", message=m(0, 0)), o.ok(at=5)), got("c0", m(0, 0), 1, at=134)]
    assert run(spec, program).ok
    assert run(spec, program + [got("c0", m(0, 0), 1, at=135)]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK


def test_the_dead_letter_check_uses_the_count_of_the_copy_the_application_holds():
    """The broker (4.0.7, Key_Shared, max_redeliver_count=2): c1 held m1 with count 1 while a
    copy with a higher count might still have been queued; redeliver brought m1 back with count
    2 instead of sending it to the dead-letter topic. A held count of 2 does send it there."""
    spec = SHARED.with_(max_redeliver_count=2)
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(1), (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok()),
               got("c0", m(0), 0), got("c0", m(0), 1), (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok())]
    assert run(spec, program + [got("c0", m(0), 2)]).ok
    held_at_max = program + [got("c0", m(0), 2), (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok())]
    assert check_nothing_lost(run(spec, held_at_max)).ok  # it went to the DLQ: nothing owed
    assert run(spec, held_at_max + [got("c0", m(0), 3)]).violation.guarantee is Guarantee.DEAD_LETTER


def test_with_batch_index_acks_a_nacked_index_still_brings_back_its_unacked_siblings():
    """The broker (4.0.7, Shared, batch-index acks on both sides): c1 nacked m1.2 only; the
    redelivered entry gave m1.0 to c2 with count 1 (only acked indexes are left out)."""
    spec = SHARED.with_(nack_delay_ms=100, client_batch_index_ack=True)
    program = [(o.Subscribe(consumer="c1"), o.ok()), (o.Send(keys=(None, None, None), batched=True), o.ok()),
               got("c1", m(0, 0)), got("c1", m(0, 1)), got("c1", m(0, 2)),
               (o.Acknowledge(consumer="c1", message=m(0, 1)), o.ok()), (o.Close(consumer="c1"), o.ok(at=1)),
               (o.Subscribe(consumer="c1"), o.ok(at=2)), got("c1", m(0, 0), at=3), got("c1", m(0, 2), at=3),
               (o.NegativeAcknowledge(consumer="c1", message=m(0, 2)), o.ok(at=4)), (o.Subscribe(consumer="c2"), o.ok(at=5))]
    back = run(spec, program + [got("c2", m(0, 0), 1, at=140)])
    assert back.ok
    assert check_nothing_lost(run(spec, program + [(o.Tick(ms=200), o.ok(at=205))])).violation  # both are owed


def test_a_partly_acked_batch_that_sat_in_a_closed_consumers_queue_comes_back_whole():
    """The broker (4.0.7, Shared, no batch-index acks): c0 received m0.0 of a batch (the rest
    stayed in its queue), c1 closed, c0 acked m0.0 and closed: c2 got m0.0 again."""
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()),
               (o.Send(keys=(None, None, None), batched=True), o.ok()), (o.Subscribe(consumer="c2"), o.ok()),
               got("c0", m(0, 0)), (o.Close(consumer="c1"), o.ok()),
               (o.Acknowledge(consumer="c0", message=m(0, 0)), o.ok()), (o.Close(consumer="c0"), o.ok())]
    assert run(SHARED, program + [got("c2", m(0, 0))]).ok
    assert run(SHARED.with_(client_batch_index_ack=True), program + [got("c2", m(0, 0))]).violation


def test_a_partial_batch_ack_is_lost_with_the_copy_it_was_made_on():
    """The broker (4.0.7, Exclusive, no batch-index acks): ack m0.0, close, subscribe again, the
    batch comes back; ack m0.1 and m0.2, close: the batch comes a third time, m0.0 included. The
    client deletes an entry only when every index of one copy is acked."""
    program = [(o.Send(keys=(None, None, None), batched=True), o.ok()), (o.Subscribe(consumer="c0"), o.ok()),
               got("c0", m(0, 0)), got("c0", m(0, 1)), got("c0", m(0, 2)),
               (o.Acknowledge(consumer="c0", message=m(0, 0)), o.ok()), (o.Close(consumer="c0"), o.ok()),
               (o.Subscribe(consumer="c0"), o.ok()), got("c0", m(0, 0)), got("c0", m(0, 1)), got("c0", m(0, 2)),
               (o.Acknowledge(consumer="c0", message=m(0, 2)), o.ok()), (o.Acknowledge(consumer="c0", message=m(0, 1)), o.ok()),
               (o.Close(consumer="c0"), o.ok()), (o.Subscribe(consumer="c0"), o.ok())]
    third = program + [got("c0", m(0, 0)), got("c0", m(0, 1)), got("c0", m(0, 2))]
    assert run(EXCLUSIVE, third).ok
    assert check_nothing_lost(run(EXCLUSIVE, program)).violation.guarantee is Guarantee.NO_LOSS  # m0.0 is owed


def test_a_queued_copy_whose_count_reached_the_limit_may_go_to_the_dead_letter_topic_unseen():
    """The broker (4.0.7, Key_Shared, max_redeliver_count=2): m0 sat in c0's receiver queue
    while c0 and c1 asked for redeliveries; its count grew to the limit and it never came: the
    client dead-lettered the queued copy."""
    spec = SHARED.with_(max_redeliver_count=2)
    redeliver = (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok())
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(1), redeliver, redeliver, redeliver]
    assert check_nothing_lost(run(spec, program)).ok
    assert run(spec, program + [got("c0", m(0), 2)]).ok  # or it comes, within the limit
    assert check_nothing_lost(run(spec, program[:-1])).violation.guarantee is Guarantee.NO_LOSS  # not yet at the limit


def test_a_batch_dead_lettered_whole_is_not_owed_again():
    """The broker (4.0.7, Shared, max_redeliver_count=1, no batch-index acks): c1 held a whole
    batch with count 1 and asked for a redelivery: the client dead-lettered (and acked) every index,
    so the entry is gone; only a partly acked batch comes back."""
    spec = SHARED.with_(max_redeliver_count=1)
    program = [(o.Subscribe(consumer="c1"), o.ok()), (o.Send(keys=(None, None), batched=True), o.ok()),
               got("c1", m(0, 0)), got("c1", m(0, 1)), (o.RedeliverUnacknowledgedMessages(consumer="c1"), o.ok()),
               got("c1", m(0, 0), 1), got("c1", m(0, 1), 1), (o.RedeliverUnacknowledgedMessages(consumer="c1"), o.ok())]
    assert check_nothing_lost(run(spec, program)).ok


def test_a_copy_received_after_its_client_may_have_dead_lettered_it_may_or_may_not_come_back():
    """The broker (4.0.7, Shared, max_redeliver_count=1), both ways: c1's receiver queue held m0
    with count 1 when c1 asked for a redelivery; c1 then received that copy and closed. Once m0
    came again to c0 with count 1; once never (the client had dead-lettered the queued copy and
    still handed it out). An application's ack settles it."""
    spec = SHARED.with_(max_redeliver_count=1, nack_delay_ms=100)
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(1), got("c0", m(0)), (o.Subscribe(consumer="c1"), o.ok()),
               (o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=1)),
               (o.RedeliverUnacknowledgedMessages(consumer="c1"), o.ok(at=500)), got("c1", m(0), 1, at=501)]
    closed = program + [(o.Close(consumer="c1"), o.ok(at=502))]
    assert check_nothing_lost(run(spec, closed)).ok
    assert run(spec, closed + [got("c0", m(0), 1, at=503)]).ok
    acked = program + [(o.Acknowledge(consumer="c1", message=m(0)), o.ok(at=502)), (o.Close(consumer="c1"), o.ok(at=503))]
    assert run(spec, acked + [got("c0", m(0), 1, at=504)]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    (state,) = run(spec, closed).states
    assert "maybe-dead-lettered=[m0]" in describe_state(state)


@pytest.mark.parametrize(("queue", "room"), [(0, 1), (1, 1), (2, 2)])
def test_an_idle_shared_consumer_holds_no_more_than_its_receiver_queue(queue, room):
    """Flow permits: after c1 was drained while c0 took nothing, at most c0's receiver queue may
    be missing (a zero-queue consumer holds one message, for a receive that may still wait)."""
    spec = SHARED.with_(receiver_queue_size=queue)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()), *send(4)]
    drained = frozenset({"c1"})
    enough = run(spec, program + [got("c1", m(i)) for i in range(4 - room)])
    assert check_receiver_queues(enough, drained).ok
    short = run(spec, program + [got("c1", m(i)) for i in range(3 - room)])
    assert check_receiver_queues(short, drained).violation.guarantee is Guarantee.RECEIVER_QUEUE
    assert check_nothing_lost(short).violation.guarantee is Guarantee.NO_LOSS  # had c0 been drained too


def test_an_idle_consumer_may_hold_receiver_queue_size_whole_entries():
    """The broker counts flow permits in messages but dispatches whole entries, and turns permits
    into entries at one message per entry for a consumer it knows nothing of yet (found on the
    broker: with 3 permits, a consumer subscribed again took two batch entries of 3 from the
    backlog). So the bound is in entries: size 2 may keep two batches of 3, not three."""
    spec = SHARED.with_(receiver_queue_size=2)
    batch = (o.Send(keys=(None, None, None), batched=True), o.ok())
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()), batch, batch, batch]
    third_entry_to_c1 = [got("c1", m(2, i)) for i in range(3)]
    assert check_receiver_queues(run(spec, program + third_entry_to_c1), frozenset({"c1"})).ok
    assert not check_receiver_queues(run(spec, program), frozenset({"c1"})).ok


def test_the_receiver_queue_bound_is_checked_on_shared_only():
    key_shared = SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED, receiver_queue_size=1)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok()), *send(4)]
    assert check_receiver_queues(run(key_shared, program), frozenset({"c1"})).ok  # keys decide there


def test_a_batch_index_ack_makes_the_tracker_forget_the_entry_count():
    """The broker (4.0.7, Shared, batch-index acks on): the redelivery tracker counts per entry
    and forgets it when an index is acked, so a sibling's next redelivery may count from nothing:
    m0.0 nacked twice, m0.2 acked with the second nack, m0.0 came back with count 1."""
    spec = SHARED.with_(client_batch_index_ack=True, nack_delay_ms=100)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(keys=(None, None, None), batched=True), o.ok()),
               got("c0", m(0, 0)), got("c0", m(0, 1)), got("c0", m(0, 2)),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=1)),
               got("c0", m(0, 0), 1, at=150), got("c0", m(0, 1), 1, at=150), got("c0", m(0, 2), 1, at=150),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=160))]
    acked = program + [(o.Acknowledge(consumer="c0", message=m(0, 2)), o.ok(at=160))]
    assert run(spec, acked + [got("c0", m(0, 0), 1, at=300)]).ok
    assert run(spec, acked + [got("c0", m(0, 0), 2, at=300)]).ok  # the request reached the broker first
    assert run(spec, program + [got("c0", m(0, 0), 1, at=300)]).violation.guarantee is Guarantee.REDELIVERY_COUNT
    no_index_acks = SHARED.with_(nack_delay_ms=100)  # the client keeps a partial batch ack to itself
    assert run(no_index_acks, acked + [got("c0", m(0, 0), 1, at=300)]).violation.guarantee is Guarantee.REDELIVERY_COUNT


def test_two_redelivery_requests_before_the_first_lands_allow_the_first_count():
    """The broker (4.0.7, Key_Shared): two redeliver calls in the same millisecond; m2 came back
    with count 1, not 2."""
    redeliver = (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok(at=5))
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(1), got("c0", m(0)), redeliver, redeliver]
    assert run(SHARED, program + [got("c0", m(0), 1, at=6)]).ok
    assert run(SHARED, program + [got("c0", m(0), 3, at=6)]).violation.guarantee is Guarantee.REDELIVERY_COUNT


def test_key_shared_orders_first_deliveries_per_key_not_across_keys():
    """Key_Shared promises order per key; hash ranges move when consumers join or leave, so keys
    may overtake each other (the model as a broker did so after a join, ~2 programs in 1,500)."""
    key_shared = Spec(subscription_type=SubscriptionType.KEY_SHARED)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(keys=("k0",)), o.ok()), (o.Send(keys=("k1",)), o.ok()),
               (o.Send(keys=("k1",)), o.ok())]
    assert run(key_shared, program + [got("c0", m(1)), got("c0", m(0))]).ok
    assert run(key_shared, program + [got("c0", m(2)), got("c0", m(1))]).violation.guarantee is Guarantee.ORDER


@pytest.mark.parametrize("spec", [Spec(subscription_type=t, nack_delay_ms=100, max_redeliver_count=2)
                                  for t in SubscriptionType], ids=[t.value for t in SubscriptionType])
def test_the_model_as_a_broker_never_gives_an_answer_the_model_rejects(spec):
    """`--target model` and the trace generator run the model as a broker: every answer it gives
    must be one the model allows (run_random_program raises on the first it does not)."""
    from model.simulate import run_random_program

    for seed in range(300):
        run_random_program(spec, seed, 60)


def test_a_second_failover_switch_within_the_delay_may_stall_what_was_unacknowledged():
    """The broker (4.0.7, KD-11): c2 active holds m0; c0 closes, subscribes
    again, c2 closes, all within one failover delay; c0 gets m1, sent after, but not m0 for seconds.
    m0 is not owed until the subscription is rewound again (here: the last consumer closes)."""
    failover = Spec(subscription_type=SubscriptionType.FAILOVER)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c2"), o.ok()), *send(1),
               got("c2", m(0), at=1001), (o.Close(consumer="c0"), o.ok(at=1002)),
               (o.Subscribe(consumer="c0"), o.ok(at=1003)), (o.Close(consumer="c2"), o.ok(at=1004)),
               (o.Send(), o.ok(at=1005)), got("c0", m(1), at=1006), (o.Tick(ms=3000), o.ok(at=4006))]
    assert check_nothing_lost(run(failover, program)).ok
    rewound = program + [(o.Close(consumer="c0"), o.ok(at=4007)), (o.Subscribe(consumer="c1"), o.ok(at=4008)),
                         (o.Tick(ms=1100), o.ok(at=5108))]
    assert check_nothing_lost(run(failover, rewound)).violation.guarantee is Guarantee.NO_LOSS  # m0 owed again
    one_switch = program[:4] + [(o.Close(consumer="c2"), o.ok(at=1004)), (o.Tick(ms=3000), o.ok(at=4004))]
    assert check_nothing_lost(run(failover, one_switch)).violation.guarantee is Guarantee.NO_LOSS


@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
def test_on_a_single_active_consumer_one_ack_timeout_brings_back_every_unacked_message(kind):
    """Exclusive/Failover: the client turns one timed-out message into a redelivery of everything
    unacknowledged, so m1, received 8 s after m0, may come back once m0's timeout fires; not
    before, and on Shared each message keeps its own timeout."""
    spec = Spec(subscription_type=kind, ack_timeout_ms=10_000, failover_delay_ms=0)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok(at=5)), got("c0", m(0), at=10),
               (o.Send(), o.ok(at=8000)), got("c0", m(1), at=8001)]
    assert run(spec, program + [got("c0", m(0), at=10_500), got("c0", m(1), at=10_501)]).ok
    early = run(spec, program + [got("c0", m(1), at=9000)]).violation
    assert early is not None and early.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    shared = run(spec.with_(subscription_type=SubscriptionType.SHARED),
                 program + [got("c0", m(0), count=1, at=10_500), got("c0", m(1), count=1, at=10_501)]).violation
    assert shared is not None and shared.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE



@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
@pytest.mark.parametrize("ack", ["individual", "cumulative"])
def test_an_ack_ends_the_timeout_that_would_have_brought_back_a_later_message(kind, ack):
    """As above, but m0 is acknowledged before its timeout runs out: its timer goes with it, and m1
    waits its own timeout (8 s later), not m0's."""
    spec = Spec(subscription_type=kind, ack_timeout_ms=10_000, failover_delay_ms=0)
    op = o.Acknowledge if ack == "individual" else o.AcknowledgeCumulative
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok(at=5)), got("c0", m(0), at=10),
               (o.Send(), o.ok(at=8000)), got("c0", m(1), at=8001), (op(consumer="c0", message=m(0)), o.ok(at=8002))]
    early = run(spec, program + [got("c0", m(1), at=10_500)]).violation
    assert early is not None and early.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    assert run(spec, program + [got("c0", m(1), at=18_500)]).ok


def test_a_second_copy_of_a_held_message_keeps_the_first_copy_s_timeout():
    """m1, sent after a redelivery request and before its rewind landed, comes twice; the client's
    tracker keeps the first copy's timer (an id it tracks is not added again). After an ack of m0,
    m2 may still come back at m1's timeout, not only at its own."""
    spec = Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_timeout_ms=10_000)
    program = [(o.Subscribe(consumer="c0"), o.ok(at=1)), (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok(at=100)),
               (o.Send(), o.ok(at=101)), (o.Send(), o.ok(at=102)), got("c0", m(0), at=120), got("c0", m(1), at=150),
               (o.Tick(ms=200), o.ok(at=300)), got("c0", m(1), at=310), (o.Send(), o.ok(at=4000)),
               got("c0", m(2), at=5000), (o.Acknowledge(consumer="c0", message=m(0)), o.ok(at=6000))]
    assert run(spec, program + [(o.Tick(ms=1), o.ok(at=12_000)), got("c0", m(2), at=12_001)]).ok


def test_an_ack_inside_a_batch_leaves_the_entry_timed():
    """Without batch-index acks a cumulative ack of m1.0 acknowledges the entries before it, and
    the client keeps tracking entry 1 (the Java client tracks a batch's entry until every index is
    acked): entry 1 may time out and come back whole, m1.0 with it."""
    spec = Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_timeout_ms=10_000)
    program = [(o.Subscribe(consumer="c0"), o.ok(at=1)), (o.Send(), o.ok(at=2)),
               (o.Send(keys=(None, None), batched=True), o.ok(at=3)), got("c0", m(0), at=10), got("c0", m(1, 0), at=20),
               (o.AcknowledgeCumulative(consumer="c0", message=m(1, 0)), o.ok(at=100))]
    assert run(spec, program + [(o.Tick(ms=1), o.ok(at=11_500)), got("c0", m(1, 0), at=11_600)]).ok

def test_an_ack_timeout_counts_from_the_op_before_the_receive_whose_reply_came_late():
    """The client starts tracking a message when it hands it to the application, inside the
    receive; the history stamps the receive when its reply came back, which can be late. So the
    timeout counts from the op before (5 ms here), not from the stamp (900 ms)."""
    spec = Spec(subscription_type=SubscriptionType.SHARED, ack_timeout_ms=10_000)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok(at=5)), got("c0", m(0), at=900)]
    assert run(spec, program + [got("c0", m(0), count=1, at=10_100)]).ok
    early = run(spec, program + [got("c0", m(0), count=1, at=10_000)]).violation
    assert early is not None and early.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
def test_a_message_back_from_an_ack_timeout_rewind_waits_its_own_timeout(kind):
    """Exclusive/Failover: m0 and m1 came back together with m0's timeout (one rewind, which
    clears the client's UnAckedMessageTracker); once received again, each waits its own timeout,
    although the other's window was open when it came. Without this, two such messages would keep
    each other's windows open and the ideal broker would redeliver them without end."""
    spec = Spec(subscription_type=kind, ack_timeout_ms=10_000, failover_delay_ms=0)
    program = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok(at=5)), got("c0", m(0), at=10),
               (o.Send(), o.ok(at=8000)), got("c0", m(1), at=8001),
               got("c0", m(0), at=10_500), got("c0", m(1), at=10_501)]
    assert run(spec, program + [got("c0", m(0), at=20_600), got("c0", m(1), at=20_601)]).ok
    for again in (m(0), m(1)):
        early = run(spec, program + [got("c0", again, at=10_502)]).violation
        assert early is not None and early.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE, again

@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
def test_a_cumulative_ack_ends_the_ack_timeouts_of_what_it_acknowledges(kind):
    """m0 and m1 held with an ack timeout; a cumulative ack of m1 before either timeout runs out
    takes both out of the client's unacked-message tracker: past the timeouts neither comes again.
    Received again while a rewind was on its way (m0 nacked first), a copy may still come."""
    spec = Spec(subscription_type=kind, ack_timeout_ms=10_000, failover_delay_ms=0, nack_delay_ms=100)
    program = [(o.Subscribe(consumer="c0"), o.ok()), *send(2), got("c0", m(0), at=10), got("c0", m(1), at=11)]
    acked = program + [(o.AcknowledgeCumulative(consumer="c0", message=m(1)), o.ok(at=5000))]
    assert run(spec, acked + [(o.Tick(ms=15_000), o.ok(at=20_000))]).ok
    for again in (m(0), m(1)):
        late = run(spec, acked + [got("c0", again, at=20_000)]).violation
        assert late is not None and late.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK, again
    rewinding = program + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=4990)),
                           (o.AcknowledgeCumulative(consumer="c0", message=m(1)), o.ok(at=5000))]
    assert run(spec, rewinding + [got("c0", m(0), at=5100)]).ok


def test_an_ack_lost_in_two_unloads_is_owed_once_and_may_come_twice():
    """The broker (4.0.7, Exclusive, nightly profile): c0's ack had not reached the broker when
    the topic was unloaded and c1 took the subscription over; after a second unload a cursor read
    shows the ack lost. The message is owed again, and may come more than once: each reopen and the
    take-over allowed one more copy (c1's receiver queue, the reconnect), of which the lost ack
    itself accounts for one."""
    program = [*send(1), (o.Subscribe(consumer="c0"), o.ok()), got("c0", m(0)),
               (o.Acknowledge(consumer="c0", message=m(0)), o.ok()), (o.Unload(), o.ok()),
               (o.Subscribe(consumer="c1"), o.ok()), (o.Unload(), o.ok()), (o.ReadCursor(), o.ok(cur.Cursor()))]
    assert not check_nothing_lost(run(EXCLUSIVE, program)).ok  # owed again
    thrice = program + [got("c1", m(0), at=1), got("c1", m(0), at=2), got("c1", m(0), at=3)]
    assert run(EXCLUSIVE, thrice).ok
    four = run(EXCLUSIVE, thrice + [got("c1", m(0), at=4)]).violation
    assert four is not None and four.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_nack_dropped_by_a_close_adds_nothing_to_the_count():
    """The broker (4.0.7, Shared, nightly profile): a nack followed by an ack and a close within
    the nack delay never leaves the client; the batch entry, not deleted (m0.1 is unacked), comes
    back whole with its count unchanged: the close came before the delay, so the count cannot have
    grown."""
    program = [(o.Send(keys=(None, None), batched=True), o.ok()), (o.Subscribe(consumer="c0"), o.ok()),
               got("c0", m(0, 0)), got("c0", m(0, 1)),
               (o.NegativeAcknowledge(consumer="c0", message=m(0, 0)), o.ok(at=1)),
               (o.Acknowledge(consumer="c0", message=m(0, 0)), o.ok(at=2)), (o.Close(consumer="c0"), o.ok(at=3)),
               (o.Subscribe(consumer="c1"), o.ok(at=4))]
    assert run(SHARED, program + [got("c1", m(0, 0), 0, at=5)]).ok
    too_high = run(SHARED, program + [got("c1", m(0, 0), 1, at=5)]).violation
    assert too_high is not None and too_high.guarantee is Guarantee.REDELIVERY_COUNT


def test_a_nack_leaves_out_the_batch_indexes_the_broker_has_as_acked():
    """The broker (4.0.7, Shared, batch-index acks on both sides): m0.0 acked and flushed by a's
    close, b nacked m0.1: the entry came back counted with m0.1 and m0.2, never m0.0."""
    spec = SHARED.with_(nack_delay_ms=200, client_batch_index_ack=True)
    program = [(o.Send(keys=(None, None, None), batched=True), o.ok()), (o.Subscribe(consumer="a"), o.ok()),
               got("a", m(0, 0)), got("a", m(0, 1)), got("a", m(0, 2)),
               (o.Acknowledge(consumer="a", message=m(0, 0)), o.ok()), (o.Close(consumer="a"), o.ok(at=1)),
               (o.Subscribe(consumer="b"), o.ok(at=2)), got("b", m(0, 1), at=3), got("b", m(0, 2), at=3),
               (o.NegativeAcknowledge(consumer="b", message=m(0, 1)), o.ok(at=4))]
    back = program + [got("b", m(0, 1), 1, at=300), got("b", m(0, 2), 1, at=300)]
    assert check_nothing_lost(run(spec, back)).ok
    assert run(spec, back + [got("b", m(0, 0), 1, at=301)]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    # An ack the broker may not have yet (no close, no cursor read) may still come back with the entry.
    unflushed = program[:6] + [(o.Subscribe(consumer="b"), o.ok(at=2)),
                               (o.NegativeAcknowledge(consumer="a", message=m(0, 1)), o.ok(at=4)),
                               got("b", m(0, 0), 1, at=300)]
    assert run(spec, unflushed).ok
