"""One message's redelivery counter as a Z3 transition relation, and its guarantees proved by
one-step induction (model/smt/induction.py).

A symbolic message is its status (`SymStatus`: available, held by a consumer, acknowledged), the
interval [count_lo, count_hi] of redelivery counts its next delivery may carry (the model keeps an
interval where it cannot tell which copy comes next), and whether it was produced to the
dead-letter topic. A `SymConfig` says whether the subscription has the broker's redelivery tracker
(`tracked`: Shared and Key_Shared) and the consumer's max_redeliver_count.

Each op (`RedeliveryOp`) is a relation `(config, before, after) -> Bool`, one function per op,
mirroring the model's rules of the `redelivery-count` and `dead-letter` guarantees (the
transitions of model/transitions: redelivery, receive, consumers, reopen):

- a redelivery request (nack, ack timeout, redeliver_unacknowledged_messages) adds one to the count
  on Shared/Key_Shared, or, when the count the message was delivered with reached
  max_redeliver_count, sends it to the dead-letter topic and acknowledges it instead;
- a holder's close hands the message to the remaining consumers with its count unchanged; the last
  consumer's close drops the dispatcher's redelivery tracker (the count is 0 again);
- a reopen (unload, restart, crash) starts a new dispatcher, with a new redelivery tracker (a copy
  of an available message still in a receiver queue keeps its count);
- a seek makes the message available again with a count from 0 to one more than before.

The proofs (`prove_redelivery_count`, `prove_dead_letter`) support the guarantees
`redelivery-count` and `dead-letter`; their inductive invariant is `counter_invariant`. An op's
encoding is a parameter of every proof (a table op -> relation), so a deliberately wrong table is
refuted with a concrete counterexample. `message_successors` evaluates an encoded op on a concrete
`MessageState`: the bridge the fidelity tests use to check the encoding against the Python model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import z3

from model.smt.induction import ProofResult, Refuted, boolean, conclude, integer
from model.smt.solver import DEFAULT_RLIMIT, SolverOutcome, Unknown, decide, make_solver


class SymStatus(IntEnum):
    """A message's status as a Z3 Int (the model's own is model.state.Status)."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageState:
    """One message's concrete redelivery state: status, the interval of counts its next delivery
    may carry, and whether it was produced to the dead-letter topic."""

    status: str
    count_lo: int
    count_hi: int
    dead: bool = False


MessageTransition = Callable[[SymConfig, SymMessage, SymMessage], z3.BoolRef]


# -- building blocks -----------------------------------------------------------------------------
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
    """The client's dead-letter routing: last delivered with count >= max_redeliver_count, on
    Shared/Key_Shared only."""
    return z3.And(config.limited, config.tracked, message.count_hi >= config.limit)


def bump(config: SymConfig) -> z3.ArithRef:
    """How much a redelivery adds to the count: 1 with a redelivery tracker, else 0."""
    return z3.If(config.tracked, 1, 0)


def dead_lettered(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """Acknowledged for the dead-letter topic instead of redelivered: its copy, counted one past the
    limit, goes to the client that dead-letters it (model/transitions/redelivery.py, `requested`)."""
    past = config.limit + 1
    return _same(before, after, status=z3.IntVal(SymStatus.ACKED), count_lo=past, count_hi=past,
                 dead=z3.BoolVal(True))


def back_available(before: SymMessage, after: SymMessage, *, bump: z3.ArithRef | int) -> z3.BoolRef:
    """Back for redelivery with the count `bump` higher."""
    return _same(before, after, status=z3.IntVal(SymStatus.AVAILABLE), count_lo=before.count_lo + bump,
                 count_hi=before.count_hi + bump)


# -- one relation per op -------------------------------------------------------------------------
def receive(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    c = config.delivered_count
    return _same(before, after, status=z3.IntVal(SymStatus.HELD), count_lo=c, count_hi=c)


def acknowledge_message(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    return _same(before, after, status=z3.IntVal(SymStatus.ACKED))


def redeliver(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """A redelivery request: to the dead-letter topic (acked), or back with the count one higher
    (the model keeps it held until its redelivery window ends; here it is back at once)."""
    return z3.If(goes_to_dead_letter(config, before), dead_lettered(config, before, after),
                 back_available(before, after, bump=bump(config)))


def redeliver_queued(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """redeliver_unacknowledged_messages on an available message: on Shared it may be dispatched
    again, counted; once its count may have reached the limit, the client may dead-letter the
    queued copy unseen (acked, not certainly dead: it may still come, with a count within the limit)."""
    return z3.If(goes_to_dead_letter(config, before), _same(before, after, status=z3.IntVal(SymStatus.ACKED)),
                 _same(before, after, count_hi=before.count_hi + bump(config)))


def close(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """Its holder closes: back to the others with the count unchanged."""
    return _same(before, after, status=z3.IntVal(SymStatus.AVAILABLE))


def close_last(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    status = z3.If(before.status == SymStatus.HELD, SymStatus.AVAILABLE, before.status)
    zero = z3.IntVal(0)
    return _same(before, after, status=status, count_lo=z3.If(config.tracked, zero, before.count_lo),
                 count_hi=z3.If(config.tracked, zero, before.count_hi))


def reopen(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """A new dispatcher, a new redelivery tracker: counts from 0; a copy of an available message
    still in a receiver queue keeps the count it was dispatched with. A held message here has no
    copy queued elsewhere (the model's extra deliveries are outside this encoding, as at a receive)."""
    queued = z3.If(before.status == SymStatus.AVAILABLE, before.count_hi, z3.IntVal(0))
    return _same(before, after, count_lo=z3.IntVal(0), count_hi=queued)


def seek(config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """Available again, with a count anywhere from 0 to one more than before."""
    return _same(before, after, status=z3.IntVal(SymStatus.AVAILABLE), count_lo=z3.IntVal(0),
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
            return z3.And(before.status == SymStatus.AVAILABLE, before.count_lo <= c, c <= before.count_hi,
                          z3.Implies(z3.Not(config.tracked), c == 0),
                          z3.Not(z3.And(config.tracked, config.limited, c > config.limit)))
        case RedeliveryOp.ACKNOWLEDGE | RedeliveryOp.REDELIVER | RedeliveryOp.CLOSE:
            return before.status == SymStatus.HELD
        case RedeliveryOp.REDELIVER_QUEUED:
            return before.status == SymStatus.AVAILABLE
        case RedeliveryOp.REOPEN:
            return before.status != SymStatus.ACKED  # an acked message's count is never read again
        case RedeliveryOp.CLOSE_LAST | RedeliveryOp.SEEK:
            return z3.BoolVal(True)
    raise ValueError(f"unknown redelivery op {op!r}")


def counter_invariant(config: SymConfig, message: SymMessage) -> z3.BoolRef:
    """A held message's count is the one it was delivered with; untracked counts are 0."""
    return z3.And(0 <= message.status, message.status <= SymStatus.ACKED, 0 <= message.count_lo,
                  message.count_lo <= message.count_hi,
                  z3.Implies(message.status == SymStatus.HELD, message.count_lo == message.count_hi),
                  z3.Implies(z3.Not(config.tracked), message.count_lo == 0))


def message_initial(message: SymMessage) -> z3.BoolRef:
    return z3.And(message.status == SymStatus.AVAILABLE, message.count_lo == 0, message.count_hi == 0,
                  z3.Not(message.dead))


# -- concrete messages in and out ----------------------------------------------------------------
def _state(model: z3.ModelRef, message: SymMessage) -> MessageState:
    status = integer(model, message.status)
    return MessageState(status=SymStatus(status).name.lower() if 0 <= status <= 2 else str(status),
                        count_lo=integer(model, message.count_lo), count_hi=integer(model, message.count_hi),
                        dead=boolean(model, message.dead))


def _message_constant(state: MessageState) -> SymMessage:
    return SymMessage(status=z3.IntVal(SymStatus[state.status.upper()]), count_lo=z3.IntVal(state.count_lo),
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
        if decision.outcome is SolverOutcome.UNKNOWN:
            return Unknown(reason=decision.reason or "unknown")
        if decision.outcome is SolverOutcome.UNSAT:
            return tuple(found)
        result = _state(decision.model, after)
        found.append(result)
        solver.add(z3.Not(_same(_message_constant(result), after)))


# -- the proofs ----------------------------------------------------------------------------------
MessageProperty = Callable[[RedeliveryOp, SymConfig, SymMessage, SymMessage], z3.BoolRef]


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageCounterexample:
    """A step of one message's redelivery counter where the rule or the invariant fails."""

    check: str  # "init", "safety" (the property) or "transition" (the invariant)
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


def count_rule(op: RedeliveryOp, config: SymConfig, before: SymMessage, after: SymMessage) -> z3.BoolRef:
    """count+1 on a redelivery (Shared/Key_Shared), unchanged on a close, 0 on a reset (last close,
    reopen, where only a queued copy may keep its count; a seek may restart it), never lower
    otherwise; always 0 without a tracker."""
    count = before.count_lo
    untracked = z3.Implies(z3.Not(config.tracked), after.count_lo == 0)
    match op:
        case RedeliveryOp.REDELIVER:
            rule = z3.Implies(z3.And(config.tracked, after.status != SymStatus.ACKED),
                              z3.And(after.count_lo == count + 1, after.count_hi == count + 1))
        case RedeliveryOp.CLOSE:
            rule = z3.And(after.count_lo == count, after.count_hi == before.count_hi)
        case RedeliveryOp.CLOSE_LAST:
            rule = z3.Implies(config.tracked, z3.And(after.count_lo == 0, after.count_hi == 0))
        case RedeliveryOp.REOPEN:
            rule = z3.And(after.count_lo == 0, after.count_hi <= before.count_hi,
                          z3.Implies(before.status == SymStatus.HELD, after.count_hi == 0))
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
        return z3.And(after.status == SymStatus.ACKED, after.dead) == due
    return after.dead == before.dead


def _message_counterexample(model: z3.ModelRef, check: str, op: RedeliveryOp | None, config: SymConfig,
                            before: SymMessage | None, after: SymMessage) -> MessageCounterexample:
    limited = boolean(model, config.limited)
    return MessageCounterexample(check=check, op=op, tracked=boolean(model, config.tracked),
                                 max_redeliver_count=integer(model, config.limit) if limited else None,
                                 delivered_count=integer(model, config.delivered_count),
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
        if decision.outcome is SolverOutcome.UNKNOWN:
            return Unknown(reason=f"{name}, {label} of {op or 'the initial state'}: {decision.reason}")
        if decision.outcome is SolverOutcome.UNSAT:
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
            if decide(solver).outcome is not SolverOutcome.SAT:
                yield Unknown(reason=f"{name}, {op}: vacuous (no state can take this step) or undecided")
            yield check(rule(op, config, before, after), "safety", op, before)
            yield check(counter_invariant(config, after), "transition", op, before)
            solver.pop()

    return conclude(name, checks())


def prove_redelivery_count(**options) -> ProofResult:
    """count_rule of every step: the count grows by one per redelivery on Shared/Key_Shared, is kept
    by a close, reset by the last close and a reopen, and is always 0 on Exclusive/Failover."""
    return prove_message("redelivery_count", count_rule, **options)


def prove_dead_letter(**options) -> ProofResult:
    """dead_letter_rule of every step: to the dead-letter topic exactly when the count reached
    max_redeliver_count on Shared/Key_Shared."""
    return prove_message("dead_letter", dead_letter_rule, **options)
