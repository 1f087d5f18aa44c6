"""Z3 figures: the time of each inductive proof and of all of them, and the time to decide crash
admissibility at 1k, 10k and 100k ack events (an admissible epoch, and the same epoch with one
contradictory observation, core included, with and without the suspects' shortcut).

    python -m benchmarks.z3_figures [--runs 3] [--sizes 1000 10000 100000]

Times are wall-clock medians over the runs; Z3 itself is bounded by its resource limit, not time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from model.smt import admissibility as adm
from model.smt.catalog import PROOFS
from model.smt.induction import Proved, Refuted
from model.smt.solver import Unknown


def _timed(run: Callable[[], object], runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _verdict(result: object) -> str:
    match result:
        case Proved():
            return "proved"
        case Refuted(counterexample=counterexample):
            return f"REFUTED: {counterexample.describe()}"
        case adm.Admissible(witnesses=witnesses):
            return f"admissible ({sum(len(w.kept) for w in witnesses)} acks kept)"
        case adm.Inadmissible(core=core):
            return f"inadmissible, core of {len(core)}: {adm.Inadmissible(core=core).describe()}"
        case Unknown(reason=reason):
            return f"UNKNOWN: {reason}"
    return repr(result)


def proof_figures(runs: int) -> None:
    print("proofs (one-step induction; seconds)")
    total = 0.0
    for proof in PROOFS:
        seconds, result = _timed(proof.prove, runs)
        total += seconds
        print(f"  {proof.name:<24} {seconds:7.3f}  {proof.guarantee:<24}  {_verdict(result)}")
    print(f"  {'all':<24} {total:7.3f}")


def _lying(epoch: adm.Epoch) -> adm.Epoch:
    """The epoch with one unacked entry reported as not redelivered (the cursor says otherwise)."""
    unacked = sorted(epoch.redelivered)
    return adm.Epoch(entries=epoch.entries, floor=epoch.floor, acks=epoch.acks, cursor=epoch.cursor,
                     redelivered=epoch.redelivered - {unacked[len(unacked) // 2]})


def admissibility_figures(sizes: list[int], runs: int) -> None:
    print("crash admissibility (one epoch, 4 consumers, 10% cumulative; seconds)")
    for size in sizes:
        epoch = adm.synthetic_epoch(random.Random(size), size)
        lying = _lying(epoch)
        for label, case, hints in (("admissible", epoch, True), ("one lie", lying, True),
                                   ("one lie, no suspects (Z3 core over blocks)", lying, False)):
            seconds, result = _timed(lambda case=case, hints=hints: adm.check_admissible([case], hints=hints), runs)
            print(f"  {size:>7,} events  {seconds:7.3f}  {label}: {_verdict(result)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    args = parser.parse_args()
    proof_figures(args.runs)
    admissibility_figures(args.sizes, args.runs)


if __name__ == "__main__":
    main()
