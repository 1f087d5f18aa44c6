"""The topic reopened or rewound under its consumers: unload, restart, crash, and seek.

Unload and restart close the topic's dispatcher with the cursor persisted; a crash loses what was
not persisted. Either way the consumers reconnect to a new dispatcher, which reads from
markDeletePosition + 1 with a new redelivery tracker (PersistentTopic.close, ManagedCursorImpl
recovery); a Failover consumer that comes back after the others may take over, and a Key_Shared
key goes to whichever consumer is back first. A seek flushes the consumer's acks and resets the
cursor to the target (ManagedCursorImpl.resetCursor; the C++ client's ConsumerImpl::seekAsync).
Notes name the test that shows a rule as model/transitions/redelivery.py describes.
"""

from __future__ import annotations

from model import cursor as cur
from model import ops as o
from model.spec import SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, State, replace_messages
from model.transitions.acks import flush_acks
from model.transitions.reconnect import covers, disconnected
from model.transitions.redelivery import unstall
from model.violations import Either, Result


def seek(state: State, op: o.Seek, completion: o.Completion) -> Result:
    """Seek: flush, then reset the cursor to the message's entry (holes and batch indexes cleared).

    With the Python client the seeking consumer never receives the target again (nor, for a
    batch, the indexes up to it): its client drops them as "before the start message id"
    (start_message_id_inclusive is false). The broker still counts them unacknowledged, so they
    come to the next consumer once the seeking one is gone (shown by test_fidelity_broker::
    test_seek_skips_the_target_for_the_seeking_consumer_and_keeps_it_for_the_next). A client that
    does deliver the target is allowed too: the model only stops owing it. A client that sends the
    batch index (`spec.seek_sends_batch_index`, the Java client) has the indexes before it
    acknowledged for the subscription (`acked_by_seek`): no consumer gets them again until the
    topic is reopened (shown by suites/broker/test_seek_to_a_batch_index.py). A client that
    acknowledges what it skips (`spec.seek_acks_skipped`, the Go client) sends that ack when the
    copy the reset dispatches reaches it: the target (and, for a batch, the indexes up to it) may
    come to another consumer, and is owed to none (shown by suites/broker/test_what_a_seek_skips.py).

    A seek that failed did nothing; one whose outcome is unknown may have done nothing: the C++
    client answers NotConnected, without sending anything, while its consumer reconnects after an
    unload (ConsumerImpl::seekAsyncInternal; shown by the histories
    broker-failed-seek-while-reconnecting-did-nothing.traces-Exclusive and -Shared).
    """
    if completion.outcome is o.Outcome.FAIL:
        return state
    if completion.outcome is o.Outcome.INFO:
        return Either((_seek(state, op), state))
    return _seek(state, op)


def _seek(state: State, op: o.Seek) -> State:
    state = flush_acks(state, op.consumer)
    target = op.message.entry
    acked_before = op.message.index if state.spec.seek_sends_batch_index else -1
    changed, skip_acks = {}, []
    for message in state.messages:
        if message.id.entry == target and message.id.index < acked_before:
            changed[message.id] = message.with_(status=ACKED, holder=None, ack_confirmed=False, ack_may_be_dropped=False,
                                                redelivery_from=None, redelivery_by=None, skipped_by=None,
                                                dead_letter_unsure=False, copy_held_by=None, acked_by_seek=op.consumer)
        elif message.id.entry >= target:
            skipped = message.id.entry == target and message.id.index <= op.message.index
            # Dispatched again from the reset, counted from 0 (any copy queued keeps its count).
            reset = dict(holder=None, redelivery_from=None, redelivery_by=None, ack_confirmed=False, count_lo=0,
                         count_hi=message.count_hi + 1, dead_letter_unsure=False, copy_held_by=None,
                         acked_by_seek=None)
            again = message.extra_deliveries + int(message.delivered)
            if skipped and state.spec.seek_acks_skipped:
                # Its client acknowledges the copy the reset sends it, unseen: an ack that may not
                # be sent (the consumer gone before the copy came, or another consumer got it).
                skip_acks.append(("individual", message.id))
                changed[message.id] = message.with_(status=ACKED, ack_may_be_dropped=True, skipped_by=None,
                                                    extra_deliveries=max(again, 1), **reset)
                continue
            changed[message.id] = message.with_(status=AVAILABLE, ack_may_be_dropped=False, extra_deliveries=again,
                                                skipped_by=op.consumer if skipped else None, **reset)
        elif message.status is not ACKED or not message.ack_confirmed:
            changed[message.id] = message.with_(status=ACKED, holder=None, ack_confirmed=True, ack_may_be_dropped=False,
                                                extra_deliveries=0, redelivery_from=None, redelivery_by=None,
                                                acked_by_seek=None)
    state = unstall(replace_messages(state, changed))
    # The broker disconnects the subscription's consumers after the reset (the Java client's seek
    # completes before they are back).
    consumers = tuple(c.with_(last_first_delivery=-1, reconnecting=c.connected and state.spec.ack_receipts,
                              pending_acks=c.pending_acks + tuple(skip_acks) if c.name == op.consumer else c.pending_acks)
                      for c in state.consumers)
    return state.with_(cursor=cur.reset(state.cursor, target), consumers=consumers, disconnected_serial=state.serial + 1)


def reopen(state: State, *, persisted: bool) -> Result:
    """Topic unload or broker restart (persisted) or crash: consumers reconnect to a new dispatcher.

    Everything unacknowledged is dispatched again from markDeletePosition + 1 with counts reset;
    a message already in a receiver queue may arrive twice (shown by test_fidelity_broker::
    test_an_unload_keeps_acks_and_the_reconnected_consumer_gets_the_unacked_again and, for the
    second copy, by history broker-lost-ack-after-two-unloads-comes-twice.persistence-Exclusive).
    After a crash the cursor may come back at any earlier persisted state, as far back as the
    initial position, so every ack may be undone until a cursor read says otherwise (shown by
    suites/broker/test_persistence.py::
    test_a_crash_brings_the_cursor_back_to_an_earlier_state_and_redelivers_what_it_lost).
    """
    rewinds_at_reconnect = _rewinds_at_reconnect(state)
    state = _seek_acks_forgotten(state)
    # Without a consumer connected or reconnecting no receiver queue holds a copy: what is
    # available is dispatched once by the new dispatcher, as it would have been by the old one
    # (shown by test_fidelity_broker::test_messages_no_consumer_had_come_once_after_an_unload).
    queued_anywhere = any(c.connected or c.reconnecting for c in state.consumers)
    changed = {}
    for message in state.messages:
        if message.status is ACKED:
            if not persisted or not message.ack_confirmed:
                # A copy the new dispatcher sends counts from 0 (shown by history
                # broker-acked-copy-after-an-unload-counts-from-zero.traces-Key_Shared); one still in
                # a receiver queue keeps the count it was dispatched with.
                changed[message.id] = message.with_(extra_deliveries=message.extra_deliveries + 1,
                                                    ack_confirmed=message.ack_confirmed and persisted, count_lo=0)
            elif message.count_hi:
                # Acknowledged for good: a copy comes only from a receiver queue, with the count it
                # was dispatched with (shown by test_fidelity_broker::
                # test_a_copy_queued_before_an_unload_keeps_its_count_though_its_ack_is_persisted).
                changed[message.id] = message.with_(count_lo=0,
                                                    count_hi=message.count_hi if message.extra_deliveries else 0)
        else:
            # The new dispatcher counts from 0; a copy dispatched before and still in a receiver
            # queue keeps the count it was dispatched with: of a message not held (shown by history
            # broker-queued-copy-keeps-its-count-across-an-unload.traces-Key_Shared), or of a held
            # one with copies that may still come (its extra deliveries: history
            # broker-held-message-queued-elsewhere-keeps-its-count-across-an-unload.traces-Shared).
            # A held one without comes again from the new dispatcher only.
            queued_hi = message.count_hi if message.status is AVAILABLE or message.extra_deliveries else 0
            asked_again = 0
            if message.redelivery_from is not None:
                # A redelivery still to be asked (a nack's delay running) is asked of the new
                # dispatcher when the client's timer fires: one more copy after the one the new
                # dispatcher sends, counted 1 by its tracker on Shared, by a rewind on Exclusive
                # (shown by test_fidelity_broker::test_a_nack_pending_at_an_unload_is_asked_again_of_the_new_dispatcher
                # and history broker-nack-pending-at-an-unload-counted-by-the-new-dispatcher.traces-Shared).
                # Not owed: a timer that fires while the consumer reconnects asks nothing.
                asked_again = 1
                if state.spec.subscription_type.tracks_redelivery_count:
                    queued_hi = max(queued_hi, 1)
            handed_back = int(queued_anywhere or message.status is not AVAILABLE)
            # The client's record of a held copy at the dead-letter limit may not outlive the
            # reconnect (Message.dead_letter_record_stale).
            limit = state.spec.max_redeliver_count
            stale = message.dead_letter_record_stale or (
                limit is not None and message.status is HELD and message.held_count >= limit)
            changed[message.id] = message.with_(dead_letter_record_stale=stale,
                                                extra_deliveries=message.extra_deliveries + handed_back + asked_again,
                                                never_dispatched=message.never_dispatched and not handed_back,
                                                redelivery_from=None, redelivery_by=None, count_lo=0, count_hi=queued_hi)
    state = unstall(replace_messages(state, changed))
    # The consumers reconnect; what their clients flush meanwhile may be dropped (reconnect.py).
    return disconnected(state.with_(cursor=cur.rewind(state.cursor), reopened_serial=state.serial + 1,
                                    disconnected_serial=state.serial + 1, serial=state.serial + 1,
                                    key_owners=_keys_free(state),
                                    rewinds_at_reconnect=state.rewinds_at_reconnect + rewinds_at_reconnect))


def _seek_acks_forgotten(state: State) -> State:
    """The reopened cursor has no ack set of a seek (`acked_by_seek`): those indexes are owed again,
    as if never acknowledged (shown by suites/broker/test_seek_to_a_batch_index.py::
    test_a_reopened_topic_forgets_the_indexes_a_seek_acknowledged), unless an ack the application
    made is still on its way; but not to the consumer that sought, while it stays: its client keeps
    the seek's message id as its start across reconnections and skips the indexes up to it
    (ConsumerImpl.clearReceiverQueue returns early for a durable subscription; shown by
    ::test_after_a_reopening_the_seeking_consumer_still_skips_what_its_seek_acknowledged)."""
    pending = tuple(ack for c in state.consumers for ack in c.pending_acks)
    changed = {}
    for m in state.messages:
        if not m.acked_by_seek or m.ack_confirmed:
            continue
        if covers(pending, m.id):
            changed[m.id] = m.with_(acked_by_seek=None)
        else:
            seeker = m.acked_by_seek if state.consumer(m.acked_by_seek) is not None else None
            changed[m.id] = m.with_(status=AVAILABLE, acked_by_seek=None, never_dispatched=False, skipped_by=seeker)
    return replace_messages(state, changed)


def _rewinds_at_reconnect(state: State) -> int:
    """Exclusive/Failover: the rewinds the consumers' return may bring, each delivering everything
    unacknowledged once more, those sent after the reopening too.

    A redelivery the client still had to ask (a nack's delay or an ack timeout running) may be
    asked once its consumer is back: the Go client queues the request behind its reconnection
    (partitionConsumer.runEventsLoop) and the broker rewinds (shown by history
    broker-nack-asked-after-a-cut-rewinds-all.network_cut-Exclusive). On Failover each consumer
    that comes back after the first may become the active one, and the broker rewinds for it
    (shown by history broker-failover-switch-when-a-consumer-comes-back.network_cut-Failover)."""
    if not state.spec.subscription_type.single_active_consumer:
        return 0
    asked = int(any(m.status is HELD and m.redelivery_from is not None for m in state.messages))
    switches = len(state.connected()) - 1 if state.spec.subscription_type is SubscriptionType.FAILOVER else 0
    return asked + max(switches, 0)


def _keys_free(state: State) -> tuple:
    """Key_Shared: every consumer left the dispatcher, and the first to come back takes every hash
    range: a key may go to any connected consumer, its owner still included for what its receiver
    queue holds (shown by history broker-key-goes-to-the-first-consumer-back.network_cut-Key_Shared)."""
    connected = [c.name for c in state.connected()]
    return tuple((key, owner, tuple(sorted(set(connected) - {owner}))) for key, owner, _ in state.key_owners)
