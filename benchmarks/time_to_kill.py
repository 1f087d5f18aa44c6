"""Time to kill in the catalog's order and in the reach order (suites/quality/reach.py), side by side.

    python -m benchmarks.time_to_kill --report DIR/mutation.json [--report ...] [--only TEXT ...]

The mutants the reports (suites.quality.mutation's mutation.json) count killed, those whose id
still names a mutant of the model as it stands, each run in both orders in one process run: every
run in the mutation run's own forked worker (suites.quality.mutation.run_all), one at a time, the
order that goes first alternating from one mutant to the next. Printed: each mutant's time to kill
(finding and shrinking, as the mutation report counts it) and the cell that killed it in both
orders, the medians, and what measuring the reach cost once (every cell's quick pass on the model
target under coverage.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from suites.quality import mutation
from suites.quality.catch import DRAIN_IDLE_MS, budgets
from suites.quality.mutation import KILLED, SNAPSHOT, TIMEOUT_S
from suites.quality.mutator import MODEL, mutants
from suites.quality.reach import measure


def _timed(mutant, reach) -> dict:
    """One run of `mutant` through the mutation run's own worker (its CPU bound, its clean-up), in
    the reach order when `reach` is given. No random programs: a mutant the catalog misses is
    reported equivalent at once, not judged."""
    root = Path(tempfile.mkdtemp(prefix="time-to-kill-"))  # run_all removes it
    shutil.copytree(MODEL, root / SNAPSHOT, ignore=shutil.ignore_patterns("__pycache__"))
    mutation._REACH[:] = [reach] if reach is not None else []
    mutation._PROGRAMS[:] = []
    return mutation.run_all([mutant], root, 1, TIMEOUT_S, progress=lambda _: None)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.time_to_kill", description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, action="append", required=True, help="a mutation.json")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT", help="only the ids that contain TEXT")
    args = parser.parse_args(argv)
    killed = set()
    for path in args.report:
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            parser.error(f"{path}: not a mutation report: {error}")
        killed |= {m["id"] for m in report.get("mutants", []) if m.get("outcome") == KILLED}
    every = {m.id: m for m in mutants(model=MODEL)}
    chosen = [every[i] for i in sorted(killed) if i in every and (not args.only or any(t in i for t in args.only))]
    gone = sorted(i for i in killed if i not in every)
    if not chosen:
        parser.error("no killed mutant of the reports names a mutant of the model as it stands")
    quick, _ = budgets()
    reach = measure(MODEL, quick, drain_idle_ms=DRAIN_IDLE_MS)
    print(f"reach measured once: {reach.seconds:.1f} s; {len(chosen)} mutants "
          f"({len(gone)} of the reports' kills no longer name a mutant of the model)", flush=True)
    times: dict[str, list[float]] = {"catalog": [], "reach": []}
    print(f"{'mutant':70} {'catalog s':>9} {'reach s':>8}  cells (catalog / reach)")
    for n, mutant in enumerate(chosen):
        order = ("catalog", "reach") if n % 2 == 0 else ("reach", "catalog")
        results = {name: _timed(mutant, reach if name == "reach" else None) for name in order}
        row = []
        for name in ("catalog", "reach"):
            r = results[name]
            if r["outcome"] == KILLED:
                times[name].append(r["seconds"])
                row.append((f"{r['seconds']:.1f}", r["by"]))
            else:
                times[name].append(float("inf"))
                row.append((r["outcome"], "-"))
        print(f"{mutant.id[:70]:70} {row[0][0]:>9} {row[1][0]:>8}  {row[0][1]} / {row[1][1]}", flush=True)
    for name, seconds in times.items():
        kills = sum(s != float("inf") for s in seconds)
        print(f"{name}: median time to kill {statistics.median(seconds):.1f} s, {kills} of {len(seconds)} killed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
