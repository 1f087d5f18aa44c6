"""The conformance suite's checks: per guarantee, the ops a program may use and the specs it runs on.

Each `Check` becomes one test per spec (suites/conformance/test_*.py), and the suite's own quality
run (suites/quality) runs the same list against every faulty target. A focused vocabulary finds a
fault in fewer examples than all ops at once, so every area lists only the ops it is about plus
what it needs to get there (send, subscribe, receive; `drain` is always there).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.spec import InitialPosition, Spec, SubscriptionType

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
EXCLUSIVE = SHARED.with_(subscription_type=SubscriptionType.EXCLUSIVE)
# The project's broker pauses 100 ms after a Failover switch (activeConsumerFailoverDelayTimeMillis;
# Pulsar's default is 1000): a model pause at least as long never asks for a delivery too early,
# and a longer one only asks less.
FAILOVER = SHARED.with_(subscription_type=SubscriptionType.FAILOVER, failover_delay_ms=200)
KEY_SHARED = SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED)
ALL_TYPES = {"Exclusive": EXCLUSIVE, "Failover": FAILOVER, "Shared": SHARED, "Key_Shared": KEY_SHARED}
BASE = ("send", "subscribe", "receive")


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    area: str
    kinds: tuple[str, ...]
    specs: dict[str, Spec]
    slow: bool = False


CHECKS = (
    Check(area="individual_ack", kinds=BASE + ("acknowledge", "read_cursor", "close"),
          specs={**ALL_TYPES, "Shared-latest": SHARED.with_(initial_position=InitialPosition.LATEST)}),
    Check(area="cumulative_ack", kinds=BASE + ("acknowledge_cumulative", "close", "read_cursor"),
          specs=ALL_TYPES),
    Check(area="exclusive_and_failover", kinds=BASE + ("close", "acknowledge"),
          specs={"Exclusive": EXCLUSIVE, "Failover": FAILOVER}),
    Check(area="negative_ack", kinds=BASE + ("negative_acknowledge", "acknowledge", "tick"), specs=ALL_TYPES),
    Check(area="redelivery_count_and_dead_letter",
          kinds=BASE + ("negative_acknowledge", "redeliver_unacknowledged_messages", "close", "tick"),
          specs={"Shared": SHARED, "Shared-dlq1": SHARED.with_(max_redeliver_count=1),
                 "Key_Shared-dlq2": KEY_SHARED.with_(max_redeliver_count=2), "Exclusive": EXCLUSIVE}),
    Check(area="key_shared", kinds=BASE + ("acknowledge", "close"), specs={"Key_Shared": KEY_SHARED}),
    Check(area="consumer_close", kinds=BASE + ("acknowledge", "close", "read_cursor"), specs=ALL_TYPES),
    Check(area="batches", kinds=BASE + ("acknowledge", "negative_acknowledge", "close", "read_cursor"),
          specs={"Shared": SHARED, "Shared-batch-index-ack": SHARED.with_(client_batch_index_ack=True),
                 "Exclusive-batch-index-ack": EXCLUSIVE.with_(client_batch_index_ack=True)}),
    Check(area="seek", kinds=BASE + ("acknowledge", "seek"),
          specs={"Exclusive": EXCLUSIVE, "Shared": SHARED,
                 "Shared-batch-index-ack": SHARED.with_(client_batch_index_ack=True)}),
    Check(area="receiver_queue", kinds=BASE + ("acknowledge", "close", "drain_others"),
          specs={"Shared-queue-1": SHARED.with_(receiver_queue_size=1), "Shared-queue-3": SHARED.with_(receiver_queue_size=3),
                 "Shared-zero-queue": SHARED.with_(receiver_queue_size=0)}),
    # Restart and crash are checked by suites/broker/test_persistence.py: inside generated programs
    # they would restart the session's shared broker once per example.
    Check(area="persistence", kinds=BASE + ("acknowledge", "acknowledge_cumulative", "read_cursor", "unload"),
          specs={"Exclusive": EXCLUSIVE, "Shared": SHARED}),
    Check(area="zero_queue", kinds=BASE + ("acknowledge", "negative_acknowledge", "close"),
          specs={"Shared": SHARED.with_(receiver_queue_size=0), "Exclusive": EXCLUSIVE.with_(receiver_queue_size=0)}),
    Check(area="ack_timeout", kinds=BASE + ("acknowledge", "tick"), slow=True,
          specs={"Shared": SHARED.with_(ack_timeout_ms=10_000), "Exclusive": EXCLUSIVE.with_(ack_timeout_ms=10_000)}),
)


def check(area: str) -> Check:
    return next(c for c in CHECKS if c.area == area)


def cases(area: str) -> list[tuple[str, Spec]]:
    """(id, spec) pairs for pytest.mark.parametrize."""
    return list(check(area).specs.items())
