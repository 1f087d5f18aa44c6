"""The configuration a run is checked against: broker and client flags, subscription type.

Version-dependent behaviour is a switch here, not a fork of the model's code: a rule that differs
between Pulsar releases (or between clients) reads a field of `Spec`. The defaults describe the
pinned ground truth: broker 4.0.7 with `acknowledgmentAtBatchIndexLevelEnabled=true`, and the
Python client 3.13 (C++ 4.2.0) with its own defaults (ack grouping 100 ms, no ack receipts, nack
delay 60 s, no ack timeout, receiver queue 1000).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from functools import cached_property


class SubscriptionType(StrEnum):
    EXCLUSIVE = "Exclusive"
    FAILOVER = "Failover"
    SHARED = "Shared"
    KEY_SHARED = "Key_Shared"

    def __repr__(self) -> str:
        return f"SubscriptionType.{self.name}"

    # Cached per member: the step functions ask these at every step (and an enum member looked up
    # on its class is slow in Python 3.11).
    @cached_property
    def allows_cumulative_ack(self) -> bool:
        """Cumulative acks are refused by the client on Shared and Key_Shared (concepts-messaging)."""
        return self in (SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER)

    @cached_property
    def single_active_consumer(self) -> bool:
        return self in (SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER)

    @cached_property
    def tracks_redelivery_count(self) -> bool:
        """The broker's redelivery tracker exists only for Shared and Key_Shared (apache/pulsar#6721)."""
        return not self.single_active_consumer


class InitialPosition(StrEnum):
    LATEST = "Latest"
    EARLIEST = "Earliest"

    def __repr__(self) -> str:
        return f"InitialPosition.{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class NackBackoff:
    """A redelivery backoff for negative acks (the Java client's MultiplierRedeliveryBackoff,
    `negativeAckRedeliveryBackoff`): a nack of a copy with redelivery count n waits `delay_ms(n)`
    instead of the nack delay."""

    min_ms: int
    max_ms: int
    multiplier: float

    def __post_init__(self) -> None:
        if not 0 <= self.min_ms <= self.max_ms:
            raise ValueError(f"nack backoff needs 0 <= min_ms <= max_ms, got {self.min_ms} and {self.max_ms}")
        if self.multiplier <= 1:
            raise ValueError(f"nack backoff multiplier must be > 1, got {self.multiplier}")

    def delay_ms(self, redelivery_count: int) -> int:
        """MultiplierRedeliveryBackoff.next (pulsar-client 4.0.7): min for count 0, then
        min(floor(min * multiplier^count), max); max past the power where it is reached."""
        if redelivery_count <= 0 or self.min_ms <= 0:
            return self.min_ms
        if redelivery_count > int(math.log(self.max_ms / self.min_ms) / math.log(self.multiplier)) + 1:
            return self.max_ms
        return min(int(self.min_ms * self.multiplier ** redelivery_count), self.max_ms)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Spec:
    """Everything a verdict depends on. Equal specs give the same allowed behaviour."""

    broker_version: str = "4.0.7"
    client: str = "python-3.13"
    subscription_type: SubscriptionType = SubscriptionType.SHARED
    initial_position: InitialPosition = InitialPosition.EARLIEST
    # broker flags
    broker_batch_index_ack: bool = True
    # client flags
    client_batch_index_ack: bool = False
    receiver_queue_size: int = 1000
    ack_grouping_ms: int = 100
    # isAckReceiptEnabled: an acknowledge returns once the broker answered it (the Java client has
    # it, the C++ client and so the Python client do not)
    ack_receipts: bool = False
    ack_timeout_ms: int | None = None
    ack_timeout_tick_ms: int = 1000
    nack_delay_ms: int = 60_000
    # negativeAckRedeliveryBackoff: the nack delay grows with the message's redelivery count (the
    # Java and Go clients have it, the C++ client and so the Python client do not)
    nack_backoff: NackBackoff | None = None
    # broker: Failover waits this long after the active consumer changes before dispatching
    # (activeConsumerFailoverDelayTimeMillis), for the first consumer too (shown by
    # suites/model/test_fidelity_broker.py::
    # test_the_project_broker_pauses_a_failover_switch_for_the_time_the_suite_assumes)
    failover_delay_ms: int = 1000
    max_redeliver_count: int | None = None
    # A seek to an index of a batch sends the index with an ack set that has the indexes before it
    # acknowledged, and the broker keeps them acknowledged for the subscription (the Java client's
    # ConsumerImpl.seekAsync; the C++ and Go clients send the entry only: shown by
    # suites/broker/test_seek_to_a_batch_index.py). Set from the driver's `seek_batch_index`.
    seek_sends_batch_index: bool = False
    # The seeking consumer's client acknowledges what it skips as before its start message id (the
    # Go client's partitionConsumer.MessageReceived: messageShouldBeDiscarded, then AckID), so the
    # seek's target never comes to another consumer; the C++ and Java clients only skip it (shown
    # by suites/broker/test_what_a_seek_skips.py). Set from the driver's `seek_acks_skipped`.
    seek_acks_skipped: bool = False
    # A partitioned topic of this many partitions (0: a topic without partitions), consumed by the
    # client's multi-topics consumer: one cursor per partition (model/partitions.py).
    partitions: int = 0
    # The client's multi-topics consumer keeps a queue of its own on top of each topic's receiver
    # queue (the Java client's MultiTopicsConsumerImpl, of max(2, receiver_queue_size, topics)
    # messages, one more per other topic whose receive was armed when it filled); the C++ client's
    # hands a message on only when the application receives it (shown by
    # suites/broker/test_receiver_queues_of_several_topics.py). Set from the driver's
    # `multi_topics_queue`.
    multi_topics_queue: bool = False
    # Of one topic of several (model.partitions.topic_spec): how many of its messages that queue may
    # hold beyond the topic's receiver queue, any of the queue's room being this topic's.
    parent_queue_size: int = 0
    # A consumer of this many topics without partitions (0: of one topic), subscribed by their names
    # (`ConsumerBuilder.topics`): the client's multi-topics consumer, one cursor per topic, modelled
    # as a partitioned topic is (model/partitions.py); the producer of each send is the one of the
    # topic the suite's router picks, as a partitioned producer's router would.
    multi_topics: int = 0
    # Those topics subscribed by a pattern that matches them alone (`ConsumerBuilder.topicsPattern`),
    # all made before the program: the pattern consumer subscribes to what matches at its subscribe.
    topics_pattern: bool = False
    # `enableRetry`: the consumer subscribes to the topic and to its retry letter topic
    # (`<topic>-<subscription>-RETRY`) through the client's multi-topics consumer, one cursor each
    # (model/partitions.py), and reconsume_later publishes copies to the second. A copy reconsumed
    # more than `max_reconsumes` times goes to the dead-letter topic.
    retry_letter_topic: bool = False
    # The Java client subscribes to the retry letter topic as Shared whatever the subscription type
    # (ConsumerBase.getSubType: "we will produce delayed messages to retry topic"), so its delayed
    # copies wait their delay on Exclusive and Failover too (shown by
    # suites/broker/test_retry_letter_topic.py::test_a_copy_waits_its_delay_on_every_subscription_type).
    retry_subscription_shared: bool = True
    # broker: the delayed delivery tracker's tick (delayedDeliveryTickTimeMillis); not strict
    # (delayedDeliveryDeliverAtTimeStrict=false), it dispatches what is due within one tick from now.
    delayed_delivery_tick_ms: int = 1000

    def __post_init__(self) -> None:
        if self.receiver_queue_size < 0:
            raise ValueError(f"receiver_queue_size must be >= 0, got {self.receiver_queue_size}")
        if self.ack_timeout_ms is not None and self.ack_timeout_ms < 1000:
            raise ValueError(f"ack_timeout_ms must be >= 1000 (client minimum), got {self.ack_timeout_ms}")
        if self.nack_delay_ms < 0:
            raise ValueError(f"nack_delay_ms must be >= 0, got {self.nack_delay_ms}")
        if self.max_redeliver_count is not None and self.max_redeliver_count < 1:
            raise ValueError(f"max_redeliver_count must be >= 1, got {self.max_redeliver_count}")
        if self.partitions < 0 or self.partitions == 1:
            raise ValueError(f"partitions must be 0 (no partitions) or at least 2, got {self.partitions}")
        if self.partitions and self.receiver_queue_size == 0:
            # The client refuses a zero-queue consumer on a partitioned topic (shown by
            # suites/broker/test_defaults_and_limits.py::test_a_zero_queue_consumer_cannot_subscribe_to_a_partitioned_topic).
            raise ValueError("receiver_queue_size 0 on a partitioned topic: the client refuses it")
        if self.multi_topics < 0 or self.multi_topics == 1:
            raise ValueError(f"multi_topics must be 0 (one topic) or at least 2, got {self.multi_topics}")
        if self.multi_topics and self.partitions:
            raise ValueError("a multi-topics consumer of partitioned topics is not modelled")
        if self.topics_pattern and not self.multi_topics:
            raise ValueError("topics_pattern needs multi_topics: the topics the pattern matches")
        if self.multi_topics and self.receiver_queue_size == 0:
            # The Java client refuses it (MultiTopicsConsumerImpl: "Receiver queue size needs to be
            # greater than 0 for Topics Consumer"); the C++ client takes it and drops what the
            # broker dispatches (KD-45, suites/broker/test_defaults_and_limits.py::
            # test_kd45_a_zero_queue_consumer_of_several_topics_is_taken_and_gets_nothing).
            raise ValueError("receiver_queue_size 0 on a consumer of several topics: the client refuses it")
        if self.retry_letter_topic and (self.partitions or self.multi_topics):
            raise ValueError("a retry letter topic on a partitioned topic or with several topics is not modelled: "
                             "they and the retry topic would be one multi-topics consumer")
        if self.retry_letter_topic and self.ack_timeout_ms is not None:
            raise ValueError("an ack timeout with a retry letter topic is not modelled: one unacked-message tracker "
                             "would span an Exclusive topic and a Shared retry topic")
        if self.retry_letter_topic and self.receiver_queue_size == 0:
            # A consumer of two topics is a multi-topics consumer, which refuses a zero queue
            # (PulsarClientImpl.subscribeAsync: "Receiver queue size needs to be greater than 0 for
            # Topics Consumer"; the Go client refuses RetryEnable with EnableZeroQueueConsumer).
            raise ValueError("receiver_queue_size 0 with a retry letter topic: the client refuses it")

    @property
    def batch_index_ack(self) -> bool:
        """Batch-index acks take effect only when both the broker and the client enable them (PIP-54)."""
        return self.broker_batch_index_ack and self.client_batch_index_ack

    @property
    def topics(self) -> int:
        """How many topics the consumer reads, each with a cursor of its own: the partitions, the
        topics it subscribed to, or the topic and its retry letter topic; 0 for one topic alone
        (model/partitions.py models more than one)."""
        return self.partitions or self.multi_topics or (2 if self.retry_letter_topic else 0)

    @property
    def routed_topics(self) -> int:
        """How many topics a send's router picks among: the partitions, or the topics of a
        multi-topics consumer; 0 when every send goes to the one topic (or to the retry consumer's topic)."""
        return self.partitions or self.multi_topics

    @property
    def max_reconsumes(self) -> int:
        """How many times a message may be reconsumed before its next reconsume_later dead-letters it:
        the dead-letter policy's max_redeliver_count, 16 without one (RetryMessageUtil.MAX_RECONSUMETIMES;
        the Go client's MaxReconsumeTimes)."""
        return 16 if self.max_redeliver_count is None else self.max_redeliver_count

    @property
    def effective_nack_delay_ms(self) -> int:
        """The client clamps the nack delay to at least 100 ms (C++ MIN_NACK_DELAY_MILLIS)."""
        return max(self.nack_delay_ms, 100)

    @property
    def nack_window_ms(self) -> tuple[int, int]:
        """When a nacked message's redelivery is requested, after the nack: the tracker ticks every delay/3.
        With a backoff, the window of a copy with count 0 (`nack_window_for`)."""
        if self.nack_backoff is not None:
            return self.nack_window_for(0)
        delay = self.effective_nack_delay_ms
        return delay, delay + delay // 3 + 1

    def nack_window_for(self, redelivery_count: int) -> tuple[int, int]:
        """The nack window of a copy received with `redelivery_count`. With a backoff it opens at the
        backoff's delay for that count (Java NegativeAcksTracker.add: now + backoff.next(count), no
        100 ms floor) and closes by the longest delay and a third of it: the tracker's timer,
        set at the first nack while idle, may be running for a later due time (a message nacked
        before with a higher count), and Go's ticks every third of the delay for count 1."""
        if self.nack_backoff is None:
            return self.nack_window_ms
        longest = self.nack_backoff.max_ms
        return self.nack_backoff.delay_ms(redelivery_count), longest + longest // 3 + 1

    @property
    def ack_timeout_window_ms(self) -> tuple[int, int] | None:
        """Ack-timeout redelivery is requested between the timeout and one tick after it."""
        if self.ack_timeout_ms is None:
            return None
        return self.ack_timeout_ms, self.ack_timeout_ms + self.ack_timeout_tick_ms

    def with_(self, **changes: object) -> Spec:
        return replace(self, **changes)

    def __repr__(self) -> str:
        """Runnable Python naming only what differs from the defaults."""
        changed = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                   if getattr(self, f.name) != f.default]
        return f"Spec({', '.join(changed)})"

    def describe(self) -> str:
        flags = [self.subscription_type.value, f"broker {self.broker_version}", self.client,
                 f"queue={self.receiver_queue_size}"]
        if self.batch_index_ack:
            flags.append("batch-index-ack")
        if self.ack_receipts:
            flags.append("ack-receipts")
        if self.ack_timeout_ms is not None:
            flags.append(f"ack-timeout={self.ack_timeout_ms}ms")
        if self.nack_backoff is not None:
            backoff = self.nack_backoff
            flags.append(f"nack-backoff={backoff.min_ms}..{backoff.max_ms}ms x{backoff.multiplier:g}")
        else:
            flags.append(f"nack-delay={self.effective_nack_delay_ms}ms")
        if self.max_redeliver_count is not None:
            flags.append(f"dlq-max={self.max_redeliver_count}")
        if self.seek_sends_batch_index:
            flags.append("seek-sends-batch-index")
        if self.seek_acks_skipped:
            flags.append("seek-acks-skipped")
        if self.partitions:
            flags.append(f"partitions={self.partitions}")
        if self.multi_topics:
            flags.append(f"topics={self.multi_topics}" + (" by pattern" if self.topics_pattern else ""))
        if self.retry_letter_topic:
            flags.append("retry-letter-topic")
        if self.multi_topics_queue:
            flags.append("multi-topics-queue")
        return ", ".join(flags)
