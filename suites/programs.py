"""Programs as the conformance machine runs them, and a last shrinking pass over them.

A program is a sequence of rule steps (suites/machines.py): one concrete op of a kind, offered by
the model's vocabulary (`model.vocabulary.candidates`) in the state it is taken in, or a `drain`;
after the last step the machine's teardown runs (`settle`). A failure's `steps` and `history` give
its program back.

Hypothesis shrinks the choices that generate a program, not the program: a step it cannot delete
without changing how later rule choices decode (a rule's choice depends on which rules were enabled)
stays. Against a deterministic target the program itself can be shrunk: `tighten` deletes steps,
turns a drain into the receives that delivered something, and tries the other candidates of a step's
kind, keeping a change only when the program still fails with the same guarantee and performs fewer
ops (then fewer steps). Every kept program is run for real; its failure is what is reported.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from model import ops as o
from model.simulate import pick_delivery
from model.spec import Spec
from model.state import Status
from model.vocabulary import CONSUMER_NAMES, boundary_ticks, candidates

DRAIN = "drain"
# Drain every consumer but one (`Step.idle`), which takes nothing meanwhile: what does not fit in
# its receiver queue must come to the others (Shared flow permits, model.nondet.check_receiver_queues).
# Its mark in a history's steps is "drain_others:<idle consumer>".
DRAIN_OTHERS = "drain_others"
TEARDOWN = "teardown"
MAX_RUNS = 400  # programs tried by one `tighten`: it stops with the best so far
SLOW_RECEIVE_MS = 300  # a message the model says is there: wait for it
FAST_RECEIVE_MS = 10  # nothing is owed: a short look is enough


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One rule step of a program: a concrete op of a kind, or a drain (op None; `idle`: the
    consumer a drain_others leaves out)."""

    rule: str
    op: o.Op | None = None
    idle: str | None = None

    def __str__(self) -> str:
        if self.rule == DRAIN_OTHERS:
            return f"{DRAIN_OTHERS}(idle={self.idle!r})"
        return self.rule if self.op is None else repr(self.op)

    @property
    def mark(self) -> str:
        """The name the step is marked with in a history's steps."""
        return f"{DRAIN_OTHERS}:{self.idle}" if self.rule == DRAIN_OTHERS else self.rule


class NotAProgram(Exception):
    """A step's op is not one the machine could take there (the model does not offer it)."""


def steps_of(failure: ConformanceFailure) -> tuple[Step, ...]:
    """The rule steps of a failure's program (its teardown is not a step)."""
    marks = list(failure.steps) + [(TEARDOWN, len(failure.history))]
    steps = []
    for (rule, start), (_, end) in itertools.pairwise(marks):
        if rule == TEARDOWN:
            break
        if rule == DRAIN:
            steps.append(Step(rule=DRAIN))
        elif rule.startswith(DRAIN_OTHERS + ":"):
            steps.append(Step(rule=DRAIN_OTHERS, idle=rule.split(":", 1)[1]))
        elif end > start:
            op = failure.history[start][0]
            steps.append(Step(rule=rule, op=_untimed(op)))
    return tuple(steps)


def perform(run: Lockstep, op: o.Op) -> tuple[o.Op, o.Completion]:
    """One op of a rule: a receive waits long only when the model says a message is there."""
    if isinstance(op, o.Receive):
        expected = pick_delivery(run.verdict.view, op.consumer) is not None
        op = replace(op, timeout_ms=SLOW_RECEIVE_MS if expected else FAST_RECEIVE_MS)
    return op, run.do(op)


def settle(run: Lockstep, drain_idle_ms: int, *, look_at_cursor: bool = False) -> None:
    """The machine's teardown: let every open redelivery window close, then drain: nothing owed
    may be missing. A program whose client crashed and that has no consumer since subscribes one
    first: what the crashed client held must come back to the next client. `look_at_cursor` (a
    check that reads the cursor): then every consumer closes and the cursor is read once more
    (`last_look`)."""
    state = run.verdict.view if run.verdict.ok else None
    if state is None:
        return
    crashed = any(isinstance(op, o.CrashClient) for op, _ in run.history)
    if state.connected() or crashed:
        run.begin(TEARDOWN)
        if not state.connected():
            perform(run, o.Subscribe(consumer=CONSUMER_NAMES[0]))
            state = run.verdict.view
        waits = [m.redelivery_by - state.now for m in state.messages
                 if m.status is Status.HELD and m.redelivery_by is not None]
        waits += [state.paused_until - state.now] if state.paused_until > state.now else []
        if waits:
            perform(run, o.Tick(ms=max(waits) + 20))
        run.drain(idle_ms=drain_idle_ms)
    elif look_at_cursor:
        run.begin(TEARDOWN)
    if look_at_cursor:
        last_look(run)


def looks_at_cursor(kinds) -> bool:
    """Whether a program of these kinds ends with a last look at the cursor (`last_look`): those of
    a check that reads the cursor."""
    return "read_cursor" in kinds


# Under a dead-letter policy, how long the teardown waits before its closes: a copy past the limit
# that reached a client in the drain is on its way to the dead-letter topic, and a close inside
# that send crashes the C++ client (KD-34) or drops the send's ack (KD-35). Longer than the ack
# grouping time as well.
BEFORE_LAST_CLOSES_MS = 200


def last_look(run: Lockstep) -> None:
    """Every consumer closes, which flushes the acks its client grouped, and the broker's cursor is
    read: every ack the program made that its client did not drop must be in it. A read in the
    program can only bound the acks still grouped; this one sees each of them arrive or not (a
    batch index's ack forgotten by its client, an ack a flush lost), and is the only read of a
    program that ends before its own."""
    if run.verdict.view.spec.max_redeliver_count is not None and run.connected():
        perform(run, o.Tick(ms=BEFORE_LAST_CLOSES_MS))
    for consumer in run.connected():
        perform(run, o.Close(consumer=consumer))
    perform(run, o.ReadCursor())


def take(run: Lockstep, step: Step, drain_idle_ms: int, *, checked: bool = False) -> None:
    """Take one step as the machine does (`checked`: refuse an op the model does not offer)."""
    if checked and step.op is not None and step.op not in offered(run.verdict.view, step.rule):
        raise NotAProgram(step)
    receivers = [op.consumer for op in candidates(run.verdict.view, "receive")]
    if checked and step.op is None and not receivers:
        raise NotAProgram(step)
    if checked and step.rule == DRAIN_OTHERS and (len(receivers) < 2 or step.idle not in receivers):
        raise NotAProgram(step)
    run.begin(step.mark)
    if step.rule == DRAIN_OTHERS:
        run.drain(*(name for name in receivers if name != step.idle), idle_ms=drain_idle_ms)
    elif step.op is None:
        run.drain(idle_ms=drain_idle_ms)
    else:
        perform(run, step.op)


def offered(state, kind: str) -> tuple[o.Op, ...]:
    """The ops of `kind` a machine may take in `state`: the vocabulary's candidates, and for a tick
    also those landing beside a window's bound (suites/generation.py)."""
    found = candidates(state, kind)
    return boundary_ticks(state) + found if kind == "tick" and found else found


def run_program(target, spec: Spec, program_id: str, steps: tuple[Step, ...], *, drain_idle_ms: int = 30,
                look_at_cursor: bool = False) -> None:
    """Run a program as the machine would, teardown included: raises its `ConformanceFailure`, or
    `NotAProgram` when a step is not one the machine could take."""
    run = Lockstep(target, spec, program_id)
    for step in steps:
        take(run, step, drain_idle_ms, checked=True)
    settle(run, drain_idle_ms, look_at_cursor=look_at_cursor)


def tighten(failure: ConformanceFailure, target, spec: Spec, program_ids, *, drain_idle_ms: int = 30,
            max_runs: int = MAX_RUNS, look_at_cursor: bool = False) -> ConformanceFailure:
    """A shorter program failing the same way on a deterministic target, or `failure` itself."""
    guarantee = failure.violation.guarantee
    best, program, runs = failure, steps_of(failure), 0

    def attempt(steps: tuple[Step, ...]) -> ConformanceFailure | None:
        nonlocal runs
        runs += 1
        try:
            run_program(target, spec, program_ids(), steps, drain_idle_ms=drain_idle_ms, look_at_cursor=look_at_cursor)
        except ConformanceFailure as caught:
            if caught.violation.guarantee is guarantee and _size(caught) < _size(best):
                return caught
        except NotAProgram:
            pass
        return None

    improved = True
    while improved and runs < max_runs:
        improved = False
        for variant in _variants(program, best):
            if runs >= max_runs:
                break
            caught = attempt(variant)
            if caught is not None:
                best, program, improved = caught, steps_of(caught), True
                break
    return best


def _size(failure: ConformanceFailure) -> tuple[int, int]:
    return len(failure.history), sum(1 for rule, _ in failure.steps if rule != TEARDOWN)


def _variants(program: tuple[Step, ...], failure: ConformanceFailure):
    """Smaller neighbours of a program: a step deleted, a drain turned into its delivering
    receives, a step's op replaced by another candidate of its kind (last steps first)."""
    for i in reversed(range(len(program))):
        yield program[:i] + program[i + 1:]
    for i, step in enumerate(program):
        if step.rule in (DRAIN, DRAIN_OTHERS):
            yield program[:i] + _receives_of_drain(failure, i) + program[i + 1:]
    states = _states_before_steps(failure)
    for i, step in enumerate(program):
        if step.op is not None and i < len(states):
            for other in offered(states[i], step.rule):
                if other != step.op:
                    yield program[:i] + (Step(rule=step.rule, op=other),) + program[i + 1:]


def _receives_of_drain(failure: ConformanceFailure, index: int) -> tuple[Step, ...]:
    """The receives of the `index`-th step (a drain) that delivered a message, as receive steps."""
    marks = [m for m in failure.steps if m[0] != TEARDOWN] + [(TEARDOWN, len(failure.history))]
    start, end = marks[index][1], marks[index + 1][1]
    return tuple(Step(rule="receive", op=_untimed(op)) for op, completion in failure.history[start:end]
                 if isinstance(completion.value, o.Delivery))


def _states_before_steps(failure: ConformanceFailure) -> list:
    """The model state the machine asked for candidates before each step (replayed from the history)."""
    from model.nondet import apply, start

    verdict, states, marks = start(failure.spec), [], iter(failure.steps)
    mark = next(marks, None)
    for i, (op, completion) in enumerate(failure.history):
        while mark is not None and mark[1] == i:
            if mark[0] != TEARDOWN:
                states.append(verdict.view)
            mark = next(marks, None)
        verdict = apply(verdict, op, completion)
    return states


def _untimed(op: o.Op) -> o.Op:
    """A receive as the vocabulary offers it: the machine sets its timeout when it performs it."""
    if isinstance(op, o.Receive):
        return o.Receive(consumer=op.consumer)
    return op
