"""Reproduction length: the suite's shrunk program beside the shortest program that shows the fault.

    python -m benchmarks.reproduction_length [--fault NAME] [--max-nodes N] [--hypothesis-only]

For every faulty target (fixtures/targets/faulty.py) the suite's quality run (suites/quality/catch.py,
`ci` profile, breadth first over the catalog) catches the fault with some check and spec; its
shrunk program is measured, then an exhaustive uniform-cost search (suites/quality/shortest.py)
over the same check's vocabulary, on the same spec and faulty target, finds the shortest program
that breaks the same guarantee.

Lengths are counted two ways, the same way for both programs:

- ops: the ops the reproduction performs, up to the failure (each receive of a drain or of the
  machine's teardown counts): the failure's history. The issue's goal is stated in these steps.
- rules: Hypothesis rule steps (a drain is one step; the teardown is not a step).

Only programs shorter than the shrunk one are searched (the shrunk one is a witness at its own
length). `--hypothesis-only` measures the program as Hypothesis shrank it, without the suite's own program
shrinking (suites/programs.py `tighten`). When the search's node budget runs out first, the figure is a lower bound (marked >=) and
the difference an upper bound (<=).
"""

from __future__ import annotations

import argparse
import statistics
import time

from fixtures.targets.faulty import FAULTS
from suites import machines
from suites.quality.catch import first_failure
from suites.quality.shortest import shortest

GOAL = 2  # at most this many steps longer than the shortest


def rule_count(failure) -> int:
    return sum(1 for rule, _ in failure.steps if rule != "teardown")


def measure(fault, max_nodes: int) -> dict:
    started = time.perf_counter()
    catch = first_failure(fault)
    caught_in = time.perf_counter() - started
    if catch is None:
        return {"fault": fault.name, "caught": False}
    failure, guarantee = catch.failure, catch.failure.violation.guarantee
    row = {"fault": fault.name, "caught": True, "where": catch.where, "guarantee": guarantee.value,
           "caught_in": caught_in, "shrunk_ops": len(failure.history), "shrunk_rules": rule_count(failure)}
    for unit, shrunk in (("ops", len(failure.history)), ("rules", rule_count(failure))):
        # Only programs shorter than the shrunk one need trying: the shrunk one is a witness.
        started = time.perf_counter()
        found = shortest(fault.target, catch.spec, catch.check.kinds, guarantee, unit=unit, bound=shrunk - 1,
                         max_nodes=max_nodes)
        row[f"{unit}_search_s"] = time.perf_counter() - started
        row[f"{unit}_nodes"] = found.nodes
        if found.length is not None:
            row[f"shortest_{unit}"], row[f"exact_{unit}"], row[f"program_{unit}"] = found.length, True, found.program
        elif found.complete:  # nothing shorter exists
            row[f"shortest_{unit}"], row[f"exact_{unit}"], row[f"program_{unit}"] = shrunk, True, "the shrunk one"
        else:  # the budget ran out: every program below lower_bound was tried
            row[f"shortest_{unit}"], row[f"exact_{unit}"], row[f"program_{unit}"] = found.lower_bound, False, "?"
    return row


def _length(row: dict, unit: str) -> str:
    return f"{'' if row[f'exact_{unit}'] else '>='}{row[f'shortest_{unit}']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", action="append", help="only this fault (repeatable)")
    parser.add_argument("--max-nodes", type=int, default=100_000, help="search budget (states) per fault and unit")
    parser.add_argument("--programs", action="store_true", help="print each shortest program")
    parser.add_argument("--hypothesis-only", action="store_true", help="without the suite's program shrinking")
    args = parser.parse_args()
    if args.hypothesis_only:
        machines.tighten = lambda failure, *args, **kwargs: failure
    faults = [f for f in FAULTS if not args.fault or f.name in args.fault]
    rows = []
    for fault in faults:
        row = measure(fault, args.max_nodes)
        rows.append(row)
        if args.programs and row["caught"]:
            program = row["program_ops"]
            print(f"{fault.name}: {program if isinstance(program, str) else ' ; '.join(map(str, program))}",
                  flush=True)
    print("| fault | caught by | guarantee | shrunk ops | shortest ops | difference | goal (<= 2) "
          "| shrunk rules | shortest rules | search s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    differences = []
    for row in rows:
        if not row["caught"]:
            print(f"| {row['fault']} | not caught | | | | | | | | |")
            continue
        difference = row["shrunk_ops"] - row["shortest_ops"]
        differences.append(difference)
        met = "yes" if difference <= GOAL else ("no" if row["exact_ops"] else "no (at most)")
        print(f"| {row['fault']} | {row['where']} | {row['guarantee']} | {row['shrunk_ops']} | {_length(row, 'ops')} "
              f"| {'' if row['exact_ops'] else '<='}{difference} | {met} | {row['shrunk_rules']} "
              f"| {_length(row, 'rules')} | {row['ops_search_s'] + row['rules_search_s']:.1f} |")
    if differences:
        met = sum(1 for d in differences if d <= GOAL)
        print(f"\ndifference in ops: median {statistics.median(differences):g}, max {max(differences)}; "
              f"goal met for {met} of {len(differences)} faults")


if __name__ == "__main__":
    main()
