"""The repeated-nack program of KD-33, through a client's driver process.

m0 received with count 0 and nacked, then (unless `gap_s` is None) the same delivery nacked again
`gap_s` later, under a dead-letter policy of one redelivery (nack delay 100 ms); the consumer closes
a second later without receiving again. Each client's tests
(suites/broker/test_*dead_letter_repeated_nack.py) say what comes to the next consumer and what went
to the dead-letter topic.
"""

from __future__ import annotations

import time

import pulsar

from drivers import wire
from fixtures.pulsar import drain
from fixtures.targets.driver_target import DriverProcess, driver_command
from model.spec import Spec, SubscriptionType


def nacked(pulsar_broker, pulsar_client, topic, *, client: str, gap_s: float | None, partitions: int = 0):
    """The program above on `client`'s driver, on a topic of `partitions` partitions (0: none). What
    comes to the next consumer ((data, count) pairs), and what went to the dead-letter topic (the
    Java and Go clients' default on a topic without partitions, and the Go client's on a partitioned
    one: <topic>-<subscription>-DLQ)."""
    if partitions:
        pulsar_broker.admin.create_partitioned_topic(topic, partitions)
    letters = pulsar_client.subscribe(f"{topic}-app-DLQ", "letters")
    driver = DriverProcess(driver_command(client, version=pulsar_broker.version))
    try:
        driver.request(wire.hello(pulsar_broker.service_url), 60_000)
        spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100, max_redeliver_count=1,
                    partitions=partitions)
        assert driver.request(wire.reset(spec, topic, "app"), 30_000)["outcome"] == "ok"

        def op(**request) -> dict:
            reply = driver.request({"type": "op", **request}, 30_000)
            assert reply["outcome"] == "ok", reply
            return reply

        op(op="subscribe", consumer="c0")
        op(op="send", entry=0, keys=[None], batched=False)
        first = op(op="receive", consumer="c0", ms=5000)
        assert (first.get("delivered_entry"), first.get("redelivery_count")) == (0, 0), first
        op(op="negative_acknowledge", consumer="c0", entry=0, index=-1)
        if gap_s is not None:
            time.sleep(gap_s)
            op(op="negative_acknowledge", consumer="c0", entry=0, index=-1)  # the same delivery again
        time.sleep(1.0)  # the count-1 copy lands in the receiver queue; the application never takes it
        op(op="close", consumer="c0")
    finally:
        driver.stop()
    after = pulsar_client.subscribe(topic, "app", consumer_type=pulsar.ConsumerType.Shared)
    back = [(m.data(), m.redelivery_count()) for m in drain(after, idle_ms=1500)]
    dead = [m.data() for m in drain(letters, idle_ms=1000)]
    for closing in (after, letters):
        closing.close()
    return back, dead
