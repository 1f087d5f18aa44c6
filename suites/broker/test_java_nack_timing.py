"""How soon the Java client brings a negatively acknowledged message back: never before the nack
delay after the call, as the model's nack window assumes (model/spec.py, `nack_window_ms`).

The Java client's NegativeAcksTracker (pulsar-client 4.0.7) keys each nacked message by its due
time, the call's time plus the delay with the lowest `negativeAckRedeliveryDelayPrecision` bits
trimmed (8 by default: 256 ms buckets, "earlier, no later" than the delay, as its documentation
says), and asks the broker for every key that is due when its timer fires; the timer is set for
the delay at the first nack while it is idle. A nack made while the timer runs is then redelivered
at that timer's firing if its trimmed key is already due: on Pulsar 4.0.7, Shared, 100 ms delay,
twelve messages nacked 40 ms apart, the last came back 50 ms after its call. The Java driver sets
the precision to 0 (exact due times, as the Go driver does), so the spec's delay is a lower bound.

Measured alongside: after the first redelivery of a fresh driver (its JVM still loading the
tracker's path: 202-217 ms for a 100 ms delay), a message came back 105-130 ms after the call.
"""

from __future__ import annotations

import time

import pytest

from drivers import wire
from fixtures.targets.driver_target import DriverProcess, driver_command
from model.spec import Spec, SubscriptionType

pytestmark = pytest.mark.broker

DELAY_MS = 100
COUNT = 12
GAP_MS = 40  # each nack while the tracker's timer, set at the first one, runs


@pytest.mark.guarantee("no-duplicate-without-cause")
def test_a_java_nack_made_while_the_tracker_runs_comes_back_no_sooner_than_the_delay(pulsar_broker, record_property):
    topic = f"persistent://public/default/java-nack-timing-{time.monotonic_ns()}"
    driver = DriverProcess(driver_command("java", version=pulsar_broker.version))
    try:
        driver.request(wire.hello(pulsar_broker.service_url), 60_000)
        spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=DELAY_MS)
        assert driver.request(wire.reset(spec, topic, "conformance"), 30_000)["outcome"] == "ok"

        def op(**request) -> dict:
            return driver.request({"type": "op", **request}, 30_000)

        op(op="subscribe", consumer="c0")
        for entry in range(COUNT):
            op(op="send", entry=entry, keys=[None])
        assert [op(op="receive", consumer="c0", ms=5000)["delivered_entry"] for _ in range(COUNT)] == list(range(COUNT))
        back_after = {}
        for _ in range(3):
            called = {}
            for entry in range(COUNT):
                called[entry] = time.monotonic()
                op(op="negative_acknowledge", consumer="c0", entry=entry, index=-1)
                time.sleep(GAP_MS / 1000)
            came = {}
            while len(came) < COUNT:
                reply = op(op="receive", consumer="c0", ms=3000)
                if reply.get("delivered_entry") is None:
                    break
                came.setdefault(reply["delivered_entry"], time.monotonic())
            assert sorted(came) == list(range(COUNT))
            for entry in came:
                back_after[entry] = min(back_after.get(entry, 1e9), round((came[entry] - called[entry]) * 1000))
    finally:
        driver.stop()
    record_property("java_nack_back_after_call_ms", back_after)
    early = {entry: ms for entry, ms in back_after.items() if ms < DELAY_MS}
    assert not early, f"came back sooner than the {DELAY_MS} ms delay after the call (ms): {early}"
