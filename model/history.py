"""One history event: the shape shared by the recording wrapper (JSON lines) and the Spark corpora
(Parquet).

An event is one op of one program with its completion, flattened into typed columns so that a
corpus can be diffed column by column: the op's kind and arguments, the outcome, the time, the
observed delivery or cursor, the error, and the spec (its id, and the full spec as JSON). Events
round-trip: `op_of(event)` and `completion_of(event)` rebuild what the model checks, so a stored
history can be checked again offline.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from model import cursor as cur
from model import ops as o
from model.spec import InitialPosition, NackBackoff, Spec, SubscriptionType

OP_KINDS: dict[type, str] = {
    o.Send: "send", o.Subscribe: "subscribe", o.Receive: "receive", o.Acknowledge: "acknowledge",
    o.AcknowledgeCumulative: "acknowledge_cumulative", o.NegativeAcknowledge: "negative_acknowledge",
    o.ReconsumeLater: "reconsume_later",
    o.RedeliverUnacknowledgedMessages: "redeliver_unacknowledged_messages", o.Close: "close", o.Seek: "seek",
    o.Tick: "tick", o.Unload: "unload", o.Restart: "restart", o.Crash: "crash", o.ReadCursor: "read_cursor",
    o.CrashClient: "crash_client", o.CutNetwork: "cut_network",
    o.StallNetwork: "stall_network", o.SlowNetwork: "slow_network",
}
OP_TYPES = {kind: op_type for op_type, kind in OP_KINDS.items()}


class MalformedEvent(ValueError):
    """An event (or a line of a history file) that does not match the schema; says what is wrong."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    program_id: str
    step: int
    spec_id: str
    spec: str
    op: str
    consumer: str | None = None
    entry: int | None = None
    index: int | None = None
    keys: tuple[str | None, ...] | None = None
    batched: bool | None = None
    ms: int | None = None
    outcome: str = "ok"
    at: int = 0
    delivered_entry: int | None = None
    delivered_index: int | None = None
    redelivery_count: int | None = None
    cursor: str | None = None
    sent: int | None = None
    error: str | None = None
    partition: int | None = None  # a send's on a partitioned topic: the partition it went to


FIELDS = tuple(f.name for f in dataclasses.fields(Event))
_REQUIRED = ("program_id", "step", "spec_id", "spec", "op")
_TYPES = {"program_id": str, "step": int, "spec_id": str, "spec": str, "op": str, "consumer": str, "entry": int,
          "index": int, "keys": list, "batched": bool, "ms": int, "outcome": str, "at": int, "delivered_entry": int,
          "delivered_index": int, "redelivery_count": int, "cursor": str, "sent": int, "error": str,
          "partition": int}
_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list"}


def spec_json(spec: Spec) -> str:
    return json.dumps(dataclasses.asdict(spec), sort_keys=True, default=str)


def spec_id(spec: Spec) -> str:
    """A short key for the spec, from the fields that differ from their defaults only: a field
    added to `Spec` later (with a default) leaves the ids of existing corpora unchanged, so corpora
    written before and after can still be paired by the diff."""
    changed = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if getattr(spec, f.name) != f.default}
    return hashlib.sha1(json.dumps(changed, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _json_object(text: str, where: str) -> dict:
    """`text` parsed as a JSON object, or a MalformedEvent that says what it is instead."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedEvent(f"{where}not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise MalformedEvent(f"{where}not a JSON object but {type(raw).__name__}")
    return raw


# Fields that `Spec` no longer has, with the one value they always held: an older history that
# carries one still reads (the field dropped); another value is refused, since the spec it meant
# is not one the model has. `dlq_deliveries_are_max_plus_one`: every client delivers
# max_redeliver_count + 1 times (suites/broker/test_partitioned_topic.py::
# test_a_message_nacked_past_the_limit_goes_to_a_dead_letter_topic, the Go client too), and
# nothing read the field.
RETIRED = {"dlq_deliveries_are_max_plus_one": True}


def spec_of(text: str) -> Spec:
    """The spec of `spec_json` text; fields it lacks take their defaults (older corpora)."""
    raw = _json_object(text, "spec is ")
    for name, value in RETIRED.items():
        if name in raw:
            if raw.pop(name) != value:
                raise MalformedEvent(f"spec has {name} other than {value!r}, a field the model no longer has")
    unknown = sorted(set(raw) - {f.name for f in dataclasses.fields(Spec)})
    if unknown:
        raise MalformedEvent(f"spec has unknown fields {unknown}")
    try:
        if "subscription_type" in raw:
            raw["subscription_type"] = SubscriptionType(raw["subscription_type"])
        if "initial_position" in raw:
            raw["initial_position"] = InitialPosition(raw["initial_position"])
        if isinstance(raw.get("nack_backoff"), dict):
            raw["nack_backoff"] = NackBackoff(**raw["nack_backoff"])
        return Spec(**raw)
    except (ValueError, TypeError) as error:
        raise MalformedEvent(f"spec: {error}") from None


def cursor_text(cursor: cur.Cursor | tuple[cur.Cursor, ...]) -> str:
    """Canonical text of what the broker shows: markDelete and the ranges (`3|(4,6)(7,8)`); on a
    consumer of several cursors (partitions, topics) each one's, in their order, joined by `;`."""
    if isinstance(cursor, tuple):
        return ";".join(map(cursor_text, cursor))
    return f"{cursor.mark_delete}|" + "".join(f"({lo},{hi})" for lo, hi in cursor.individually_deleted)


def cursor_of(text: str) -> cur.Cursor | tuple[cur.Cursor, ...]:
    if ";" in text:
        return tuple(map(cursor_of, text.split(";")))
    head, _, body = text.partition("|")
    ranges = [part.split(",") for part in body.strip("()").split(")(") if part]
    acked = {e for lo, hi in ranges for e in range(int(lo) + 1, int(hi) + 1)}
    return cur.from_acknowledged(acked, mark_delete=int(head))


def event_of(program_id: str, spec: Spec, step: int, op: o.Op, completion: o.Completion,
             *, spec_text: str | None = None, spec_key: str | None = None) -> Event:
    values = event_values(program_id, spec, step, op, completion, spec_text=spec_text, spec_key=spec_key)
    return Event(**dict(zip(FIELDS, values)))


def event_values(program_id: str, spec: Spec, step: int, op: o.Op, completion: o.Completion,
                 *, spec_text: str | None = None, spec_key: str | None = None) -> tuple:
    """The fields of `event_of(...)` as a tuple in FIELDS order, without the Event: the trace
    generator turns millions of these into Arrow columns (a tuple per event, transposed at once)."""
    message = getattr(op, "message", None)
    entry, index = (message.entry, message.index) if message is not None else (None, None)
    kind = type(op)
    keys = batched = ms = delivered_entry = delivered_index = redelivery_count = cursor = sent = None
    if kind is o.Send:
        keys, batched = op.keys, op.batched
    elif kind is o.Tick or kind is o.CutNetwork or kind is o.StallNetwork or kind is o.SlowNetwork:
        ms = op.ms
    elif kind is o.Receive:
        ms = op.timeout_ms  # how long the receive waited: a reproduction waits as long
    elif kind is o.ReconsumeLater:
        ms = op.delay_ms
    value = completion.value
    if isinstance(value, o.Delivery):
        delivered_entry, delivered_index, redelivery_count = value.message.entry, value.message.index, value.redelivery_count
    elif isinstance(value, cur.Cursor) or (kind is o.ReadCursor and isinstance(value, tuple)):
        cursor = cursor_text(value)
    elif isinstance(value, tuple):
        sent = len(value)
    return (program_id, step, spec_key or spec_id(spec), spec_text or spec_json(spec), OP_KINDS[kind],
            getattr(op, "consumer", None), entry, index, keys, batched, ms, completion.outcome.value, completion.at,
            delivered_entry, delivered_index, redelivery_count, cursor, sent, completion.error, completion.partition)


if FIELDS != ("program_id", "step", "spec_id", "spec", "op", "consumer", "entry", "index", "keys", "batched", "ms",
              "outcome", "at", "delivered_entry", "delivered_index", "redelivery_count", "cursor", "sent", "error",
              "partition"):
    raise RuntimeError("Event's fields changed: event_values lists them in the order above")


def op_of(event: Event) -> o.Op:
    op_type = OP_TYPES.get(event.op)
    if op_type is None:
        raise MalformedEvent(f"step {event.step}: unknown op {event.op!r} (known: {', '.join(OP_TYPES)})")
    if op_type is o.Send:
        return o.Send(keys=tuple(event.keys or (None,)), batched=bool(event.batched))
    if op_type is o.Tick:
        return o.Tick(ms=event.ms or 0)
    if op_type is o.CutNetwork:
        return o.CutNetwork(ms=1000 if event.ms is None else event.ms)
    if op_type is o.StallNetwork:
        return o.StallNetwork(ms=300 if event.ms is None else event.ms)
    if op_type is o.SlowNetwork:
        return o.SlowNetwork(ms=100 if event.ms is None else event.ms)
    if op_type is o.Receive:
        return o.Receive(consumer=event.consumer, timeout_ms=event.ms)
    if op_type is o.ReconsumeLater:
        if event.entry is None:
            raise MalformedEvent(f"step {event.step}: reconsume_later needs a message (entry is empty)")
        return o.ReconsumeLater(consumer=event.consumer, message=o.MessageId(event.entry, -1 if event.index is None
                                                                             else event.index), delay_ms=event.ms or 0)
    kwargs = {}
    if "consumer" in op_type.__dataclass_fields__:
        kwargs["consumer"] = event.consumer
    if "message" in op_type.__dataclass_fields__:
        if event.entry is None:
            raise MalformedEvent(f"step {event.step}: {event.op} needs a message (entry is empty)")
        kwargs["message"] = o.MessageId(event.entry, -1 if event.index is None else event.index)
    return op_type(**kwargs)


def completion_of(event: Event) -> o.Completion:
    outcome = o.Outcome(event.outcome)
    value = None
    if event.delivered_entry is not None:
        value = o.Delivery(message=o.MessageId(event.delivered_entry, event.delivered_index
                                               if event.delivered_index is not None else -1),
                           redelivery_count=event.redelivery_count or 0)
    elif event.cursor is not None:
        value = cursor_of(event.cursor)
    elif event.sent is not None:
        # Only the count is stored: the model numbers entries itself and never reads these ids.
        value = tuple(o.MessageId(0, i) for i in range(event.sent))
    return o.Completion(outcome=outcome, at=event.at, value=value, error=event.error, partition=event.partition)


def to_json_line(event: Event) -> str:
    return json.dumps(dataclasses.asdict(event), separators=(",", ":"))


def from_json_line(line: str, *, where: str = "") -> Event:
    raw = _json_object(line, where)
    unknown = sorted(set(raw) - set(FIELDS))
    missing = sorted(f for f in ("program_id", "step", "spec_id", "spec", "op") if f not in raw)
    if unknown or missing:
        raise MalformedEvent(f"{where}unknown fields {unknown}, missing fields {missing}")
    for name, value in raw.items():
        expected = _TYPES[name]
        if value is None and name not in _REQUIRED:
            continue
        if name == "keys":
            if not isinstance(value, list) or not all(k is None or isinstance(k, str) for k in value):
                raise MalformedEvent(f"{where}keys must be a list of strings or nulls, got {value!r}")
            raw["keys"] = tuple(value)
        elif not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise MalformedEvent(f"{where}{name} must be {_TYPE_NAMES[expected]}, got {value!r}")
    try:
        event = Event(**raw)
    except TypeError as error:
        raise MalformedEvent(f"{where}{error}") from None
    if event.outcome not in {x.value for x in o.Outcome}:
        raise MalformedEvent(f"{where}outcome must be ok, fail or info, got {event.outcome!r}")
    try:
        spec_of(event.spec)
        if event.cursor is not None:
            cursor_of(event.cursor)
    except MalformedEvent as error:
        raise MalformedEvent(f"{where}{error}") from None
    except ValueError:
        raise MalformedEvent(f"{where}cursor must read like 3|(4,6)(7,8), got {event.cursor!r}") from None
    op_of(event)
    return event
