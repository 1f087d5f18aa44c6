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
