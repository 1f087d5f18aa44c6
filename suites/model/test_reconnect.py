"""The model's rule for acks made around a disconnection (model/transitions/reconnect.py), by
example: after an unload the C++ client may drop the acks it flushes before its consumer is back,
so a message acknowledged then may come again, even after a close, until a cursor read settles
it (missing: the message is owed again); acks a read showed stay; once the consumer got a message
over its new connection, its acks are safe again. The broker's side is
suites/broker/test_ack_while_reconnecting.py (KD-31).
"""

from functools import reduce

from model import cursor as cur
from model import ops as o
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, start
from model.spec import Spec, SubscriptionType

EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
m = o.MessageId


def run(program, spec=EXCLUSIVE):
    return reduce(lambda verdict, step: apply(verdict, *step), program, start(spec))


def got(message, *, at=0):
    return o.Receive(consumer="c0"), o.ok(o.Delivery(message=message, redelivery_count=0), at=at)


def ack(message, *, at=0):
    return o.Acknowledge(consumer="c0", message=message), o.ok(at=at)


SUBSCRIBE = (o.Subscribe(consumer="c0"), o.ok())
CLOSE = (o.Close(consumer="c0"), o.ok())
UNLOAD = (o.Unload(), o.ok())
NOTHING_ACKED = (o.ReadCursor(), o.ok(cur.Cursor()))
TWO_RECEIVED = [SUBSCRIBE, (o.Send(), o.ok()), (o.Send(), o.ok()), got(m(0)), got(m(1))]


def test_an_ack_made_while_the_consumer_reconnects_may_be_dropped_and_its_message_comes_again():
    """The broker test's program: the ack never reaches the broker, even at the close's flush."""
    dropped = TWO_RECEIVED + [UNLOAD, ack(m(0)), NOTHING_ACKED, got(m(0)), got(m(1)), CLOSE, SUBSCRIBE]
    assert run(dropped + [got(m(0)), got(m(1))]).ok
    assert run(dropped + [NOTHING_ACKED]).ok, "the close's flush did not bring it either"
    assert check_nothing_lost(run(dropped + [NOTHING_ACKED, got(m(1))])).violation.guarantee \
        is Guarantee.NO_LOSS, "the cursor lacks the ack after the close: m0 is owed"


def test_an_ack_made_once_the_consumer_is_back_is_not_dropped():
    back = TWO_RECEIVED + [UNLOAD, (o.Send(), o.ok()), got(m(0)), got(m(1)), got(m(2)), ack(m(0)), CLOSE, SUBSCRIBE]
    assert run(back + [got(m(1)), got(m(2))]).ok
    assert run(back + [got(m(0))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK, \
        "m2, published after the unload, came over the new connection"


def test_of_the_acks_pending_at_an_unload_those_a_cursor_read_shows_stay_and_the_others_may_be_dropped():
    cut = TWO_RECEIVED + [ack(m(0)), ack(m(1)), UNLOAD, (o.ReadCursor(), o.ok(cur.from_acknowledged({0}))),
                          got(m(0)), got(m(1)), CLOSE, SUBSCRIBE]  # the unload's copies came
    assert run(cut + [got(m(1))]).ok, "m1's ack, missing from the read, may have been dropped"
    assert run(cut + [got(m(0))]).violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK, \
        "the read showed m0's ack"
