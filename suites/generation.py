"""How the conformance machine (suites/machines.py) picks its next step: swarm, state weights,
boundary ticks.

- Swarm (Groce et al., "Swarm testing", ISSTA 2012): each example leaves out a random subset of
  its check's own op kinds and of the vocabulary's knobs (batched sends, consumers other than c0,
  half of the Key_Shared keys), so a combination that needs two rare ops together is not drowned by the
  common ones. `send`, `subscribe`, `receive` and the drain always stay, and at least one of the
  check's own kinds.
- State weights: an op is drawn with a weight that grows with what it can act on. A nack, a seek,
  a close, an unload or a redelivery request is worth more while messages are held, acks are
  pending (the client's ack grouping), the cursor has holes, or copies may sit in receiver queues.
  An unload is worth more only for what it can still put to the test: acks it may drop (not those
  an earlier disconnection already may have dropped), the cursor's holes and nacks whose
  redelivery the new dispatcher will count, and not right after another. The copies it gives
  back are its own doing: counted as queued copies, every unload called the next, and a program
  with one unload had fifteen.
  Under a dead-letter policy a nack is worth more while a held message is not nacked yet, and a
  held message that came back counted is offered more often: its nack brings it nearer the
  dead-letter topic; a seek is worth more while messages are held, which it hands back with their
  counts open (a mutant that kept a copy's count bound too wide was caught by 8 of 20 and 2 of 20
  random runs of the two cells of `redelivery_count_and_dead_letter` under a limit, by 24 of 80
  and 12 of 60 with it: seeks more often, not yet that mutant more often). When the client's
  seek sends the batch index (an ack set for the indexes before it), a seek past a batch's first
  index is offered more, and a close or a redelivery request of that entry after it is worth
  more: the broker must give the entry back without those indexes (a mutant that brought them
  back was caught by 8 of 20 runs of `seek[Shared-seek-batch-index]`, by 27 of 30 with it). A
  client crash is a fault: it starts below the others and is worth more
  only inside its windows (model/faults.py), most right after an acknowledge whose ack is still
  pending (on a broker the client flushes it within the ack grouping time, so only a crash that
  follows at once finds it unflushed), so that programs reach them without being made of
  crashes (each costs a new client process on a broker). A network stall or slowdown, the same
  way, and right after a nack too: the redelivery request its delay leads to is sent inside the
  stall, or through the slow network.
- Looks right after a change: a receive is worth more right after a tick or a seek, a cursor
  read right after an unload. A tick to just inside a window shows nothing unless a receive
  follows it (a client that ignored its nack backoff went unseen: its ticks were followed by more
  nacks and ticks, and the next receive came after every window); what the reloaded cursor kept
  shows to a read before more acks move it (a broker that loses the cursor's holes at an unload was
  caught by 3, 5 and 11 of 30 runs of the persistence cells, by 8, 9 and 15 with it).
- Boundary ticks: a tick lands just before, on or just after a bound of a window open now
  (`model.vocabulary.boundary_ticks`: the nack delay and its tick, the ack timeout and its tick,
  a rewind, the Failover pause), not only past every window.

`PLAIN` is the generation without any of these: one Hypothesis rule per op kind, drawn
uniformly among those enabled (Hypothesis's own rule swarm may leave out send or the drain), ticks
past every window. The benchmark (benchmarks/rule_coverage.py) runs both side by side with
`using(PLAIN)`; the suites always run `SWARM`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from model import ops as o
from model.spec import Spec, SubscriptionType
from model.state import ACKED, AVAILABLE, HELD, State
from model.vocabulary import KEYS, boundary_ticks, candidates
from suites.programs import DRAIN, DRAIN_OTHERS

ALWAYS = ("send", "subscribe", "receive", DRAIN)  # never left out by the swarm
# Knobs of the vocabulary an example may turn off, and when a spec has them.
KNOBS = {
    "batches": lambda spec: spec.receiver_queue_size > 0,  # a send may be a batch
    "more_consumers": lambda spec: True,  # c1 and c2 may subscribe, not only c0
    "all_keys": lambda spec: spec.subscription_type is SubscriptionType.KEY_SHARED,  # k2 and k3 are used
}
FEW_KEYS = frozenset(KEYS[:2])
BASE_WEIGHT = 2
CRASH_WEIGHT = 1  # a client crash or a network cut outside its windows: half what any other kind is worth
JUST_ACKED = 8  # what a crash or a cut is worth more right after an acknowledge left an ack pending
# What an observation is worth more right after the op whose effect it shows: a receive after a
# tick, a cursor read after an unload or after an ack with its receipt.
LOOK = 8
TICKETS = 1 << 12  # the range of the draw that picks a kind by weight
# Under a dead-letter policy: how many more copies of a counted held message a nack's candidates
# carry, and half the weight bonus of a nack or a redelivery request while a held message is not asked again yet.
TOWARD_DEAD_LETTER = 3
# How many more copies of a seek to a batch index past the first a seek's candidates carry, when the
# client's seek sends the batch index (an ack set for the indexes before it), and half the weight
# bonus of a seek while there is one to make.
ACK_SET = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    swarm: bool = True
    weighted: bool = True
    boundaries: bool = True
    # A check that reads the cursor ends each program with every consumer closed and a last read
    # (suites.programs.last_look); off only to measure what it adds (benchmarks.catch_rate).
    last_look: bool = True

    @property
    def plain(self) -> bool:
        return not (self.swarm or self.weighted or self.boundaries)


SWARM = Generation()
PLAIN = Generation(swarm=False, weighted=False, boundaries=False, last_look=False)
_current = [SWARM]


def current() -> Generation:
    return _current[-1]


@contextmanager
def using(generation: Generation) -> Iterator[None]:
    """Build conformance machines with `generation` inside the block (the benchmark's switch)."""
    _current.append(generation)
    try:
        yield
    finally:
        _current.pop()


@dataclass(frozen=True, slots=True, kw_only=True)
class Swarm:
    """What one example left out: op kinds of its check and knobs of the vocabulary."""

    kinds: frozenset[str] = frozenset()
    knobs: frozenset[str] = frozenset()

    def allows(self, op: o.Op) -> bool:
        if isinstance(op, o.Send):
            return (not op.batched or "batches" not in self.knobs) and (
                "all_keys" not in self.knobs or all(k is None or k in FEW_KEYS for k in op.keys))
        if isinstance(op, o.Subscribe):
            return op.consumer == "c0" or "more_consumers" not in self.knobs
        return True

    def describe(self) -> str:
        left = sorted(self.kinds) + [f"knob {k}" for k in sorted(self.knobs)]
        return f"swarm left out: {', '.join(left) or 'nothing'}"


def swarm_choices(kinds: tuple[str, ...], spec: Spec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The kinds and knobs an example of this check may leave out (not the other consumers when
    the check drains all but one: that needs two)."""
    knobs = tuple(k for k, applies in KNOBS.items() if applies(spec)
                  and not (k == "more_consumers" and DRAIN_OTHERS in kinds))
    return tuple(k for k in kinds if k not in ALWAYS), knobs


def swarm_of(left_out: list[bool], kinds: tuple[str, ...], knobs: tuple[str, ...]) -> Swarm:
    """The swarm drawn as one boolean per kind then per knob (True: left out); when every one of
    the check's own kinds would go, they all stay: a program of only sends and receives checks
    what every other check checks too."""
    out_kinds = frozenset(k for k, out in zip(kinds, left_out) if out)
    if out_kinds == frozenset(kinds):
        out_kinds = frozenset()
    return Swarm(kinds=out_kinds, knobs=frozenset(k for k, out in zip(knobs, left_out[len(kinds):]) if out))


def options(state: State, kind: str, generation: Generation, swarm: Swarm) -> tuple[o.Op, ...]:
    """The concrete ops of `kind` the machine may take in `state`."""
    if kind in swarm.kinds:
        return ()
    offered = candidates(state, kind)
    if kind == "tick" and offered and generation.boundaries:
        return boundary_ticks(state) + offered
    if kind in ("send", "subscribe") and swarm.knobs:
        return tuple(op for op in offered if swarm.allows(op))
    if kind == "negative_acknowledge" and state.spec.max_redeliver_count is not None:
        return offered + tuple(op for op in offered if _counted(state, op.message)) * TOWARD_DEAD_LETTER
    if kind == "seek" and state.spec.seek_sends_batch_index:
        # A seek to a batch index past the first acknowledges the indexes before it for the
        # subscription, a state no other op makes.
        return offered + tuple(op for op in offered if op.message.index > 0) * ACK_SET
    return offered


def weight(state: State, kind: str, *, last: o.Op | None = None) -> int:
    """How much a kind is worth in `state`: more when there is something for it to act on.
    `last`: the program's last op (None before its first)."""
    if kind == DRAIN_OTHERS:
        # Worth more while there is something for the idle consumer's receiver queue to hold back.
        return BASE_WEIGHT + 4 * any(m.status is AVAILABLE for m in state.messages)
    if kind == "receive":
        # What a tick let come (a redelivery whose window opened, a Failover pause over) shows
        # only to a receive: before the next tick or a drain past every window, or never. What a
        # seek's reset sends, the same way: before the next seek or close changes it.
        return BASE_WEIGHT + LOOK * isinstance(last, (o.Tick, o.Seek))
    if kind == "acknowledge":
        return BASE_WEIGHT + _while_reconnecting(state)
    if kind in ("send", "subscribe", DRAIN):
        return BASE_WEIGHT
    if kind in ("crash_client", "cut_network", "stall_network", "slow_network", "restart", "crash"):
        pending = any(c.pending_acks for c in state.consumers if c.connected)
        just_acked = isinstance(last, o.ACKNOWLEDGES)
        weight_ = CRASH_WEIGHT + JUST_ACKED * (just_acked and pending) + bool(_held(state))
        if kind in ("stall_network", "slow_network"):
            # Each delays what the clients' timers send: a flush (above) or a nack's redelivery
            # request, most right after the nack whose delay a stall outlasts.
            return weight_ + JUST_ACKED * (isinstance(last, o.NegativeAcknowledge))
        if kind in ("restart", "crash"):
            # Each takes seconds (the broker starts again), and one right after another shows
            # nothing the first did not; a crash is worth more while an ack the broker applied
            # may not be persisted yet.
            if isinstance(last, (o.Restart, o.Crash)):
                return 0
            weight_ += 2 * any(m.status is ACKED and not m.ack_confirmed for m in state.messages)
        return weight_
    held = _held(state)
    pending = any(c.pending_acks for c in state.consumers)
    queued = _queued(state)
    holes = bool(state.cursor.individually_deleted or state.cursor.batch_deleted)
    match kind:
        case "negative_acknowledge":
            bonus = 2 * (pending or _partly_acked(state)) + 2 * any(m.redelivery_from is not None for m in held)
            if state.spec.max_redeliver_count is not None:
                bonus += 2 * TOWARD_DEAD_LETTER * any(m.redelivery_from is None for m in held)
        case "seek":
            bonus = 2 * pending + 2 * queued + 2 * holes
            if state.spec.seek_sends_batch_index and not _after_seek_ack_set(state):
                bonus += 2 * ACK_SET * any(m.status is HELD and m.id.index > 0 for m in state.messages)
            if state.spec.max_redeliver_count is not None:
                # A seek hands back what is held with its count open (0 or one more): the count
                # the next delivery shows is the one the dead-letter policy counts on from.
                bonus += 2 * TOWARD_DEAD_LETTER * bool(held)
        case "unload":
            # A nack's redelivery still to be asked is asked of the new dispatcher, which counts it.
            nacked = any(m.redelivery_from is not None for m in held)
            bonus = 0 if isinstance(last, o.Unload) else 2 * _droppable(state) + 2 * holes + 2 * nacked
        case "close" | "redeliver_unacknowledged_messages":
            bonus = 2 * bool(held) + 2 * (pending or queued) + 2 * LOOK * _after_seek_ack_set(state)
            if kind == "redeliver_unacknowledged_messages" and state.spec.max_redeliver_count is not None:
                # As a nack: each request takes what the consumer holds one count nearer the
                # dead-letter topic, and the one past the limit dead-letters at once.
                bonus += 2 * TOWARD_DEAD_LETTER * any(m.redelivery_from is None for m in held)
        case "read_cursor" | "acknowledge_cumulative":
            bonus = 2 * pending + 2 * holes + (kind == "acknowledge_cumulative") * _while_reconnecting(state)
            if kind == "read_cursor" and isinstance(last, o.Unload):
                # What the reloaded cursor kept of its holes shows at once to a read, before more
                # acks move it.
                bonus += LOOK
            if kind == "read_cursor" and state.spec.ack_receipts and isinstance(last, o.ACKNOWLEDGES):
                # An ack that returned with its receipt is in the cursor at once: a read right
                # after it sees whether it is (or whether the client held it, reconnecting).
                bonus += LOOK
        case "tick":
            bonus = 2
        case _:
            bonus = 0
    return BASE_WEIGHT + bonus


def _while_reconnecting(state: State) -> int:
    """What an ack is worth more while a consumer holding messages may still be reconnecting: the
    client's next flush without a connection may drop it (model/transitions/reconnect.py), a window
    that closes at the consumer's next message."""
    reconnecting = {c.name for c in state.connected() if c.reconnecting}
    return LOOK * any(m.status is HELD and m.holder in reconnecting for m in state.messages)


def _counted(state: State, message_id: o.MessageId) -> bool:
    """Held, received with a redelivery count and not nacked since: one nack nearer the dead-letter topic."""
    message = state.message(message_id)
    return message.status is HELD and message.held_count > 0 and message.redelivery_from is None


def _after_seek_ack_set(state: State) -> bool:
    """A consumer holds a batch index whose earlier siblings a seek's ack set acknowledged (the
    Java client's seek to a batch index): a close or a redelivery request gives the entry back,
    and the broker must send it without those indexes."""
    acked = {m.id.entry for m in state.messages if m.acked_by_seek}
    return bool(acked) and any(m.status is HELD and m.id.entry in acked for m in state.messages)


def _droppable(state: State) -> bool:
    """An ack is pending that a disconnection would put in doubt (none has yet)."""
    return any(not state.message(message_id).ack_may_be_dropped
               for c in state.connected() for _, message_id in c.pending_acks)


def _held(state: State) -> list:
    return [m for m in state.messages if m.status is HELD]


def _queued(state: State) -> bool:
    """Copies may sit in a receiver queue: a message dispatched before and back, or an extra copy."""
    return bool(state.connected()) and any(
        m.extra_deliveries or (m.status is AVAILABLE and not m.never_dispatched) for m in state.messages)


def _partly_acked(state: State) -> bool:
    """A batch entry with some indexes acked and some not."""
    acked = {m.id.entry for m in state.messages if m.id.index >= 0 and m.status is ACKED}
    return any(m.id.entry in acked and m.status is not ACKED for m in state.messages if m.id.index >= 0)


def pick(weights: list[tuple[str, int]], ticket: int) -> str:
    """The kind a ticket lands on, each kind taking as many tickets as its weight."""
    total = sum(w for _, w in weights)
    point = ticket % total
    for kind, w in weights:
        if point < w:
            return kind
        point -= w
    raise AssertionError("unreachable: the weights sum to total")
