"""A consumer reconnecting after the broker closed its connection, and the acks its client drops.

An unload, a restart or a crash of the broker closes every consumer's connection; each client
reconnects on its own (HandlerBase's backoff, 100 ms at first) and the model cannot tell when it is
back. Meanwhile the client's ack grouping still flushes every ack grouping time: the C++ client's
AckGroupingTrackerEnabled::flush hands what is pending to AckGroupingTracker::doImmediateAck, which
sends nothing without a connection ("Connection is not ready, ACK failed"), and clears it anyway.
The application's `acknowledge` had returned: the ack is gone, and the broker redelivers the message
(an ack that never reached the broker does not keep its message away; at-least-once). Shown by
suites/broker/test_ack_while_reconnecting.py (KD-31).

So, per consumer, what the model keeps as pending acks splits where the first flush without a
connection came:
- at the disconnection, some prefix of the pending acks reached the broker before it (they stay
  pending: a cursor read or a flush settles them) and the rest were dropped, or all stay pending;
- while it reconnects, each new ack may be followed by a flush without a connection, which drops
  everything pending up to it;
- it is known to be back once it receives a message published after the disconnection (that
  message came over the new connection); a seek disconnects it again as model/transitions/reopen.py
  says.

A dropped ack leaves its message unacknowledged on the broker: owed again (AVAILABLE), whoever gets
it next. The branches are states of the non-deterministic layer (model/nondet.py): one per prefix,
so a consumer with n pending acks makes n + 1.
"""

from __future__ import annotations

from itertools import product

from model.state import ACKED, AVAILABLE, Consumer, State, replace_consumer, replace_messages
from model.violations import Either, Result


def disconnected(state: State) -> Result:
    """Every connected consumer loses its connection: it is reconnecting, and each one's pending
    acks may have been cut at any point (the first branch keeps them all pending)."""
    state = state.with_(consumers=tuple(c.with_(reconnecting=True) if c.connected else c for c in state.consumers))
    cut = [c for c in state.connected() if c.pending_acks]
    if not cut:
        return state
    branches = [state]
    for kept in product(*[range(len(c.pending_acks), -1, -1) for c in cut]):
        if all(k == len(c.pending_acks) for k, c in zip(kept, cut)):
            continue  # the first branch
        branch = state
        for consumer, keep in zip(cut, kept):
            branch = drop_pending(branch, consumer.name, keep=keep)
        branches.append(branch)
    return Either(tuple(branches))


def acked_while_reconnecting(state: State, consumer_name: str) -> Result:
    """After an ack on a consumer that may still be reconnecting: kept pending, or a flush without a
    connection came after it and dropped everything pending."""
    consumer = state.consumer(consumer_name)
    if consumer is None or not consumer.reconnecting or not consumer.pending_acks:
        return state
    return Either((state, drop_pending(state, consumer_name, keep=0)))


def back(state: State, consumer: Consumer) -> State:
    """The consumer is known to be connected again (it got a message over its new connection)."""
    return replace_consumer(state, consumer.with_(reconnecting=False)) if consumer.reconnecting else state


def drop_pending(state: State, consumer_name: str, *, keep: int) -> State:
    """The consumer's pending acks after the first `keep` never reach the broker: what only they
    acknowledged is unacknowledged there, owed again."""
    consumer = state.consumer(consumer_name)
    kept, dropped = consumer.pending_acks[:keep], consumer.pending_acks[keep:]
    if not dropped:
        return state
    still = [ack for c in state.connected() for ack in (kept if c.name == consumer_name else c.pending_acks)]
    owed = {m.id: m.with_(status=AVAILABLE, holder=None, never_dispatched=False, ack_confirmed=False,
                          dead_letter_unsure=False)
            for m in state.messages
            if m.status is ACKED and not m.ack_confirmed and covers(dropped, m.id) and not covers(still, m.id)}
    return replace_messages(replace_consumer(state, consumer.with_(pending_acks=kept)), owed)


def covers(acks, message_id) -> bool:
    """Whether one of the acks acknowledges the message (a cumulative one, all before it)."""
    return any(acked == message_id or (kind == "cumulative" and acked >= message_id) for kind, acked in acks)
