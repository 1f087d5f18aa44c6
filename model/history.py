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
from model.spec import InitialPosition, Spec, SubscriptionType

OP_KINDS: dict[type, str] = {
    o.Send: "send", o.Subscribe: "subscribe", o.Receive: "receive", o.Acknowledge: "acknowledge",
    o.AcknowledgeCumulative: "acknowledge_cumulative", o.NegativeAcknowledge: "negative_acknowledge",
    o.RedeliverUnacknowledgedMessages: "redeliver_unacknowledged_messages", o.Close: "close", o.Seek: "seek",
    o.Tick: "tick", o.Unload: "unload", o.Restart: "restart", o.Crash: "crash", o.ReadCursor: "read_cursor",
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


FIELDS = tuple(f.name for f in dataclasses.fields(Event))


def spec_json(spec: Spec) -> str:
    return json.dumps(dataclasses.asdict(spec), sort_keys=True, default=str)


def spec_id(spec: Spec) -> str:
    return hashlib.sha1(spec_json(spec).encode()).hexdigest()[:12]


def spec_of(text: str) -> Spec:
    raw = json.loads(text)
    raw["subscription_type"] = SubscriptionType(raw["subscription_type"])
    raw["initial_position"] = InitialPosition(raw["initial_position"])
    return Spec(**raw)


def cursor_text(cursor: cur.Cursor) -> str:
    """Canonical text of what the broker shows: markDelete and the ranges (`3|(4,6)(7,8)`)."""
    return f"{cursor.mark_delete}|" + "".join(f"({lo},{hi})" for lo, hi in cursor.individually_deleted)


def cursor_of(text: str) -> cur.Cursor:
    head, _, body = text.partition("|")
    ranges = [part.split(",") for part in body.strip("()").split(")(") if part]
    acked = {e for lo, hi in ranges for e in range(int(lo) + 1, int(hi) + 1)}
    return cur.from_acknowledged(acked, mark_delete=int(head))


def event_of(program_id: str, spec: Spec, step: int, op: o.Op, completion: o.Completion,
             *, spec_text: str | None = None, spec_key: str | None = None) -> Event:
    message = getattr(op, "message", None)
    value = completion.value
    fields: dict = {
        "program_id": program_id, "step": step, "spec_id": spec_key or spec_id(spec),
        "spec": spec_text or spec_json(spec), "op": OP_KINDS[type(op)],
        "consumer": getattr(op, "consumer", None), "outcome": completion.outcome.value, "at": completion.at,
        "error": completion.error,
    }
    if message is not None:
        fields.update(entry=message.entry, index=message.index)
    if isinstance(op, o.Send):
        fields.update(keys=op.keys, batched=op.batched)
    if isinstance(op, o.Tick):
        fields["ms"] = op.ms
    if isinstance(value, o.Delivery):
        fields.update(delivered_entry=value.message.entry, delivered_index=value.message.index,
                      redelivery_count=value.redelivery_count)
    elif isinstance(value, cur.Cursor):
        fields["cursor"] = cursor_text(value)
    elif isinstance(value, tuple):
        fields["sent"] = len(value)
    return Event(**fields)


def op_of(event: Event) -> o.Op:
    op_type = OP_TYPES.get(event.op)
    if op_type is None:
        raise MalformedEvent(f"step {event.step}: unknown op {event.op!r} (known: {', '.join(OP_TYPES)})")
    if op_type is o.Send:
        return o.Send(keys=tuple(event.keys or (None,)), batched=bool(event.batched))
    if op_type is o.Tick:
        return o.Tick(ms=event.ms or 0)
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
    elif event.sent:
        entry_ids = range(event.sent)
        value = tuple(o.MessageId(0, i) for i in entry_ids)  # ids are positional; the model renumbers
    return o.Completion(outcome=outcome, at=event.at, value=value, error=event.error)


def to_json_line(event: Event) -> str:
    return json.dumps(dataclasses.asdict(event), separators=(",", ":"))


def from_json_line(line: str, *, where: str = "") -> Event:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as error:
        raise MalformedEvent(f"{where}not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise MalformedEvent(f"{where}expected a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(FIELDS))
    missing = sorted(f for f in ("program_id", "step", "spec_id", "spec", "op") if f not in raw)
    if unknown or missing:
        raise MalformedEvent(f"{where}unknown fields {unknown}, missing fields {missing}")
    if raw.get("keys") is not None:
        raw["keys"] = tuple(raw["keys"])
    try:
        event = Event(**raw)
    except TypeError as error:
        raise MalformedEvent(f"{where}{error}") from None
    if event.outcome not in {x.value for x in o.Outcome}:
        raise MalformedEvent(f"{where}outcome must be ok, fail or info, got {event.outcome!r}")
    op_of(event)
    return event
