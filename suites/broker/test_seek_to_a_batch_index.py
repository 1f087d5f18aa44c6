"""A seek to an index of a batch, then another consumer: where the clients differ.

Observed on Pulsar 4.0.7, Shared and Exclusive, a batch m0.0-m0.2 and m1 received by consumer a,
then `seek(m0.1)`, then a closed and b subscribed:

- the Python client (C++ 3.13) sends the seek for the entry only: the broker resets the cursor to
  entry 0, the seeking consumer drops m0.0 and m0.1 itself (before its start message id), and b gets
  the whole batch again (the model's rule, test_fidelity_broker::
  test_seek_skips_the_target_for_the_seeking_consumer_and_keeps_it_for_the_next);
- the Java client 4.0.7 sends the batch index with the seek (ConsumerImpl.seekAsync, an ack set
  with the indexes before it cleared): the broker keeps m0.0 acknowledged for the subscription, and
  b gets m0.1, m0.2 and m1, never m0.0.

The model has the Python client's rule only. No catalog check has a seek followed by another
consumer on a batch (the seek check has neither close nor a client crash), so the conformance
suites do not meet the difference; a check that does (a seek in the dead-letter checks) needs the
Java rule first: with it, the Java client's run called an index before a seek's lost.
"""

from __future__ import annotations

import pytest

from fixtures.targets.loader import pulsar_target
from model import ops as o
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

m = o.MessageId
BATCH_AGAIN = {"python": [m(0, 0), m(0, 1), m(0, 2), m(1)], "java": [m(0, 1), m(0, 2), m(1)]}


@pytest.fixture(scope="module", params=sorted(BATCH_AGAIN))
def client(request, pulsar_broker):
    name = request.param
    target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url, controller=pulsar_broker.controller,
                           client=name, version=pulsar_broker.version)
    yield name, target
    target.close()


def _received(target, consumer: str) -> list[o.MessageId]:
    got = []
    while (delivery := target.invoke(o.Receive(consumer=consumer, timeout_ms=1000)).value) is not None:
        got.append(delivery.message)
    return got


@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.EXCLUSIVE], ids=["Shared", "Exclusive"])
@pytest.mark.guarantee("no-loss")
def test_the_next_consumer_after_a_seek_to_a_batch_index_gets_what_the_client_sent_the_seek_for(client, kind, names):
    name, target = client
    target.reset(Spec(subscription_type=kind), names.topic().rsplit("/", 1)[1])
    target.invoke(o.Subscribe(consumer="a"))
    target.invoke(o.Send(keys=(None, None, None), batched=True))
    target.invoke(o.Send())
    assert _received(target, "a") == [m(0, 0), m(0, 1), m(0, 2), m(1)]
    assert target.invoke(o.Seek(consumer="a", message=m(0, 1))).outcome is o.Outcome.OK
    assert _received(target, "a") == [m(0, 2), m(1)]
    target.invoke(o.Close(consumer="a"))
    target.invoke(o.Subscribe(consumer="b"))
    assert _received(target, "b") == BATCH_AGAIN[name]
