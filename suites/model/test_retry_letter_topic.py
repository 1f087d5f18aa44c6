"""A consumer with a retry letter topic in the model (model/partitions.py): the topic and its retry
topic side by side, a reconsume_later an ack on one and a copy on the other.

The rules are the broker's and the Java client's, shown by suites/broker/test_retry_letter_topic.py;
these tests say them on hand-written histories, timed in milliseconds.
"""

from model import ops as o
from model.guarantees import Guarantee
from model.nondet import apply, check_nothing_lost, start
from model.spec import Spec, SubscriptionType

m = o.MessageId
SHARED = Spec(subscription_type=SubscriptionType.SHARED, retry_letter_topic=True, max_redeliver_count=2)
EXCLUSIVE = SHARED.with_(subscription_type=SubscriptionType.EXCLUSIVE)
TICK = SHARED.delayed_delivery_tick_ms


def _run(spec, steps):
    """`steps`: (op, completion, at) triples."""
    verdict = start(spec)
    for op, completion, at in steps:
        verdict = apply(verdict, op, o.Completion(outcome=completion.outcome, at=at, value=completion.value,
                                                  error=completion.error))
    return verdict


def _receive(consumer, message, at, count=0):
    return o.Receive(consumer=consumer), o.ok(o.Delivery(message=message, redelivery_count=count)), at


def _reconsume(message, at, delay=0, consumer="a"):
    return o.ReconsumeLater(consumer=consumer, message=message, delay_ms=delay), o.ok(), at


SENT = [(o.Subscribe(consumer="a"), o.ok(), 1), (o.Send(), o.ok((m(0),)), 2), (o.Send(), o.ok((m(1),)), 3),
        _receive("a", m(0), 4)]


def test_a_reconsumed_message_is_acknowledged_and_its_copy_is_a_new_message():
    # m0 reconsumed: its copy is m2, the program's next entry; m0 itself does not come again.
    reconsumed = [*SENT, _reconsume(m(0), 5), (o.Close(consumer="a"), o.ok(), 6), (o.Subscribe(consumer="b"), o.ok(), 7)]
    assert _run(SHARED, [*reconsumed, _receive("b", m(1), 8), _receive("b", m(2), 9)]).ok
    again = _run(SHARED, [*reconsumed, _receive("b", m(0), 8)])
    assert again.violation.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK
    lost = check_nothing_lost(_run(SHARED, [*reconsumed, _receive("b", m(1), 8)]))
    assert lost.violation.guarantee is Guarantee.NO_LOSS and "m2" in lost.violation.detail


def test_a_delayed_copy_comes_no_earlier_than_its_delay_less_a_tick_on_every_type():
    for spec in (SHARED, EXCLUSIVE):
        reconsumed = [*SENT, _reconsume(m(0), 5, delay=3000)]
        assert _run(spec, [*reconsumed, _receive("a", m(2), 4 + 3000 - TICK)]).ok
        early = _run(spec, [*reconsumed, _receive("a", m(2), 4 + 3000 - TICK - 1)])
        assert early.violation.guarantee is Guarantee.RECONSUME_LATER, spec
        # Not owed before its window ends; owed after.
        assert check_nothing_lost(_run(spec, [*reconsumed, _receive("a", m(1), 5 + 3000 + TICK - 1)])).ok
        late = check_nothing_lost(_run(spec, [*reconsumed, _receive("a", m(1), 5 + 3000 + TICK)]))
        assert late.violation.guarantee is Guarantee.NO_LOSS


def test_a_delayed_copy_may_come_after_a_later_copy():
    both = [*SENT, _receive("a", m(1), 5), _reconsume(m(0), 6, delay=3000), _reconsume(m(1), 7)]
    assert _run(SHARED, [*both, _receive("a", m(3), 8), _receive("a", m(2), 6000)]).ok


def test_the_copy_reconsumed_max_times_goes_to_the_dead_letter_topic():
    # max_redeliver_count 2: m0's copies m2 (once) and m3 (twice); m3's reconsume_later makes none.
    chain = [*SENT, _reconsume(m(0), 5), _receive("a", m(2), 6), _reconsume(m(2), 7), _receive("a", m(3), 8),
             _reconsume(m(3), 9)]
    assert check_nothing_lost(_run(SHARED, [*chain, _receive("a", m(1), 10)])).ok
    phantom = _run(SHARED, [*chain, _receive("a", m(4), 10)])
    assert phantom.violation.guarantee is Guarantee.NO_PHANTOM


def test_a_reconsume_later_that_does_not_complete_breaks_its_guarantee():
    failed = [*SENT, (o.ReconsumeLater(consumer="a", message=m(0)), o.info("Timeout"), 5)]
    assert _run(SHARED, failed).violation.guarantee is Guarantee.RECONSUME_LATER


def test_an_exclusive_consumer_reads_the_retry_topic_as_shared():
    # A second consumer is refused on the topic: the multi-topics consumer is not made, and the
    # retry topic (Shared) sees no subscriber either.
    refused = [*SENT, (o.Subscribe(consumer="b"), o.fail("ConsumerBusy"), 5), _reconsume(m(0), 6)]
    assert _run(EXCLUSIVE, [*refused, _receive("a", m(2), 7)]).ok


def test_a_retry_topic_read_as_exclusive_hands_a_copy_out_at_once():
    # A client that reads the retry topic with the subscription's own type (the Go client): the
    # Exclusive dispatcher has no delayed delivery tracker, so the copy's delay is ignored.
    own_type = EXCLUSIVE.with_(retry_subscription_shared=False)
    reconsumed = [*SENT, _reconsume(m(0), 5, delay=3000)]
    assert _run(own_type, [*reconsumed, _receive("a", m(2), 6)]).ok
    assert _run(EXCLUSIVE, [*reconsumed, _receive("a", m(2), 6)]).violation.guarantee is Guarantee.RECONSUME_LATER
