"""The deterministic core: one step function per op, `(state, op, completion) -> Result`.

`step` advances the clock to the completion's time, then hands the op to its transition: what the
op does to the topic, the subscription and the client, following the Pulsar source each module
names. An observation no state allows is a `Violation` (model/violations.py) found by the checks
(model/checks.py); a cursor read the core cannot decide is a `CursorPrefixQuestion`, answered by
the non-deterministic layer (model/nondet.py), the only part of the model that asks the solver.
Unknown ops fail loudly.

The modules, one idea each:
- receive.py: a delivery to the application (ack-timeout tracking starts, Key_Shared binding);
- acks.py: acknowledge, acknowledge_cumulative, the pending acks' flush, the cursor read and
  settlement;
- redelivery.py: negative_acknowledge, redeliver_unacknowledged_messages, ack timeouts, batch
  entries coming back, dead-letter routing;
- consumers.py: send, subscribe, close, the Failover switch and pause, Key_Shared binding;
- reopen.py: unload, restart, crash, seek;
- client_crash.py: crash_client, the client's process killed with its grouped acks unflushed;
- reconnect.py: a consumer reconnecting after the broker closed its connection, and the acks its
  client may drop meanwhile.

This module also keeps the clock: time only moves forward, and a redelivery window whose end has
passed has certainly delivered.
"""

from __future__ import annotations

from collections.abc import Callable

from model import ops as o
from model.state import ACKED, AVAILABLE, HELD, State, replace_messages
from model.transitions.acks import acknowledge, acknowledge_cumulative, flush_acks, read_cursor
from model.transitions.client_crash import crash_client
from model.transitions.consumers import close, send, subscribe
from model.transitions.receive import receive
from model.transitions.redelivery import ack_timeouts_open, negative_acknowledge, redeliver
from model.transitions.reopen import reopen, seek
from model.violations import Result

__all__ = ["Result", "flush_acks", "step"]


def step(state: State, op: o.Op, completion: o.Completion) -> Result:
    """Apply one op with its completion. Pure: never mutates `state`."""
    transition = _TRANSITIONS.get(type(op))
    if transition is None:
        raise TypeError(f"unknown op {op!r}")
    if transition is negative_acknowledge:
        # The nack's timer starts when it is called: no earlier than the last completion.
        return negative_acknowledge(_advance_clock(state, completion.at), op, completion, invoked=state.now)
    if transition is receive:
        # The ack timeout's tracking starts when the message is handed out: no earlier either.
        return receive(_advance_clock(state, completion.at), op, completion, invoked=state.now)
    return transition(_advance_clock(state, completion.at), op, completion)


def _redeliver_unacknowledged_messages(state: State, op: o.RedeliverUnacknowledgedMessages,
                                       completion: o.Completion) -> Result:
    return redeliver(state, op.consumer, completion.at, window=(0, 0))


def _tick(state: State, op: o.Tick, completion: o.Completion) -> Result:
    return state  # the clock moved; nothing else happens


def _unload_or_restart(state: State, op: o.Unload | o.Restart, completion: o.Completion) -> Result:
    return reopen(state, persisted=True)


def _crash(state: State, op: o.Crash, completion: o.Completion) -> Result:
    return reopen(state, persisted=False)


_TRANSITIONS: dict[type, Callable[[State, o.Op, o.Completion], Result]] = {
    o.Send: send,
    o.Subscribe: subscribe,
    o.Receive: receive,
    o.Acknowledge: acknowledge,
    o.AcknowledgeCumulative: acknowledge_cumulative,
    o.NegativeAcknowledge: negative_acknowledge,
    o.RedeliverUnacknowledgedMessages: _redeliver_unacknowledged_messages,
    o.Close: close,
    o.Seek: seek,
    o.Tick: _tick,
    o.Unload: _unload_or_restart,
    o.Restart: _unload_or_restart,
    o.Crash: _crash,
    o.CrashClient: crash_client,
    o.ReadCursor: read_cursor,
}


def _advance_clock(state: State, at: int) -> State:
    """Time only moves forward; windows whose end has passed are certainly open now."""
    now = max(state.now, at)
    if now == state.now:
        return state
    if state.spec.ack_timeout_ms is not None:
        state = ack_timeouts_open(state, now)
    # A due message whose client may dead-letter it when the timer fires is gone, or may come.
    due = {m.id: m.with_(status=ACKED if m.dead_letter_unsure else AVAILABLE, holder=None,
                         redelivery_from=None, redelivery_by=None)
           for m in state.messages if m.status is HELD and m.redelivery_by is not None and m.redelivery_by <= now}
    state = replace_messages(state.with_(now=now), due)
    if state.rewind_window is not None and now > state.rewind_window[1]:
        # The rewinds have landed: a message that was in the receiver queue may be there once
        # more per rewind.
        queued = {m.id: m.with_(extra_deliveries=m.extra_deliveries + state.rewinds, never_dispatched=False)
                  for m in state.messages if m.status is AVAILABLE}
        state = replace_messages(state.with_(rewind_window=None, rewinds=0), queued)
    return state
