"""The suite tests itself: it must fail on every faulty target, for the right reason.

Each faulty target (fixtures/targets/faulty.py) is the model with one semantic fault a broker or
client could have. The whole conformance catalog runs against it, check after check, with the
`ci` profile, until one fails; the failure must name a guarantee the fault breaks, and one the
catching check declares it can break (`Check.guarantees`). The run prints how many faults were
caught and how long each took (finding and shrinking included).
"""

import itertools
import time

import pytest
from hypothesis import settings

from fixtures.targets.faulty import FAULTS
from suites.conformance.catalog import CHECKS
from suites.machines import run_conformance
from suites.quality.catch import first_failure

CATCHES: dict[str, tuple[float, str, int] | None] = {}


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_the_suite_catches_the_fault(fault):
    started = time.perf_counter()
    catch = first_failure(fault)
    elapsed = time.perf_counter() - started
    where, failure = (catch.where, catch.failure) if catch else (None, None)
    CATCHES[fault.name] = (elapsed, where, len(failure.history)) if failure else None
    assert failure is not None, f"the conformance suite passed against the faulty target {fault.name}"
    assert failure.violation.guarantee in fault.breaks, (
        f"{fault.name} was caught as {failure.violation.guarantee.value}, not as "
        f"{', '.join(g.value for g in fault.breaks)}: a catch by accident")
    assert failure.violation.guarantee in catch.check.guarantees, (
        f"{fault.name} was caught by {catch.where}, which does not declare {failure.violation.guarantee.value}: "
        "the catalog's declarations (suites/conformance/catalog.py) miss what the check can break")


def test_the_model_itself_passes_the_whole_catalog():
    """The control: without a fault nothing fails, so every catch above is the fault's doing."""
    ids = (f"control-{n}" for n in itertools.count())
    from fixtures.targets.model_target import ModelTarget

    for check in CHECKS:
        for spec in check.specs.values():
            run_conformance(ModelTarget(), spec, lambda: next(ids), kinds=check.kinds,
                            settings_=settings(settings.get_profile("ci"), max_examples=10), drain_idle_ms=30)


@pytest.fixture(scope="module", autouse=True)
def _print_catches(request):
    yield
    if not CATCHES:
        return
    caught = {name: c for name, c in CATCHES.items() if c}
    lines = [f"faulty targets caught: {len(caught)} of {len(CATCHES)}"]
    for name, catch in CATCHES.items():
        lines.append(f"  {name:36s} " + (f"{catch[0]:5.1f} s  by {catch[1]}, shrunk to {catch[2]} ops"
                                          if catch else "NOT CAUGHT"))
    times = sorted(c[0] for c in caught.values())
    if times:
        lines.append(f"  median {times[len(times) // 2]:.1f} s, max {times[-1]:.1f} s")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("\n" + "\n".join(lines))
