"""The op vocabulary the generators draw from: a tick (a real sleep on a broker) is offered only
while waiting can change what the model expects, and the machines' ticks land beside each bound of a
window open now."""

from model import ops as o
from model.nondet import apply, start
from model.spec import Spec, SubscriptionType
from model.vocabulary import boundary_ticks, candidates

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


def _beside(bound: int) -> set[o.Tick]:
    return {o.Tick(ms=bound + d) for d in (-1, 0, 1)}


def test_boundary_ticks_land_beside_each_bound_of_the_nack_window():
    nacked = _state(SHARED, HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok())])
    lo, hi = SHARED.nack_window_ms
    ticks = set(boundary_ticks(nacked))
    assert _beside(lo) | _beside(hi) <= ticks
    assert all(lo - 1 <= t.ms <= hi + 1 for t in ticks)  # nothing else but the window's inside
    assert boundary_ticks(_state(SHARED, HELD)) == ()  # no window open: no tick at all


def test_boundary_ticks_of_the_ack_timeout_and_the_failover_pause():
    timed = SHARED.with_(ack_timeout_ms=10_000)
    lo, hi = timed.ack_timeout_window_ms
    assert _beside(lo) | _beside(hi) <= set(boundary_ticks(_state(timed, HELD)))
    failover = SHARED.with_(subscription_type=SubscriptionType.FAILOVER, failover_delay_ms=200)
    assert set(boundary_ticks(_state(failover, HELD[:1]))) == _beside(200)


def test_boundary_ticks_count_from_now():
    nacked = HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok())]
    later = _state(SHARED, nacked + [(o.Tick(ms=40), o.ok(at=40))])
    assert _beside(SHARED.nack_window_ms[0] - 40) <= set(boundary_ticks(later))
