"""Rule coverage: which rules and branches of the model the generated programs reach, and how fast
the suite catches the faulty targets, with the plain generation and the swarm generation side by
side (suites/generation.py).

    python -m benchmarks.rule_coverage [--profile ci|nightly] [--examples N] [--area AREA ...]
                                       [--generation plain|swarm ...] [--faults] [--branches]

Every check of the conformance catalog (suites/conformance/catalog.py; the slow ones too) runs on
the model target with the profile's programs, under coverage.py with one dynamic context per
program. Printed, for each generation:

- per rule (each check of model.checks.RULES and each function of model/transitions/): programs
  per 100 that reach it (run its body), in the check about it that reaches it most (for a check:
  the catalog checks that declare its guarantee; for a transition: any), and the rules under one
  per 100;
- per check area: how many of those rules its programs reach;
- per module (model/transitions/*.py, model/checks.py, model/nondet.py, model/simulate.py): the
  branches no program reached (`--branches` lists them);
- per check area: programs per 100 that produce each named state combination (`SITUATIONS`: a
  nack while its entry is partly acked, an unload while receiver queues hold messages, a tick
  just before or after a window's bound, ...), judged on the model state before each op;
- with `--faults`: the time for suites/quality's catcher to catch each faulty target
  (fixtures/targets/faulty.py FAULTS), where, the shrunk program's length, and the catch rate.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from hypothesis import settings

from fixtures import hypothesis_profiles  # noqa: F401  (registers the profiles)
from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.checks import RULES
from model.state import ACKED, AVAILABLE, HELD, State
from suites import generation as gen
from suites.conformance.catalog import CHECKS, Check
from suites.machines import run_conformance

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "model" / "transitions").glob("*.py")) + [
    ROOT / "model" / name for name in ("checks.py", "nondet.py", "simulate.py")]
GENERATIONS = {"plain": gen.PLAIN, "swarm": gen.SWARM}
# Rules no program of the catalog can reach on the model target: checks the model calls only on an
# answer the model target never gives (the faulty targets of fixtures/targets/faulty.py reach them).
# A rule listed here that a run reaches is printed as such: the list is then out of date.
OUT_OF_REACH = {
    "check_no_phantom": "called only for a delivery of a message never published",
}
SEP = "|"


# -- named state combinations, judged on the state an op is taken in ---------------------------
def _bounds(state: State) -> set[int]:
    bounds = set()
    for m in state.messages:
        if m.status is HELD and m.redelivery_from is not None:
            bounds.update((m.redelivery_from, m.redelivery_by))
    if state.rewind_window is not None:
        bounds.update(state.rewind_window)
    if state.paused_until > state.now:
        bounds.add(state.paused_until)
    return bounds


def _queues_hold(state: State) -> bool:
    return bool(state.connected()) and any(m.status is AVAILABLE or m.extra_deliveries for m in state.messages)


def _pending(state: State) -> bool:
    return any(c.pending_acks for c in state.consumers)


def _partly_acked(state: State, entry: int) -> bool:
    mates = state.entry_messages(entry)
    return len(mates) > 1 and any(m.status is ACKED for m in mates) and any(m.status is not ACKED for m in mates)


def _landing(state: State, op: o.Op) -> int | None:
    return state.now + op.ms if isinstance(op, o.Tick) else None


SITUATIONS: dict[str, Callable[[State, o.Op], bool]] = {
    "nack while its entry is partly acked": lambda s, op: isinstance(op, o.NegativeAcknowledge)
    and _partly_acked(s, op.message.entry),
    "nack again before it came back": lambda s, op: isinstance(op, o.NegativeAcknowledge)
    and s.message(op.message).redelivery_from is not None,
    "nack with acks pending": lambda s, op: isinstance(op, o.NegativeAcknowledge) and _pending(s),
    "nack at the dead-letter limit": lambda s, op: isinstance(op, (o.NegativeAcknowledge,
                                                                   o.RedeliverUnacknowledgedMessages))
    and s.spec.max_redeliver_count is not None
    and any(m.status is HELD and m.held_count >= s.spec.max_redeliver_count for m in s.messages),
    "redeliver with acks not flushed": lambda s, op: isinstance(op, o.RedeliverUnacknowledgedMessages)
    and any(m.status is ACKED and not m.ack_confirmed for m in s.messages),
    "unload while receiver queues hold messages": lambda s, op: isinstance(op, o.Unload) and _queues_hold(s),
    "unload with acks pending": lambda s, op: isinstance(op, o.Unload) and _pending(s),
    "seek with acks pending": lambda s, op: isinstance(op, o.Seek) and _pending(s),
    "seek while receiver queues hold messages": lambda s, op: isinstance(op, o.Seek) and _queues_hold(s),
    "close with acks pending": lambda s, op: isinstance(op, o.Close) and bool(s.consumer(op.consumer).pending_acks),
    "close while holding messages": lambda s, op: isinstance(op, o.Close)
    and any(m.status is HELD and m.holder == op.consumer for m in s.messages),
    "cumulative ack over an individual ack": lambda s, op: isinstance(op, o.AcknowledgeCumulative)
    and any(m.status is ACKED and m.id < op.message for m in s.messages)
    and any(m.status is not ACKED and m.id < op.message for m in s.messages),
    "subscribe or close during a Failover pause": lambda s, op: isinstance(op, (o.Subscribe, o.Close))
    and s.paused_until > s.now,
    "Key_Shared subscribe while a key is held": lambda s, op: isinstance(op, o.Subscribe) and bool(s.key_owners)
    and any(m.status is HELD for m in s.messages),
    "receive while a rewind is on its way": lambda s, op: isinstance(op, o.Receive) and s.rewind_window is not None,
    "tick landing inside a redelivery window": lambda s, op: isinstance(op, o.Tick) and any(
        m.status is HELD and m.redelivery_from is not None and m.redelivery_from < s.now + op.ms < m.redelivery_by
        for m in s.messages),
    "tick landing 1 ms before a window's bound": lambda s, op: _landing(s, op) is not None
    and _landing(s, op) + 1 in _bounds(s),
    "tick landing on or 1 ms after a window's bound": lambda s, op: _landing(s, op) is not None
    and bool({_landing(s, op), _landing(s, op) - 1} & _bounds(s)),
}


class Watching(ModelTarget):
    """The model target, noting in `seen` which situations each program's ops were taken in."""

    def __init__(self, seen: dict[str, set[str]]) -> None:
        super().__init__()
        self.seen, self.program = seen, ""

    def invoke(self, op: o.Op) -> o.Completion:
        # A consumer of several topics (partitions, a retry letter topic) keeps a state per topic,
        # in program ids of its own: the situations are told on one topic's state only.
        if self.partitioned is None:
            for name, holds in SITUATIONS.items():
                if holds(self.state, op):
                    self.seen[self.program].add(name)
        return super().invoke(op)

    def reset(self, spec, program_id: str) -> None:
        super().reset(spec, program_id)
        self.program = program_id


# -- the rules: where each function's body starts ------------------------------------------------
def rule_lines() -> dict[str, tuple[Path, int, tuple[str, ...]]]:
    """rule name -> (file, first line of its body, the guarantees it is about; none: a transition)."""
    about = defaultdict(list)
    for guarantee, checks in RULES.items():
        for check in checks:
            about[check.__name__].append(guarantee.value)
    found = {}
    for path in MODULES:
        tree = ast.parse(path.read_text())
        transition = path.parent.name == "transitions"
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or not (transition or node.name in about):
                continue
            body = node.body[1:] if ast.get_docstring(node) and len(node.body) > 1 else node.body
            name = f"{path.parent.name}/{path.stem}.{node.name}" if transition else node.name
            found[name] = (path, body[0].lineno, tuple(about.get(node.name, ())))
    return found


def run(profile: str, examples: int | None, areas: list[str], generations: list[str]):
    import coverage

    chosen = settings.get_profile(profile)
    if examples:
        chosen = settings(chosen, max_examples=examples)
    cov = coverage.Coverage(data_file=None, branch=True, include=[str(p) for p in MODULES])
    programs: dict[tuple[str, str], int] = defaultdict(int)  # (generation, area) -> programs run
    started: dict[str, float] = {}
    seen: dict[str, set[str]] = defaultdict(set)  # program -> situations
    cov.start()
    try:
        for name in generations:
            started[name] = time.perf_counter()
            with gen.using(GENERATIONS[name]):
                for check in (c for c in CHECKS if not areas or c.area in areas):
                    for spec_name, spec in check.specs.items():
                        counter = itertools.count()

                        def program_id(check=check, spec_name=spec_name, counter=counter, name=name) -> str:
                            label = SEP.join((name, check.area, spec_name, str(next(counter))))
                            programs[name, check.area] += 1
                            cov.switch_context(label)
                            return label

                        run_conformance(Watching(seen), spec, program_id, kinds=check.kinds, settings_=chosen,
                                        drain_idle_ms=30)
                    print(f"  {name} {check.area}: {time.perf_counter() - started[name]:.0f} s", file=sys.stderr)
            started[name] = time.perf_counter() - started[name]
    finally:
        cov.switch_context("")
        cov.stop()
    return cov, programs, started, seen


def reach(cov, generations: list[str]) -> dict[str, dict[tuple[str, str], set[str]]]:
    """rule -> (generation, area) -> the programs that ran its body."""
    data = cov.get_data()
    by_file = {path: data.contexts_by_lineno(str(path)) for path in MODULES}
    reached: dict[str, dict[tuple[str, str], set[str]]] = {}
    for rule, (path, line, _) in rule_lines().items():
        per = defaultdict(set)
        for context in by_file[path].get(line, ()):
            if context:
                name, area, spec, n = context.split(SEP)
                per[name, area].add(context)
        reached[rule] = per
    return reached


def missing_branches(cov, name: str) -> dict[Path, list[tuple[int, int]]]:
    data = cov.get_data()
    data.set_query_contexts([f"^{re.escape(name + SEP)}"])
    try:
        missing = {}
        for path in MODULES:
            analysis = cov._analyze(str(path))  # coverage.py's own Analysis (no public branch API)
            missing[path] = sorted((a, b) for a, arcs in analysis.missing_branch_arcs().items() for b in arcs)
        return missing
    finally:
        data.set_query_contexts(None)


def per_100(count: int, total: int) -> float:
    return 100 * count / total if total else 0.0


def report_rules(cov, programs, generations: list[str], checks: list[Check]) -> None:
    reached = reach(cov, generations)
    lines = rule_lines()
    print("\n## Rules: programs per 100 that reach each rule (in the check about it that reaches it most)")
    print(f"{'rule':52s} " + " ".join(f"{g:>34s}" for g in generations))
    below = {g: [] for g in generations}
    for rule, per in reached.items():
        guarantees = lines[rule][2]
        about = [c.area for c in checks if not guarantees or any(g.value in guarantees for g in c.guarantees)]
        cells = []
        for g in generations:
            rates = [(per_100(len(per.get((g, a), ())), programs[g, a]), a) for a in about if programs[g, a]]
            rate, area = max(rates, default=(0.0, "-"))
            cells.append(f"{rate:6.1f} {area:>27s}")
            if rate < 1:
                below[g].append(rule)
        print(f"{rule:52s} " + " ".join(f"{c:>34s}" for c in cells))
    for g in generations:
        under = [r for r in below[g] if r not in OUT_OF_REACH]
        print(f"{g}: {len(lines) - len(below[g])} of {len(lines)} rules reached at least once per 100 programs; "
              f"under: {', '.join(under) or 'none'}")
    for rule, why in OUT_OF_REACH.items():
        by = [g for g in generations if rule in lines and rule not in below[g]]
        print(f"  {rule}: " + (f"reached ({', '.join(by)}), though listed as out of reach" if by else why))
    print("\n## Check areas: rules reached (of %d)" % len(lines))
    for check in checks:
        print(f"{check.area:34s} " + " ".join(
            f"{g}: {sum(1 for per in reached.values() if per.get((g, check.area))):3d} rules "
            f"({programs[g, check.area]} programs)" for g in generations))


def report_branches(cov, generations: list[str], listed: bool) -> None:
    print("\n## Branches never reached, per module")
    missing = {g: missing_branches(cov, g) for g in generations}
    for path in MODULES:
        row = f"{str(path.relative_to(ROOT)):36s} " + " ".join(f"{g}: {len(missing[g][path]):3d}" for g in generations)
        print(row)
        if listed:
            last = generations[-1]
            print("    " + ", ".join(f"{a}->{b}" for a, b in missing[last][path]))


def report_situations(seen, programs, generations: list[str], checks: list[Check]) -> None:
    print("\n## State combinations: programs per 100 that produce each, per check area (" + " -> ".join(generations) + ")")
    counted = defaultdict(set)  # (generation, area, situation) -> programs
    for program, situations in seen.items():
        name, area, _, _ = program.split(SEP)
        for situation in situations:
            counted[name, area, situation].add(program)
    for situation in SITUATIONS:
        cells = []
        for check in checks:
            rates = [per_100(len(counted[g, check.area, situation]), programs[g, check.area]) for g in generations]
            if any(rates):
                cells.append(f"{check.area} " + " -> ".join(f"{r:.1f}" for r in rates))
        print(f"{situation:46s} {'; '.join(cells) or 'never'}")


def report_faults(generations: list[str]) -> None:
    from fixtures.targets.faulty import FAULTS
    from suites.quality.catch import first_failure

    print("\n## Faulty targets: time to catch (s), where, shrunk ops")
    print(f"{'fault':36s} " + " ".join(f"{g:>52s}" for g in generations))
    totals = {g: [] for g in generations}
    for fault in FAULTS:
        cells = []
        for g in generations:
            with gen.using(GENERATIONS[g]):
                began = time.perf_counter()
                catch = first_failure(fault)
                took = time.perf_counter() - began
            ok = catch is not None and catch.failure.violation.guarantee in fault.breaks
            totals[g].append(took if ok else None)
            cells.append(f"{took:6.1f} {catch.where:>36s} {len(catch.failure.history):3d} ops" if ok
                         else f"{took:6.1f} {'NOT CAUGHT':>44s}")
        print(f"{fault.name:36s} " + " ".join(f"{c:>52s}" for c in cells))
    for g in generations:
        caught = sorted(t for t in totals[g] if t is not None)
        median = caught[len(caught) // 2] if caught else float("nan")
        print(f"{g}: caught {len(caught)} of {len(FAULTS)}, median {median:.1f} s, total {sum(caught):.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="ci", choices=("dev", "ci", "nightly"))
    parser.add_argument("--examples", type=int, help="programs per check and spec (default: the profile's)")
    parser.add_argument("--area", action="append", default=[], help="only these check areas")
    parser.add_argument("--generation", action="append", choices=sorted(GENERATIONS),
                        help="default: plain and swarm, side by side")
    parser.add_argument("--faults", action="store_true", help="also time the catch of every faulty target")
    parser.add_argument("--branches", action="store_true", help="list the branches never reached")
    args = parser.parse_args()
    generations = args.generation or ["plain", "swarm"]
    checks = [c for c in CHECKS if not args.area or c.area in args.area]
    cov, programs, took, seen = run(args.profile, args.examples, args.area, generations)
    print(f"profile {args.profile}: " + ", ".join(
        f"{g} {sum(n for (h, _), n in programs.items() if h == g)} programs in {took[g]:.0f} s (under coverage)"
        for g in generations))
    report_rules(cov, programs, generations, checks)
    report_branches(cov, generations, args.branches)
    report_situations(seen, programs, generations, checks)
    if args.faults:
        report_faults(generations)


if __name__ == "__main__":
    main()
