"""The one place Z3 solvers are made, and the three outcomes a query can have.

Every query of the suite goes through `make_solver`: fixed seeds, so a proof or a counterexample
is the same on every run of the same queries, and a resource limit (`rlimit`, Z3's deterministic
count of work) rather than a wall-clock timeout, so that whether a query gives up does not depend
on the machine's load. `decide` maps Z3's answer onto `SolverOutcome` (named apart from the ops'
`model.ops.Outcome`): `unknown` is its own outcome, with Z3's reason, never folded into sat or unsat.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import z3

SEED = 0
# About 5-10 s of Z3 work on this machine; every query of the suite needs a small fraction of it.
DEFAULT_RLIMIT = 50_000_000


class SolverOutcome(StrEnum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class Unknown:
    """Z3 gave up (resource limit, incomplete quantifier reasoning): neither a yes nor a no."""

    reason: str

    def describe(self) -> str:
        return f"unknown: {self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """Z3's answer to one query: the model when sat, the core when unsat, the reason when unknown."""

    outcome: SolverOutcome
    model: z3.ModelRef | None = None
    core: tuple[z3.BoolRef, ...] = ()
    reason: str | None = None


def make_solver(*, rlimit: int = DEFAULT_RLIMIT, seed: int = SEED, unsat_cores: bool = False) -> z3.Solver:
    """A solver with fixed seeds and a resource limit (per `check`)."""
    # The SAT core's seed is a global parameter in Z3 (the solver rejects it as its own).
    z3.set_param("sat.random_seed", seed)
    solver = z3.Solver()
    solver.set("random_seed", seed)
    solver.set("smt.random_seed", seed)
    solver.set("rlimit", rlimit)
    if unsat_cores:
        solver.set("unsat_core", True)
    return solver


def decide(solver: z3.Solver, *assumptions: z3.BoolRef) -> Decision:
    """Check `solver` (under `assumptions`) and say what came out."""
    answer = solver.check(*assumptions)
    if answer == z3.sat:
        return Decision(outcome=SolverOutcome.SAT, model=solver.model())
    if answer == z3.unsat:
        return Decision(outcome=SolverOutcome.UNSAT, core=tuple(solver.unsat_core()) if assumptions else ())
    return Decision(outcome=SolverOutcome.UNKNOWN, reason=solver.reason_unknown() or "unknown")
