"""The op vocabulary and its preconditions: which concrete ops a program may take next.

Both the stateful Hypothesis machines (suites/) and the trace generator (traces/) build programs
from this one place, so a new op or a new precondition reaches every generator at once. Every
candidate is an op the model can judge and every target can perform: acks and nacks name messages
a consumer received, receives and closes name connected consumers.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Callable
from functools import cache
from itertools import accumulate

from model import ops as o
from model.spec import SubscriptionType
from model.state import HELD, State

CONSUMER_NAMES = ("c0", "c1", "c2")
KEYS = ("k0", "k1", "k2", "k3")
MAX_ENTRIES = 24


def _send(state: State) -> tuple[o.Op, ...]:
    if len(state.entries) >= MAX_ENTRIES:
        return ()
    return _sends(state.spec.subscription_type is SubscriptionType.KEY_SHARED, state.spec.receiver_queue_size == 0)


@cache
def _sends(keyed: bool, zero_queue: bool) -> tuple[o.Op, ...]:
    singles = tuple(o.Send(keys=(k,)) for k in KEYS) if keyed else (o.Send(),)
    if zero_queue:
        return singles  # a zero-queue consumer cannot take batches
    batches = tuple(o.Send(keys=(k, k, k), batched=True) for k in KEYS[:2]) if keyed else (
        o.Send(keys=(None, None, None), batched=True),)
    return singles + batches


def _subscribe(state: State) -> tuple[o.Op, ...]:
    connected = {c.name for c in state.connected()}
    free = [name for name in CONSUMER_NAMES if name not in connected]
    return (_op(o.Subscribe, consumer=free[0]),) if free else ()


@cache
def _op(kind: type, **fields: object) -> o.Op:
    """`kind(**fields)`, interned: ops are values, and the random generator asks for every
    candidate of a kind at each step and keeps one."""
    return kind(**fields)


def _per_consumer(kind: type) -> Callable[[State], tuple[o.Op, ...]]:
    return lambda state: tuple([_op(kind, consumer=c.name) for c in state.consumers if c.connected])


def _held(kind: type) -> Callable[[State], tuple[o.Op, ...]]:
    def held(state: State) -> tuple[o.Op, ...]:
        connected = [c.name for c in state.consumers if c.connected]
        return tuple([_op(kind, consumer=m.holder, message=m.id) for m in state.messages
                      if m.status is HELD and m.holder in connected])

    return held


# Longer than the broker's delayed-delivery tick (1 s), which may dispatch a copy that much early:
# a copy reconsumed with it cannot come within the first 2 s.
RETRY_DELAY_MS = 3000


def _reconsume_later(state: State) -> tuple[o.Op, ...]:
    """A held message reconsumed at once or after RETRY_DELAY_MS. Only for a consumer with a retry
    letter topic (a check's kinds say so: suites/conformance/catalog.py); a program's view is the
    topic's state, whose spec is the topic's alone (model/partitions.py)."""
    connected = [c.name for c in state.consumers if c.connected]
    return tuple([_op(o.ReconsumeLater, consumer=m.holder, message=m.id, delay_ms=delay) for m in state.messages
                  if m.status is HELD and m.holder in connected for delay in (0, RETRY_DELAY_MS)])


def _seek(state: State) -> tuple[o.Op, ...]:
    connected = state.connected()
    if len(connected) != 1 or any(c.pending_acks for c in state.consumers if not c.connected):
        return ()
    consumer = connected[0].name
    # Batch indexes too, with batch-index acks on or off: a seek forgets the acked indexes of the
    # target's entry either way (suites/model/test_fidelity_broker.py).
    return tuple(_op(o.Seek, consumer=consumer, message=m.id) for m in state.messages
                 if m.holder == consumer and m.status is HELD)


def _tick(state: State) -> tuple[o.Op, ...]:
    """Waits that close a window, offered only while there is one to close: the nack window (a
    redelivery or a rewind requested, or a Failover pause running), the ack grouping (acks not yet
    flushed), the ack-timeout window (a message held unacknowledged). Otherwise time changes
    nothing the model knows of, and on a real broker a tick would only cost its sleep."""
    spec = state.spec
    ticks = []
    if (state.rewind_window is not None or state.paused_until > state.now
            or any(m.redelivery_by is not None for m in state.messages)):
        ticks.append(_op(o.Tick, ms=spec.nack_window_ms[1] + 50))
    if any(c.pending_acks for c in state.consumers):
        ticks.append(_op(o.Tick, ms=spec.ack_grouping_ms + 50))
    if spec.ack_timeout_window_ms is not None and any(m.status is HELD for m in state.messages):
        ticks.append(_op(o.Tick, ms=spec.ack_timeout_window_ms[1] + 50))
    if any(m.deliver_by > state.now for m in state.messages):
        ticks.append(_op(o.Tick, ms=RETRY_DELAY_MS + spec.delayed_delivery_tick_ms + 50))  # a delayed copy due
    return tuple(ticks)


def boundary_ticks(state: State) -> tuple[o.Op, ...]:
    """Ticks that land just before, on and just after each bound of a window open now, and inside
    it: a nacked or timed-out message's redelivery window (the NegativeAcksTracker's delay and
    tick, the UnAckedMessageTracker's timeout and tick), a rewind on its way, a Failover pause, a
    delayed reconsume_later copy's window. The
    model's rules compare the clock with these bounds (`>=` opens a window, `<=` closes it), so a
    bound shifted by one shows only to a tick that lands beside it. Empty when no window is open."""
    now, bounds = state.now, set()
    for m in state.messages:
        if m.status is HELD and m.redelivery_from is not None:
            bounds.update((m.redelivery_from, m.redelivery_by, (m.redelivery_from + m.redelivery_by) // 2))
    if state.rewind_window is not None:
        bounds.update(state.rewind_window)
    if state.paused_until > now:
        bounds.add(state.paused_until)
    bounds.update(b for m in state.messages if m.deliver_by > now for b in (m.deliver_from, m.deliver_by))
    landings = sorted({b + d for b in bounds for d in (-1, 0, 1)})
    return tuple(_op(o.Tick, ms=t - now) for t in landings if t > now)


def _lifecycle(make: Callable[[], o.Op]) -> Callable[[State], tuple[o.Op, ...]]:
    only = (make(),)
    return lambda state: only


_CRASH_CLIENT = (o.CrashClient(),)


def _crash_client(state: State) -> tuple[o.Op, ...]:
    """A client crash while it has consumers: with none there is nothing for it to lose but its
    producer, which holds nothing unsent between ops."""
    return _CRASH_CLIENT if any(c.connected for c in state.consumers) else ()


# Long enough for every client to see its connections refused and back off (it retries after 100
# ms, then waits longer), short enough not to stretch a program much.
CUT_MS = 300
_CUT_NETWORK = (o.CutNetwork(ms=CUT_MS),)


def _cut_network(state: State) -> tuple[o.Op, ...]:
    """A network cut while some consumer is connected: with none, it cuts only a producer."""
    return _CUT_NETWORK if any(c.connected for c in state.consumers) else ()


# Longer than the clients' ack grouping time (100 ms) and the catalog's nack delay (100 ms), so that
# a flush or a redelivery request falls inside a stall that follows an ack or a nack; far shorter
# than the keep-alive interval (30 s), past which a stall becomes a cut.
STALL_MS = 300
_STALL_NETWORK = (o.StallNetwork(ms=STALL_MS),)


def _stall_network(state: State) -> tuple[o.Op, ...]:
    """A stall while some consumer is connected: with none, it stalls only a producer."""
    return _STALL_NETWORK if any(c.connected for c in state.consumers) else ()


# Each way: a round trip of 200 ms, longer than the rewinds' lag (REWIND_LAG_MS) and the catalog's
# nack delay, well under every timeout of the clients (30 s).
LATENCY_MS = 100
_SLOW_NETWORK = (o.SlowNetwork(ms=LATENCY_MS),)


def _slow_network(state: State) -> tuple[o.Op, ...]:
    """A slower network while some consumer is connected, once a program: it lasts to its end."""
    return _SLOW_NETWORK if state.latency_ms == 0 and any(c.connected for c in state.consumers) else ()


CANDIDATES: dict[str, Callable[[State], tuple[o.Op, ...]]] = {
    "send": _send,
    "subscribe": _subscribe,
    "receive": _per_consumer(o.Receive),
    "acknowledge": _held(o.Acknowledge),
    "acknowledge_cumulative": _held(o.AcknowledgeCumulative),
    "negative_acknowledge": _held(o.NegativeAcknowledge),
    "reconsume_later": _reconsume_later,
    "redeliver_unacknowledged_messages": _per_consumer(o.RedeliverUnacknowledgedMessages),
    "close": _per_consumer(o.Close),
    "seek": _seek,
    "tick": _tick,
    "read_cursor": _lifecycle(o.ReadCursor),
    "unload": _lifecycle(o.Unload),
    "restart": _lifecycle(o.Restart),
    "crash": _lifecycle(o.Crash),
    "crash_client": _crash_client,
    "cut_network": _cut_network,
    "stall_network": _stall_network,
    "slow_network": _slow_network,
}

# How often each kind is drawn by the random generator (Hypothesis chooses its own way). A client
# crash, a network cut, a stall and a slow network are faults of the conformance programs (suites/generation.py
# weighs them there); the trace corpora leave them out, so that a seed keeps generating the traces it always did.
WEIGHTS: dict[str, int] = {
    "send": 8, "subscribe": 2, "receive": 12, "acknowledge": 6, "acknowledge_cumulative": 2, "negative_acknowledge": 2,
    "reconsume_later": 0,
    "redeliver_unacknowledged_messages": 1, "close": 1, "seek": 1, "tick": 1, "read_cursor": 2, "unload": 1,
    "restart": 0, "crash": 0, "crash_client": 0, "cut_network": 0,
    "stall_network": 0, "slow_network": 0}


def candidates(state: State, kind: str) -> tuple[o.Op, ...]:
    """The concrete ops of `kind` that are enabled in `state` (empty: its precondition is false)."""
    return CANDIDATES[kind](state)


def random_op(state: State, rng: random.Random) -> o.Op:
    """One enabled op, drawn by WEIGHTS among the enabled kinds, then uniformly among its candidates."""
    while True:
        # rng.choices(kinds, weights)[0], with the cumulative weights summed once (the generator's
        # hottest loop): the same draw from the same random() value.
        kind = _DRAWN[bisect(_CUMULATIVE, rng.random() * _CUMULATIVE[-1], 0, len(_DRAWN) - 1)]
        options = CANDIDATES[kind](state)
        if options:
            return rng.choice(options)


_DRAWN = tuple(kind for kind, weight in WEIGHTS.items() if weight > 0)
_CUMULATIVE = tuple(accumulate(WEIGHTS[kind] for kind in _DRAWN))
