"""What a step of the model answers besides a new state: a violation of a guarantee, or a question
about the broker's cursor that only the solver can answer.

A `Violation` names the guarantee (model/guarantees.py) an observation breaks, so a failure reads
as "<guarantee>: <what happened>". A `CursorPrefixQuestion` is what the read_cursor transition
cannot decide on its own (the acks that reached the broker must be a per-consumer prefix of the
pending acks); the non-deterministic layer (model/nondet.py) asks the solver and turns the answer
into the settled state or a violation.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.cursor import Cursor
from model.guarantees import Guarantee
from model.ops import MessageId
from model.state import State


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """An observation no state allows, or (`undecided`) one the solver could not decide: reported
    as unknown, never as a pass."""

    guarantee: Guarantee
    detail: str
    undecided: bool = False

    def describe(self) -> str:
        return f"{self.guarantee.value}{' (undecided)' if self.undecided else ''}: {self.detail}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CursorPrefixQuestion:
    """A cursor read between its bounds: allowed only if the acks it shows are, per consumer and
    kind, a prefix of that consumer's pending acks (the client flushes its grouped acks in call
    order). If they are, the state is `settled`."""

    observed: Cursor
    confirmed: Cursor  # the model's broker cursor before the read: what is known to have arrived
    entries: int  # entries published so far
    pending_acks: tuple[tuple[str, str, MessageId], ...]  # (consumer, kind, message) in call order
    settled: State


@dataclass(frozen=True, slots=True)
class Either:
    """An op whose effect the observation leaves open (an `info` outcome): each of `states` may be
    the system's state now; the non-deterministic layer keeps them all."""

    states: tuple[State, ...]


Result = State | Violation | CursorPrefixQuestion | Either
