"""The model's rule for a client crash (model/transitions/client_crash.py), by example: what the
client held comes back to the next client's consumers with redelivery count 0, an ack the broker
had stays, an ack the client had not flushed may be lost (its message may come once more, or the
cursor may lack it), a partial batch ack the client kept is lost for certain. The same programs on
the real broker are suites/broker/test_client_crash.py. Also: when the vocabulary offers a crash,
and which windows a crash reached (model/faults.py).
"""

from functools import reduce

import pytest

from model import cursor as cur
from model import ops as o
from model.faults import (ACK_NOT_PERSISTED, CRASH_CLIENT, HALTED_AT_PERSIST, HELD_UNACKNOWLEDGED, MARK_DELETE_PERSIST_MS,
                          UNFLUSHED_ACK, windows_for, windows_reached)
from model.faults import CRASH as BROKER_CRASH
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, start
from model.spec import Spec, SubscriptionType
from model.vocabulary import candidates

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
EXCLUSIVE = SHARED.with_(subscription_type=SubscriptionType.EXCLUSIVE)
RECEIPTS = EXCLUSIVE.with_(ack_receipts=True)
CRASH = (o.CrashClient(), o.ok())
m = o.MessageId


def run(spec, program):
    return reduce(lambda verdict, step: apply(verdict, *step), program, start(spec))


def got(message, count=0, *, at=0):
    return o.Receive(consumer="c0"), o.ok(o.Delivery(message=message, redelivery_count=count), at=at)


def received(count):
    """`count` messages sent and received by c0."""
    return [*[(o.Send(), o.ok())] * count, (o.Subscribe(consumer="c0"), o.ok()), *[got(m(i)) for i in range(count)]]


AGAIN = (o.Subscribe(consumer="c0"), o.ok())  # the next client's consumer


@pytest.mark.parametrize("spec", [SHARED, SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED)],
                         ids=["Shared", "Key_Shared"])
def test_a_held_message_counted_once_comes_back_with_count_zero(spec):
    nacked = received(1) + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok()),
                            (o.Tick(ms=500), o.ok(at=500)), got(m(0), 1, at=500)]
    assert run(spec, nacked).ok
    crashed = nacked + [(o.CrashClient(), o.ok(at=500)), (o.Subscribe(consumer="c0"), o.ok(at=500))]
    assert run(spec, crashed + [got(m(0), 0, at=500)]).ok
    for count in (1, 2):
        assert run(spec, crashed + [got(m(0), count, at=500)]).violation.guarantee is Guarantee.REDELIVERY_COUNT


def test_everything_unacknowledged_is_owed_to_the_next_client():
    crashed = received(2) + [(o.Send(), o.ok()), CRASH, AGAIN]  # m2 was never received
    assert check_nothing_lost(run(SHARED, crashed + [got(m(0)), got(m(1))])).violation.guarantee is Guarantee.NO_LOSS
    assert check_nothing_lost(run(SHARED, crashed + [got(m(0)), got(m(1)), got(m(2))])).ok
    assert not _state(SHARED, received(2) + [CRASH]).connected()


def test_an_unflushed_ack_may_be_lost_or_kept():
    acked = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()), CRASH, AGAIN]
    assert check_nothing_lost(run(SHARED, acked + [got(m(1))])).ok, "the ack may have reached the broker"
    assert run(SHARED, acked + [got(m(0)), got(m(1))]).ok, "or it was lost with the client"
    assert run(SHARED, acked + [(o.ReadCursor(), o.ok(cur.Cursor()))]).ok
    assert run(SHARED, acked + [(o.ReadCursor(), o.ok(cur.from_acknowledged({0})))]).ok
    lost = acked + [(o.ReadCursor(), o.ok(cur.Cursor())), got(m(1))]
    assert check_nothing_lost(run(SHARED, lost)).violation.guarantee is Guarantee.NO_LOSS, \
        "a cursor read without the ack makes the message owed again"


def test_a_message_back_after_its_ack_was_in_doubt_is_unacknowledged_from_then_on():
    """Its ack was lost with the client: the message is owed like any other it holds, however often
    it comes again (a second crash, a close without an ack), and lost if it never does."""
    back = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()), CRASH, AGAIN, got(m(0)), got(m(1))]
    closed = back + [(o.Close(consumer="c0"), o.ok()), AGAIN]
    assert check_nothing_lost(run(SHARED, closed + [got(m(0)), got(m(1))])).ok
    assert check_nothing_lost(run(SHARED, back + [CRASH, AGAIN, got(m(0)), got(m(1))])).ok
    assert check_nothing_lost(run(SHARED, closed + [got(m(1))])).violation.guarantee is Guarantee.NO_LOSS
    assert run(SHARED, back + [got(m(0))]).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_cursor_read_settles_an_ack_in_doubt():
    acked = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()), CRASH, AGAIN]
    kept = acked + [(o.ReadCursor(), o.ok(cur.from_acknowledged({0})))]
    assert run(SHARED, kept + [got(m(0))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK


def test_an_ack_the_broker_had_stays():
    shown = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()),
                           (o.ReadCursor(), o.ok(cur.from_acknowledged({0}))), CRASH, AGAIN]
    assert run(SHARED, shown + [got(m(0))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    assert run(SHARED, shown + [(o.ReadCursor(), o.ok(cur.Cursor()))]).violation.guarantee is Guarantee.CURSOR


def test_an_ack_with_a_receipt_stays_and_one_made_while_reconnecting_may_be_lost():
    program = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()), CRASH, AGAIN]
    assert run(RECEIPTS, program + [got(m(0))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    assert run(EXCLUSIVE, program + [got(m(0))]).ok


def test_a_partial_batch_ack_the_client_kept_is_lost_and_the_entry_comes_back_whole():
    batch = [(o.Send(keys=(None, None, None), batched=True), o.ok()), (o.Subscribe(consumer="c0"), o.ok()),
             *[got(m(0, i)) for i in range(2)], (o.Acknowledge(consumer="c0", message=m(0, 0)), o.ok()),
             (o.Tick(ms=500), o.ok(at=500)), (o.CrashClient(), o.ok(at=500)), (o.Subscribe(consumer="c0"), o.ok(at=500))]
    whole = [got(m(0, i), at=500) for i in range(3)]
    assert check_nothing_lost(run(SHARED, batch + whole)).ok
    assert check_nothing_lost(run(SHARED, batch + whole[1:])).violation.guarantee is Guarantee.NO_LOSS
    indexed = SHARED.with_(client_batch_index_ack=True)
    assert check_nothing_lost(run(indexed, batch + whole[1:])).ok, "a batch-index ack may have reached the broker"


def test_the_next_exclusive_consumer_is_let_in():
    assert run(EXCLUSIVE, received(1) + [CRASH, AGAIN]).ok
    refused = received(1) + [CRASH, (o.Subscribe(consumer="c0"), o.fail("ConsumerBusy"))]
    assert run(EXCLUSIVE, refused).violation.guarantee is Guarantee.SUBSCRIBE


def _state(spec, program):
    return next(iter(run(spec, program).states))


def test_a_crash_is_offered_while_a_consumer_is_connected():
    assert candidates(_state(SHARED, [(o.Send(), o.ok())]), "crash_client") == ()
    assert candidates(_state(SHARED, received(1)), "crash_client") == (o.CrashClient(),)
    assert candidates(_state(SHARED, received(1) + [CRASH]), "crash_client") == ()


def test_the_windows_a_crash_reached():
    history = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok(at=10))]
    state = _state(SHARED, history)
    assert windows_reached(state, o.CrashClient(), history) == (UNFLUSHED_ACK, HELD_UNACKNOWLEDGED)
    later = history + [(o.Tick(ms=SHARED.ack_grouping_ms + 1), o.ok(at=10 + SHARED.ack_grouping_ms + 1))]
    assert windows_reached(_state(SHARED, later), o.CrashClient(), later) == (HELD_UNACKNOWLEDGED,), \
        "an ack older than the grouping time was flushed by the client's timer"
    nothing = received(1) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()), (o.Close(consumer="c0"), o.ok()),
                             (o.Subscribe(consumer="c0"), o.ok())]
    assert windows_reached(_state(SHARED, nothing), o.CrashClient(), nothing) == ()
    assert windows_reached(state, o.Close(consumer="c0"), history) == ()


def test_a_broker_crash_reaches_an_ack_it_may_not_have_persisted():
    # Sent by the client (older than the grouping time), within the broker's mark-delete
    # persistence interval: the crash may undo it; a restart reaches only the windows it shares.
    flushed = SHARED.ack_grouping_ms + 1
    history = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok(at=10)),
                             (o.Tick(ms=flushed), o.ok(at=10 + flushed))]
    state = _state(SHARED, history)
    assert windows_reached(state, o.Crash(), history) == (HELD_UNACKNOWLEDGED, ACK_NOT_PERSISTED)
    assert windows_reached(state, o.Restart(), history) == (HELD_UNACKNOWLEDGED,)
    persisted = history + [(o.Tick(ms=MARK_DELETE_PERSIST_MS), o.ok(at=10 + flushed + MARK_DELETE_PERSIST_MS))]
    assert windows_reached(_state(SHARED, persisted), o.Crash(), persisted) == (HELD_UNACKNOWLEDGED,)


def test_a_broker_crash_at_a_cursor_persist_is_the_targets_to_tell():
    # The model cannot know when the broker persists; a broker with the failpoint says it halted
    # at a persist in the crash's completion (fixtures/broker/failpoint.py), and only a crash can.
    history = received(2) + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok(at=10))]
    state = _state(SHARED, history)
    halted = o.ok(HALTED_AT_PERSIST, at=20)
    assert HALTED_AT_PERSIST in windows_reached(state, o.Crash(), history, halted)
    assert HALTED_AT_PERSIST not in windows_reached(state, o.Crash(), history, o.ok(at=20))
    assert HALTED_AT_PERSIST not in windows_reached(state, o.Restart(), history, halted)
    kinds = ("send", "subscribe", "receive", "acknowledge", "crash")
    assert HALTED_AT_PERSIST in windows_for(BROKER_CRASH, kinds, failpoint=True)
    assert HALTED_AT_PERSIST not in windows_for(BROKER_CRASH, kinds), "offered only where the broker can halt so"


def test_a_check_is_offered_only_the_windows_its_ops_can_reach():
    assert windows_for(CRASH_CLIENT, ("send", "subscribe", "receive", "acknowledge")) == (UNFLUSHED_ACK,
                                                                                          HELD_UNACKNOWLEDGED)
    assert windows_for(CRASH_CLIENT, ("send", "subscribe", "receive", "negative_acknowledge")) == (HELD_UNACKNOWLEDGED,)
