"""The cursor's guarantees, proved by one-step induction (model/smt/induction.py) over its Z3
encoding (model/smt/cursor.py).

The inductive invariant is the cursor's normal form (`smt.cursor.normalized`), the model's rule
that markDeletePosition, the individually deleted ranges and the batch indexes are kept settled
after every ack (model/cursor.py, `ManagedCursorImpl`; the acks and the cursor's transitions in
model/transitions/acks.py, unload, restart, crash and seek in model/transitions/reopen.py). Each
property is a `CursorProperty`, of every step or of every normalized cursor, and supports one
guarantee (model/smt/catalog.py says which):

- `cursor`: the holes are in normal form, the cursor reads as acknowledged exactly what the acks
  specify, markDeletePosition moves back only by a seek or a crash, a cumulative ack acknowledges
  everything up to it, the broker's backlog counts the unacknowledged entries;
- `no-redelivery-after-ack`: an unload or graceful restart keeps every acknowledged entry;
- `no-loss`: an unacknowledged entry stays so until an ack or a seek names it, and every rewind,
  unload, crash and seek reads again from at or before it.

An op's encoding is a parameter of every proof (a table op -> relation), so a deliberately wrong
encoding can be passed to the same proof function: Z3 then returns a concrete counterexample
(`Refuted`), decoded into the model's own `model.cursor.Cursor` values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import z3

from model import cursor as cur
from model.smt import cursor as sc
from model.smt.induction import ProofResult, Refuted, conclude, integer
from model.smt.solver import DEFAULT_RLIMIT, Decision, SolverOutcome, Unknown, decide, make_solver

BACKLOG_BOUND = 12  # the backlog proof counts entries one by one: it covers topics of up to this many


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorCounterexample:
    """A step from a normalized cursor (or the initial one) where the property or the invariant fails."""

    check: str  # "init", "safety" (the property) or "transition" (the invariant)
    op: sc.CursorOp | None
    entries: int
    batch_sizes: tuple[tuple[int, int], ...]  # (entry, size) of batch entries
    entry: int
    index: int
    floor: cur.Cursor | None
    before: cur.Cursor | None
    after: cur.Cursor

    def describe(self) -> str:
        args = {sc.CursorOp.ACKNOWLEDGE_BATCH_INDEX: f"({self.entry}.{self.index})",
                sc.CursorOp.CRASH: f"(floor {cur.describe(self.floor)})" if self.floor else "()",
                sc.CursorOp.REWIND: "()", sc.CursorOp.UNLOAD: "()"}
        step = "initial" if self.op is None else f"{self.op}{args.get(self.op, f'({self.entry})')}"
        before = "" if self.before is None else f"{cur.describe(self.before)} -> "
        return f"{self.check} fails on {self.entries} entries: {step}: {before}{cur.describe(self.after)}"


StepProperty = Callable[[sc.CursorOp, sc.Topic, sc.SymCursor, sc.Args, sc.SymCursor], z3.BoolRef]
StateProperty = Callable[[sc.Topic, sc.SymCursor], z3.BoolRef]


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorProperty:
    """A guarantee of the cursor: of each step of `ops` (`step`), and/or of every normalized
    cursor (`state`), on the topics `assume` allows."""

    name: str
    ops: tuple[sc.CursorOp, ...] = tuple(sc.CursorOp)
    step: StepProperty | None = None
    state: StateProperty | None = None
    assume: Callable[[sc.Topic], z3.BoolRef] = lambda topic: z3.BoolVal(True)


def _positions(topic: sc.Topic, holds: Callable[[z3.ArithRef], z3.BoolRef]) -> z3.BoolRef:
    return topic.every_position(lambda e: z3.Implies(z3.And(0 <= e, e < topic.entries), holds(e)))


def acked_as_specified(op: sc.CursorOp, topic: sc.Topic, before: sc.SymCursor, args: sc.Args,
                       after: sc.SymCursor) -> z3.BoolRef:
    """The cursor's reading (<= markDelete or in a hole) is exactly the acked set the op specifies."""
    was = lambda e: sc.acknowledged(before, e)  # noqa: E731
    now = lambda e: sc.acknowledged(after, e)  # noqa: E731
    p = args.entry
    match op:
        case sc.CursorOp.ACKNOWLEDGE:
            return _positions(topic, lambda e: now(e) == z3.Or(was(e), e == p))
        case sc.CursorOp.ACKNOWLEDGE_CUMULATIVE:
            return _positions(topic, lambda e: now(e) == z3.Or(was(e), e <= p))
        case sc.CursorOp.ACKNOWLEDGE_BATCH_INDEX:
            complete = sc.batch_complete(topic, before, args)
            return _positions(topic, lambda e: now(e) == z3.Or(was(e), z3.And(e == p, complete)))
        case sc.CursorOp.RESET:
            return _positions(topic, lambda e: now(e) == (e < p))
        case sc.CursorOp.CRASH:
            return _positions(topic, lambda e: z3.And(z3.Implies(sc.acknowledged(args.floor, e), now(e)),
                                                      z3.Implies(now(e), was(e))))
        case _:
            return _positions(topic, lambda e: now(e) == was(e))


def mark_delete_moves_back_only_by_seek_and_crash(op: sc.CursorOp, topic: sc.Topic, before: sc.SymCursor,
                                                  args: sc.Args, after: sc.SymCursor) -> z3.BoolRef:
    match op:
        case sc.CursorOp.RESET:
            return after.mark_delete == args.entry - 1
        case sc.CursorOp.CRASH:
            return after.mark_delete >= args.floor.mark_delete
        case _:
            return after.mark_delete >= before.mark_delete


def cumulative_acks_everything_up_to_it(op: sc.CursorOp, topic: sc.Topic, before: sc.SymCursor, args: sc.Args,
                                        after: sc.SymCursor) -> z3.BoolRef:
    return _positions(topic, lambda e: z3.Implies(e <= args.entry, sc.acknowledged(after, e)))


def acked_stays_acked(op: sc.CursorOp, topic: sc.Topic, before: sc.SymCursor, args: sc.Args,
                      after: sc.SymCursor) -> z3.BoolRef:
    return z3.And(_positions(topic, lambda e: z3.Implies(sc.acknowledged(before, e), sc.acknowledged(after, e))),
                  after.read_position == after.mark_delete + 1)


def acknowledged_by(op: sc.CursorOp, args: sc.Args, entry: z3.ArithRef) -> z3.BoolRef:
    """Whether the op names `entry` as one to acknowledge (an ack of it, a cumulative ack at or
    after it, a seek past it); a batch-index ack names the batch entry."""
    match op:
        case sc.CursorOp.ACKNOWLEDGE | sc.CursorOp.ACKNOWLEDGE_BATCH_INDEX:
            return entry == args.entry
        case sc.CursorOp.ACKNOWLEDGE_CUMULATIVE:
            return entry <= args.entry
        case sc.CursorOp.RESET:
            return entry < args.entry
        case _:
            return z3.BoolVal(False)


REREADS = frozenset({sc.CursorOp.REWIND, sc.CursorOp.UNLOAD, sc.CursorOp.CRASH, sc.CursorOp.RESET})


def unacked_read_again(op: sc.CursorOp, topic: sc.Topic, before: sc.SymCursor, args: sc.Args,
                       after: sc.SymCursor) -> z3.BoolRef:
    """An unacknowledged entry stays unacknowledged unless the op names it; after an op from which
    the dispatcher reads again (`REREADS`), the read position is at or before every unacknowledged
    entry."""
    kept = _positions(topic, lambda e: z3.Implies(z3.And(z3.Not(sc.acknowledged(before, e)),
                                                         z3.Not(acknowledged_by(op, args, e))),
                                                  z3.Not(sc.acknowledged(after, e))))
    if op not in REREADS:
        return kept
    return z3.And(kept, _positions(topic, lambda e: z3.Implies(z3.Not(sc.acknowledged(after, e)),
                                                               after.read_position <= e)))


def _count(bound: int, holds: Callable[[int], z3.BoolRef]) -> z3.ArithRef:
    return z3.Sum([z3.If(holds(e), 1, 0) for e in range(bound)])


def broker_backlog(topic: sc.Topic, cursor: sc.SymCursor, *, bound: int = BACKLOG_BOUND) -> z3.ArithRef:
    """The broker's way (`getNumberOfEntriesInBacklog`): entries after markDelete minus the entries
    of the individually deleted ranges."""
    deleted = _count(bound, lambda e: z3.And(e < topic.entries, cursor.deleted[e]))
    return topic.entries - (cursor.mark_delete + 1) - deleted


def backlog_counts_unacked(topic: sc.Topic, cursor: sc.SymCursor) -> z3.BoolRef:
    unacked = _count(BACKLOG_BOUND, lambda e: z3.And(e < topic.entries, z3.Not(sc.acknowledged(cursor, e))))
    return broker_backlog(topic, cursor) == unacked


HOLES_NORMALIZED = CursorProperty(name="holes_normalized", state=lambda topic, c: sc.normalized(topic, c))
ACKED_EXACTLY = CursorProperty(name="acked_exactly", step=acked_as_specified)
MARK_DELETE_MONOTONE = CursorProperty(name="mark_delete_monotone", step=mark_delete_moves_back_only_by_seek_and_crash)
CUMULATIVE_ACKS_PREFIX = CursorProperty(name="cumulative_acks_prefix", ops=(sc.CursorOp.ACKNOWLEDGE_CUMULATIVE,),
                                        step=cumulative_acks_everything_up_to_it)
BACKLOG = CursorProperty(name="backlog", state=backlog_counts_unacked,
                         assume=lambda topic: topic.entries <= BACKLOG_BOUND)
ACKED_SURVIVES_UNLOAD = CursorProperty(name="acked_survives_unload", ops=(sc.CursorOp.UNLOAD,), step=acked_stays_acked)
UNACKED_READ_AGAIN = CursorProperty(name="unacked_read_again", step=unacked_read_again)


COUNTEREXAMPLE_BOUND = 8  # entries of the bounded, quantifier-free search when Z3 cannot decide the general query


@dataclass(frozen=True, slots=True, kw_only=True)
class _Frame:
    """The symbols of one step query."""

    topic: sc.Topic
    before: sc.SymCursor
    after: sc.SymCursor
    args: sc.Args


def _frame(bound: int | None) -> _Frame:
    return _Frame(topic=sc.fresh_topic(bound=bound), before=sc.fresh_cursor("before"), after=sc.fresh_cursor("after"),
                  args=sc.fresh_args())


Hypotheses = Callable[[_Frame], list[z3.BoolRef]]
Goal = Callable[[_Frame], z3.BoolRef]


def _readable(solver: z3.Solver, model: z3.ModelRef, frame: _Frame) -> z3.ModelRef:
    """A model with few entries and read positions right after markDelete, when there is one."""
    preferences = (frame.topic.entries <= COUNTEREXAMPLE_BOUND,
                   frame.before.read_position <= frame.before.mark_delete + 1,
                   frame.args.floor.read_position <= frame.args.floor.mark_delete + 1)
    for wanted in (preferences, preferences[:1]):
        solver.push()
        solver.add(*wanted)
        smaller = decide(solver)
        solver.pop()
        if smaller.outcome is SolverOutcome.SAT:
            return smaller.model
    return model


def _cursor_counterexample(model: z3.ModelRef, check: str, op: sc.CursorOp | None, frame: _Frame,
                           stepped: bool) -> CursorCounterexample:
    topic = frame.topic
    entries = min(integer(model, topic.entries), 64)
    read = lambda c: sc.decode(model, c, entries=entries, max_batch=topic.max_batch)  # noqa: E731
    sizes = tuple((e, size) for e in range(entries) if (size := integer(model, topic.batch_size(e))) != 1)
    return CursorCounterexample(check=check, op=op, entries=entries, batch_sizes=sizes,
                                entry=integer(model, frame.args.entry), index=integer(model, frame.args.index),
                                floor=read(frame.args.floor) if op is sc.CursorOp.CRASH else None,
                                before=read(frame.before) if stepped else None, after=read(frame.after))


def _cursor_query(prop: CursorProperty, hypotheses: Hypotheses, goal: Goal, check: str, op: sc.CursorOp | None,
                  rlimit: int, bounds: tuple[int | None, ...]) -> ProofResult | None:
    """None when the hypotheses imply the goal; else a counterexample or the reason Z3 gave up.

    Asked first of every topic size (quantified); if Z3 cannot decide that, a counterexample is
    searched for among topics of up to COUNTEREXAMPLE_BOUND entries (quantifier-free). The
    quantified search may answer with a topic of any size, and it cannot always be made to shrink
    one: a counterexample on more entries than that is kept only when the bounded search finds
    none (the decoded one shows at most 64 entries, and what breaks may lie beyond them)."""
    reason, large = "", None
    for bound in bounds:
        frame = _frame(bound)
        solver = make_solver(rlimit=rlimit)
        solver.add(sc.well_formed_topic(frame.topic), prop.assume(frame.topic), *hypotheses(frame),
                   z3.Not(goal(frame)))
        decision = decide(solver)
        if decision.outcome is SolverOutcome.SAT:
            model = _readable(solver, decision.model, frame)
            refuted = Refuted(property=prop.name, counterexample=_cursor_counterexample(
                model, check, op, frame, stepped=op is not None))
            if bound is not None or integer(model, frame.topic.entries) <= COUNTEREXAMPLE_BOUND:
                return refuted
            large = large or refuted
            continue
        if decision.outcome is SolverOutcome.UNSAT and bound is None:
            return None
        reason += f"; up to {bound} entries: no counterexample" if decision.outcome is SolverOutcome.UNSAT else (
            f"; {decision.reason}" if reason else str(decision.reason))
    return large or Unknown(reason=f"{prop.name}, {check} of {op or 'the initial state'}: {reason}")


def prove_cursor(prop: CursorProperty, *, transitions: Mapping[sc.CursorOp, sc.Transition] = sc.TRANSITIONS,
                 rlimit: int = DEFAULT_RLIMIT, bounds: tuple[int | None, ...] = (None, COUNTEREXAMPLE_BOUND)) -> ProofResult:
    """Prove `prop` of the cursor encoded by `transitions`, by one-step induction on the normal form.

    init: the initial cursor is normalized (and satisfies the state property); safety: a normalized
    cursor satisfies the state property, and every step from one satisfies the step property;
    transition: every step from a normalized cursor gives a normalized cursor. A step whose
    hypotheses no state satisfies would prove anything: a witness state is required to take it.
    When the invariant breaks, a step that breaks the state property itself is looked for first, so
    that a refutation shows the property failing wherever it can.

    `bounds` are the topic sizes asked, in order: None is every size (the proof); an int is the
    bounded counterexample search (a proof only when None comes first and answers).
    """
    safe = prop.state or (lambda topic, cursor: z3.BoolVal(True))

    def checks() -> Iterator[ProofResult | None]:
        initial: Hypotheses = lambda f: [sc.initial(f.after)]  # noqa: E731
        yield _cursor_query(prop, initial, lambda f: z3.And(sc.normalized(f.topic, f.after), safe(f.topic, f.after)),
                            "init", None, rlimit, bounds)
        if prop.state is not None:
            yield _cursor_query(prop, lambda f: [sc.normalized(f.topic, f.after)], lambda f: safe(f.topic, f.after),
                                "safety", None, rlimit, bounds)
        for op in prop.ops:
            yield from _step_checks(prop, op, transitions, rlimit, bounds)

    return conclude(prop.name, checks())


# A normalized cursor every op can step from: markDelete 0, a hole at 2, batch entry 3 half acked.
WITNESS = cur.Cursor(mark_delete=0, individually_deleted=((1, 2),), batch_deleted=((3, frozenset({0})),),
                     read_position=1)
WITNESS_TOPIC = {"entries": 5, "batch_sizes": {3: 2}}


def non_vacuous(prop: CursorProperty, op: sc.CursorOp, transitions: Mapping[sc.CursorOp, sc.Transition], *,
                rlimit: int = DEFAULT_RLIMIT) -> Decision:
    """Whether the step's hypotheses hold of at least one concrete state (`WITNESS`): a proof whose
    hypotheses nothing satisfies would prove anything."""
    topic = sc.concrete_topic(**WITNESS_TOPIC)
    before = sc.constant(WITNESS)
    args = sc.concrete_args(entry=3, index=1, floor=cur.Cursor(mark_delete=0, read_position=1))
    solver = make_solver(rlimit=rlimit)
    solver.add(sc.well_formed_topic(topic), prop.assume(topic), sc.normalized(topic, before),
               sc.transition(op, topic, before, args, sc.fresh_cursor("witness.after"), transitions=transitions))
    return decide(solver)


def _step_checks(prop: CursorProperty, op: sc.CursorOp, transitions: Mapping[sc.CursorOp, sc.Transition],
                 rlimit: int, bounds: tuple[int | None, ...]) -> Iterator[ProofResult | None]:
    witness = non_vacuous(prop, op, transitions, rlimit=rlimit)
    if witness.outcome is not SolverOutcome.SAT:
        vacuous = witness.outcome is SolverOutcome.UNSAT
        reason = "vacuous: the witness cursor cannot take this step" if vacuous else witness.reason
        yield Unknown(reason=f"{prop.name}, {op}: {reason}")

    def step(f: _Frame) -> list[z3.BoolRef]:
        return [sc.normalized(f.topic, f.before),
                sc.transition(op, f.topic, f.before, f.args, f.after, transitions=transitions)]

    if prop.step is not None:
        yield _cursor_query(prop, step, lambda f: prop.step(op, f.topic, f.before, f.args, f.after), "safety", op,
                            rlimit, bounds)
    broken = _cursor_query(prop, step, lambda f: sc.normalized(f.topic, f.after), "transition", op, rlimit, bounds)
    if broken is not None and prop.state is not None:
        unsafe = _cursor_query(prop, step, lambda f: prop.state(f.topic, f.after), "safety", op, rlimit, bounds)
        if isinstance(unsafe, Refuted):
            yield unsafe
    yield broken


def prove_holes_normalized(**options) -> ProofResult:
    """Holes (maximal runs of deleted entries: disjoint and non-adjacent by construction) lie above
    markDelete without touching it; batch indexes and the read position are in normal form too."""
    return prove_cursor(HOLES_NORMALIZED, **options)


def prove_acked_exactly(**options) -> ProofResult:
    """An entry is acknowledged exactly when it is <= markDelete or inside a hole, where
    "acknowledged" is what each op specifies (ack adds the entry, seek keeps what is before it, ...)."""
    return prove_cursor(ACKED_EXACTLY, **options)


def prove_mark_delete_monotone(**options) -> ProofResult:
    """markDelete never moves back, except by a seek (to its target) and a crash (not below the floor)."""
    return prove_cursor(MARK_DELETE_MONOTONE, **options)


def prove_cumulative_acks_prefix(**options) -> ProofResult:
    return prove_cursor(CUMULATIVE_ACKS_PREFIX, **options)


def prove_backlog(**options) -> ProofResult:
    """The broker's backlog (entries after markDelete minus entries in holes) counts the unacked
    entries, on topics of up to BACKLOG_BOUND entries."""
    return prove_cursor(BACKLOG, **options)


def prove_acked_survives_unload(**options) -> ProofResult:
    """An unload or graceful restart keeps every acknowledged entry; reading starts at markDelete + 1."""
    return prove_cursor(ACKED_SURVIVES_UNLOAD, **options)


def prove_unacked_read_again(**options) -> ProofResult:
    """Nothing but an ack or a seek that names an unacknowledged entry acknowledges it, and every
    rewind, unload, crash and seek reads again from at or before it: the cursor's part of no-loss."""
    return prove_cursor(UNACKED_READ_AGAIN, **options)
