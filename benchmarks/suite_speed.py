"""Conformance suite speed: model steps per second, machine steps per second on the model target
beside a no-op machine of the same shape (Hypothesis's own floor), and on a real broker.

    python -m benchmarks.suite_speed [--broker]

"Steps" are ops performed (a drain counts each receive). The floor machine has the same rules,
preconditions and argument strategies as the conformance machine and does nothing in them: the
ratio says how much of the budget the model and the lock-step check take.
"""

from __future__ import annotations

import argparse
import itertools
import time

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from fixtures import hypothesis_profiles  # noqa: F401
from fixtures.targets import lockstep
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.simulate import run_random_program
from model.spec import SubscriptionType
from suites.conformance.catalog import CHECKS, SHARED
from suites.machines import run_conformance


class _Counter:
    """Counts the ops performed, and the seconds spent waiting on purpose: ticks (a nack window,
    the ack grouping, a Failover pause) and receives that ended with nothing (a drain making sure
    nothing more is owed)."""

    def __init__(self) -> None:
        self.ops = 0
        self.waiting = 0.0
        original = lockstep.Lockstep.do

        def counting(run, op):
            self.ops += 1
            started = time.perf_counter()
            completion = original(run, op)
            if isinstance(op, o.Tick) or (isinstance(op, o.Receive) and completion.value is None):
                self.waiting += time.perf_counter() - started
            return completion

        lockstep.Lockstep.do = counting


def raw_model_steps_per_second(seconds: float = 3.0) -> float:
    steps, started, seed = 0, time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        for kind in SubscriptionType:
            steps += len(run_random_program(SHARED.with_(subscription_type=kind), seed, 60))
            seed += 1
    return steps / (time.perf_counter() - started)


def machine_steps_per_second(target, counter: _Counter, profile: settings) -> tuple[float, int]:
    ids = (f"bench-{n}" for n in itertools.count())
    counter.ops, counter.waiting = 0, 0.0
    started = time.perf_counter()
    for check in CHECKS:
        if check.slow:
            continue
        for spec in check.specs.values():
            run_conformance(target, spec, lambda: next(ids), kinds=check.kinds, settings_=profile,
                            drain_idle_ms=30 if target.name == "model" else 1000)
    return counter.ops / (time.perf_counter() - started), counter.ops


def floor_steps_per_second(profile: settings) -> float:
    """The same machine shape with empty rules: what Hypothesis itself costs per step."""
    done = [0]

    class Floor(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.k = 0

        @rule()
        def drain(self) -> None:
            done[0] += 1

    for i, kind in enumerate(CHECKS[0].kinds):
        def perform(self, choice, i=i):
            done[0] += 1
            self.k += 1

        perform.__name__ = kind
        setattr(Floor, kind, precondition(lambda self, i=i: (self.k + i) % 4 != 0)(
            rule(choice=st.integers(0, 255))(perform)))
    started = time.perf_counter()
    for check in CHECKS:
        if not check.slow:
            for _ in check.specs:
                run_state_machine_as_test(Floor, settings=profile)
    return done[0] / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", action="store_true", help="also measure against the embedded broker")
    args = parser.parse_args()
    profile = settings.get_profile("ci")
    counter = _Counter()
    raw = raw_model_steps_per_second()
    print(f"raw model (simulate + step, random programs)   : {raw:9,.0f} steps/s")
    machine, ops = machine_steps_per_second(ModelTarget(), counter, profile)
    floor = floor_steps_per_second(profile)
    print(f"conformance machine, model target, ci profile  : {machine:9,.0f} steps/s ({ops:,} ops)")
    print(f"no-op machine of the same shape (floor)        : {floor:9,.0f} steps/s")
    print(f"ratio machine / floor                          : {machine / floor:9.2f}")
    if args.broker:
        from fixtures.broker import Broker
        from fixtures.targets.pulsar_target import PulsarTarget

        broker = Broker()
        status = broker.start()
        target = PulsarTarget(status.service_url, status.admin_url, controller=broker)
        broker_profile = settings(profile, max_examples=6, stateful_step_count=25)
        rate, ops = machine_steps_per_second(target, counter, broker_profile)
        elapsed = ops / rate
        busy = elapsed - counter.waiting
        print(f"conformance machine, real broker (6 examples)  : {rate:9,.0f} steps/s ({ops:,} ops in {elapsed:.0f} s)")
        print(f"  of which waiting on purpose (ticks, empty receives): {counter.waiting:.0f} s; "
              f"the other ops: {(ops / busy) if busy > 0 else 0:,.0f} steps/s")
        target.close()


if __name__ == "__main__":
    main()
