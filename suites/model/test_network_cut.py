"""The model's rule for a network cut between the clients and the broker (`cut_network`): to the
clients it is an unload, every connection closed and opened again, so what was held may come again
with its count from 0, an ack the broker had stays, and an ack still grouped in the client may be
dropped. The broker's side, behind a proxy: suites/broker/test_network_cut.py.
"""

from functools import reduce

from model import cursor as cur
from model import ops as o
from model.guarantees import Guarantee
from model.history import completion_of, event_of, op_of
from model.nondet import apply, start
from model.spec import Spec, SubscriptionType

SHARED = Spec(subscription_type=SubscriptionType.SHARED)
m = o.MessageId


def run(program, spec=SHARED):
    return reduce(lambda verdict, step: apply(verdict, *step), program, start(spec))


def got(message, count=0, *, at=0):
    return o.Receive(consumer="c0"), o.ok(o.Delivery(message=message, redelivery_count=count), at=at)


HELD = [(o.Subscribe(consumer="c0"), o.ok()), (o.Send(), o.ok()), (o.Send(), o.ok()), got(m(0)), got(m(1))]
CUT = (o.CutNetwork(ms=1000), o.ok(at=1000))


def test_a_held_message_comes_again_after_a_cut_and_not_without_it():
    assert run(HELD + [CUT, got(m(0), at=1100)]).ok
    without = run(HELD + [(o.Tick(ms=1000), o.ok(at=1000)), got(m(0), at=1100)])
    assert without.violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_an_ack_the_broker_showed_keeps_its_message_away_after_a_cut():
    shown = HELD + [(o.Acknowledge(consumer="c0", message=m(0)), o.ok()),
                    (o.ReadCursor(), o.ok(cur.from_acknowledged(set(), mark_delete=0)))]
    assert run(shown + [CUT, got(m(1), at=1100)]).ok
    again = run(shown + [CUT, got(m(0), at=1100)])
    assert again.violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK


def test_a_cut_round_trips_through_a_history():
    event = event_of("p", SHARED, 7, o.CutNetwork(ms=750), o.ok(at=900))
    assert event.op == "cut_network" and event.ms == 750
    assert op_of(event) == o.CutNetwork(ms=750) and completion_of(event) == o.ok(at=900)


def receives(consumer, message, *, at):
    return o.Receive(consumer=consumer), o.ok(o.Delivery(message=message, redelivery_count=0), at=at)


def test_a_nack_whose_timer_fires_during_a_cut_may_rewind_everything_once_its_consumer_is_back():
    # Exclusive: the Go client asks once reconnected, and the broker rewinds, so m1, published
    # after the cut, may come twice; without a nack pending at the cut it may not.
    exclusive = Spec(subscription_type=SubscriptionType.EXCLUSIVE, nack_delay_ms=100)
    nacked = [(o.Subscribe(consumer="c0"), o.ok(at=0)), (o.Send(), o.ok(at=1)), receives("c0", m(0), at=2),
              (o.NegativeAcknowledge(consumer="c0", message=m(0)), o.ok(at=3)), (o.CutNetwork(ms=300), o.ok(at=303)),
              (o.Send(), o.ok(at=310))]
    twice = [receives("c0", m(0), at=320), receives("c0", m(1), at=321), receives("c0", m(1), at=330)]
    assert run(nacked + twice, exclusive).ok
    not_nacked = nacked[:3] + nacked[4:]
    assert run(not_nacked + twice, exclusive).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    # Once the consumer is back (m1 came over its new connection), the rewind lands within its lag.
    late = [receives("c0", m(0), at=320), receives("c0", m(1), at=321), (o.Tick(ms=1000), o.ok(at=1321)),
            (o.Send(), o.ok(at=1322)), receives("c0", m(2), at=1323), receives("c0", m(2), at=1324)]
    assert run(nacked + late, exclusive).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_a_failover_consumer_coming_back_after_the_others_may_take_over_what_they_hold():
    failover = Spec(subscription_type=SubscriptionType.FAILOVER, failover_delay_ms=200)
    both = [(o.Subscribe(consumer="c0"), o.ok(at=0)), (o.Subscribe(consumer="c1"), o.ok(at=1))]
    after = [(o.Send(), o.ok(at=400)), receives("c1", m(0), at=600), receives("c0", m(0), at=900)]
    assert run(both + [(o.CutNetwork(ms=300), o.ok(at=301))] + after, failover).ok
    switch_of_a_tick = both + [(o.Tick(ms=300), o.ok(at=301))] + after
    assert run(switch_of_a_tick, failover).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE


def test_after_a_cut_a_key_goes_to_the_first_key_shared_consumer_back():
    key_shared = Spec(subscription_type=SubscriptionType.KEY_SHARED)
    bound = [(o.Subscribe(consumer="c0"), o.ok(at=0)), (o.Subscribe(consumer="c1"), o.ok(at=1)),
             (o.Send(keys=("k",)), o.ok(at=2)), receives("c0", m(0), at=3),
             (o.Acknowledge(consumer="c0", message=m(0)), o.ok(at=4))]
    later = [(o.Send(keys=("k",)), o.ok(at=400)), receives("c1", m(1), at=401)]
    assert run(bound + [(o.CutNetwork(ms=300), o.ok(at=304))] + later, key_shared).ok
    stays = run(bound + [(o.Tick(ms=300), o.ok(at=304))] + later, key_shared)
    assert stays.violation.guarantee is Guarantee.KEY_SHARED_STICKINESS
