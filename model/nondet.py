"""The non-deterministic layer: the set of states the system may be in, filtered by observations.

Pulsar is non-deterministic in ways a conformance suite must accept: which Shared consumer gets a
message, when a nack or ack-timeout redelivery lands inside its window, whether a grouped ack
reached the broker before a crash. The deterministic core (model/step.py) absorbs most of it into
the state (AVAILABLE messages, pending acks, windows, count intervals); what is left is a set of
states. An observation that no state allows empties the set: a violation, reported with the
guarantee it breaks (the one most states agree on).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from model.state import State, Status, initial
from model.step import Violation, step


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """`ok` with the states still possible, or the violation that ruled them all out."""

    states: frozenset[State]
    violation: Violation | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None


def start(spec: Spec) -> Verdict:
    return Verdict(states=frozenset({initial(spec)}))


def apply(verdict: Verdict, op: o.Op, completion: o.Completion) -> Verdict:
    """Step every possible state; keep those that allow the observation."""
    if verdict.violation is not None:
        return verdict
    survivors: set[State] = set()
    violations: list[Violation] = []
    for state in verdict.states:
        result = step(state, op, completion)
        if isinstance(result, Violation):
            violations.append(result)
        else:
            survivors.add(result)
    if survivors:
        return Verdict(states=frozenset(survivors))
    return Verdict(states=frozenset(), violation=_most_common(violations))


def _most_common(violations: list[Violation]) -> Violation:
    guarantee, _ = Counter(v.guarantee for v in violations).most_common(1)[0]
    return next(v for v in violations if v.guarantee is guarantee)


def check_nothing_lost(verdict: Verdict) -> Verdict:
    """After every connected consumer was drained: no message that had to come may still be waiting.

    A message must have come when it is AVAILABLE (never delivered, or back for redelivery) and a
    consumer is connected. If some possible state has nothing owed, the observation is allowed.
    """
    if verdict.violation is not None:
        return verdict
    owed_per_state = []
    for state in verdict.states:
        dispatching = state.connected() and state.now >= state.paused_until
        owed = _owed(state) if dispatching else []
        if not owed:
            return verdict
        owed_per_state.append(owed)
    owed = min(owed_per_state, key=len)
    return Verdict(states=frozenset(), violation=Violation(
        guarantee=Guarantee.NO_LOSS,
        detail=f"drained every consumer, yet {', '.join(map(str, owed))} never came"))


# What a drain covered: True, every connected consumer; the names of the only consumers drained
# (the others took nothing); False, no drain.
Drained = bool | tuple[str, ...]


def check_drained(verdict: Verdict, drained: Drained = True) -> Verdict:
    """The check a drain ends with: after draining every connected consumer nothing owed may be
    missing (check_nothing_lost); after draining only some, no more than the others' receiver
    queues hold (check_receiver_queues); without a drain, nothing to check."""
    if drained is True:
        return check_nothing_lost(verdict)
    return check_receiver_queues(verdict, frozenset(drained)) if drained else verdict


def check_receiver_queues(verdict: Verdict, drained: frozenset[str]) -> Verdict:
    """Shared, after the `drained` consumers were drained while the other connected ones took
    nothing: what is still owed must fit in the idle consumers' receiver queues.

    The broker dispatches to a consumer only while it has flow permits, which its client grants up
    to receiver_queue_size; it counts permits in messages but sends whole entries, and it turns
    permits into entries with the consumer's average messages per entry, which starts at 0 (taken
    as 1). So a batch overshoots: observed on 4.0.7, with c0 idle and c1 drained, c0's queue kept
    1, 2, 5 messages for sizes 1, 2, 5 and one whole batch entry of 3 for sizes 1 and 2; and a
    consumer subscribing to redeliveries took two entries of 3 at once with 3 permits. The sound
    bound is in entries (KNOWN_DIVERGENCES.md 15): an idle consumer holds at most
    receiver_queue_size entries (a zero-queue consumer one message: a receive that timed out may
    still be waiting for it). Stale copies in a queue only take room: the bound is what may be
    missing at most.
    """
    if verdict.violation is not None:
        return verdict
    owed_per_state = []
    for state in verdict.states:
        idle = [c for c in state.connected() if c.name not in drained]
        if state.spec.subscription_type is not SubscriptionType.SHARED or not idle or state.now < state.paused_until:
            return verdict
        owed = _owed(state)
        entries, room = len({m.entry for m in owed}), len(idle) * queue_room(state)
        if entries <= room:
            return verdict
        owed_per_state.append((owed, entries, room))
    owed, entries, room = min(owed_per_state, key=lambda found: found[1] - found[2])
    names = ", ".join(sorted(drained))
    return Verdict(states=frozenset(), violation=Violation(
        guarantee=Guarantee.RECEIVER_QUEUE,
        detail=f"drained {names}, yet {len(owed)} messages ({', '.join(map(str, owed))}) in {entries} entries did "
               f"not come: more entries than the idle consumers' receiver queues hold ({room})"))


def queue_room(state: State) -> int:
    """How many entries one idle consumer's receiver queue may hold (see check_receiver_queues)."""
    return max(state.spec.receiver_queue_size, 1)


def _owed(state: State) -> list:
    """The messages the broker must hand out while dispatching: back or never delivered, unless
    stalled, held back for a draining key, or skipped by the consumer that sought past them."""
    return [m.id for m in state.messages if m.status is Status.AVAILABLE and not m.stalled
            and not _key_may_be_draining(state, m.key) and not _skipped(state, m.skipped_by)]


def _skipped(state: State, seeker: str | None) -> bool:
    """The consumer that sought to the message skips it while it is connected (model/step.py)."""
    return seeker is not None and state.consumer(seeker) is not None


def _key_may_be_draining(state: State, key: str | None) -> bool:
    """Key_Shared (PIP-379, 4.0+): when a key's hash moves to a consumer that joined, the broker
    holds back the key's messages until the old consumer has acked the ones it holds: they are
    not owed while that may be the case. Observed on 4.0.7: c0 alone gets m0 (key k) in its
    queue, c1 joins, c0 receives m0 and holds it; m1 (key k) comes to nobody."""
    if state.spec.subscription_type is not SubscriptionType.KEY_SHARED:
        return False
    # Which consumer the broker gave the key's hash is unknown until a delivery shows it, and the
    # range may have moved when any consumer joined: with more than one consumer connected, a key
    # with held messages may be draining.
    return len(state.connected()) > 1 and any(m.key == key and m.status is Status.HELD for m in state.messages)
