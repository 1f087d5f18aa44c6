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
- reopen.py: unload, restart, crash, seek (and a network cut, which the clients see as an unload);
- client_crash.py: crash_client, the client's process killed with its grouped acks unflushed;
- reconnect.py: a consumer reconnecting after the broker closed its connection, and the acks its
  client may drop meanwhile.

This module also keeps the clock: time only moves forward, a redelivery window whose end has
passed has certainly delivered, and one that ends in the op's own millisecond may have.
"""

from __future__ import annotations

from collections.abc import Callable

from model import ops as o
from model.state import ACKED, AVAILABLE, HELD, State, replace_messages
from model.transitions.acks import acknowledge, acknowledge_cumulative, flush_acks, read_cursor
from model.transitions.client_crash import crash_client
from model.transitions.consumers import close, retry_copy, send, subscribe
from model.transitions.receive import receive
from model.transitions.redelivery import ack_timeouts_open, negative_acknowledge, redeliver
from model.transitions.reopen import reopen, seek
from model.violations import Either, Result

__all__ = ["Result", "flush_acks", "step"]


def step(state: State, op: o.Op, completion: o.Completion) -> Result:
    """Apply one op with its completion. Pure: never mutates `state`."""
    transition = _TRANSITIONS.get(type(op))
    if transition is None:
        raise TypeError(f"unknown op {op!r}")
    last = state.now
    if transition is _cut_network:
        # The cut began once the previous op completed, and its completion is stamped when it
        # ended: a timer that fired in between fired without a connection, so what the clients
        # were still to ask is pending at the cut, not landed (shown by history
        # broker-nack-asked-after-a-cut-rewinds-all.network_cut-Exclusive).
        return _advance_clock(_cut_network(state, op, completion), completion.at)
    now = _advance_clock(state, completion.at)
    if transition is negative_acknowledge:
        # The nack's timer starts when it is called: no earlier than the last completion.
        apply = lambda s: negative_acknowledge(s, op, completion, invoked=last)  # noqa: E731
    elif transition is receive:
        # The ack timeout's tracking starts when the message is handed out: no earlier either.
        apply = lambda s: receive(s, op, completion, invoked=last)  # noqa: E731
    else:
        apply = lambda s: transition(s, op, completion)  # noqa: E731
    # When the clock moved, _advance_clock has landed everything due by now already.
    landed = _land(now, now.now) if now is state else now
    if landed is now:
        return apply(now)
    # A history stamps in whole milliseconds: a window that ends in this op's millisecond may have
    # closed before the op or after it (shown by history
    # broker-redelivery-lands-within-the-millisecond-of-its-call.redelivery_count_and_dead_letter-Shared:
    # c0's redeliver landed, went to c1 and was counted again by c1's redeliver, all within 1 ms).
    # The first branch is the op before the landing, what a single-state driver keeps.
    return Either(tuple(branch for result in (apply(now), apply(landed))
                        for branch in (result.states if type(result) is Either else (result,))))


def _redeliver_unacknowledged_messages(state: State, op: o.RedeliverUnacknowledgedMessages,
                                       completion: o.Completion) -> Result:
    return redeliver(state, op.consumer, completion.at, window=(0, 0))


def _reconsume_later(state: State, op: o.ReconsumeLater, completion: o.Completion) -> Result:
    # On the topic whose message it names, a reconsume_later is the individual ack its client sends
    # once the copy is published (ConsumerImpl.doReconsumeLater); model/partitions.py publishes the
    # copy on the retry letter topic.
    return acknowledge(state, o.Acknowledge(consumer=op.consumer, message=op.message), completion)


def _tick(state: State, op: o.Tick, completion: o.Completion) -> Result:
    return state  # the clock moved; nothing else happens


def _stall_network(state: State, op: o.StallNetwork, completion: o.Completion) -> Result:
    # A stall shorter than the keep-alive interval (30 s for the broker and the clients) is a wait:
    # every connection stays, and what either side sent meanwhile arrives once it ends, in order,
    # before the op completes (the target lets it through first). A redelivery its client asked
    # for during the stall lands later than a tick would let it, never earlier, and the model's
    # windows bound it from below only until the clock passes them (shown by suites/broker/
    # test_network_delay.py::test_a_stall_loses_nothing_and_what_it_held_arrives_once_it_ends and,
    # in lock-step, ::test_the_model_accepts_what_a_stall_leaves).
    return state


def _slow_network(state: State, op: o.SlowNetwork, completion: o.Completion) -> Result:
    # From now on a client's request reaches the broker `ms` later: a redelivery or a rewind its
    # timers ask for lands that much after its window (`_land`, `_advance_clock`); the windows'
    # start, the client's own timer, stays. Every other rule holds as it is: the connection keeps
    # its order, and an ack with its receipt, a seek or a close return once the broker has them
    # (shown by suites/broker/test_network_delay.py::test_the_model_accepts_what_a_slow_network_leaves).
    return state.with_(latency_ms=op.ms)


def _unload_or_restart(state: State, op: o.Unload | o.Restart, completion: o.Completion) -> Result:
    return reopen(state, persisted=True)


def _cut_network(state: State, op: o.CutNetwork, completion: o.Completion) -> Result:
    # What the clients see of a cut is what they see of an unload: every connection closes and
    # they reconnect. The broker keeps its topic, cursor and dispatcher, but every consumer left,
    # so the redelivery counts start from 0 as a new dispatcher's do, and what was unacknowledged
    # is dispatched again (shown by suites/broker/test_network_cut.py::
    # test_after_a_cut_what_was_held_comes_again_and_what_was_acked_does_not and, in lock-step,
    # test_the_model_accepts_what_a_cut_leaves).
    return reopen(state, persisted=True)


def _crash(state: State, op: o.Crash, completion: o.Completion) -> Result:
    return reopen(state, persisted=False)


def _land(state: State, now: int) -> State:
    """The redeliveries whose window ended by `now` landed: the message is back. A due message
    whose client may dead-letter it when the timer fires is gone, or may come. `state` itself when
    none is due."""
    due = {m.id: m.with_(status=ACKED if m.dead_letter_unsure else AVAILABLE, holder=None,
                         redelivery_from=None, redelivery_by=None)
           for m in state.messages
           if m.status is HELD and m.redelivery_by is not None and m.redelivery_by + state.latency_ms <= now}
    return replace_messages(state, due) if due else state


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
    o.CutNetwork: _cut_network,
    o.StallNetwork: _stall_network,
    o.SlowNetwork: _slow_network,
    o.ReadCursor: read_cursor,
    o.RetryCopy: retry_copy,
    o.ReconsumeLater: _reconsume_later,
}


def _advance_clock(state: State, at: int) -> State:
    """Time only moves forward; windows whose end has passed are certainly open now."""
    now = max(state.now, at)
    if now == state.now:
        return state
    if state.spec.ack_timeout_ms is not None:
        state = ack_timeouts_open(state, now)
    state = _land(state.with_(now=now), now)
    if state.rewind_window is not None and now > state.rewind_window[1] + state.latency_ms:
        # The rewinds have landed: a message that was in the receiver queue may be there once
        # more per rewind.
        queued = {m.id: m.with_(extra_deliveries=m.extra_deliveries + state.rewinds, never_dispatched=False)
                  for m in state.messages if m.status is AVAILABLE}
        state = replace_messages(state.with_(rewind_window=None, rewinds=0), queued)
    return state
