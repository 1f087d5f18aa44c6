"""The Go client's driver (drivers/go, github.com/apache/pulsar-client-go): it speaks the protocol
(the same self-test a client author runs), declares only what the Go client has (no ack timeout, no
public redeliverUnacknowledgedMessages), and on the session broker runs a program op for op as the
Python driver answers it (payloads, positions, keys, the refusals by the Python client's names, a
zero-queue receive that waits across timeouts); a nacked message comes back no earlier than the
spec's nack delay, which the Go client keeps only with its nack precision set to exact. On a secured
broker of the module's own it gets in with the hello's credentials and no others
(suites/plumbing/secured_driver.py)."""

from __future__ import annotations

import shutil
import time

import pytest

from drivers import wire
from fixtures import options
from fixtures.targets.driver_target import DriverProcess
from fixtures.targets.loader import pulsar_target
from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from suites.conformance.catalog import check
from suites.plumbing import secured_driver
from suites.plumbing.test_drivers import test_a_driver_answers_every_request_and_errors_are_data as answers_every_request
from suites.replay.stored import replay

M0, M1, M1_0, M1_1 = o.MessageId(0), o.MessageId(1), o.MessageId(1, 0), o.MessageId(1, 1)


@pytest.fixture(scope="module")
def go_driver() -> tuple[str, ...]:
    if shutil.which("go") is None:
        pytest.skip("the Go driver needs `go` on PATH to be built")
    from drivers.go.build import command

    return command()


@pytest.fixture(scope="module")
def go(go_driver, pulsar_broker):
    target = pulsar_target(pulsar_broker.service_url, pulsar_broker.admin_url, controller=pulsar_broker.controller,
                           client="go")
    yield target
    target.close()


def test_the_go_driver_answers_every_request_and_errors_are_data(go_driver):
    answers_every_request(go_driver)


def test_the_go_driver_declares_only_what_the_go_client_has(go_driver):
    from drivers.go.build import client_version

    driver = DriverProcess(go_driver)
    try:
        hello = driver.request(wire.hello("pulsar://127.0.0.1:1"), 30_000)
        assert (hello["client"], hello["version"]) == ("go", client_version())
        assert "redeliver_unacknowledged_messages" not in hello["ops"]
        assert {"ack_timeout", "redeliver_unacknowledged", "ack_receipts"}.isdisjoint(hello["capabilities"])
        assert {"receiver_queue_0", "dead_letter_policy", "batch_index_ack", "seek_by_id",
                "nack_backoff", "redelivery_count"} <= set(hello["capabilities"])
        refused = driver.request(wire.reset(Spec(ack_timeout_ms=1000), "persistent://public/default/t", "s"), 5_000)
        assert refused["error"]["class"] == "UnsupportedSetting"
        assert wire.lacking(hello, ("send", "redeliver_unacknowledged_messages"), Spec()) == ["redeliver_unacknowledged"]
        # Its dead-letter policy is checked by the area whose redeliveries come from nacks only.
        dead_letter = check("dead_letter_by_nack")
        assert not any(wire.lacking(hello, dead_letter.kinds, spec) for spec in dead_letter.specs.values())
    finally:
        driver.stop()


@pytest.mark.broker
def test_the_go_driver_runs_a_program_as_the_python_driver_does(go):
    assert go.client["client"] == "go" and go.client["protocol"] == wire.PROTOCOL
    go.reset(Spec(subscription_type=SubscriptionType.EXCLUSIVE), "go-driver-exclusive")
    assert go.invoke(o.Send(keys=("k0",))).value == (M0,)
    assert go.invoke(o.Send(keys=("k1", None), batched=True)).value == (M1_0, M1_1)
    assert go.invoke(o.Subscribe(consumer="c0")).outcome is o.Outcome.OK
    got = [go.invoke(o.Receive(consumer="c0", timeout_ms=5000)).value for _ in range(3)]
    assert [(d.message, d.key, d.redelivery_count) for d in got] == [(M0, "k0", 0), (M1_0, "k1", 0), (M1_1, None, 0)]
    assert go.invoke(o.Receive(consumer="c0", timeout_ms=200)).value is None
    refused = go.invoke(o.Subscribe(consumer="c1"))
    assert (refused.outcome, refused.error) == (o.Outcome.FAIL, "ConsumerBusy")
    assert go.invoke(o.AcknowledgeCumulative(consumer="c0", message=M1_1)).outcome is o.Outcome.OK
    go.invoke(o.Close(consumer="c0"))  # flushes the grouped ack
    assert go.invoke(o.ReadCursor()).value.mark_delete == 1

    go.reset(Spec(subscription_type=SubscriptionType.SHARED, receiver_queue_size=0), "go-driver-shared")
    go.invoke(o.Subscribe(consumer="c0"))
    assert go.invoke(o.Receive(consumer="c0", timeout_ms=100)).value is None  # a zero-queue receive times out
    go.invoke(o.Send())
    assert go.invoke(o.Receive(consumer="c0", timeout_ms=5000)).value.message == M0  # the waiting receive's
    refused = go.invoke(o.AcknowledgeCumulative(consumer="c0", message=M0))
    assert (refused.outcome, refused.error) == (o.Outcome.FAIL, "CumulativeAcknowledgementNotAllowedError")
    assert go.invoke(o.Close(consumer="c0")).outcome is o.Outcome.OK  # its waiting receive ends first


@pytest.mark.broker
def test_a_nacked_message_comes_back_no_earlier_than_the_nack_delay(go):
    """With the Go client's default nack precision (8 bits) a nack is due at its time rounded down
    to 256 ms, so messages nacked with a 100 ms delay come back on the tracker's next tick, often
    within 35 ms; the driver sets the precision to exact, and the spec's delay is a lower bound as
    with the other clients. Times are taken before the nack and after the receive: never short."""
    delay_ms, messages = 100, [o.MessageId(n) for n in range(4)]
    go.reset(Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=delay_ms), f"go-nack-{time.monotonic_ns()}")
    go.invoke(o.Subscribe(consumer="c0"))
    for _ in messages:
        go.invoke(o.Send())
    assert [go.invoke(o.Receive(consumer="c0", timeout_ms=5000)).value.message for _ in messages] == messages
    nacked = {}
    for message in messages:
        nacked[message] = time.monotonic()
        go.invoke(o.NegativeAcknowledge(consumer="c0", message=message))
        time.sleep(0.02)
    back = {}
    while len(back) < len(messages):
        delivery = go.invoke(o.Receive(consumer="c0", timeout_ms=3000)).value
        assert delivery is not None, f"only {sorted(back)} came back"
        back[delivery.message] = round((time.monotonic() - nacked[delivery.message]) * 1000)
    assert all(ms >= delay_ms for ms in back.values()), f"back after (ms): {back}"


# -- the Go client's findings (KNOWN_DIVERGENCES.md, client bugs): each test fails when the client
# stops breaking the guarantee, so its entry is revisited.

@pytest.mark.broker
def test_kd27_an_idle_go_consumer_takes_more_than_its_receiver_queue(go):
    """KD-27. Shared, receiver queue 1: c0 subscribes and receives nothing, eight messages are sent,
    c1 subscribes and is drained. An idle consumer holds what its receiver queue holds (the Python
    and Java clients: c0 keeps one or two, c1 gets the rest); the Go consumer grants a permit back
    to the broker when a message moves from its queue into the consumer's channel of 10
    (consumer_partition.go dispatcher, `messageCh` made in consumer_impl.go), not when the
    application receives it, so c0 keeps all eight and c1 gets none (receiver-queue)."""
    spec = Spec(subscription_type=SubscriptionType.SHARED, receiver_queue_size=1, nack_delay_ms=100)
    go.reset(spec, f"go-kd27-{time.monotonic_ns()}")
    history = [(op, go.invoke(op)) for op in [o.Subscribe(consumer="c0"), *[o.Send()] * 8, o.Tick(ms=500),
                                               o.Subscribe(consumer="c1")]]
    while (op := o.Receive(consumer="c1", timeout_ms=500)) and (done := go.invoke(op)).value is not None:
        history.append((op, done))
    history.append((op, done))
    violation = replay(spec, history, drained=("c1",)).verdict.violation
    assert violation is not None and violation.guarantee is Guarantee.RECEIVER_QUEUE, violation


@pytest.fixture(scope="module")
def secured_broker(go_driver, request):
    with secured_driver.secured_broker("go", options.pulsar_version(request.config)) as broker:
        yield broker


@pytest.mark.broker
def test_the_go_driver_gets_into_a_secured_broker_with_its_credentials_and_no_other(go_driver, secured_broker):
    """Token and TLS from the hello's auth, a client certificate too; no token, a forged one or an
    untrusted CA refused at the hello within seconds (the client itself retries the connection
    until its operation timeout and then says only "connection error")."""
    hello = secured_driver.produces_receives_and_acknowledges(go_driver, secured_broker, secured_broker.credentials())
    assert "tls_client_cert" in hello["capabilities"]
    secured_driver.produces_receives_and_acknowledges(go_driver, secured_broker,
                                                      secured_driver.with_client_certificate(secured_broker))
    secured_driver.refuses_what_the_broker_refuses(go_driver, secured_broker)
