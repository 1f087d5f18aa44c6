"""The Rust client's driver (drivers/rust, the crate `pulsar`): its handshake declares what the
crate does and nothing more (so the checks that need batch-index ack, receiver queue 0 or
redeliver_unacknowledged_messages are not applicable for it), it answers the protocol's framing as
every driver must, and on the session broker it runs a short program op for op as the Python
driver does: payloads, positions, keys, a second Exclusive consumer refused with ConsumerBusy, and
the redelivery count it cannot see sent as null (unknown), never as a made-up 0."""

from __future__ import annotations

import time

import pytest

from drivers import wire
from drivers.rust.build import BuildError, command, crate_version
from fixtures.admin import AdminClient
from fixtures.targets.driver_target import DriverProcess
from model.spec import Spec, SubscriptionType
from suites.conformance.catalog import CHECKS
from suites.plumbing import test_drivers

# What the crate does not do (drivers/rust/src/protocol.rs): no redeliver_unacknowledged_messages,
# no batch-index ack, no receiver queue 0, no ack receipts, nack backoff or ack grouping time.
NOT_APPLICABLE = {
    ("batches", "Shared-batch-index-ack"), ("batches", "Exclusive-batch-index-ack"),
    ("seek", "Shared-batch-index-ack"), ("receiver_queue", "Shared-zero-queue"),
    ("zero_queue", "Shared"), ("zero_queue", "Exclusive"),
    *(("redelivery_count_and_dead_letter", s) for s in ("Shared", "Shared-dlq1", "Key_Shared-dlq2", "Exclusive")),
}


@pytest.fixture(scope="module")
def rust() -> tuple[str, ...]:
    try:
        return command()
    except BuildError as error:
        pytest.fail(f"the Rust driver could not be built (./dev setup builds it): {error}")


def test_the_rust_driver_declares_what_the_crate_does_and_nothing_more(rust):
    driver = DriverProcess(rust)
    try:
        hello = driver.request(wire.hello("pulsar://127.0.0.1:1"), 30_000)  # a hello never waits for a broker
    finally:
        driver.stop()
    assert (hello["client"], hello["version"], hello["protocol"]) == ("rust", crate_version(), wire.PROTOCOL)
    assert set(hello["ops"]) == set(wire.CLIENT_OPS) - {"redeliver_unacknowledged_messages"}
    assert set(hello["capabilities"]) == {"ack_timeout", "dead_letter_policy", "seek_by_id"}
    lacking = {(c.area, spec_id) for c in CHECKS for spec_id, spec in c.specs.items()
               if wire.lacking(hello, c.kinds, spec)}
    assert lacking == NOT_APPLICABLE


def test_the_rust_driver_answers_every_request_and_errors_are_data(rust):
    test_drivers.test_a_driver_answers_every_request_and_errors_are_data(rust)


def _op(driver: DriverProcess, op: str, **fields) -> dict:
    return driver.request({"type": "op", "op": op, **fields}, 45_000)


@pytest.mark.broker
def test_the_rust_driver_runs_a_program_as_the_python_driver_does(rust, pulsar_broker):
    admin = AdminClient(pulsar_broker.admin_url)
    topic = f"persistent://public/default/rust-driver-{time.monotonic_ns()}"
    driver = DriverProcess(rust)
    try:
        assert driver.request(wire.hello(pulsar_broker.service_url), 30_000)["client"] == "rust"
        assert driver.request(wire.reset(Spec(subscription_type=SubscriptionType.EXCLUSIVE), topic, "conformance"),
                              30_000)["outcome"] == "ok"
        first = _op(driver, "send", entry=0, keys=["k0"], batched=False)
        batch = _op(driver, "send", entry=1, keys=["k1", None], batched=True)
        assert first["outcome"] == batch["outcome"] == "ok"
        assert batch["position"] == [first["position"][0], first["position"][1] + 1]  # one entry for the batch
        assert _op(driver, "subscribe", consumer="c0")["outcome"] == "ok"
        got = [_op(driver, "receive", consumer="c0", ms=5000) for _ in range(3)]
        assert [(d["delivered_entry"], d["delivered_index"], d["key"]) for d in got] == \
            [(0, -1, "k0"), (1, 0, "k1"), (1, 1, None)]
        assert all(d["redelivery_count"] is None for d in got)  # the crate does not show it: unknown
        assert "delivered_entry" not in _op(driver, "receive", consumer="c0", ms=200)
        started = time.monotonic()
        refused = _op(driver, "subscribe", consumer="c1")
        assert (refused["outcome"], refused["error"]["class"]) == ("fail", "ConsumerBusy")
        assert time.monotonic() - started < 10  # the crate's own retries of ConsumerBusy are bounded
        assert _op(driver, "acknowledge_cumulative", consumer="c0", entry=1, index=1)["outcome"] == "ok"
        assert _op(driver, "close", consumer="c0")["outcome"] == "ok"
        deadline = time.monotonic() + 10
        while admin.cursor(topic, "conformance").mark_delete_position.entry < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert admin.cursor(topic, "conformance").mark_delete_position.entry == 1
        assert driver.request(wire.close(), 10_000)["outcome"] == "ok"
        assert driver.process.wait(timeout=10) == 0
    finally:
        driver.stop()
        admin.delete_topic(topic)
