"""Receive: a message handed to the application, checked and then held by the consumer.

A delivery is checked (model/checks.py: phantom, dead letter, duplicates, order, Key_Shared
stickiness, redelivery count), then the message is HELD by the consumer. A delivery uses up the
open redelivery window first, else one extra delivery; it narrows or widens the interval of counts
copies still to come may carry; with an ack timeout it starts the client's tracking
(UnAckedMessageTracker, from the application's receive: apache/pulsar#3079); on Key_Shared it
binds the key to the consumer (model/transitions/consumers.py). Notes name the test that shows
a rule as model/transitions/redelivery.py describes.
"""

from __future__ import annotations

from model import ops as o
from model.checks import check_no_phantom, delivery_problem, order_key, stale_key_copy
from model.spec import SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, Message, State, replace_consumer, replace_message, replace_messages
from model.transitions.consumers import bind_key
from model.transitions.reconnect import back
from model.transitions.redelivery import requested
from model.violations import Result


def receive(state: State, op: o.Receive, completion: o.Completion, *, invoked: int | None = None) -> Result:
    """`invoked`: the earliest the message can have reached the application, the previous op's
    completion (its stamp, `state.now`, is when the reply came back, later on a loaded machine)."""
    consumer = state.consumer(op.consumer)
    if consumer is None:
        raise ValueError(f"receive on {op.consumer}, which is not connected: the program is malformed")
    delivery = completion.value
    if completion.outcome is not o.Outcome.OK or delivery is None:
        return state  # nothing within the timeout: liveness is checked when the program drains
    message = state.message(delivery.message)
    if message is None:
        return check_no_phantom(state, op.consumer, delivery.message)
    problem = delivery_problem(state, message, consumer, delivery.redelivery_count)
    if problem is not None:
        return problem
    first = not message.delivered and message.never_dispatched
    if message.dead_letter_unsure and message.status is ACKED:
        # A copy of a message its client may have dead-lettered: the application holds it either
        # way (the client dead-letters what its receiver queue held when a redelivery was asked,
        # and still hands the queued copy out), and whether it comes again after a close stays
        # open (shown both ways by the histories
        # broker-maybe-dead-lettered-copy-back-after-close.redelivery_count_and_dead_letter-Shared-dlq1
        # and broker-maybe-dead-lettered-copy-never-back.redelivery_count_and_dead_letter-Shared-dlq1).
        message = message.with_(status=HELD, holder=op.consumer, copy_held_by=None)
    if message.ack_in_doubt and message.status is ACKED:
        # Its ack was in doubt at a client crash: the crashed client's queues went with it, so this
        # copy came from the cursor, which lacks the ack. The message is unacknowledged from now on
        # and held by this consumer (shown by
        # suites/broker/test_client_crash.py::test_a_message_whose_ack_was_lost_at_a_crash_comes_back_until_acked).
        message = message.with_(status=HELD, holder=op.consumer, ack_in_doubt=False, ack_confirmed=False,
                                ack_may_be_dropped=False, copy_held_by=None)
    window_open = message.redelivery_from is not None and state.now >= message.redelivery_from
    if message.status is ACKED:
        # An ack the client may have dropped leaves the message to come as often as the broker
        # redelivers it (model/transitions/reconnect.py).
        spare = 1 if message.ack_may_be_dropped else 0
        delivered = message.with_(delivered=True, extra_deliveries=max(message.extra_deliveries - 1, spare),
                                  copy_held_by=message.copy_held_by if message.ack_confirmed else op.consumer)
    else:
        # A delivery uses up the open redelivery window first, else one extra delivery; an extra one
        # leaves a requested redelivery on its way (shown by history
        # broker-pending-rewind-survives-a-spare-delivery.zero_queue-Exclusive).
        used_extra = not window_open and message.status is not AVAILABLE
        remaining = max(message.extra_deliveries - 1, 0) if used_extra else message.extra_deliveries
        pending = (message.redelivery_from, message.redelivery_by) if used_extra else (None, None)
        if (used_extra and pending[0] is not None and message.holder != op.consumer
                and state.spec.subscription_type.tracks_redelivery_count):
            # Another consumer asked for it again, and this one got a copy dispatched before that
            # request left its client (its window is not open yet): the request will find the entry
            # pending on this consumer and be ignored, as a stale copy's nack is (shown by history
            # broker-nack-of-a-copy-redispatched-elsewhere-is-ignored.dead_letter_by_nack-Shared-dlq2).
            # It may still come, should this consumer give it up first; it is not owed.
            remaining, pending = remaining + 1, (None, None)
        delivered = message.with_(status=HELD, holder=op.consumer, delivered=True, extra_deliveries=remaining,
                                  redelivery_from=pending[0], redelivery_by=pending[1], skipped_by=None, stalled=False)
    # An extra copy still to come was dispatched again by a later request: it may carry a higher
    # count; or it is an older copy still queued: it may carry a lower one (shown by history
    # broker-older-queued-copy-keeps-its-count.batches-Shared-batch-index-ack).
    extra = delivered.extra_deliveries if state.spec.subscription_type.tracks_redelivery_count else 0
    lowest = min(message.count_lo, delivery.redelivery_count) if extra else delivery.redelivery_count
    # A queued copy used up while a requested redelivery is still on its way: that copy comes with
    # the count the request added (shown by history
    # broker-queued-copy-before-a-requested-redelivery.batches-Shared).
    requested_later = delivered.status is HELD and delivered.redelivery_from is not None and message.status is HELD \
        and state.spec.subscription_type.tracks_redelivery_count
    if message.status is HELD and message.holder != op.consumer:
        # The copy the other consumer's application holds may still come back with its own count
        # (shown by history broker-closed-consumers-copy-keeps-its-count.batches-Shared-batch-index-ack).
        # A copy that used the other consumer's open window, with no stale copy about that it could
        # be instead, is the redelivery that consumer asked for: the broker took the entry out of
        # its pending acks and has it pending on this one only, so this consumer's own requests are
        # not ignored (shown by history
        # broker-timed-out-copy-moves-to-another-consumer.partitioned_ack_timeout-Shared-3).
        delivered = delivered.with_(older_copy_count=min(message.held_count, message.older_copy_count),
                                    held_by_two_consumers=used_extra or message.extra_deliveries > 0
                                    or message.held_by_two_consumers)
    # A copy still to come may also be one a request sent after the copy just received: the upper
    # bound stays where it was (shown by history
    # broker-newer-copy-after-an-older-one-keeps-its-count.redelivery_count_and_dead_letter-Shared).
    highest = max(message.count_hi, delivery.redelivery_count + extra) if extra or requested_later \
        else delivery.redelivery_count
    if message.status is HELD and message.holder != op.consumer:
        highest = max(highest, message.count_hi)  # the other application's copy may come back with its count
    limit = state.spec.max_redeliver_count
    delivered = delivered.with_(count_lo=lowest, count_hi=highest, held_count=delivery.redelivery_count,
                                dead_letter_record_stale=message.dead_letter_record_stale
                                and (limit is None or delivery.redelivery_count < limit))
    if state.spec.subscription_type is SubscriptionType.FAILOVER:
        delivered = delivered.with_(copy_receivers=message.copy_receivers | {op.consumer})
    rewinds = (state.rewinds if state.rewind_window is not None else 0) + state.rewinds_at_reconnect
    if rewinds and delivered.status is HELD and message.status is AVAILABLE:
        # First received while rewinds are on their way: each may deliver it once more.
        delivered = delivered.with_(extra_deliveries=delivered.extra_deliveries + rewinds)
    window = state.spec.ack_timeout_window_ms
    if window is not None and delivered.status is HELD:
        # Ack timeout: tracking starts when the application receives the message (PR #3079), no
        # earlier than `invoked`; the redelivery is requested between the timeout and one tracker
        # tick after it (shown by
        # test_fidelity_broker::test_an_ack_timeout_counts_from_the_receive_not_from_its_late_reply).
        start = state.now if invoked is None else min(invoked, state.now)
        earliest = start + window[0]
        if state.spec.subscription_type.single_active_consumer:
            # Exclusive/Failover: the client turns a timeout into a redelivery of everything
            # unacknowledged, so it may come back once another held message's window opens
            # (shown by history broker-exclusive-ack-timeout-rewinds-all.ack_timeout-Exclusive and
            # test_fidelity_broker::test_an_ack_timeout_on_exclusive_or_failover_brings_back_every_unacked_message).
            # A copy that came back in its window came with a rewind, which brought back every
            # held message and cleared the client's UnAckedMessageTracker: only windows still to
            # open can bring it back before its own timeout (shown by
            # test_fidelity_broker::test_a_message_back_from_an_ack_timeout_rewind_waits_its_own_timeout).
            earlier = [m.redelivery_from for m in state.messages
                       if m.holder == op.consumer and m.status is HELD and m.redelivery_from is not None
                       and m.id != message.id and (m.redelivery_from > state.now or not window_open)]
            earliest = max(start, min(earlier, default=earliest))
        pending = (delivered.redelivery_from, delivered.redelivery_by)
        delivered = requested(state, delivered, earliest, state.now + window[1])
        if delivered.redelivery_from is not None:
            # The tracker's own timer: a second copy of a message it still tracks leaves the first
            # copy's timer running (UnAckedMessageTracker.add ignores an id it has).
            tracked = message.status is HELD and message.holder == op.consumer and message.timeout_from is not None
            delivered = delivered.with_(timeout_from=message.timeout_from if tracked else start + window[0])
        if pending[0] is not None and delivered.redelivery_from is not None:
            delivered = delivered.with_(redelivery_from=min(pending[0], delivered.redelivery_from),
                                        redelivery_by=max(pending[1], delivered.redelivery_by))
    state = _acker_of_another_delivery(replace_message(state, delivered), message)
    if message.serial >= state.disconnected_serial:
        state = back(state, consumer)  # published after the disconnection: it came over the new connection
        consumer = state.consumer(op.consumer)
    if first:
        state = replace_consumer(state, consumer.with_(last_first_delivery=max(consumer.last_first_delivery,
                                                                               order_key(message.id))))
    if stale_key_copy(state, message, consumer):
        return state  # an old queued copy says nothing about where the key's hash is now
    return bind_key(state, message, consumer)


def _acker_of_another_delivery(state: State, message: Message) -> State:
    """Without batch-index acks a client acknowledges a batch's entry once every index of one
    delivered copy of the batch is acked (an acker per copy: the C++ client's BatchMessageAcker, the
    Java client's BatchMessageIdImpl). A copy of an index that reaches the application after some of
    its siblings were acked, the entry's ack not sent yet, belongs to another copy of the batch:
    the acks before went to an older acker, which may never be whole, so whether the entry is ever
    acked is open from then on; copies come only as before, with a cause (shown by
    suites/broker/test_batch_acked_across_deliveries.py). An index a seek's ack set acknowledged
    (`acked_by_seek`) is the broker's, in no acker of the client: the copies after the seek do not
    make it doubtful (shown by suites/broker/test_seek_to_a_batch_index.py, where the rule of the
    other clients must refuse a next consumer's copy of it)."""
    if message.id.index < 0 or state.spec.batch_index_ack:
        return state
    older = {m.id: m.with_(ack_on_older_copy=True) for m in state.entry_messages(message.id.entry)
             if m.status is ACKED and not m.ack_confirmed and not m.ack_on_older_copy and not m.acked_by_seek}
    return replace_messages(state, older) if older else state
