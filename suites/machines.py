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

How the next step is picked is suites/generation.py's: by default one Hypothesis rule draws the
kind by weight among those the example's swarm keeps and the model enables, then one of its ops
(a tick near a window's bound is one of them); with `generation.PLAIN` each kind is its own rule.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

from hypothesis import Phase, note, settings
from hypothesis.control import current_build_context
from hypothesis.errors import Flaky
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from fixtures import hypothesis_profiles  # noqa: F401  (the profiles, and draws that do not depend on imports)
from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.protocol import faults_performed, is_deterministic
from model import ops as o
from model.describe import describe_completion, describe_op
from model.faults import WINDOWS
from model.spec import Spec
from model.vocabulary import CANDIDATES, candidates
from reports.vocabulary import HARNESS_ERROR, kind_of_error
from suites import generation as gen
from suites.programs import DRAIN, DRAIN_OTHERS, Step, looks_at_cursor, perform, settle, take, tighten

ALL_KINDS = tuple(k for k in CANDIDATES if k not in ("restart", "crash"))


# Rules whose candidates depend on what the target delivered (which messages a consumer holds;
# a tick is offered while a window is open, e.g. after a nack of a message received).
OBSERVATION_DEPENDENT = ("acknowledge", "acknowledge_cumulative", "negative_acknowledge", "seek", "tick")


def conformance_machine(target, spec: Spec, program_ids, *, kinds=ALL_KINDS, drain_idle_ms: int = 300,
                        deterministic: bool = True, on_failure=None, generation: gen.Generation | None = None):
    """A machine class driving `target` (reset for every example) in lock-step with the model.

    Against a non-deterministic target (a real broker) a rule's precondition must not depend on
    what the target delivered: Hypothesis replays a program's choices to shrink it and insists that
    the same choices meet the same rules. There, the observation-dependent rules of the plain
    generation are always enabled and do nothing when the model offers no candidate; the swarm
    generation has one rule, always enabled, whose draws do not depend on the state (only what
    they pick does), and no boundary ticks (a real tick is a sleep, its landing a bound of the
    client's timers).
    """
    generation = generation or gen.current()
    base = _machine_base(target, spec, program_ids, drain_idle_ms, on_failure,
                         look_at_cursor=generation.last_look and looks_at_cursor(kinds))
    if generation.plain:
        return _per_kind_machine(base, kinds, deterministic)
    if not deterministic:
        generation = replace(generation, boundaries=False)
    return _swarm_machine(base, spec, kinds, generation)


def _machine_base(target, spec: Spec, program_ids, drain_idle_ms: int, on_failure, *, look_at_cursor: bool) -> type:
    class ConformanceMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            with _seen(on_failure):  # a driver may die in its reset
                self.run = Lockstep(target, spec, program_ids(), on_failure=on_failure)
            self._cached_for, self._cache = None, {}

        @property
        def state(self):
            return self.run.verdict.view

        def candidates(self, kind: str) -> tuple[o.Op, ...]:
            """The model's enabled ops of `kind`, computed once per state (preconditions ask often)."""
            state = self.state
            if self._cached_for is not state:
                self._cached_for, self._cache = state, {}
            if kind not in self._cache:
                self._cache[kind] = candidates(state, kind)
            return self._cache[kind]

        def perform(self, op: o.Op) -> None:
            with _seen(on_failure):
                op, completion = perform(self.run, op)
            if current_build_context().is_final:  # the story is only told for the shrunk example
                note(f"{describe_op(op)} -> {describe_completion(completion)}")

        def drain_all(self) -> None:
            """Receive on every consumer until idle: every message owed must have come."""
            self.run.begin(DRAIN)
            with _seen(on_failure):
                deliveries = self.run.drain(idle_ms=drain_idle_ms)
            if current_build_context().is_final:
                note(f"drain -> {', '.join(str(d.message) for d in deliveries) or 'nothing'}")

        def drain_all_but(self, idle: int) -> None:
            """Drain every consumer but one, which takes nothing meanwhile: what does not fit in
            its receiver queue must come to the others."""
            names = [op.consumer for op in self.candidates("receive")]
            left = names[idle % len(names)]
            before = len(self.run.history)
            with _seen(on_failure):
                take(self.run, Step(rule=DRAIN_OTHERS, idle=left), drain_idle_ms)
            deliveries = [c.value for _, c in self.run.history[before:] if isinstance(c.value, o.Delivery)]
            if current_build_context().is_final:
                note(f"drain all but {left} -> {', '.join(str(d.message) for d in deliveries) or 'nothing'}")

        def teardown(self) -> None:
            with _seen(on_failure):
                settle(self.run, drain_idle_ms, look_at_cursor=look_at_cursor)

    return ConformanceMachine


@contextmanager
def _seen(on_failure):
    """Hand a typed outcome raised inside (a client crash, a timeout, an unreachable broker:
    reports/vocabulary.py) to `on_failure` on its way out, as the lock-step run does with a broken
    guarantee: Hypothesis's replay may not raise it again."""
    try:
        yield
    except BaseException as error:
        if on_failure is not None and not isinstance(error, ConformanceFailure) \
                and kind_of_error(error) != HARNESS_ERROR:
            on_failure(error)
        raise


def _per_kind_machine(base: type, kinds: tuple[str, ...], deterministic: bool) -> type:
    """The plain generation: one rule per op kind, Hypothesis picks among the enabled ones."""

    class ConformanceMachine(base):
        @precondition(lambda self: bool(self.candidates("receive")))
        @rule()
        def drain(self) -> None:
            self.drain_all()

        if DRAIN_OTHERS in kinds:  # not an op: the check lists it among its kinds
            @precondition(lambda self: len(self.candidates("receive")) > 1)
            @rule(idle=st.integers(0, 255))
            def drain_others(self, idle: int) -> None:
                self.drain_all_but(idle)

    for kind in (k for k in kinds if k != DRAIN_OTHERS):
        _add_rule(ConformanceMachine, kind, guarded=deterministic or kind not in OBSERVATION_DEPENDENT)
    ConformanceMachine.__name__ = ConformanceMachine.__qualname__ = "ConformanceMachine"
    return ConformanceMachine


def _add_rule(machine: type, kind: str, *, guarded: bool) -> None:
    # An index into the model's candidates (not st.data()): as informative, shrinks towards the
    # first candidate, and about twice as fast per step.
    def perform_kind(self, choice: int) -> None:
        options = self.candidates(kind)
        if options:
            self.run.begin(kind)
            self.perform(options[choice % len(options)])

    perform_kind.__name__ = kind
    body = rule(choice=st.integers(0, 255))(perform_kind)
    setattr(machine, kind, precondition(lambda self: bool(self.candidates(kind)))(body) if guarded else body)


def _swarm_machine(base: type, spec: Spec, kinds: tuple[str, ...], generation: gen.Generation) -> type:
    """One rule: the kind drawn by weight (suites/generation.py) among those the example's swarm
    keeps and the model enables (the drain first: a ticket shrinks towards it), then one of its ops.
    Hypothesis's own swarm over rules has one rule to choose from, so it never leaves out the drain
    or the sends."""
    order = (DRAIN, "receive", "send", "subscribe") + tuple(k for k in kinds if k not in gen.ALWAYS)
    optional, knobs = gen.swarm_choices(order, spec)

    class ConformanceMachine(base):
        swarm = gen.Swarm()

        if generation.swarm:
            @initialize(left_out=st.lists(st.booleans(), min_size=len(optional) + len(knobs),
                                          max_size=len(optional) + len(knobs)))
            def leave_out(self, left_out: list[bool]) -> None:
                self.swarm = gen.swarm_of(left_out, optional, knobs)
                if current_build_context().is_final:
                    note(self.swarm.describe())

        def options(self, kind: str) -> tuple[o.Op, ...]:
            state = self.state
            if self._cached_for is not state:
                self._cached_for, self._cache = state, {}
            key = ("options", kind)
            if key not in self._cache:
                if kind == DRAIN:
                    found = self.candidates("receive")[:1]
                elif kind == DRAIN_OTHERS:
                    found = self.candidates("receive") if len(self.candidates("receive")) > 1 else ()
                    found = () if DRAIN_OTHERS in self.swarm.kinds else found
                else:
                    found = gen.options(state, kind, generation, self.swarm)
                self._cache[key] = found
            return self._cache[key]

        @rule(ticket=st.integers(0, gen.TICKETS - 1), choice=st.integers(0, 255))
        def step(self, ticket: int, choice: int) -> None:
            enabled = [k for k in order if self.options(k)]
            if not enabled:
                return
            state = self.state
            last = self.run.history[-1][0] if self.run.history else None
            kind = gen.pick([(k, gen.weight(state, k, last=last) if generation.weighted else 1)
                             for k in enabled], ticket)
            if kind == DRAIN:
                self.drain_all()
            elif kind == DRAIN_OTHERS:
                self.drain_all_but(choice)
            else:
                found = self.options(kind)
                self.run.begin(kind)
                self.perform(found[choice % len(found)])

    ConformanceMachine.__name__ = ConformanceMachine.__qualname__ = "ConformanceMachine"
    return ConformanceMachine


def run_conformance(target, spec: Spec, program_ids, *, kinds=ALL_KINDS, settings_: settings | None = None,
                    drain_idle_ms: int = 300) -> None:
    """Run the machine as a test: raises `ConformanceFailure` (shrunk) when the target breaks a guarantee.

    On a deterministic target the program Hypothesis shrank is shrunk once more as a program
    (`suites.programs.tighten`): Hypothesis cannot delete every step that does not matter.
    When Hypothesis's replay of a failing program does not fail again (Flaky), the first failure
    or typed outcome (a client crash, a timeout) seen is raised, the complaint as its cause."""
    # Only a target that says so is replayed as deterministic (the model and its faulty variants).
    deterministic = is_deterministic(target)
    kinds = performable(kinds, target)
    failures: list[BaseException] = []  # broken guarantees and typed outcomes, in the order seen
    machine = conformance_machine(target, spec, program_ids, kinds=kinds, drain_idle_ms=drain_idle_ms,
                                  deterministic=deterministic, on_failure=failures.append)
    chosen = program_length(settings_ or settings(), kinds, deterministic)
    try:
        run_state_machine_as_test(machine, settings=chosen)
    except ConformanceFailure as failure:
        # Hypothesis shrank the choices; on a deterministic target the program itself shrinks further.
        shorter = tighten(failure, target, spec, program_ids, drain_idle_ms=drain_idle_ms,
                          look_at_cursor=gen.current().last_look and looks_at_cursor(kinds)) \
            if deterministic and Phase.shrink in chosen.phases else failure
        if shorter is failure:
            raise
        raise shorter from None
    except Flaky as flaky:
        # A real broker need not fail the same way twice, nor a client crash twice (a fresh driver
        # takes the replay): when Hypothesis replays the failing program and it goes otherwise, the
        # failure first seen is the finding. A crash in the reset of a later program ends it before
        # its first draw: Hypothesis then raises a bare FlakyStrategyDefinition.
        if failures:
            raise failures[0] from flaky
        raise


# Steps a program has room for per kind of its check, on a deterministic target: at the ci
# profile's 25 steps a check of 12 kinds drew a partly acked batch, two redelivery requests, a close
# and a cursor read in one program too rarely to catch the dead-letter rules' mutants (1 to 5 runs
# in 200, against 10 with 50 steps: `python -m benchmarks.catch_rate --mutant`, BENCHMARKS.md).
STEPS_PER_KIND = 4


def program_length(chosen: settings, kinds: tuple[str, ...], deterministic: bool) -> settings:
    """The settings with room for every kind of the check in one program, on a deterministic target
    (its steps cost microseconds); a broker's programs keep their length (each step costs real time)."""
    room = STEPS_PER_KIND * len(kinds)
    if not deterministic or room <= chosen.stateful_step_count:
        return chosen
    return settings(chosen, stateful_step_count=room)


def performable(kinds: tuple[str, ...], target) -> tuple[str, ...]:
    """The kinds a program on `target` may use: a fault (model/faults.py) only if the target
    performs it (a client in process cannot be killed, nor can a broker that lives in its driver)."""
    performed = faults_performed(target)
    return tuple(k for k in kinds if k not in WINDOWS or k in performed)


def as_run(spec: Spec, target) -> Spec:
    """The spec naming the client that really runs it: the one a driver named in its handshake
    (the catalog's specs name the default, python-3.13), so that histories and reports say it,
    with what the driver declared its client does where clients differ (`seek_batch_index`,
    `seek_acks_skipped`)."""
    from drivers.wire import BEHAVIOURS
    from fixtures.targets.protocol import client_running, declares

    client = client_running(target)
    if not client:
        return spec
    behaviours = {field: declares(target, behaviour) for behaviour, field in BEHAVIOURS.items()}
    # Only a consumer of several topics has a multi-topics queue: the spec of one topic (and its
    # id in stored histories) stays as it was.
    behaviours["multi_topics_queue"] &= bool(spec.topics)
    return spec.with_(client=client, **behaviours)


def verify(check, spec: Spec, target, program_ids, target_name: str, config) -> None:
    """Run one catalog check on one spec: the body of every per-guarantee conformance test."""
    from fixtures.hypothesis_profiles import settings_for

    spec = as_run(spec, target)

    import allure

    allure.dynamic.feature(check.area)
    try:
        deterministic = is_deterministic(target)
        run_conformance(target, spec, program_ids, kinds=check.kinds,
                        settings_=settings_for(target, config, slow=check.slow),
                        drain_idle_ms=30 if deterministic else 1000)
    except ConformanceFailure as failure:
        attach_failure(failure, target)
        raise
    except BaseExceptionGroup as group:  # Hypothesis reports a flaky replay around the real failure
        failures = [e for e in _leaves(group) if isinstance(e, ConformanceFailure)]
        if failures:
            attach_failure(failures[0], target)
        raise


def _leaves(group: BaseExceptionGroup):
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            yield from _leaves(error)
        else:
            yield error


def attach_failure(failure: ConformanceFailure, target) -> None:
    """The guarantee, the runnable reproduction, the history and the cursor snapshots, on allure."""
    import allure

    from model import cursor as cur
    from model.history import event_of, to_json_line

    allure.dynamic.story(failure.violation.guarantee.value)
    allure.dynamic.label("guarantee", failure.violation.guarantee.value)
    allure.attach(failure.source, name="reproduction.py", attachment_type=allure.attachment_type.TEXT)
    history = "\n".join(to_json_line(event_of("failure", failure.spec, i, op, c))
                        for i, (op, c) in enumerate(failure.history))
    allure.attach(history, name="history.jsonl", attachment_type=allure.attachment_type.JSON)
    snapshots = [f"step {i}: {cur.describe_read(c.value)}" for i, (op, c) in enumerate(failure.history)
                 if isinstance(op, o.ReadCursor) and c.value]
    truth = target.ground_truth()
    snapshots.append(f"after the failure: {cur.describe(truth) if truth is not None else 'no cursor'}")
    allure.attach("\n".join(snapshots), name="cursor snapshots", attachment_type=allure.attachment_type.TEXT)
