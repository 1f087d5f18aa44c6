"""The model's speed on partitioned topics, side by side with the same programs on one topic.

    python -m benchmarks.partitioned_speed [--programs 50] [--steps 100] [--rounds 3]

Seeded random programs (model/simulate.run_random_program: each op answered by the ideal broker
and stepped by the model) on each subscription type, once on a topic without partitions and once
on topics of 2 and 3 partitions (model/partitions.py), from the same seeds. The op vocabulary's
weights draw the ops, without a seek or a cursor read, which the model does not take on a
partitioned topic: the topic without partitions runs without them too, so the columns differ only
by the partitions. Prints steps per second (the median of the rounds, per CPU second of the
process) per cell.
"""

from __future__ import annotations

import argparse
import statistics
import time

from model import ops as o
from model.simulate import run_random_program
from model.spec import Spec, SubscriptionType
from model.vocabulary import random_op

PARTITIONS = (0, 2, 3)
_LEFT_OUT = (o.Seek, o.ReadCursor)


def _draw(state, rng):
    while True:
        op = random_op(state, rng)
        if not isinstance(op, _LEFT_OUT):
            return op


def steps_per_second(spec: Spec, programs: int, steps: int) -> float:
    started = time.process_time()
    for seed in range(programs):
        run_random_program(spec, seed, steps, draw=_draw)
    return programs * steps / (time.process_time() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=50)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{args.programs} programs of {args.steps} steps per cell, median of {args.rounds} rounds, "
          "steps per CPU second")
    print("| subscription | " + " | ".join("no partitions" if n == 0 else f"{n} partitions" for n in PARTITIONS)
          + " |")
    print("|---|" + "---:|" * len(PARTITIONS))
    for kind in SubscriptionType:
        cells = []
        for partitions in PARTITIONS:
            spec = Spec(subscription_type=kind, nack_delay_ms=100, partitions=partitions)
            rounds = [steps_per_second(spec, args.programs, args.steps) for _ in range(args.rounds)]
            cells.append(f"{statistics.median(rounds):,.0f}")
        print(f"| {kind.value} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
