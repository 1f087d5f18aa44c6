"""Model speed and traces: a fixed set of seeded random programs, each op answered by the ideal
broker (model/simulate.py) and stepped by the model, as the trace generator runs them.

    python -m benchmarks.model_speed [--rounds 5] [--against REV]

Prints the events stepped, the model's steps per second (wall clock, and per CPU second of the
process, steadier on a busy machine) and a hash of every op and completion (the events as the
generator writes them, `model.history.event_values`), so a change to the model can show it leaves
the traces alone and what it does to the speed. With `--against REV` the same
programs also run on that git revision, checked out with `git worktree add` into a temporary
folder (removed afterwards); the two builds alternate, each round in a fresh interpreter, and
their figures print side by side. The hashes must be equal for a change that keeps behaviour.

About 45,000 events: 50 programs of 100 steps on each of nine specs covering every subscription
type, dead letter, ack timeout, batch-index acks, a zero receiver queue and the Latest position
(seek, unload and cursor reads come from the op vocabulary's weights).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 15
PROGRAMS = 50
STEPS = 100
# Spec fields per spec, as keyword arguments of model.spec.Spec (strings for the enums, so the
# worker builds them with whatever model it imports).
SPECS: tuple[dict, ...] = (
    {"subscription_type": "Exclusive"},
    {"subscription_type": "Failover"},
    {"subscription_type": "Shared"},
    {"subscription_type": "Key_Shared"},
    {"subscription_type": "Shared", "max_redeliver_count": 2, "client_batch_index_ack": True},
    {"subscription_type": "Key_Shared", "max_redeliver_count": 1},
    {"subscription_type": "Exclusive", "ack_timeout_ms": 1000, "client_batch_index_ack": True},
    {"subscription_type": "Shared", "ack_timeout_ms": 2000, "max_redeliver_count": 3},
    {"subscription_type": "Failover", "receiver_queue_size": 0, "initial_position": "Latest", "ack_timeout_ms": 1000},
)


def measure() -> dict:
    """Run every program of every spec in this interpreter: events, seconds in the model, hash."""
    import model
    from model.history import event_values
    from model.simulate import run_random_program
    from model.spec import InitialPosition, Spec, SubscriptionType

    digest = hashlib.sha256()
    events = rejected = 0
    seconds = cpu = 0.0
    for fields in SPECS:
        fields = dict(fields, subscription_type=SubscriptionType(fields["subscription_type"]))
        if "initial_position" in fields:
            fields["initial_position"] = InitialPosition(fields["initial_position"])
        spec = Spec(**fields)
        for i in range(PROGRAMS):
            started, started_cpu = time.perf_counter(), time.process_time()
            try:
                trace = run_random_program(spec, (SEED << 32) | i, STEPS)
            except AssertionError as error:
                trace = None
                digest.update(f"rejected {i}: {error}\n".encode())
            seconds += time.perf_counter() - started
            cpu += time.process_time() - started_cpu
            if trace is None:
                rejected += 1
                continue
            events += len(trace)
            for step, (op, completion) in enumerate(trace):
                digest.update(repr(event_values(f"p{i}", spec, step, op, completion)).encode())
    return {"events": events, "rejected": rejected, "seconds": seconds, "cpu": cpu, "hash": digest.hexdigest()[:16],
            "model": str(Path(model.__file__).resolve().parent.parent)}


def _run(tree: Path) -> dict:
    """One measurement in a fresh interpreter importing the model from `tree`."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker"], cwd=tree, env=env,
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    if Path(result["model"]) != tree.resolve():
        raise RuntimeError(f"the worker imported the model from {result['model']}, not {tree}")
    return result


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def _summary(name: str, runs: list[dict]) -> str:
    rates = [r["events"] / r["seconds"] for r in runs]
    cpu_rates = [r["events"] / r["cpu"] for r in runs]
    first = runs[0]
    return (f"{name:<24} {first['events']:>7} events  {first['rejected']:>2} rejected  hash {first['hash']}\n"
            f"{'':<24} {statistics.median(rates):>8,.0f} steps/s median ({min(rates):,.0f}-{max(rates):,.0f}); "
            f"{statistics.median(cpu_rates):,.0f} per CPU second ({min(cpu_rates):,.0f}-{max(cpu_rates):,.0f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measurements per build (alternating with --against)")
    parser.add_argument("--against", metavar="REV", help="also run a git revision, side by side")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(measure()))
        return 0
    here = f"working tree ({_git('rev-parse', '--short', 'HEAD')})"
    builds: dict[str, list[dict]] = {here: []}
    with tempfile.TemporaryDirectory(prefix="model-speed-") as scratch:
        other = Path(scratch) / "tree"
        if args.against:
            _git("worktree", "add", "--detach", str(other), args.against)
            builds[f"{args.against} ({_git('rev-parse', '--short', args.against)})"] = []
        try:
            for _ in range(args.rounds):
                for name, runs in builds.items():
                    runs.append(_run(ROOT if name == here else other))
        finally:
            if args.against:
                _git("worktree", "remove", "--force", str(other))
    print(f"{len(SPECS)} specs x {PROGRAMS} programs x {STEPS} steps, seed {SEED}, {args.rounds} rounds, "
          f"{time.strftime('%Y-%m-%d')}")
    for name, runs in builds.items():
        if len({(r["events"], r["hash"]) for r in runs}) != 1:
            raise RuntimeError(f"{name}: runs disagree: {runs}")
        print(_summary(name, runs))
    hashes = {runs[0]["hash"] for runs in builds.values()}
    if len(builds) > 1:
        print("same traces" if len(hashes) == 1 else "TRACES DIFFER")
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
