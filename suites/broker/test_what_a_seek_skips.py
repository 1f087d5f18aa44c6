"""What the seeking consumer skips, and whether the next consumer gets it.

Observed on Pulsar 4.0.7, Shared: consumer c0 receives the batch m0.0-m0.2, m1 and m2, seeks, and
receives again; then c0 closes and c1 subscribes. Every client skips the seek's target (and, for
a batch, the indexes up to it) as before its start message id. What the subscription keeps of
them differs:

- the Python client (C++ 3.13) and the Java client only skip them: c1 gets the target (the
  model's rule, test_fidelity_broker::test_seek_skips_the_target_for_the_seeking_consumer_and_keeps_it_for_the_next);
- the Go client v0.21.0 acknowledges them (partitionConsumer.MessageReceived:
  messageShouldBeDiscarded, then AckID): c1 never gets the target, nor, with batch-index acks, the
  indexes up to it; without them the batch's ack waits for its last index, which nothing
  acknowledged, and c1 gets the whole batch. Its driver declares `seek_acks_skipped`, and the
  model checks it with `spec.seek_acks_skipped` (model/transitions/reopen.py).

Each client's history is checked by the model with the spec its run is checked against
(suites/machines.as_run), and, where the rules differ, refused with the other rule.
"""

from __future__ import annotations

import pytest

from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.broker.logged import Logged, client_target, received
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

m = o.MessageId
EVERYTHING = [m(0, 0), m(0, 1), m(0, 2), m(1), m(2)]
# (seek target, batch-index acks) -> client -> what c1 gets after the seeking c0 closed
NEXT = {
    (m(1), False): {"python": [m(1), m(2)], "java": [m(1), m(2)], "go": [m(2)]},
    (m(0, 1), True): {"python": EVERYTHING, "java": EVERYTHING[1:], "go": EVERYTHING[2:]},
    (m(0, 1), False): {"python": EVERYTHING, "java": EVERYTHING[1:], "go": EVERYTHING},
}


@pytest.fixture(scope="module", params=["python", "java", "go"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


@pytest.mark.parametrize(("target_id", "batch_index_ack"), list(NEXT), ids=["m1", "m0.1-batch-index-ack", "m0.1"])
@pytest.mark.guarantee("no-loss")
def test_the_next_consumer_gets_what_the_seeker_skipped_unless_its_client_acknowledged_it(
        client, target_id, batch_index_ack, names):
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, client_batch_index_ack=batch_index_ack), target)
    assert spec.seek_acks_skipped is (name == "go")
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="c0"),
                          o.Send(keys=(None, None, None), batched=True), o.Send(), o.Send())
    assert received(logged, "c0") == EVERYTHING
    assert logged.invoke(o.Seek(consumer="c0", message=target_id)).outcome is o.Outcome.OK
    assert received(logged, "c0") == [i for i in EVERYTHING if i > target_id]
    logged.invoke(o.Close(consumer="c0"))
    logged.invoke(o.Subscribe(consumer="c1"))
    got = received(logged, "c1")
    assert got == NEXT[(target_id, batch_index_ack)][name]
    assert replay(spec, logged.history, drained=True).step is None
    if got != NEXT[(target_id, batch_index_ack)]["python"] and name != "java":
        # Only the rule of a client that acknowledges what it skips allows the target to be missing.
        assert replay(spec.with_(seek_acks_skipped=False), logged.history, drained=True).step is not None
