"""A consumer closed while its client sends a message to the dead-letter topic: the C++ client
(pulsar-client 3.13.0, the Python client's) crashes with a segmentation fault (KD-34), and when it
lives, the message it dead-lettered was never acknowledged and comes back (KD-35).

With a dead-letter policy of max redeliveries 1, a message that arrives with redelivery count 2
(`redeliver_unacknowledged_messages` twice on Shared) is past the limit: the client's
ConsumerImpl::messageReceived asks `redeliverUnacknowledgedMessages({its id})`, which hands each id
to `processPossibleToDLQ` with a callback that captures the id by reference (`&msgId`, an element
of a set that is gone when the call returns). The dead-letter send completes later; when the
consumer is no longer Ready (closed meanwhile), the client logs "Send to the DLQ successfully, but
consumer is not ready. ignore acknowledge" and calls the callback with false, which reads the
dangling id: the process dies with SIGSEGV. The window is the dead-letter producer's creation
and send, a few milliseconds after the copy of count 2 lands. Found by the nightly on Pulsar 4.2.4
(`redelivery_count_and_dead_letter[Shared-dlq1]` and `[Key_Shared-dlq2]`: a redelivery request,
then a close; reported as "client crashed", never as a verdict).
"""

from __future__ import annotations

import signal
import time

import pulsar
import pytest

from drivers import wire
from fixtures.targets.driver_target import PYTHON_DRIVER, DriverDied, DriverProcess
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

REDELIVERED_S = 0.05  # the first redelivery's copy (count 1) lands before the second request
# From the second request to the close: the copy of count 2 must have landed and its dead-letter
# send not yet completed (2-10 ms crashed on an idle machine, 0 and 15 ms did not; the first run
# to crash ends the test, and a loaded machine moves the window later).
CLOSE_AFTER_S = (0.002, 0.004, 0.006, 0.008, 0.01, 0.012, 0.016, 0.02, 0.025, 0.03)
NOT_READY = "Send to the DLQ successfully, but consumer is not ready"
SHOWN_AFTER = 3  # runs whose dead-letter send completed after the close


DEAD_LETTER_AT_1 = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100, max_redeliver_count=1)


def _m0_received_by_c0(driver: DriverProcess, pulsar_broker, topic: str, spec: Spec):
    """The program's start on `driver`: c0 subscribes, m0 is sent and c0 receives it. Its op sender."""
    driver.request(wire.hello(pulsar_broker.service_url, pulsar_broker.credentials.to_wire()), 60_000)
    assert driver.request(wire.reset(spec, topic, "app"), 30_000)["outcome"] == "ok"

    def op(**request) -> dict:
        return driver.request({"type": "op", **request}, 30_000)

    op(op="subscribe", consumer="c0")
    op(op="send", entry=0, keys=[None], batched=False)
    assert op(op="receive", consumer="c0", ms=5000).get("delivered_entry") == 0
    return op


def closed_while_dead_lettering(pulsar_broker, topic: str, close_after_s: float, *,
                                then_receive: bool = False) -> tuple[int | None, str, dict | None]:
    """The Python client's driver runs the program; its exit status a second after the close
    (None: still running), the end of its log and, `then_receive`, what a new consumer of the
    subscription receives when the driver lived (None: nothing in 3 s, or it died)."""
    driver = DriverProcess(PYTHON_DRIVER)
    try:
        op = _m0_received_by_c0(driver, pulsar_broker, topic, DEAD_LETTER_AT_1)
        op(op="redeliver_unacknowledged_messages", consumer="c0")
        time.sleep(REDELIVERED_S)
        op(op="redeliver_unacknowledged_messages", consumer="c0")
        time.sleep(close_after_s)
        try:
            op(op="close", consumer="c0")
        except Exception:  # noqa: BLE001  (it may die before it replies)
            pass
        time.sleep(1.0)
        back = None
        if then_receive and driver.process.poll() is None:
            op(op="subscribe", consumer="c0")
            back = op(op="receive", consumer="c0", ms=3000)
            back = back if back.get("delivered_entry") is not None else None
        return driver.process.poll(), driver.stderr_tail(), back
    finally:
        driver.stop()


@pytest.mark.guarantee("dead-letter")
def test_a_consumer_closed_while_its_client_dead_letters_crashes_the_cpp_client(pulsar_broker, names, record_property):
    outcomes = {}
    for close_after_s in CLOSE_AFTER_S:
        status, log, _ = closed_while_dead_lettering(pulsar_broker, names.topic(), close_after_s)
        outcomes[close_after_s] = (status, NOT_READY in log)
        if status == -signal.SIGSEGV:
            assert NOT_READY in log, log
            record_property("crashed_with_close_after_s", close_after_s)
            return
    pytest.fail(f"no run crashed (close after s: (exit status, logged '{NOT_READY}')): {outcomes}; "
                "KD-34 may be fixed in this client")


def asked_back_by_its_second_holder(pulsar_broker, topic: str,
                                    close_after_s: float) -> tuple[dict, str, dict | None, bool]:
    """KD-35's program, as the nightly found it: with receiver queues of 1, c0 receives m0 (count
    0) and asks for it again; the broker gives the copy of count 1 (the limit) to c1, which asks
    for it again too, so that its client dead-letters m0; both consumers close `close_after_s`
    later, and a new consumer subscribes. The holder's receive, the end of the driver's log, what
    the new consumer receives (None: nothing in 3 s, or the driver died) and whether the driver
    died. Here the client's dead-letter callback crashes rarely (KD-34 did not once in 7 runs on an
    idle machine, where the program of `closed_while_dead_lettering` crashed 3 times in 7; it did in
    a loaded CI run)."""
    driver = DriverProcess(PYTHON_DRIVER)
    try:
        op = _m0_received_by_c0(driver, pulsar_broker, topic, DEAD_LETTER_AT_1.with_(receiver_queue_size=1))
        op(op="subscribe", consumer="c1")
        op(op="redeliver_unacknowledged_messages", consumer="c0")
        holder, held = "c1", op(op="receive", consumer="c1", ms=2000)
        if held.get("delivered_entry") is None:
            holder, held = "c0", op(op="receive", consumer="c0", ms=2000)
        op(op="redeliver_unacknowledged_messages", consumer=holder)
        time.sleep(close_after_s)
        try:
            for consumer in ("c0", "c1"):
                op(op="close", consumer=consumer)
            time.sleep(1.0)
            op(op="subscribe", consumer="c2")
            back = op(op="receive", consumer="c2", ms=3000)
        except DriverDied:  # KD-34's crash, in the dead-letter callback after the close
            return held, driver.stderr_tail(), None, True
        return held, driver.stderr_tail(), back if back.get("delivered_entry") is not None else None, False
    finally:
        driver.stop()


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_a_message_dead_lettered_while_its_consumer_closes_comes_back_too(pulsar_broker, pulsar_client, names,
                                                                          record_property):
    """When the dead-letter send completes after the close, the client ignores the
    acknowledgement: the message is in the dead-letter topic and comes back to the subscription's
    next consumer, with count 0 (the redelivery tracker cleared when the last consumer left).
    KD-35 (KNOWN_DIVERGENCES.md). A close 4 to 10 ms after the request let the send complete after
    it in 10 of 12 runs, and m0 came back in 9 of those 10; a close at once leaves m0
    undead-lettered (it comes back, as the model allows), one 50 ms later dead-letters and
    acknowledges it. The test ends once `SHOWN_AFTER` runs logged the ignored acknowledgement."""
    logged, shown = [], []
    for _ in range(3):
        for close_after_s in CLOSE_AFTER_S:
            topic = names.topic()
            letters = pulsar_client.subscribe(f"{topic}-app-DLQ", "letters")
            held, log, back, died = asked_back_by_its_second_holder(pulsar_broker, topic, close_after_s)
            assert (held.get("delivered_entry"), held.get("redelivery_count")) == (0, 1), held
            if NOT_READY not in log or died:
                continue  # not a run of KD-35 (a crash is KD-34's: the test above)
            logged.append(close_after_s)
            if back is not None:
                assert (back["delivered_entry"], back["redelivery_count"]) == (0, 0), back
                try:
                    letters.receive(5000)
                except pulsar.Timeout:
                    pytest.fail("m0 came back, but not in the dead-letter topic: its send did not complete")
                shown.append(close_after_s)
            if len(logged) == SHOWN_AFTER:
                break
        if len(logged) == SHOWN_AFTER:
            break
    record_property("ignored_and_back_with_close_after_s", shown)
    if not logged:
        # A dead-letter send that never completes after the close leaves KD-35 untested, which is
        # not a pass either.
        pytest.xfail(f"no run logged '{NOT_READY}', so KD-35 was not put to the test")
    assert shown, (f"in {len(logged)} runs the client ignored the dead-letter acknowledgement and m0 never came "
                   "back: KD-35 may be fixed in this client")
