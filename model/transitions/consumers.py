"""Producers and consumers coming and going: send, subscribe, close, the Failover switch and its
pause, and the Key_Shared binding of a key to a consumer.

Follows the broker's dispatchers (PersistentDispatcherSingleActiveConsumer for Exclusive and
Failover, PersistentDispatcherMultipleConsumers for Shared, PersistentStickyKeyDispatcher-
MultipleConsumers for Key_Shared): a consumer's close hands its unacknowledged messages back to the
others; on Failover a change of the active consumer pauses dispatch
(activeConsumerFailoverDelayTimeMillis) and rewinds; on Key_Shared a key stays with the consumer
it was dispatched to while that consumer is connected, unless a consumer joined since (PIP-379).
Notes name the test that shows a rule as model/transitions/redelivery.py describes.
"""

from __future__ import annotations

from model import cursor as cur
from model import ops as o
from model.checks import check_exclusive, check_subscribe
from model.spec import InitialPosition, SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, Consumer, Message, State, replace_messages
from model.transitions.acks import flush_acks
from model.transitions.redelivery import entries_come_back, unstall
from model.violations import Result


def send(state: State, op: o.Send, completion: o.Completion) -> Result:
    if completion.outcome is not o.Outcome.OK:
        return state  # a failed or unknown send is outside what the suite checks about acks
    entry, serial = len(state.entries), state.serial + 1
    if op.batched:
        new = tuple(Message.published(o.MessageId(entry, i), k, serial) for i, k in enumerate(op.keys))
    else:
        new = (Message.published(o.MessageId(entry), op.keys[0], serial),)
    return state.with_(entries=state.entries + (len(op.keys) if op.batched else 0,),
                       messages=state.messages + new, serial=serial)


def retry_copy(state: State, op: o.RetryCopy, completion: o.Completion) -> Result:
    """A reconsume_later's copy published on the retry letter topic: a message like a send's, held
    back by the broker's delayed delivery tracker within its window."""
    entry, serial = len(state.entries), state.serial + 1
    copy = Message.published(o.MessageId(entry), op.key, serial).with_(deliver_from=op.deliver_from,
                                                                      deliver_by=op.deliver_by)
    return state.with_(entries=state.entries + (0,), messages=state.messages + (copy,), serial=serial)


def subscribe(state: State, op: o.Subscribe, completion: o.Completion) -> Result:
    busy = state.spec.subscription_type is SubscriptionType.EXCLUSIVE and bool(state.connected())
    if busy:
        if completion.outcome is not o.Outcome.OK:
            return state
        # After an unload the holder is reconnecting, and a newcomer may take the Exclusive
        # subscription first; the old consumer then stays disconnected (shown by history
        # broker-lost-ack-after-two-unloads-comes-twice.persistence-Exclusive).
        return check_exclusive(state, op.consumer) or _take_over(state, op.consumer)
    problem = check_subscribe(state, op.consumer, completion)
    if problem is not None:
        return problem
    if not state.consumers and state.spec.initial_position is InitialPosition.LATEST:
        state = _created_at_latest(state)
    # The newcomer may take any bound key's hash range.
    key_owners = tuple((k, owner, tuple(sorted(set(others) | {op.consumer}))) for k, owner, others in state.key_owners)
    state = failover_may_switch(state) if state.connected() else _pause_if_failover_switch(state, becomes_active=True)
    return state.with_(consumers=state.consumers + (Consumer(name=op.consumer, serial=state.serial + 1),),
                       key_owners=key_owners, serial=state.serial + 1)


def _created_at_latest(state: State) -> State:
    """The first subscribe creates the subscription; at the Latest position its cursor starts after
    the last entry published so far: those messages are never delivered to it, and
    markDeletePosition is that last entry (shown by test_fidelity_broker::
    test_a_subscription_at_latest_starts_after_the_last_published_entry)."""
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
            changed[m.id] = m.with_(extra_deliveries=m.extra_deliveries + 1)
    state = replace_messages(state, changed)
    consumers = tuple(c.with_(connected=False, pending_acks=()) if c.connected else c for c in state.consumers)
    return state.with_(consumers=consumers + (Consumer(name=newcomer, serial=state.serial + 1),),
                       serial=state.serial + 1, cursor=cur.rewind(state.cursor))


def failover_may_switch(state: State) -> State:
    """Failover: a consumer joined or left while others stay, so the broker picks the active
    consumer again. On a non-partitioned topic it hashes the connected consumers' names (shown by
    test_fidelity_broker::test_the_failover_active_consumer_is_not_the_first_to_subscribe_but_a_hash_of_the_names),
    so the model does not know who it is. If it changed, the
    broker pauses dispatch and rewinds: everything unacknowledged may come (again) to the new
    active consumer, while the old one still has its receiver queue."""
    if state.spec.subscription_type is not SubscriptionType.FAILOVER:
        return state
    # A second change while the first one's delay runs can leave what was unacknowledged
    # undelivered while messages sent later flow: it is not owed until something rewinds the
    # subscription again (KD-11; shown by history
    # broker-failover-second-switch-stalls.cumulative_ack-Failover).
    again = state.paused_until > state.now
    changed = {m.id: m.with_(extra_deliveries=m.extra_deliveries + 1, never_dispatched=False,
                             stalled=m.stalled or (again and m.status is not ACKED))
               for m in state.messages if m.status is not ACKED or not m.ack_confirmed}
    return replace_messages(state, changed).with_(cursor=cur.rewind(state.cursor),
                                                  paused_until=state.now + state.spec.failover_delay_ms)


def _pause_if_failover_switch(state: State, *, becomes_active: bool) -> State:
    """Failover: the broker delays dispatch after the active consumer changes, a new
    subscription's first consumer too (shown by test_fidelity_broker::
    test_the_project_broker_pauses_a_failover_switch_for_the_time_the_suite_assumes)."""
    if state.spec.subscription_type is not SubscriptionType.FAILOVER or not becomes_active:
        return state
    return state.with_(paused_until=state.now + state.spec.failover_delay_ms)


def close(state: State, op: o.Close, completion: o.Completion) -> Result:
    if state.consumer(op.consumer) is None:
        raise ValueError(f"close of {op.consumer}, which is not connected: the program is malformed")
    state = flush_acks(state, op.consumer)
    held = {m.id.entry for m in state.messages if m.status is HELD and m.holder == op.consumer}
    return leave(state, frozenset({op.consumer}), owed_entries=held)


def leave(state: State, leaving: frozenset[str], *, owed_entries: set[int] | None) -> State:
    """Connected consumers leave the subscription (a close, after its flush; or a client crash,
    all of them at once): the broker removes each (the dispatcher's removeConsumer) and hands what
    is pending on it to the consumers that stay. `owed_entries`: the partly acked batch entries that
    must come back whole (None: every one; see entries_come_back)."""
    remaining = [c for c in state.connected() if c.name not in leaving]
    tracked = state.spec.subscription_type.tracks_redelivery_count
    # The closed consumer's held messages go to the others with their redelivery count unchanged,
    # not +1 as apache/pulsar#5895 suggests (shown by test_fidelity_broker::
    # test_closing_a_shared_consumer_moves_its_held_messages_to_the_others_uncounted).
    changed = {m.id: _handed_back(state, m) for m in state.messages if m.status is HELD and m.holder in leaving}
    if state.spec.subscription_type is SubscriptionType.FAILOVER:
        # Two applications got a copy: after a switch the new active consumer got it from the
        # broker and the old one from its receiver queue, in either order. The broker has it
        # pending on the one it dispatched to last, which may be the one that stays: then the close
        # hands nothing back, and the copy that consumer's application holds is the message (shown
        # by history
        # broker-failover-stale-copy-received-after-the-switch-is-not-owed-at-its-close.multi_topics-Failover-2).
        # Only a consumer that received a copy and stays can hold it so: one that never got one,
        # or got it before leaving, cannot (suites/model/test_failover_copies.py).
        staying = {c.name for c in remaining}
        for m in state.messages:
            if m.status is HELD and m.holder in leaving and m.held_by_two_consumers:
                holders = sorted(m.copy_receivers & staying)
                if len(holders) == 1:
                    changed[m.id] = m.with_(holder=holders[0], extra_deliveries=m.extra_deliveries + 1)
        for m in state.messages:
            if m.copy_receivers & leaving:  # a leaving consumer's copy goes with it
                kept = changed.get(m.id, m)
                changed[m.id] = kept.with_(copy_receivers=kept.copy_receivers - leaving)
    # A partly acked batch must come back only if the closing consumer had it (shown by history
    # broker-partial-batch-of-another-consumer-not-back-at-close.redelivery_count_and_dead_letter-Shared-dlq1).
    if tracked:
        # A message another consumer holds as the model has it may have a copy in this one's
        # application too: the close hands that copy back, with its count (shown by history
        # broker-other-applications-copy-back-at-its-close.redelivery_count_and_dead_letter-Shared).
        changed.update({m.id: m.with_(extra_deliveries=m.extra_deliveries + 1) for m in state.messages
                        if m.status is HELD and m.held_by_two_consumers and m.holder not in leaving})
    if remaining:
        # Messages in the closed consumer's receiver queue go to the others, out of publish order.
        changed.update({m.id: m.with_(never_dispatched=False) for m in state.messages
                        if m.status is AVAILABLE and m.never_dispatched})
    # Any batch entry not yet deleted may have been pending on this consumer, its receiver queue
    # included (shown by history broker-partly-acked-batch-back-after-close.individual_ack-Shared-latest).
    state = entries_come_back(replace_messages(state, changed), set(range(len(state.entries))), owed=owed_entries)
    # What its client skipped after a seek is owed to the others now; a copy its application got
    # after an ack goes back to the subscription with it.
    state = replace_messages(state, {m.id: m.with_(skipped_by=None,
                                                   copy_held_by=None if m.copy_held_by in leaving else m.copy_held_by)
                                     for m in state.messages if m.skipped_by in leaving or m.copy_held_by in leaving})
    if tracked and not remaining:
        # The last consumer is gone: the dispatcher drops its redelivery tracker, counts restart at 0
        # (shown by test_fidelity_broker::
        # test_when_the_last_consumer_leaves_the_redelivery_count_starts_again_at_zero).
        state = state.with_(messages=tuple(m.with_(count_lo=0, count_hi=0) for m in state.messages))
    if remaining:
        state = failover_may_switch(state)
    else:
        state = unstall(state)  # the next consumer starts from markDeletePosition
    consumers = tuple(c.with_(connected=False) if c.name in leaving and c.connected else c for c in state.consumers)
    owners = tuple(b for b in state.key_owners if b[1] not in leaving)
    return state.with_(consumers=consumers, key_owners=owners, cursor=cur.rewind(state.cursor) if not remaining else state.cursor)


def _handed_back(state: State, message: Message) -> Message:
    """A closed consumer's held message goes back to the broker. Its pending nack or ack timeout
    is dropped with the client's trackers, so the count that request added may not happen (shown
    by history broker-dropped-nack-leaves-the-count.batches-Shared)."""
    if message.dead_letter_unsure:
        # Another consumer's client may have dead-lettered it: it may come once more, or never.
        return message.with_(status=ACKED, holder=None, redelivery_from=None, redelivery_by=None,
                             extra_deliveries=message.extra_deliveries + 1)
    lo, hi = message.count_lo, message.count_hi
    if message.redelivery_from is not None and state.spec.subscription_type.tracks_redelivery_count:
        lo = max(lo - 1, 0)
        hi = hi - 1 if state.now < message.redelivery_from else hi
    return message.with_(status=AVAILABLE, holder=None, redelivery_from=None, redelivery_by=None,
                         never_dispatched=False, count_lo=lo, count_hi=max(hi, lo), copy_receivers=frozenset())


def bind_key(state: State, message: Message, consumer: Consumer) -> State:
    """Bind the key to the consumer that received it. The broker bound it when it dispatched the
    message, at some moment after the message was sent and the consumer subscribed: consumers that
    joined after that moment (or rejoin after an unload) may have taken the key's hash range, so
    they may also receive it."""
    if state.spec.subscription_type is not SubscriptionType.KEY_SHARED:
        return state
    key = message.key
    others = tuple(b for b in state.key_owners if b[0] != key)
    previous = next((b for b in state.key_owners if b[0] == key), None)
    if previous is not None and previous[1] == consumer.name:
        return state
    earliest_dispatch = max(message.serial, consumer.serial)
    # A consumer that may still be reconnecting after an unload joins the new dispatcher after
    # this dispatch, and may take the key's hash range then (shown by history
    # broker-key-bound-while-its-owner-reconnects-moves-to-it.traces-Key_Shared); so may one known
    # to be back only since the earliest dispatch: it rejoined at some moment before the model
    # learned it, maybe after the dispatch (shown by history
    # broker-key-bound-before-a-consumer-is-known-back-moves-to-it.redelivery_count_and_dead_letter-Key_Shared-dlq2).
    may_also_receive = {c.name for c in state.connected()
                        if (c.serial > earliest_dispatch or c.reconnecting or c.back_serial >= earliest_dispatch)
                        and c.name != consumer.name}
    # The previous owner may still receive messages of the key already in its receiver queue.
    if previous is not None:
        may_also_receive.add(previous[1])
    binding = (key, consumer.name, tuple(sorted(may_also_receive)))
    return state.with_(key_owners=tuple(sorted(others + (binding,), key=lambda b: str(b[0]))))
