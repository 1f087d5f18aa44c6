"""The deterministic core: one step function per op, `(state, op, completion) -> state | Violation`.

Each `_step_<op>` says what the op does to the topic, the subscription and the client, following
the Pulsar source it names; an observation that no state allows is a `Violation` naming the
guarantee it breaks. Unknown ops fail loudly. Rules marked "observed" were checked on the pinned
broker (suites/broker, suites/model/test_fidelity*); the others are readings of the source that the
fidelity tests will confirm or correct.
"""

from __future__ import annotations

from dataclasses import dataclass

from model import cursor as cur
from model import ops as o
from model.guarantees import Guarantee
from model.spec import InitialPosition, SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, Consumer, Message, State, replace_consumer, replace_message, replace_messages


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """An observation no state allows, or (`undecided`) one the solver could not decide: reported
    as unknown, never as a pass."""

    guarantee: Guarantee
    detail: str
    undecided: bool = False

    def describe(self) -> str:
        return f"{self.guarantee.value}{' (undecided)' if self.undecided else ''}: {self.detail}"


Result = State | Violation


def step(state: State, op: o.Op, completion: o.Completion) -> Result:
    """Apply one op with its completion. Pure: never mutates `state`."""
    state = _advance_clock(state, completion.at)
    match op:
        case o.Send():
            return _step_send(state, op, completion)
        case o.Subscribe():
            return _step_subscribe(state, op, completion)
        case o.Receive():
            return _step_receive(state, op, completion)
        case o.Acknowledge():
            return _step_acknowledge(state, op, completion)
        case o.AcknowledgeCumulative():
            return _step_acknowledge_cumulative(state, op, completion)
        case o.NegativeAcknowledge():
            return _step_negative_acknowledge(state, op, completion)
        case o.RedeliverUnacknowledgedMessages():
            return _redeliver(state, op.consumer, completion.at, window=(0, 0))
        case o.Close():
            return _step_close(state, op)
        case o.Seek():
            return _step_seek(state, op)
        case o.Tick():
            return state
        case o.Unload() | o.Restart():
            return _step_reopen(state, persisted=True)
        case o.Crash():
            return _step_reopen(state, persisted=False)
        case o.ReadCursor():
            return _step_read_cursor(state, completion)
        case _:
            raise TypeError(f"unknown op {op!r}")


def _advance_clock(state: State, at: int) -> State:
    """Time only moves forward; windows whose end has passed are certainly open now."""
    now = max(state.now, at)
    if now == state.now:
        return state
    if state.spec.ack_timeout_ms is not None:
        state = _ack_timeouts_open(state, now)
    # A due message whose client may dead-letter it when the timer fires is gone, or may come.
    due = {m.id: m.with_(status=ACKED if m.dead_letter_unsure else AVAILABLE, holder=None,
                         back_from=None, back_by=None)
           for m in state.messages if m.status is HELD and m.back_by is not None and m.back_by <= now}
    state = replace_messages(state.with_(now=now), due)
    if state.rewind_window is not None and now > state.rewind_window[1]:
        # The rewinds have landed: a message that was in the receiver queue may be there once
        # more per rewind.
        queued = {m.id: m.with_(spare=m.spare + state.rewinds, fresh=False) for m in state.messages
                  if m.status is AVAILABLE}
        state = replace_messages(state.with_(rewind_window=None, rewinds=0), queued)
    return state


def _ack_timeouts_open(state: State, now: int) -> State:
    """Ack-timeout windows that open between `state.now` and `now`: the client may ask for the
    message again from then on, and what it asks for is more than the message (found on the broker):
    on Exclusive/Failover everything unacknowledged (a rewind: what sits in the receiver queue may
    come twice, an ack not yet flushed may be lost), on Shared/Key_Shared the message's whole batch
    entry (its other indexes, acked or queued, may come again, counted)."""
    opening = [m for m in state.messages
               if m.status is HELD and m.back_from is not None and state.now < m.back_from <= now]
    if not opening:
        return state
    if state.spec.subscription_type.single_active_consumer:
        window = (min(m.back_from for m in opening), max(m.back_by for m in opening))
        if state.rewind_window is not None:
            if state.rewind_window[0] <= window[0] and window[1] <= state.rewind_window[1]:
                return state  # a rewind already on its way covers it
            window = (min(window[0], state.rewind_window[0]), max(window[1], state.rewind_window[1]))
        unflushed = {m.id: m.with_(spare=m.spare + 1) for m in state.messages
                     if m.status is ACKED and not m.ack_confirmed}
        return replace_messages(state, unflushed).with_(rewind_window=window, rewinds=state.rewinds + 1)
    bump = 1 if state.spec.subscription_type.tracks_redelivery_count else 0
    entries = {m.id.entry for m in opening if m.id.index >= 0}
    opened = {m.id for m in opening}

    def comes_with_the_entry(m: Message) -> bool:
        if m.id.entry not in entries or m.id in opened:
            return False
        # An acked index stays out only if the broker has it as acked (batch-index acks).
        return m.status is not ACKED or not (m.ack_confirmed and state.spec.batch_index_ack)

    return replace_messages(state, {m.id: m.with_(spare=m.spare + 1, count_hi=m.count_hi + bump)
                                    for m in state.messages if comes_with_the_entry(m)})


# -- publish and subscribe -----------------------------------------------------------------------
def _step_send(state: State, op: o.Send, completion: o.Completion) -> Result:
    if completion.outcome is not o.Outcome.OK:
        return state  # a failed or unknown send is outside what the suite checks about acks
    entry, serial = len(state.entries), state.serial + 1
    if op.batched:
        new = tuple(Message.published(o.MessageId(entry, i), k, serial) for i, k in enumerate(op.keys))
    else:
        new = (Message.published(o.MessageId(entry), op.keys[0], serial),)
    return state.with_(entries=state.entries + (len(op.keys) if op.batched else 0,),
                       messages=state.messages + new, serial=serial)


def _step_subscribe(state: State, op: o.Subscribe, completion: o.Completion) -> Result:
    busy = state.spec.subscription_type is SubscriptionType.EXCLUSIVE and bool(state.connected())
    if busy and completion.outcome is o.Outcome.OK and state.reopened_serial > max(c.serial for c in state.connected()):
        # Found on the broker: after an unload the holder is reconnecting, and a newcomer may take
        # the Exclusive subscription first; the old consumer then stays disconnected.
        return _take_over(state, op.consumer)
    if busy:
        if completion.outcome is o.Outcome.OK:
            return Violation(guarantee=Guarantee.EXCLUSIVE, detail=f"{op.consumer} subscribed while "
                             f"{state.active_consumer()} holds the Exclusive subscription (expected ConsumerBusy)")
        return state
    if completion.outcome is not o.Outcome.OK:
        return Violation(guarantee=Guarantee.SUBSCRIBE, detail=f"subscribe of {op.consumer} failed: {completion.error}")
    if not state.consumers and state.spec.initial_position is InitialPosition.LATEST:
        state = _created_at_latest(state)
    movers = tuple((k, owner, tuple(sorted(set(extra) | {op.consumer}))) for k, owner, extra in state.key_owners)
    state = _failover_may_switch(state) if state.connected() else _pause_if_failover_switch(state, becomes_active=True)
    return state.with_(consumers=state.consumers + (Consumer(name=op.consumer, serial=state.serial + 1),),
                       key_owners=movers, serial=state.serial + 1)


def _created_at_latest(state: State) -> State:
    """The first subscribe creates the subscription; at the Latest position its cursor starts after
    the last entry published so far: those messages are never delivered to it (observed on 4.0.7:
    markDeletePosition is that last entry)."""
    before = {m.id: m.with_(status=ACKED, ack_confirmed=True) for m in state.messages}
    return replace_messages(state, before).with_(cursor=cur.reset(state.cursor, len(state.entries)))


def _take_over(state: State, newcomer: str) -> State:
    """The newcomer holds the subscription; the old consumers' messages go back to the broker, and
    their unconfirmed acks may or may not have reached it."""
    old = {c.name for c in state.connected()}
    changed = {}
    for m in state.messages:
        if m.status is HELD and m.holder in old:
            changed[m.id] = _handed_back(state, m)
        elif m.status is ACKED and not m.ack_confirmed:
            changed[m.id] = m.with_(spare=m.spare + 1)
    state = replace_messages(state, changed)
    consumers = tuple(c.with_(connected=False, pending_acks=()) if c.connected else c for c in state.consumers)
    return state.with_(consumers=consumers + (Consumer(name=newcomer, serial=state.serial + 1),),
                       serial=state.serial + 1, cursor=cur.rewind(state.cursor))


def _failover_may_switch(state: State) -> State:
    """Failover: a consumer joined or left while others stay, so the broker picks the active
    consumer again. On a non-partitioned topic it hashes the connected consumers' names (observed
    on 4.0.7: with c0, c1, c2 subscribed in that order, c2 was active, and c0's unacknowledged
    messages went to c2 when c1 closed), so the model does not know who it is. If it changed, the
    broker pauses dispatch and rewinds: everything unacknowledged may come (again) to the new
    active consumer, while the old one still has its receiver queue."""
    if state.spec.subscription_type is not SubscriptionType.FAILOVER:
        return state
    # Found on the broker: a second change while the first one's delay runs can leave what was
    # unacknowledged undelivered (seen for more than two seconds after the pause) while messages
    # sent later flow: it is not owed until something rewinds the subscription again.
    again = state.paused_until > state.now
    changed = {m.id: m.with_(spare=m.spare + 1, fresh=False, stalled=m.stalled or (again and m.status is not ACKED))
               for m in state.messages if m.status is not ACKED or not m.ack_confirmed}
    return replace_messages(state, changed).with_(cursor=cur.rewind(state.cursor),
                                                  paused_until=state.now + state.spec.failover_delay_ms)


def _unstall(state: State) -> State:
    """The subscription is rewound: what a Failover switch left stalled is owed again."""
    return replace_messages(state, {m.id: m.with_(stalled=False) for m in state.messages if m.stalled})


def _pause_if_failover_switch(state: State, *, becomes_active: bool) -> State:
    """Failover: the broker delays dispatch after the active consumer changes (observed on 4.0.7:
    a new subscription's first consumer gets nothing for about a second)."""
    if state.spec.subscription_type is not SubscriptionType.FAILOVER or not becomes_active:
        return state
    return state.with_(paused_until=state.now + state.spec.failover_delay_ms)


# -- receive -------------------------------------------------------------------------------------
def _step_receive(state: State, op: o.Receive, completion: o.Completion) -> Result:
    consumer = state.consumer(op.consumer)
    if consumer is None:
        raise ValueError(f"receive on {op.consumer}, which is not connected: the program is malformed")
    delivery = completion.value
    if completion.outcome is not o.Outcome.OK or delivery is None:
        return state  # nothing within the timeout: liveness is checked when the program drains
    message = state.message(delivery.message)
    if message is None:
        return Violation(guarantee=Guarantee.NO_PHANTOM, detail=f"{op.consumer} received {delivery.message}, never published")
    problem = (_dead_letter_problem(state, message, delivery.redelivery_count)
               or _delivery_status_problem(state, message, op.consumer) or _order_problem(state, message, consumer)
               or _key_shared_problem(state, message, op.consumer)
               or _redelivery_count_problem(state, message, delivery.redelivery_count))
    if problem is not None:
        return problem
    first = not message.delivered and message.fresh
    if message.dead_letter_unsure and message.status is ACKED:
        # A copy of a message its client may have dead-lettered: the application holds it either
        # way (the client dead-letters what its receiver queue held when a redelivery was asked,
        # and still hands the queued copy out), and whether it comes again after a close stays
        # open. Found on the broker, both ways: c0 got m0 with count 1 (max 1) after two redeliver
        # calls in one millisecond, and after c0's close c1 got it; c1 got m0 with count 1 queued
        # before its redeliver call, and after c1's close m0 never came again.
        message = message.with_(status=HELD, holder=op.consumer)
    if message.status is ACKED:
        delivered = message.with_(delivered=True, spare=max(message.spare - 1, 0))
    else:
        window_open = message.back_from is not None and state.now >= message.back_from
        # A delivery uses up the open redelivery window first, else one spare delivery; a spare one
        # leaves a requested redelivery on its way (found on the broker: Exclusive, zero queue, a
        # rewind delivered m0 while a later nack's rewind was pending, which delivered it again).
        used_spare = not window_open and message.status is not AVAILABLE
        spare = max(message.spare - 1, 0) if used_spare else message.spare
        pending = (message.back_from, message.back_by) if used_spare else (None, None)
        delivered = message.with_(status=HELD, holder=op.consumer, delivered=True, spare=spare,
                                  back_from=pending[0], back_by=pending[1], skipped_by=None, stalled=False)
    # A spare copy still to come was dispatched again by a later request: it may carry a higher
    # count; or it is an older copy still queued (found on the broker: c1 got m0.0 with count 2,
    # then c0's receiver queue gave it with count 1): it may carry a lower one.
    extra = delivered.spare if state.spec.subscription_type.tracks_redelivery_count else 0
    lowest = min(message.count_lo, delivery.redelivery_count) if extra else delivery.redelivery_count
    if message.status is HELD and message.holder != op.consumer:
        # The copy the other consumer's application holds may still come back with its own count
        # (found on the broker: c0 held m0.0 with count 1, c1 got it with count 2, then after c0's
        # close c2 got it with count 1).
        delivered = delivered.with_(floor=min(message.held_count, message.floor), copied=True)
    # A copy still to come may also be one a request sent after the copy just received (found on
    # the broker: c2's redeliver sent m1.0 with count 3 while c1's queue gave an older copy with
    # count 1): the upper bound stays where it was.
    highest = max(message.count_hi, delivery.redelivery_count + extra) if extra else delivery.redelivery_count
    if message.status is HELD and message.holder != op.consumer:
        highest = max(highest, message.count_hi)  # the other application's copy may come back with its count
    delivered = delivered.with_(count_lo=lowest, count_hi=highest,
                                held_count=delivery.redelivery_count)
    if state.rewind_window is not None and delivered.status is HELD and message.status is AVAILABLE:
        # First received while rewinds are on their way: each may deliver it once more.
        delivered = delivered.with_(spare=delivered.spare + state.rewinds)
    window = state.spec.ack_timeout_window_ms
    if window is not None and delivered.status is HELD:
        # Ack timeout: tracking starts when the application receives the message (PR #3079); the
        # redelivery is requested between the timeout and one tracker tick after it.
        back_from = state.now + window[0]
        if state.spec.subscription_type.single_active_consumer:
            # Exclusive/Failover: the client turns a timeout into a redelivery of everything
            # unacknowledged (found on the broker: m1, received 8 s after m0, came back with m0
            # 10 s after m0), so it may come back once an earlier held message's window opens.
            earlier = [m.back_from for m in state.messages
                       if m.holder == op.consumer and m.status is HELD and m.back_from is not None]
            back_from = max(state.now, min(earlier, default=back_from))
        pending = (delivered.back_from, delivered.back_by)
        delivered = _requested(state, delivered, back_from, state.now + window[1])
        if pending[0] is not None and delivered.back_from is not None:
            delivered = delivered.with_(back_from=min(pending[0], delivered.back_from),
                                        back_by=max(pending[1], delivered.back_by))
    state = replace_message(state, delivered)
    if first:
        state = replace_consumer(state, consumer.with_(last_first_delivery=max(consumer.last_first_delivery,
                                                                               _order_key(message.id))))
    if _stale_key_copy(state, message, consumer):
        return state  # an old queued copy says nothing about where the key's hash is now
    return _bind_key(state, message, consumer)


def _order_key(message_id: o.MessageId) -> int:
    return message_id.entry * 1_000_000 + max(message_id.index, 0)


def _delivery_status_problem(state: State, message: Message, consumer: str) -> Violation | None:
    if message.status is AVAILABLE:
        return None
    if message.status is HELD:
        if message.spare or (message.back_from is not None and state.now >= message.back_from):
            return None
        return Violation(guarantee=Guarantee.NO_DUPLICATE_WITHOUT_CAUSE,
                         detail=f"{consumer} received {message.id}, which {message.holder} holds unacknowledged "
                                "and nothing asked to redeliver")
    if message.spare:
        return None
    if message.ack_confirmed and not message.delivered:
        return Violation(guarantee=Guarantee.NO_REDELIVERY_AFTER_ACK,
                         detail=f"{consumer} received {message.id}, which the cursor had acknowledged before any "
                                "delivery (published before a subscription at Latest, or before a seek target)")
    if message.ack_confirmed:
        return Violation(guarantee=Guarantee.NO_REDELIVERY_AFTER_ACK,
                         detail=f"{consumer} received {message.id} again after its ack reached the broker")
    return Violation(guarantee=Guarantee.NO_REDELIVERY_AFTER_ACK,
                     detail=f"{consumer} received {message.id} again after it was acknowledged, with no redelivery requested")


def _order_problem(state: State, message: Message, consumer: Consumer) -> Violation | None:
    if message.delivered or not message.fresh:
        return None
    if state.spec.subscription_type is SubscriptionType.KEY_SHARED:
        # Key_Shared promises order per key: a consumer joining or leaving moves hash ranges, so
        # messages of different keys may reach a consumer out of publish order.
        later = next((m for m in state.messages if m.key == message.key and m.delivered and m.id > message.id), None)
        if later is None:
            return None
        return Violation(guarantee=Guarantee.ORDER, detail=f"{consumer.name} received {message.id} (key "
                         f"{message.key!r}) for the first time after {later.id} of the same key")
    if _order_key(message.id) > consumer.last_first_delivery:
        return None
    return Violation(guarantee=Guarantee.ORDER,
                     detail=f"{consumer.name} received {message.id} for the first time after a later message")


def _key_shared_problem(state: State, message: Message, consumer: str) -> Violation | None:
    if state.spec.subscription_type is not SubscriptionType.KEY_SHARED:
        return None
    for key, owner, movers in state.key_owners:
        if key != message.key or consumer == owner:
            continue
        if consumer not in movers and not _stale_key_copy(state, message, state.consumer(consumer)):
            return Violation(guarantee=Guarantee.KEY_SHARED_STICKINESS,
                             detail=f"key {key!r} is bound to connected {owner}, yet {consumer} received {message.id}")
        # A held message with a spare copy to come may be a stale queued copy the broker no longer
        # counts as pending on the owner (found on the broker: c1's redeliver sent m0 on while its
        # queue gave c1 the old copies; m0 then went to c0, which had rejoined under its name).
        held = [m.id for m in state.messages if m.key == key and m.status is HELD and m.holder == owner
                and m.back_from is None and m.spare == 0]
        if held and message.fresh and state.consumer(owner) is not None and owner not in movers:
            # PIP-379: a key moves to a joined consumer only once its old owner acked what it holds.
            return Violation(guarantee=Guarantee.KEY_SHARED_STICKINESS,
                             detail=f"key {key!r} moved from {owner} to {consumer} while {owner} still holds "
                                    f"{', '.join(map(str, held))} unacknowledged")
    return None


def _stale_key_copy(state: State, message: Message, consumer: Consumer | None) -> bool:
    """Key_Shared: a spare copy of a redelivered message may be an old one still in the receiver
    queue of a consumer that joined before the key's owner, so held the key's hash when it was
    dispatched (found on the broker: c0 alone had m1 queued; c1 and c2 joined; c0's redeliver sent
    m1 to c2 with count 1, then c0's queue gave it with count 0)."""
    if message.spare == 0 or message.fresh or consumer is None:
        return False
    binding = next((b for b in state.key_owners if b[0] == message.key), None)
    owner = state.consumer(binding[1]) if binding is not None else None
    return owner is not None and owner.name != consumer.name and consumer.serial < owner.serial


def _bind_key(state: State, message: Message, consumer: Consumer) -> State:
    """Bind the key to the consumer that received it. The broker bound it when it dispatched the
    message, at some moment after the message was sent and the consumer subscribed: consumers that
    joined after that moment may have taken the key's hash range, so they are movers."""
    if state.spec.subscription_type is not SubscriptionType.KEY_SHARED:
        return state
    key = message.key
    others = tuple(b for b in state.key_owners if b[0] != key)
    previous = next((b for b in state.key_owners if b[0] == key), None)
    if previous is not None and previous[1] == consumer.name:
        return state
    earliest_dispatch = max(message.serial, consumer.serial)
    movers = {c.name for c in state.connected() if c.serial > earliest_dispatch and c.name != consumer.name}
    # The previous owner may still receive messages of the key already in its receiver queue.
    if previous is not None:
        movers.add(previous[1])
    binding = (key, consumer.name, tuple(sorted(movers)))
    return state.with_(key_owners=tuple(sorted(others + (binding,), key=lambda b: str(b[0]))))


def _dead_letter_problem(state: State, message: Message, count: int) -> Violation | None:
    limit = state.spec.max_redeliver_count
    if limit is None or count <= limit or not state.spec.subscription_type.tracks_redelivery_count:
        return None
    return Violation(guarantee=Guarantee.DEAD_LETTER,
                     detail=f"{message.id} delivered with count {count} > max_redeliver_count {limit}: "
                            "it should have gone to the dead-letter topic")


def _redelivery_count_problem(state: State, message: Message, count: int) -> Violation | None:
    spec = state.spec
    if not spec.subscription_type.tracks_redelivery_count:
        if count != 0:
            return Violation(guarantee=Guarantee.REDELIVERY_COUNT,
                             detail=f"{message.id} came with redelivery count {count} on {spec.subscription_type}, "
                                    "which has no redelivery tracker (always 0)")
        return None
    if not min(message.count_lo, message.floor) <= count <= message.count_hi:
        return Violation(guarantee=Guarantee.REDELIVERY_COUNT,
                         detail=f"{message.id} came with redelivery count {count}; "
                                f"expected {message.count_lo}..{message.count_hi}")
    return None


# -- acknowledgements ----------------------------------------------------------------------------
def _step_acknowledge(state: State, op: o.Acknowledge, completion: o.Completion) -> Result:
    consumer = state.consumer(op.consumer)
    message = state.message(op.message)
    if consumer is None or message is None:
        raise ValueError(f"ack of {op.message} on {op.consumer}: the program is malformed")
    if completion.outcome is o.Outcome.FAIL:
        return Violation(guarantee=Guarantee.ACK, detail=f"ack of {op.message} on {op.consumer} failed: {completion.error}")
    # Acked while its redelivery is already requested: the request may reach the broker first, or
    # bring the whole batch entry back (found on the broker: nack m1.2, ack m1.0, m1.0 came again).
    requested = message.status is HELD and message.back_from is not None
    spare = message.spare + (1 if requested else 0)
    # The count that request added may never happen: a close before the nack delay drops it with
    # the client's tracker (found on the broker: nack m0.0, ack it, close; m0.0 came back, its
    # entry not deleted, with count 0).
    lo = max(message.count_lo - 1, 0) if requested and state.spec.subscription_type.tracks_redelivery_count \
        else message.count_lo
    acked = message.with_(status=ACKED, holder=None, back_from=None, back_by=None, spare=spare, count_lo=lo,
                          dead_letter_unsure=False)
    if spare and state.spec.subscription_type.tracks_redelivery_count:
        # A copy still to come may carry count 0: the broker's redelivery tracker forgets the
        # message when the ack arrives, and a copy dispatched after that is counted from nothing
        # (found on the broker: Key_Shared, m0 nacked twice, came back with count 1, acked, then
        # came again with count 0).
        acked = acked.with_(floor=0)
    state = replace_message(state, acked)
    if op.message.index >= 0 and state.spec.batch_index_ack and state.spec.subscription_type.tracks_redelivery_count:
        # The tracker counts per entry and forgets the entry at a batch-index ack: the other
        # indexes' copies to come are counted from nothing again, a redelivery already requested
        # counted once if the ack reached the broker first (found on the broker: m0.0 nacked twice,
        # m0.2 acked with the second nack, m0.0 came back with count 1, not 2).
        state = replace_messages(state, {m.id: m.with_(floor=min(m.floor, 1 if m.back_from is not None else 0))
                                         for m in state.messages
                                         if m.id.entry == op.message.entry and m.id != op.message})
    return replace_consumer(state, consumer.with_(pending_acks=consumer.pending_acks + (("individual", op.message),)))


def _step_acknowledge_cumulative(state: State, op: o.AcknowledgeCumulative, completion: o.Completion) -> Result:
    consumer = state.consumer(op.consumer)
    if consumer is None or state.message(op.message) is None:
        raise ValueError(f"cumulative ack of {op.message} on {op.consumer}: the program is malformed")
    if not state.spec.subscription_type.allows_cumulative_ack:
        if completion.outcome is o.Outcome.OK:
            return Violation(guarantee=Guarantee.CUMULATIVE_REFUSED_ON_SHARED,
                             detail=f"acknowledge_cumulative({op.message}) was accepted on {state.spec.subscription_type}")
        return state
    if completion.outcome is o.Outcome.FAIL:
        return Violation(guarantee=Guarantee.ACK, detail=f"cumulative ack of {op.message} failed: {completion.error}")
    covered = {m.id: m.with_(status=ACKED, holder=None, back_from=None, back_by=None,
                             # prefetched but never received: may still come out of the receiver queue
                             spare=m.spare + (0 if m.delivered else 1))
               for m in state.messages if m.id <= op.message and m.status is not ACKED}
    state = replace_messages(state, covered)
    return replace_consumer(state, consumer.with_(pending_acks=consumer.pending_acks + (("cumulative", op.message),)))


def apply_ack(state: State, kind: str, message_id: o.MessageId) -> State:
    """What one ack does to the broker's cursor once it arrives (the ack is then confirmed)."""
    batch_size = state.entries[message_id.entry]
    siblings = state.entry_messages(message_id.entry)
    cursor = state.cursor
    if kind == "cumulative":
        last_of_entry = message_id.index < 0 or message_id.index == batch_size - 1
        if last_of_entry:
            cursor = cur.mark_delete(cursor, message_id.entry)
        else:
            # A cumulative ack inside a batch acks the entries before it; the batch itself only
            # with batch-index acks (C++ prepareCumulativeAck; apache/pulsar#14926).
            cursor = cur.mark_delete(cursor, message_id.entry - 1)
            if state.spec.batch_index_ack:
                for index in range(message_id.index + 1):
                    cursor = cur.delete_batch_index(cursor, message_id.entry, index, batch_size)
        confirmed = {m.id: m.with_(ack_confirmed=True) for m in state.messages
                     if m.status is ACKED and not m.ack_confirmed and cursor.is_acknowledged(m.id.entry)}
    elif message_id.index >= 0 and state.spec.batch_index_ack:
        cursor = cur.delete_batch_index(cursor, message_id.entry, message_id.index, batch_size)
        confirmed = {message_id: state.message(message_id).with_(ack_confirmed=True)}
    elif message_id.index >= 0 and not all(m.status is ACKED for m in siblings):
        # Without batch-index acks the client holds a partial batch ack until every index is acked.
        return state
    else:
        cursor = cur.delete(cursor, [message_id.entry])
        confirmed = {m.id: m.with_(ack_confirmed=True) for m in siblings if m.status is ACKED and not m.ack_confirmed}
    return replace_messages(state.with_(cursor=cursor), confirmed)


def flush_acks(state: State, consumer_name: str) -> State:
    """The consumer's grouped acks reach the broker (close and seek flush first)."""
    consumer = state.consumer(consumer_name)
    if consumer is None or not consumer.pending_acks:
        return state
    for kind, message_id in consumer.pending_acks:
        state = apply_ack(state, kind, message_id)
    return replace_consumer(state, consumer.with_(pending_acks=()))


# -- redelivery ----------------------------------------------------------------------------------
def _step_negative_acknowledge(state: State, op: o.NegativeAcknowledge, completion: o.Completion) -> Result:
    message = state.message(op.message)
    if message is None or state.consumer(op.consumer) is None:
        raise ValueError(f"nack of {op.message} on {op.consumer}: the program is malformed")
    if state.spec.subscription_type.single_active_consumer:
        # "We cannot redeliver single messages if subscription type is not Shared": a full rewind.
        return _redeliver(state, op.consumer, completion.at, window=state.spec.nack_window_ms)
    lo, hi = state.spec.nack_window_ms
    entry_mates = state.entry_messages(message.id.entry)
    # A nack redelivers the whole batch entry (NegativeAcksTracker.add); with batch-index acks the
    # broker leaves out only the indexes it has as acked (found on the broker: nack m1.2, m1.0
    # came back counted).
    targets = entry_mates if message.id.index >= 0 else [message]
    changed = {}
    for target in targets:
        if target.status is HELD and target.holder == op.consumer and target.back_from is not None:
            # Nacked again before it came back: the client's tracker keeps one entry per message and
            # moves its due time (C++ NegativeAcksTracker); observed on 4.0.7: one redelivery, count +1.
            # Should the first due time have fired already, a second copy may follow.
            changed[target.id] = target.with_(back_by=max(target.back_by or 0, completion.at + hi),
                                              count_hi=target.count_hi + 1, spare=target.spare + 1)
        elif target.status is HELD and target.holder == op.consumer:
            changed[target.id] = _requested(state, target, completion.at + lo, completion.at + hi)
        elif target.status is ACKED and not target.ack_confirmed or target.id.entry == message.id.entry:
            # The broker counts redeliveries per entry: the whole batch comes back counted. An index
            # still in the receiver queue stays there too (found on the broker: c0's queue gave
            # m0.1 uncounted, then the redelivered entry gave it to c1 with count 1).
            bump = 1 if state.spec.subscription_type.tracks_redelivery_count else 0
            changed[target.id] = target.with_(spare=target.spare + (0 if target.status is HELD else 1),
                                              count_hi=target.count_hi + bump)
    return replace_messages(state, changed)


def _requested(state: State, message: Message, back_from: int, back_by: int) -> Message:
    """A redelivery of a held message was requested; it lands inside [back_from, back_by]."""
    bump = 1 if state.spec.subscription_type.tracks_redelivery_count else 0
    dead_letter = _goes_to_dead_letter(state, message)
    if message.copied and bump and dead_letter is False and not message.dead_letter_unsure:
        # The broker may hold it as pending on the other consumer and ignore the request (found on
        # the broker: c0 got m1 with count 1, c1 then its older queued copy with count 0; c1's
        # nack of m1 brought nothing back while c0 held it): it may come, it is not owed.
        return message.with_(spare=message.spare + 1, count_hi=message.count_hi + bump)
    if dead_letter is True:
        if back_from > state.now:
            # A nack or an ack timeout: the client dead-letters when its timer fires, and a close
            # before that drops the timer (found on the broker: c1 held m0 with count 1, max 1,
            # nacked it and closed within 10 ms; m0 came again with count 0).
            return message.with_(back_from=back_from, back_by=back_by, dead_letter_unsure=True)
        # Dead-lettered by this client: copies queued elsewhere are still handed out (found on the
        # broker: c1's redeliver brought m2 to c0 with count 1, max 1; c0's redeliver dead-lettered
        # it, then c1 got the copy its queue kept from before, with count 0).
        return message.with_(status=ACKED, holder=None, back_from=None, back_by=None)
    if dead_letter is None or message.dead_letter_unsure:
        # Another copy the client got may carry the count that sends it to the DLQ (or already
        # did): it may come once more or never.
        # A copy that does come was requested earlier, or now: its count is anywhere up to the limit.
        limit = state.spec.max_redeliver_count
        return message.with_(status=ACKED, holder=None, back_from=None, back_by=None, spare=message.spare + 1,
                             count_hi=max(message.count_hi, min(message.count_hi + bump, limit)),
                             dead_letter_unsure=True)
    # A spare copy still on its way (e.g. an older one in another consumer's receiver queue) keeps
    # the count it was dispatched with (found on the broker: c1 got m0.2 with count 1 and nacked
    # it; the copy c0 had queued since the first dispatch then came with count 0).
    lowest = message.count_lo if message.spare else message.count_lo + bump
    return message.with_(back_from=back_from, back_by=back_by, count_lo=lowest, count_hi=message.count_hi + bump)


def _goes_to_dead_letter(state: State, message: Message, *, held_count: int | None = None) -> bool | None:
    """C++ ConsumerImpl: a message the client received with count >= max is produced to the DLQ
    and acknowledged instead of being redelivered (Shared and Key_Shared only). True when the copy
    the application holds decides it, None when only a copy still queued may (found on the
    broker: held with count 1, max 2, redelivered with count 2, not dead-lettered). `held_count`:
    the count of the copy the application holds, if not the message's (0: none held)."""
    limit = state.spec.max_redeliver_count
    if limit is None or not state.spec.subscription_type.tracks_redelivery_count:
        return False
    if (message.held_count if held_count is None else held_count) >= limit:
        return True
    return None if message.count_hi >= limit else False


def _redeliver(state: State, consumer: str, at: int, *, window: tuple[int, int]) -> State:
    """Redeliver everything `consumer` holds unacknowledged (redeliverUnacknowledgedMessages);
    on Exclusive/Failover the broker rewinds the cursor, so unconfirmed acks may come back too."""
    lo, hi = window
    rewind = state.spec.subscription_type.single_active_consumer
    limit = state.spec.max_redeliver_count if state.spec.subscription_type.tracks_redelivery_count else None
    changed = {}
    for message in state.messages:
        if message.status is HELD and message.holder == consumer:
            requested = _requested(state, message, at + lo, at + hi)
            if message.back_from is not None and requested.status is HELD:
                # A second request before the first landed: both may deliver it (a rewind each),
                # the first copy with the first request's count (found on the broker: two
                # redeliver calls in the same millisecond, m2 came with count 1).
                requested = requested.with_(spare=requested.spare + 1, count_lo=message.count_lo)
            changed[message.id] = requested
        elif message.status is HELD and message.copied and state.spec.subscription_type.tracks_redelivery_count:
            # Another consumer holds it as the model has it, but this one's application may hold a
            # copy too, which the broker may count as pending here: it may come once more, counted
            # (found on the broker: c0 got m0.0 with count 3, c1 then with count 2; c0's redeliver
            # brought it to c1 with count 4). If that copy's count reached the limit, its client
            # may dead-letter it instead (c1 got m3 with count 1, max 1, c0 then an older queued
            # copy with count 0; after c1's redeliver and c0's close, m3 never came again).
            changed[message.id] = message.with_(spare=message.spare + 1, count_hi=message.count_hi + 1,
                                                dead_letter_unsure=message.dead_letter_unsure
                                                or (limit is not None and message.floor >= limit))
        elif message.status is ACKED and not message.ack_confirmed and rewind:
            changed[message.id] = message.with_(spare=message.spare + 1)
        elif message.status is AVAILABLE:
            # It may sit in this consumer's receiver queue (the client does not clear it): it may be
            # dispatched again, a duplicate, and on Shared the broker counts it as redelivered.
            bump = 0 if rewind else 1
            # A queued copy whose count reached max_redeliver_count goes to the dead-letter topic
            # instead (found on the broker: m0 sat in the queue through redeliveries and never came).
            # If it does come, its count was below the limit: the bound stays where it is.
            dead_letter = _goes_to_dead_letter(state, message, held_count=0) is not False
            count_hi = message.count_hi if dead_letter else message.count_hi + bump
            changed[message.id] = message.with_(count_hi=count_hi, spare=message.spare + 1, fresh=False,
                                                status=ACKED if dead_letter else AVAILABLE,
                                                dead_letter_unsure=dead_letter)
    state = _entries_come_back(replace_messages(state, changed), {message_id.entry for message_id in changed},
                               counted=True)
    if not rewind:
        return state
    landing = (at + lo, at + hi)
    if state.rewind_window is not None:
        landing = (min(landing[0], state.rewind_window[0]), max(landing[1], state.rewind_window[1]))
    return _unstall(state).with_(cursor=cur.rewind(state.cursor), rewind_window=landing, rewinds=state.rewinds + 1)


def _entries_come_back(state: State, entries: set[int], *, counted: bool = False,
                       owed: set[int] | None = None) -> State:
    """A redelivered batch entry comes back whole without batch-index acks (the broker deletes the
    entry only when every index is acked): its acked messages may be delivered again, counted with
    the entry when the redelivery is. With batch-index acks the broker filters the indexes it has;
    unconfirmed ones may still come back."""
    bump = 1 if counted and state.spec.subscription_type.tracks_redelivery_count else 0
    pending = {m for c in state.connected() for _, m in c.pending_acks}
    partly_acked = {m.id.entry for m in state.messages if m.id.index >= 0 and m.status is not ACKED}
    changed = {}
    for m in state.messages:
        if not (m.id.entry in entries and m.id.index >= 0 and m.status is ACKED
                and not state.cursor.is_acknowledged(m.id.entry)
                and not (state.spec.batch_index_ack and m.ack_confirmed)):
            continue
        if (not state.spec.batch_index_ack and m.id not in pending and m.id.entry in partly_acked
                and (owed is None or m.id.entry in owed)):
            # The client kept that partial batch ack with the copy it acked; the entry comes back
            # as new copies that must all be acked again (found on the broker: ack m0.0, close,
            # subscribe, ack m0.1 and m0.2 of the new copy, close: the batch came a third time).
            changed[m.id] = m.with_(status=AVAILABLE, fresh=False, ack_confirmed=False,
                                    count_hi=m.count_hi + bump, dead_letter_unsure=False)
        else:
            changed[m.id] = m.with_(spare=m.spare + 1, count_hi=m.count_hi + bump)
    return replace_messages(state, changed)


def _step_close(state: State, op: o.Close) -> Result:
    if state.consumer(op.consumer) is None:
        raise ValueError(f"close of {op.consumer}, which is not connected: the program is malformed")
    state = flush_acks(state, op.consumer)
    remaining = [c for c in state.connected() if c.name != op.consumer]
    tracked = state.spec.subscription_type.tracks_redelivery_count
    # Observed on 4.0.7: the closed consumer's held messages go to the others with their redelivery
    # count unchanged (the research notes expected +1, after apache/pulsar#5895).
    changed = {m.id: _handed_back(state, m) for m in state.messages if m.status is HELD and m.holder == op.consumer}
    # A partly acked batch must come back only if the closing consumer had it (found on the broker:
    # c1 held m0.1 and m0.2 and had m0.0 dead-lettered; c0's close brought nothing back).
    closers_entries = {message_id.entry for message_id in changed}
    if tracked:
        # A message another consumer holds as the model has it may have a copy in this one's
        # application too: the close hands that copy back, with its count (found on the broker: c0
        # held m1.0 with count 1 and c2 an older copy with count 0; after c0's close c1 got it).
        changed.update({m.id: m.with_(spare=m.spare + 1) for m in state.messages
                        if m.status is HELD and m.copied and m.holder != op.consumer})
    if remaining:
        # Messages in the closed consumer's receiver queue go to the others, out of publish order.
        changed.update({m.id: m.with_(fresh=False) for m in state.messages
                        if m.status is AVAILABLE and m.fresh})
    # Any batch entry not yet deleted may have been pending on this consumer, its receiver queue
    # included (found on the broker: c0 got a batch, acked m0.0, closed; c2 got m0.0 again).
    state = _entries_come_back(replace_messages(state, changed), set(range(len(state.entries))), owed=closers_entries)
    # What its client skipped after a seek is owed to the others now.
    state = replace_messages(state, {m.id: m.with_(skipped_by=None) for m in state.messages
                                     if m.skipped_by == op.consumer})
    if tracked and not remaining:
        # The last consumer is gone: the dispatcher drops its redelivery tracker (counts restart at 0).
        state = state.with_(messages=tuple(m.with_(count_lo=0, count_hi=0) for m in state.messages))
    if remaining:
        state = _failover_may_switch(state)
    else:
        state = _unstall(state)  # the next consumer starts from markDeletePosition
    consumers = tuple(c.with_(connected=False) if c.name == op.consumer and c.connected else c for c in state.consumers)
    owners = tuple(b for b in state.key_owners if b[1] != op.consumer)
    return state.with_(consumers=consumers, key_owners=owners, cursor=cur.rewind(state.cursor) if not remaining else state.cursor)


def _handed_back(state: State, message: Message) -> Message:
    """A closed consumer's held message goes back to the broker. Its pending nack or ack timeout
    is dropped with the client's trackers (found on the broker: nack, close before the delay, the
    message comes back uncounted), so the count that request added may not happen."""
    if message.dead_letter_unsure:
        # Another consumer's client may have dead-lettered it: it may come once more, or never.
        return message.with_(status=ACKED, holder=None, back_from=None, back_by=None, spare=message.spare + 1)
    lo, hi = message.count_lo, message.count_hi
    if message.back_from is not None and state.spec.subscription_type.tracks_redelivery_count:
        lo = max(lo - 1, 0)
        hi = hi - 1 if state.now < message.back_from else hi
    return message.with_(status=AVAILABLE, holder=None, back_from=None, back_by=None, fresh=False,
                         count_lo=lo, count_hi=max(hi, lo))


def _step_seek(state: State, op: o.Seek) -> Result:
    """Seek: flush, then reset the cursor to the message's entry (holes and batch indexes cleared).

    Observed on 4.0.7 with the Python client: the seeking consumer never receives the target again
    (nor, for a batch, the indexes up to it): its client drops them as "before the start message
    id" (start_message_id_inclusive is false). The broker still counts them unacknowledged, so
    they come to the next consumer once the seeking one is gone. A client that does deliver the
    target is allowed too: the model only stops owing it.
    """
    state = flush_acks(state, op.consumer)
    target = op.message.entry
    changed = {}
    for message in state.messages:
        if message.id.entry >= target:
            skipped = message.id.entry == target and message.id.index <= op.message.index
            changed[message.id] = message.with_(status=AVAILABLE, holder=None, back_from=None, back_by=None,
                                                ack_confirmed=False, spare=message.spare + int(message.delivered),
                                                count_lo=0, count_hi=message.count_hi + 1,
                                                skipped_by=op.consumer if skipped else None, dead_letter_unsure=False)
        elif message.status is not ACKED or not message.ack_confirmed:
            changed[message.id] = message.with_(status=ACKED, holder=None, ack_confirmed=True,
                                                spare=0, back_from=None, back_by=None)
    state = _unstall(replace_messages(state, changed))
    consumers = tuple(c.with_(last_first_delivery=-1) for c in state.consumers)
    return state.with_(cursor=cur.reset(state.cursor, target), consumers=consumers)


# -- the broker's own lifecycle ------------------------------------------------------------------
def _step_reopen(state: State, *, persisted: bool) -> Result:
    """Topic unload or broker restart (persisted) or crash: consumers reconnect to a new dispatcher.

    Everything unacknowledged is dispatched again from markDeletePosition + 1 with counts reset;
    a message already in a receiver queue may arrive twice. After a crash the cursor may come back
    at any earlier persisted state (observed on 4.0.7: as far back as the initial position), so
    every ack may be undone until a cursor read says otherwise.
    """
    changed = {}
    for message in state.messages:
        if message.status is ACKED:
            if not persisted or not message.ack_confirmed:
                changed[message.id] = message.with_(spare=message.spare + 1, ack_confirmed=message.ack_confirmed and persisted)
            elif message.count_hi:
                changed[message.id] = message.with_(count_lo=0, count_hi=0)
        else:
            changed[message.id] = message.with_(spare=message.spare + 1, fresh=False,
                                                back_from=None, back_by=None, count_lo=0, count_hi=0)
    state = _unstall(replace_messages(state, changed))
    return state.with_(cursor=cur.rewind(state.cursor), reopened_serial=state.serial + 1, serial=state.serial + 1)


def _step_read_cursor(state: State, completion: o.Completion) -> Result:
    """The broker's cursor must be the confirmed one plus some of each consumer's pending acks."""
    observed = completion.value
    if completion.outcome is not o.Outcome.OK or not isinstance(observed, cur.Cursor):
        return state
    observed_acked = observed.acknowledged(len(state.entries))
    candidate = state
    for consumer in state.connected():
        candidate = flush_acks(candidate, consumer.name)
    most = candidate.cursor.acknowledged(len(state.entries))
    least = frozenset(m.id.entry for m in state.messages if m.ack_confirmed and state.cursor.is_acknowledged(m.id.entry))
    doubtful = _maybe_acked_entries(state)
    if not least <= observed_acked <= most | doubtful:
        return Violation(guarantee=Guarantee.CURSOR,
                         detail=f"broker cursor {cur.describe(observed)} acknowledges {sorted(observed_acked)}; "
                                f"allowed: at least {sorted(least)}, at most {sorted(most)}")
    if observed_acked not in (least, most) and not doubtful:
        problem = _prefix_problem(state, observed)
        if problem is not None:
            return problem
    return _settle(state, observed)


def _prefix_problem(state: State, observed: cur.Cursor) -> Violation | None:
    """Between the bounds, the acks that reached the broker must be, per consumer and kind, a
    prefix of the calls (the client flushes in call order): Z3 decides (model/smt/admissibility)."""
    from model.smt.admissibility import AckEvent, AckKind, Epoch, Inadmissible, check_epoch
    from model.smt.solver import Unknown

    pending = [(c.name, kind, m) for c in state.connected() for kind, m in c.pending_acks]
    if any(m.index >= 0 for _, _, m in pending):
        return None  # batch-index acks do not map to whole entries; the bounds above decide
    acks = tuple(AckEvent(index=i, consumer=name, kind=AckKind(kind), entry=m.entry)
                 for i, (name, kind, m) in enumerate(pending))
    epoch = Epoch(entries=len(state.entries), floor=state.cursor, acks=acks, cursor=observed)
    result = check_epoch(epoch)
    if isinstance(result, Inadmissible):
        return Violation(guarantee=Guarantee.CURSOR, detail=f"broker cursor {cur.describe(observed)} is no "
                         f"per-consumer prefix of the pending acks: {result.describe()}")
    if isinstance(result, Unknown):
        return Violation(guarantee=Guarantee.CURSOR, undecided=True,
                         detail=f"the solver could not decide the cursor {cur.describe(observed)}: {result.reason}")
    return None


def _maybe_acked_entries(state: State) -> frozenset[int]:
    """Entries whose ack is in doubt after a crash (the cursor may or may not still show them)."""
    return frozenset(m.id.entry for m in state.messages if m.status is ACKED and m.spare)


def _settle(state: State, observed: cur.Cursor) -> State:
    """Make the model's broker cursor the observed one: what it shows is confirmed, what it does not
    show and no pending ack can still bring is unacknowledged again (it will be redelivered)."""
    pending = {m for c in state.connected() for _, m in c.pending_acks}
    changed = {}
    for message in state.messages:
        acked_on_broker = observed.is_acknowledged(message.id.entry)
        if acked_on_broker and message.status is ACKED and not message.ack_confirmed:
            changed[message.id] = message.with_(ack_confirmed=True)
        elif not acked_on_broker and message.status is ACKED and message.id not in pending and not any(
                kind == "cumulative" and m >= message.id for c in state.connected() for kind, m in c.pending_acks):
            if message.id.index >= 0:
                # Without batch-index acks a partial batch ack is held by the client (the entry is
                # not deleted yet); with them the broker keeps the index in the cursor's batch
                # indexes, which internalStats does not show. Either way the read proves nothing.
                continue
            # The ack was lost: the message is owed again, which uses up the one extra delivery the
            # doubt allowed; extra copies for other causes stay (found on the broker: after two
            # unloads c1 got m0, whose ack was lost, twice: its receiver queue and the reconnect).
            changed[message.id] = message.with_(status=AVAILABLE, ack_confirmed=False,
                                                spare=max(message.spare - 1, 0), dead_letter_unsure=False)
    state = replace_messages(state, changed)
    confirmed_cursor = cur.from_acknowledged(observed.acknowledged(len(state.entries)) - set(range(observed.mark_delete + 1)),
                                             mark_delete=observed.mark_delete, batch_deleted=state.cursor.batch_deleted,
                                             read_position=state.cursor.read_position)
    consumers = tuple(c.with_(pending_acks=tuple(p for p in c.pending_acks if not observed.is_acknowledged(p[1].entry)))
                      for c in state.consumers)
    return state.with_(cursor=confirmed_cursor, consumers=consumers)
