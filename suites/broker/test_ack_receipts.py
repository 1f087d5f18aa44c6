"""Ack receipts (`isAckReceiptEnabled`, `Spec.ack_receipts`): what an acknowledge the broker
answered promises, on the real broker through the Java client's driver, in lock-step with the model.

With receipts the Java client completes an acknowledge only when the broker's CommandAckResponse
for it comes back (PersistentAcknowledgmentsGroupingTracker; ServerCnx.handleAck answers once the
subscription applied the ack). Each test runs one program: ten messages received by an Exclusive
consumer, six of them acknowledged individually (markDeletePosition moves to 2, holes at 5, 6, 8),
every acknowledge `ok`, then one event. What the broker showed on 4.0.7:

- at once: the cursor shows every acknowledged message when the last acknowledge returns;
- a topic unload and a graceful restart keep them: the reconnected consumer gets the four
  unacknowledged messages and none of the others;
- a crash (`kill -9`) may lose them: the receipt says the broker applied the ack in memory, not that
  the cursor was persisted (markDeletePosition is persisted lazily, the individually deleted ranges
  with it), and what the cursor lost is delivered again; the cursor came back with markDeletePosition
  0 only (the first ack), the other five acks lost;
- an acknowledge while the consumer reconnects (right after an unload) returns `ok` in a few ms
  without a receipt: the cursor does not have it then (it had it a second later, once the client
  was back and flushed it).
"""

from __future__ import annotations

import time

import pytest

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.loader import pulsar_target
from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

RECEIPTS = Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_receipts=True)
COUNT = 10
ACKED = (0, 1, 2, 5, 6, 8)
UNACKED = tuple(n for n in range(COUNT) if n not in ACKED)
# A restarted broker takes seconds, tens of them on a loaded machine, and the Java client retries
# with a backoff that doubles up to 60 s (ClientBuilder.maxBackoffInterval). Only a failing run
# waits this long.
RECONNECT_MS = 90_000
m = o.MessageId


@pytest.fixture(scope="module")
def java(pulsar_broker):
    target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url, controller=pulsar_broker.controller,
                           client="java", version=pulsar_broker.version)
    yield target
    target.close()


def _acknowledged_with_receipts(java, observed, names) -> Lockstep:
    """The program up to the event: every acknowledge of ACKED returned `ok`."""
    run = Lockstep(observed(java), RECEIPTS, names.topic().rsplit("/", 1)[1])
    for _ in range(COUNT):
        run.do(o.Send())
    run.do(o.Subscribe(consumer="c0"))
    assert [run.receive("c0", timeout_ms=5000).message for _ in range(COUNT)] == [m(n) for n in range(COUNT)]
    for n in ACKED:
        assert run.do(o.Acknowledge(consumer="c0", message=m(n))).outcome is o.Outcome.OK
    return run


def _acknowledged(cursor) -> tuple[int, ...]:
    return tuple(sorted(cursor.acknowledged(COUNT)))


def _redelivered(run) -> tuple[int, ...]:
    """What c0 gets once its client is back: the first copy (the unacknowledged messages come
    again, so one always comes; the model owes none of them, c0's application holds them, so a
    drain alone would not wait for the reconnect), a drain, then receives until none came for 2 s
    (a copy of an acknowledged message would come in entry order with the others)."""
    got, deadline = [], time.monotonic() + RECONNECT_MS / 1000
    while not got and time.monotonic() < deadline:
        if (first := run.receive("c0", timeout_ms=1000)) is not None:
            got.append(first.message.entry)
    got += [d.message.entry for d in run.drain("c0", idle_ms=RECONNECT_MS)]
    while (late := run.receive("c0", timeout_ms=2000)) is not None:
        got.append(late.message.entry)
    print(f"redelivered: {got}")
    return tuple(sorted(set(got)))


@pytest.mark.guarantee("cursor")
def test_an_ack_with_a_receipt_is_in_the_cursor_when_it_returns(java, observed, names):
    run = _acknowledged_with_receipts(java, observed, names)
    assert _acknowledged(run.do(o.ReadCursor()).value) == ACKED


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_an_ack_with_a_receipt_survives_a_topic_unload(java, observed, names):
    run = _acknowledged_with_receipts(java, observed, names)
    assert run.do(o.Unload()).outcome is o.Outcome.OK
    assert _redelivered(run) == UNACKED
    assert _acknowledged(run.do(o.ReadCursor()).value) == ACKED


@pytest.mark.restarts_broker
@pytest.mark.guarantee("no-redelivery-after-ack")
def test_an_ack_with_a_receipt_survives_a_graceful_restart(java, observed, names):
    run = _acknowledged_with_receipts(java, observed, names)
    assert run.do(o.Restart()).outcome is o.Outcome.OK
    assert _redelivered(run) == UNACKED
    assert _acknowledged(run.do(o.ReadCursor()).value) == ACKED


@pytest.mark.restarts_broker
@pytest.mark.crashes_broker
@pytest.mark.guarantee("cursor", "no-loss")
def test_a_crash_may_lose_an_ack_with_a_receipt_and_redelivers_what_it_lost(java, observed, names):
    run = _acknowledged_with_receipts(java, observed, names)
    assert run.do(o.Crash()).outcome is o.Outcome.OK
    survived = _acknowledged(run.do(o.ReadCursor()).value)
    print(f"after the crash the cursor shows {survived} of {ACKED}")
    assert set(survived) <= set(ACKED)
    assert _redelivered(run) == tuple(n for n in range(COUNT) if n not in survived)


@pytest.mark.guarantee("cursor")
def test_an_ack_while_the_consumer_reconnects_returns_without_a_receipt(java, observed, names):
    """Right after an unload the consumer is reconnecting; an acknowledge then returns `ok` at once
    without asking for a receipt (the Java client's grouping tracker asks for one only on a
    connection), and the cursor does not have it when it returns."""
    run = _acknowledged_with_receipts(java, observed, names)
    assert run.do(o.Unload()).outcome is o.Outcome.OK
    started = time.monotonic()
    assert run.do(o.Acknowledge(consumer="c0", message=m(UNACKED[-1]))).outcome is o.Outcome.OK
    took_ms = (time.monotonic() - started) * 1000
    at_once = _acknowledged(run.do(o.ReadCursor()).value)
    time.sleep(1)
    later = _acknowledged(run.do(o.ReadCursor()).value)
    print(f"the ack took {took_ms:.0f} ms; the cursor then shows {at_once}, 1 s later {later}")
    assert UNACKED[-1] not in at_once


@pytest.mark.guarantee("cursor")
def test_kd28_a_cumulative_ack_with_a_receipt_returns_before_the_broker_has_it(java, observed, names):
    """KD-28 (Java client 4.0.7): with receipts and ack grouping, `acknowledgeCumulative` returns
    `ok` at once, and a cursor read right after does not show it, in every run; an individual ack
    waits for its receipt (the tests above). PersistentAcknowledgmentsGroupingTracker.doCumulativeAck
    records the ack as the last cumulative one, then returns a completed future when the last
    cumulative ack equals the message, which it always does by then (the check came with
    apache/pulsar#23841, against a second ack of the same message blocking). The model keeps the
    receipt's promise (a cursor read must show the ack): this test fails once the client waits
    for the receipt, so the entry is revisited."""
    run = Lockstep(observed(java), RECEIPTS, names.topic().rsplit("/", 1)[1])
    run.do(o.Send())
    run.do(o.Subscribe(consumer="c0"))
    assert run.receive("c0", timeout_ms=5000).message == m(0)
    assert run.do(o.AcknowledgeCumulative(consumer="c0", message=m(0))).outcome is o.Outcome.OK
    with pytest.raises(ConformanceFailure) as failure:
        run.do(o.ReadCursor())
    assert failure.value.violation.guarantee is Guarantee.CURSOR, failure.value
