"""The broker's cursor (model/cursor.py, after `ManagedCursorImpl`) as a Z3 transition relation.

A symbolic cursor is four terms: markDeletePosition (Int), the individually deleted entries (an
Array Int -> Bool whose maximal runs are the ranges of `individuallyDeletedMessages`), the batch
indexes acked on partly acked batch entries (an Array (Int, Int) -> Bool, `batchDeletedIndexes`)
and the read position (Int). Positions are entry numbers 0 .. entries-1 of a `Topic` whose size is
a symbolic Int, so a fact proved over these terms holds for every topic size: the properties are
stated with quantifiers over positions, never by expanding them one by one.

Each op is a relation `(topic, before, args, after) -> Bool`, one function per op, with the same
rules as model/cursor.py: an ack, individual or cumulative, is followed by `settle` (markDelete
advances over the contiguous deleted entries; deleted entries and batch indexes at or below it are
dropped); a reset (seek) is the only deterministic move of markDelete backwards; an unload or a
graceful restart keeps everything and reads again from markDelete + 1; a crash comes back at any
normalized state whose acknowledged set lies between the persisted floor and the state before it.

`successors` and `apply` evaluate an encoded op on a concrete `model.cursor.Cursor`: the bridge the
fidelity tests use to check the encoding against the Python model. The proofs over this encoding
(model/smt/cursor_proofs.py) support the guarantees `cursor`, `no-redelivery-after-ack` and
`no-loss`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

import z3

from model import cursor as cur
from model.smt.solver import DEFAULT_RLIMIT, SolverOutcome, Unknown, decide, make_solver

MAX_BATCH = 4  # messages per batch entry the encoding allows (batch indexes 0 .. MAX_BATCH-1)


class CursorOp(StrEnum):
    ACKNOWLEDGE = "acknowledge"  # individual ack of `entry` (asyncDelete)
    ACKNOWLEDGE_CUMULATIVE = "acknowledge_cumulative"  # cumulative ack of `entry` (asyncMarkDelete)
    ACKNOWLEDGE_BATCH_INDEX = "acknowledge_batch_index"  # ack of message `index` of batch entry `entry`
    REWIND = "rewind"  # read again from markDelete + 1 (redelivery on Exclusive/Failover)
    RESET = "reset"  # seek / reset-cursor to `entry`
    UNLOAD = "unload"  # topic unload or graceful broker restart
    CRASH = "crash"  # broker killed: back at some state between `floor` and now


@dataclass(frozen=True, slots=True, kw_only=True)
class Topic:
    """What the cursor is over: `entries` published entries, `batch_sizes[e]` messages in entry e.

    With `bound` None, facts about all positions are quantified (they hold for every topic size).
    With a bound, the topic has at most `bound` entries and those facts are expanded over the
    positions around them: quantifier-free, so Z3 always finds a counterexample when there is one
    that small (model search with quantifiers may give up).
    """

    entries: z3.ArithRef
    batch_sizes: z3.ArrayRef  # Int -> Int, read through `batch_size` (clamped to 1 .. max_batch)
    max_batch: int = MAX_BATCH
    bound: int | None = None

    def batch_size(self, entry: z3.ArithRef) -> z3.ArithRef:
        """Messages in `entry` (1 when it is not a batch). Clamped rather than constrained by a
        quantifier: a quantified bound on an array stalls Z3's model search (counterexamples)."""
        raw = self.batch_sizes[entry]
        return z3.If(raw < 1, 1, z3.If(raw > self.max_batch, self.max_batch, raw))

    def every_position(self, holds: Callable[[z3.ArithRef], z3.BoolRef]) -> z3.BoolRef:
        """`holds(e)` for every position e (every Int; with a bound, -2 .. bound+1)."""
        if self.bound is None:
            e = position()
            return z3.ForAll([e], holds(e))
        return z3.And([holds(z3.IntVal(e)) for e in range(-2, self.bound + 2)])

    def every_index(self, holds: Callable[[z3.ArithRef, z3.ArithRef], z3.BoolRef]) -> z3.BoolRef:
        """`holds(e, i)` for every position e and batch index i."""
        if self.bound is None:
            e, i = position(), position("i")
            return z3.ForAll([e, i], holds(e, i))
        return z3.And([holds(z3.IntVal(e), z3.IntVal(i)) for e in range(-2, self.bound + 2)
                       for i in range(-1, self.max_batch + 1)])


@dataclass(frozen=True, slots=True, kw_only=True)
class SymCursor:
    mark_delete: z3.ArithRef
    deleted: z3.ArrayRef  # Int -> Bool: individually deleted entries
    batch: z3.ArrayRef  # (Int, Int) -> Bool: acked batch indexes of partly acked entries
    read_position: z3.ArithRef


@dataclass(frozen=True, slots=True, kw_only=True)
class Args:
    """An op's arguments; each op reads the ones it needs (`floor` only for a crash)."""

    entry: z3.ArithRef
    index: z3.ArithRef
    floor: SymCursor


Transition = Callable[[Topic, SymCursor, Args, SymCursor], z3.BoolRef]


# -- building blocks -----------------------------------------------------------------------------
def fresh_cursor(name: str) -> SymCursor:
    return SymCursor(mark_delete=z3.Int(f"{name}.markDelete"),
                     deleted=z3.Array(f"{name}.deleted", z3.IntSort(), z3.BoolSort()),
                     batch=z3.Array(f"{name}.batch", z3.IntSort(), z3.IntSort(), z3.BoolSort()),
                     read_position=z3.Int(f"{name}.read"))


def fresh_topic(name: str = "topic", *, max_batch: int = MAX_BATCH, bound: int | None = None) -> Topic:
    return Topic(entries=z3.Int(f"{name}.entries"), batch_sizes=z3.Array(f"{name}.batchSize", z3.IntSort(), z3.IntSort()),
                 max_batch=max_batch, bound=bound)


def fresh_args(name: str = "arg") -> Args:
    return Args(entry=z3.Int(f"{name}.entry"), index=z3.Int(f"{name}.index"), floor=fresh_cursor(f"{name}.floor"))


def position(name: str = "e") -> z3.ArithRef:
    """A bound variable over positions (for quantifiers and lambdas)."""
    return z3.Int(name)


def acknowledged(cursor: SymCursor, entry: z3.ArithRef) -> z3.BoolRef:
    """The cursor's reading of an entry: at or below markDelete, or individually deleted."""
    return z3.Or(entry <= cursor.mark_delete, cursor.deleted[entry])


def well_formed_topic(topic: Topic) -> z3.BoolRef:
    if topic.bound is None:
        return topic.entries >= 0
    return z3.And(topic.entries >= 0, topic.entries <= topic.bound)


def holes_normalized(topic: Topic, cursor: SymCursor) -> z3.BoolRef:
    """Holes in normal form, stated on this representation: the ranges are the maximal runs of
    deleted entries, so they are disjoint and non-adjacent by construction; what is left to hold is
    that every deleted entry lies above markDelete + 1 (no range touches markDelete, else it would
    have advanced) and among the published entries, and that markDelete is -1 or published."""
    return z3.And(-1 <= cursor.mark_delete, cursor.mark_delete < topic.entries, topic.every_position(
        lambda e: z3.Implies(cursor.deleted[e], z3.And(cursor.mark_delete + 1 < e, e < topic.entries))))


def batch_normalized(topic: Topic, cursor: SymCursor) -> z3.BoolRef:
    """Batch indexes only for published entries that are not acknowledged, within the entry's
    batch, and never all of them (the entry is deleted when its last index is acked)."""
    indexes = range(topic.max_batch)
    return z3.And(
        topic.every_index(lambda e, i: z3.Implies(cursor.batch[e, i], z3.And(
            0 <= e, e < topic.entries, z3.Not(acknowledged(cursor, e)), 0 <= i, i < topic.batch_size(e)))),
        topic.every_position(lambda e: z3.Implies(
            z3.Or([cursor.batch[e, j] for j in indexes]),
            z3.Or([z3.And(j < topic.batch_size(e), z3.Not(cursor.batch[e, j])) for j in indexes]))))


def normalized(topic: Topic, cursor: SymCursor) -> z3.BoolRef:
    """The cursor's normal form (model/cursor.py `normalization_violations` is empty)."""
    return z3.And(holes_normalized(topic, cursor), batch_normalized(topic, cursor),
                  cursor.mark_delete < cursor.read_position)


def initial(cursor: SymCursor) -> z3.BoolRef:
    """A new subscription at the earliest position."""
    e, i = position(), position("i")
    return z3.And(cursor.mark_delete == -1, cursor.read_position == 0,
                  cursor.deleted == z3.Lambda([e], z3.BoolVal(False)),
                  cursor.batch == z3.Lambda([e, i], z3.BoolVal(False)))


def unchanged(before: SymCursor, after: SymCursor, *, read_position: z3.ArithRef | None = None) -> z3.BoolRef:
    return z3.And(after.mark_delete == before.mark_delete, after.deleted == before.deleted, after.batch == before.batch,
                  after.read_position == (before.read_position if read_position is None else read_position))


def settle(topic: Topic, mark_delete: z3.ArithRef, deleted: z3.ArrayRef, batch: z3.ArrayRef, read_position: z3.ArithRef,
           after: SymCursor) -> z3.BoolRef:
    """`from_acknowledged`: markDelete advances while the next entry is deleted; deleted entries and
    batch indexes of entries at or below it (or deleted) are dropped; the read position is at least
    markDelete + 1."""
    e, i = position(), position("i")
    md = after.mark_delete
    return z3.And(
        md >= mark_delete,
        topic.every_position(lambda p: z3.Implies(z3.And(mark_delete < p, p <= md), deleted[p])),
        z3.Not(deleted[md + 1]),
        after.deleted == z3.Lambda([e], z3.And(deleted[e], e > md)),
        after.batch == z3.Lambda([e, i], z3.And(batch[e, i], e > md, z3.Not(deleted[e]))),
        after.read_position == z3.If(read_position > md + 1, read_position, md + 1))


# -- one relation per op -------------------------------------------------------------------------
def acknowledge(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    return settle(topic, before.mark_delete, z3.Store(before.deleted, args.entry, True), before.batch,
                  before.read_position, after)


def acknowledge_cumulative(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    target = z3.If(args.entry > before.mark_delete, args.entry, before.mark_delete)
    return settle(topic, target, before.deleted, before.batch, before.read_position, after)


def batch_complete(topic: Topic, before: SymCursor, args: Args) -> z3.BoolRef:
    """Acking `index` completes the batch: every other index of the entry is acked already."""
    return z3.And([z3.Implies(j < topic.batch_size(args.entry), z3.Or(args.index == j, before.batch[args.entry, j]))
                   for j in range(topic.max_batch)])


def acknowledge_batch_index(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    e, i = position(), position("i")
    entry, index = args.entry, args.index
    without_entry = z3.Lambda([e, i], z3.And(before.batch[e, i], e != entry))
    partly = z3.And(after.mark_delete == before.mark_delete, after.deleted == before.deleted,
                    after.batch == z3.Store(before.batch, entry, index, True),
                    after.read_position == before.read_position)
    return z3.If(acknowledged(before, entry), unchanged(before, after),
                 z3.If(batch_complete(topic, before, args),
                       settle(topic, before.mark_delete, z3.Store(before.deleted, entry, True), without_entry,
                              before.read_position, after),
                       partly))


def rewind(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    return unchanged(before, after, read_position=before.mark_delete + 1)


def reset(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    e, i = position(), position("i")
    return z3.And(after.mark_delete == args.entry - 1, after.read_position == args.entry,
                  after.deleted == z3.Lambda([e], z3.BoolVal(False)),
                  after.batch == z3.Lambda([e, i], z3.BoolVal(False)))


def unload(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    """What was persisted is kept; the new dispatcher reads from markDelete + 1 (the model's unload rule)."""
    return rewind(topic, before, args, after)


def crash(topic: Topic, before: SymCursor, args: Args, after: SymCursor) -> z3.BoolRef:
    """Any normalized state between the persisted floor and the state before the crash."""
    floor = args.floor
    return z3.And(
        normalized(topic, after), after.read_position == after.mark_delete + 1,
        topic.every_position(lambda e: z3.And(z3.Implies(acknowledged(floor, e), acknowledged(after, e)),
                                              z3.Implies(acknowledged(after, e), acknowledged(before, e)))),
        topic.every_index(lambda e, i: z3.And(
            z3.Implies(z3.And(floor.batch[e, i], z3.Not(acknowledged(after, e))), after.batch[e, i]),
            z3.Implies(after.batch[e, i], z3.Or(before.batch[e, i], acknowledged(before, e))))))


TRANSITIONS: Mapping[CursorOp, Transition] = {
    CursorOp.ACKNOWLEDGE: acknowledge,
    CursorOp.ACKNOWLEDGE_CUMULATIVE: acknowledge_cumulative,
    CursorOp.ACKNOWLEDGE_BATCH_INDEX: acknowledge_batch_index,
    CursorOp.REWIND: rewind,
    CursorOp.RESET: reset,
    CursorOp.UNLOAD: unload,
    CursorOp.CRASH: crash,
}


def precondition(op: CursorOp, topic: Topic, before: SymCursor, args: Args) -> z3.BoolRef:
    """What the op's arguments must satisfy (the Python functions accept more; the broker does not)."""
    entry = args.entry
    match op:
        case CursorOp.ACKNOWLEDGE:
            return z3.And(0 <= entry, entry < topic.entries)
        case CursorOp.ACKNOWLEDGE_CUMULATIVE:
            return z3.And(-1 <= entry, entry < topic.entries)
        case CursorOp.ACKNOWLEDGE_BATCH_INDEX:
            return z3.And(0 <= entry, entry < topic.entries, 0 <= args.index, args.index < topic.batch_size(entry))
        case CursorOp.RESET:
            return z3.And(0 <= entry, entry <= topic.entries)
        case CursorOp.CRASH:
            floor = args.floor
            return z3.And(normalized(topic, floor),
                          topic.every_position(lambda e: z3.Implies(acknowledged(floor, e), acknowledged(before, e))),
                          topic.every_index(lambda e, i: z3.Implies(floor.batch[e, i],
                                                                    z3.Or(before.batch[e, i], acknowledged(before, e)))))
        case CursorOp.REWIND | CursorOp.UNLOAD:
            return z3.BoolVal(True)
    raise ValueError(f"unknown cursor op {op!r}")


def transition(op: CursorOp, topic: Topic, before: SymCursor, args: Args, after: SymCursor, *,
               transitions: Mapping[CursorOp, Transition] = TRANSITIONS) -> z3.BoolRef:
    """The op's precondition and its effect, as encoded in `transitions` (a wrong table to refute)."""
    return z3.And(precondition(op, topic, before, args), transitions[op](topic, before, args, after))


# -- concrete cursors in and out -----------------------------------------------------------------
def constant(cursor: cur.Cursor) -> SymCursor:
    """A concrete cursor as Z3 values (exactly as it is, normalized or not)."""
    e, i = position(), position("i")
    deleted = z3.Or([z3.And(lower < e, e <= upper) for lower, upper in cursor.individually_deleted])
    batch = z3.Or([z3.And(e == entry, z3.Or([i == index for index in sorted(indexes)]))
                   for entry, indexes in cursor.batch_deleted])
    return SymCursor(mark_delete=z3.IntVal(cursor.mark_delete), deleted=z3.Lambda([e], deleted),
                     batch=z3.Lambda([e, i], batch), read_position=z3.IntVal(cursor.read_position))


def concrete_topic(entries: int, batch_sizes: Mapping[int, int] | None = None, *, max_batch: int = MAX_BATCH) -> Topic:
    """A topic of `entries` entries; `batch_sizes` gives the batch entries' sizes (others are 1)."""
    e = position()
    sizes = z3.IntVal(1)
    for entry, size in sorted((batch_sizes or {}).items()):
        sizes = z3.If(e == entry, size, sizes)
    return Topic(entries=z3.IntVal(entries), batch_sizes=z3.Lambda([e], sizes), max_batch=max_batch)


def concrete_args(*, entry: int = 0, index: int = 0, floor: cur.Cursor | None = None) -> Args:
    return Args(entry=z3.IntVal(entry), index=z3.IntVal(index), floor=constant(floor or cur.Cursor()))


def _ranges(entries: list[int]) -> tuple[cur.Range, ...]:
    ranges: list[cur.Range] = []
    for entry in entries:
        if ranges and ranges[-1][1] == entry - 1:
            ranges[-1] = (ranges[-1][0], entry)
        else:
            ranges.append((entry - 1, entry))
    return tuple(ranges)


def decode(model: z3.ModelRef, cursor: SymCursor, *, entries: int, max_batch: int = MAX_BATCH) -> cur.Cursor:
    """The concrete cursor a model gives to `cursor`, over positions 0 .. entries-1, as it is:
    deleted entries at or below markDelete stay visible (`normalization_violations` reports them)."""
    def holds(term: z3.BoolRef) -> bool:
        return z3.is_true(model.eval(term, model_completion=True))

    deleted = [e for e in range(entries) if holds(cursor.deleted[e])]
    batch = tuple((e, frozenset(i for i in range(max_batch) if holds(cursor.batch[e, i]))) for e in range(entries))
    return cur.Cursor(mark_delete=model.eval(cursor.mark_delete, model_completion=True).as_long(),
                      individually_deleted=_ranges(deleted),
                      batch_deleted=tuple((e, ix) for e, ix in batch if ix),
                      read_position=model.eval(cursor.read_position, model_completion=True).as_long())


def _differs(after: SymCursor, found: cur.Cursor, *, entries: int, max_batch: int) -> z3.BoolRef:
    return z3.Or([after.mark_delete != found.mark_delete, after.read_position != found.read_position]
                 + [after.deleted[e] != found.is_acknowledged(e) for e in range(entries) if e > found.mark_delete]
                 + [after.deleted[e] for e in range(min(found.mark_delete + 1, entries)) if e >= 0]
                 + [after.batch[e, i] != (i in found.acked_indexes(e)) for e in range(entries) for i in range(max_batch)])


def successors(op: CursorOp, cursor: cur.Cursor, *, entries: int, batch_sizes: Mapping[int, int] | None = None,
               entry: int = 0, index: int = 0, floor: cur.Cursor | None = None, limit: int = 256,
               transitions: Mapping[CursorOp, Transition] = TRANSITIONS,
               rlimit: int = DEFAULT_RLIMIT) -> tuple[cur.Cursor, ...] | Unknown:
    """Every cursor the encoded op may lead to from `cursor` (none when its precondition fails),
    sorted by their description; at most `limit` of them."""
    topic = concrete_topic(entries, batch_sizes)
    after = fresh_cursor("after")
    solver = make_solver(rlimit=rlimit)
    solver.add(transition(op, topic, constant(cursor), concrete_args(entry=entry, index=index, floor=floor), after,
                          transitions=transitions))
    found: list[cur.Cursor] = []
    while len(found) < limit:
        decision = decide(solver)
        if decision.outcome is SolverOutcome.UNKNOWN:
            return Unknown(reason=decision.reason or "unknown")
        if decision.outcome is SolverOutcome.UNSAT:
            break
        result = decode(decision.model, after, entries=entries, max_batch=topic.max_batch)
        found.append(result)
        solver.add(_differs(after, result, entries=entries, max_batch=topic.max_batch))
    return tuple(sorted(found, key=cur.describe))


def apply(op: CursorOp, cursor: cur.Cursor, *, entries: int, batch_sizes: Mapping[int, int] | None = None,
          entry: int = 0, index: int = 0, transitions: Mapping[CursorOp, Transition] = TRANSITIONS,
          rlimit: int = DEFAULT_RLIMIT) -> cur.Cursor | Unknown:
    """The one cursor a deterministic encoded op leads to from `cursor`.

    Raises ValueError when the op's precondition fails or the op is not deterministic there.
    """
    results = successors(op, cursor, entries=entries, batch_sizes=batch_sizes, entry=entry, index=index, limit=2,
                         transitions=transitions, rlimit=rlimit)
    if isinstance(results, Unknown):
        return results
    if len(results) != 1:
        raise ValueError(f"{op} from {cur.describe(cursor)} has {len(results)} successors, not exactly one")
    return results[0]
