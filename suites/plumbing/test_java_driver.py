"""The Java client's driver (drivers/java, org.apache.pulsar:pulsar-client) on the session broker:
the handshake, a short program op for op as the Python driver answers it (payloads, positions,
keys, the refusals by the Python client's names), and the ack receipts it declares: an ack with
a receipt returns once the broker has it (`isAckReceiptEnabled`), one without may return before.
KD-17 (a zero-queue Exclusive consumer that misses a rewind) is shown here too. On a secured broker
of the module's own it gets in with the hello's credentials and no others (suites/plumbing/secured_driver.py)."""

from __future__ import annotations

import time

import pytest

from drivers import wire
from fixtures import options
from fixtures.admin import AdminClient
from fixtures.targets.driver_target import DriverProcess, driver_command
from fixtures.targets.loader import pulsar_target
from model import ops as o
from model.spec import Spec, SubscriptionType
from suites.plumbing import secured_driver
from suites.replay.stored import replay

pytestmark = pytest.mark.broker

M0, M1_0, M1_1 = o.MessageId(0), o.MessageId(1, 0), o.MessageId(1, 1)


@pytest.fixture(scope="module")
def java(pulsar_broker):
    target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url, controller=pulsar_broker.controller,
                           client="java", version=pulsar_broker.version)
    yield target
    target.close()


def test_the_java_driver_says_who_it_is_and_runs_a_program_as_the_python_driver_does(java, pulsar_broker):
    assert java.client["client"] == "java" and java.client["protocol"] == wire.PROTOCOL
    assert java.client["version"] == (pulsar_broker.version or java.client["version"])
    assert set(java.client["ops"]) == set(wire.CLIENT_OPS)
    java.reset(Spec(subscription_type=SubscriptionType.EXCLUSIVE), "java-driver-exclusive")
    assert java.invoke(o.Send(keys=("k0",))).value == (M0,)
    assert java.invoke(o.Send(keys=("k1", None), batched=True)).value == (M1_0, M1_1)
    assert java.invoke(o.Subscribe(consumer="c0")).outcome is o.Outcome.OK
    got = [java.invoke(o.Receive(consumer="c0", timeout_ms=5000)).value for _ in range(3)]
    assert [(d.message, d.key, d.redelivery_count) for d in got] == [(M0, "k0", 0), (M1_0, "k1", 0), (M1_1, None, 0)]
    assert java.invoke(o.Receive(consumer="c0", timeout_ms=200)).value is None
    refused = java.invoke(o.Subscribe(consumer="c1"))
    assert (refused.outcome, refused.error) == (o.Outcome.FAIL, "ConsumerBusy")
    assert java.invoke(o.AcknowledgeCumulative(consumer="c0", message=M1_1)).outcome is o.Outcome.OK
    java.invoke(o.Close(consumer="c0"))  # flushes the grouped ack
    assert java.invoke(o.ReadCursor()).value.mark_delete == 1

    java.reset(Spec(subscription_type=SubscriptionType.SHARED, receiver_queue_size=0), "java-driver-shared")
    java.invoke(o.Subscribe(consumer="c0"))
    assert java.invoke(o.Receive(consumer="c0", timeout_ms=100)).value is None  # a zero-queue receive times out
    java.invoke(o.Send())
    assert java.invoke(o.Receive(consumer="c0", timeout_ms=5000)).value.message == M0  # the waiting receive's
    refused = java.invoke(o.AcknowledgeCumulative(consumer="c0", message=M0))
    assert (refused.outcome, refused.error) == (o.Outcome.FAIL, "CumulativeAcknowledgementNotAllowedError")


@pytest.mark.parametrize("receipts", [True, False], ids=["with-receipts", "without"])
def test_an_ack_with_a_receipt_returns_once_the_broker_has_it(pulsar_broker, receipts):
    """The `ack_receipts` capability: with a 1 s ack grouping time, an ack with a receipt waits for
    the grouped flush and the broker's answer, and the cursor has it when the ack returns; one
    without returns at once, before the broker has it."""
    admin = AdminClient(pulsar_broker.admin_url)
    topic = f"persistent://public/default/java-ack-receipts-{receipts}-{time.monotonic_ns()}"
    driver = DriverProcess(driver_command("java", version=pulsar_broker.version))
    try:
        assert "ack_receipts" in driver.request(wire.hello(pulsar_broker.service_url), 60_000)["capabilities"]
        spec = {**wire.reset(Spec(subscription_type=SubscriptionType.EXCLUSIVE, ack_grouping_ms=1000), topic,
                             "conformance")["spec"], "ack_receipts": receipts}
        assert driver.request({"type": "reset", "topic": topic, "subscription": "conformance", "spec": spec},
                              30_000)["outcome"] == "ok"
        for request in ({"op": "subscribe", "consumer": "c0"}, {"op": "send", "entry": 0, "keys": [None]}):
            assert driver.request({"type": "op", **request}, 30_000)["outcome"] == "ok"
        assert driver.request({"type": "op", "op": "receive", "consumer": "c0", "ms": 5000}, 30_000)["delivered_entry"] == 0
        started = time.monotonic()
        assert driver.request({"type": "op", "op": "acknowledge", "consumer": "c0", "entry": 0, "index": -1},
                              30_000)["outcome"] == "ok"
        took = time.monotonic() - started
        acked = admin.cursor(topic, "conformance").mark_delete_position.entry >= 0
        assert (acked, took > 0.5) == (receipts, receipts), f"acked at the broker: {acked}, the ack took {took:.2f} s"
    finally:
        driver.stop()
        admin.delete_topic(topic)


@pytest.fixture(scope="module")
def java_default_nack_precision(pulsar_broker):
    """The Java driver with the client's default nack precision (8 bits: due times trimmed to 256
    ms buckets), as KD-17 was seen; the suite's driver asks for exact due times."""
    import os

    os.environ["CONFORMANCE_JAVA_NACK_PRECISION_BITS"] = "8"
    try:
        target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url,
                               controller=pulsar_broker.controller, client="java", version=pulsar_broker.version)
    finally:
        del os.environ["CONFORMANCE_JAVA_NACK_PRECISION_BITS"]
    yield target
    target.close()


@pytest.mark.slow
def test_kd17_a_zero_queue_exclusive_java_consumer_can_miss_the_rewind_of_a_second_nack(java_default_nack_precision):
    """KD-17, on pulsar-client (Java) 4.0.7 at its default nack precision: m0 received, nacked twice,
    a receive, nacked twice more; the first rewind brings it back, the second never does while
    receives wait (the model owes it: no-loss). Seen in 4 of 10 runs; the Python client (C++ 4.2.0)
    brought it back in 10 of 10, and so did the Java client with exact nack due times in 8 of 8.
    This test fails when the Java client stops losing it in 8 runs, so the entry is revisited."""
    java = java_default_nack_precision
    spec = Spec(subscription_type=SubscriptionType.EXCLUSIVE, receiver_queue_size=0, nack_delay_ms=100)
    nack = o.NegativeAcknowledge(consumer="c0", message=M0)
    program = [o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0", timeout_ms=100),
               o.Receive(consumer="c0", timeout_ms=5), o.Receive(consumer="c0", timeout_ms=5), nack, nack,
               o.Receive(consumer="c0", timeout_ms=10), nack, nack] + [o.Receive(consumer="c0", timeout_ms=100)] * 30
    lost = 0
    for run in range(8):
        java.reset(spec, f"kd17-{run}-{time.monotonic_ns()}")
        history = [(op, java.invoke(op)) for op in program]
        violation = replay(spec, history, drained=True).verdict.violation
        # What is lost was nacked again: m0, and in some runs (some of) the batch whose m2.1 was
        # nacked twice.
        assert violation is None or lost_of(violation.detail) <= NACKED_AGAIN, violation
        lost += violation is not None
    assert lost > 0, "the Java client brought m0 back in 8 of 8 runs: KD-17 may be fixed"


@pytest.fixture(scope="module")
def secured_broker(request):
    with secured_driver.secured_broker("java", options.pulsar_version(request.config)) as broker:
        yield broker


def test_the_java_driver_gets_into_a_secured_broker_with_its_credentials_and_no_other(secured_broker):
    """Token and TLS from the hello's auth, a client certificate too; no token, a forged one or an
    untrusted CA refused at the hello within seconds (the client itself retries a refused token
    until its operation timeout, and calls an untrusted certificate "Connection already closed")."""
    command = driver_command("java", version=secured_broker.config.version)
    hello = secured_driver.produces_receives_and_acknowledges(command, secured_broker, secured_broker.credentials())
    assert "tls_client_cert" in hello["capabilities"]
    secured_driver.produces_receives_and_acknowledges(command, secured_broker,
                                                      secured_driver.with_client_certificate(secured_broker))
    secured_driver.refuses_what_the_broker_refuses(command, secured_broker)


# What may be lost: m0, nacked again, and the batch m2, one of whose indexes was nacked again (the
# client dead-letters the batch's copy whole, KD-33); never m1, nacked once.
NACKED_AGAIN = {"m0", "m2.0", "m2.1", "m2.2"}


def lost_of(detail: str) -> set[str]:
    """The messages a no-loss violation names ("drained every consumer, yet m0, m2.0 never came")."""
    prefix, suffix = "drained every consumer, yet ", " never came"
    assert detail.startswith(prefix) and detail.endswith(suffix), detail
    return set(detail[len(prefix):-len(suffix)].split(", "))


def test_kd29_a_java_consumer_with_a_dead_letter_policy_on_key_shared_loses_a_message_nacked_again(java):
    """KD-29, on pulsar-client (Java) 4.0.7, Key_Shared, dead-letter policy max 1: m0 and m1 (key k1)
    and a batch m2 (key k0) received; m2.1, m2.2, m0, m2.1 nacked, a receive, m0 nacked twice more,
    then m1 after a wait: m1 and the batch come back with redelivery count 1, m0 never does (nor
    is it in a receive later), where the model owes it (no-loss); in some runs the batch, whose
    m2.1 was nacked twice, is lost with it, or only part of the batch is lost (m2.0 alone, once in
    CI), never m1 (nacked once). The same program with the Python
    client brings m0 back, and so does the Java client on Shared, with max 3, or with no policy.
    This test fails when the Java client brings m0 back in 3 runs, so the entry is revisited."""
    spec = Spec(subscription_type=SubscriptionType.KEY_SHARED, nack_delay_ms=100, max_redeliver_count=1)

    def nack(entry: int, index: int = -1) -> o.Op:
        return o.NegativeAcknowledge(consumer="c0", message=o.MessageId(entry, index))

    receive = o.Receive(consumer="c0", timeout_ms=100)
    program = [o.Send(keys=("k1",)), o.Send(keys=("k1",)), o.Subscribe(consumer="c0"),
               o.Send(keys=("k0", "k0", "k0"), batched=True), *[receive] * 5,
               o.Receive(consumer="c0", timeout_ms=5), o.Receive(consumer="c0", timeout_ms=5),
               nack(2, 1), nack(2, 2), nack(0), nack(2, 1), o.Receive(consumer="c0", timeout_ms=10), nack(0), nack(0),
               o.Tick(ms=184), nack(1), o.Tick(ms=184), *[receive] * 13]
    lost = 0
    for run in range(3):
        java.reset(spec, f"kd29-{run}-{time.monotonic_ns()}")
        history = [(op, java.invoke(op)) for op in program]
        violation = replay(spec, history, drained=True).verdict.violation
        # What is lost was nacked again: m0, and in some runs (some of) the batch whose m2.1 was
        # nacked twice.
        assert violation is None or lost_of(violation.detail) <= NACKED_AGAIN, violation
        lost += violation is not None
    assert lost > 0, "the Java client brought m0 back in 3 of 3 runs: KD-29 may be fixed"
