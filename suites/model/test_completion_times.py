"""A history's completion times never go back: a stamp before the last one is a malformed history.

The ops of a history run one after another, each invoked once the one before it completed, so
their completion stamps (what the timing rules read: the nack delay, the ack timeout, the
Failover pause) only grow. A target that stamps an op before the last completion reports a time no
broker can; the checker (model.nondet.apply) refuses the history with `ImpossibleStamp`, a harness
error with the history told, instead of reading the stamp as "no time passed" and passing it.
"""

import pytest

from fixtures.targets.lockstep import Lockstep
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.nondet import ImpossibleStamp, apply, start
from model.spec import Spec, SubscriptionType
from reports.vocabulary import HARNESS_ERROR, kind_of_error

EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE)


def _run(spec, program):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    return verdict


def _busy_after_a_tick(busy_at):
    """c0 holds the Exclusive subscription, 150 ms pass, c1 is refused (ConsumerBusy) at `busy_at`."""
    return [(o.Send(), o.ok((o.MessageId(0),), at=0)), (o.Subscribe(consumer="c0"), o.ok(at=0)),
            (o.Tick(ms=150), o.ok(at=150)), (o.Subscribe(consumer="c1"), o.fail("ConsumerBusy", at=busy_at))]


def test_a_completion_stamped_before_the_last_one_is_refused():
    assert _run(EXCLUSIVE, _busy_after_a_tick(150)).ok  # the same time as the last: allowed
    assert _run(EXCLUSIVE, _busy_after_a_tick(151)).ok
    with pytest.raises(ImpossibleStamp, match="completed at 0 ms, before the op before it completed .at 150 ms") \
            as raised:
        _run(EXCLUSIVE, _busy_after_a_tick(0))
    assert raised.value.at == 0 and raised.value.last == 150 and raised.value.op == o.Subscribe(consumer="c1")
    assert kind_of_error(raised.value) == HARNESS_ERROR  # unknown, never a pass nor a broken guarantee


def test_a_nack_stamped_before_its_delivery_is_refused_not_read_as_on_time():
    """A nack whose stamp goes back before the receive it follows would move the nack window
    earlier than any client could start it."""
    spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
    program = [(o.Send(), o.ok((o.MessageId(0),), at=0)), (o.Subscribe(consumer="c0"), o.ok(at=0)),
               (o.Receive(consumer="c0"), o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=0), at=40)),
               (o.NegativeAcknowledge(consumer="c0", message=o.MessageId(0)), o.ok(at=5))]
    with pytest.raises(ImpossibleStamp, match="NegativeAcknowledge.* completed at 5 ms"):
        _run(spec, program)


class BusyAtZero(ModelTarget):
    """The model target, but ConsumerBusy is stamped at 0 whatever the time (a mutant of the ideal
    broker that forgot the refusal's time)."""

    def answer(self, op):
        completion = super().answer(op)
        return o.fail(completion.error) if completion.error == "ConsumerBusy" else completion


def test_the_lockstep_run_stops_with_the_history_told():
    run = Lockstep(BusyAtZero(), EXCLUSIVE, "backwards")
    for op in (o.Send(), o.Subscribe(consumer="c0"), o.Tick(ms=150)):
        run.do(op)
    with pytest.raises(ImpossibleStamp) as raised:
        run.do(o.Subscribe(consumer="c1"))
    told = "\n".join(raised.value.__notes__)
    assert "history (last 40):" in told and "@150ms" in told and "ConsumerBusy" in told


def _redelivered_to_c0_after_c1s_redeliver(c1_at, count):
    """c0 holds m0 and asks for it again at 20 ms; c1's redeliver completes at `c1_at`; c0 then
    receives m0 with `count`."""
    spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
    return _run(spec, [(o.Send(), o.ok((o.MessageId(0),), at=0)), (o.Subscribe(consumer="c0"), o.ok(at=0)),
                       (o.Subscribe(consumer="c1"), o.ok(at=0)),
                       (o.Receive(consumer="c0"), o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=0), at=10)),
                       (o.RedeliverUnacknowledgedMessages(consumer="c0"), o.ok(at=20)),
                       (o.RedeliverUnacknowledgedMessages(consumer="c1"), o.ok(at=c1_at)),
                       (o.Receive(consumer="c0"), o.ok(o.Delivery(message=o.MessageId(0), redelivery_count=count),
                                                       at=c1_at + 1))])


def test_a_redelivery_may_land_before_an_op_stamped_in_the_millisecond_its_window_ends():
    """c0's redeliver lands by its own stamp; the copy may go to c1, whose redeliver counts it
    again (count 2). Stamps are whole milliseconds: c1's call in the same millisecond may come
    after the landing as well as one a millisecond later (shown by history
    broker-redelivery-lands-within-the-millisecond-of-its-call.redelivery_count_and_dead_letter-Shared)."""
    assert _redelivered_to_c0_after_c1s_redeliver(c1_at=21, count=2).ok
    assert _redelivered_to_c0_after_c1s_redeliver(c1_at=20, count=2).ok
    assert _redelivered_to_c0_after_c1s_redeliver(c1_at=20, count=1).ok  # or before it: one request counted
    assert not _redelivered_to_c0_after_c1s_redeliver(c1_at=20, count=3).ok
