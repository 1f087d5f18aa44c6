"""The op vocabulary the generators draw from: a tick (a real sleep on a broker) is offered only
while waiting can change what the model expects."""

from model import ops as o
from model.nondet import apply, start
from model.spec import Spec, SubscriptionType
from model.vocabulary import candidates

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
m = o.MessageId


def _state(spec, program):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    assert verdict.ok
    return next(iter(verdict.states))


HELD = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok()),
        (o.Receive(consumer="c0"), o.ok(o.Delivery(message=m(0), redelivery_count=0)))]


def test_no_tick_while_no_window_is_open():
    assert candidates(_state(SHARED, HELD), "tick") == ()


def test_a_nack_opens_the_nack_window_tick_and_an_ack_the_grouping_tick():
    nacked = _state(SHARED, HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok())])
    assert candidates(nacked, "tick") == (o.Tick(ms=SHARED.nack_window_ms[1] + 50),)
    acked = _state(SHARED, HELD + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok())])
    assert candidates(acked, "tick") == (o.Tick(ms=SHARED.ack_grouping_ms + 50),)


def test_a_failover_pause_and_an_ack_timeout_offer_their_ticks():
    failover = SHARED.with_(subscription_type=SubscriptionType.FAILOVER)
    assert candidates(_state(failover, HELD[:1]), "tick") == (o.Tick(ms=failover.nack_window_ms[1] + 50),)
    timed = SHARED.with_(ack_timeout_ms=10_000)
    # A held message's ack-timeout window is open from its receipt: the short tick too.
    assert candidates(_state(timed, HELD), "tick") == (o.Tick(ms=timed.nack_window_ms[1] + 50),
                                                       o.Tick(ms=timed.ack_timeout_window_ms[1] + 50))
