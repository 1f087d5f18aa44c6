"""The model as an executable broker: for a state and an op, one completion the model allows.

This is what `--target model` runs and what the trace generator writes: an ideal Pulsar that
takes the first choice wherever the real one may vary (due redeliveries before fresh messages, the
earliest message first, every grouped ack flushed before a cursor read), with a seeded `Random`
for the choices that are genuinely open (what a crash keeps). Faulty targets are built by
changing one of these answers.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import replace

from model import cursor as cur
from model import ops as o
from model.partitions import PartitionedState, route_send, view
from model.spec import SubscriptionType
from model.records import maker
from model.state import AVAILABLE, HELD, Message, State
from model.transitions.acks import flush_acks


_make_delivery = maker(o.Delivery)


def respond(state: State | PartitionedState, op: o.Op, rng: random.Random) -> o.Completion:
    if type(state) is PartitionedState:
        return _respond_partitioned(state, op, rng)
    at = state.now
    match op:
        case o.Send(keys=keys, batched=batched):
            entry = len(state.entries)
            ids = tuple(o.MessageId(entry, i) for i in range(len(keys))) if batched else (o.MessageId(entry),)
            return o.ok(ids, at=at)
        case o.Subscribe(consumer=newcomer):
            connected = state.connected()
            if state.spec.subscription_type is SubscriptionType.EXCLUSIVE and connected:
                # After an unload the holder is reconnecting and a newcomer may take the
                # subscription first (model/transitions/consumers.py); this broker lets every other
                # newcomer do so, chosen by the program alone so that a replay answers the same.
                reconnecting = state.reopened_serial > max(c.serial for c in connected)
                if reconnecting and (state.serial + len(newcomer)) % 2 == 0:
                    return o.ok(at=at)
                return o.fail("ConsumerBusy", at=at)
            return o.ok(at=at)
        case o.Receive(consumer=consumer):
            return o.ok(pick_delivery(state, consumer), at=at)
        case o.AcknowledgeCumulative() if not state.spec.subscription_type.allows_cumulative_ack:
            return o.fail("CumulativeAcknowledgementNotAllowedError", at=at)
        case o.Tick(ms=ms) | o.CutNetwork(ms=ms) | o.StallNetwork(ms=ms):
            return o.ok(at=at + ms)
        case o.ReadCursor():
            return o.ok(broker_cursor(state), at=at)
        case o.Crash():
            return o.ok(at=at)
        case _:
            return o.ok(at=at)


def _respond_partitioned(state: PartitionedState, op: o.Op, rng: random.Random) -> o.Completion:
    """A partitioned topic's answer: a send routed by key (round robin without one), a receive from
    the first partition that has something for the consumer, an op naming a message answered by
    its partition, every other op as the first partition answers it."""
    match op:
        case o.Send(keys=keys, batched=batched):
            entry = len(state.placed)
            ids = tuple(o.MessageId(entry, i) for i in range(len(keys))) if batched else (o.MessageId(entry),)
            if state.spec.retry_letter_topic:
                return o.ok(ids, at=state.now)  # one topic to send to: the retry topic is the client's
            return o.ok(ids, at=state.now, partition=route_send(op, state.spec.routed_topics, len(state.placed)))
        case o.Receive(consumer=consumer):
            for p, part in enumerate(state.first):
                delivery = pick_delivery(part, consumer)
                if delivery is not None:
                    return o.ok(_make_delivery(message=state.program_id(p, delivery.message),
                                               redelivery_count=delivery.redelivery_count, key=delivery.key),
                                at=state.now)
            return o.ok(at=state.now)
        case o.Acknowledge(message=message) | o.AcknowledgeCumulative(message=message) | \
                o.NegativeAcknowledge(message=message) | o.Seek(message=message):
            p, local = state.local(message)
            return respond(state.first[p], replace(op, message=local), rng)
        case o.ReadCursor() if not state.spec.retry_letter_topic:
            return o.ok(tuple(broker_cursor(part) for part in state.first), at=state.now)
    return respond(state.first[0], op, rng)


def broker_cursor(state: State) -> cur.Cursor:
    """The cursor once every consumer's grouped acks have reached the broker."""
    for consumer in state.connected():
        state = flush_acks(state, consumer.name)
    return state.cursor


def dispatch_target(state: State, message: Message) -> str | None:
    """Which connected consumer an ideal broker gives `message` to."""
    return _dispatch_target(state, state.connected(), message)


def _dispatch_target(state: State, connected: tuple, message: Message) -> str | None:
    if not connected:
        return None
    kind = state.spec.subscription_type
    if kind.single_active_consumer:
        return connected[0].name
    if kind is SubscriptionType.KEY_SHARED:
        owner = state.key_owner(message.key)
        if owner is not None and state.consumer(owner) is not None:
            return owner
        return connected[zlib.crc32(str(message.key).encode()) % len(connected)].name
    return None  # Shared: whoever asks


def pick_delivery(state: State, consumer: str) -> o.Delivery | None:
    """Due redeliveries first, then fresh messages, earliest first."""
    if state.now < state.paused_until:
        return None
    connected, now, kind = state.connected(), state.now, state.spec.subscription_type
    if kind.single_active_consumer and connected and connected[0].name != consumer:
        return None  # not the active consumer: nothing is dispatched to it
    keyed = kind is SubscriptionType.KEY_SHARED
    targets: dict[str | None, str | None] = {}  # Key_Shared: the consumer each key goes to
    first_fresh = None
    # Messages are in id order: the first redelivery found is the earliest, and so is the first
    # message never delivered.
    for m in state.messages:
        if not (m.status is AVAILABLE
                or (m.status is HELD and m.redelivery_from is not None and m.redelivery_from <= now)):
            continue
        if m.deliver_by > now:
            continue  # a delayed copy: this broker dispatches it once it is certainly due
        if keyed:
            if m.key not in targets:
                targets[m.key] = _dispatch_target(state, connected, m)
            if targets[m.key] not in (None, consumer):
                continue
        if m.delivered:
            return _delivery(m, kind)
        if first_fresh is None:
            first_fresh = m
    return _delivery(first_fresh, kind) if first_fresh is not None else None


def _delivery(message: Message, kind: SubscriptionType) -> o.Delivery:
    count = message.count_lo if kind.tracks_redelivery_count else 0
    return _make_delivery(message=message.id, redelivery_count=count, key=message.key)


def run_random_program(spec, seed: int, steps: int, *, draw=None) -> list[tuple[o.Op, o.Completion]]:
    """A seeded random program over the op vocabulary, executed by the model: its expected trace.
    `draw(state, rng)` picks each op (default `model.vocabulary.random_op`; the trace corpora's
    is traces/programs.py's `next_op`)."""
    from model.nondet import start, step_decided
    from model.violations import Violation
    from model.vocabulary import random_op

    draw = draw or random_op
    rng = random.Random(seed)
    state = next(iter(start(spec).states))
    trace = []
    for _ in range(steps):
        op = draw(view(state), rng)
        completion = respond(state, op, rng)
        result = step_decided(state, op, completion)
        if isinstance(result, Violation):
            raise AssertionError(f"the model rejected its own answer to {op}: {result.describe()}")
        state = result
        trace.append((op, completion))
    return trace
