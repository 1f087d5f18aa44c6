"""Failover: a message two consumers' applications got a copy of.

After the active consumer changes, the new one gets the unacknowledged messages from the broker
while the old one may still hand its application the copies in its receiver queue, in either
order. The broker has each message pending on the consumer it dispatched to last. So when the
consumer that received a message last closes, the message is not owed if a consumer that stays
received it too: that one's application holds it (the broker test's history:
broker-failover-stale-copy-received-after-the-switch-is-not-owed-at-its-close.multi_topics-Failover-2).
A consumer that never received a copy, or whose copy went with it when it left, holds nothing:
then the message is owed as after any close.
"""

from model import ops as o
from model.guarantees import Guarantee
from model.nondet import apply, check_drained, start
from model.spec import Spec, SubscriptionType

FAILOVER = Spec(subscription_type=SubscriptionType.FAILOVER, failover_delay_ms=200)
M0 = o.MessageId(0)


def _run(steps):
    verdict = start(FAILOVER)
    for op, completion in steps:
        verdict = apply(verdict, op, completion)
        assert verdict.ok, (op, verdict.violation)
    return check_drained(verdict, True)


def _receive(consumer, at):
    return o.Receive(consumer=consumer, timeout_ms=100), o.ok(o.Delivery(message=M0, redelivery_count=0), at=at)


def _nothing(consumer, at):
    return [(o.Receive(consumer=consumer, timeout_ms=100), o.ok(None, at=at + 101 * i)) for i in range(30)]


def _subscribe(consumer, at):
    return [(o.Subscribe(consumer=consumer), o.ok(at=at)), (o.Tick(ms=300), o.ok(at=at + 300))]


def _close(consumer, at):
    return [(o.Close(consumer=consumer), o.ok(at=at)), (o.Tick(ms=300), o.ok(at=at + 300))]


# c0 active gets m0 from its queue after c1, the new active consumer, got it from the broker.
SWITCHED = [*_subscribe("c0", 1), (o.Send(), o.ok((M0,), at=302)), *_subscribe("c1", 303),
            _receive("c1", 604), _receive("c0", 605)]


def test_the_copy_of_the_consumer_that_stays_is_the_message():
    assert _run([*SWITCHED, *_close("c0", 606), *_nothing("c1", 1000)]).ok


def test_a_consumer_that_never_received_it_holds_nothing():
    """c0 got m0 before the switch, c1 after it; c2 joins, c0 and then c1 close: c2 never got m0."""
    steps = [*_subscribe("c0", 1), (o.Send(), o.ok((M0,), at=302)), _receive("c0", 303), *_subscribe("c1", 304),
             _receive("c1", 605), *_subscribe("c2", 606), *_close("c0", 907), *_close("c1", 1208),
             *_nothing("c2", 1600)]
    assert _run(steps).violation.guarantee is Guarantee.NO_LOSS


def test_a_copy_goes_with_the_consumer_that_left():
    """c1 closes with its copy; a new c1 never received m0: at c0's close m0 is owed to it."""
    steps = [*SWITCHED, *_close("c1", 606), *_subscribe("c1", 907), *_close("c0", 1208), *_nothing("c1", 1600)]
    assert _run(steps).violation.guarantee is Guarantee.NO_LOSS


def test_a_copy_received_again_after_an_unload_leaves_the_newcomer_owed():
    steps = [*SWITCHED, *_close("c0", 606), (o.Unload(), o.ok(at=907)), (o.Tick(ms=300), o.ok(at=1207)),
             _receive("c1", 1208), *_subscribe("c2", 1209), *_close("c1", 1510), *_nothing("c2", 1900)]
    assert _run(steps).violation.guarantee is Guarantee.NO_LOSS
