"""Without batch-index acks, a batch whose messages were acknowledged on different copies of it
is never acknowledged: the client acks the entry once every index of one copy is acked.

Shared, batch-index acks off in the client (the default), one consumer. m0 is a batch of three;
c0 acks m0.0 and m0.2 and nacks m0.1, so the whole entry comes again (the broker keeps no partial
ack of it); c0 receives the three new copies and acks m0.1's. Every message of the batch is acked
once, yet no copy's acker is whole (the C++ client's BatchMessageAcker and the Java client's
BatchMessageIdImpl keep one per copy): the client never sends the entry's ack, the cursor after a
close shows m0 unacknowledged, and the next consumer gets the whole batch again. Acked on one copy,
the batch is acknowledged. The model leaves such an entry's ack open from the moment another
copy reaches the application (model/transitions/receive.py); before, it counted the acks of every
copy together, and the teardown's last look at the cursor (suites.programs.last_look) reported the
entry as an ack the broker lost in `multi_topics[Key_Shared-2]`, with both clients.
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
SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
BATCH = [m(0, i) for i in range(3)]


@pytest.fixture(scope="module", params=["java", "python"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def _batch_acked(client, names, first_copy: list[o.MessageId], second_copy: list[o.MessageId]):
    """m0 received, `first_copy`'s messages acked and m0.1 nacked, the second copy received and
    `second_copy`'s messages acked on it, then a close: the spec, the logged history and the cursor
    read after the close."""
    _, target = client
    spec = as_run(SHARED, target)
    logged = Logged.fresh(target, spec, names, o.Subscribe(consumer="c0"), o.Send(keys=(None,) * 3, batched=True))
    assert received(logged, "c0") == BATCH
    for message in first_copy:
        logged.invoke(o.Acknowledge(consumer="c0", message=message))
    logged.invoke(o.NegativeAcknowledge(consumer="c0", message=BATCH[1]))
    assert received(logged, "c0") == BATCH  # the whole entry again, after the nack delay
    for message in second_copy:
        logged.invoke(o.Acknowledge(consumer="c0", message=message))
    logged.invoke(o.Close(consumer="c0"))
    return spec, logged, logged.invoke(o.ReadCursor()).value


@pytest.mark.guarantee("cursor")
def test_a_batch_acked_on_two_copies_is_never_acknowledged(client, names):
    spec, logged, cursor = _batch_acked(client, names, [BATCH[0], BATCH[2]], [BATCH[1]])
    assert cursor.mark_delete == -1 and not cursor.acknowledged(1), cursor
    logged.invoke(o.Subscribe(consumer="c0"))
    assert received(logged, "c0") == BATCH  # the whole batch comes again
    assert replay(spec, logged.history, drained=True).verdict.ok


@pytest.mark.guarantee("cursor")
def test_a_batch_acked_on_one_copy_is_acknowledged(client, names):
    spec, logged, cursor = _batch_acked(client, names, [], BATCH)
    assert cursor.mark_delete == 0, cursor
    assert replay(spec, logged.history, drained=True).verdict.ok
