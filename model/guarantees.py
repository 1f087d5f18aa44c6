"""The guarantees the suite checks, each with the promise it stands for.

A violation names exactly one of these, so a failure reads as "broke <guarantee>: <what happened>",
and the conformance matrix has one row per guarantee.
"""

from enum import StrEnum


class Guarantee(StrEnum):
    NO_REDELIVERY_AFTER_ACK = "no-redelivery-after-ack"
    NO_DUPLICATE_WITHOUT_CAUSE = "no-duplicate-without-cause"
    NO_LOSS = "no-loss"
    NO_PHANTOM = "no-phantom"
    ORDER = "order"
    CUMULATIVE_REFUSED_ON_SHARED = "cumulative-refused-on-shared"
    EXCLUSIVE = "exclusive"
    KEY_SHARED_STICKINESS = "key-shared-stickiness"
    REDELIVERY_COUNT = "redelivery-count"
    DEAD_LETTER = "dead-letter"
    CURSOR = "cursor"
    ACK = "ack"
    SUBSCRIBE = "subscribe"
    RECEIVER_QUEUE = "receiver-queue"
    RECONSUME_LATER = "reconsume-later"

    @property
    def promise(self) -> str:
        return PROMISES[self]


PROMISES = {
    Guarantee.NO_REDELIVERY_AFTER_ACK:
        "a message whose acknowledgement reached the broker is not delivered again (concepts-messaging: "
        "Acknowledgment), outside the documented exceptions: crash, seek, batch without batch-index ack",
    Guarantee.NO_DUPLICATE_WITHOUT_CAUSE:
        "a message held unacknowledged by one consumer is delivered again only after a redelivery cause: "
        "nack, ack timeout, redeliver_unacknowledged_messages, the consumer's close, a reconnect",
    Guarantee.NO_LOSS:
        "every unacknowledged message is eventually delivered to a connected consumer",
    Guarantee.NO_PHANTOM: "only published messages are delivered",
    Guarantee.ORDER: "each consumer receives first deliveries in publish order",
    Guarantee.CUMULATIVE_REFUSED_ON_SHARED:
        "cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions",
    Guarantee.EXCLUSIVE: "an Exclusive subscription has at most one consumer (ConsumerBusy)",
    Guarantee.KEY_SHARED_STICKINESS:
        "on Key_Shared, a key stays with its consumer while that consumer is connected, unless a new consumer joins",
    Guarantee.REDELIVERY_COUNT:
        "the redelivery count grows by one per redelivery on Shared/Key_Shared, resets when the last consumer "
        "leaves or the topic reopens, and is always 0 on Exclusive/Failover",
    Guarantee.DEAD_LETTER:
        "with a dead-letter policy of max_redeliver_count M the application sees counts 0..M, then the message "
        "goes to the dead-letter topic",
    Guarantee.CURSOR:
        "the broker's cursor (markDeletePosition, individually deleted ranges) reflects exactly the acks it received",
    Guarantee.ACK: "acknowledging a received message succeeds on a connected consumer",
    Guarantee.SUBSCRIBE: "subscribing succeeds unless the subscription type forbids it",
    Guarantee.RECEIVER_QUEUE:
        "on Shared, the broker sends a consumer only what its flow permits allow (at most receiver_queue_size "
        "entries, whole batches; one message for a zero-queue consumer that is waiting in receive): what an idle "
        "consumer cannot hold goes to the others",
    Guarantee.RECONSUME_LATER:
        "with enableRetry, reconsume_later(m, delay) succeeds, acknowledges m and publishes a copy to the retry "
        "letter topic, delivered not before the delay (less the broker's delayed-delivery tick); a message "
        "reconsumed max_redeliver_count times goes to the dead-letter topic at its next reconsume_later",
}
