"""How the suite catches a faulty target: the conformance catalog, check after check, until one fails.

Breadth first, as a user's run would find it soonest: every check with a few examples, then every
check with the full `ci` budget. A mutant of the model takes first the cells whose programs run
its changed statement, at both budgets, then the others (suites/quality/reach.py). The first
`ConformanceFailure` is the catch: the check and spec that found it, and the shrunk program (the
failure's history and steps). A target whose history the checker refuses as malformed
(completion times that go back: model.nondet.ImpossibleStamp) is caught too: such a run is unknown
(harness error), never a pass. The slow checks run too (ack_timeout): against the model target,
whose clock is simulated, they take about a second at the `ci` budget, and without them no fault
of ack-timeout behaviour could be caught.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import settings

from fixtures import hypothesis_profiles  # noqa: F401  (registers the profiles)
from fixtures.targets.faulty import Fault
from fixtures.targets.lockstep import ConformanceFailure
from fixtures.targets.protocol import Target
from model.nondet import ImpossibleStamp
from model.spec import Spec
from suites.conformance.catalog import CHECKS, Check
from suites.machines import run_conformance
from suites.quality.reach import Cell, cells

SWEEP_EXAMPLES = 15  # a quick pass over every check first, then the full ci budget
DRAIN_IDLE_MS = 30  # the model target answers at once: a drain need not wait


@dataclass(frozen=True, slots=True, kw_only=True)
class Catch:
    check: Check
    spec_name: str
    spec: Spec
    failure: ConformanceFailure | ImpossibleStamp

    @property
    def where(self) -> str:
        return f"{self.check.area}[{self.spec_name}]"

    @property
    def told(self) -> str:
        """The guarantee the failure names, or what made the history malformed."""
        if isinstance(self.failure, ImpossibleStamp):
            return MALFORMED
        return self.failure.violation.guarantee.value

    @property
    def length(self) -> int:
        """The ops of the shrunk program."""
        return len(self.failure.history)


MALFORMED = "malformed history (impossible times)"


def first_failure(fault: Fault) -> Catch | None:
    """The first check (breadth first over the catalog, ci profile) that fails on `fault`'s target."""
    return first_failure_of(fault.target, fault.name)


def budgets() -> tuple[settings, settings]:
    """The quick pass's budget and the full one (`ci`)."""
    # One failure is a catch: a target that fails in two distinct ways is caught by either, not
    # reported as an ExceptionGroup that reads as a crash.
    full = settings(settings.get_profile("ci"), report_multiple_bugs=False)
    return settings(full, max_examples=SWEEP_EXAMPLES), full


def first_failure_of(make_target: Callable[[], Target], name: str,
                     checks: tuple[Check, ...] = CHECKS, *,
                     first: list[Cell] | None = None) -> Catch | None:
    """The first cell of `checks` (breadth first, ci profile) that fails on the targets `make_target`
    makes. With `first` (suites/quality/reach.py), those cells take both passes before the others."""
    ids = (f"{name}-{n}" for n in itertools.count())
    quick, full = budgets()
    every = cells(checks)
    groups = [every] if first is None else [first, [c for c in every if c not in first]]
    for group in groups:
        for budget in (quick, full):
            for cell in group:
                spec = cell.check.specs[cell.spec_name]
                try:
                    run_conformance(make_target(), spec, lambda: next(ids), kinds=cell.check.kinds,
                                    settings_=budget, drain_idle_ms=DRAIN_IDLE_MS)
                except (ConformanceFailure, ImpossibleStamp) as failure:
                    return Catch(check=cell.check, spec_name=cell.spec_name, spec=spec, failure=failure)
    return None
