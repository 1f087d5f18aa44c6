"""The non-deterministic layer: the set of states the system may be in, filtered by observations.

Pulsar is non-deterministic in ways a conformance suite must accept: which Shared consumer gets a
message, when a nack or ack-timeout redelivery lands inside its window, whether a grouped ack
reached the broker before a crash. The deterministic core (model/transitions/) absorbs most of it
into the state (AVAILABLE messages, pending acks, windows, count intervals); what is left is a set
of states. An observation that no state allows empties the set: a violation, reported with the
guarantee it breaks (the one most states agree on).

This layer is the only part of the model that asks the solver: a cursor read the core cannot
decide (a `CursorPrefixQuestion`) is put to Z3 (model/smt/admissibility.py, `check_epoch`).

It is also where a history's completion times are read as the checker's: the ops of a history run
one after another, each invoked once the one before it completed, so a completion stamped before
the last one's is a time no broker can report. It says nothing of Pulsar: the target (or the
driver's clock, or a stored history) is wrong, and the history is refused as malformed
(`ImpossibleStamp`, a harness error), never checked on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from model import cursor as cur
from model import ops as o
from model.checks import check_no_loss, check_receiver_queue, owed_messages, queue_room
from model import partitions
from model.guarantees import Guarantee
from model.partitions import PartitionedState
from model.spec import Spec
from model.state import State, initial
from model.transitions import step
from model.violations import CursorPrefixQuestion, Either, Result, Violation


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """`ok` with the states still possible, or the violation that ruled them all out."""

    states: frozenset[State | PartitionedState]
    violation: Violation | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None

    @property
    def view(self) -> State:
        """One of the possible states, as one topic's state (model/partitions.py's `view` of a
        partitioned topic's): what picks a program's next op."""
        return partitions.view(next(iter(self.states)))


class ImpossibleStamp(ValueError):
    """A completion stamped before the completion of the op before it: the history is malformed
    (the target reports impossible times), not a verdict on the broker."""

    def __init__(self, op: o.Op, at: int, last: int) -> None:
        self.op, self.at, self.last = op, at, last
        self.history: tuple = ()  # the history up to this op, when the lock-step run tells it
        super().__init__(f"the target reports impossible times: {op!r} completed at {at} ms, before the op "
                         f"before it completed (at {last} ms); a history's times never go back")

    def __reduce__(self):
        return type(self), (self.op, self.at, self.last)


def start(spec: Spec) -> Verdict:
    return Verdict(states=frozenset({partitions.initial(spec) if spec.topics else initial(spec)}))


def apply(verdict: Verdict, op: o.Op, completion: o.Completion) -> Verdict:
    """Step every possible state; keep those that allow the observation. A completion stamped
    before the last one (every state's clock is the last completion's time) raises `ImpossibleStamp`."""
    if verdict.violation is not None:
        return verdict
    survivors: set[State] = set()
    violations: list[Violation] = []
    for state in verdict.states:
        if completion.at < state.now:
            raise ImpossibleStamp(op, completion.at, state.now)
        for result in _stepped(state, op, completion):
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


def decide(result: Result) -> State | Violation:
    """The core's answer with its question, if any, answered: a cursor read strictly between its
    bounds is allowed only if the acks it shows are, per consumer and kind, a prefix of the pending
    acks; Z3 decides (an `Unknown` answer is an undecided violation, never a pass)."""
    if type(result) is not CursorPrefixQuestion:
        return result
    # Imported here: Z3 loads only when a question comes (the trace generator never asks one).
    from model.smt.admissibility import AckEvent, AckKind, Epoch, Inadmissible, check_epoch
    from model.smt.solver import Unknown

    acks = tuple(AckEvent(index=i, consumer=name, kind=AckKind(kind), entry=m.entry)
                 for i, (name, kind, m) in enumerate(result.pending_acks))
    epoch = Epoch(entries=result.entries, floor=result.confirmed, acks=acks, cursor=result.observed)
    answer = check_epoch(epoch)
    if isinstance(answer, Inadmissible):
        return Violation(guarantee=Guarantee.CURSOR, detail=f"broker cursor {cur.describe(result.observed)} is no "
                         f"per-consumer prefix of the pending acks: {answer.describe()}")
    if isinstance(answer, Unknown):
        return Violation(guarantee=Guarantee.CURSOR, undecided=True,
                         detail=f"the solver could not decide the cursor {cur.describe(result.observed)}: {answer.reason}")
    return result.settled


def _stepped(state: State | PartitionedState, op: o.Op, completion: o.Completion, *, decided: bool = False
             ) -> tuple[State | PartitionedState | Violation, ...]:
    if type(state) is PartitionedState:
        return partitions.step(state, op, completion, core=step, outcomes=_outcomes, decided=decided)
    return _outcomes(step(state, op, completion))


def _outcomes(result: Result) -> tuple[State | Violation, ...]:
    """The states (or violation) one state's step leaves, each question decided."""
    if type(result) is Either:
        return tuple(decide(branch) for branch in result.states)
    return (decide(result),)


def step_decided(state: State, op: o.Op, completion: o.Completion) -> State | Violation:
    """One state's step with the solver's answer to its question: what a single-state driver (the
    model target, the trace generator) uses. Of an op's open effects it keeps the first (the op
    took effect)."""
    return _stepped(state, op, completion, decided=True)[0]


def check_nothing_lost(verdict: Verdict) -> Verdict:
    """After every connected consumer was drained: no message that had to come may still be waiting
    (model.checks.check_no_loss). If some possible state has nothing owed, the observation is
    allowed; else the violation names what the state with the fewest owed messages misses."""
    if verdict.violation is not None:
        return verdict
    found = []
    for state in verdict.states:
        violation, owed = _per_partition(state, check_no_loss, lambda part: len(owed_messages(part)))
        if violation is None:
            return verdict
        found.append((owed, violation))
    return Verdict(states=frozenset(), violation=min(found, key=_rank)[1])


def _per_partition(state: State | PartitionedState, check, rank) -> tuple[Violation | None, int]:
    """`check` of a topic's state, or of every partition's states (a partition passes if one of its
    states does; the first violation, in program terms, and the ranks summed): a partitioned topic
    has lost nothing only if no partition has."""
    if type(state) is not PartitionedState:
        violation = check(state)
        return violation, (rank(state) if violation is not None else 0)
    first, total = None, 0
    for p, part in enumerate(state.parts):
        found = []
        for each in part:
            violation = check(each)
            if violation is None:
                break
            found.append((rank(each), violation))
        else:
            least = min(found, key=_rank)
            first = first or partitions.in_program_terms(state, p, least[1])
            total += least[0]
    return first, total


def _rank(found: tuple[int, Violation]) -> int:
    return found[0]


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
    nothing: what is still owed must fit in the idle consumers' receiver queues
    (model.checks.check_receiver_queue, on every possible state).

    The broker dispatches to a consumer only while it has flow permits, which its client grants up
    to receiver_queue_size; it counts permits in messages but sends whole entries, and it turns
    permits into entries with the consumer's average messages per entry, which starts at 0 (taken
    as 1). So a batch overshoots: an idle consumer's queue keeps one whole batch entry of 3 for
    sizes 1 and 2 (shown by suites/model/test_fidelity_broker.py::
    test_an_idle_shared_consumer_keeps_only_its_receiver_queue), and a consumer subscribing to
    redeliveries may take two entries of 3 at once with 3 permits (shown by
    test_a_consumer_given_redeliveries_may_take_more_than_one_batch_past_its_receiver_queue there,
    and by the stored broker history suites/replay/histories/
    broker-fresh-consumer-takes-queue-size-entries.receiver_queue-Shared-queue-3).
    The sound bound is in entries (KD-15): an idle consumer holds at most
    receiver_queue_size entries (a zero-queue consumer one message: a receive that timed out may
    still be waiting for it). Stale copies in a queue only take room: the bound is what may be
    missing at most.
    """
    if verdict.violation is not None:
        return verdict
    found = []
    for state in verdict.states:
        violation, missing = _per_partition(state, lambda part: check_receiver_queue(part, drained),
                                            lambda part: _beyond_queues(part, drained))
        if violation is None:
            return verdict
        found.append((missing, violation))
    return Verdict(states=frozenset(), violation=min(found, key=_rank)[1])


def _beyond_queues(state: State, drained: frozenset[str]) -> int:
    idle = sum(1 for c in state.connected() if c.name not in drained)
    return len({m.entry for m in owed_messages(state)}) - idle * queue_room(state)
