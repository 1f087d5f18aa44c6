"""What a one-step inductive proof returns, shared by the encodings' proofs (model/smt/cursor_proofs.py,
model/smt/counter.py).

Every proof of the suite has the shape init / transition / safety, never a deep unrolling (whose
formula grows with every step unrolled):

- init: the initial state satisfies the inductive invariant (and the property, for a property of
  states);
- for every op, from any state satisfying the invariant: the property holds of the step (`safety`)
  and the invariant holds after it (`transition`).

A proof's result is never a bare boolean: `Proved`, `Refuted` with a counterexample decoded into
the model's own values, or `solver.Unknown` when Z3 gave up (never folded into either). Each check
of a proof yields None (it holds) or one of those; `conclude` makes the proof's result of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import z3

from model.smt.solver import Unknown


class Counterexample(Protocol):
    """A step of an encoding where a property or the invariant fails, in the model's own values."""

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Proved:
    property: str

    def describe(self) -> str:
        return f"{self.property}: proved"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refuted:
    property: str
    counterexample: Counterexample

    def describe(self) -> str:
        return f"{self.property}: refuted, {self.counterexample.describe()}"


ProofResult = Proved | Refuted | Unknown


def conclude(name: str, checks: Iterable[ProofResult | None]) -> ProofResult:
    """The first refutation; else the first unknown (a later check may still refute); else proved."""
    unknown = None
    for result in checks:
        if isinstance(result, Refuted):
            return result
        if isinstance(result, Unknown) and unknown is None:
            unknown = result
    return unknown or Proved(property=name)


def integer(model: z3.ModelRef, term: z3.ArithRef) -> int:
    """The value a model gives an Int term (any value when the model leaves it free)."""
    return model.eval(term, model_completion=True).as_long()


def boolean(model: z3.ModelRef, term: z3.BoolRef) -> bool:
    """The value a model gives a Bool term (False when the model leaves it free)."""
    return z3.is_true(model.eval(term, model_completion=True))
