"""The nack window by example: it opens the nack delay after the op before the nack.

A history stamps an op when its reply comes back, and the client starts the delay when the nack
is called (C++ NegativeAcksTracker::add), so the earliest a nacked message can come back is the
delay after the previous op's completion. What the broker does is shown by
suites/broker/test_fidelity_nack_timing.py; these are the model's side of it.
"""

import pytest

from model import ops as o
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, start
from model.spec import Spec, SubscriptionType

DELAY_MS = 100


def _run(spec, program):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    return verdict


def _held_then_nacked(spec, *, count=0, nacked_at):
    """m0 received by c0 at 10 ms, then nacked: the nack's reply stamped at `nacked_at`."""
    return [(o.Send(), o.ok((o.MessageId(0),), at=0)), (o.Subscribe(consumer="c0"), o.ok(at=0)),
            (o.Receive(consumer="c0"), o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=count), at=10)),
            (o.NegativeAcknowledge(consumer="c0", message=o.MessageId(0)), o.ok(at=nacked_at))]


def _back(count, at):
    return o.Receive(consumer="c0"), o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=count), at=at)


@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.EXCLUSIVE], ids=str)
def test_the_model_counts_the_nack_delay_from_the_op_before_the_nack(kind):
    """The window opens the delay after the previous completion (10 ms), not after the nack's
    stamp (40 ms): back at 115 ms is allowed and uses the nack up; back at 105 ms is not."""
    spec = Spec(subscription_type=kind, nack_delay_ms=DELAY_MS)
    count = 1 if kind.tracks_redelivery_count else 0
    program = _held_then_nacked(spec, nacked_at=40)
    back = _run(spec, [*program, _back(count, 115), (o.Tick(ms=300), o.ok(at=415))])
    assert back.ok and check_nothing_lost(back).ok
    early = _run(spec, [*program, _back(count, 105)])
    assert early.violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_nack_that_replied_after_its_delay_may_not_have_dead_lettered_yet():
    """With max_redeliver_count reached, a nack whose reply came back the delay after the op before
    it may or may not have sent m0 to the dead-letter topic by then: the client's timer fires up to
    a tick later, and the close that follows drops it. A copy that comes back after the close is
    allowed."""
    spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=DELAY_MS, max_redeliver_count=1)
    program = [*_held_then_nacked(spec, nacked_at=20), (o.Subscribe(consumer="c1"), o.ok(at=21)), _back(1, 130),
               (o.NegativeAcknowledge(consumer="c0", message=o.MessageId(0)), o.ok(at=235)),
               (o.Close(consumer="c0"), o.ok(at=236)),
               (o.Receive(consumer="c1"), o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=1), at=240))]
    assert _run(spec, program).ok
