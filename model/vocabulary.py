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
    return (_subscribe_op(free[0]),) if free else ()


@cache
def _subscribe_op(consumer: str) -> o.Op:
    return o.Subscribe(consumer=consumer)


# Ops are values: the candidates' constructors are cached (interned), since the random generator
# asks for every candidate of a kind at each step and keeps one.
def _per_consumer(make: Callable[[str], o.Op]) -> Callable[[State], tuple[o.Op, ...]]:
    make = cache(make)
    return lambda state: tuple([make(c.name) for c in state.consumers if c.connected])


def _held(make: Callable[[str, o.MessageId], o.Op]) -> Callable[[State], tuple[o.Op, ...]]:
    make = cache(make)

    def held(state: State) -> tuple[o.Op, ...]:
        connected = [c.name for c in state.consumers if c.connected]
        return tuple([make(m.holder, m.id) for m in state.messages if m.status is HELD and m.holder in connected])

    return held


_cumulative = _held(lambda c, m: o.AcknowledgeCumulative(consumer=c, message=m))


def _seek(state: State) -> tuple[o.Op, ...]:
    connected = state.connected()
    if len(connected) != 1 or any(c.pending_acks for c in state.consumers if not c.connected):
        return ()
    consumer = connected[0].name
    # Batch indexes too, with batch-index acks on or off: a seek forgets the acked indexes of the
    # target's entry either way (suites/model/test_fidelity_broker.py).
    return tuple(_seek_op(consumer, m.id) for m in state.messages
                 if m.holder == consumer and m.status is HELD)


@cache
def _seek_op(consumer: str, message: o.MessageId) -> o.Op:
    return o.Seek(consumer=consumer, message=message)


def _tick(state: State) -> tuple[o.Op, ...]:
    """Waits that close a window, offered only while there is one to close: the nack window (a
    redelivery or a rewind requested, or a Failover pause running), the ack grouping (acks not yet
    flushed), the ack-timeout window (a message held unacknowledged). Otherwise time changes
    nothing the model knows of, and on a real broker a tick would only cost its sleep."""
    spec = state.spec
    ticks = []
    if (state.rewind_window is not None or state.paused_until > state.now
            or any(m.back_by is not None for m in state.messages)):
        ticks.append(_tick_op(spec.nack_window_ms[1] + 50))
    if any(c.pending_acks for c in state.consumers):
        ticks.append(_tick_op(spec.ack_grouping_ms + 50))
    if spec.ack_timeout_window_ms is not None and any(m.status is HELD for m in state.messages):
        ticks.append(_tick_op(spec.ack_timeout_window_ms[1] + 50))
    return tuple(ticks)


@cache
def _tick_op(ms: int) -> o.Op:
    return o.Tick(ms=ms)


def _lifecycle(make: Callable[[], o.Op]) -> Callable[[State], tuple[o.Op, ...]]:
    only = (make(),)
    return lambda state: only


CANDIDATES: dict[str, Callable[[State], tuple[o.Op, ...]]] = {
    "send": _send,
    "subscribe": _subscribe,
    "receive": _per_consumer(lambda c: o.Receive(consumer=c)),
    "acknowledge": _held(lambda c, m: o.Acknowledge(consumer=c, message=m)),
    "acknowledge_cumulative": _cumulative,
    "negative_acknowledge": _held(lambda c, m: o.NegativeAcknowledge(consumer=c, message=m)),
    "redeliver_unacknowledged_messages": _per_consumer(lambda c: o.RedeliverUnacknowledgedMessages(consumer=c)),
    "close": _per_consumer(lambda c: o.Close(consumer=c)),
    "seek": _seek,
    "tick": _tick,
    "read_cursor": _lifecycle(o.ReadCursor),
    "unload": _lifecycle(o.Unload),
    "restart": _lifecycle(o.Restart),
    "crash": _lifecycle(o.Crash),
}

# How often each kind is drawn by the random generator (Hypothesis chooses its own way).
WEIGHTS: dict[str, int] = {
    "send": 8, "subscribe": 2, "receive": 12, "acknowledge": 6, "acknowledge_cumulative": 2, "negative_acknowledge": 2,
    "redeliver_unacknowledged_messages": 1, "close": 1, "seek": 1, "tick": 1, "read_cursor": 2, "unload": 1,
    "restart": 0, "crash": 0}


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
