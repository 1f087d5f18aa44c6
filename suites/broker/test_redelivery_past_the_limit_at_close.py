"""A redelivery request that takes a held message past the dead-letter limit, then the consumer's
close: the message goes to the dead-letter topic only if the copy past the limit reaches a client
first.

With a dead-letter policy (max redeliveries 1), Shared, one consumer: c0 holds m0 received with
count 1, the limit, and asks for it again (`redeliver_unacknowledged_messages`). Neither client
dead-letters at the request: the Java client's ConsumerImpl.redeliverUnacknowledgedMessages() and
the C++ client's (the Python client's) send the request alone; the broker counts m0 to 2 and
dispatches that copy, and the client that receives a copy past the limit sends it to the
dead-letter topic instead of handing it to the application (ConsumerImpl.messageReceived). When c0
closes before the copy lands, nothing dead-letters m0: the broker takes it back with c0, clears its
redelivery tracker (the last consumer left), and the next consumer receives m0 with count 0 while
the dead-letter topic holds nothing. The model lets such a message come back, counted from nothing,
once no consumer is left (model/transitions/redelivery.py, `requested`); before, it took the
request as a dead-letter at once, and the `--client java` runs of
`redelivery_count_and_dead_letter[Shared-dlq1]` reported the copy as a redelivery after an ack.

When the copy lands first, the client dead-letters m0, and a close inside that send may drop the
send's acknowledgement (KD-35: m0 in the dead-letter topic and back) or crash the C++ client
(KD-34): this test tells those runs apart by the dead-letter topic and does not judge them.
"""

from __future__ import annotations

import pulsar
import pytest

from fixtures.targets.driver_target import ClientCrashed
from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.broker.logged import Logged, client_target
from suites.machines import as_run
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

DEAD_LETTER_AT_1 = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100, max_redeliver_count=1)
# From the request to the close: at 0 ms the close most often leaves before the copy past the limit
# lands; later, the copy lands first and is dead-lettered.
CLOSE_AFTER_MS = (0, 0, 0, 1, 0, 0, 1, 0)


@pytest.fixture(scope="module", params=["java", "python"])
def client(request, pulsar_broker):
    yield from client_target(request.param, pulsar_broker)


def asked_past_the_limit_then_closed(client, names, pulsar_client, close_after_ms: int):
    """The program on a fresh topic; its spec, history, what the next consumer received (None:
    nothing), and whether the dead-letter topic holds m0."""
    _, target = client
    spec = as_run(DEAD_LETTER_AT_1, target)
    topic_name = names.topic().rsplit("/", 1)[1]
    letters = pulsar_client.subscribe(f"{target.broker.topic_for(topic_name)}-{target.broker.subscription}-DLQ",
                                      "letters", initial_position=pulsar.InitialPosition.Earliest)
    try:
        target.reset(spec, topic_name)
        logged = Logged(target)
        logged.invoke(o.Subscribe(consumer="c0"))
        logged.invoke(o.Send())
        assert logged.invoke(o.Receive(consumer="c0", timeout_ms=2000)).value.redelivery_count == 0
        logged.invoke(o.RedeliverUnacknowledgedMessages(consumer="c0"))
        held = logged.invoke(o.Receive(consumer="c0", timeout_ms=2000)).value
        assert held is not None and held.redelivery_count == 1, held  # the limit
        logged.invoke(o.RedeliverUnacknowledgedMessages(consumer="c0"))
        if close_after_ms:
            logged.invoke(o.Tick(ms=close_after_ms))
        logged.invoke(o.Close(consumer="c0"))
        logged.invoke(o.Tick(ms=500))
        logged.invoke(o.Subscribe(consumer="c0"))
        back = logged.invoke(o.Receive(consumer="c0", timeout_ms=1500)).value
        try:
            letters.receive(1000)
            dead_lettered = True
        except pulsar.Timeout:
            dead_lettered = False
        return spec, logged.history, back, dead_lettered
    finally:
        letters.close()


@pytest.mark.guarantee("dead-letter")
def test_a_copy_past_the_limit_that_never_reached_the_closed_consumer_comes_back_counted_from_zero(
        client, names, pulsar_client, record_property):
    outcomes = []
    for close_after_ms in CLOSE_AFTER_MS:
        try:
            spec, history, back, dead_lettered = asked_past_the_limit_then_closed(client, names, pulsar_client,
                                                                                  close_after_ms)
        except ClientCrashed:
            outcomes.append((close_after_ms, "KD-34: the client crashed"))
            continue
        outcomes.append((close_after_ms, back and back.redelivery_count, dead_lettered))
        if back is not None and dead_lettered:
            continue  # KD-35: dead-lettered, its acknowledgement dropped by the close; not judged here
        # Either dead-lettered (and gone), or never dead-lettered and back with count 0: both conform.
        assert back is None or (back.message, back.redelivery_count) == (o.MessageId(0), 0), back
        assert replay(spec, history, drained=True).verdict.ok, (close_after_ms, replay(spec, history,
                                                                                        drained=True).verdict)
        if back is not None:
            record_property("back_counted_from_zero_with_close_after_ms", close_after_ms)
            return
    pytest.fail(f"no run's close came before the copy past the limit (close after ms, count back, "
                f"dead-lettered): {outcomes}")
