"""Redelivery: negative_acknowledge, redeliver_unacknowledged_messages, the ack timeout, batch
entries that come back whole, and the client's dead-letter routing.

A redelivery the client asks for lands inside a window (the nack delay and the tracker's tick,
the ack timeout and its tick): the message is HELD with its `redelivery_from`/`redelivery_by` until then. On
Shared and Key_Shared the broker redelivers what is pending on the asking consumer and counts it
in its redelivery tracker (InMemoryRedeliveryTracker, per entry); on Exclusive and Failover the
client asks for everything unacknowledged and the broker rewinds the cursor ("We cannot redeliver
single messages if subscription type is not Shared", ConsumerImpl::redeliverUnacknowledgedMessages).
A message the client received with count >= max_redeliver_count goes to the dead-letter topic and
is acknowledged instead (C++ ConsumerImpl, NegativeAcksTracker, UnAckedMessageTracker).

A rule checked on a real broker names the test that shows it: "history <name>" is a stored broker
history, suites/replay/histories/<name>.jsonl with its .expect.json; "test_fidelity_broker::<test>"
a test of suites/model/test_fidelity_broker.py; "no stored test yet" marks a rule whose evidence
is only the sentence that follows.
"""

from __future__ import annotations

from collections import Counter

from model import cursor as cur
from model import ops as o
from model.spec import SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, Message, State, replace_messages
from model.violations import Result

# A rewind lands after the call that asked for it returned: the client sends
# CommandRedeliverUnacknowledgedMessages and waits for no answer, and the broker rewinds on the
# topic's ordered executor (PersistentDispatcherSingleActiveConsumer.redeliverUnacknowledgedMessages),
# so a message first dispatched after the call, before the rewind ran, comes again with it. This
# bounds how late, on the loaded machines the suite runs on (shown by the histories
# broker-second-rewind-after-a-later-send.redelivery_count_and_dead_letter-Exclusive, two
# redeliver calls, and broker-second-nack-rewind-after-a-later-send.batches-Exclusive-batch-index-ack,
# two nacks of one message: each time a message sent after the calls came twice).
REWIND_LAG_MS = 100


def negative_acknowledge(state: State, op: o.NegativeAcknowledge, completion: o.Completion, *,
                         invoked: int | None = None) -> Result:
    """`invoked`: the earliest the nack can have been called, the previous op's completion (a
    history stamps an op when its reply comes back). The client's tracker takes the due time when
    the nack is called (C++ NegativeAcksTracker::add: now + delay, trimmed to 2^8 ns), so the
    window opens the nack delay after that, and a reply that comes back late does not move it
    (shown by test_fidelity_nack_timing::test_a_nack_replied_late_comes_back_sooner_after_its_reply_than_the_delay)."""
    message = state.message(op.message)
    if message is None or state.consumer(op.consumer) is None:
        raise ValueError(f"nack of {op.message} on {op.consumer}: the program is malformed")
    invoked = completion.at if invoked is None else min(invoked, completion.at)
    if state.spec.subscription_type.single_active_consumer:
        # "We cannot redeliver single messages if subscription type is not Shared": a full rewind.
        return redeliver(state, op.consumer, completion.at, window=state.spec.nack_window_ms, invoked=invoked)
    # With a backoff the delay grows with the redelivery count of the copy the application holds
    # (Java NegativeAcksTracker.add(message): backoff.next(message.getRedeliveryCount()); shown by
    # suites/broker/test_java_nack_backoff.py). The whole entry takes the nacked message's due time.
    lo, hi = state.spec.nack_window_for(message.held_count)
    entry_mates = state.entry_messages(message.id.entry)
    # A nack redelivers the whole batch entry (NegativeAcksTracker.add), less the indexes the broker
    # has as acked (below).
    targets = entry_mates if message.id.index >= 0 else [message]
    changed = {}
    for target in targets:
        if target.status is HELD and target.holder == op.consumer and target.redelivery_from is not None:
            # Nacked again before it came back: the client's tracker keeps one entry per message and
            # moves its due time (C++ NegativeAcksTracker): one redelivery, count +1 (shown by history
            # broker-acked-copy-counted-from-nothing.negative_ack-Key_Shared). Should the first due
            # time have fired already, a second copy may follow.
            changed[target.id] = target.with_(redelivery_by=max(target.redelivery_by or 0, completion.at + hi),
                                              count_hi=target.count_hi + 1,
                                              extra_deliveries=target.extra_deliveries + 1, timeout_from=None)
        elif target.status is HELD and target.holder == op.consumer:
            changed[target.id] = requested(state, target, invoked + lo, completion.at + hi)
        elif not (target.status is ACKED and target.ack_confirmed):
            # The broker counts redeliveries per entry: the whole batch comes back counted, but for
            # the indexes it has as acked; an ack it may not have yet may come back (shown by
            # test_fidelity_broker::test_a_nack_leaves_out_the_batch_indexes_acked_at_the_broker).
            # An index still in the receiver queue stays there too, uncounted (shown by history
            # broker-older-queued-copy-keeps-its-count.batches-Shared-batch-index-ack), and its
            # redelivered copy may reach another consumer after later entries (shown by
            # test_fidelity_broker::test_queued_indexes_of_a_redelivered_batch_come_back_with_it_after_later_entries).
            bump = 1 if state.spec.subscription_type.tracks_redelivery_count else 0
            changed[target.id] = target.with_(
                extra_deliveries=target.extra_deliveries + (0 if target.status is HELD else 1),
                count_hi=target.count_hi + bump, never_dispatched=False)
    return replace_messages(state, changed)


def requested(state: State, message: Message, earliest: int, latest: int) -> Message:
    """A redelivery of a held message was requested; it lands inside [earliest, latest]."""
    message = message.with_(timeout_from=None)  # asked for: no longer the ack timeout's alone
    bump = 1 if state.spec.subscription_type.tracks_redelivery_count else 0
    dead_letter = goes_to_dead_letter(state, message)
    if message.held_by_two_consumers and bump and dead_letter is False and not message.dead_letter_unsure:
        # The broker may hold it as pending on the other consumer and ignore the request: it may
        # come, it is not owed (shown by history
        # broker-nack-of-a-stale-copy-is-ignored.redelivery_count_and_dead_letter-Shared).
        return message.with_(extra_deliveries=message.extra_deliveries + 1, count_hi=message.count_hi + bump)
    if dead_letter is True:
        if latest > state.now:
            # A nack or an ack timeout: the client dead-letters when its timer fires, and a close
            # before that drops the timer (shown by history
            # broker-nack-dead-letter-dropped-by-close.redelivery_count_and_dead_letter-Shared-dlq1).
            return message.with_(redelivery_from=earliest, redelivery_by=latest, dead_letter_unsure=True)
        # A redelivery request: the broker counts the message past the limit and dispatches that
        # copy, and the client it lands on dead-letters it unseen. Until it lands nothing has: a
        # close of the last consumer first takes it back undead-lettered and clears the counts, so
        # it may come once more, counted from 0, and not before (shown by
        # suites/broker/test_redelivery_past_the_limit_at_close.py). Copies queued elsewhere are still
        # handed out, with their own counts (shown by history
        # broker-dead-lettered-copy-queued-elsewhere.redelivery_count_and_dead_letter-Shared-dlq1).
        past = {} if message.extra_deliveries else {"count_lo": state.spec.max_redeliver_count + 1,
                                                    "count_hi": state.spec.max_redeliver_count + 1}
        return message.with_(status=ACKED, holder=None, redelivery_from=None, redelivery_by=None,
                             dead_letter_unsure=True, extra_deliveries=message.extra_deliveries + 1, **past)
    if dead_letter is None or message.dead_letter_unsure:
        # Another copy the client got may carry the count that sends it to the DLQ (or already
        # did): it may come once more or never.
        # A copy that does come was requested earlier, or now: its count is anywhere up to the limit.
        limit = state.spec.max_redeliver_count
        return message.with_(status=ACKED, holder=None, redelivery_from=None, redelivery_by=None,
                             extra_deliveries=message.extra_deliveries + 1,
                             count_hi=max(message.count_hi, min(message.count_hi + bump, limit)),
                             dead_letter_unsure=True)
    # An extra copy still on its way (e.g. an older one in another consumer's receiver queue) keeps
    # the count it was dispatched with (shown by history
    # broker-older-queued-copy-keeps-its-count.batches-Shared-batch-index-ack).
    lowest = message.count_lo if message.extra_deliveries else message.count_lo + bump
    return message.with_(redelivery_from=earliest, redelivery_by=latest, count_lo=lowest,
                         count_hi=message.count_hi + bump)


def goes_to_dead_letter(state: State, message: Message, *, held_count: int | None = None) -> bool | None:
    """C++ ConsumerImpl: a message the client received with count >= max is produced to the DLQ
    and acknowledged instead of being redelivered (Shared and Key_Shared only). True when the copy
    the application holds decides it (shown by test_fidelity_broker::
    test_dead_letter_policy_lets_the_application_see_max_plus_one_deliveries), None when only a
    copy still queued may (no stored test yet: on the broker a message held with count 1, max 2,
    was redelivered with count 2, not dead-lettered). `held_count`: the count of the copy the
    application holds, if not the message's (0: none held)."""
    limit = state.spec.max_redeliver_count
    if limit is None or not state.spec.subscription_type.tracks_redelivery_count:
        return False
    if message.dead_letter_record_stale:
        return None  # the record of a copy at the limit, from before a reconnect, may be gone
    if (message.held_count if held_count is None else held_count) >= limit:
        return True
    return None if message.count_hi >= limit else False


def redeliver(state: State, consumer: str, at: int, *, window: tuple[int, int], invoked: int | None = None) -> State:
    """Redeliver everything `consumer` holds unacknowledged (redeliverUnacknowledgedMessages);
    on Exclusive/Failover the broker rewinds the cursor, so unconfirmed acks may come back too.
    The redelivery lands within `window` of the call: after `invoked` + its start (the earliest the
    call was made; `at`, its completion, by default), by `at` + its end."""
    lo, hi = window
    invoked = at if invoked is None else invoked
    rewind = state.spec.subscription_type.single_active_consumer
    tracked = state.spec.subscription_type.tracks_redelivery_count
    limit = state.spec.max_redeliver_count if tracked else None
    # Acks of this consumer's client not yet flushed (the ack grouping): the broker still has their
    # messages pending on this consumer.
    unflushed = {message_id for _, message_id in asking.pending_acks} if (asking := state.consumer(consumer)) else set()
    # Failover: the broker rewinds only for its active consumer ("Only the active consumer can call
    # resend", PersistentDispatcherSingleActiveConsumer.redeliverUnacknowledgedMessages), which it
    # picks by a hash of the names; with another consumer connected the model cannot tell, so what
    # the asking consumer holds may come again but is not owed (shown by test_fidelity_broker::
    # test_a_failover_nack_from_a_consumer_that_is_no_longer_active_is_ignored).
    maybe_ignored = state.spec.subscription_type is SubscriptionType.FAILOVER and len(state.connected()) > 1
    changed = {}
    for message in state.messages:
        if message.status is HELD and message.holder == consumer and maybe_ignored:
            changed[message.id] = message.with_(extra_deliveries=message.extra_deliveries + 1)
        elif message.status is HELD and message.holder == consumer:
            asked = requested(state, message, invoked + lo, at + hi)
            if message.redelivery_from is not None and asked.status is HELD:
                # A second request before the first landed: both may deliver it (a rewind each),
                # the first copy with the first request's count (shown by history
                # broker-two-redeliver-calls-first-count.redelivery_count_and_dead_letter-Key_Shared-dlq2).
                asked = asked.with_(extra_deliveries=asked.extra_deliveries + 1, count_lo=message.count_lo)
            changed[message.id] = asked
        elif message.status is HELD and rewind:
            # Failover: the rewind dispatches every unacknowledged entry again to the active
            # consumer, those another consumer's application holds too (shown by history
            # broker-failover-rewind-resends-what-another-consumer-holds.network_cut-Failover).
            changed[message.id] = message.with_(extra_deliveries=message.extra_deliveries + 1)
        elif message.status is HELD and message.held_by_two_consumers and tracked:
            # Another consumer holds it as the model has it, but this one's application may hold a
            # copy too, which the broker may count as pending here: it may come once more, counted
            # (shown by history
            # broker-copy-held-by-two-redelivered-by-either.redelivery_count_and_dead_letter-Shared).
            # If that copy's count reached the limit, its client may dead-letter it instead (no
            # stored test yet: on the broker, after c1's redeliver and c0's close, m3, whose
            # copies c1 and c0 held with counts 1 and 0 at max 1, never came again).
            changed[message.id] = message.with_(extra_deliveries=message.extra_deliveries + 1,
                                                count_hi=message.count_hi + 1,
                                                dead_letter_unsure=message.dead_letter_unsure
                                                or (limit is not None and message.older_copy_count >= limit))
        elif message.status is HELD and message.extra_deliveries and tracked:
            # Another consumer's application holds it, and a copy still to come (dispatched again
            # by an earlier request) may sit in this consumer's receiver queue: the broker counts
            # it as pending here, once per request (shown by history
            # broker-queued-copy-counted-by-another-consumers-redeliver.redelivery_count_and_dead_letter-Shared),
            # and dispatches it again while the client still hands out the queued copy (shown by
            # history broker-stale-queued-copy-received-after-a-redeliver.traces-Shared).
            changed[message.id] = message.with_(count_hi=message.count_hi + 1,
                                                extra_deliveries=message.extra_deliveries + 1)
        elif message.status is ACKED and message.dead_letter_unsure and message.extra_deliveries and tracked:
            # A copy of a message its client may have dead-lettered may sit in this consumer's
            # receiver queue: the broker counts it as pending here and dispatches it again, while
            # the client still hands out the queued copy (shown by the histories
            # broker-maybe-dead-lettered-queued-copy-counted.redelivery_count_and_dead_letter-Shared-dlq1
            # and broker-maybe-dead-lettered-queued-copy-comes-twice.redelivery_count_and_dead_letter-Shared-dlq1).
            changed[message.id] = message.with_(count_hi=message.count_hi + 1,
                                                extra_deliveries=message.extra_deliveries + 1)
        elif message.status is ACKED and not message.ack_confirmed and message.id in unflushed and tracked:
            # Acknowledged by this consumer's application, the ack still in its client's group: the
            # client sends the request without flushing it, and the broker redelivers what it has
            # pending on the consumer, counted; the ack lands later. The asking client drops such
            # copies (its grouping tracker's duplicates); another consumer gets them (shown by
            # test_fidelity_broker::test_a_redeliver_brings_back_what_the_ack_grouping_has_not_flushed_yet
            # and history broker-redeliver-before-the-ack-flush-brings-it-back.traces-Key_Shared).
            changed[message.id] = message.with_(count_hi=message.count_hi + 1,
                                                extra_deliveries=message.extra_deliveries + 1)
        elif message.status is ACKED and not message.ack_confirmed and message.extra_deliveries and tracked:
            # Acknowledged, the ack not yet at the broker, with a copy still to come that may sit
            # in this consumer's receiver queue: the broker counts it as pending here and
            # dispatches it again (shown by history
            # broker-acked-queued-copy-counted-by-a-redeliver.traces-Shared).
            changed[message.id] = message.with_(count_hi=message.count_hi + 1,
                                                extra_deliveries=message.extra_deliveries + 1)
        elif message.status is ACKED and not message.ack_confirmed and rewind:
            changed[message.id] = message.with_(extra_deliveries=message.extra_deliveries + 1)
        elif message.status is AVAILABLE:
            # It may sit in this consumer's receiver queue (the client does not clear it): it may be
            # dispatched again, a duplicate, and on Shared the broker counts it as redelivered.
            bump = 0 if rewind else 1
            # A queued copy whose count reached max_redeliver_count goes to the dead-letter topic
            # instead (shown by history
            # broker-queued-copy-dead-lettered.redelivery_count_and_dead_letter-Key_Shared-dlq2).
            # If it does come, its count was below the limit: the bound stays where it is.
            dead_letter = goes_to_dead_letter(state, message, held_count=0) is not False
            count_hi = message.count_hi if dead_letter else message.count_hi + bump
            changed[message.id] = message.with_(count_hi=count_hi, extra_deliveries=message.extra_deliveries + 1,
                                                never_dispatched=False, status=ACKED if dead_letter else AVAILABLE,
                                                dead_letter_unsure=dead_letter)
    state = entries_come_back(replace_messages(state, changed), {message_id.entry for message_id in changed},
                              counted=True)
    if not rewind:
        return state
    landing = (invoked + lo, at + hi + REWIND_LAG_MS)
    if state.rewind_window is not None:
        landing = (min(landing[0], state.rewind_window[0]), max(landing[1], state.rewind_window[1]))
    return unstall(state).with_(cursor=cur.rewind(state.cursor), rewind_window=landing, rewinds=state.rewinds + 1)


def ack_timeouts_open(state: State, now: int) -> State:
    """Ack-timeout windows that open between `state.now` and `now`: the client may ask for the
    message again from then on, and what it asks for is more than the message: on
    Exclusive/Failover everything unacknowledged (a rewind: what sits in the receiver queue may
    come twice, an ack not yet flushed may be lost; shown by history
    broker-exclusive-ack-timeout-rewind-repeats-the-queue.ack_timeout-Exclusive), on
    Shared/Key_Shared the message's whole batch entry (its other indexes, acked or queued, may
    come again, counted; shown by the histories
    broker-ack-timeout-brings-back-the-whole-entry.ack_timeout-Shared and
    broker-ack-timeout-counts-the-queued-indexes.ack_timeout-Shared)."""
    opening = [m for m in state.messages
               if m.status is HELD and m.redelivery_from is not None and state.now < m.redelivery_from <= now]
    if not opening:
        return state
    if state.spec.subscription_type.single_active_consumer:
        return _rewind_on_its_way(state, (min(m.redelivery_from for m in opening),
                                          max(m.redelivery_by for m in opening) + REWIND_LAG_MS))
    bump = 1 if state.spec.subscription_type.tracks_redelivery_count else 0
    # Each index whose timeout runs out may be asked for in a request of its own (the tracker asks
    # once a tick for what expired in it), and each request brings the whole entry again, counted:
    # an index comes once more for every other index of its entry that timed out (shown by history
    # broker-each-timed-out-index-brings-its-entry-again.partitioned_ack_timeout-Key_Shared-2).
    opening_in = Counter(m.id.entry for m in opening if m.id.index >= 0)
    opened = {m.id for m in opening}

    def times_with_the_entry(m: Message) -> int:
        others = opening_in.get(m.id.entry, 0) - (m.id in opened)
        # An acked index stays out only if the broker has it as acked (batch-index acks).
        if others <= 0 or (m.status is ACKED and m.ack_confirmed and state.spec.batch_index_ack):
            return 0
        return others

    # A queued index comes back with its entry, out of publish order, as after a nack (shown by
    # test_fidelity_broker::test_queued_indexes_of_a_redelivered_batch_come_back_with_it_after_later_entries).
    changed = {}
    for m in state.messages:
        times = times_with_the_entry(m) if m.id.entry in opening_in else 0
        if times:
            changed[m.id] = m.with_(extra_deliveries=m.extra_deliveries + times, count_hi=m.count_hi + bump * times,
                                    never_dispatched=False)
    return replace_messages(state, changed)


def _rewind_on_its_way(state: State, window: tuple[int, int]) -> State:
    """Exclusive/Failover: a rewind the client asked for lands inside `window`; an ack not yet
    flushed may be lost with it (what sits in the receiver queue comes again when it lands)."""
    if state.rewind_window is not None:
        if state.rewind_window[0] <= window[0] and window[1] <= state.rewind_window[1]:
            return state  # a rewind already on its way covers it
        window = (min(window[0], state.rewind_window[0]), max(window[1], state.rewind_window[1]))
    unflushed = {m.id: m.with_(extra_deliveries=m.extra_deliveries + 1) for m in state.messages
                 if m.status is ACKED and not m.ack_confirmed}
    return replace_messages(state, unflushed).with_(rewind_window=window, rewinds=state.rewinds + 1)


def timed_out_elsewhere(state: State, consumer: str, window: tuple[int, int]) -> State:
    """A partitioned topic on Exclusive or Failover: the multi-topics consumer keeps one
    unacked-message tracker for every partition, and a timeout of another partition's message
    makes it ask every partition for everything unacknowledged (MultiTopicsConsumerImpl.
    redeliverUnacknowledgedMessages, Java and C++; shown by suites/broker/test_partitioned_topic.py::
    test_on_exclusive_one_partition_s_ack_timeout_rewinds_every_partition). So this partition
    rewinds within `window`, which the other timeout opened: what `consumer` holds may come back
    from its start."""
    earliest = window[0]
    held = {m.id: m.with_(redelivery_from=min(m.redelivery_from, earliest)) for m in state.messages
            if m.status is HELD and m.holder == consumer and m.redelivery_from is not None
            and m.redelivery_from > earliest}
    return _rewind_on_its_way(replace_messages(state, held), (earliest, window[1] + REWIND_LAG_MS))


def timeouts_after_ack(state: State, consumer: str, acked: list[Message]) -> State:
    """An acknowledge takes its messages out of the consumer's UnAckedMessageTracker, timers and
    all. On Exclusive and Failover a held message could come back with another's timeout (one
    timeout rewinds everything): once that other one is acknowledged, before its timeout ran out
    and with no rewind on its way, what is still held waits for the earliest timeout still
    tracked, its own at the latest (shown by
    suites/broker/test_ack_timeout_and_cumulative_ack.py::test_an_ack_ends_the_timeout_that_would_have_brought_back_a_later_message).
    Left as it was where a batch is involved (the Java client tracks a batch's entry until every
    index is acknowledged, not each index)."""
    if (state.spec.ack_timeout_ms is None or not state.spec.subscription_type.single_active_consumer
            or state.rewind_window is not None or state.rewinds_at_reconnect
            or not acked or any(m.id.index >= 0 for m in acked)):
        return state
    tracked = [m for m in state.messages if m.status is HELD and m.holder == consumer and m.timeout_from is not None
               and m.redelivery_from is not None]
    if not tracked or any(m.id.index >= 0 for m in tracked):
        return state
    earliest = min(m.timeout_from for m in tracked)
    return replace_messages(state, {m.id: m.with_(redelivery_from=earliest) for m in tracked
                                    if state.now < m.redelivery_from < earliest})


def entries_come_back(state: State, entries: set[int], *, counted: bool = False,
                      owed: set[int] | None = None) -> State:
    """A redelivered batch entry comes back whole without batch-index acks (the broker deletes the
    entry only when every index is acked): its acked messages may be delivered again, counted with
    the entry when the redelivery is. With batch-index acks the broker filters the indexes it has;
    unconfirmed ones may still come back. It filters those a seek's ack set acknowledged too
    (`acked_by_seek`), whatever the client's setting."""
    bump = 1 if counted and state.spec.subscription_type.tracks_redelivery_count else 0
    pending = {m for c in state.connected() for _, m in c.pending_acks}
    partly_acked = {m.id.entry for m in state.messages if m.id.index >= 0 and m.status is not ACKED}
    # Acked on different copies of the batch: whether the client ever acked the entry is open
    # (model/transitions/receive.py), so its acked messages may come with it, and are not owed.
    across_copies = {m.id.entry for m in state.messages if m.ack_on_older_copy and m.status is ACKED
                     and not m.ack_confirmed}
    changed = {}
    for m in state.messages:
        if (m.id.entry in entries & across_copies and m.id.index >= 0 and m.status is ACKED and not m.ack_confirmed
                and not m.acked_by_seek):
            changed[m.id] = m.with_(extra_deliveries=m.extra_deliveries + 1, count_hi=m.count_hi + bump)
            continue
        if not (m.id.entry in entries and m.id.index >= 0 and m.status is ACKED and not m.acked_by_seek
                and not state.cursor.is_acknowledged(m.id.entry)
                and not (state.spec.batch_index_ack and m.ack_confirmed)):
            continue
        if (not state.spec.batch_index_ack and m.id not in pending and m.id.entry in partly_acked
                and (owed is None or m.id.entry in owed)):
            # The client kept that partial batch ack with the copy it acked; the entry comes back
            # as new copies that must all be acked again (shown by history
            # broker-partial-batch-ack-lost-with-its-copy.individual_ack-Exclusive).
            changed[m.id] = m.with_(status=AVAILABLE, never_dispatched=False, ack_confirmed=False,
                                    count_hi=m.count_hi + bump, dead_letter_unsure=False, copy_held_by=None)
        elif not state.spec.batch_index_ack and m.id.entry in partly_acked:
            # Its ack is still pending, held with the copy it was made on: the new copies' acks do
            # not complete that copy's batch, so whether the entry is ever acked is open (shown by
            # history broker-partial-batch-ack-pending-when-its-entry-came-back.traces-Key_Shared).
            changed[m.id] = m.with_(extra_deliveries=max(m.extra_deliveries + 1, 1), count_hi=m.count_hi + bump,
                                    ack_may_be_dropped=True)
        else:
            changed[m.id] = m.with_(extra_deliveries=m.extra_deliveries + 1, count_hi=m.count_hi + bump)
    return replace_messages(state, changed)


def unstall(state: State) -> State:
    """The subscription is rewound: what a Failover switch left stalled is owed again."""
    return replace_messages(state, {m.id: m.with_(stalled=False) for m in state.messages if m.stalled})
