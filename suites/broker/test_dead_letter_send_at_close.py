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
from fixtures.targets.driver_target import PYTHON_DRIVER, DriverProcess
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

REDELIVERED_S = 0.05  # the first redelivery's copy (count 1) lands before the second request
# From the second request to the close: the copy of count 2 must have landed and its dead-letter
# send not yet completed (2-10 ms crashed on an idle machine, 0 and 15 ms did not; the first run
# to crash ends the test, and a loaded machine moves the window later).
CLOSE_AFTER_S = (0.002, 0.004, 0.006, 0.008, 0.01, 0.012, 0.016, 0.02, 0.025, 0.03)
NOT_READY = "Send to the DLQ successfully, but consumer is not ready"


def closed_while_dead_lettering(pulsar_broker, topic: str, close_after_s: float, *,
                                then_receive: bool = False) -> tuple[int | None, str, dict | None]:
    """The Python client's driver runs the program; its exit status a second after the close
    (None: still running), the end of its log and, `then_receive`, what a new consumer of the
    subscription receives when the driver lived (None: nothing in 3 s, or it died)."""
    driver = DriverProcess(PYTHON_DRIVER)
    try:
        driver.request(wire.hello(pulsar_broker.service_url, pulsar_broker.credentials.to_wire()), 60_000)
        spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100, max_redeliver_count=1)
        assert driver.request(wire.reset(spec, topic, "app"), 30_000)["outcome"] == "ok"

        def op(**request) -> dict:
            return driver.request({"type": "op", **request}, 30_000)

        op(op="subscribe", consumer="c0")
        op(op="send", entry=0, keys=[None], batched=False)
        assert op(op="receive", consumer="c0", ms=5000).get("delivered_entry") == 0
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


@pytest.mark.guarantee("no-redelivery-after-ack")
def test_a_message_dead_lettered_while_its_consumer_closes_comes_back_too(pulsar_broker, pulsar_client, names,
                                                                          record_property):
    """When the dead-letter send completes after the close and the client lives (the id it reads
    was not yet reused), it ignores the acknowledgement: the message is in the dead-letter topic
    and comes back to the subscription's next consumer, with count 0 (the redelivery tracker
    cleared when the last consumer left). KD-16's second path (KNOWN_DIVERGENCES.md)."""
    outcomes = []
    for _ in range(3):
        for close_after_s in CLOSE_AFTER_S:
            topic = names.topic()
            letters = pulsar_client.subscribe(f"{topic}-app-DLQ", "letters")
            status, log, back = closed_while_dead_lettering(pulsar_broker, topic, close_after_s, then_receive=True)
            outcomes.append((close_after_s, status, NOT_READY in log))
            if status is None and NOT_READY in log:
                assert back is not None, f"m0 did not come back after its dead-letter ack was ignored: {log}"
                assert (back["delivered_entry"], back["redelivery_count"]) == (0, 0), back
                try:
                    letters.receive(5000)
                except pulsar.Timeout:
                    pytest.fail("m0 came back, but not in the dead-letter topic: its send did not complete")
                record_property("ignored_with_close_after_s", close_after_s)
                return
    # The window is a few milliseconds wide and KD-34 often kills the client inside it (on a loaded
    # CI machine every run that logged the line crashed, 30 of 30): then KD-35 was not shown this
    # time, which is not a pass either.
    pytest.xfail(f"no run logged '{NOT_READY}' and lived, so KD-35 was not put to the test "
                 f"(close after s, exit status, logged): {outcomes}")
