"""Catch rate: how often each cell of a check catches a faulty target, over runs with random seeds.

    python -m benchmarks.catch_rate FAULT [--area AREA ...] [--spec NAME ...] [--runs N] [--profile ci|nightly]
    python -m benchmarks.catch_rate --mutant ID --area AREA [--spec NAME ...] [--runs N]

The `ci` profile is derandomized: a fault is caught or missed the same way at every run, and a
change of the generation that turns a miss into a catch may be luck of the draw. Here each run of
each cell (the checks of `--area`, default every check that declares a guarantee the fault breaks)
draws fresh random programs (not derandomized, no example database, no shrinking: only whether a
check fails counts), against the faulty target of fixtures/targets/faulty.py (FAULTS, which the quality test must catch,
or UNGATED, written apart from the suite and caught too rarely yet to be asserted). Printed per cell: runs
caught of runs, and the seconds they took; the figure to compare before and after a change of
suites/generation.py; `--last-look both` prints each cell with and without the teardown's last
look at the cursor (suites.programs.last_look) side by side. `--mutant ID` measures the mutants of the model whose id
(suites/quality/mutator.py, as the mutation report prints it) starts with ID instead, each in turn:
how often a cell catches a mutant the mutation run let survive.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import Phase, settings

from fixtures import hypothesis_profiles  # noqa: F401  (registers the profiles)
from fixtures.targets.faulty import FAULTS, UNGATED
from fixtures.targets.lockstep import ConformanceFailure
from model.nondet import ImpossibleStamp
from suites.conformance.catalog import CHECKS
from suites.machines import run_conformance
from suites.generation import SWARM, using
from suites.quality.catch import DRAIN_IDLE_MS

LOOKS = {"on": (True,), "off": (False,), "both": (False, True)}


def caught(fault, check, spec, run: int, budget: settings) -> bool:
    ids = (f"{fault.name}-{run}-{n}" for n in itertools.count())
    try:
        run_conformance(fault.target(), spec, lambda: next(ids), kinds=check.kinds, settings_=budget,
                        drain_idle_ms=DRAIN_IDLE_MS)
    except (ConformanceFailure, ImpossibleStamp):
        return True
    return False


@dataclass(frozen=True)
class _Mutant:
    """A mutant of the model as a fault: its target is the model with that one rule changed."""

    name: str
    modules: tuple

    def target(self):
        from fixtures.targets.mutant_target import MutantTarget

        return MutantTarget(*self.modules, name=self.name)


def mutants_named(prefix: str, root: Path) -> list[_Mutant]:
    from suites.quality.mutator import build, load, mutants

    return [_Mutant(name=m.id, modules=tuple(load(build(m, root), root)))
            for m in mutants() if m.id.startswith(prefix)]


def main(argv: list[str] | None = None) -> int:
    names = [f.name for f in FAULTS + UNGATED]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.catch_rate", description=__doc__.splitlines()[0])
    parser.add_argument("fault", nargs="?", choices=names, metavar="FAULT", help=f"one of: {', '.join(names)}")
    parser.add_argument("--mutant", metavar="ID", help="the model's mutants whose id starts with ID, instead of a fault")
    parser.add_argument("--area", action="append", default=[], help="only these check areas")
    parser.add_argument("--spec", action="append", default=[], help="only the specs of these names")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--profile", default="ci", choices=("ci", "nightly"))
    parser.add_argument("--last-look", default="on", choices=("on", "off", "both"),
                        help="the teardown's last look at the cursor (both: each cell without it, then with it)")
    args = parser.parse_args(argv)
    if (args.fault is None) == (args.mutant is None):
        parser.error("name a FAULT or a --mutant ID, one of them")
    if args.mutant is not None and not args.area:
        parser.error("--mutant needs --area: a mutant does not say which guarantee it breaks")
    unknown = set(args.area) - {c.area for c in CHECKS}
    if unknown:
        parser.error(f"no check area {', '.join(sorted(unknown))}; areas: {', '.join(c.area for c in CHECKS)}")
    # The mutants' packages are imported from a folder of this run's own, removed at its end.
    with tempfile.TemporaryDirectory(prefix="catch-rate-") as root:
        return _measure(parser, args, Path(root))


def _measure(parser: argparse.ArgumentParser, args: argparse.Namespace, root: Path) -> int:
    if args.fault is not None:
        faults = [next(f for f in FAULTS + UNGATED if f.name == args.fault)]
        checks = [c for c in CHECKS if (c.area in args.area if args.area else c.guarantees & faults[0].breaks)]
    else:
        faults = mutants_named(args.mutant, root)
        if not faults:
            parser.error(f"no mutant's id starts with {args.mutant!r} (the mutation report lists the ids)")
        checks = [c for c in CHECKS if c.area in args.area]
    profile = settings.get_profile(args.profile)
    budget = settings(profile, derandomize=False, database=None,
                      phases=[p for p in profile.phases if p is not Phase.shrink])
    for fault in faults:
        print(f"{fault.name}: {args.runs} runs a cell, profile {args.profile} ({budget.max_examples} programs "
              f"of up to {budget.stateful_step_count} steps, more for a check of many kinds: "
              f"suites/machines.py, program_length), fresh random programs each run", flush=True)
        for check in checks:
            for spec_name, spec in check.specs.items():
                if args.spec and spec_name not in args.spec:
                    continue
                figures = []
                for look in LOOKS[args.last_look]:
                    started = time.perf_counter()
                    with using(replace(SWARM, last_look=look)):
                        hits = sum(caught(fault, check, spec, run, budget) for run in range(args.runs))
                    figures.append(f"{'with' if look else 'without'} the last look {hits} / {args.runs} "
                                   f"({time.perf_counter() - started:.0f} s)" if args.last_look == "both" else
                                   f"{hits} / {args.runs} ({time.perf_counter() - started:.0f} s)")
                print(f"  {check.area}[{spec_name}]: caught {', '.join(figures)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
