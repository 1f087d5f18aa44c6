"""A consumer reconnecting after the broker closed its connection, and the acks its client drops.

An unload, a restart or a crash of the broker closes every consumer's connection; each client
reconnects on its own (HandlerBase's backoff, 100 ms at first) and the model cannot tell when it is
back. Meanwhile the client's ack grouping still flushes every ack grouping time: the C++ client's
AckGroupingTrackerEnabled::flush hands what is pending to AckGroupingTracker::doImmediateAck, which
sends nothing without a connection ("Connection is not ready, ACK failed"), and clears it anyway.
The application's `acknowledge` had returned: the ack is gone, and the broker redelivers the message
(an ack that never reached the broker does not keep its message away; at-least-once). Shown by
suites/broker/test_ack_while_reconnecting.py (KD-31).

So the acks a consumer had pending at the disconnection, and those it makes while it may be
reconnecting, may be dropped: their messages stay acknowledged for the application but may come
again, as often as the broker redelivers what is unacknowledged, and are not owed, until a cursor
read settles each (model/transitions/acks.py, `settle`: shown, the ack arrived; missing with no
ack pending, it was dropped and the message is owed). A flush (a close, a seek) cannot prove such an
ack arrived. A consumer is known to be back once it receives a message published after the
disconnection (that message came over its new connection); a seek disconnects it again as
model/transitions/reopen.py says.

One state stands for every way the drops may have fallen (which prefix of each consumer's acks
reached the broker first): the exact set of states grows as the product over consumers of their
pending acks at each unload, hundreds of states in a program of 50 ops, for no verdict a cursor
read does not give.
"""

from __future__ import annotations

from model.spec import SubscriptionType
from model.state import ACKED, Consumer, State, replace_consumer, replace_messages
from model.transitions.redelivery import REWIND_LAG_MS


def disconnected(state: State) -> State:
    """Every connected consumer loses its connection: it is reconnecting, and what its pending acks
    acknowledge may be dropped."""
    state = state.with_(consumers=tuple(c.with_(reconnecting=True) if c.connected else c for c in state.consumers))
    return _may_be_dropped(state, [ack for c in state.connected() for ack in c.pending_acks])


def acked_while_reconnecting(state: State, consumer_name: str) -> State:
    """After an ack on a consumer that may still be reconnecting: a flush without a connection may
    come after it and drop everything pending."""
    consumer = state.consumer(consumer_name)
    if consumer is None or not consumer.reconnecting:
        return state
    return _may_be_dropped(state, list(consumer.pending_acks))


def back(state: State, consumer: Consumer) -> State:
    """The consumer is known to be connected again (it got a message over its new connection).
    Once none may still be reconnecting, the rewinds their return may bring (model/transitions/
    reopen.py) are on their way, to land within REWIND_LAG_MS, after a Failover switch's pause."""
    if not consumer.reconnecting:
        return state
    state = replace_consumer(state, consumer.with_(reconnecting=False, back_serial=state.serial))
    if not state.rewinds_at_reconnect or any(c.reconnecting for c in state.connected()):
        return state
    pause = state.spec.failover_delay_ms if state.spec.subscription_type is SubscriptionType.FAILOVER else 0
    landing = (state.now, state.now + pause + REWIND_LAG_MS)
    if state.rewind_window is not None:
        landing = (min(landing[0], state.rewind_window[0]), max(landing[1], state.rewind_window[1]))
    return state.with_(rewind_window=landing, rewinds=state.rewinds + state.rewinds_at_reconnect, rewinds_at_reconnect=0)


def _may_be_dropped(state: State, acks: list) -> State:
    if not acks:
        return state
    return replace_messages(state, {
        m.id: m.with_(ack_may_be_dropped=True, extra_deliveries=max(m.extra_deliveries, 1))
        for m in state.messages
        if m.status is ACKED and not m.ack_confirmed and not m.ack_may_be_dropped and covers(acks, m.id)})


def covers(acks, message_id) -> bool:
    """Whether one of the acks acknowledges the message (a cumulative one, all before it)."""
    return any(acked == message_id or (kind == "cumulative" and acked >= message_id) for kind, acked in acks)
