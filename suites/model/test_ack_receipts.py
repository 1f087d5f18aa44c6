"""The model's rule for ack receipts (`Spec.ack_receipts`, the Java client's isAckReceiptEnabled),
by example: an acknowledge that returned `ok` is confirmed at once, so the cursor must show it and
an unload or a graceful restart must not bring the message back; a crash may still lose it. The
same programs on the real broker are suites/broker/test_ack_receipts.py; without receipts the
model keeps each ack pending and allows all of this.
"""

import pytest

from model import cursor as cur
from model import ops as o
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, start
from model.spec import Spec, SubscriptionType

RECEIPTS = Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_receipts=True)
WITHOUT = RECEIPTS.with_(ack_receipts=False)
m = o.MessageId


def run(spec, program):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    return verdict


def got(message):
    return o.Receive(consumer="a"), o.ok(o.Delivery(message=message, redelivery_count=0))


def acked(*entries, outcome=o.ok()):
    """Three messages received by `a`, then an individual ack of each of `entries`."""
    return [*[(o.Send(), o.ok())] * 3, (o.Subscribe(consumer="a"), o.ok()), *[got(m(i)) for i in range(3)],
            *[(o.Acknowledge(consumer="a", message=m(i)), outcome) for i in entries]]


def test_a_cursor_read_must_show_an_ack_with_a_receipt():
    program = acked(1) + [(o.ReadCursor(), o.ok(cur.Cursor()))]
    assert run(RECEIPTS, program).violation.guarantee is Guarantee.CURSOR
    assert run(WITHOUT, program).ok, "without a receipt the ack may still be on its way"


def test_a_cumulative_ack_with_a_receipt_is_in_the_cursor_at_once():
    program = [*acked(), (o.AcknowledgeCumulative(consumer="a", message=m(1)), o.ok())]
    not_yet = [(o.ReadCursor(), o.ok(cur.Cursor()))]
    assert run(RECEIPTS, program + not_yet).violation.guarantee is Guarantee.CURSOR
    assert run(RECEIPTS, program + [(o.ReadCursor(), o.ok(cur.mark_delete(cur.Cursor(), 1)))]).ok
    assert run(WITHOUT, program + not_yet).ok


@pytest.mark.parametrize("event", [o.Unload(), o.Restart()], ids=["unload", "restart"])
def test_an_ack_with_a_receipt_is_not_redelivered_after_an_unload_or_a_restart(event):
    program = acked(1) + [(event, o.ok()), got(m(0)), got(m(2)), got(m(1))]
    assert run(RECEIPTS, program).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    assert run(WITHOUT, program).ok, "without a receipt the ack may not have reached the broker before it"


def test_a_crash_may_lose_an_ack_with_a_receipt_and_then_owes_it():
    crashed = acked(1) + [(o.Crash(), o.ok()), (o.ReadCursor(), o.ok(cur.Cursor())), got(m(0)), got(m(2))]
    assert run(RECEIPTS, crashed + [got(m(1))]).ok
    missing = check_nothing_lost(run(RECEIPTS, crashed)).violation
    assert missing.guarantee is Guarantee.NO_LOSS, "the cursor read shows the crash lost the ack: m1 is owed"


def test_an_ack_whose_outcome_is_unknown_stays_pending_with_receipts():
    program = acked(1, outcome=o.info("ConnectException")) + [(o.ReadCursor(), o.ok(cur.Cursor()))]
    assert run(RECEIPTS, program).ok


@pytest.mark.parametrize("event", [o.Unload(), o.Seek(consumer="a", message=m(0))], ids=["unload", "seek"])
def test_an_ack_while_the_consumer_may_be_reconnecting_has_no_receipt(event):
    """The broker disconnected `a`; the Java client acknowledges without a receipt until it is back."""
    program = acked() + [(event, o.ok()), got(m(1)), (o.Acknowledge(consumer="a", message=m(1)), o.ok()),
                         (o.ReadCursor(), o.ok(cur.Cursor()))]
    assert run(RECEIPTS, program).ok
    fresh = program[:-3] + [(o.Close(consumer="a"), o.ok()), (o.Subscribe(consumer="b"), o.ok()),
                            (o.Receive(consumer="b"), o.ok(o.Delivery(message=m(1), redelivery_count=0))),
                            (o.Acknowledge(consumer="b", message=m(1)), o.ok()), (o.ReadCursor(), o.ok(cur.Cursor()))]
    assert run(RECEIPTS, fresh).violation.guarantee is Guarantee.CURSOR, "a consumer subscribed since is connected"


def test_a_cumulative_ack_inside_a_batch_waits_for_no_receipt_without_batch_index_acks():
    """The client acks the entries before the batch and returns at once (no receipt for them)."""
    program = [(o.Send(), o.ok()), (o.Send(keys=(None, None), batched=True), o.ok()),
               (o.Subscribe(consumer="a"), o.ok()), got(m(0)), got(m(1, 0)), (o.AcknowledgeCumulative(consumer="a", message=m(1, 0)), o.ok()),
               (o.ReadCursor(), o.ok(cur.Cursor()))]
    assert run(RECEIPTS, program).ok
    assert run(RECEIPTS.with_(client_batch_index_ack=True), program).violation.guarantee is Guarantee.CURSOR
