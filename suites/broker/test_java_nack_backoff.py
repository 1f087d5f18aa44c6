"""The nack backoff (`Spec.nack_backoff`, the Java client's `negativeAckRedeliveryBackoff` with a
MultiplierRedeliveryBackoff) on the real broker through the Java client's driver, in lock-step
with the model: each nack of the same message waits the backoff's delay for the redelivery count
of the copy nacked, so the second and third nacks come back after grown delays.

pulsar-client 4.0.7's NegativeAcksTracker.add(Message) files a nack under now +
backoff.next(message.getRedeliveryCount()) (the nack delay and its 100 ms floor are not used),
trimmed by `negativeAckRedeliveryDelayPrecision` bits; the Java driver asks for exact due times
(CONFORMANCE_JAVA_NACK_PRECISION_BITS 0, see test_java_nack_timing.py): at the client's default of
8 bits a due time is trimmed down by up to 255 ms, and a redelivery could come that much before
the delay. As in the model's nack rule, the delay is counted from the op before the nack (the
earliest the nack can have been called).
"""

from __future__ import annotations

import pytest

from fixtures.targets.lockstep import Lockstep
from fixtures.targets.loader import pulsar_target
from model import ops as o
from model.spec import NackBackoff, Spec, SubscriptionType

pytestmark = pytest.mark.broker

# Delays 150, 450, 1350, 4050 ms for counts 0 to 3: each level well apart from the next, so a
# redelivery shows which delay it waited. The plain nack delay is the backoff's first one: a client
# that ignored the backoff would bring every nack back after 150 ms.
BACKOFF = NackBackoff(min_ms=150, max_ms=5000, multiplier=3.0)
SPEC = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=BACKOFF.min_ms, nack_backoff=BACKOFF)
NACKS = 3
M0 = o.MessageId(0)


@pytest.fixture(scope="module")
def java(pulsar_broker):
    target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url, controller=pulsar_broker.controller,
                           client="java", version=pulsar_broker.version)
    yield target
    target.close()


@pytest.mark.guarantee("no-duplicate-without-cause", "redelivery-count")
def test_each_nack_of_a_message_comes_back_after_the_backoff_delay_of_its_count(java, observed, names,
                                                                                  record_property):
    assert "nack_backoff" in java.client["capabilities"]
    run = Lockstep(observed(java), SPEC, names.topic().rsplit("/", 1)[1])
    run.do(o.Send())
    run.do(o.Subscribe(consumer="c0"))
    held = run.receive("c0", timeout_ms=5000)
    assert (held.message, held.redelivery_count) == (M0, 0)
    back_after = []
    for count in range(NACKS):
        before = run.history[-1][1].at  # the op before the nack: the earliest the nack was called
        run.do(o.NegativeAcknowledge(consumer="c0", message=M0))
        back = run.receive("c0", timeout_ms=10_000)
        assert back is not None and (back.message, back.redelivery_count) == (M0, count + 1)
        back_after.append(run.history[-1][1].at - before)
    run.do(o.Acknowledge(consumer="c0", message=M0))
    record_property("java_nack_backoff_back_after_ms", back_after)
    print(f"back after the op before each nack: {back_after} ms")
    delays = [BACKOFF.delay_ms(count) for count in range(NACKS + 1)]
    # Not sooner than its count's delay (the lock-step model checks it too), and before the next
    # level's: the delay grew with the count, as the backoff says, and no further.
    assert all(delays[n] <= back_after[n] < delays[n + 1] for n in range(NACKS)), (
        f"came back after {back_after} ms, the backoff's delays for counts 0..{NACKS} are {delays} ms")
