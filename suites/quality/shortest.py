"""The shortest program that shows a fault: exhaustive search over the machine's own vocabulary.

The yardstick for the suite's shrinking (issue 4: "the shrunk program at most 2 steps longer than
the shortest one that shows the fault"). A program is what the conformance machine
(suites/machines.py) runs: a sequence of rule steps, each one concrete op of a check's kinds as the
model's vocabulary offers it (`model.vocabulary.candidates`, computed on the same model state the
machine asks), or a `drain`; then the machine's teardown (a tick for open redelivery windows and a
last drain). It shows the fault when it raises a `ConformanceFailure` naming the same guarantee.

Uniform-cost search, so the first failing program popped is a shortest one, in either unit:

- `rules`: Hypothesis rule steps (a drain is one step; the teardown is not a step);
- `ops`: ops the reproduction performs (each receive of a drain and of the teardown counts), the
  length of the failure's history.

Programs that reach the same state (the faulty target's state and hidden fields, and the model's
set of possible states) are one node: what follows depends on nothing else (nodes are told apart
by a 64-bit hash of that; a collision, about one chance in 10^7 for a million states, would hide
some programs). The search tries every program up to a cost bound, unless a node budget runs out
first (`complete` is False): then it only says that no program cheaper than `lower_bound` shows
the fault.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import random
from dataclasses import dataclass

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from model.guarantees import Guarantee
from model.spec import Spec
from model.vocabulary import candidates
from suites.programs import DRAIN, DRAIN_OTHERS, Step, looks_at_cursor, settle, take


@dataclass(frozen=True, slots=True, kw_only=True)
class Shortest:
    unit: str  # "rules" or "ops"
    length: int | None  # None: nothing found within the bound
    program: tuple[Step, ...]  # the shortest failing program found (empty if none)
    failure: ConformanceFailure | None
    complete: bool  # every program up to the bound was tried (False: the node budget ran out first)
    lower_bound: int  # no program cheaper than this shows the fault
    nodes: int


def shortest(target_factory, spec: Spec, kinds: tuple[str, ...], guarantee: Guarantee, *, unit: str = "ops",
             bound: int = 30, max_nodes: int = 50_000, drain_idle_ms: int = 30) -> Shortest:
    """The cheapest program over `kinds` (plus drain) whose run breaks `guarantee` on the target."""
    if unit not in ("rules", "ops"):
        raise ValueError(f"unknown unit {unit!r}")
    order = itertools.count()

    def replayed(program: tuple[Step, ...]) -> Lockstep:
        # Programs, not runs, wait in the heap: a run holds a whole target (and its Random).
        run = Lockstep(target_factory(), spec, "shortest")
        for step in program:
            take(run, step, drain_idle_ms)
        return run

    # Heap entries: (cost, tiebreak, program, failure); failure set = a finished failing program.
    heap: list = [(0, next(order), (), None)]
    cheapest: dict[int, int] = {_fingerprint(replayed(())): 0}  # the lowest cost each state was reached at
    nodes = 0
    while heap:
        cost, _, program, failure = heapq.heappop(heap)
        if failure is not None:
            return Shortest(unit=unit, length=cost, program=program, failure=failure, complete=True,
                            lower_bound=cost, nodes=nodes)
        if cost > bound:
            break
        if nodes >= max_nodes:
            return Shortest(unit=unit, length=None, program=(), failure=None, complete=False,
                            lower_bound=cost, nodes=nodes)
        run = replayed(program)
        if cheapest[_fingerprint(run)] < cost:
            continue  # reached more cheaply since this entry was pushed
        nodes += 1
        ending = _fork(run)
        try:
            settle(ending, drain_idle_ms, look_at_cursor=looks_at_cursor(kinds))
        except ConformanceFailure as caught:
            if caught.violation.guarantee is guarantee:
                heapq.heappush(heap, (_cost(unit, program, caught), next(order), program, caught))
        for step in _steps(run, kinds):
            child = _fork(run)
            try:
                take(child, step, drain_idle_ms)
            except ConformanceFailure as caught:
                if caught.violation.guarantee is guarantee:
                    failing = program + (step,)
                    heapq.heappush(heap, (_cost(unit, failing, caught), next(order), failing, caught))
                continue  # a program that fails otherwise stops there
            added = 1 if unit == "rules" else len(child.history) - len(run.history)
            key = _fingerprint(child)
            if cheapest.get(key, cost + added + 1) <= cost + added:
                continue
            cheapest[key] = cost + added
            heapq.heappush(heap, (cost + added, next(order), program + (step,), None))
    return Shortest(unit=unit, length=None, program=(), failure=None, complete=True, lower_bound=bound + 1,
                    nodes=nodes)


def _cost(unit: str, program: tuple[Step, ...], failure: ConformanceFailure) -> int:
    """A failing program's length: its rule steps, or the ops of its history up to the failure."""
    return len(program) if unit == "rules" else len(failure.history)


def _steps(run: Lockstep, kinds: tuple[str, ...]):
    """Every rule step the machine could take next: the candidates of its kinds, a drain, and (when
    the check lists it) a drain of every consumer but one, for each one left idle."""
    state = next(iter(run.verdict.states))
    for kind in kinds:
        if kind == DRAIN_OTHERS:
            continue
        for op in candidates(state, kind):
            yield Step(rule=kind, op=op)
    receivers = [op.consumer for op in candidates(state, "receive")]
    if receivers:
        yield Step(rule=DRAIN)
    if DRAIN_OTHERS in kinds and len(receivers) > 1:
        for idle in receivers:
            yield Step(rule=DRAIN_OTHERS, idle=idle)


def _fork(run: Lockstep) -> Lockstep:
    """An independent copy: states are frozen values, so only the mutable shells are copied."""
    target = copy.copy(run.target)
    for name, value in vars(target).items():
        if isinstance(value, (set, list, dict)):
            setattr(target, name, copy.copy(value))
    target.rng = random.Random()
    target.rng.setstate(run.target.rng.getstate())
    forked = copy.copy(run)
    forked.target = target
    forked.history = list(run.history)
    forked.steps = list(run.steps)
    return forked


def _fingerprint(run: Lockstep) -> int:
    """What the rest of a program depends on: the target's state and hidden fields, the model's
    states; kept as their hash (64 bits), so that a search of a million states fits in memory."""
    hidden = tuple(sorted((name, frozenset(value) if isinstance(value, set) else value)
                          for name, value in vars(run.target).items() if name not in ("state", "rng", "seed")))
    return hash((run.target.state, run.verdict.states, hidden))
