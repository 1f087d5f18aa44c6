"""The faults of the generated programs, and the windows each is there to hit.

A fault tried is not a fault reached (Jepsen's nemesis, etcd's robustness tests count both): a
client crash with nothing held and every ack flushed shows nothing a close does not. Each fault
names the windows it can hit; `windows_reached` says which of them one fault op hit, from the
model's state before it and the history so far, so that a run can report how many of its programs
reached each window, not only how many tried.

- `crash_client` (model/transitions/client_crash.py): an *unflushed ack*, an ack the model still
  has pending, made within the ack grouping time before the crash, so that the client's
  grouping tracker had not sent it on its timer yet; *held unacknowledged*, a message a
  connected consumer's application holds, which must come back with the count the broker gives.
- `cut_network` (every client connection cut through the proxy, model/transitions/__init__.py):
  the same two windows, an ack still grouped when the connection goes, a message held when its
  consumer leaves the broker.
- `stall_network` (nothing passes for a while, then everything held, fixtures/network.py): an
  *unflushed ack*, whose flush the client sends during the stall; a *delayed redelivery request*,
  a nacked message whose redelivery the client's tracker asks for while nothing passes, so that
  it reaches the broker only when the stall ends.
- `slow_network` (every byte late by as much each way, to the program's end): the same two, an
  ack whose flush and a nacked message whose redelivery request go through the slow network.
- `restart` and `crash` of the broker (model/transitions/reopen.py), on a broker of the check's
  own: the same two windows, and *ack not persisted*, an ack the broker may have applied, which
  its client sent within the broker's mark-delete persistence interval, which a crash may undo;
  and, on a broker with the failpoint (fixtures/broker/failpoint.py), *halted at a cursor persist*:
  the crash struck as the broker persisted the cursor for an ack it had applied (the crash op's
  completion says so), the window reached on purpose rather than by timing.
"""

from __future__ import annotations

from model import ops as o
from model.state import HELD, State

CRASH_CLIENT = "crash_client"
CUT_NETWORK = "cut_network"
STALL_NETWORK = "stall_network"
SLOW_NETWORK = "slow_network"
RESTART = "restart"
CRASH = "crash"
UNFLUSHED_ACK = "unflushed ack"
HELD_UNACKNOWLEDGED = "held unacknowledged"
ACK_NOT_PERSISTED = "ack not persisted"
HALTED_AT_PERSIST = "halted at a cursor persist"
DELAYED_REDELIVERY = "delayed redelivery request"
# Each fault's op kind (model/history.py's name) and the windows it can reach, in report order.
WINDOWS: dict[str, tuple[str, ...]] = {CRASH_CLIENT: (UNFLUSHED_ACK, HELD_UNACKNOWLEDGED),
                                       CUT_NETWORK: (UNFLUSHED_ACK, HELD_UNACKNOWLEDGED),
                                       STALL_NETWORK: (UNFLUSHED_ACK, DELAYED_REDELIVERY),
                                       SLOW_NETWORK: (UNFLUSHED_ACK, DELAYED_REDELIVERY),
                                       RESTART: (UNFLUSHED_ACK, HELD_UNACKNOWLEDGED),
                                       CRASH: (UNFLUSHED_ACK, HELD_UNACKNOWLEDGED, ACK_NOT_PERSISTED)}
FAULT_OPS: dict[type, str] = {o.CrashClient: CRASH_CLIENT, o.CutNetwork: CUT_NETWORK, o.StallNetwork: STALL_NETWORK,
                              o.SlowNetwork: SLOW_NETWORK, o.Restart: RESTART, o.Crash: CRASH}
# The broker persists a cursor's markDeletePosition at most once a second
# (managedLedgerDefaultMarkDeleteRateLimit = 1.0): an ack applied within that time may be in memory only.
MARK_DELETE_PERSIST_MS = 1000
# The faults a check runs on a broker of its own: they stop the broker, or cut, stall or slow every connection to it.
OWN_BROKER = frozenset({CUT_NETWORK, STALL_NETWORK, SLOW_NETWORK, RESTART, CRASH})
# The op kinds a program needs for a window to be reachable at all (one of them).
NEEDS: dict[str, tuple[str, ...]] = {UNFLUSHED_ACK: ("acknowledge", "acknowledge_cumulative"),
                                     HELD_UNACKNOWLEDGED: ("receive",),
                                     ACK_NOT_PERSISTED: ("acknowledge", "acknowledge_cumulative"),
                                     HALTED_AT_PERSIST: ("acknowledge", "acknowledge_cumulative"),
                                     DELAYED_REDELIVERY: ("negative_acknowledge",)}
# The windows only a target with the failpoint can reach, after the fault's others.
FAILPOINT_WINDOWS: dict[str, tuple[str, ...]] = {CRASH: (HALTED_AT_PERSIST,)}


def windows_for(fault: str, kinds: tuple[str, ...], *, failpoint: bool = False) -> tuple[str, ...]:
    """The windows of `fault` a program of these op kinds can reach (a check without an ack op
    has no unflushed ack to crash on); `failpoint`: on a broker that halts at a cursor persist."""
    windows = WINDOWS[fault] + (FAILPOINT_WINDOWS.get(fault, ()) if failpoint else ())
    return tuple(w for w in windows if set(NEEDS[w]) & set(kinds))


def windows_reached(state: State, op: o.Op, history: list[tuple[o.Op, o.Completion]],
                    completion: o.Completion | None = None) -> tuple[str, ...]:
    """The windows of `op`'s fault it reached in `state`, the model's state before it, `history`
    the ops before it, `completion` its own (whether the broker halted at a cursor persist is the
    target's to say). The fault strikes when it is invoked, right after the last completion
    (`state.now`): how long it takes to complete (a new client process to start, the cut itself) does
    not count.
    Empty for an op that is no fault."""
    if type(op) not in FAULT_OPS:
        return ()
    connected = [c for c in state.consumers if c.connected]
    reached = []
    last_ack = next((c.at for past, c in reversed(history)
                     if isinstance(past, o.ACKNOWLEDGES) and c.outcome is o.Outcome.OK), None)
    if any(c.pending_acks for c in connected) and last_ack is not None \
            and state.now - last_ack <= state.spec.ack_grouping_ms:
        reached.append(UNFLUSHED_ACK)
    names = {c.name for c in connected}
    if HELD_UNACKNOWLEDGED in WINDOWS[FAULT_OPS[type(op)]] and any(
            m.status is HELD and m.holder in names for m in state.messages):
        reached.append(HELD_UNACKNOWLEDGED)
    # A nack whose redelivery window reaches into a stall (its tracker's timer may fire while
    # nothing passes; the window is when the redelivery may land, the request a little before), or
    # is still open as the network slows down (its request goes through the slow network).
    until = state.now + op.ms if isinstance(op, o.StallNetwork) else None
    if DELAYED_REDELIVERY in WINDOWS[FAULT_OPS[type(op)]] and any(
            m.status is HELD and m.holder in names and m.redelivery_from is not None
            and (until is None or m.redelivery_from <= until) and m.redelivery_by > state.now for m in state.messages):
        reached.append(DELAYED_REDELIVERY)
    # An ack its client sent (the grouping time over) within the broker's mark-delete persistence
    # interval: the broker may have applied it without persisting it yet.
    grouping = state.spec.ack_grouping_ms
    if ACK_NOT_PERSISTED in WINDOWS[FAULT_OPS[type(op)]] and any(
            isinstance(past, o.ACKNOWLEDGES) and c.outcome is o.Outcome.OK
            and grouping < state.now - c.at <= grouping + MARK_DELETE_PERSIST_MS for past, c in history):
        reached.append(ACK_NOT_PERSISTED)
    if completion is not None and completion.value == HALTED_AT_PERSIST \
            and HALTED_AT_PERSIST in FAILPOINT_WINDOWS.get(FAULT_OPS[type(op)], ()):
        reached.append(HALTED_AT_PERSIST)
    return tuple(reached)

