"""The quality run's catcher runs the slow checks too: a fault only the ack_timeout check can see is caught.

Against the model target the ack_timeout check costs about a second at the `ci` budget (the
target's clock is simulated), so the catcher (suites/quality/catch.py) has no reason to leave it
out; leaving it out meant no fault of ack-timeout behaviour could ever be caught.
"""

from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.guarantees import Guarantee
from suites.conformance.catalog import CHECKS
from suites.quality.catch import first_failure_of


class AckTimeoutNeverRedelivers(ModelTarget):
    """With an ack timeout configured, a message whose ack timed out is never delivered again
    (the client's UnAckedMessageTracker never asks for it)."""

    def answer(self, op):
        completion = super().answer(op)
        if (self.state.spec.ack_timeout_ms is not None and isinstance(completion.value, o.Delivery)
                and self.state.message(completion.value.message).delivered):
            return o.ok(None, at=completion.at)
        return completion


def test_only_the_slow_ack_timeout_checks_run_with_an_ack_timeout():
    """So a fault gated on an ack timeout is invisible to every other check."""
    assert [c.area for c in CHECKS if any(s.ack_timeout_ms is not None for s in c.specs.values())] == [
        "ack_timeout", "partitioned_ack_timeout"]
    assert all(c.slow for c in CHECKS if c.area in ("ack_timeout", "partitioned_ack_timeout"))


def test_a_fault_of_ack_timeouts_is_caught_by_the_slow_check():
    catch = first_failure_of(AckTimeoutNeverRedelivers, "ack-timeout-never-redelivers")
    assert catch is not None, "the catcher passed a target whose ack timeouts never redeliver"
    assert catch.check.area == "ack_timeout" and catch.check.slow
    assert catch.failure.violation.guarantee is Guarantee.NO_LOSS


def test_a_check_the_catalog_calls_slow_is_marked_slow_for_pytest():
    """CI runs `-m "not slow"`: a check the catalog keeps for the nightly must carry the mark."""
    import importlib

    for c in CHECKS:
        marks = getattr(importlib.import_module(f"suites.conformance.test_{c.area}"), "pytestmark", [])
        marked = any(m.name == "slow" for m in (marks if isinstance(marks, list) else [marks]))
        assert marked == c.slow, f"{c.area}: slow in the catalog {c.slow}, marked slow {marked}"
