"""Results and failures to test the reports with: synthetic records, and a real conformance failure.

`lost_message_failure()` drives the faulty target that never dispatches its third entry
(fixtures/targets/faulty.py: LosesAMessage) in lock-step with the model through a fixed program,
so the failure, its history and its reproduction are the real thing, not a hand-made imitation.
`LosesAMessageOnce` has that fault in the first program it runs only (in this process): a failure
that never reproduces on replay.
"""

from __future__ import annotations

from pathlib import Path

from fixtures.targets.faulty import LosesAMessage
from fixtures.targets.model_target import ModelTarget
from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from model import ops as o
from model.spec import Spec, SubscriptionType
from reports.failures import write_failure
from reports.results import FAILED, Result, Summary, ReportedViolation, write_summary
from reports.vocabulary import UNKNOWN, kind_of_reason

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
EXCLUSIVE = SHARED.with_(subscription_type=SubscriptionType.EXCLUSIVE)
LOSING_PROGRAM = (o.Send(), o.Send(), o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0"),
                  o.Receive(consumer="c0"), o.Receive(consumer="c0"))


def result(area: str, spec_id: str, outcome: str, *, guarantee: str | None = None, detail: str = "it happened",
           reason: str | None = None, failure: str | None = None, examples: int | None = 10,
           steps: int | None = 120, can_break: tuple[str, ...] | None = None, reason_kind: str | None = None,
           signature: dict | None = None) -> Result:
    """One cell; an unknown one without a `reason_kind` gets the kind its reason's text says."""
    violations = ((ReportedViolation(guarantee=guarantee, detail=detail, failure=failure, signature=signature),)
                  if guarantee else ())
    if outcome == UNKNOWN and reason_kind is None:
        reason_kind = kind_of_reason(reason)
    return Result(nodeid=f"suites/conformance/test_{area}.py::test_{area}[{spec_id}]", area=area, spec_id=spec_id,
                  outcome=outcome, target="pulsar", subscription_type=spec_id.split("-")[0], violations=violations,
                  reason=reason, reason_kind=reason_kind, examples=examples, steps=steps, can_break=can_break)


def summary(*results: Result, target: str = "pulsar", version: str | None = "4.0.7") -> Summary:
    return Summary(run={"target": target, "pulsar": {"version": version, "source": "embedded broker"},
                        "client": {"pulsar-client": "3.13.0"}, "hypothesis_profile": "ci"}, results=results)


def save(folder: Path, run: Summary) -> Path:
    path = folder / "summary.json"
    write_summary(run, path)
    return path


def lost_message_failure(spec: Spec = EXCLUSIVE, target: LosesAMessage | None = None,
                         name: str = "fixtures.targets.faulty:LosesAMessage") -> ConformanceFailure:
    target = target or LosesAMessage()
    target.name = name  # what load_target names it: the reproduction says so
    run = Lockstep(target, spec, "sample")
    for op in LOSING_PROGRAM:
        run.do(op)
    try:
        run.check_drained()
    except ConformanceFailure as failure:
        return failure
    raise AssertionError("LosesAMessage no longer loses m2: the sample failure is gone")


class LosesAMessageOnce(LosesAMessage):
    """LosesAMessage in the first program any instance runs, the model ever after."""

    spent = False  # set by the first program run in this process

    def reset(self, spec, program_id):
        super().reset(spec, program_id)
        self.faulty, LosesAMessageOnce.spent = not LosesAMessageOnce.spent, True

    def answer(self, op):
        return super().answer(op) if self.faulty else ModelTarget.answer(self, op)


def failed_run_with_files(folder: Path) -> Summary:
    """A run with one real failure (its files under folder/failures), a pass and an unknown."""
    failure = lost_message_failure()
    write_failure(folder / "failures", "individual_ack-Exclusive", failure, area="individual_ack",
                  spec_id="Exclusive", target="pulsar")
    run = summary(result("individual_ack", "Exclusive", FAILED, guarantee=failure.violation.guarantee.value,
                         detail=failure.violation.detail, failure="individual_ack-Exclusive"),
                  result("individual_ack", "Shared", "passed"),
                  result("negative_ack", "Shared", "unknown", reason="the test raised TimeoutError: broker gone"))
    save(folder, run)
    return run
