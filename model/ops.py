"""The operations a conformance program is made of, named after the Pulsar client API, and their
completions.

A program is a sequence of ops on one topic and one subscription. Each op completes as `ok` (it
happened), `fail` (it did not happen: the client refused it) or `info` (unknown: e.g. a timeout
whose effect may or may not have reached the broker), in the Jepsen sense. A completion carries
the observed value (the delivered message, the cursor read) and `at`, the time in milliseconds
since the program started, read from the target's clock (logical on the model target).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from model.cursor import Cursor
from model.records import maker


class MessageId(NamedTuple):
    """A message of the program's topic: entry number, and batch index (-1 when not batched).

    A named tuple rather than a dataclass: the model compares and hashes message ids more than
    anything else, and a tuple does both in C (a dataclass's Python-level `__eq__`, `__hash__` and
    `__lt__` cost the model about a tenth of its time). Ordered by (entry, index); as a tuple it
    also equals a plain tuple: `MessageId(3) == (3, -1)`."""

    entry: int
    index: int = -1

    def __str__(self) -> str:
        return f"m{self.entry}" if self.index < 0 else f"m{self.entry}.{self.index}"


class Outcome(StrEnum):
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class Send:
    """`producer.send`: one entry; a batch of `len(keys)` messages when `batched`."""

    keys: tuple[str | None, ...] = (None,)
    batched: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscribe:
    consumer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Receive:
    """`consumer.receive(timeout)`: a message, or nothing within the timeout (None: the target's default)."""

    consumer: str
    timeout_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledge:
    consumer: str
    message: MessageId


@dataclass(frozen=True, slots=True, kw_only=True)
class AcknowledgeCumulative:
    consumer: str
    message: MessageId


@dataclass(frozen=True, slots=True, kw_only=True)
class NegativeAcknowledge:
    consumer: str
    message: MessageId


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconsumeLater:
    """`consumer.reconsumeLater(message, delay)` (a consumer with `enableRetry`, Spec.retry_letter_topic):
    the client publishes a copy of the message to the retry letter topic, delivered after `delay_ms`,
    and acknowledges the message once that send completes; a message reconsumed more times than the
    dead-letter policy allows goes to the dead-letter topic instead (model/partitions.py)."""

    consumer: str
    message: MessageId
    delay_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RedeliverUnacknowledgedMessages:
    consumer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Close:
    """`consumer.close()`: flushes the consumer's grouped acks, drops its pending nacks."""

    consumer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Seek:
    consumer: str
    message: MessageId


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick:
    """Let `ms` milliseconds pass (logical on the model, a real sleep on a broker)."""

    ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Unload:
    """Unload the topic through the admin API: the broker persists the cursor and reopens the topic."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Restart:
    """Graceful broker restart on the same data."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Crash:
    """`kill -9` the broker and start it on the same data."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CrashClient:
    """`kill -9` of the client's process: every consumer and producer of the program's client is
    gone at once, its grouped acks unflushed and its trackers (nack, ack timeout) dropped; the
    program goes on with a new client on the same topic, whose consumers subscribe again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CutNetwork:
    """Close every connection between the clients and the broker and refuse new ones for `ms`
    milliseconds (the broker's host cut off, then back), through a proxy in front of the broker
    (fixtures/network.py). The broker keeps its state; every consumer leaves, and its client
    reconnects once the network is back."""

    ms: int = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class StallNetwork:
    """Let nothing pass between the clients and the broker for `ms` milliseconds, then everything
    held, in order, through the proxy in front of the broker (fixtures/network.py): a short
    partition as TCP lives it, the connections kept and every byte late, none lost. The program
    waits it out; what the clients' timers sent meanwhile (a grouped ack's flush, a nack's
    redelivery request) reaches the broker when it ends, and what the broker sent reaches them."""

    ms: int = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowNetwork:
    """Delay every byte between the clients and the broker by `ms` milliseconds each way, for the
    rest of the program, through the proxy in front of the broker (fixtures/network.py): a slow
    network, every request and every dispatch late by that much, in order, none lost. The admin
    API (unload, cursor reads) does not go through the proxy."""

    ms: int = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryCopy:
    """Never in a program: what a reconsume_later does on the retry letter topic, as
    model/partitions.py hands it to that topic's state. The client's retry producer publishes a
    copy with `key`, which the broker's delayed delivery tracker holds back until some moment
    between `deliver_from` and `deliver_by` (model/transitions/consumers.py, `retry_copy`)."""

    key: str | None
    deliver_from: int
    deliver_by: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadCursor:
    """Read the subscription's cursor from the broker (internalStats)."""


Op = (Send | Subscribe | Receive | Acknowledge | AcknowledgeCumulative | NegativeAcknowledge | ReconsumeLater
      | RedeliverUnacknowledgedMessages | Close | Seek | Tick | Unload | Restart | Crash | CrashClient | CutNetwork
      | StallNetwork | SlowNetwork | ReadCursor)
ACKNOWLEDGES = (Acknowledge, AcknowledgeCumulative)  # the ops that acknowledge, individually or cumulatively


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """What `receive` returned: the message and its redelivery count."""

    message: MessageId
    redelivery_count: int
    key: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    outcome: Outcome
    at: int = 0
    value: Delivery | Cursor | tuple[MessageId, ...] | None = None
    error: str | None = None
    # A send's on a partitioned topic: the partition the client routed its entry to (the broker's
    # message id carries it).
    partition: int | None = None


_make_completion = maker(Completion)  # Completion(...), fast: every step makes one


def ok(value: Delivery | Cursor | tuple[MessageId, ...] | None = None, *, at: int = 0,
       partition: int | None = None) -> Completion:
    return _make_completion(outcome=Outcome.OK, at=at, value=value, partition=partition)


def fail(error: str, *, at: int = 0) -> Completion:
    return _make_completion(outcome=Outcome.FAIL, at=at, error=error)


def info(error: str, *, at: int = 0) -> Completion:
    return _make_completion(outcome=Outcome.INFO, at=at, error=error)
