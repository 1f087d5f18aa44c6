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

from collections.abc import Callable, Iterator, Mapping
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
    """A step of one message's redelivery counter where the rule or the invariant fails."""

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

    def describe(self) -> str:
        return f"{self.property}: proved"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refuted:
    property: str
    counterexample: CursorCounterexample | MessageCounterexample

    def describe(self) -> str:
        return f"{self.property}: refuted, {self.counterexample.describe()}"


ProofResult = Proved | Refuted | Unknown


# -- the cursor ----------------------------------------------------------------------------------
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


COUNTEREXAMPLE_BOUND = 8  # entries of the bounded, quantifier-free search when Z3 cannot decide the general query


def _int(model: z3.ModelRef, term: z3.ArithRef) -> int:
    return model.eval(term, model_completion=True).as_long()


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
        if smaller.outcome is Outcome.SAT:
            return smaller.model
    return model


def _cursor_counterexample(model: z3.ModelRef, check: str, op: sc.CursorOp | None, frame: _Frame,
                           stepped: bool) -> CursorCounterexample:
    topic = frame.topic
    entries = min(_int(model, topic.entries), 64)
    read = lambda c: sc.decode(model, c, entries=entries, max_batch=topic.max_batch)  # noqa: E731
    sizes = tuple((e, size) for e in range(entries) if (size := _int(model, topic.batch_size(e))) != 1)
    return CursorCounterexample(check=check, op=op, entries=entries, batch_sizes=sizes,
                                entry=_int(model, frame.args.entry), index=_int(model, frame.args.index),
                                floor=read(frame.args.floor) if op is sc.CursorOp.CRASH else None,
                                before=read(frame.before) if stepped else None, after=read(frame.after))


def _cursor_query(prop: CursorProperty, hypotheses: Hypotheses, goal: Goal, check: str, op: sc.CursorOp | None,
                  rlimit: int, bounds: tuple[int | None, ...]) -> ProofResult | None:
    """None when the hypotheses imply the goal; else a counterexample or the reason Z3 gave up.

    Asked first of every topic size (quantified); if Z3 cannot decide that, a counterexample is
    searched for among topics of up to COUNTEREXAMPLE_BOUND entries (quantifier-free)."""
    reason = ""
    for bound in bounds:
        frame = _frame(bound)
        solver = make_solver(rlimit=rlimit)
        solver.add(sc.well_formed_topic(frame.topic), prop.assume(frame.topic), *hypotheses(frame),
                   z3.Not(goal(frame)))
        decision = decide(solver)
        if decision.outcome is Outcome.SAT:
            model = _readable(solver, decision.model, frame)
            return Refuted(property=prop.name, counterexample=_cursor_counterexample(
                model, check, op, frame, stepped=op is not None))
        if decision.outcome is Outcome.UNSAT and bound is None:
            return None
        reason += f"; up to {bound} entries: no counterexample" if decision.outcome is Outcome.UNSAT else (
            f"; {decision.reason}" if reason else str(decision.reason))
    return Unknown(reason=f"{prop.name}, {check} of {op or 'the initial state'}: {reason}")


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

    return _conclude(prop.name, checks())


def _conclude(name: str, checks: Iterator[ProofResult | None]) -> ProofResult:
    """The first refutation; else the first unknown (a later check may still refute); else proved."""
    unknown = None
    for result in checks:
        if isinstance(result, Refuted):
            return result
        if isinstance(result, Unknown) and unknown is None:
            unknown = result
    return unknown or Proved(property=name)


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
    if witness.outcome is not Outcome.SAT:
        reason = "vacuous: the witness cursor cannot take this step" if witness.outcome is Outcome.UNSAT else witness.reason
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


# -- a message's redelivery counter --------------------------------------------------------------
class Status(IntEnum):
    AVAILABLE = 0
    HELD = 1
    ACKED = 2


class RedeliveryOp(StrEnum):
    RECEIVE = "receive"  # delivered with a count inside [count_lo, count_hi]
    ACKNOWLEDGE = "acknowledge"
    REDELIVER = "redeliver"  # a redelivery of the held message is requested (nack, ack timeout, redeliver)
    REDELIVER_QUEUED = "redeliver_queued"  # redeliverUnacknowledgedMessages while it may sit in a receiver queue
    CLOSE = "close"  # its holder closes; another consumer remains
    CLOSE_LAST = "close_last"  # the last consumer closes: the dispatcher drops its redelivery tracker
    REOPEN = "reopen"  # topic unload, broker restart or crash
    SEEK = "seek"  # a seek to it or an earlier message


@dataclass(frozen=True, slots=True, kw_only=True)
class SymMessage:
    status: z3.ArithRef
    count_lo: z3.ArithRef
    count_hi: z3.ArithRef
    dead: z3.BoolRef  # produced to the dead-letter topic (and acknowledged)


@dataclass(frozen=True, slots=True, kw_only=True)
class SymConfig:
    tracked: z3.BoolRef  # Shared / Key_Shared: the broker's redelivery tracker exists
    limited: z3.BoolRef  # max_redeliver_count is set
    limit: z3.ArithRef
    delivered_count: z3.ArithRef  # the count a receive observes


MessageTransition = Callable[[SymConfig, SymMessage, SymMessage], z3.BoolRef]


def fresh_message(name: str) -> SymMessage:
    return SymMessage(status=z3.Int(f"{name}.status"), count_lo=z3.Int(f"{name}.countLo"),
                      count_hi=z3.Int(f"{name}.countHi"), dead=z3.Bool(f"{name}.dead"))


def fresh_config(name: str = "config") -> SymConfig:
    return SymConfig(tracked=z3.Bool(f"{name}.tracked"), limited=z3.Bool(f"{name}.limited"),
                     limit=z3.Int(f"{name}.maxRedeliverCount"), delivered_count=z3.Int(f"{name}.deliveredCount"))


def _same(before: SymMessage, after: SymMessage, *, status: z3.ArithRef | None = None, count_lo: z3.ArithRef | None = None,
          count_hi: z3.ArithRef | None = None, dead: z3.BoolRef | None = None) -> z3.BoolRef:
    return z3.And(after.status == (before.status if status is None else status),
                  after.count_lo == (before.count_lo if count_lo is None else count_lo),
                  after.count_hi == (before.count_hi if count_hi is None else count_hi),
                  after.dead == (before.dead if dead is None else dead))


def goes_to_dead_letter(config: SymConfig, message: SymMessage) -> z3.BoolRef:
    """step.py `_goes_to_dead_letter`: last delivered with count >= max (Shared/Key_Shared only)."""
    return z3.And(config.limited, config.tracked, message.count_hi >= config.limit)


def bump(config: SymConfig) -> z3.ArithRef:
    """How much a redelivery adds to the count: 1 with a redelivery tracker, else 0."""
    return z3.If(config.tracked, 1, 0)


def dead_lettered(before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """Produced to the dead-letter topic and acknowledged instead of redelivered."""
    return _same(before, after, status=z3.IntVal(Status.ACKED), dead=z3.BoolVal(True))


def back_available(before: SymMessage, after: SymMessage, *, bump: z3.ArithRef | int) -> z3.BoolRef:
    """Back for redelivery with the count `bump` higher."""
    return _same(before, after, status=z3.IntVal(Status.AVAILABLE), count_lo=before.count_lo + bump,
                 count_hi=before.count_hi + bump)


def receive(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    c = config.delivered_count
    return _same(before, after, status=z3.IntVal(Status.HELD), count_lo=c, count_hi=c)


def acknowledge_message(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    return _same(before, after, status=z3.IntVal(Status.ACKED))


def redeliver(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """step.py `_requested`: to the dead-letter topic (acked), or back with the count one higher
    (the model keeps it HELD until its window ends; here it is back at once)."""
    return z3.If(goes_to_dead_letter(config, before), dead_lettered(before, after),
                 back_available(before, after, bump=bump(config)))


def redeliver_queued(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """step.py `_redeliver` on an AVAILABLE message: on Shared it may be dispatched again, counted;
    once its count may have reached the limit, the client may dead-letter the queued copy unseen
    (acked, not certainly dead: it may still come, with a count within the limit)."""
    return z3.If(goes_to_dead_letter(config, before), _same(before, after, status=z3.IntVal(Status.ACKED)),
                 _same(before, after, count_hi=before.count_hi + bump(config)))


def close(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """step.py `_step_close`, observed on 4.0.7: back to the others with the count unchanged."""
    return _same(before, after, status=z3.IntVal(Status.AVAILABLE))


def close_last(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    status = z3.If(before.status == Status.HELD, Status.AVAILABLE, before.status)
    zero = z3.IntVal(0)
    return _same(before, after, status=status, count_lo=z3.If(config.tracked, zero, before.count_lo),
                 count_hi=z3.If(config.tracked, zero, before.count_hi))


def reopen(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """step.py `_step_reopen`: a new dispatcher, a new redelivery tracker."""
    return _same(before, after, count_lo=z3.IntVal(0), count_hi=z3.IntVal(0))


def seek(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """step.py `_step_seek`: available again, with a count anywhere from 0 to one more than before."""
    return _same(before, after, status=z3.IntVal(Status.AVAILABLE), count_lo=z3.IntVal(0),
                 count_hi=before.count_hi + 1)


MESSAGE_TRANSITIONS: Mapping[RedeliveryOp, MessageTransition] = {
    RedeliveryOp.RECEIVE: receive,
    RedeliveryOp.ACKNOWLEDGE: acknowledge_message,
    RedeliveryOp.REDELIVER: redeliver,
    RedeliveryOp.REDELIVER_QUEUED: redeliver_queued,
    RedeliveryOp.CLOSE: close,
    RedeliveryOp.CLOSE_LAST: close_last,
    RedeliveryOp.REOPEN: reopen,
    RedeliveryOp.SEEK: seek,
}


def message_precondition(op: RedeliveryOp, config: SymConfig, before: SymMessage) -> z3.BoolRef:
    """When the op can happen to the message (a receive of a count the model would reject is a violation)."""
    c = config.delivered_count
    match op:
        case RedeliveryOp.RECEIVE:
            return z3.And(before.status == Status.AVAILABLE, before.count_lo <= c, c <= before.count_hi,
                          z3.Implies(z3.Not(config.tracked), c == 0),
                          z3.Not(z3.And(config.tracked, config.limited, c > config.limit)))
        case RedeliveryOp.ACKNOWLEDGE | RedeliveryOp.REDELIVER | RedeliveryOp.CLOSE:
            return before.status == Status.HELD
        case RedeliveryOp.REDELIVER_QUEUED:
            return before.status == Status.AVAILABLE
        case RedeliveryOp.REOPEN:
            return before.status != Status.ACKED  # an acked message's count is never read again
        case RedeliveryOp.CLOSE_LAST | RedeliveryOp.SEEK:
            return z3.BoolVal(True)
    raise ValueError(f"unknown redelivery op {op!r}")


def counter_invariant(config: SymConfig, message: SymMessage) -> z3.BoolRef:
    """A held message's count is the one it was delivered with; untracked counts are 0."""
    return z3.And(0 <= message.status, message.status <= Status.ACKED, 0 <= message.count_lo,
                  message.count_lo <= message.count_hi,
                  z3.Implies(message.status == Status.HELD, message.count_lo == message.count_hi),
                  z3.Implies(z3.Not(config.tracked), message.count_lo == 0))


def message_initial(message: SymMessage) -> z3.BoolRef:
    return z3.And(message.status == Status.AVAILABLE, message.count_lo == 0, message.count_hi == 0,
                  z3.Not(message.dead))


def count_rule(op: RedeliveryOp, config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """count+1 on a redelivery (Shared/Key_Shared), unchanged on a close, 0 on a reset (last close,
    reopen; a seek may restart it), never lower otherwise; always 0 without a tracker."""
    count = before.count_lo
    untracked = z3.Implies(z3.Not(config.tracked), after.count_lo == 0)
    match op:
        case RedeliveryOp.REDELIVER:
            rule = z3.Implies(z3.And(config.tracked, after.status != Status.ACKED),
                              z3.And(after.count_lo == count + 1, after.count_hi == count + 1))
        case RedeliveryOp.CLOSE:
            rule = z3.And(after.count_lo == count, after.count_hi == before.count_hi)
        case RedeliveryOp.CLOSE_LAST:
            rule = z3.Implies(config.tracked, z3.And(after.count_lo == 0, after.count_hi == 0))
        case RedeliveryOp.REOPEN:
            rule = z3.And(after.count_lo == 0, after.count_hi == 0)
        case RedeliveryOp.SEEK:
            rule = after.count_lo == 0
        case _:
            rule = after.count_lo >= count
    return z3.And(rule, untracked)


def dead_letter_rule(op: RedeliveryOp, config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """A redelivery request sends the message to the dead-letter topic exactly when its count has
    reached max_redeliver_count on Shared/Key_Shared; nothing else does."""
    if op is RedeliveryOp.REDELIVER:
        due = z3.And(config.tracked, config.limited, before.count_lo >= config.limit)
        return z3.And(after.status == Status.ACKED, after.dead) == due
    return after.dead == before.dead


MessageProperty = Callable[[RedeliveryOp, SymConfig, SymMessage, SymMessage], z3.BoolRef]


def _state(model: z3.ModelRef, message: SymMessage) -> MessageState:
    status = _int(model, message.status)
    return MessageState(status=Status(status).name.lower() if 0 <= status <= 2 else str(status),
                        count_lo=_int(model, message.count_lo), count_hi=_int(model, message.count_hi),
                        dead=z3.is_true(model.eval(message.dead, model_completion=True)))


def _message_counterexample(model: z3.ModelRef, check: str, op: RedeliveryOp | None, config: SymConfig,
                            before: SymMessage | None, after: SymMessage) -> MessageCounterexample:
    limited = z3.is_true(model.eval(config.limited, model_completion=True))
    return MessageCounterexample(check=check, op=op, tracked=z3.is_true(model.eval(config.tracked, model_completion=True)),
                                 max_redeliver_count=_int(model, config.limit) if limited else None,
                                 delivered_count=_int(model, config.delivered_count),
                                 before=None if before is None else _state(model, before), after=_state(model, after))


def prove_message(name: str, rule: MessageProperty, *,
                  transitions: Mapping[RedeliveryOp, MessageTransition] = MESSAGE_TRANSITIONS,
                  rlimit: int = DEFAULT_RLIMIT) -> ProofResult:
    """Prove a step property of one message's redelivery counter, by one-step induction on
    `counter_invariant` (init / safety / transition)."""
    config, before, after = fresh_config(), fresh_message("before"), fresh_message("after")
    solver = make_solver(rlimit=rlimit)
    solver.add(z3.Implies(config.limited, config.limit >= 1))

    def check(goal: z3.BoolRef, label: str, op: RedeliveryOp | None, start: SymMessage | None) -> ProofResult | None:
        solver.push()
        solver.add(z3.Not(goal))
        decision = decide(solver)
        solver.pop()
        if decision.outcome is Outcome.UNKNOWN:
            return Unknown(reason=f"{name}, {label} of {op or 'the initial state'}: {decision.reason}")
        if decision.outcome is Outcome.UNSAT:
            return None
        return Refuted(property=name,
                       counterexample=_message_counterexample(decision.model, label, op, config, start, after))

    def checks() -> Iterator[ProofResult | None]:
        solver.push()
        solver.add(message_initial(after))
        yield check(counter_invariant(config, after), "init", None, None)
        solver.pop()
        for op in RedeliveryOp:
            solver.push()
            solver.add(counter_invariant(config, before), message_precondition(op, config, before),
                       transitions[op](config, before, after))
            if decide(solver).outcome is not Outcome.SAT:
                yield Unknown(reason=f"{name}, {op}: vacuous (no state can take this step) or undecided")
            yield check(rule(op, config, before, after), "safety", op, before)
            yield check(counter_invariant(config, after), "transition", op, before)
            solver.pop()

    return _conclude(name, checks())


def _message_constant(state: MessageState) -> SymMessage:
    return SymMessage(status=z3.IntVal(Status[state.status.upper()]), count_lo=z3.IntVal(state.count_lo),
                      count_hi=z3.IntVal(state.count_hi), dead=z3.BoolVal(state.dead))


def message_successors(op: RedeliveryOp, state: MessageState, *, tracked: bool, max_redeliver_count: int | None,
                       delivered_count: int = 0,
                       transitions: Mapping[RedeliveryOp, MessageTransition] = MESSAGE_TRANSITIONS,
                       rlimit: int = DEFAULT_RLIMIT) -> tuple[MessageState, ...] | Unknown:
    """Every state the encoded op may lead to from a concrete one (none: its precondition fails)."""
    config = SymConfig(tracked=z3.BoolVal(tracked), limited=z3.BoolVal(max_redeliver_count is not None),
                       limit=z3.IntVal(max_redeliver_count or 0), delivered_count=z3.IntVal(delivered_count))
    before, after = _message_constant(state), fresh_message("after")
    solver = make_solver(rlimit=rlimit)
    solver.add(message_precondition(op, config, before), transitions[op](config, before, after))
    found: list[MessageState] = []
    while True:
        decision = decide(solver)
        if decision.outcome is Outcome.UNKNOWN:
            return Unknown(reason=decision.reason or "unknown")
        if decision.outcome is Outcome.UNSAT:
            return tuple(found)
        result = _state(decision.model, after)
        found.append(result)
        solver.add(z3.Not(_same(_message_constant(result), after)))


def prove_redelivery_count(**options) -> ProofResult:
    return prove_message("redelivery_count", count_rule, **options)


def prove_dead_letter(**options) -> ProofResult:
    return prove_message("dead_letter", dead_letter_rule, **options)


PROOFS: Mapping[str, Callable[..., ProofResult]] = {
    "holes_normalized": prove_holes_normalized,
    "acked_exactly": prove_acked_exactly,
    "mark_delete_monotone": prove_mark_delete_monotone,
    "cumulative_acks_prefix": prove_cumulative_acks_prefix,
    "backlog": prove_backlog,
    "acked_survives_unload": prove_acked_survives_unload,
    "redelivery_count": prove_redelivery_count,
    "dead_letter": prove_dead_letter,
}


def prove_all(*, rlimit: int = DEFAULT_RLIMIT) -> dict[str, ProofResult]:
    return {name: prove(rlimit=rlimit) for name, prove in PROOFS.items()}
