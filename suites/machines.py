"""Stateful Hypothesis machines generated from the model's op vocabulary and preconditions.

`conformance_machine` builds a `RuleBasedStateMachine` with one rule per op kind of
`model.vocabulary` (restricted to the kinds a suite is about). A rule is enabled exactly when the
model's precondition offers at least one concrete op of its kind, and it draws one of them, so
programs only name messages a consumer received and consumers that are connected. (Received
messages are drawn from the model's state rather than from a Hypothesis bundle: whether a message
can still be acked depends on what happened since it was received, e.g. its consumer's close,
which a bundle cannot know.) Every step runs in lock-step with the model; the first observation
it does not allow fails the example with the broken guarantee, the story of the history, and a
runnable reproduction. A `drain` rule and the teardown check that nothing owed was lost.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from fixtures.targets.lockstep import Lockstep
from model import ops as o
from model.describe import describe_completion, describe_op
from model.simulate import pick_delivery
from model.spec import Spec
from model.state import Status
from model.vocabulary import CANDIDATES, candidates

ALL_KINDS = tuple(k for k in CANDIDATES if k not in ("restart", "crash"))
SLOW_RECEIVE_MS = 300  # a message the model says is there: wait for it
FAST_RECEIVE_MS = 10  # nothing is owed: a short look is enough


def conformance_machine(target, spec: Spec, program_ids, *, kinds=ALL_KINDS, drain_idle_ms: int = 300):
    """A machine class driving `target` (reset for every example) in lock-step with the model."""

    class ConformanceMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.run = Lockstep(target, spec, program_ids())

        @property
        def state(self):
            return next(iter(self.run.verdict.states))

        def perform(self, op: o.Op) -> None:
            if isinstance(op, o.Receive):
                expected = pick_delivery(self.state, op.consumer) is not None
                op = replace(op, timeout_ms=SLOW_RECEIVE_MS if expected else FAST_RECEIVE_MS)
            completion = self.run.do(op)
            note(f"{describe_op(op)} -> {describe_completion(completion)}")

        @precondition(lambda self: bool(self.state.connected()))
        @rule()
        def drain(self) -> None:
            """Receive on every consumer until idle: every message owed must have come."""
            deliveries = self.run.drain(idle_ms=drain_idle_ms)
            note(f"drain -> {', '.join(str(d.message) for d in deliveries) or 'nothing'}")

        def teardown(self) -> None:
            """Let every open redelivery window close, then drain: nothing owed may be missing."""
            if self.run.verdict.ok and self.state.connected():
                waits = [m.back_by - self.state.now for m in self.state.messages
                         if m.status is Status.HELD and m.back_by is not None]
                if waits:
                    self.perform(o.Tick(ms=max(waits) + 20))
                self.run.drain(idle_ms=drain_idle_ms)

    for kind in kinds:
        _add_rule(ConformanceMachine, kind)
    ConformanceMachine.__name__ = ConformanceMachine.__qualname__ = "ConformanceMachine"
    return ConformanceMachine


def _add_rule(machine: type, kind: str) -> None:
    def perform_kind(self, data) -> None:
        self.perform(data.draw(st.sampled_from(candidates(self.state, kind)), label=kind))

    perform_kind.__name__ = kind
    enabled = precondition(lambda self: bool(candidates(self.state, kind)))
    setattr(machine, kind, enabled(rule(data=st.data())(perform_kind)))


def run_conformance(target, spec: Spec, program_ids, *, kinds=ALL_KINDS, settings_: settings | None = None,
                    drain_idle_ms: int = 300) -> None:
    """Run the machine as a test: raises `ConformanceFailure` (shrunk) when the target breaks a guarantee."""
    machine = conformance_machine(target, spec, program_ids, kinds=kinds, drain_idle_ms=drain_idle_ms)
    run_state_machine_as_test(machine, settings=settings_ or settings())
