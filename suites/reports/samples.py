"""Results and failures to test the reports with: synthetic records, and a real conformance failure.

`lost_message_failure()` drives the faulty target that never dispatches its third entry
(fixtures/targets/faulty.py: LosesAMessage) in lock-step with the model through a fixed program,
so the failure, its history and its reproduction are the real thing, not a hand-made imitation.
`LosesAMessageOnce` has that fault in the first program it runs only (in this process): a failure
that never reproduces on replay. `full_run` is a run as wide as the whole catalog, with a 61-step
broker timeline among its failures, and `trace_diff_summary` what the trace diff's page reads: the
pages a browser lays out (suites/reports/test_pages_in_a_browser.py).
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


def summary(*results: Result, target: str = "pulsar", version: str | None = "4.0.7",
            client: tuple[str, str] | None = None) -> Summary:
    """A run; `client` (name, version) the client whose driver answered, as summary.json's `run.client`."""
    driven = {"name": client[0], "version": client[1], "protocol": 1} if client else {}
    return Summary(run={"target": target, "pulsar": {"version": version, "source": "embedded broker"},
                        "client": {**driven, "pulsar-client": "3.13.0"}, "hypothesis_profile": "ci"},
                   results=results)


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


class StallsOnce(ModelTarget):
    """Delivers nothing in the first program any instance runs (a dispatcher that stalled once),
    the model ever after: its failure's drain made fewer receives than the messages it owed."""

    spent = False

    def reset(self, spec, program_id):
        super().reset(spec, program_id)
        self.faulty, StallsOnce.spent = not StallsOnce.spent, True

    def answer(self, op):
        completion = super().answer(op)
        if self.faulty and isinstance(completion.value, o.Delivery):
            return o.ok(None, at=completion.at)
        return completion


def stalled_failure(target: StallsOnce, name: str) -> ConformanceFailure:
    """Six messages owed and a drain that gave up after three empty receives."""
    target.name = name
    run = Lockstep(target, EXCLUSIVE, "sample")
    run.do(o.Subscribe(consumer="c0"))
    for _ in range(6):
        run.do(o.Send())
    for _ in range(3):
        run.do(o.Receive(consumer="c0", timeout_ms=100))
    try:
        run.check_drained()
    except ConformanceFailure as failure:
        return failure
    raise AssertionError("StallsOnce delivered: the sample failure is gone")


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


class StoredProgram:
    """A failure's shape (reports.failures.FailureLike) around a given history: what write_failure stores."""

    def __init__(self, violation, history, spec: Spec, source: str = "") -> None:
        self.violation, self.history, self.spec, self.source = violation, tuple(history), spec, source


def long_broker_history(steps: int = 61) -> list[tuple[o.Op, o.Completion]]:
    """A program of `steps` ops on two Shared consumers with waits on the broker lane: sends, receives,
    acks, nacks and ticks, as wide as a long broker timeline gets."""
    history = [(o.Send(keys=(f"k{i}",)), o.ok((o.MessageId(i),))) for i in range(6)]
    history += [(o.Subscribe(consumer="c0"), o.ok()), (o.Subscribe(consumer="c1"), o.ok())]
    at, entry = 0, 0
    while len(history) < steps:
        consumer = ("c0", "c1")[len(history) % 2]
        message = o.MessageId(entry % 6)
        history.append((o.Receive(consumer=consumer), o.ok(o.Delivery(message=message, redelivery_count=0), at=at)))
        history.append((o.NegativeAcknowledge(consumer=consumer, message=message) if entry % 3 == 0
                        else o.Acknowledge(consumer=consumer, message=message), o.ok(at=at)))
        at += 150
        history.append((o.Tick(ms=150), o.ok(at=at)))
        entry += 1
    return history[:steps]


def full_run(folder: Path) -> Summary:
    """A run as wide as the whole catalog (every area on every spec id of suites/conformance), with
    failures in the last columns (Key_Shared) and a 61-step broker timeline among them; its files
    under folder/failures, its summary in folder/summary.json."""
    from model.guarantees import Guarantee
    from model.violations import Violation
    from suites.conformance.catalog import CHECKS

    lost = lost_message_failure()
    long = StoredProgram(Violation(guarantee=Guarantee.NO_LOSS, detail="drained every consumer, yet m5 never came"),
                         long_broker_history(), SHARED, source="# the reproduction\n")
    failing = {("negative_ack", "Shared"): long, ("negative_ack", "Key_Shared"): long}
    results = []
    for check in CHECKS:
        for spec_id in check.specs:
            failure = failing.get((check.area, spec_id), lost if spec_id.startswith("Key_Shared") else None)
            if failure is None:
                results.append(result(check.area, spec_id, "passed"))
                continue
            stem = f"{check.area}-{spec_id}"
            write_failure(folder / "failures", stem, failure, area=check.area, spec_id=spec_id, target="pulsar")
            results.append(result(check.area, spec_id, FAILED, guarantee=failure.violation.guarantee.value,
                                  detail=failure.violation.detail, failure=stem))
    run = summary(*results)
    save(folder, run)
    return run


def trace_diff_summary() -> dict:
    """What traces diff's job writes to summary.json, as its page (traces/report.py) reads it: four
    signatures of one op and spec whose labels differ only past their 70th character, and specs
    described at full length."""
    spec_id, describe = "Exclusive-batch-index-ack", SHARED.with_(
        subscription_type=SubscriptionType.EXCLUSIVE, client_batch_index_ack=True).describe()
    fields = ("delivered_entry, delivered_index, redelivery_count", "delivered_entry, delivered_index",
              "delivered_entry, redelivery_count", "delivered_index, redelivery_count")
    signatures = [{"signature": f"sig{k}", "op": "receive", "spec_id": spec_id, "expected_class": "delivery",
                   "observed_class": "delivery", "fields": f, "programs": 40 - k,
                   "representative_program": f"p{k}", "representative_steps": 9, "representative_step": 5}
                  for k, f in enumerate(fields)]
    per_spec = [{"spec_id": s, "describe": describe, "same": 10, "differs": 4 * (k + 1),
                 "only_expected": 0, "only_observed": 0} for k, s in enumerate((spec_id, "Shared-batch-index-ack"))]
    return {"programs": {"same": 20, "differs": 12, "only_expected": 1, "only_observed": 0},
            "signatures": signatures, "signature_count": 4, "per_spec": per_spec, "divergent_programs": 12,
            "expected": {"path": "expected", "kind": "corpus"}, "observed": {"path": "observed", "kind": "corpus"},
            "compared_columns": ["op", "outcome"]}
