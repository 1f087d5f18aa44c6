"""The driver protocol's messages (drivers/PROTOCOL.md), encoded and decoded in one place.

A request is one JSON object per line: `id`, `deadline_ms`, `type` (hello, reset, op, close) and,
for an op, the model's op in the history schema's words (model/history.py: `op`, `consumer`,
`entry`, `index`, `keys`, `batched`, `ms`). A reply names the request's `id` and an `outcome`:
ok, fail or info (model/ops.py) with the observed value (`delivered_*` fields as in the history,
or the entry's broker `position` for a send), or `error` when the driver could not perform the
request at all. Also here: the capabilities a driver may declare and what a check needs of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from model import ops as o
from model.history import OP_KINDS, OP_TYPES, spec_json, spec_of
from model.spec import Spec

PROTOCOL = 1

# The ops a driver performs (the client's side of model/ops.py); the others are the suite's.
CLIENT_OPS = ("send", "subscribe", "receive", "acknowledge", "acknowledge_cumulative", "negative_acknowledge",
              "redeliver_unacknowledged_messages", "close", "seek", "tick", "reconsume_later")
BROKER_OPS = ("unload", "restart", "crash", "cut_network", "stall_network", "slow_network",
              "read_cursor")

# What a driver may support beyond the ops: a spec setting its client can apply, or a way of using an op.
CAPABILITIES = {
    "ack_receipts": "acks confirmed by the broker (isAckReceiptEnabled)",
    "nack_backoff": "a redelivery backoff for negative acks (MultiplierRedeliveryBackoff)",
    "ack_grouping_time": "the ack grouping time as a setting (spec ack_grouping_ms other than 100)",
    "batch_index_ack": "batch-index acknowledgement (spec client_batch_index_ack)",
    "receiver_queue_0": "a consumer with receiver queue size 0 (spec receiver_queue_size 0)",
    "ack_timeout": "the unacked-message timeout (spec ack_timeout_ms)",
    "dead_letter_policy": "a dead-letter policy (spec max_redeliver_count)",
    "redeliver_unacknowledged": "consumer.redeliverUnacknowledgedMessages()",
    "seek_by_id": "consumer.seek(message id)",
    "seek_batch_index": "a seek to an index of a batch sends the index; the indexes before it stay acknowledged "
                        "(spec seek_sends_batch_index, set from the hello)",
    "seek_acks_skipped": "the client acknowledges what a seek makes it skip (before its start message id): "
                         "the target never comes to another consumer (spec seek_acks_skipped, set from the hello)",
    "redelivery_count": "a received message's redelivery count (Message.getRedeliveryCount())",
    "tls_client_cert": "a client certificate for mutual TLS (hello auth.tls_cert, auth.tls_key)",
    "partitioned_seek": "a seek by message id on a partitioned topic: the multi-topics consumer seeks the message's "
                        "partition (the Go client refuses it)",
    "retry_letter_topic": "a consumer with enableRetry (spec retry_letter_topic), whose reconsume_later copies "
                          "carry the property COPY_PROPERTY naming their entry",
    "partitioned": "a partitioned topic through the client's multi-topics consumer (spec partitions); a send's "
                   "reply names the partition its entry went to",
    "multi_topics": "a consumer of several topics by their names (spec multi_topics: the reset's `topics`), and "
                    "a send to the one its `topic` names",
    "topics_pattern": "a consumer of several topics by a pattern (spec topics_pattern: the reset's "
                      "`topics_pattern`, which matches the reset's `topics` alone)",
    "multi_topics_queue": "a consumer of several topics keeps a queue of its own on top of each topic's receiver "
                          "queue, of max(2, receiver queue size, topics) messages and one more per other topic "
                          "(spec multi_topics_queue, set from the hello)",
}
# Of those, the ones that say what the client does where clients differ, not what it can be set to,
# each with the Spec field that holds it: the suite checks the client against the rule they name
# (suites/machines.as_run sets the field from the driver's hello).
BEHAVIOURS = {"seek_batch_index": "seek_sends_batch_index", "seek_acks_skipped": "seek_acks_skipped",
              "multi_topics_queue": "multi_topics_queue"}
# The ops that ask the broker for a redelivery it counts (on Shared and Key_Shared); with the ack
# timeout, a spec setting, they are the programs in which a message may come with a count above 0.
COUNTED_REDELIVERIES = ("negative_acknowledge", "redeliver_unacknowledged_messages")
DEFAULT_ACK_GROUPING_MS = 100
# The property a reconsume_later request asks the client to set on the copy it publishes (a custom
# property of reconsumeLater): the copy's entry, which a receive reports instead of the payload's.
COPY_PROPERTY = "conformance-entry"


class ProtocolError(ValueError):
    """A message that does not follow the protocol; the text says what is wrong."""


def needs(kinds: Iterable[str], spec: Spec) -> list[str]:
    """What a program of these op kinds on this spec asks of a driver: op names and capabilities."""
    kinds = set(kinds)
    wanted = [k for k in CLIENT_OPS if k in kinds and k not in ("redeliver_unacknowledged_messages", "seek")]
    if "redeliver_unacknowledged_messages" in kinds:
        wanted.append("redeliver_unacknowledged")
    if "seek" in kinds:
        wanted.append("seek_by_id")
        wanted += [b for b in ("seek_batch_index", "seek_acks_skipped") if getattr(spec, BEHAVIOURS[b])]
    if spec.multi_topics_queue:
        wanted.append("multi_topics_queue")
    if spec.client_batch_index_ack:
        wanted.append("batch_index_ack")
    if spec.receiver_queue_size == 0:
        wanted.append("receiver_queue_0")
    if spec.ack_timeout_ms is not None:
        wanted.append("ack_timeout")
    if spec.max_redeliver_count is not None:
        wanted.append("dead_letter_policy")
    if spec.ack_grouping_ms != DEFAULT_ACK_GROUPING_MS:
        wanted.append("ack_grouping_time")
    if spec.ack_receipts:
        wanted.append("ack_receipts")
    if spec.nack_backoff is not None:
        wanted.append("nack_backoff")
    if spec.partitions:
        wanted.append("partitioned")
        if "seek" in kinds:
            wanted.append("partitioned_seek")
    if spec.multi_topics:
        wanted.append("topics_pattern" if spec.topics_pattern else "multi_topics")
        if "seek" in kinds:
            wanted.append("partitioned_seek")  # the multi-topics consumer's seek, as on partitions
    if spec.retry_letter_topic:
        wanted.append("retry_letter_topic")
    if spec.subscription_type.tracks_redelivery_count and (
            kinds.intersection(COUNTED_REDELIVERIES) or spec.ack_timeout_ms is not None):
        wanted.append("redelivery_count")
    return wanted


def lacking(hello: dict, kinds: Iterable[str], spec: Spec) -> list[str]:
    """What of `needs(kinds, spec)` the driver's hello reply does not declare."""
    offered = set(hello.get("ops") or ()) | set(hello.get("capabilities") or ())
    return [n for n in needs(kinds, spec) if n not in offered]


# -- requests ------------------------------------------------------------------------------------
def hello(service_url: str, auth: dict | None = None, send_timeout_ms: int | None = None) -> dict:
    """`auth` is `Credentials.to_wire()` (fixtures/credentials.py): left out when there is none, and
    so is `send_timeout_ms` (the client's own default)."""
    request = {"type": "hello", "protocol": PROTOCOL, "service_url": service_url}
    if auth:
        request["auth"] = auth
    if send_timeout_ms is not None:
        request["send_timeout_ms"] = send_timeout_ms
    return request


def reset(spec: Spec, topic: str, subscription: str) -> dict:
    request = {"type": "reset", "topic": topic, "subscription": subscription, "spec": json.loads(spec_json(spec))}
    if spec.multi_topics:
        request["topics"] = multi_topics(topic, spec.multi_topics)
        if spec.topics_pattern:
            request["topics_pattern"] = topics_pattern(topic)
    return request


def multi_topics(topic: str, count: int) -> list[str]:
    """The topics a consumer of several topics reads in a program on `topic` (spec multi_topics)."""
    return [f"{topic}-{i}" for i in range(count)]


def topics_pattern(topic: str) -> str:
    """The pattern that matches `multi_topics(topic, n)` alone, whatever n: the program's topic is a
    fresh name, and the end anchor keeps out the clients' own topics made from them (`<topic>-0-<subscription>-DLQ`:
    the Go client matches a pattern anywhere in a name, the Java client the whole name)."""
    if not re.fullmatch(r"[A-Za-z0-9:/_-]+", topic):
        raise ValueError(f"{topic}: a topic name a pattern would have to escape (the suite's names are letters, "
                         "digits, '-', '_', ':' and '/')")
    return f"{topic}-[0-9]+$"


def spec_of_wire(raw: dict) -> Spec:
    """The spec a reset request carries (every field of model/spec.py; one left out takes its default)."""
    return spec_of(json.dumps(raw))


def close() -> dict:
    return {"type": "close"}


def op_request(op: o.Op, *, entry: int | None = None, topic: int | None = None) -> dict:
    """An op as a request; `entry` is the number a send publishes (its payloads say "3" or "3.1"), or
    the one a reconsume_later's copy gets (None: the copy goes to the dead-letter topic); `topic`,
    for a consumer of several topics, the index among the reset's `topics` of the one a send goes to."""
    kind = OP_KINDS[type(op)]
    request: dict = {"type": "op", "op": kind}
    consumer = getattr(op, "consumer", None)
    if consumer is not None:
        request["consumer"] = consumer
    message = getattr(op, "message", None)
    if message is not None:
        request["entry"], request["index"] = message.entry, message.index
    if kind == "send":
        request.update(entry=entry, keys=list(op.keys), batched=op.batched)
        if topic is not None:
            request["topic"] = topic
    elif kind == "receive":
        request["ms"] = op.timeout_ms
    elif kind == "tick":
        request["ms"] = op.ms
    elif kind == "reconsume_later":
        request.update(ms=op.delay_ms, copy_entry=entry)
    return request


def op_of_request(request: dict) -> o.Op:
    """The model's op a request carries (what a driver written in Python reads; a send's `entry` aside)."""
    kind = request.get("op")
    if kind not in CLIENT_OPS:
        raise ProtocolError(f"unknown op {kind!r} (known: {', '.join(CLIENT_OPS)})")
    if kind == "send":
        return o.Send(keys=tuple(request.get("keys") or (None,)), batched=bool(request.get("batched")))
    if kind == "tick":
        return o.Tick(ms=int(request.get("ms") or 0))
    consumer = request.get("consumer")
    if not isinstance(consumer, str):
        raise ProtocolError(f"{kind} needs a consumer")
    if kind == "receive":
        return o.Receive(consumer=consumer, timeout_ms=request.get("ms"))
    if kind == "reconsume_later":
        return o.ReconsumeLater(consumer=consumer, message=message_of(request), delay_ms=int(request.get("ms") or 0))
    op_type = OP_TYPES[kind]
    if "message" in op_type.__dataclass_fields__:
        return op_type(consumer=consumer, message=message_of(request))
    return op_type(consumer=consumer)


def message_of(request: dict) -> o.MessageId:
    """The message an acknowledge, negative_acknowledge or seek request names."""
    try:
        return o.MessageId(int(request["entry"]), int(request.get("index", -1)))
    except (KeyError, TypeError, ValueError):
        raise ProtocolError(f"{request.get('op')} needs an entry (and an index, -1 when not batched)") from None


# -- payloads --------------------------------------------------------------------------------------
def payload(entry: int, index: int = -1) -> bytes:
    """What a send publishes for message (entry, index): "3", or "3.1" in a batch."""
    return (str(entry) if index < 0 else f"{entry}.{index}").encode()


def payload_id(data: bytes) -> o.MessageId:
    entry, _, index = data.decode().partition(".")
    return o.MessageId(int(entry), int(index) if index else -1)


# -- replies ---------------------------------------------------------------------------------------
def ok(**value: object) -> dict:
    return {"outcome": "ok", **value}


def delivered(message: o.MessageId, redelivery_count: int, key: str | None) -> dict:
    return ok(delivered_entry=message.entry, delivered_index=message.index, redelivery_count=redelivery_count,
              key=key)


def failed(outcome: str, error_class: str, message: str = "") -> dict:
    """A `fail` (the client refused it) or `info` (unknown whether it happened) reply."""
    return {"outcome": outcome, "error": {"class": error_class, "message": message}}


def error(error_class: str, message: str) -> dict:
    """The driver could not perform the request at all (not understood, unsupported, a driver bug)."""
    return {"outcome": "error", "error": {"class": error_class, "message": message}}


def completion_of(reply: dict, *, at: int) -> o.Completion:
    """An op's reply as the model's completion (a send's value is its message ids, made by the caller).

    `at` is the suite's clock (ms since the reset); a reply's own `at` wins: a driver with a clock of
    its own (the model's logical one) says when the op completed."""
    if isinstance(reply.get("at"), int):
        at = reply["at"]
    outcome = reply.get("outcome")
    if outcome == "ok":
        if reply.get("delivered_entry") is not None:
            return o.ok(o.Delivery(message=o.MessageId(reply["delivered_entry"], reply.get("delivered_index", -1)),
                                   redelivery_count=int(reply.get("redelivery_count") or 0),
                                   key=reply.get("key")), at=at)
        return o.ok(at=at)
    detail = reply.get("error") or {}
    if outcome == "fail":
        return o.fail(str(detail.get("class") or "refused"), at=at)
    if outcome == "info":
        return o.info(f"{detail.get('class') or 'unknown'}: {detail.get('message') or ''}".rstrip(": "), at=at)
    raise ProtocolError(f"reply outcome must be ok, fail, info or error, got {outcome!r}")
