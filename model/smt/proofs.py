"""One-step inductive proofs of the cursor's and the redelivery counter's guarantees.

Each proof has the shape init / transition / safety, never a deep unrolling (which blows up, see
research/baselines section 3b):

- init: the initial state satisfies the inductive invariant (and the property, for a property of
  states);
- for every op, from any state satisfying the invariant: the property holds of the step (`safety`)
  and the invariant holds after it (`transition`).

The invariant of the cursor is its normal form (`smt.cursor.normalized`); that of a message's
redelivery counter is `counter_invariant`. An op's encoding is a parameter of every proof (a table
op -> relation), so a deliberately wrong encoding can be passed to the same proof function: Z3 then
returns a concrete counterexample (`Refuted`), decoded into the model's own values.

The redelivery counter follows model/step.py: `_requested` (a redelivery request adds one, or sends
the message to the dead-letter topic when its count reached max_redeliver_count, Shared/Key_Shared
only), `_step_close` (observed on 4.0.7: the count is unchanged when the message moves to another
consumer; reset to 0 when the last consumer leaves), `_step_reopen` (reset to 0) and `_step_seek`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import z3

from model import cursor as cur
from model.smt import cursor as sc
from model.smt.solver import DEFAULT_RLIMIT, Decision, Outcome, Unknown, decide, make_solver

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


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageState:
    """One message's concrete redelivery state: status, the interval of counts its next delivery
    may carry, and whether it was produced to the dead-letter topic."""

    status: str
    count_lo: int
    count_hi: int
    dead: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageCounterexample:
    check: str
    op: RedeliveryOp | None
    tracked: bool  # Shared / Key_Shared
    max_redeliver_count: int | None
    delivered_count: int  # the count a receive observed (receive only)
    before: MessageState | None
    after: MessageState

    def describe(self) -> str:
        config = f"{'tracked' if self.tracked else 'untracked'}, max={self.max_redeliver_count}"
        step = "initial" if self.op is None else str(self.op)
        return f"{self.check} fails ({config}): {step}: {self.before} -> {self.after}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Proved:
    property: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Refuted:
    property: str
    counterexample: CursorCounterexample | MessageCounterexample


ProofResult = Proved | Refuted | Unknown


# -- the cursor ----------------------------------------------------------------------------------
StepProperty = Callable[[sc.CursorOp, sc.Topic, sc.SymCursor, sc.Args, sc.SymCursor], z3.BoolRef]
StateProperty = Callable[[sc.Topic, sc.SymCursor], z3.BoolRef]


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorProperty:
    name: str
    ops: tuple[sc.CursorOp, ...] = tuple(sc.CursorOp)
    step: StepProperty | None = None
    state: StateProperty | None = None
    assume: Callable[[sc.Topic], z3.BoolRef] = lambda topic: z3.BoolVal(True)


def _positions(topic: sc.Topic, holds: Callable[[z3.ArithRef], z3.BoolRef]) -> z3.BoolRef:
    e = sc.position()
    return z3.ForAll([e], z3.Implies(z3.And(0 <= e, e < topic.entries), holds(e)))


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


def _small(solver: z3.Solver, decision: Decision, size: z3.ArithRef, cap: int = 8) -> z3.ModelRef:
    """A model with at most `cap` entries when there is one (counterexamples read better small)."""
    solver.push()
    solver.add(size <= cap)
    smaller = decide(solver)
    solver.pop()
    return smaller.model if smaller.outcome is Outcome.SAT else decision.model


def _int(model: z3.ModelRef, term: z3.ArithRef) -> int:
    return model.eval(term, model_completion=True).as_long()


def _cursor_counterexample(model: z3.ModelRef, check: str, op: sc.CursorOp | None, topic: sc.Topic,
                           before: sc.SymCursor | None, args: sc.Args, after: sc.SymCursor) -> CursorCounterexample:
    entries = min(_int(model, topic.entries), 64)
    read = lambda c: sc.decode(model, c, entries=entries, max_batch=topic.max_batch)  # noqa: E731
    sizes = tuple((e, size) for e in range(entries) if (size := _int(model, topic.batch_sizes[e])) != 1)
    return CursorCounterexample(check=check, op=op, entries=entries, batch_sizes=sizes, entry=_int(model, args.entry),
                                index=_int(model, args.index),
                                floor=read(args.floor) if op is sc.CursorOp.CRASH else None,
                                before=None if before is None else read(before), after=read(after))


def prove_cursor(prop: CursorProperty, *, transitions: Mapping[sc.CursorOp, sc.Transition] = sc.TRANSITIONS,
                 rlimit: int = DEFAULT_RLIMIT) -> ProofResult:
    """Prove `prop` of the cursor encoded by `transitions`, by one-step induction on the normal form."""
    topic = sc.fresh_topic()
    before, after, args = sc.fresh_cursor("before"), sc.fresh_cursor("after"), sc.fresh_args()
    safe_state = prop.state or (lambda t, c: z3.BoolVal(True))
    solver = make_solver(rlimit=rlimit)
    solver.add(sc.well_formed_topic(topic), prop.assume(topic))

    def refuted(goal: z3.BoolRef, check: str, op: sc.CursorOp | None, start: sc.SymCursor | None) -> ProofResult | None:
        solver.push()
        solver.add(z3.Not(goal))
        decision = decide(solver)
        model = _small(solver, decision, topic.entries) if decision.outcome is Outcome.SAT else None
        solver.pop()
        if decision.outcome is Outcome.UNKNOWN:
            return Unknown(reason=f"{prop.name}, {check} of {op or 'init'}: {decision.reason}")
        if model is None:
            return None
        return Refuted(property=prop.name,
                       counterexample=_cursor_counterexample(model, check, op, topic, start, args, after))

    solver.push()
    solver.add(sc.initial(after))
    result = refuted(z3.And(sc.normalized(topic, after), safe_state(topic, after)), "init", None, None)
    solver.pop()
    if result is not None:
        return result
    for op in prop.ops:
        solver.push()
        solver.add(sc.normalized(topic, before), safe_state(topic, before),
                   sc.transition(op, topic, before, args, after, transitions=transitions))
        step = prop.step(op, topic, before, args, after) if prop.step else z3.BoolVal(True)
        result = (refuted(z3.And(step, safe_state(topic, after)), "safety", op, before)
                  or refuted(sc.normalized(topic, after), "transition", op, before))
        solver.pop()
        if result is not None:
            return result
    return Proved(property=prop.name)


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
