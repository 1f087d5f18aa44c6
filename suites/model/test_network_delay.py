"""The model's rules for a network that delays between the clients and the broker. A stall
(`stall_network`): nothing passes for a while, then everything held, on the same connections.
Shorter than the keep-alive, it is a wait: what a consumer held it still holds (a copy of it now
is a duplicate without cause, where after a cut it is not), a nack's redelivery held by the stall
comes after it, never before the nack's delay. A slow network (`slow_network`): every byte late by
as much each way, so a redelivery or a rewind a client's timer asks for lands that much later; it
still comes no sooner. The broker's side, behind the proxy: suites/broker/test_network_delay.py.
Also: when the vocabulary offers them, and which windows they reached (model/faults.py).
"""

from functools import reduce

from model import ops as o
from model.faults import DELAYED_REDELIVERY, STALL_NETWORK, UNFLUSHED_ACK, windows_for, windows_reached
from model.state import AVAILABLE
from model.state import HELD as HELD_STATUS
from model.guarantees import Guarantee
from model.history import completion_of, event_of, op_of
from model.nondet import apply, start
from model.spec import Spec, SubscriptionType
from model.vocabulary import LATENCY_MS, STALL_MS, candidates

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
m = o.MessageId


def run(program, spec=SHARED):
    return reduce(lambda verdict, step: apply(verdict, *step), program, start(spec))


def got(message, count=0, *, at=0):
    return o.Receive(consumer="c0"), o.ok(o.Delivery(message=message, redelivery_count=count), at=at)


def _state(program):
    return next(iter(run(program).states))


HELD = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok()), (o.Send(), o.ok()), got(m(0)), got(m(1))]
STALL = (o.StallNetwork(ms=1000), o.ok(at=1000))


def test_a_held_message_does_not_come_again_after_a_stall_as_it_does_after_a_cut():
    again = run(HELD + [STALL, got(m(0), at=1100)])
    assert again.violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    assert run(HELD + [(o.CutNetwork(ms=1000), o.ok(at=1000)), got(m(0), at=1100)]).ok


def test_a_nack_held_by_a_stall_comes_back_after_it_counted_once_and_not_before_its_delay():
    nacked = HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=10))]
    assert run(nacked + [STALL, got(m(0), 1, at=1100)]).ok
    assert run(nacked + [STALL, got(m(0), 0, at=1100)]).violation.guarantee is Guarantee.REDELIVERY_COUNT
    early = nacked + [(o.StallNetwork(ms=50), o.ok(at=60)), got(m(0), 1, at=61)]
    assert run(early).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_stall_is_offered_while_a_consumer_is_connected():
    assert candidates(_state([(o.Send(), o.ok())]), "stall_network") == ()
    assert candidates(_state(HELD), "stall_network") == (o.StallNetwork(ms=STALL_MS),)


def test_the_windows_a_stall_reached():
    assert windows_for(STALL_NETWORK, ("send", "subscribe", "receive", "acknowledge")) == (UNFLUSHED_ACK,)
    acked = HELD + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok(at=10))]
    assert windows_reached(_state(acked), o.StallNetwork(ms=STALL_MS), acked) == (UNFLUSHED_ACK,)
    nacked = HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(1)), o.ok(at=10))]
    assert windows_reached(_state(nacked), o.StallNetwork(ms=STALL_MS), nacked) == (DELAYED_REDELIVERY,)
    assert windows_reached(_state(nacked), o.StallNetwork(ms=10), nacked) == (), \
        "the nack's delay outlasts a stall of 10 ms: its request goes after it"
    assert windows_reached(_state(HELD), o.StallNetwork(ms=STALL_MS), HELD) == (), \
        "held messages are no window of a stall: it closes no connection"


def test_a_stall_round_trips_through_a_history():
    event = event_of("p", SHARED, 7, o.StallNetwork(ms=750), o.ok(at=900))
    assert event.op == "stall_network" and event.ms == 750
    assert op_of(event) == o.StallNetwork(ms=750) and completion_of(event) == o.ok(at=900)


def test_a_slow_network_lands_a_nacked_message_later_and_never_sooner():
    nacked = [(o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=10))]
    past = 10 + SHARED.nack_window_ms[1] + 1  # past the window: landed on a fast network
    slow = [(o.SlowNetwork(ms=LATENCY_MS), o.ok(at=5))]
    tick = [(o.Tick(ms=past - 10), o.ok(at=past))]
    assert _state(HELD + nacked + tick).message(m(0)).status is AVAILABLE
    assert _state(HELD + slow + nacked + tick).message(m(0)).status is HELD_STATUS, "its request is still on its way"
    later = [(o.Tick(ms=LATENCY_MS), o.ok(at=past + LATENCY_MS))]
    assert _state(HELD + slow + nacked + tick + later).message(m(0)).status is AVAILABLE
    early = HELD + slow + nacked + [got(m(0), 1, at=50)]
    assert run(early).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_slow_network_is_offered_once_while_a_consumer_is_connected():
    assert candidates(_state(HELD), "slow_network") == (o.SlowNetwork(ms=LATENCY_MS),)
    assert candidates(_state(HELD + [(o.SlowNetwork(ms=LATENCY_MS), o.ok())]), "slow_network") == ()
    nacked = HELD + [(o.NegativeAcknowledge(consumer="c0", message=m(1)), o.ok(at=10))]
    assert windows_reached(_state(nacked), o.SlowNetwork(ms=LATENCY_MS), nacked) == (DELAYED_REDELIVERY,)
    event = event_of("p", SHARED, 3, o.SlowNetwork(ms=150), o.ok(at=20))
    assert event.op == "slow_network" and op_of(event) == o.SlowNetwork(ms=150)
