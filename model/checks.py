"""The checks: one named function per guarantee (model/guarantees.py), each returning the
`Violation` that names it, or None when the observation is allowed.

The transitions (model/transitions/) call the delivery checks on every receive, the
subscribe, ack and cursor checks on their ops; the non-deterministic layer (model/nondet.py) calls
the drain checks on every possible state after a drain. `RULES` maps every guarantee to its
checks: the one place to look for the rule a guarantee stands on.

Each check reads the state the model keeps (model/state.py) and what the client observed; none
changes the state. The cursor check decides the bounds; whether a cursor between them is a
per-consumer prefix of the pending acks is the solver's question, asked by model/nondet.py.
Notes name the test that shows a rule as model/transitions/redelivery.py describes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from model import cursor as cur
from model import ops as o
from model.guarantees import Guarantee
from model.spec import SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, Consumer, Message, State
from model.violations import Violation


# -- a delivery (receive) ------------------------------------------------------------------------
def check_no_phantom(state: State, consumer: str, delivered: o.MessageId) -> Violation | None:
    """Only published messages are delivered."""
    if state.message(delivered) is not None:
        return None
    return Violation(guarantee=Guarantee.NO_PHANTOM, detail=f"{consumer} received {delivered}, never published")


def check_dead_letter(state: State, message: Message, count: int) -> Violation | None:
    """With max_redeliver_count M, no delivery carries a count above M (Shared/Key_Shared)."""
    limit = state.spec.max_redeliver_count
    if limit is None or count <= limit or not state.spec.subscription_type.tracks_redelivery_count:
        return None
    return Violation(guarantee=Guarantee.DEAD_LETTER,
                     detail=f"{message.id} delivered with count {count} > max_redeliver_count {limit}: "
                            "it should have gone to the dead-letter topic")


def check_no_duplicate_without_cause(state: State, message: Message, consumer: str) -> Violation | None:
    """A message a consumer holds unacknowledged comes again only with an extra delivery or once its
    redelivery window opened."""
    if message.status is not HELD:
        return None
    if message.extra_deliveries or (message.redelivery_from is not None and state.now >= message.redelivery_from):
        return None
    return Violation(guarantee=Guarantee.NO_DUPLICATE_WITHOUT_CAUSE,
                     detail=f"{consumer} received {message.id}, which {message.holder} holds unacknowledged "
                            "and nothing asked to redeliver")


def check_no_redelivery_after_ack(state: State, message: Message, consumer: str) -> Violation | None:
    """An acknowledged message comes again only with an extra delivery (its ack may not have
    reached the broker when a redelivery was asked, a copy may sit in a receiver queue, ...)."""
    if message.status is not ACKED or message.extra_deliveries:
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


def order_key(message_id: o.MessageId) -> int:
    """A message's place in publish order, as one number (entry, then batch index)."""
    return message_id.entry * 1_000_000 + max(message_id.index, 0)


def check_order(state: State, message: Message, consumer: Consumer) -> Violation | None:
    """First deliveries come in publish order per consumer; on Key_Shared, per key. A delayed
    copy comes when its delay ends, whatever was published after it."""
    if message.delivered or not message.never_dispatched or message.deliver_by:
        return None
    if state.spec.subscription_type is SubscriptionType.KEY_SHARED:
        # Key_Shared promises order per key: a consumer joining or leaving moves hash ranges, so
        # messages of different keys may reach a consumer out of publish order.
        later = next((m for m in state.messages if m.key == message.key and m.delivered and m.id > message.id), None)
        if later is None:
            return None
        return Violation(guarantee=Guarantee.ORDER, detail=f"{consumer.name} received {message.id} (key "
                         f"{message.key!r}) for the first time after {later.id} of the same key")
    if order_key(message.id) > consumer.last_first_delivery:
        return None
    return Violation(guarantee=Guarantee.ORDER,
                     detail=f"{consumer.name} received {message.id} for the first time after a later message")


def check_key_shared_stickiness(state: State, message: Message, consumer: str) -> Violation | None:
    """Key_Shared: a key stays with its connected owner; it moves only to a consumer that joined
    after it was bound (or its previous owner), and then only once the owner acked what it holds (PIP-379)."""
    if state.spec.subscription_type is not SubscriptionType.KEY_SHARED:
        return None
    for key, owner, may_also_receive in state.key_owners:
        if key != message.key or consumer == owner:
            continue
        if consumer not in may_also_receive and not stale_key_copy(state, message, state.consumer(consumer)):
            return Violation(guarantee=Guarantee.KEY_SHARED_STICKINESS,
                             detail=f"key {key!r} is bound to connected {owner}, yet {consumer} received {message.id}")
        # A held message with an extra copy to come may be a stale queued copy the broker no longer
        # counts as pending on the owner (shown by history
        # broker-stale-copies-do-not-hold-a-key.redelivery_count_and_dead_letter-Key_Shared-dlq2).
        held = [m.id for m in state.messages if m.key == key and m.status is HELD and m.holder == owner
                and m.redelivery_from is None and m.extra_deliveries == 0]
        if held and message.never_dispatched and state.consumer(owner) is not None and owner not in may_also_receive:
            # PIP-379: a key moves to a joined consumer only once its old owner acked what it holds.
            return Violation(guarantee=Guarantee.KEY_SHARED_STICKINESS,
                             detail=f"key {key!r} moved from {owner} to {consumer} while {owner} still holds "
                                    f"{', '.join(map(str, held))} unacknowledged")
    return None


def stale_key_copy(state: State, message: Message, consumer: Consumer | None) -> bool:
    """Key_Shared: an extra copy of a redelivered message may be an old one still in the receiver
    queue of a consumer that joined before the key's owner, so held the key's hash when it was
    dispatched (shown by history
    broker-stale-queued-copy-of-a-moved-key.redelivery_count_and_dead_letter-Key_Shared-dlq2)."""
    if message.extra_deliveries == 0 or message.never_dispatched or consumer is None:
        return False
    binding = next((b for b in state.key_owners if b[0] == message.key), None)
    owner = state.consumer(binding[1]) if binding is not None else None
    return owner is not None and owner.name != consumer.name and consumer.serial < owner.serial


def check_redelivery_count(state: State, message: Message, count: int) -> Violation | None:
    """The count is within the interval the model keeps (Shared/Key_Shared); always 0 on
    Exclusive/Failover, which have no redelivery tracker."""
    spec = state.spec
    if not spec.subscription_type.tracks_redelivery_count:
        if count != 0:
            return Violation(guarantee=Guarantee.REDELIVERY_COUNT,
                             detail=f"{message.id} came with redelivery count {count} on {spec.subscription_type}, "
                                    "which has no redelivery tracker (always 0)")
        return None
    if message.ack_may_be_dropped and message.status is ACKED:
        # Its ack may never have reached the broker, which then counted the message at each
        # redelivery of what was unacknowledged: the model lost its count (model/transitions/
        # reconnect.py; shown by history broker-dropped-ack-counted-by-a-redeliver.traces-Key_Shared).
        return None
    if not min(message.count_lo, message.older_copy_count) <= count <= message.count_hi:
        return Violation(guarantee=Guarantee.REDELIVERY_COUNT,
                         detail=f"{message.id} came with redelivery count {count}; "
                                f"expected {message.count_lo}..{message.count_hi}")
    return None


def check_reconsume_delay(state: State, message: Message) -> Violation | None:
    """A reconsume_later copy comes no earlier than its delay allows (the broker's delayed delivery
    tracker dispatches what is due within one tick)."""
    if state.now >= message.deliver_from:
        return None
    return Violation(guarantee=Guarantee.RECONSUME_LATER,
                     detail=f"{message.id}, a reconsume_later copy, came at {state.now} ms, before its delay let it "
                            f"(not before {message.deliver_from} ms)")


def check_reconsume_later(state: State, op: o.ReconsumeLater, completion: o.Completion) -> Violation | None:
    """A reconsume_later of a received message on a connected consumer completes (the client
    publishes the copy, then acknowledges the message)."""
    if completion.outcome is o.Outcome.OK:
        return None
    return Violation(guarantee=Guarantee.RECONSUME_LATER,
                     detail=f"reconsume_later of {op.message} on {op.consumer} did not complete: {completion.error}")


def delivery_problem(state: State, message: Message, consumer: Consumer, count: int) -> Violation | None:
    """Every check of one delivery of a published message, in the order the model asks them."""
    return (check_reconsume_delay(state, message)
            or check_dead_letter(state, message, count)
            or check_no_duplicate_without_cause(state, message, consumer.name)
            or check_no_redelivery_after_ack(state, message, consumer.name)
            or check_order(state, message, consumer)
            or check_key_shared_stickiness(state, message, consumer.name)
            or check_redelivery_count(state, message, count))


# -- subscribe and acknowledge -------------------------------------------------------------------
def check_exclusive(state: State, subscriber: str) -> Violation | None:
    """Exclusive: a subscribe that succeeds while a consumer holds the subscription breaks it,
    unless the topic reopened since every connected consumer subscribed (the holder is
    reconnecting and a newcomer may take the subscription first)."""
    connected = state.connected()
    if state.spec.subscription_type is not SubscriptionType.EXCLUSIVE or not connected:
        return None
    if state.reopened_serial > max(c.serial for c in connected):
        return None
    return Violation(guarantee=Guarantee.EXCLUSIVE, detail=f"{subscriber} subscribed while "
                     f"{state.active_consumer()} holds the Exclusive subscription (expected ConsumerBusy)")


def check_subscribe(state: State, subscriber: str, completion: o.Completion) -> Violation | None:
    """A subscribe the subscription type allows succeeds."""
    if completion.outcome is o.Outcome.OK:
        return None
    return Violation(guarantee=Guarantee.SUBSCRIBE, detail=f"subscribe of {subscriber} failed: {completion.error}")


def check_ack(state: State, op: o.Acknowledge | o.AcknowledgeCumulative, completion: o.Completion) -> Violation | None:
    """Acknowledging a received message on a connected consumer does not fail."""
    if completion.outcome is not o.Outcome.FAIL:
        return None
    if isinstance(op, o.AcknowledgeCumulative):
        return Violation(guarantee=Guarantee.ACK, detail=f"cumulative ack of {op.message} failed: {completion.error}")
    return Violation(guarantee=Guarantee.ACK, detail=f"ack of {op.message} on {op.consumer} failed: {completion.error}")


def check_cumulative_refused_on_shared(state: State, op: o.AcknowledgeCumulative,
                                       completion: o.Completion) -> Violation | None:
    """Shared and Key_Shared refuse acknowledge_cumulative."""
    if state.spec.subscription_type.allows_cumulative_ack or completion.outcome is not o.Outcome.OK:
        return None
    return Violation(guarantee=Guarantee.CUMULATIVE_REFUSED_ON_SHARED,
                     detail=f"acknowledge_cumulative({op.message}) was accepted on {state.spec.subscription_type}")


# -- the broker's cursor -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class CursorBounds:
    """What a cursor read may show: at least the entries whose ack is known to have reached the
    broker (`least`), at most those every pending ack would add (`most`) and those whose ack is in
    doubt after a crash (`doubtful`: the cursor may or may not still show them)."""

    least: frozenset[int]
    most: frozenset[int]
    doubtful: frozenset[int]


def cursor_bounds(state: State, flushed: State) -> CursorBounds:
    """The bounds of a cursor read in `state`; `flushed` is the state with each connected
    consumer's pending acks applied."""
    least = frozenset(m.id.entry for m in state.messages if m.ack_confirmed and state.cursor.is_acknowledged(m.id.entry))
    # An entry whose ack may still come or not: one acked with an extra delivery allowed (a crash, a
    # dropped ack), one its client dead-letters (model/state.py, `dead_lettered`), and a batch whose
    # indexes were acked on different copies of it (`ack_on_older_copy`).
    doubtful = frozenset(m.id.entry for m in state.messages if m.status is ACKED and (
        m.extra_deliveries or (not m.ack_confirmed and (m.dead_lettered or m.dead_letter_unsure
                                                        or m.ack_on_older_copy))))
    return CursorBounds(least=least, most=flushed.cursor.acknowledged(len(state.entries)), doubtful=doubtful)


def check_cursor(state: State, observed: cur.Cursor, bounds: CursorBounds) -> Violation | None:
    """A cursor read shows at least the acks known to have reached the broker and at most what
    every pending ack would add, or an entry whose ack is in doubt after a crash."""
    observed_acked = observed.acknowledged(len(state.entries))
    if bounds.least <= observed_acked <= bounds.most | bounds.doubtful:
        return None
    return Violation(guarantee=Guarantee.CURSOR,
                     detail=f"broker cursor {cur.describe(observed)} acknowledges {sorted(observed_acked)}; "
                            f"allowed: at least {sorted(bounds.least)}, at most {sorted(bounds.most)}")


# -- after a drain -------------------------------------------------------------------------------
def check_no_loss(state: State) -> Violation | None:
    """After every connected consumer was drained, nothing owed may still be waiting: a message
    is owed when it is AVAILABLE and a consumer is connected while the broker dispatches."""
    dispatching = state.connected() and state.now >= state.paused_until
    owed = owed_messages(state) if dispatching else []
    if not owed:
        return None
    return Violation(guarantee=Guarantee.NO_LOSS, detail=f"drained every consumer, yet {', '.join(map(str, owed))} never came")


def check_receiver_queue(state: State, drained: frozenset[str]) -> Violation | None:
    """Shared, after the `drained` consumers were drained while the other connected ones took
    nothing: what is still owed must fit in the idle consumers' receiver queues, counted in
    entries (see model.nondet.check_receiver_queues for the flow permits this follows)."""
    idle = [c for c in state.connected() if c.name not in drained]
    if state.spec.subscription_type is not SubscriptionType.SHARED or not idle or state.now < state.paused_until:
        return None
    owed = owed_messages(state)
    entries, room = len({m.entry for m in owed}), len(idle) * queue_room(state)
    if entries <= room:
        return None
    names = ", ".join(sorted(drained))
    return Violation(guarantee=Guarantee.RECEIVER_QUEUE,
                     detail=f"drained {names}, yet {len(owed)} messages ({', '.join(map(str, owed))}) in {entries} "
                            f"entries did not come: more entries than the idle consumers' receiver queues hold ({room})")


def queue_room(state: State) -> int:
    """How many entries one idle consumer's receiver queue may hold (see check_receiver_queue), and
    of one topic of several, its multi-topics consumer's own queue (Spec.parent_queue_size)."""
    return max(state.spec.receiver_queue_size, 1) + state.spec.parent_queue_size


def owed_messages(state: State) -> list[o.MessageId]:
    """The messages the broker must hand out while dispatching: back or never delivered, unless
    stalled, held back for a draining key, or skipped by the consumer that sought past them."""
    return [m.id for m in state.messages if m.status is AVAILABLE and not m.stalled and m.deliver_by <= state.now
            and not _key_may_be_draining(state, m.key) and not _skipped(state, m.skipped_by)]


def _skipped(state: State, seeker: str | None) -> bool:
    """The consumer that sought to the message skips it while it is connected (model/transitions/reopen.py)."""
    return seeker is not None and state.consumer(seeker) is not None


def _key_may_be_draining(state: State, key: str | None) -> bool:
    """Key_Shared (PIP-379, 4.0+): when a key's hash moves to a consumer that joined, the broker
    holds back the key's messages until the old consumer has acked the ones it holds: they are
    not owed while that may be the case (no stored test yet: on the broker c0 alone got m0 (key
    k) in its queue, c1 joined, c0 received m0 and held it; m1 (key k) came to nobody)."""
    if state.spec.subscription_type is not SubscriptionType.KEY_SHARED:
        return False
    # Which consumer the broker gave the key's hash is unknown until a delivery shows it, and the
    # range may have moved when any consumer joined: with more than one consumer connected, a key
    # with held messages may be draining. So may one whose ack may have been dropped while a
    # consumer holds a copy: the broker may have that copy pending on it, and then drains the key
    # until that consumer acks it (shown by history
    # broker-copy-of-a-dropped-ack-holds-its-key.redelivery_count_and_dead_letter-Key_Shared-dlq2).
    return len(state.connected()) > 1 and any(
        m.key == key and (m.status is HELD or (m.status is ACKED and m.ack_may_be_dropped
                                               and state.consumer(m.copy_held_by or "") is not None))
        for m in state.messages)


RULES: Mapping[Guarantee, tuple[Callable[..., Violation | None], ...]] = MappingProxyType({
    Guarantee.NO_REDELIVERY_AFTER_ACK: (check_no_redelivery_after_ack,),
    Guarantee.NO_DUPLICATE_WITHOUT_CAUSE: (check_no_duplicate_without_cause,),
    Guarantee.NO_LOSS: (check_no_loss,),
    Guarantee.NO_PHANTOM: (check_no_phantom,),
    Guarantee.ORDER: (check_order,),
    Guarantee.CUMULATIVE_REFUSED_ON_SHARED: (check_cumulative_refused_on_shared,),
    Guarantee.EXCLUSIVE: (check_exclusive,),
    Guarantee.KEY_SHARED_STICKINESS: (check_key_shared_stickiness,),
    Guarantee.REDELIVERY_COUNT: (check_redelivery_count,),
    Guarantee.DEAD_LETTER: (check_dead_letter,),
    Guarantee.CURSOR: (check_cursor,),
    Guarantee.ACK: (check_ack,),
    Guarantee.SUBSCRIBE: (check_subscribe,),
    Guarantee.RECEIVER_QUEUE: (check_receiver_queue,),
    Guarantee.RECONSUME_LATER: (check_reconsume_later, check_reconsume_delay),
})
