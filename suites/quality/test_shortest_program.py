"""The yardstick for shrinking (suites/quality/shortest.py) and the program shrinker (suites/programs.py).

The shortest-program search must find a program that really fails on the faulty target, and no
shorter one may exist: checked here against a plain enumeration of every program below its length
(no deduplication, every program run from scratch), on a fault where that enumeration is cheap.
The model itself has no failing program at all. A tightened failure is a real failure of the same
guarantee, and the suite reports it already tightened.
"""

import itertools

import pytest
from hypothesis import settings

from fixtures.targets.faulty import FAULTS
from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from fixtures.targets.model_target import ModelTarget
from model.vocabulary import candidates
from suites.conformance.catalog import check
from suites.machines import run_conformance
from suites.programs import DRAIN, Step, run_program, steps_of, take, tighten
from suites.quality.shortest import shortest

FAULT = next(f for f in FAULTS if f.name == "cumulative-ack-accepted-on-shared")
CHECK = check("cumulative_ack")
SPEC = CHECK.specs["Shared"]
GUARANTEE = next(iter(FAULT.breaks))


def _failing_ops(steps: tuple[Step, ...]) -> int | None:
    """Ops performed up to the failure if the program breaks the guarantee, else None."""
    try:
        run_program(FAULT.target(), SPEC, "enumeration", steps)
    except ConformanceFailure as failure:
        return len(failure.history) if failure.violation.guarantee is GUARANTEE else None
    return None


def _every_program_below(limit: int):
    """Every program the machine could run whose steps perform fewer than `limit` ops."""
    frontier = [()]
    while frontier:
        program = frontier.pop()
        yield program
        run = Lockstep(FAULT.target(), SPEC, "enumeration")
        try:
            for step in program:
                take(run, step, 30)
        except ConformanceFailure:
            continue  # the program stopped there: it has no extensions
        if len(run.history) >= limit - 1:
            continue
        state = next(iter(run.verdict.states))
        nexts = [Step(rule=kind, op=op) for kind in CHECK.kinds for op in candidates(state, kind)]
        nexts += [Step(rule=DRAIN)] if candidates(state, "receive") else []
        frontier.extend(program + (step,) for step in nexts)


@pytest.mark.parametrize("unit", ["ops", "rules"])
def test_the_search_finds_a_program_that_really_fails(unit):
    found = shortest(FAULT.target, SPEC, CHECK.kinds, GUARANTEE, unit=unit, bound=12)
    assert found.length is not None and found.complete
    with pytest.raises(ConformanceFailure) as replayed:
        run_program(FAULT.target(), SPEC, "replay", found.program)
    assert replayed.value.violation.guarantee is GUARANTEE
    length = len(replayed.value.history) if unit == "ops" else len(found.program)
    assert length == found.length


def test_no_shorter_program_shows_the_fault():
    found = shortest(FAULT.target, SPEC, CHECK.kinds, GUARANTEE, unit="ops", bound=12)
    shorter = [(program, ops) for program in _every_program_below(found.length)
               if (ops := _failing_ops(program)) is not None and ops < found.length]
    assert not shorter, f"the search missed {shorter[0]}"


def test_the_model_itself_has_no_failing_program():
    found = shortest(ModelTarget, SPEC, CHECK.kinds, GUARANTEE, unit="rules", bound=4)
    assert found.length is None and found.complete and found.lower_bound == 5


def test_the_reported_failure_replays_and_is_already_tight():
    ids = (f"tighten-{n}" for n in itertools.count())
    with pytest.raises(ConformanceFailure) as caught:
        run_conformance(FAULT.target(), SPEC, lambda: next(ids), kinds=CHECK.kinds, drain_idle_ms=30,
                        # derandomized: whether 15 random examples find the fault was luck
                        settings_=settings(settings.get_profile("ci"), max_examples=100, derandomize=True))
    failure = caught.value
    assert failure.violation.guarantee is GUARANTEE
    with pytest.raises(ConformanceFailure) as replayed:
        run_program(FAULT.target(), SPEC, "replay", steps_of(failure))
    assert replayed.value.history == failure.history
    assert tighten(failure, FAULT.target(), SPEC, lambda: next(ids)) is failure
