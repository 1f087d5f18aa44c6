"""Acknowledgements and the broker's cursor: acknowledge, acknowledge_cumulative, the pending acks'
flush, and a read of the cursor that settles what reached the broker.

The client groups acks (ackGroupingTimeMillis, 100 ms) and sends them without receipt: an ack is
pending on its consumer until something proves it reached the broker (a close or a seek flushes;
a cursor read shows it). With ack receipts (`Spec.ack_receipts`, the Java client's
isAckReceiptEnabled) an acknowledge that returned `ok` has reached it. Once it arrives it moves
the cursor as `ManagedCursorImpl` does (model/cursor.py): an individual ack deletes the entry, or
with batch-index acks the index; a cumulative ack moves markDeletePosition. Follows the C++
client's AckGroupingTrackerEnabled and ConsumerImpl::acknowledgeCumulativeAsync (refused on Shared
and Key_Shared). Notes name the test that shows a rule as model/transitions/redelivery.py describes.
"""

from __future__ import annotations

from model import cursor as cur
from model import ops as o
from model.checks import check_ack, check_cumulative_refused_on_shared, check_cursor, cursor_bounds
from model.state import ACKED, AVAILABLE, HELD, Consumer, State, replace_consumer, replace_message, replace_messages
from model.transitions.reconnect import acked_while_reconnecting, covers
from model.transitions.redelivery import timeouts_after_ack
from model.violations import CursorPrefixQuestion, Result


def acknowledge(state: State, op: o.Acknowledge, completion: o.Completion) -> Result:
    consumer = state.consumer(op.consumer)
    message = state.message(op.message)
    if consumer is None or message is None:
        raise ValueError(f"ack of {op.message} on {op.consumer}: the program is malformed")
    problem = check_ack(state, op, completion)
    if problem is not None:
        return problem
    # Acked while its redelivery is already requested: the request may reach the broker first, or
    # bring the whole batch entry back (no stored test yet: on the broker, after a nack of m1.2
    # and an ack of m1.0, m1.0 came again).
    requested = message.status is HELD and message.redelivery_from is not None
    # Acked when its redelivery had landed (back for redelivery, the application still holding its
    # copy): the redelivery may be dispatched already (shown by history
    # broker-acked-after-its-redelivery-landed.traces-Shared).
    landed = message.status is AVAILABLE and message.delivered
    extra = message.extra_deliveries + (1 if requested or landed else 0)
    # The count that request added may never happen: a close before the nack delay drops it with
    # the client's tracker (shown by history broker-dropped-nack-leaves-the-count.batches-Shared).
    lo = max(message.count_lo - 1, 0) if requested and state.spec.subscription_type.tracks_redelivery_count \
        else message.count_lo
    acked = message.with_(status=ACKED, holder=None, redelivery_from=None, redelivery_by=None, extra_deliveries=extra,
                          count_lo=lo, dead_letter_unsure=False, copy_held_by=None)
    if extra and state.spec.subscription_type.tracks_redelivery_count:
        # A copy still to come may carry count 0: the broker's redelivery tracker forgets the
        # message when the ack arrives, and a copy dispatched after that is counted from nothing
        # (shown by history broker-acked-copy-counted-from-nothing.negative_ack-Key_Shared).
        acked = acked.with_(older_copy_count=0)
    ended = [message] if message.status is HELD and message.holder == op.consumer else []
    state = timeouts_after_ack(replace_message(state, acked), op.consumer, ended)
    if op.message.index >= 0 and state.spec.batch_index_ack and state.spec.subscription_type.tracks_redelivery_count:
        # The tracker counts per entry and forgets the entry at a batch-index ack: the other
        # indexes' copies to come are counted from nothing again (shown by history
        # broker-batch-index-ack-resets-the-entry-count.batches-Shared-batch-index-ack), also those
        # of a redelivery already requested, when the ack arrives between the request and the
        # dispatch (shown by history
        # broker-batch-index-ack-after-a-nack-lets-the-entry-come-uncounted.batches-Shared-batch-index-ack).
        state = replace_messages(state, {
            m.id: m.with_(older_copy_count=0)
            for m in state.messages if m.id.entry == op.message.entry and m.id != op.message})
    return acked_while_reconnecting(_pending_or_confirmed(state, consumer, "individual", op.message, completion),
                                    op.consumer)


def acknowledge_cumulative(state: State, op: o.AcknowledgeCumulative, completion: o.Completion) -> Result:
    consumer = state.consumer(op.consumer)
    if consumer is None or state.message(op.message) is None:
        raise ValueError(f"cumulative ack of {op.message} on {op.consumer}: the program is malformed")
    if not state.spec.subscription_type.allows_cumulative_ack:
        return check_cumulative_refused_on_shared(state, op, completion) or state
    problem = check_ack(state, op, completion)
    if problem is not None:
        return problem
    covered = {m.id: m.with_(status=ACKED, holder=None, redelivery_from=None, redelivery_by=None,
                             extra_deliveries=m.extra_deliveries + int(_may_be_on_its_way(state, m, op.consumer)))
               for m in state.messages if m.id <= op.message and m.status is not ACKED}
    ended = [m for m in state.messages if m.id in covered and m.status is HELD and m.holder == op.consumer]
    state = timeouts_after_ack(replace_messages(state, covered), op.consumer, ended)
    return acked_while_reconnecting(_pending_or_confirmed(state, consumer, "cumulative", op.message, completion),
                                    op.consumer)


def _may_be_on_its_way(state: State, message, consumer: str) -> bool:
    """A copy of a message a cumulative ack covers may still come: one prefetched but never
    received may be in the receiver queue, one being redelivered (its redelivery requested, or
    owed again after a rewind) may be dispatched already (shown by history
    broker-rewound-copy-after-a-cumulative-ack.traces-Exclusive). A held message whose only window
    is its ack timeout, not yet run out, with no rewind on its way, does not come again: the
    cumulative ack takes it out of the client's unacked-message tracker (removeMessagesTill) before
    the timeout asks for it (shown by
    suites/broker/test_ack_timeout_and_cumulative_ack.py::test_a_cumulative_ack_ends_the_ack_timeouts_of_what_it_acknowledges).
    Cumulative acks are for Exclusive and Failover, where any request for a redelivery is a rewind.
    Not so for a message another consumer holds (its own client's timer may ask first), nor for a
    batch index (inside a batch the ack may leave the entry tracked)."""
    if not message.delivered or message.status is AVAILABLE:
        return True
    if message.redelivery_from is None:
        return False
    if message.holder != consumer or message.id.index >= 0:
        return True
    rewinding = state.rewind_window is not None or state.rewinds_at_reconnect > 0
    return rewinding or message.redelivery_from <= state.now


def _pending_or_confirmed(state: State, consumer: Consumer, kind: str, message_id: o.MessageId,
                          completion: o.Completion) -> State:
    """The ack waits on its consumer until something shows it reached the broker. With ack receipts
    an `ok` acknowledge is that proof: the broker applied it before it answered, so it is in the
    cursor at once and an unload or a graceful restart keeps it (shown by
    suites/broker/test_ack_receipts.py::test_an_ack_with_a_receipt_is_in_the_cursor_when_it_returns,
    ::test_an_ack_with_a_receipt_survives_a_topic_unload and ::..._survives_a_graceful_restart).
    A crash may still lose it, as any confirmed ack (reopen's rule; shown by
    ::test_a_crash_may_lose_an_ack_with_a_receipt_and_redelivers_what_it_lost).

    Not a proof, so the ack stays pending: an outcome that is unknown (`info`: the connection
    dropped before the answer), and an acknowledge on a consumer that may be reconnecting, which
    the Java client completes at once without asking for a receipt (PersistentAcknowledgments-
    GroupingTracker.isAckReceiptEnabled(cnx) is false with no connection; shown by
    ::test_an_ack_while_the_consumer_reconnects_returns_without_a_receipt). Nor, without batch-index
    acks, a partial batch ack, which the client holds and completes at once: an individual one is
    applied once the batch is whole (apply_ack), a cumulative one inside a batch acks the entries
    before it without waiting for their receipt (the tracker's addAcknowledgment)."""
    if state.spec.ack_receipts and completion.outcome is o.Outcome.OK and not consumer.reconnecting and (
            kind == "individual" or message_id.index < 0 or state.spec.batch_index_ack
            or message_id.index == state.entries[message_id.entry] - 1):
        return apply_ack(state, kind, message_id)
    return replace_consumer(state, consumer.with_(pending_acks=consumer.pending_acks + ((kind, message_id),)))


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
                     if m.status is ACKED and not m.ack_confirmed and not m.ack_may_be_dropped
                     and cursor.is_acknowledged(m.id.entry)}
    elif message_id.index >= 0 and state.spec.batch_index_ack:
        cursor = cur.delete_batch_index(cursor, message_id.entry, message_id.index, batch_size)
        acked = state.message(message_id)
        confirmed = {} if acked.ack_may_be_dropped else {message_id: acked.with_(ack_confirmed=True)}
    elif message_id.index >= 0 and not all(m.status is ACKED and not _dead_letter_ack_to_come(m) for m in siblings):
        # Without batch-index acks the client holds a partial batch ack until every index is acked.
        # An index its client sends, or may have sent, to the dead-letter topic is acked by that
        # send's completion, or never: until then the batch is not whole, and whether the entry is
        # ever acked stays open (shown by history
        # broker-batch-with-maybe-dead-lettered-indexes-not-acked.redelivery_count_and_dead_letter-Shared-dlq1).
        return state
    elif any(m.ack_on_older_copy for m in siblings):
        # Whole only across copies of the batch: each copy's acker may still miss an index, so the
        # entry may be acked or never (model/transitions/receive.py); the cursor's bounds leave it
        # open until a read settles it (model.checks.cursor_bounds).
        return state
    elif any(m.ack_may_be_dropped for m in siblings):
        # The client acks the entry once its batch is whole; with one index's ack perhaps dropped
        # (model/transitions/reconnect.py), so perhaps is the entry's (shown by history
        # broker-batch-completed-by-a-dropped-ack.traces-Exclusive).
        cursor = cur.delete(cursor, [message_id.entry])
        confirmed = {m.id: m.with_(ack_may_be_dropped=True, extra_deliveries=max(m.extra_deliveries, 1))
                     for m in siblings if m.status is ACKED and not m.ack_confirmed}
    else:
        cursor = cur.delete(cursor, [message_id.entry])
        confirmed = {m.id: m.with_(ack_confirmed=True) for m in siblings
                     if m.status is ACKED and not m.ack_confirmed and not m.ack_may_be_dropped}
    return replace_messages(state.with_(cursor=cursor), confirmed)


def _dead_letter_ack_to_come(message) -> bool:
    """Marked acknowledged for the dead-letter topic (sent there, or perhaps), the client's ack not
    known to have reached the broker."""
    return (message.dead_lettered or message.dead_letter_unsure) and not message.ack_confirmed


def flush_acks(state: State, consumer_name: str) -> State:
    """The consumer's grouped acks reach the broker (close and seek flush first)."""
    consumer = state.consumer(consumer_name)
    if consumer is None or not consumer.pending_acks:
        return state
    for kind, message_id in consumer.pending_acks:
        state = apply_ack(state, kind, message_id)
    return replace_consumer(state, consumer.with_(pending_acks=()))


def read_cursor(state: State, op: o.ReadCursor, completion: o.Completion) -> Result:
    """The broker's cursor must be the confirmed one plus some of each consumer's pending acks.

    Outside the bounds is a violation (check_cursor); at a bound, or with an ack in doubt after a
    crash, the read settles the state; strictly between them the acks it shows must be a
    per-consumer prefix of the pending acks, a question for the solver (model/nondet.py)."""
    observed = completion.value
    if completion.outcome is not o.Outcome.OK or not isinstance(observed, cur.Cursor):
        return state
    flushed = state
    for consumer in state.connected():
        flushed = flush_acks(flushed, consumer.name)
    bounds = cursor_bounds(state, flushed)
    problem = check_cursor(state, observed, bounds)
    if problem is not None:
        return problem
    if bounds.doubtful or observed.acknowledged(len(state.entries)) in (bounds.least, bounds.most):
        return settle(state, observed)
    pending = tuple((c.name, kind, m) for c in state.connected() for kind, m in c.pending_acks)
    if any(m.index >= 0 for _, _, m in pending):
        return settle(state, observed)  # batch-index acks do not map to whole entries; the bounds decide
    return CursorPrefixQuestion(observed=observed, confirmed=state.cursor, entries=len(state.entries),
                                pending_acks=pending, settled=settle(state, observed))


def settle(state: State, observed: cur.Cursor) -> State:
    """Make the model's broker cursor the observed one: what it shows is confirmed, what it does not
    show and no pending ack can still bring is unacknowledged again (it will be redelivered)."""
    pending = tuple(ack for c in state.connected() for ack in c.pending_acks)
    changed = {}
    for message in state.messages:
        acked_on_broker = observed.is_acknowledged(message.id.entry)
        if acked_on_broker and message.status is ACKED and not message.ack_confirmed:
            # An ack in doubt at a client crash is settled: its extra delivery goes with the doubt.
            doubt = int(message.ack_in_doubt)
            changed[message.id] = message.with_(ack_confirmed=True, ack_in_doubt=False, ack_may_be_dropped=False,
                                                ack_on_older_copy=False,
                                                extra_deliveries=max(message.extra_deliveries - doubt, 0))
        elif not acked_on_broker and message.status is ACKED and not covers(pending, message.id):
            if message.dead_lettered or message.dead_letter_unsure:
                continue  # its client's ack follows the dead-letter topic's send, if it comes at all
            if message.id.index >= 0:
                # Without batch-index acks a partial batch ack is held by the client (the entry is
                # not deleted yet); with them the broker keeps the index in the cursor's batch
                # indexes, which internalStats does not show. Either way the read proves nothing.
                continue
            holder = message.copy_held_by if state.consumer(message.copy_held_by or "") is not None else None
            if holder is not None:
                # The ack was lost, and a consumer's application got a copy after it: that
                # consumer holds the message, nothing is owed (shown by
                # suites/broker/test_ack_while_reconnecting.py::test_a_copy_received_before_the_read_that_shows_the_ack_lost_is_held
                # and history broker-lost-ack-copy-received-before-the-read-is-held.persistence-Exclusive).
                changed[message.id] = message.with_(status=HELD, holder=holder, ack_confirmed=False,
                                                    dead_letter_unsure=False, ack_in_doubt=False,
                                                    ack_may_be_dropped=False, copy_held_by=None)
                continue
            # The ack was lost: the message is owed again, which uses up the one extra delivery the
            # doubt allowed; extra copies for other causes stay (shown by history
            # broker-lost-ack-after-two-unloads-comes-twice.persistence-Exclusive).
            changed[message.id] = message.with_(status=AVAILABLE, ack_confirmed=False, dead_letter_unsure=False,
                                                ack_in_doubt=False, ack_may_be_dropped=False, copy_held_by=None,
                                                extra_deliveries=max(message.extra_deliveries - 1, 0))
    state = replace_messages(state, changed)
    confirmed_cursor = cur.from_acknowledged(observed.acknowledged(len(state.entries)) - set(range(observed.mark_delete + 1)),
                                             mark_delete=observed.mark_delete, batch_deleted=state.cursor.batch_deleted,
                                             read_position=state.cursor.read_position)
    consumers = tuple(c.with_(pending_acks=tuple(p for p in c.pending_acks if not observed.is_acknowledged(p[1].entry)))
                      for c in state.consumers)
    return state.with_(cursor=confirmed_cursor, consumers=consumers)
