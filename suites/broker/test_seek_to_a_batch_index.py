"""A seek to an index of a batch, then another consumer: where the clients differ.

Observed on Pulsar 4.0.7 (`acknowledgmentAtBatchIndexLevelEnabled=true`), Shared and Exclusive, a
batch m0.0-m0.2 and m1 received by consumer a, then `seek(m0.1)`, then a closed and b subscribed:

- the Python client (C++ 3.13) and the Go client send the seek for the entry only: the broker
  resets the cursor to entry 0, the seeking consumer drops m0.0 and m0.1 itself (before its start
  message id), and b gets the whole batch again (the model's rule, test_fidelity_broker::
  test_seek_skips_the_target_for_the_seeking_consumer_and_keeps_it_for_the_next);
- the Java client 4.0.7 sends the batch index with the seek (ConsumerImpl.seekAsync, an ack set
  with the indexes before it cleared): the broker keeps m0.0 acknowledged for the subscription, and
  b gets m0.1, m0.2 and m1, never m0.0. Its driver declares `seek_batch_index`, and the model
  checks it with `spec.seek_sends_batch_index` (model/transitions/reopen.py).

Each client's history is checked by the model with the spec its run is checked against
(suites/machines.as_run), and refused with the other rule: neither rule allows both.
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
BATCH_AGAIN = {"python": [m(0, 0), m(0, 1), m(0, 2), m(1)], "go": [m(0, 0), m(0, 1), m(0, 2), m(1)],
               "java": [m(0, 1), m(0, 2), m(1)]}


@pytest.fixture(scope="module", params=sorted(BATCH_AGAIN))
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def _sought(client, kind, names):
    """Consumer a receives the batch m0.0-m0.2 and m1, seeks to m0.1 and receives again: the spec
    checked and the logged target."""
    name, target = client
    spec = as_run(Spec(subscription_type=kind), target)
    assert spec.seek_sends_batch_index is (name == "java")
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="a"),
                          o.Send(keys=(None, None, None), batched=True), o.Send())
    assert received(logged, "a") == [m(0, 0), m(0, 1), m(0, 2), m(1)]
    assert logged.invoke(o.Seek(consumer="a", message=m(0, 1))).outcome is o.Outcome.OK
    assert received(logged, "a") == [m(0, 2), m(1)]
    return spec, logged


def _then_b(logged, *, reopen: o.Op | None = None) -> list[o.MessageId]:
    """a closes; then (after `reopen`) b subscribes and receives."""
    logged.invoke(o.Close(consumer="a"))
    if reopen is not None:
        assert logged.invoke(reopen).outcome is o.Outcome.OK
    logged.invoke(o.Subscribe(consumer="b"))
    return received(logged, "b")


@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.EXCLUSIVE], ids=["Shared", "Exclusive"])
@pytest.mark.guarantee("no-loss")
def test_the_next_consumer_after_a_seek_to_a_batch_index_gets_what_the_client_sent_the_seek_for(client, kind, names):
    spec, logged = _sought(client, kind, names)
    assert _then_b(logged) == BATCH_AGAIN[client[0]]
    assert replay(spec, logged.history, drained=True).step is None
    other_rule = spec.with_(seek_sends_batch_index=not spec.seek_sends_batch_index)
    assert replay(other_rule, logged.history, drained=True).step is not None


@pytest.mark.parametrize("client", ["java"], indirect=True)  # only its seek acknowledges indexes
@pytest.mark.parametrize(("kind", "reopen"), [(SubscriptionType.SHARED, o.Unload()),
                                              (SubscriptionType.EXCLUSIVE, o.Restart())],
                         ids=["Shared-unload", "Exclusive-restart"])
@pytest.mark.guarantee("no-loss")
def test_a_reopened_topic_forgets_the_indexes_a_seek_acknowledged(client, kind, reopen, names):
    """The Java client's seek acknowledged m0.0 in the broker's memory only: after an unload or a
    restart b gets it again, and the model owes it: a history without it is refused."""
    spec, logged = _sought(client, kind, names)
    assert _then_b(logged, reopen=reopen) == [m(0, 0), m(0, 1), m(0, 2), m(1)]
    assert replay(spec, logged.history, drained=True).step is None
    assert replay(spec, _without(logged.history, "b", m(0, 0)), drained=True).step is not None


@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.EXCLUSIVE], ids=["Shared", "Exclusive"])
@pytest.mark.guarantee("no-loss")
def test_after_a_reopening_the_seeking_consumer_still_skips_what_its_seek_acknowledged(client, kind, names):
    """Every client keeps its seek's message id as its start across a reconnection (the Java and
    C++ ConsumerImpl.clearReceiverQueue return early for a durable subscription) and skips again
    what is not after it: after an unload a gets m0.2 and m1 again, never m0.0 or m0.1, although the
    broker forgot the Java seek's ack set, as b shows. The model accepts it: what a seek's ack set
    acknowledged, a reopened topic owes to every consumer but the one that sought."""
    spec, logged = _sought(client, kind, names)
    assert logged.invoke(o.Unload()).outcome is o.Outcome.OK
    assert received(logged, "a") == [m(0, 2), m(1)]
    assert replay(spec, logged.history, drained=True).step is None  # a drained: nothing it is owed is missing
    assert _then_b(logged) == [m(0, 0), m(0, 1), m(0, 2), m(1)]
    assert replay(spec, logged.history, drained=True).step is None


def _without(history, consumer: str, message: o.MessageId):
    """The history without `consumer`'s receive of `message`."""
    return [(op, c) for op, c in history
            if not (isinstance(op, o.Receive) and op.consumer == consumer and c.value is not None
                    and c.value.message == message)]
