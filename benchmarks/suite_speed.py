"""Conformance suite speed: model steps per second, machine steps per second on the model target
beside a no-op machine of the same shape (Hypothesis's own floor), and on a real broker with the
Python client in process and each client as a driver process (by default the Python and the Java
client), side by side (each spec run by every side in turn).

    python -m benchmarks.suite_speed [--broker [--client python|java|cmd:COMMAND ...] [--service-url URL --admin-url URL]]

With `--broker` and no URLs, a broker of its own is started on free ports and stopped at the end.

"Steps" are ops performed (a drain counts each receive). The floor machine has the same rules,
preconditions and argument strategies as the conformance machine and does nothing in them: the
ratio says how much of the budget the model and the lock-step check take.
"""

from __future__ import annotations

import argparse
import itertools
import time

from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from fixtures import hypothesis_profiles  # noqa: F401
from fixtures.targets import lockstep
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.simulate import run_random_program
from model.spec import SubscriptionType
from suites.conformance.catalog import CHECKS, SHARED
from suites.machines import performable, run_conformance


class _Counter:
    """Counts the ops performed, and the seconds spent waiting on purpose: ticks (a nack window,
    the ack grouping, a Failover pause) and receives that ended with nothing, by kind (a receive
    op that expected a message, one that expected none; in a drain, a glance while nothing is owed,
    a poll while something is), and by check area."""

    def __init__(self) -> None:
        self.ops = 0
        self.waiting = 0.0
        self.kinds: dict[str, float] = {}
        self.areas: dict[str, list[float]] = {}  # area -> [ops, seconds, seconds waiting]
        self.area = ""
        self._in_drain = False
        do, drain = lockstep.Lockstep.do, lockstep.Lockstep.drain

        def counting(run, op):
            self.ops += 1
            started = time.perf_counter()
            completion = do(run, op)
            spent = time.perf_counter() - started
            area = self.areas.setdefault(self.area, [0, 0.0, 0.0])
            area[0] += 1
            kind = None
            if isinstance(op, o.Tick):
                kind = "tick"
            elif isinstance(op, o.Receive) and completion.value is None:
                if self._in_drain:
                    kind = "drain: poll while owed" if op.timeout_ms and op.timeout_ms > 20 else "drain: glance"
                else:
                    kind = "receive op: expected" if op.timeout_ms and op.timeout_ms >= 100 else "receive op: none expected"
            if kind is not None:
                self.waiting += spent
                self.kinds[kind] = self.kinds.get(kind, 0.0) + spent
                area[2] += spent
            return completion

        def draining(run, *args, **kwargs):
            self._in_drain = True
            try:
                return drain(run, *args, **kwargs)
            finally:
                self._in_drain = False

        lockstep.Lockstep.do = counting
        lockstep.Lockstep.drain = draining

    def reset(self) -> None:
        self.ops, self.waiting, self.kinds, self.areas = 0, 0.0, {}, {}


def raw_model_steps_per_second(seconds: float = 3.0) -> float:
    steps, started, seed = 0, time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        for kind in SubscriptionType:
            steps += len(run_random_program(SHARED.with_(subscription_type=kind), seed, 60))
            seed += 1
    return steps / (time.perf_counter() - started)


def machine_steps_per_second(target, counter: _Counter, profile: settings) -> tuple[float, int]:
    ids = (f"bench-{n}" for n in itertools.count())
    counter.reset()
    started = time.perf_counter()
    for check in CHECKS:
        if check.slow:
            continue
        counter.area = check.area
        for spec in check.specs.values():
            begun = time.perf_counter()
            run_conformance(target, spec, lambda: next(ids), kinds=check.kinds, settings_=profile,
                            drain_idle_ms=30 if target.name == "model" else 1000)
            counter.areas.setdefault(check.area, [0, 0.0, 0.0])[1] += time.perf_counter() - begun
    return counter.ops / (time.perf_counter() - started), counter.ops


class _Side:
    """One way of driving the client, measured over the specs it ran: ops, seconds, seconds waiting."""

    def __init__(self, label: str, target) -> None:
        self.label, self.target = label, target
        self.ops, self.seconds, self.waiting = 0, 0.0, 0.0
        self.failed: list[str] = []  # specs whose run ended in a failure (their steps up to it count)

    def line(self) -> str:
        busy = self.seconds - self.waiting
        failed = f"; failed: {', '.join(self.failed)}" if self.failed else ""
        return (f"{self.label:<34}: {self.ops / self.seconds:6.0f} steps/s ({self.ops:,} ops in {self.seconds:.0f} s); "
                f"without the waits on purpose ({self.waiting:.0f} s): {self.ops / busy if busy > 0 else 0:6.0f} steps/s"
                f"{failed}")


def side_by_side(sides: list[_Side], counter: _Counter, profile: settings) -> None:
    """Every non-slow spec of the catalog run by each side in turn (so that a busy machine weighs on
    all). A run that ends in a failure (a false alarm, or a client's finding) is named, not fatal."""
    ids = (f"bench-{n}" for n in itertools.count())
    for check in (c for c in CHECKS if not c.slow):
        for spec_id, spec in check.specs.items():
            lacking = {side.label: _lacking(side.target, check.kinds, spec) for side in sides}
            if any(lacking.values()):  # not applicable for a client: the suite skips it, and so do all sides
                print(f"left out {check.area}[{spec_id}]: " + "; ".join(
                    f"{label} lacks {', '.join(missing)}" for label, missing in lacking.items() if missing))
                continue
            # the same vocabulary for every side: a fault (a client crash) only if every side performs it
            kinds = tuple(k for k in check.kinds if all(k in performable(check.kinds, side.target) for side in sides))
            for side in sides:
                counter.reset()
                begun = time.perf_counter()
                try:
                    run_conformance(side.target, spec, lambda: next(ids), kinds=kinds, settings_=profile,
                                    drain_idle_ms=1000)
                except Exception as error:  # noqa: BLE001  (a verdict, not the benchmark's business)
                    side.failed.append(f"{check.area}[{spec_id}] {type(error).__name__}")
                    # what broke, so that a false alarm seen here can be followed up
                    print(f"{side.label}: {check.area}[{spec_id}]: " + "\n    ".join(str(error).splitlines()[:40]))
                side.seconds += time.perf_counter() - begun
                side.ops += counter.ops
                side.waiting += counter.waiting


def _lacking(target, kinds, spec) -> list[str]:
    """What a check needs that the side's client does not declare (fixtures/conformance.py skips it
    as not applicable); the Python client in process declares what its driver declares."""
    if callable(getattr(target, "lacking", None)):
        return target.lacking(kinds, spec)
    from drivers import wire
    from drivers.python.driver import CAPABILITIES

    return wire.lacking({"ops": list(wire.CLIENT_OPS), "capabilities": list(CAPABILITIES)}, kinds, spec)


def broker_comparison(args, counter: _Counter, profile: settings) -> None:
    from fixtures.broker import Broker, BrokerConfig, free_port
    from fixtures.targets.loader import pulsar_target
    from fixtures.targets.pulsar_target import PulsarTarget

    own = None
    if args.service_url:
        service_url, admin_url, controller = args.service_url, args.admin_url, None
    else:
        import os

        own = Broker(BrokerConfig(instance=f"bench-{os.getpid()}", broker_port=free_port(), web_port=free_port()))
        own.start(fresh=True)
        service_url, admin_url, controller = own.config.service_url, own.config.admin_url, own
    sides = []
    try:
        sides = [_Side("Python client in process", PulsarTarget(service_url, admin_url, controller=controller))]
        sides += [_Side(f"client {client} as a driver process",
                        pulsar_target(service_url, admin_url, controller=controller, client=client))
                  for client in args.client or ["python", "java"]]
        # as the suite runs a real broker (fixtures/hypothesis_profiles.py settings_for): no shrinking, so
        # that a client's finding (the Rust client fails most specs) costs its program, not minutes of replays
        side_by_side(sides, counter, settings(profile, max_examples=6, stateful_step_count=25,
                                              phases=[Phase.explicit, Phase.reuse, Phase.generate]))
        for side in sides:
            print(side.line())
        base = sides[0]
        for driven in sides[1:]:
            print(f"{driven.label + ' / in process':<34}: {(driven.ops / driven.seconds) / (base.ops / base.seconds):6.2f} "
                  f"(without the waits: {(driven.ops / (driven.seconds - driven.waiting)) / (base.ops / (base.seconds - base.waiting)):.2f})")
    finally:
        for side in sides:
            side.target.close()
        if own is not None:
            own.stop()


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
    parser.add_argument("--broker", action="store_true",
                        help="also measure on a real broker: the Python client in process and each client as a driver")
    parser.add_argument("--client", action="append", default=None,
                        help="a driver compared with in process (python, java, cmd:COMMAND; repeatable; default: python and java)")
    parser.add_argument("--service-url", default=None, help="a running broker (else one is started on free ports)")
    parser.add_argument("--admin-url", default=None)
    parser.add_argument("--broker-only", action="store_true", help="skip the model figures")
    args = parser.parse_args()
    profile = settings.get_profile("ci")
    counter = _Counter()
    if not args.broker_only:
        raw = raw_model_steps_per_second()
        print(f"raw model (simulate + step, random programs)   : {raw:9,.0f} steps/s")
        machine, ops = machine_steps_per_second(ModelTarget(), counter, profile)
        floor = floor_steps_per_second(profile)
        print(f"conformance machine, model target, ci profile  : {machine:9,.0f} steps/s ({ops:,} ops)")
        print(f"no-op machine of the same shape (floor)        : {floor:9,.0f} steps/s")
        print(f"ratio machine / floor                          : {machine / floor:9.2f}")
    if args.broker or args.broker_only:
        broker_comparison(args, counter, profile)


if __name__ == "__main__":
    main()
