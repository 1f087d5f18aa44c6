"""The model's rules, checked on the real broker: each test runs a short program on Pulsar in
lock-step with the model (which must accept every observation) and states the rule observed.

Where Pulsar's documents and sources leave a rule open, these tests settle it. Timings are kept
short: nack delays of 200 ms (the client's minimum is 100 ms).
"""

import dataclasses
import time

import pulsar
import pytest

from fixtures.targets.lockstep import Lockstep
from model import ops as o
from model.spec import InitialPosition, Spec, SubscriptionType

pytestmark = pytest.mark.broker

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=200)
EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE, nack_delay_ms=200)
m = o.MessageId
QUEUED_COPY_RUNS = 5


_RECORDING = []  # the test's `observed` wrapper: each program is kept as an observation of the broker


@pytest.fixture(autouse=True)
def _recorded(observed):
    _RECORDING[:] = [observed]
    yield
    _RECORDING.clear()


def _program(pulsar_target, names, spec):
    target = _RECORDING[0](pulsar_target) if _RECORDING else pulsar_target
    return Lockstep(target, spec, names.topic().rsplit("/", 1)[1])


def _publish(run, count):
    for _ in range(count):
        run.do(o.Send())


@pytest.mark.guarantee("redelivery-count")
def test_shared_nack_comes_back_after_the_delay_with_redelivery_count_one(pulsar_target, names):
    run = _program(pulsar_target, names, SHARED)
    _publish(run, 1)
    run.do(o.Subscribe(consumer="a"))
    assert run.receive("a", timeout_ms=2000) == o.Delivery(message=m(0), redelivery_count=0)
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    assert [(d.message, d.redelivery_count) for d in run.drain("a")] == [(m(0), 1)]


@pytest.mark.guarantee("redelivery-count")
def test_closing_a_shared_consumer_moves_its_held_messages_to_the_others_uncounted(pulsar_target, names):
    """Observed on 4.0.7: the redelivery count does not grow when a consumer's close hands its
    messages to another consumer (a reading of apache/pulsar#5895 suggests +1; the broker says 0)."""
    run = _program(pulsar_target, names, SHARED.with_(receiver_queue_size=1))
    _publish(run, 2)
    run.do(o.Subscribe(consumer="a"))
    held = run.receive("a", timeout_ms=2000)
    run.do(o.Subscribe(consumer="b"))
    run.do(o.Close(consumer="a"))
    got = {(d.message, d.redelivery_count) for d in run.drain("b")}
    assert (held.message, 0) in got


@pytest.mark.guarantee("redelivery-count")
def test_when_the_last_consumer_leaves_the_redelivery_count_starts_again_at_zero(pulsar_target, names):
    run = _program(pulsar_target, names, SHARED)
    _publish(run, 1)
    run.do(o.Subscribe(consumer="a"))
    run.receive("a", timeout_ms=2000)
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    assert [d.redelivery_count for d in run.drain("a")] == [1]
    run.do(o.Close(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    assert [(d.message, d.redelivery_count) for d in run.drain("b")] == [(m(0), 0)]


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_exclusive_redeliver_unacknowledged_rewinds_to_the_first_unacked_message(pulsar_target, names):
    run = _program(pulsar_target, names, EXCLUSIVE)
    _publish(run, 4)
    run.do(o.Subscribe(consumer="a"))
    assert [d.message for d in run.drain("a", idle_ms=500)] == [m(0), m(1), m(2), m(3)]
    run.do(o.Acknowledge(consumer="a", message=m(1)))
    run.do(o.Tick(ms=300))  # let the grouped ack reach the broker before the rewind
    run.do(o.RedeliverUnacknowledgedMessages(consumer="a"))
    assert [(d.message, d.redelivery_count) for d in run.drain("a")] == [(m(0), 0), (m(2), 0), (m(3), 0)]


@pytest.mark.parametrize("client_batch_index_ack, expected", [(False, [m(0, 0), m(0, 1), m(0, 2)]), (True, [m(0, 2)])],
                         ids=["without-batch-index-ack", "with-batch-index-ack"])
@pytest.mark.guarantee("no-redelivery-after-ack")
def test_a_partly_acked_batch_comes_back_whole_unless_batch_index_ack_is_on(
        pulsar_target, names, client_batch_index_ack, expected):
    run = _program(pulsar_target, names, SHARED.with_(client_batch_index_ack=client_batch_index_ack))
    run.do(o.Send(keys=(None, None, None), batched=True))
    run.do(o.Subscribe(consumer="a"))
    assert [d.message for d in run.drain("a", idle_ms=500)] == [m(0, 0), m(0, 1), m(0, 2)]
    run.do(o.Acknowledge(consumer="a", message=m(0, 0)))
    run.do(o.Acknowledge(consumer="a", message=m(0, 1)))
    run.do(o.Close(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    assert [d.message for d in run.drain("b")] == expected


@pytest.mark.guarantee("dead-letter")
def test_dead_letter_policy_lets_the_application_see_max_plus_one_deliveries(pulsar_target, pulsar_client, names):
    run = _program(pulsar_target, names, SHARED.with_(max_redeliver_count=1))
    dead_letters = pulsar_client.subscribe(f"{pulsar_target.topic}-conformance-DLQ", "dlq",
                                           initial_position=pulsar.InitialPosition.Earliest)
    _publish(run, 1)
    run.do(o.Subscribe(consumer="a"))
    assert run.receive("a", timeout_ms=2000).redelivery_count == 0
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    assert [d.redelivery_count for d in run.drain("a")] == [1]
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    assert run.drain("a") == [], "after max_redeliver_count redeliveries it goes to the DLQ"
    assert dead_letters.receive(5000).data() == b"0"


@pytest.mark.guarantee("key-shared-stickiness")
def test_key_shared_keeps_each_key_on_one_consumer(pulsar_target, names):
    run = _program(pulsar_target, names, SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED))
    run.do(o.Subscribe(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    for key in ["k1", "k2", "k3", "k4"] * 3:
        run.do(o.Send(keys=(key,)))
    owners = {}
    for consumer in ("a", "b"):
        while (delivery := run.receive(consumer, timeout_ms=500)) is not None:
            owners.setdefault(delivery.key, set()).add(consumer)
    run.drain()
    assert sorted(owners) == ["k1", "k2", "k3", "k4"]
    assert all(len(consumers) == 1 for consumers in owners.values())


@pytest.mark.guarantee("no-redelivery-after-ack", "no-loss")
def test_an_unload_keeps_acks_and_the_reconnected_consumer_gets_the_unacked_again(pulsar_target, names):
    run = _program(pulsar_target, names, SHARED)
    _publish(run, 3)
    run.do(o.Subscribe(consumer="a"))
    assert len(run.drain("a", idle_ms=500)) == 3
    run.do(o.Acknowledge(consumer="a", message=m(1)))
    run.do(o.Tick(ms=300))
    run.do(o.ReadCursor())
    run.do(o.Unload())
    again = [d.message for d in run.drain("a", idle_ms=1500)]
    assert m(1) not in again


@pytest.mark.guarantee("no-duplicate-without-cause", "redelivery-count")
def test_messages_no_consumer_had_come_once_after_an_unload(pulsar_target, names):
    """No receiver queue held them at the unload: the new dispatcher sends each once, and a nacked
    one comes back after its delay with count 1, once."""
    run = _program(pulsar_target, names, SHARED)
    _publish(run, 3)
    run.do(o.ReadCursor())  # the subscription exists (the harness made it), no consumer is connected
    run.do(o.Unload())
    run.do(o.Subscribe(consumer="a"))
    assert [d.message for d in run.drain("a", idle_ms=500)] == [m(0), m(1), m(2)]
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    assert [(d.message, d.redelivery_count) for d in run.drain("a", idle_ms=1000)] == [(m(0), 1)]


@pytest.mark.guarantee("ack")
def test_a_failover_standby_may_acknowledge_cumulatively_for_the_subscription(pulsar_target, names):
    """Open question D1: acks belong to the subscription, not to a consumer. Observed on 4.0.7: a
    cumulative ack sent by the standby of a Failover subscription moves markDeletePosition."""
    run = _program(pulsar_target, names, Spec(subscription_type=SubscriptionType.FAILOVER))
    run.do(o.Subscribe(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    _publish(run, 5)
    received = {}
    for consumer in ("a", "b"):
        while (delivery := run.receive(consumer, timeout_ms=1500)) is not None:
            received[delivery.message] = consumer
    assert len(received) == 5 and len(set(received.values())) == 1, "one active consumer got everything"
    standby = "b" if received[m(0)] == "a" else "a"
    # The standby acks a message it never received, by the id the active consumer got.
    pulsar_target._consumers[standby].acknowledge_cumulative(pulsar_target._received[m(2)])
    run.do(o.Tick(ms=300))
    cursor = pulsar_target.ground_truth()
    assert cursor.mark_delete == 2


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_a_nack_comes_back_between_the_delay_and_a_third_of_it_later(pulsar_target, names):
    """Open question D5: C++ NegativeAcksTracker ticks every delay/3. Observed on 4.0.7 / C++ 4.2.0
    with a 300 ms delay: the message is back after 300-400 ms."""
    run = _program(pulsar_target, names, SHARED.with_(nack_delay_ms=300))
    _publish(run, 1)
    run.do(o.Subscribe(consumer="a"))
    run.receive("a", timeout_ms=2000)
    nacked_at = run.do(o.NegativeAcknowledge(consumer="a", message=m(0))).at
    back = run.do(o.Receive(consumer="a", timeout_ms=2000))
    assert isinstance(back.value, o.Delivery)
    assert 300 <= back.at - nacked_at <= 400 + 400  # the window, plus dispatch on a loaded machine


@pytest.mark.parametrize("spec", [EXCLUSIVE, SHARED], ids=["Exclusive", "Shared"])
@pytest.mark.parametrize("batched", [False, True], ids=["single", "batch"])
@pytest.mark.guarantee("cursor", "no-loss")
def test_seek_skips_the_target_for_the_seeking_consumer_and_keeps_it_for_the_next(pulsar_target, names, spec, batched):
    """Observed on 4.0.7 with the Python client: seek(m) resets the cursor to m's entry, but the
    seeking consumer receives only what follows m (its client drops m as before its start message
    id, and for a batch the indexes up to m). A consumer that comes after it gets m again."""
    run = _program(pulsar_target, names, spec)
    run.do(o.Subscribe(consumer="a"))
    if batched:
        run.do(o.Send(keys=(None, None, None), batched=True))
        target, after, skipped = m(0, 1), [m(0, 2)], [m(0, 0), m(0, 1)]
    else:
        _publish(run, 3)
        target, after, skipped = m(1), [m(2)], [m(1)]
    run.drain("a", idle_ms=500)
    run.do(o.Seek(consumer="a", message=target))
    assert [d.message for d in run.drain("a")] == after
    run.do(o.Close(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    assert [d.message for d in run.drain("b")] == skipped + after


@pytest.mark.parametrize("spec", [EXCLUSIVE, SHARED], ids=["Exclusive", "Shared"])
@pytest.mark.guarantee("cursor")
def test_seek_to_a_batch_index_forgets_the_batch_index_acks_of_its_entry(pulsar_target, names, spec):
    """Observed on 4.0.7 with batch-index acks on (broker and client): m0.0 and m0.2 acked and
    flushed, then seek(m0.1): the broker keeps none of the entry's acked indexes; the seeking
    consumer receives only what follows m0.1, and the next consumer the whole batch again."""
    run = _program(pulsar_target, names, spec.with_(client_batch_index_ack=True))
    run.do(o.Subscribe(consumer="a"))
    run.do(o.Send(keys=(None, None, None), batched=True))
    run.do(o.Send())
    assert [d.message for d in run.drain("a", idle_ms=500)] == [m(0, 0), m(0, 1), m(0, 2), m(1)]
    run.do(o.Acknowledge(consumer="a", message=m(0, 0)))
    run.do(o.Acknowledge(consumer="a", message=m(0, 2)))
    run.do(o.Seek(consumer="a", message=m(0, 1)))
    assert [d.message for d in run.drain("a")] == [m(0, 2), m(1)]
    run.do(o.Close(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    assert [d.message for d in run.drain("b")] == [m(0, 0), m(0, 1), m(0, 2), m(1)]


@pytest.mark.parametrize(("queue", "batched", "kept"), [(2, False, 2), (5, False, 5), (1, True, 3), (5, True, 6)],
                         ids=["queue-2", "queue-5", "queue-1-batches", "queue-5-batches"])
@pytest.mark.guarantee("receiver-queue")
def test_an_idle_shared_consumer_keeps_only_its_receiver_queue(pulsar_target, names, queue, batched, kept):
    """Observed on 4.0.7: with c0 idle and c1 draining, c0's receiver queue kept at most
    receiver_queue_size messages, or whole batch entries until the size was reached (one entry of
    3 for size 1); everything else came to c1, and the rest to c0 once it received."""
    run = _program(pulsar_target, names, SHARED.with_(receiver_queue_size=queue))
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.Subscribe(consumer="c1"))
    for _ in range(6):
        run.do(o.Send(keys=(None, None, None), batched=True) if batched else o.Send())
    total = 18 if batched else 6
    time.sleep(0.3)  # let the broker fill c0's queue first
    to_c1 = len(run.drain("c1", idle_ms=500))  # the model checks the bound as the drain ends
    assert to_c1 >= total - kept
    assert len(run.drain("c0", idle_ms=500)) == total - to_c1


@pytest.mark.guarantee("receiver-queue")
def test_a_consumer_given_redeliveries_may_take_more_than_one_batch_past_its_receiver_queue(pulsar_target, names):
    """Observed on 4.0.7: a close hands back entries of 3, 3, 1, 1 and 3 messages; a consumer
    with a receiver queue of 3 that subscribes takes the first two entries whole (6 messages)
    before another consumer drains the rest: one batch past the queue size is not the bound. The
    broker turns permits into entries at one message per entry for a new consumer (its average
    is 0), so the model bounds an idle queue in entries: at most receiver_queue_size of them."""
    run = _program(pulsar_target, names, SHARED.with_(receiver_queue_size=3))
    run.do(o.Subscribe(consumer="c0"))
    for keys in ((None, None, None), (None, None, None), (None,), (None,), (None, None, None)):
        run.do(o.Send(keys=keys, batched=len(keys) > 1))
    assert len(run.drain("c0", idle_ms=500)) == 11
    run.do(o.Close(consumer="c0"))  # nothing acked: every entry comes back
    run.do(o.Subscribe(consumer="c0"))
    time.sleep(0.3)  # let the broker fill c0's queue first
    run.do(o.Subscribe(consumer="c1"))
    to_c1 = run.drain("c1", idle_ms=500)  # the model checks the bound as the drain ends
    assert sorted(str(d.message) for d in to_c1) == ["m2", "m3", "m4.0", "m4.1", "m4.2"]
    assert len(run.drain("c0", idle_ms=500)) == 6


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_each_exclusive_rewind_on_its_way_delivers_the_backlog_once_more(pulsar_target, names):
    """Observed on 4.0.7: on Exclusive a nack rewinds the whole subscription after the delay; two
    nacks before the first rewind landed deliver the unacknowledged backlog twice more (three
    copies in all, a message sent after the nacks included)."""
    run = _program(pulsar_target, names, EXCLUSIVE.with_(nack_delay_ms=100))
    run.do(o.Subscribe(consumer="a"))
    _publish(run, 1)
    run.receive("a", timeout_ms=2000)
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    run.do(o.Tick(ms=20))
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    _publish(run, 1)
    run.do(o.Tick(ms=300))
    got = [d.message for d in run.drain("a")]
    assert got.count(m(1)) >= 2, got


@pytest.mark.guarantee("cursor", "no-redelivery-after-ack")
def test_a_subscription_at_latest_starts_after_the_last_published_entry(pulsar_target, names):
    """Observed on 4.0.7: the subscription is created by its first consumer; at Latest its
    markDeletePosition is the last entry published before, and a later consumer changes nothing."""
    run = _program(pulsar_target, names, SHARED.with_(initial_position=InitialPosition.LATEST))
    _publish(run, 2)
    run.do(o.Subscribe(consumer="a"))
    _publish(run, 1)
    assert [d.message for d in run.drain("a")] == [m(2)]
    assert run.do(o.ReadCursor()).value.mark_delete == 1
    run.do(o.Close(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    assert [d.message for d in run.drain("b")] == [m(2)]


@pytest.mark.guarantee("no-duplicate-without-cause", "no-loss")
def test_the_failover_active_consumer_is_not_the_first_to_subscribe_but_a_hash_of_the_names(pulsar_target, names):
    """Observed on 4.0.7 (non-partitioned topic): the active consumer is picked from the connected
    consumers' names by a hash ring, not by subscription order; a join may move what the active
    consumer held to the new pick. The model allows any pick after a join or leave."""
    run = _program(pulsar_target, names, Spec(subscription_type=SubscriptionType.FAILOVER))
    run.do(o.Subscribe(consumer="c0"))
    _publish(run, 1)
    assert run.receive("c0", timeout_ms=2000).message == m(0)
    run.do(o.Subscribe(consumer="c1"))
    run.do(o.Subscribe(consumer="c2"))
    _publish(run, 1)
    run.do(o.Tick(ms=1200))
    got = {consumer: [d.message for d in run.drain(consumer, idle_ms=500)] for consumer in ("c0", "c1", "c2")}
    run.drain()
    assert sum(m(1) in messages for messages in got.values()) == 1, got


@pytest.mark.guarantee("receiver-queue")
def test_a_zero_queue_consumer_is_sent_a_message_only_when_it_asks(pulsar_target, names):
    """receiver_queue_size=0 (ZeroQueueConsumerImpl): no prefetch; each receive sends one permit.
    With two Shared consumers, the first one's receive takes m0 only, so m1 is there for the
    second one, and nothing sits in a queue when the first one closes."""
    run = _program(pulsar_target, names, SHARED.with_(receiver_queue_size=0))
    run.do(o.Subscribe(consumer="a"))
    run.do(o.Subscribe(consumer="b"))
    _publish(run, 2)
    assert run.receive("a", timeout_ms=2000).message == m(0)
    assert run.receive("b", timeout_ms=2000).message == m(1)
    run.do(o.Acknowledge(consumer="a", message=m(0)))
    run.do(o.Close(consumer="a"))
    assert run.drain("b") == []


@pytest.mark.guarantee("no-loss")
def test_the_project_broker_pauses_a_failover_switch_for_the_time_the_suite_assumes(pulsar_target, names):
    """activeConsumerFailoverDelayTimeMillis is 100 on the project's broker (Pulsar's default is
    1000): a new Failover subscription's consumer gets its first message within the 200 ms the
    suite's Failover specs allow, and a spec that assumes less than the broker's pause is refused."""
    from fixtures.targets.pulsar_target import BrokerSettingsError
    from suites.conformance.catalog import FAILOVER

    run = _program(pulsar_target, names, FAILOVER)
    _publish(run, 1)
    run.do(o.Subscribe(consumer="a"))
    started = time.monotonic()
    assert run.receive("a", timeout_ms=2000) is not None
    assert time.monotonic() - started < FAILOVER.failover_delay_ms / 1000 + 0.3
    with pytest.raises(BrokerSettingsError, match="activeConsumerFailoverDelayTimeMillis is 100, the spec assumes at most 50"):
        _program(pulsar_target, names, FAILOVER.with_(failover_delay_ms=50))


@pytest.mark.slow
@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
@pytest.mark.guarantee("no-duplicate-without-cause")
def test_an_ack_timeout_on_exclusive_or_failover_brings_back_every_unacked_message(pulsar_target, names, kind):
    """Observed on 4.0.7 (found by ack_timeout[Exclusive]): when one message's ack timeout fires on
    an Exclusive or Failover subscription, the client asks for everything unacknowledged again
    (the C++ client turns the timed-out ids into a whole redeliverUnacknowledgedMessages for
    these types), so a message received later comes back with it, long before its own timeout."""
    run = _program(pulsar_target, names, Spec(subscription_type=kind, ack_timeout_ms=10_000, failover_delay_ms=200))
    run.do(o.Subscribe(consumer="a"))
    _publish(run, 1)
    assert run.receive("a", timeout_ms=2000).message == m(0)
    received = time.monotonic()
    run.do(o.Tick(ms=8000))
    _publish(run, 1)
    assert run.receive("a", timeout_ms=2000).message == m(1)
    back = [run.receive("a", timeout_ms=5000), run.receive("a", timeout_ms=5000)]
    assert [d.message for d in back if d is not None] == [m(0), m(1)], back
    # m1's own timeout (10 s, the Python client's minimum) would fire 18 s after m0 came
    assert time.monotonic() - received < 13.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", [SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER])
@pytest.mark.guarantee("no-duplicate-without-cause")
def test_a_message_back_from_an_ack_timeout_rewind_waits_its_own_timeout(pulsar_target, names, kind):
    """Observed on 4.0.7: m0's ack timeout brought back m0 and m1 together (Exclusive or Failover:
    a rewind of everything unacknowledged, which clears the client's UnAckedMessageTracker); once
    received again, neither came back before its own timeout, 10 s later, though each was
    received while the other's window was open."""
    run = _program(pulsar_target, names, Spec(subscription_type=kind, ack_timeout_ms=10_000, failover_delay_ms=200))
    run.do(o.Subscribe(consumer="a"))
    _publish(run, 1)
    assert run.receive("a", timeout_ms=2000).message == m(0)
    run.do(o.Tick(ms=5000))
    _publish(run, 1)
    assert run.receive("a", timeout_ms=2000).message == m(1)
    back = [run.receive("a", timeout_ms=8000), run.receive("a", timeout_ms=2000)]
    assert [d.message for d in back if d is not None] == [m(0), m(1)], back
    again = time.monotonic()
    assert run.receive("a", timeout_ms=8000) is None
    later = [run.receive("a", timeout_ms=5000), run.receive("a", timeout_ms=2000)]
    assert [d.message for d in later if d is not None] == [m(0), m(1)], later
    assert time.monotonic() - again >= 9.5


class _FirstDeliveryRepliedLate:
    """A target whose first delivery reaches the suite `late_ms` after the client handed it out (a
    driver's reply on a loaded machine): the receive is stamped then."""

    def __init__(self, target, late_ms: int) -> None:
        self.target, self.late_ms, self.name, self.late = target, late_ms, target.name, True

    def reset(self, spec, program_id):
        self.target.reset(spec, program_id)

    def invoke(self, op):
        completion = self.target.invoke(op)
        if self.late and isinstance(op, o.Receive) and completion.value is not None:
            self.late = False
            time.sleep(self.late_ms / 1000)
            completion = dataclasses.replace(completion, at=completion.at + self.late_ms)
        return completion

    def ground_truth(self):
        return self.target.ground_truth()


@pytest.mark.slow
@pytest.mark.guarantee("no-duplicate-without-cause")
def test_an_ack_timeout_counts_from_the_receive_not_from_its_late_reply(pulsar_target, names):
    """Observed on 4.0.7 (Shared, ack timeout 10 s, the tracker's tick 1 s): with the receive's
    reply stamped 1.5 s after the client handed m0 out, m0 came back 8.5 to 9.5 s after that stamp:
    the client's UnAckedMessageTracker counts from the hand-out, which the model takes as no
    earlier than the op before the receive."""
    late = 1500
    target = _RECORDING[0](pulsar_target) if _RECORDING else pulsar_target
    run = Lockstep(_FirstDeliveryRepliedLate(target, late), Spec(subscription_type=SubscriptionType.SHARED,
                   ack_timeout_ms=10_000), names.topic().rsplit("/", 1)[1])
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.Send())
    first = run.do(o.Receive(consumer="c0", timeout_ms=5000))
    assert first.value.message == m(0)
    back = run.do(o.Receive(consumer="c0", timeout_ms=15_000))
    assert back.value == o.Delivery(message=m(0), redelivery_count=1)
    assert back.at - first.at < 10_000, f"back {back.at - first.at} ms after the late stamp"


@pytest.mark.guarantee("no-redelivery-after-ack", "redelivery-count")
def test_a_nack_leaves_out_the_batch_indexes_acked_at_the_broker(pulsar_target, names):
    """Observed on 4.0.7 (Shared, batch-index acks on both sides): m0.0 acked and flushed by a's
    close, b received m0.1 and m0.2 and nacked m0.1: the entry came back counted with m0.1 and
    m0.2 only, never m0.0. A nack brings back an entry's indexes except those the broker has acked."""
    run = _program(pulsar_target, names, SHARED.with_(client_batch_index_ack=True))
    run.do(o.Send(keys=(None, None, None), batched=True))
    run.do(o.Subscribe(consumer="a"))
    assert [d.message for d in run.drain("a", idle_ms=500)] == [m(0, 0), m(0, 1), m(0, 2)]
    run.do(o.Acknowledge(consumer="a", message=m(0, 0)))
    run.do(o.Close(consumer="a"))  # flushes the ack: the broker has index 0 as acked
    run.do(o.Subscribe(consumer="b"))
    assert [(d.message, d.redelivery_count) for d in run.drain("b", idle_ms=500)] == [(m(0, 1), 0), (m(0, 2), 0)]
    run.do(o.Subscribe(consumer="c"))
    run.do(o.NegativeAcknowledge(consumer="b", message=m(0, 1)))
    back = [(d.message, d.redelivery_count) for d in run.drain(idle_ms=1500)]
    assert m(0, 0) not in [message for message, _ in back], back
    assert (m(0, 1), 1) in back, back


@pytest.mark.parametrize("cause", ["nack", pytest.param("ack-timeout", marks=pytest.mark.slow)])
@pytest.mark.guarantee("order", "redelivery-count")
def test_queued_indexes_of_a_redelivered_batch_come_back_with_it_after_later_entries(pulsar_target, names, cause):
    """Observed on 4.0.7 (Shared, no batch-index acks): c2 received m0.0 of a batch (m0.1 and m0.2
    stayed in its receiver queue, which had no permits left) and nacked it, or let its ack timeout
    fire; m1 and m2 went to c0 meanwhile; then the entry came back whole to c0 with count 1, m0.1
    and m0.2 included, though they had never reached an application: not first deliveries in
    publish order but redeliveries. c2's client still handed out its queued copies, with count 0."""
    spec = SHARED.with_(receiver_queue_size=1, nack_delay_ms=1000)
    run = _program(pulsar_target, names, spec.with_(ack_timeout_ms=10_000) if cause == "ack-timeout" else spec)
    run.do(o.Subscribe(consumer="c2"))
    run.do(o.Send(keys=(None, None, None), batched=True))
    assert run.receive("c2", timeout_ms=2000) == o.Delivery(message=m(0, 0), redelivery_count=0)
    run.do(o.Subscribe(consumer="c0"))
    if cause == "nack":
        run.do(o.NegativeAcknowledge(consumer="c2", message=m(0, 0)))
    _publish(run, 2)
    for later in (m(1), m(2)):
        assert run.receive("c0", timeout_ms=500).message == later
        run.do(o.Acknowledge(consumer="c0", message=later))
    run.do(o.Tick(ms=1500 if cause == "nack" else 11_500))
    assert [(d.message, d.redelivery_count) for d in run.drain("c0")] == [(m(0, 0), 1), (m(0, 1), 1), (m(0, 2), 1)]
    assert [(d.message, d.redelivery_count) for d in run.drain("c2")] == [(m(0, 1), 0), (m(0, 2), 0)]


@pytest.mark.parametrize("spec", [EXCLUSIVE, SHARED], ids=["Exclusive", "Shared"])
@pytest.mark.guarantee("no-duplicate-without-cause", "redelivery-count")
def test_a_nack_pending_at_an_unload_is_asked_again_of_the_new_dispatcher(pulsar_target, names, spec):
    """Observed on 4.0.7 with the Python client: a nack whose delay is still running when the
    topic is unloaded is not forgotten. The reconnected consumer gets the message from the new
    dispatcher (count 0), then its client's nack timer fires and asks for it again on the new
    connection: a second copy (on Shared counted 1 by the new dispatcher's tracker; on Exclusive
    brought by a rewind)."""
    run = _program(pulsar_target, names, spec.with_(nack_delay_ms=1500))
    run.do(o.Subscribe(consumer="a"))
    _publish(run, 1)
    run.receive("a", timeout_ms=2000)
    run.do(o.NegativeAcknowledge(consumer="a", message=m(0)))
    run.do(o.Unload())
    # Taken before the delay ends: on Exclusive the rewind clears the client's receiver queue.
    first = run.receive("a", timeout_ms=1000)
    run.do(o.Tick(ms=1500))
    again = run.drain("a", idle_ms=1500)
    expected_count = 1 if spec.subscription_type is SubscriptionType.SHARED else 0
    assert (first, again) == (o.Delivery(message=m(0), redelivery_count=0),
                              [o.Delivery(message=m(0), redelivery_count=expected_count)])


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause")
def test_a_nack_of_a_queued_copy_whose_entry_went_to_another_consumer_is_ignored(pulsar_target, names):
    """Observed on 4.0.7 with the Python client: c1 nacks one message of a batch, and the broker
    redelivers the whole entry to c0 (c1, with a receiver queue of 1, has no permits left). c1
    then takes the entry's other messages from its receiver queue (count 0) and nacks one of
    them: its client asks for the entry again, the broker has it pending on c0, not on c1, and
    ignores the request. Nothing comes back while c0 holds the entry."""
    run = _program(pulsar_target, names, SHARED.with_(receiver_queue_size=1, nack_delay_ms=300))
    run.do(o.Subscribe(consumer="c1"))
    run.do(o.Send(keys=(None, None, None), batched=True))
    assert run.receive("c1", timeout_ms=2000) == o.Delivery(message=m(0, 0), redelivery_count=0)
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.NegativeAcknowledge(consumer="c1", message=m(0, 0)))
    run.do(o.Tick(ms=600))
    queued = [run.receive("c1", timeout_ms=500) for _ in range(2)]
    run.do(o.NegativeAcknowledge(consumer="c1", message=m(0, 1)))
    elsewhere = [run.receive("c0", timeout_ms=200) for _ in range(3)]
    run.do(o.Tick(ms=800))
    assert (queued, elsewhere) == ([o.Delivery(message=m(0, i), redelivery_count=0) for i in (1, 2)],
                                   [o.Delivery(message=m(0, i), redelivery_count=1) for i in range(3)])
    assert run.drain() == []


def _acked_then_asked_back(pulsar_target, names, kind: SubscriptionType) -> Lockstep:
    """c0 receives m0 and m1 (one key), c1 subscribes, c0 acknowledges both and at once asks for
    a redelivery: the acks are still in its client's group."""
    run = _program(pulsar_target, names, SHARED.with_(subscription_type=kind))
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.Send(keys=("k",)))
    run.do(o.Send(keys=("k",)))
    assert [run.receive("c0", timeout_ms=2000).message for _ in range(2)] == [m(0), m(1)]
    run.do(o.Subscribe(consumer="c1"))
    run.do(o.Acknowledge(consumer="c0", message=m(0)))
    run.do(o.Acknowledge(consumer="c0", message=m(1)))
    run.do(o.RedeliverUnacknowledgedMessages(consumer="c0"))
    return run


@pytest.mark.parametrize("kind", [SubscriptionType.SHARED, SubscriptionType.KEY_SHARED], ids=["Shared", "Key_Shared"])
@pytest.mark.guarantee("no-redelivery-after-ack", "redelivery-count")
def test_a_redeliver_brings_back_what_the_ack_grouping_has_not_flushed_yet(pulsar_target, names, kind):
    """Observed on 4.0.7 with the Python client: c0 acknowledges m0 and m1 and at once asks for a
    redelivery. The acks wait in the client's group (100 ms); the request goes out before them,
    and the broker redelivers what it has pending on c0, counted (on Shared the ack that lands
    before a copy is dispatched clears its count: 0). The copies went to c1, which joined after c0
    received both (c0's client drops copies of what it acknowledged: its grouping tracker's
    duplicates). The acks land after; nothing more comes. Until a run's copies go to c1 (on Key_Shared
    the key's hash may be c0's: then none do)."""
    for _ in range(QUEUED_COPY_RUNS):  # until a run's copies go to c1, not to c0 (whose client drops them)
        run = _acked_then_asked_back(pulsar_target, names, kind)
        again = [d for d in (run.receive("c1", timeout_ms=1000) for _ in range(2)) if d]
        assert {d.message for d in again} <= {m(0), m(1)}
        assert all(d.redelivery_count in (0, 1) for d in again)
        assert run.drain() == []
        if again:
            return
    pytest.fail(f"no copy came to c1 in {QUEUED_COPY_RUNS} runs")


@pytest.mark.guarantee("redelivery-count")
def test_a_copy_queued_before_an_unload_keeps_its_count_though_its_ack_is_persisted(pulsar_target, names):
    """Observed on 4.0.7 with the Python client: as above, c0's redeliver sends copies of m0 and
    m1 to c1's receiver queue before c0's acks land; c0's close flushes the acks, and the topic
    is unloaded. c1 still hands out the queued copies with the count they were dispatched with
    (1, or 0 when the ack landed before the dispatch), although the acks are in the cursor and
    the new dispatcher never sends them. Until a copy of count 1 shows it (2 of 3 runs)."""
    seen = []
    for _ in range(QUEUED_COPY_RUNS):
        run = _acked_then_asked_back(pulsar_target, names, SubscriptionType.KEY_SHARED)
        run.do(o.Tick(ms=300))  # the copies reach c1's receiver queue
        run.do(o.Close(consumer="c0"))
        run.do(o.Tick(ms=300))  # the acks the close flushed are applied
        run.do(o.Unload())
        copies = [(d.message, d.redelivery_count) for d in run.drain("c1")]
        assert {message for message, _ in copies} <= {m(0), m(1)}
        assert run.do(o.ReadCursor()).value.mark_delete == 1
        seen.append(copies)
        if any(count == 1 for _, count in copies):
            return
    pytest.fail(f"no queued copy of count 1 came after the unload in {QUEUED_COPY_RUNS} runs: {seen}")


@pytest.mark.guarantee("no-loss", "no-duplicate-without-cause")
def test_a_failover_nack_from_a_consumer_that_is_no_longer_active_is_ignored(pulsar_target, names):
    """PersistentDispatcherSingleActiveConsumer.redeliverUnacknowledgedMessages: "Only the active
    consumer can call resend". After a switch, the consumer that lost the subscription still hands
    out what sat in its receiver queue; a nack of such a copy asks for a rewind the broker ignores,
    so it does not come again, to anyone (the new active consumer got it at the switch). The model
    does not know the broker's pick, so a Failover request made while other consumers are
    connected may be ignored."""
    spec = Spec(subscription_type=SubscriptionType.FAILOVER, nack_delay_ms=100, failover_delay_ms=200)
    for attempt in range(12):  # the broker's hash ring picks the active consumer by name
        run = _program(pulsar_target, names, spec)
        run.do(o.Subscribe(consumer="a"))
        _publish(run, 2)
        assert run.receive("a", timeout_ms=2000).message == m(0)  # m1 waits in a's receiver queue
        newcomer = f"b{attempt}"
        run.do(o.Subscribe(consumer=newcomer))
        run.do(o.Tick(ms=500))  # the switch's pause
        stats = pulsar_target.admin.subscription_stats(pulsar_target.topic, pulsar_target.broker.subscription)
        if stats.active_consumer != newcomer:
            run.do(o.Close(consumer=newcomer))
            continue
        assert [d.message for d in run.drain(newcomer, idle_ms=500)] == [m(0), m(1)]  # the switch's rewind
        assert run.receive("a", timeout_ms=2000).message == m(1)  # a's stale queued copy
        run.do(o.NegativeAcknowledge(consumer="a", message=m(1)))
        run.do(o.Tick(ms=1000))
        assert run.drain() == []  # ignored: m1 comes to neither
        return
    pytest.fail("the newcomer never became the active consumer in 12 tries")
