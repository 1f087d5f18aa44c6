"""Was what a broker crash left behind allowed? Admissibility of a crash epoch, decided by Z3.

A crash loses the acks that had not reached the broker's persisted cursor (the model's crash rule,
model/transitions/reopen.py: the cursor may come back at any earlier persisted state). The
non-deterministic layer (model/nondet.py) asks this module when it cannot decide a cursor read
after a crash by itself; an inadmissible epoch breaks the `cursor` guarantee.

What may survive is constrained by how acks travel: each consumer sends its acks of one kind
(individual, cumulative) in call order, so the acks of a (consumer, kind) that reached the broker
are a prefix of that consumer's calls of that kind. An ack known to have been applied (its effect
was observed before the crash) is in the prefix; an ack whose fate is unknown may or may not be.

An epoch is admissible when some choice of one prefix length per (consumer, kind), together with
the floor (the acknowledged set known persisted), acknowledges exactly the entries the cursor read
after the restart shows, and exactly the entries a fresh consumer did not receive again.

The encoding is split by epoch and is per entry: one Int per (consumer, kind) and, for entry e,
"e is acknowledged" is the floor's fact or `k_g > t_g(e)` for each group g that can ack e (t_g(e)
is the position in g's calls of its first individual ack of e, or of its first cumulative ack at
or above e). So the constraints grow linearly with the events (a monolithic ordering of all events
grows super-linearly: about 100 s for 10,000 events). The formula is handed to Z3 as SMT-LIB text,
which is much faster to build than term by term.

The answer is `Admissible` (the kept acks, and the cursor they replay to), `Inadmissible` (a
minimal set of facts, events and observations, that cannot all hold: minimized by deletion) or
`Unknown` (Z3 gave up within its resource limit).
"""

from __future__ import annotations

import random
from math import isqrt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import z3

from model import cursor as cur
from model.smt.solver import DEFAULT_RLIMIT, SolverOutcome, Unknown, decide, make_solver


class AckKind(StrEnum):
    INDIVIDUAL = "individual"
    CUMULATIVE = "cumulative"


class AckStatus(StrEnum):
    APPLIED = "applied"  # known to have reached the broker
    UNKNOWN = "unknown"  # may or may not have


@dataclass(frozen=True, slots=True, kw_only=True)
class AckEvent:
    index: int  # call order within the epoch
    consumer: str
    kind: AckKind
    entry: int
    status: AckStatus = AckStatus.UNKNOWN

    def describe(self) -> str:
        return f"#{self.index} {self.consumer} {self.kind} m{self.entry} ({self.status})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Epoch:
    """From one persisted floor to the observation after the next crash."""

    entries: int  # entries published: 0 .. entries-1
    floor: cur.Cursor = cur.Cursor()  # what is known persisted (its acknowledged entries)
    acks: tuple[AckEvent, ...] = ()
    cursor: cur.Cursor | None = None  # the cursor read after the restart (its acknowledged entries)
    redelivered: frozenset[int] | None = None  # entries a fresh consumer received after the restart


class FactKind(StrEnum):
    APPLIED = "applied"  # ack event `event` was applied
    FLOOR = "floor"  # the floor acknowledges `entry`
    CURSOR_ACKED = "cursor_acked"  # the cursor read shows `entry` acknowledged
    CURSOR_UNACKED = "cursor_unacked"
    CURSOR_BEYOND = "cursor_beyond"  # the cursor read acknowledges `entry`, which was never published
    REDELIVERED = "redelivered"  # `entry` came again to a fresh consumer
    NOT_REDELIVERED = "not_redelivered"


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Fact:
    """One thing the history says: an event's status, the floor, or an observation after the crash."""

    epoch: int
    kind: FactKind
    entry: int
    event: int | None = None

    def describe(self) -> str:
        what = {FactKind.APPLIED: f"ack #{self.event} (m{self.entry}) was applied",
                FactKind.FLOOR: f"the floor acknowledges m{self.entry}",
                FactKind.CURSOR_ACKED: f"the cursor shows m{self.entry} acknowledged",
                FactKind.CURSOR_UNACKED: f"the cursor shows m{self.entry} unacknowledged",
                FactKind.CURSOR_BEYOND: f"the cursor acknowledges m{self.entry}, never published",
                FactKind.REDELIVERED: f"m{self.entry} was redelivered",
                FactKind.NOT_REDELIVERED: f"m{self.entry} was not redelivered"}[self.kind]
        return f"epoch {self.epoch}: {what}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Witness:
    epoch: int
    kept: tuple[AckEvent, ...]  # the acks that reached the broker, in call order
    cursor: cur.Cursor  # the floor plus the kept acks


@dataclass(frozen=True, slots=True, kw_only=True)
class Admissible:
    witnesses: tuple[Witness, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Inadmissible:
    core: tuple[Fact, ...]  # minimal: without any one of them the rest can all hold

    def describe(self) -> str:
        return "; ".join(fact.describe() for fact in self.core)


AdmissibilityResult = Admissible | Inadmissible | Unknown


# -- encoding ------------------------------------------------------------------------------------
@dataclass(slots=True, kw_only=True)
class _Encoding:
    """One epoch as per-entry constraints over one prefix length per (consumer, kind)."""

    epoch: int
    groups: list[tuple[str, AckKind]]
    calls: list[list[AckEvent]]  # per group, in call order
    facts: list[tuple[FactKind, int, int | None]] = field(default_factory=list)  # (kind, entry, event)
    constraints: list[str] = field(default_factory=list)  # SMT-LIB, one per fact
    # per fact: (upward, atoms, floor entry): upward facts say "some k_g > t (or f_e)", downward
    # ones "no k_g > t (and not f_e)"; every fact is one or the other (monotone in the k's)
    shapes: list[tuple[bool, tuple[tuple[int, int], ...], int | None]] = field(default_factory=list)
    floor_entries: list[int] = field(default_factory=list)

    def fact(self, i: int) -> Fact:
        kind, entry, event = self.facts[i]
        return Fact(epoch=self.epoch, kind=kind, entry=entry, event=event)

    def declarations(self, facts: Iterable[int] | None = None) -> str:
        """The prefix lengths with their range, and the floor's variables (those `facts` use)."""
        ints = "".join(f"(declare-const k{g} Int)(assert (<= 0 k{g} {len(calls)}))" for g, calls in enumerate(self.calls))
        floor = self.floor_entries if facts is None else sorted(
            {e for i in facts if (e := self.shapes[i][2]) is not None})
        return ints + "".join(f"(declare-const f{e} Bool)" for e in floor)


def acknowledged_entries(cursor: cur.Cursor, entries: int) -> frozenset[int]:
    """`cursor.acknowledged(entries)`, in time linear in the entries (not entries x ranges)."""
    acked = set(range(min(cursor.mark_delete + 1, entries)))
    for lower, upper in cursor.individually_deleted:
        acked.update(range(max(lower + 1, 0), min(upper + 1, entries)))
    return frozenset(acked)


def replay(epoch: Epoch, kept: Iterable[AckEvent]) -> cur.Cursor:
    """The cursor the floor and the kept acks give: the canonical cursor (model/cursor.py
    `from_acknowledged`) of the floor's entries, the individually acked ones and everything up to
    the highest cumulative ack, as `delete` and `mark_delete` applied one by one would give."""
    n = epoch.entries
    acked = set(acknowledged_entries(epoch.floor, n))
    upto = -1
    for event in kept:
        if event.kind is AckKind.CUMULATIVE:
            upto = max(upto, min(event.entry, n - 1))
        elif 0 <= event.entry < n:
            acked.add(event.entry)
    return cur.from_acknowledged(acked, mark_delete=upto)


def _thresholds(epoch: Epoch, groups: list[tuple[str, AckKind]], calls: list[list[AckEvent]]) -> list[list[tuple[int, int]]]:
    """For each entry, (group, t): the entry is acknowledged by group g when its prefix is longer than t."""
    n = epoch.entries
    per_entry: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for g, ((_, kind), events) in enumerate(zip(groups, calls)):
        first: dict[int, int] = {}
        for position, event in enumerate(events):
            target = min(event.entry, n - 1) if kind is AckKind.CUMULATIVE else event.entry
            if 0 <= target < n and target not in first:
                first[target] = position
        if kind is AckKind.INDIVIDUAL:
            for entry, position in first.items():
                per_entry[entry].append((g, position))
        else:
            best = None
            for entry in range(n - 1, -1, -1):  # the first call at or above each entry
                if entry in first and (best is None or first[entry] < best):
                    best = first[entry]
                if best is not None:
                    per_entry[entry].append((g, best))
    return per_entry


def _encode(epoch: Epoch, number: int) -> _Encoding:
    groups = sorted({(a.consumer, a.kind) for a in epoch.acks})
    group_of = {group: g for g, group in enumerate(groups)}
    calls: list[list[AckEvent]] = [[] for _ in groups]
    for event in sorted(epoch.acks, key=lambda a: a.index):
        calls[group_of[(event.consumer, event.kind)]].append(event)
    encoding = _Encoding(epoch=number, groups=groups, calls=calls)
    facts, constraints, shapes = encoding.facts, encoding.constraints, encoding.shapes
    for g, events in enumerate(calls):
        for position, event in enumerate(events):
            if event.status is AckStatus.APPLIED:
                facts.append((FactKind.APPLIED, event.entry, event.index))
                constraints.append(f"(> k{g} {position})")
                shapes.append((True, ((g, position),), None))
    n = epoch.entries
    floor_set = acknowledged_entries(epoch.floor, n)
    encoding.floor_entries = sorted(floor_set)
    for e in encoding.floor_entries:
        facts.append((FactKind.FLOOR, e, None))
        constraints.append(f"f{e}")
        shapes.append((True, (), e))
    shown = acknowledged_entries(epoch.cursor, n) if epoch.cursor is not None else None
    redelivered = epoch.redelivered
    for e, atoms in enumerate(_thresholds(epoch, groups, calls)):
        terms = [f"(> k{g} {t})" for g, t in atoms]
        floor_var = e if e in floor_set else None
        if floor_var is not None:
            terms.append(f"f{e}")
        acked = "false" if not terms else terms[0] if len(terms) == 1 else f"(or {' '.join(terms)})"
        atoms = tuple(atoms)
        if shown is not None:
            facts.append((FactKind.CURSOR_ACKED, e, None) if e in shown else (FactKind.CURSOR_UNACKED, e, None))
            constraints.append(acked if e in shown else f"(not {acked})")
            shapes.append((e in shown, atoms, floor_var))
        if redelivered is not None:
            facts.append((FactKind.REDELIVERED, e, None) if e in redelivered else (FactKind.NOT_REDELIVERED, e, None))
            constraints.append(f"(not {acked})" if e in redelivered else acked)
            shapes.append((e not in redelivered, atoms, floor_var))
    impossible = []
    if epoch.cursor is not None:
        beyond = [e for e in (epoch.cursor.mark_delete, *(u for _, u in epoch.cursor.individually_deleted)) if e >= n]
        if beyond:
            impossible.append((FactKind.CURSOR_BEYOND, min(beyond), None))
    impossible.extend((FactKind.REDELIVERED, e, None) for e in sorted(redelivered or ()) if not 0 <= e < n)
    for fact in impossible:
        facts.append(fact)
        constraints.append("false")
        shapes.append((True, (), None))
    return encoding


def _suspects(encoding: _Encoding) -> list[int] | None:
    """Facts that look contradictory, read off the monotone shape of the constraints: the largest
    prefixes the downward facts allow, and the first upward fact that they leave false, with the
    downward facts that bound it. Only a hint: Z3 checks it (and a general search follows if not)."""
    bound = [len(calls) for calls in encoding.calls]
    setter: list[int | None] = [None] * len(bound)
    unfloored: dict[int, int] = {}
    denied: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}  # (entry, atoms) -> a downward fact
    for i, (upward, atoms, floor_var) in enumerate(encoding.shapes):
        if upward:
            continue
        denied.setdefault((encoding.facts[i][1], atoms), i)
        for g, t in atoms:
            if t < bound[g]:
                bound[g], setter[g] = t, i
        if floor_var is not None:
            unfloored.setdefault(floor_var, i)
    for i, (upward, atoms, floor_var) in enumerate(encoding.shapes):
        if not upward or any(bound[g] > t for g, t in atoms):
            continue
        if floor_var is not None and floor_var not in unfloored:
            continue
        opposite = denied.get((encoding.facts[i][1], atoms))
        if atoms and opposite is not None and encoding.shapes[opposite][2] == floor_var:
            return [i, opposite]  # two observations of the same entry disagree
        suspects = {i} | {setter[g] for g, _ in atoms if setter[g] is not None}
        if floor_var is not None:
            suspects.add(unfloored[floor_var])
        return sorted(suspects)
    return None


# -- deciding ------------------------------------------------------------------------------------
def _solver(encoding: _Encoding, groups: Sequence[Sequence[int]], rlimit: int) -> z3.Solver:
    """A solver holding the declarations and the constraints of the facts in `groups`, each group
    guarded by its own literal g<j> (assumed true to assert the group)."""
    solver = make_solver(rlimit=rlimit, unsat_cores=True)
    parts = [encoding.declarations(i for group in groups for i in group)]
    for j, group in enumerate(groups):
        parts.append(f"(declare-const g{j} Bool)")
        # the same constraint twice in a block (the cursor and the redelivery agree) is asserted once
        parts.extend(f"(assert (=> g{j} {c}))" for c in dict.fromkeys(encoding.constraints[i] for i in group))
    solver.from_string("".join(parts))
    return solver


def _guards(groups: Sequence[Sequence[int]]) -> list[z3.BoolRef]:
    return [z3.Bool(f"g{j}") for j in range(len(groups))]


def _witness(epoch: Epoch, number: int, encoding: _Encoding, model: z3.ModelRef) -> Witness:
    kept = []
    for g, events in enumerate(encoding.calls):
        length = model.eval(z3.Int(f"k{g}"), model_completion=True).as_long()
        kept.extend(events[:length])
    kept.sort(key=lambda event: event.index)
    return Witness(epoch=number, kept=tuple(kept), cursor=replay(epoch, kept))


def _contradictory(encoding: _Encoding, facts: Sequence[int], rlimit: int) -> list[int] | None | Unknown:
    """The facts among `facts` in Z3's unsat core (None: they can all hold)."""
    groups = [[i] for i in facts]
    decision = decide(_solver(encoding, groups, rlimit), *_guards(groups))
    if decision.outcome is SolverOutcome.UNKNOWN:
        return Unknown(reason=str(decision.reason))
    if decision.outcome is SolverOutcome.SAT:
        return None
    return sorted(facts[int(str(literal)[1:])] for literal in decision.core)


def _minimal_core(encoding: _Encoding, core: list[int], rlimit: int) -> list[int] | Unknown:
    """Deletion: drop each fact whose absence leaves the rest contradictory (then the core shrinks
    to Z3's core of the rest)."""
    kept = list(core)
    for candidate in list(core):
        if candidate not in kept:
            continue
        rest = _contradictory(encoding, [i for i in kept if i != candidate], rlimit)
        if isinstance(rest, Unknown):
            return Unknown(reason=f"minimizing the core: {rest.reason}")
        if rest is not None:
            kept = rest
    return kept


def _plain_solver(encoding: _Encoding, rlimit: int) -> z3.Solver:
    """All the facts asserted as they are (no guards: about twice as fast to decide)."""
    solver = make_solver(rlimit=rlimit)
    solver.from_string(encoding.declarations() + "".join(f"(assert {c})" for c in dict.fromkeys(encoding.constraints)))
    return solver


def _core_by_blocks(encoding: _Encoding, rlimit: int) -> list[int] | None | Unknown:
    """Z3's core over all the facts, guarded in blocks (about the square root of their number),
    then over the facts of the blocks in it, one by one."""
    count = len(encoding.facts)
    size = max(64, isqrt(count))
    blocks = [range(start, min(start + size, count)) for start in range(0, count, size)]
    decision = decide(_solver(encoding, blocks, rlimit), *_guards(blocks))
    if decision.outcome is SolverOutcome.UNKNOWN:
        return Unknown(reason=str(decision.reason))
    if decision.outcome is SolverOutcome.SAT:
        return None
    return _contradictory(encoding, [i for literal in decision.core for i in blocks[int(str(literal)[1:])]], rlimit)


def check_epoch(epoch: Epoch, *, number: int = 0, rlimit: int = DEFAULT_RLIMIT, hints: bool = True) -> AdmissibilityResult:
    """Decide one epoch: the kept acks, a minimal core of contradictory facts, or unknown.

    Z3 decides on all the facts at once. When they contradict each other, the facts suspected
    from the constraints' monotone shape are checked by Z3 alone (a few facts, not thousands); if
    they do not contradict each other, Z3's own core is searched for over guarded blocks. Either
    way the core is then minimized by deletion. `hints=False` skips the suspects."""
    encoding = _encode(epoch, number)
    decision = decide(_plain_solver(encoding, rlimit))
    if decision.outcome is SolverOutcome.SAT:
        return Admissible(witnesses=(_witness(epoch, number, encoding, decision.model),))
    if decision.outcome is SolverOutcome.UNKNOWN:
        return Unknown(reason=f"epoch {number}: {decision.reason}")
    suspects = _suspects(encoding) if hints else None
    core = _contradictory(encoding, suspects, rlimit) if suspects else None
    if not isinstance(core, list):
        core = _core_by_blocks(encoding, rlimit)
    if core is None:
        return Unknown(reason=f"epoch {number}: unsat as a whole, yet no core was found")
    if not isinstance(core, Unknown):
        core = _minimal_core(encoding, core, rlimit)
    if isinstance(core, Unknown):
        return Unknown(reason=f"epoch {number}: {core.reason}")
    return Inadmissible(core=tuple(sorted(encoding.fact(i) for i in core)))


def check_facts(epoch: Epoch, facts: Iterable[Fact], *, number: int = 0,
                rlimit: int = DEFAULT_RLIMIT) -> AdmissibilityResult:
    """Whether the given facts of the epoch (events applied, floor, observations) can all hold,
    the others left out as unknown: a witness for them, or a minimal core among them."""
    encoding = _encode(epoch, number)
    wanted = set(facts)
    chosen = [i for i in range(len(encoding.facts)) if encoding.fact(i) in wanted]
    singles = [[i] for i in chosen]
    decision = decide(_solver(encoding, singles, rlimit), *_guards(singles))
    if decision.outcome is SolverOutcome.SAT:
        return Admissible(witnesses=(_witness(epoch, number, encoding, decision.model),))
    if decision.outcome is SolverOutcome.UNKNOWN:
        return Unknown(reason=f"epoch {number}: {decision.reason}")
    core = _minimal_core(encoding, sorted(chosen[int(str(literal)[1:])] for literal in decision.core), rlimit)
    if isinstance(core, Unknown):
        return Unknown(reason=f"epoch {number}: {core.reason}")
    return Inadmissible(core=tuple(sorted(encoding.fact(i) for i in core)))


def check_admissible(epochs: Sequence[Epoch], *, rlimit: int = DEFAULT_RLIMIT, hints: bool = True) -> AdmissibilityResult:
    """Decide every epoch on its own (each starts from its own floor): inadmissible as soon as one
    is, unknown if one is and none is inadmissible, else admissible with one witness per epoch."""
    witnesses: list[Witness] = []
    unknown = None
    for number, epoch in enumerate(epochs):
        result = check_epoch(epoch, number=number, rlimit=rlimit, hints=hints)
        match result:
            case Inadmissible():
                return result
            case Unknown():
                unknown = unknown or result
            case Admissible():
                witnesses.extend(result.witnesses)
    return unknown or Admissible(witnesses=tuple(witnesses))


# -- synthetic epochs (benchmarks, tests) --------------------------------------------------------
def synthetic_epoch(rng: random.Random, events: int, *, consumers: int = 4, cumulative_share: float = 0.1,
                    applied_share: float = 0.5) -> Epoch:
    """An admissible epoch as a Shared/Exclusive mix would produce it: entries dispatched round
    robin, each consumer acking its own in order (now and then cumulatively), a crash keeping a
    random prefix of each (consumer, kind), the applied acks inside those prefixes."""
    entries = events
    names = [f"c{i}" for i in range(consumers)]
    acks = []
    for index in range(events):
        entry = index
        kind = AckKind.CUMULATIVE if rng.random() < cumulative_share else AckKind.INDIVIDUAL
        acks.append(AckEvent(index=index, consumer=names[entry % consumers], kind=kind, entry=entry))
    floor_upto = rng.randrange(0, max(1, entries // 10))
    floor = cur.Cursor(mark_delete=floor_upto - 1, read_position=floor_upto)
    groups: dict[tuple[str, AckKind], list[int]] = {}
    for position, event in enumerate(acks):
        groups.setdefault((event.consumer, event.kind), []).append(position)
    marked = list(acks)
    kept = []
    for positions in groups.values():
        length = rng.randint(0, len(positions))
        applied_upto = rng.randint(0, length)
        for rank, position in enumerate(positions[:length]):
            status = AckStatus.APPLIED if rank < applied_upto and rng.random() < applied_share else AckStatus.UNKNOWN
            marked[position] = AckEvent(index=acks[position].index, consumer=acks[position].consumer,
                                        kind=acks[position].kind, entry=acks[position].entry, status=status)
            kept.append(marked[position])
    epoch = Epoch(entries=entries, floor=floor, acks=tuple(marked))
    observed = replay(epoch, kept)
    unacked = frozenset(range(entries)) - acknowledged_entries(observed, entries)
    return Epoch(entries=entries, floor=floor, acks=tuple(marked), cursor=observed, redelivered=unacked)
