"""A copy at the dead-letter limit, held across a reconnect, then nacked: what the model takes from
the broker for `Message.dead_letter_forgotten`.

Observed on Pulsar 4.0.7 with the Python client (C++ underneath) and the Java client 4.0.7, each
through its driver, Shared, a dead-letter policy of one redelivery, a batch of three: the batch
nacked once comes back with count 1, the limit. The topic is unloaded; 80 ms later, once the
consumer has reconnected, an index of the copy of count 1 is nacked. The client does not
dead-letter it: the reconnect brings the batch again with count 0 (the new dispatcher counts from
0), and the nack's redelivery brings it once more, with count 1. Nothing reaches the dead-letter
topic. The client's record of what it may dead-letter (the copies it received at the limit) does
not outlive the reconnect, so the nack asks for a plain redelivery. Documented (DeadLetterPolicy):
a message redelivered maxRedeliverCount times and nacked again goes to the dead-letter topic; the
broker's count, reset at the reopen, says it was redelivered 0 times since, which the client
follows. Found by the nightly of `multi_topics[Shared-2-dlq1]` with the Python client, on one of its
two topics; the same happens on one topic.
"""

from __future__ import annotations

import pytest

from fixtures.admin import AdminError
from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

m = o.MessageId


@pytest.fixture(scope="module", params=["python", "java"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def _counts(deliveries) -> list[tuple[int, int]]:
    return [(d.message.index, d.redelivery_count) for d in deliveries]


@pytest.mark.guarantee("dead-letter", "no-redelivery-after-ack")
def test_a_copy_at_the_limit_nacked_after_a_reconnect_is_redelivered_not_dead_lettered(client, names):
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, max_redeliver_count=1, nack_delay_ms=100), target)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"),
                          o.Send(keys=(None, None, None), batched=True))
    first = [logged.invoke(o.Receive(consumer="a", timeout_ms=2000)).value for _ in range(3)]
    assert _counts(first) == [(0, 0), (1, 0), (2, 0)]
    logged.invoke(o.NegativeAcknowledge(consumer="a", message=m(0, 2)))
    again = [logged.invoke(o.Receive(consumer="a", timeout_ms=2000)).value for _ in range(3)]
    assert _counts(again) == [(0, 1), (1, 1), (2, 1)]  # the whole batch, at the limit
    logged.invoke(o.Unload())
    logged.invoke(o.Tick(ms=80))  # the consumer has reconnected
    logged.invoke(o.NegativeAcknowledge(consumer="a", message=m(0, 1)))
    mark = len(logged.history)
    received(logged, "a")
    after = [c.value for op, c in logged.history[mark:] if isinstance(op, o.Receive) and c.value is not None]
    assert _counts(after[:3]) == [(0, 0), (1, 0), (2, 0)], after  # the reconnect: the new dispatcher counts from 0
    broker = target.broker
    try:
        dead = broker.admin.messages_in(f"{broker.topic}-{broker.subscription}-DLQ")
    except AdminError:  # never made: nothing was dead-lettered
        dead = 0
    # Either the nack asked for a plain redelivery (the batch once more, counted 1), or the client
    # still had its record and dead-lettered the batch.
    assert (_counts(after[3:]), dead) in (([(0, 1), (1, 1), (2, 1)], 0), ([], 3)), (after, dead)
    assert replay(spec, logged.history, drained=True).step is None
