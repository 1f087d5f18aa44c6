"""How soon a negatively acknowledged message comes back: the nack delay counts from the call.

The C++ client's NegativeAcksTracker (pulsar-client-cpp 3.8 and later, under pulsar-client 3.13)
takes the due time when `negative_acknowledge` is called (`add`: now + the delay, its lowest 8
bits of nanoseconds trimmed), restarts its timer of delay/3 (33 ms for the 100 ms minimum) at
every nack, and asks the broker for what is due at each tick. So a message comes back no sooner
than the delay after the call, usually one tick later.

A history stamps each op when its reply reaches the suite: a nack's reply can come back several
milliseconds after the call (a driver process, a loaded machine), so measured from that stamp the
message can come back sooner than the delay. The model opens the nack window the delay after the
earliest the call can have been made, the previous op's completion
(model/transitions/redelivery.py, `negative_acknowledge`; the model's side by example in
suites/model/test_nack_window.py).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

import pulsar
import pytest

from fixtures.targets.lockstep import Lockstep
from model import ops as o
from model.spec import Spec, SubscriptionType

DELAY_MS = 100  # the client's minimum (MIN_NACK_DELAY_MILLIS)
ROUNDS = 25


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


@pytest.mark.broker
@pytest.mark.guarantee("no-duplicate-without-cause")
def test_a_nacked_message_comes_back_no_sooner_than_the_delay_after_the_call(pulsar_client, names, record_property):
    """One message nacked and received again, many times: from the moment the call was made to the
    moment receive returned it, never less than the delay."""
    topic = names.topic()
    consumer = pulsar_client.subscribe(topic, "nack-timing", consumer_type=pulsar.ConsumerType.Shared,
                                       negative_ack_redelivery_delay_ms=DELAY_MS)
    producer = pulsar_client.create_producer(topic)
    producer.send(b"0")
    message = consumer.receive(5000)
    from_call, from_return = [], []
    for _ in range(ROUNDS):
        called = time.monotonic()
        consumer.negative_acknowledge(message)
        returned = time.monotonic()
        message = consumer.receive(5000)
        came = time.monotonic()
        from_call.append(_ms(came - called))
        from_return.append(_ms(came - returned))
    producer.close()
    consumer.close()
    record_property("nack_back_after_call_ms", f"min {min(from_call)} median {statistics.median(from_call)} "
                                               f"max {max(from_call)}")
    assert message.redelivery_count() == ROUNDS
    assert min(from_call) >= DELAY_MS, f"came back {min(from_call)} ms after the call: {from_call}"


class LateNackReplies:
    """A target whose nack replies reach the suite `late_ms` after the call returned, as a driver's
    reply does on a loaded machine: the completion is stamped then."""

    def __init__(self, target, late_ms: int) -> None:
        self.target, self.late_ms, self.name = target, late_ms, target.name

    def reset(self, spec, program_id):
        self.target.reset(spec, program_id)

    def invoke(self, op):
        completion = self.target.invoke(op)
        if isinstance(op, o.NegativeAcknowledge):
            time.sleep(self.late_ms / 1000)
            completion = replace(completion, at=completion.at + self.late_ms)
        return completion

    def ground_truth(self):
        return self.target.ground_truth()

    def close(self):
        pass  # the fixture closes the target


@pytest.mark.broker
@pytest.mark.guarantee("no-duplicate-without-cause")
def test_a_nack_replied_late_comes_back_sooner_after_its_reply_than_the_delay(pulsar_target, names, record_property):
    """In lock-step with the model: each nack's reply is stamped 50 ms after the call; the message
    comes back about 50-85 ms after that stamp, which the model allows because the window opens
    the delay after the op before the nack completed. Counting the delay from the stamp
    (the rule before) rejects it as a duplicate nothing asked for."""
    late = 50
    spec = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=DELAY_MS)
    run = Lockstep(LateNackReplies(pulsar_target, late), spec, names.topic().rsplit("/", 1)[1])
    run.do(o.Subscribe(consumer="c0"))
    run.do(o.Send())
    assert run.receive("c0", timeout_ms=5000).message == o.MessageId(0)
    after_stamp = []
    for count in range(1, 9):
        nacked = run.do(o.NegativeAcknowledge(consumer="c0", message=o.MessageId(0)))
        came = run.do(o.Receive(consumer="c0", timeout_ms=5000))
        assert came.value == o.Delivery(message=o.MessageId(0), redelivery_count=count)
        after_stamp.append(came.at - nacked.at)
    record_property("nack_back_after_late_stamp_ms", after_stamp)
    assert min(after_stamp) < DELAY_MS, "the late stamp should have made it come back sooner than the delay"

