"""The nack backoff by example: a nack waits the backoff's delay for the redelivery count of the
copy nacked (MultiplierRedeliveryBackoff.next, pulsar-client 4.0.7), counted from the op before
the nack as every nack window is. What the broker and the Java client do is shown by
suites/broker/test_java_nack_backoff.py; these are the model's side of it.
"""

import pytest

from drivers import wire
from model import ops as o
from model.guarantees import Guarantee
from model.history import spec_json, spec_of
from model.nondet import apply, check_nothing_lost, start
from model.spec import NackBackoff, Spec, SubscriptionType

BACKOFF = NackBackoff(min_ms=100, max_ms=1000, multiplier=3.0)
SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100, nack_backoff=BACKOFF)
M0 = o.MessageId(0)


def _run(spec, program):
    verdict = start(spec)
    for op, completion in program:
        verdict = apply(verdict, op, completion)
    return verdict


def _got(count, at):
    return o.Receive(consumer="c0"), o.ok(o.Delivery(message=M0, redelivery_count=count), at=at)


def _nack(at):
    return o.NegativeAcknowledge(consumer="c0", message=M0), o.ok(at=at)


@pytest.mark.parametrize(("backoff", "delays"), [
    (NackBackoff(min_ms=150, max_ms=5000, multiplier=3.0), [150, 450, 1350, 4050, 5000, 5000]),
    (NackBackoff(min_ms=100, max_ms=400, multiplier=2.0), [100, 200, 400, 400, 400, 400]),
    (NackBackoff(min_ms=1000, max_ms=1000, multiplier=2.0), [1000] * 6),
    (NackBackoff(min_ms=0, max_ms=1000, multiplier=2.0), [0] * 6),
    (NackBackoff(min_ms=10, max_ms=100, multiplier=1.5), [10, 15, 22, 33, 50, 75]),  # floored, as (long) in Java
])
def test_the_backoff_delay_is_the_java_clients(backoff, delays):
    assert [backoff.delay_ms(count) for count in range(6)] == delays
    # past the power that reaches max: max, no overflow (a min of 0 stays 0, as in Java)
    assert backoff.delay_ms(10_000) == (backoff.max_ms if backoff.min_ms else 0)


def test_a_backoff_out_of_the_java_builders_bounds_is_refused():
    for bad in ({"min_ms": 200, "max_ms": 100, "multiplier": 2.0}, {"min_ms": 100, "max_ms": 200, "multiplier": 1.0}):
        with pytest.raises(ValueError):
            NackBackoff(**bad)


def test_each_nack_waits_the_delay_of_the_count_it_was_received_with():
    """m0 received at 10 ms, nacked (count 0: 100 ms), back at 120 with count 1, nacked (count 1:
    300 ms), back at 430 with count 2: allowed. Back at 410 (290 ms after the op before the second
    nack) is a redelivery before its delay, as a client that ignored the backoff would make."""
    first = [(o.Send(), o.ok((M0,), at=0)), (o.Subscribe(consumer="c0"), o.ok(at=0)), _got(0, 10), _nack(12),
             _got(1, 120), _nack(125)]
    grown = _run(SHARED, [*first, _got(2, 430), (o.Tick(ms=2000), o.ok(at=2430))])
    assert grown.ok and check_nothing_lost(grown).ok
    assert _run(SHARED, [*first, _got(2, 410)]).violation.guarantee is Guarantee.NO_DUPLICATE_WITHOUT_CAUSE
    assert _run(SHARED.with_(nack_backoff=None), [*first, _got(2, 410)]).ok  # without it, 100 ms is the delay


def test_a_nack_window_with_a_backoff_closes_by_the_longest_delay():
    """The tracker's timer may be running for a message nacked earlier with a higher count: a nack
    due sooner waits for it. So the window of any count closes a third past the longest delay."""
    assert [SHARED.nack_window_for(count) for count in (0, 1, 2)] == [(100, 1334), (300, 1334), (900, 1334)]
    assert SHARED.nack_window_ms == SHARED.nack_window_for(0)
    plain = SHARED.with_(nack_backoff=None)
    assert plain.nack_window_for(3) == plain.nack_window_ms == (100, 134)


def test_a_backoff_travels_in_histories_and_asks_drivers_for_the_capability():
    assert spec_of(spec_json(SHARED)) == SHARED
    assert spec_of(spec_json(Spec())).nack_backoff is None
    assert "nack_backoff" in wire.needs(("negative_acknowledge",), SHARED)
    assert "nack_backoff" not in wire.needs(("negative_acknowledge",), SHARED.with_(nack_backoff=None))
    assert wire.reset(SHARED, "t", "s")["spec"]["nack_backoff"] == {"min_ms": 100, "max_ms": 1000, "multiplier": 3.0}
    assert "NackBackoff(min_ms=100, max_ms=1000, multiplier=3.0)" in repr(SHARED)
