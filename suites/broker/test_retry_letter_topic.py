"""A consumer with a retry letter topic (`enableRetry`) and reconsume_later: what
model/partitions.py takes from the broker and the Java client.

The client subscribes to the topic and to `<topic>-<subscription>-RETRY` as one multi-topics
consumer. reconsume_later(m, delay) publishes a copy of m to the retry topic with
`deliverAfter(delay)` and acknowledges m once that send completed (ConsumerImpl.doReconsumeLater):
m does not come again; the copy is a message of its own, with a redelivery count of 0. The Java
client subscribes to the retry topic as Shared whatever the subscription type
(ConsumerBase.getSubType), so the broker's delayed delivery tracker holds the copy back on every
type; not strict, it hands out what is due within one tick (1 s). A message reconsumed
max_redeliver_count times goes to `<topic>-<subscription>-DLQ` at its next reconsume_later, and no
copy comes.

Observed on Pulsar 4.0.7 with the Java client 4.0.7 through its driver (the Python client has no
retry letter topic).
"""

from __future__ import annotations

import pytest

from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

m = o.MessageId
DELAY_MS = 3000


@pytest.fixture(scope="module")
def client(pulsar_broker):
    yield from client_target("java", pulsar_broker)


def _with_retry(target, kind: SubscriptionType, max_redeliver_count: int = 2) -> Spec:
    return as_run(Spec(subscription_type=kind, retry_letter_topic=True, max_redeliver_count=max_redeliver_count),
                  target)


@pytest.mark.guarantee("reconsume-later")
def test_a_reconsumed_message_is_acknowledged_and_its_copy_is_a_new_message(client, names):
    """Shared: m0 and m1 received, m0 reconsumed at once: its copy (the program's m2) comes with
    count 0, and after a's close b gets m1 and the copy a held, never m0. The model takes the
    history, and refuses it with m0 once more."""
    _, target = client
    spec = _with_retry(target, SubscriptionType.SHARED)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), o.Send(), o.Send())
    assert [logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message for _ in range(2)] == [m(0), m(1)]
    assert logged.invoke(o.ReconsumeLater(consumer="a", message=m(0))).outcome is o.Outcome.OK
    copy = logged.invoke(o.Receive(consumer="a", timeout_ms=2000)).value
    assert copy is not None and copy.message == m(2) and copy.redelivery_count == 0, copy
    logged.invoke(o.Close(consumer="a"))
    logged.invoke(o.Subscribe(consumer="b"))
    assert sorted(received(logged, "b")) == [m(1), m(2)]
    assert replay(spec, logged.history, drained=True).step is None
    refused = replay(spec, logged.forged(m(0), "b"), drained=False).verdict.violation
    assert refused is not None and refused.guarantee is Guarantee.NO_REDELIVERY_AFTER_ACK, refused


@pytest.mark.parametrize("kind", list(SubscriptionType), ids=[k.value for k in SubscriptionType])
@pytest.mark.guarantee("reconsume-later")
def test_a_copy_waits_its_delay_on_every_subscription_type(client, names, pulsar_broker, kind):
    """m0 reconsumed with a delay of 3 s, m1 at once: m1's copy comes first, m0's not within 1.5 s
    and then within the delay and a tick. The retry topic's subscription is Shared whatever the
    type. The model takes the history, and refuses m0's copy received before its delay less a tick."""
    _, target = client
    spec = _with_retry(target, kind)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), o.Send(), o.Send())
    assert [logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message for _ in range(2)] == [m(0), m(1)]
    reconsumed_at = logged.history[-1][1].at
    logged.invoke(o.ReconsumeLater(consumer="a", message=m(0), delay_ms=DELAY_MS))
    logged.invoke(o.ReconsumeLater(consumer="a", message=m(1)))
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message == m(3)  # m1's copy
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=500)).value is None  # m0's copy waits
    late = logged.invoke(o.Receive(consumer="a", timeout_ms=DELAY_MS + spec.delayed_delivery_tick_ms)).value
    assert late is not None and late.message == m(2), late
    assert logged.history[-1][1].at - reconsumed_at >= DELAY_MS - spec.delayed_delivery_tick_ms
    retry_topic = f"{target.broker.topic}-{target.broker.subscription}-RETRY"
    assert target.broker.admin.subscription_stats(retry_topic, target.broker.subscription).type == "Shared"
    assert replay(spec, logged.history, drained=False).step is None
    early = logged.history[:-1] + [(o.Receive(consumer="a"), o.ok(o.Delivery(message=m(2), redelivery_count=0),
                                                                    at=logged.history[-2][1].at + 1))]
    refused = replay(spec, early, drained=False).verdict.violation
    assert refused is not None and refused.guarantee is Guarantee.RECONSUME_LATER, refused


@pytest.mark.guarantee("reconsume-later")
def test_the_copy_reconsumed_max_times_goes_to_the_dead_letter_topic(client, names):
    """max_redeliver_count 1: m0 reconsumed comes back as m1 (reconsumed once); m1 reconsumed goes
    to the dead-letter topic instead, and nothing comes again. The model takes the history, and
    refuses a copy of it."""
    _, target = client
    spec = _with_retry(target, SubscriptionType.SHARED, max_redeliver_count=1)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"), o.Send())
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=1000)).value.message == m(0)
    logged.invoke(o.ReconsumeLater(consumer="a", message=m(0)))
    assert logged.invoke(o.Receive(consumer="a", timeout_ms=2000)).value.message == m(1)
    assert logged.invoke(o.ReconsumeLater(consumer="a", message=m(1))).outcome is o.Outcome.OK
    assert received(logged, "a") == []
    dead_letter_topic = f"{target.broker.topic}-{target.broker.subscription}-DLQ"
    assert target.broker.admin.messages_in(dead_letter_topic) == 1
    assert replay(spec, logged.history, drained=True).step is None
    refused = replay(spec, logged.forged(m(2), "a"), drained=False).verdict.violation
    assert refused is not None and refused.guarantee is Guarantee.NO_PHANTOM, refused
