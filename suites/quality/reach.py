"""Which cells of the catalog reach which lines of the model: the order a mutant's run takes.

A mutant answers as the model does until its changed statement runs, and the `ci` profile is
derandomized: a cell whose programs never run that statement on the model target draws the very
same programs on the mutant and cannot tell it apart. So a mutant's run (suites/quality/catch.py)
takes first the cells whose quick-pass programs run its statement, those where more programs run
it first, at the quick budget and then at the full one; every other cell follows in the catalog's
order, at both budgets, so nothing is skipped (the full budget draws programs the quick pass did
not, and a statement run at import, outside any program, counts as run by none). This is the test
prioritisation by coverage that mutation tools do (PIT, mutmut): it changes when a mutant is
killed and by which cell (so which guarantee its kill names), not whether, short of the CPU bound
of a mutant's run.

The reach is measured once per mutation run, in the parent process before the workers fork: every
cell's quick pass on the model target under coverage.py, one dynamic context per program. It
counts what the checker runs too (it steps the same model through every state the target may be
in): a cell may go first for a statement only the checker's other choices run, never the reverse.
A line counts for the statement it belongs to (coverage.py records a statement at its first line).
"""

from __future__ import annotations

import ast
import itertools
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import settings

from suites.conformance.catalog import CHECKS, Check

SEP = "|"


@dataclass(frozen=True, slots=True)
class Cell:
    check: Check
    spec_name: str

    @property
    def name(self) -> str:
        return f"{self.check.area}[{self.spec_name}]"


def cells(checks: tuple[Check, ...] = CHECKS) -> list[Cell]:
    """Every check's specs, in the catalog's order."""
    return [Cell(check, spec_name) for check in checks for spec_name in check.specs]


@dataclass(slots=True)
class Reach:
    """For each model file (relative to model/) and statement line: how many quick-pass programs of
    each cell ran it."""

    model: Path
    runs: dict[str, dict[int, Counter]] = field(default_factory=dict)
    seconds: float = 0.0

    def programs(self, file: str, line: int) -> Counter:
        """Cell name -> the quick-pass programs that ran the statement holding `line` of `file`."""
        return self.runs.get(file, {}).get(statement_line(self.model / file, line), Counter())

    def first(self, file: str, line: int, checks: tuple[Check, ...] = CHECKS) -> list[Cell]:
        """The cells that run the statement, most programs first (ties in the catalog's order)."""
        ran = self.programs(file, line)
        return sorted((c for c in cells(checks) if ran[c.name]), key=lambda c: -ran[c.name])


def statement_line(path: Path, line: int) -> int:
    """The first line of the innermost statement of `path` that holds `line` (where coverage.py
    records it; a `case` and its guard count as one, at the `case`), or `line` when none does."""
    best = None  # (first line, -last line) of the innermost so far
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.match_case):  # no position of its own: its pattern's and guard's
            span = (node.pattern.lineno, (node.guard or node.pattern).end_lineno or node.pattern.lineno)
        elif isinstance(node, ast.stmt):
            span = (node.lineno, node.end_lineno or node.lineno)
        else:
            continue
        if span[0] <= line <= span[1] and (best is None or (span[0], -span[1]) > best):
            best = (span[0], -span[1])
    return best[0] if best is not None else line


_TREES: dict[Path, ast.AST] = {}


def _tree(path: Path) -> ast.AST:
    if path not in _TREES:
        _TREES[path] = ast.parse(path.read_text(), filename=str(path))
    return _TREES[path]


def measure(model: Path, budget: settings, checks: tuple[Check, ...] = CHECKS, *, drain_idle_ms: int) -> Reach:
    """Run every cell of `checks` at `budget` on the model target under coverage.py."""
    import coverage

    from fixtures.targets.model_target import ModelTarget
    from suites.machines import run_conformance

    cov = coverage.Coverage(data_file=None, include=[str(model / "*"), str(model / "*" / "*")])
    started = time.perf_counter()
    cov.start()
    try:
        for cell in cells(checks):
            counter = itertools.count()

            def program_id(cell=cell, counter=counter) -> str:
                label = f"{cell.name}{SEP}{next(counter)}"
                cov.switch_context(label)
                return label

            run_conformance(ModelTarget(), cell.check.specs[cell.spec_name], program_id, kinds=cell.check.kinds,
                            settings_=budget, drain_idle_ms=drain_idle_ms)
    finally:
        cov.switch_context("")
        cov.stop()
    data = cov.get_data()
    runs: dict[str, dict[int, Counter]] = {}
    for measured in data.measured_files():
        path = Path(measured)
        by_line: dict[int, Counter] = defaultdict(Counter)
        for line, contexts in data.contexts_by_lineno(measured).items():
            for context in contexts:
                if context:
                    by_line[line][context.split(SEP)[0]] += 1
        runs[path.relative_to(model).as_posix()] = dict(by_line)
    return Reach(model=model, runs=runs, seconds=time.perf_counter() - started)
