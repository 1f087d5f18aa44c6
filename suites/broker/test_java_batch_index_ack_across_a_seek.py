"""An acknowledgment still in the client's group when its consumer seeks back (KD-38).

Observed on Pulsar 4.0.7, Shared, batch-index acks on: consumer c0 receives m0 and the batch
m1.0-m1.2, acknowledges m1.0 and at once (the ack still in the client's group, the ack grouping
time being 100 ms) seeks to m0. The seek resets the cursor: what follows m0 is unacknowledged
again (ManagedCursorImpl.resetCursor clears the individual and the batch-index acks), and the
model owes m1.0 once more.

- the Python client (C++ 3.13) gets m1.0, m1.1 and m1.2 again, and so does the next consumer;
- the Java client 4.0.7 never gets m1.0 again, nor does the next consumer: the broker has it as
  acknowledged. The broker closes the consumer before it resets the cursor, so when the seek's
  answer comes the client is not connected and `flushAndClean` sends nothing; it then clears the
  whole-message and cumulative acks it holds but not the batch-index ones
  (PersistentAcknowledgmentsGroupingTracker.flushAndClean), which the consumer sends once it is
  connected again (its ack grouping timer, or the flush ConsumerImpl.connectionOpened does during a
  seek): they land after the reset. A
  whole-message ack pending at the same moment is dropped, and its message comes again.

The same ack flushed before the seek (400 ms later) is undone by it with the Java client too.
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


@pytest.fixture(scope="module", params=["java", "python"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def _acked_then_sought(client, names, acked: o.MessageId, *, wait_ms: int = 0, grouping_ms: int = 100):
    """c0 receives m0, the batch m1.0-m1.2 and m2, acknowledges `acked`, seeks to m0 (after
    `wait_ms`) and drains; then c0 closes and c1 drains. The spec, the history, and what each got.
    A grouping time of seconds keeps the ack in the client's group at the seek on a loaded machine
    too (with 100 ms, CI once saw the group flushed before the seek)."""
    name, target = client
    spec = as_run(Spec(subscription_type=SubscriptionType.SHARED, client_batch_index_ack=True,
                       ack_grouping_ms=grouping_ms), target)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="c0"), o.Send(),
                          o.Send(keys=(None, None, None), batched=True), o.Send())
    assert received(logged, "c0") == [m(0), m(1, 0), m(1, 1), m(1, 2), m(2)]
    assert logged.invoke(o.Acknowledge(consumer="c0", message=acked)).outcome is o.Outcome.OK
    if wait_ms:
        logged.invoke(o.Tick(ms=wait_ms))
    assert logged.invoke(o.Seek(consumer="c0", message=m(0))).outcome is o.Outcome.OK
    seeker = received(logged, "c0")
    logged.invoke(o.Close(consumer="c0"))
    logged.invoke(o.Subscribe(consumer="c1"))
    return spec, logged, seeker, received(logged, "c1")


@pytest.mark.guarantee("no-loss")
def test_kd38_a_batch_index_ack_pending_at_a_seek_outlives_it_with_the_java_client(client, names):
    spec, logged, seeker, next_one = _acked_then_sought(client, names, m(1, 0),
                                                        grouping_ms=3000 if client[0] == "java" else 100)
    replayed = replay(spec, logged.history, drained=True)
    if client[0] == "java":
        assert (seeker, next_one) == ([m(1, 1), m(1, 2), m(2)], [m(0), m(1, 1), m(1, 2), m(2)])
        assert replayed.verdict.violation.guarantee.value == "no-loss"
        assert "m1.0" in replayed.verdict.violation.detail
    else:
        assert (seeker, next_one) == ([m(1, 0), m(1, 1), m(1, 2), m(2)], [m(0), m(1, 0), m(1, 1), m(1, 2), m(2)])
        assert replayed.step is None


@pytest.mark.parametrize("client", ["java"], indirect=True)
@pytest.mark.guarantee("no-loss")
def test_a_whole_message_ack_pending_at_the_same_moment_is_undone_by_the_seek(client, names):
    spec, logged, seeker, next_one = _acked_then_sought(client, names, m(2), grouping_ms=3000)
    assert (seeker, next_one) == ([m(1, 0), m(1, 1), m(1, 2), m(2)], [m(0), m(1, 0), m(1, 1), m(1, 2), m(2)])
    assert replay(spec, logged.history, drained=True).step is None


@pytest.mark.parametrize("client", ["java"], indirect=True)
@pytest.mark.guarantee("no-loss")
def test_the_batch_index_ack_flushed_before_the_seek_is_undone_by_it(client, names):
    spec, logged, seeker, next_one = _acked_then_sought(client, names, m(1, 0), wait_ms=400)
    assert (seeker, next_one) == ([m(1, 0), m(1, 1), m(1, 2), m(2)], [m(0), m(1, 0), m(1, 1), m(1, 2), m(2)])
    assert replay(spec, logged.history, drained=True).step is None
