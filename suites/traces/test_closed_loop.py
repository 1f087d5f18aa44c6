"""Closed-loop recording and no harness divergences: each program of a recording is drawn from
what its target delivered (traces/programs.py), on a topic of its own, from specs the broker runs
with (traces/recordable.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fixtures.targets.model_target import ModelTarget
from model import ops as o
from model.history import FIELDS, event_of, spec_id, spec_json
from model.spec import Spec, SubscriptionType
from suites.conformance.catalog import ALL_TYPES, EXCLUSIVE, FAILOVER, SHARED
from suites.traces.withholding import Withholding
from traces import corpus as c
from traces.check import CONFORMS, HARNESS, check_history
from traces.jobs import generate, record
from traces.programs import run_closed_loop, run_on_model
from traces.recordable import refusals
from traces.run import RecordPlan, record_batches, record_program
from traces.schema import events_table
from traces.specs import parse_matrix
from traces.targets import TargetError, TargetSpec

STEPS = 40


def _rows(spec: Spec, seed: int, program_id: str = "p000000", *, with_seed: bool = True) -> list[dict]:
    """One generated program as the recording's input rows (with its seed: closed loop)."""
    text, key = spec_json(spec), spec_id(spec)
    events = [event_of(program_id, spec, step, op, completion, spec_text=text, spec_key=key)
              for step, (op, completion) in enumerate(run_on_model(spec, seed, STEPS))]
    return [{name: getattr(e, name) for name in FIELDS} | ({"seed": seed} if with_seed else {}) for e in events]


class TopicsSeen(ModelTarget):
    def __init__(self) -> None:
        super().__init__()
        self.topics: list[str] = []

    def reset(self, spec, program_id):
        self.topics.append(program_id)
        super().reset(spec, program_id)


def test_topics_are_unique_across_specs_programs_and_runs(tmp_path, monkeypatch):
    """The same program ids in two specs, recorded twice: every program of every run has a topic of
    its own (the topic was `<program id>-<run>`, shared by the specs recorded at once)."""
    seen = TopicsSeen()
    monkeypatch.setattr(TargetSpec, "build", lambda self: seen)
    rows = [r for spec in (SHARED, EXCLUSIVE) for pid in ("p000000", "p000001") for r in _rows(spec, 7, pid)]
    table = pa.Table.from_pylist(rows).append_column("chunk", pa.array([0] * len(rows), pa.int32()))
    for run in ("r1", "r2"):
        plan = RecordPlan(out=str(tmp_path / run), target=TargetSpec(name="model"), run=run)
        list(record_batches(plan, iter(table.to_batches(max_chunksize=50))))
    assert len(seen.topics) == 8
    assert len(set(seen.topics)) == 8, seen.topics
    assert all(spec_id(SHARED) in t or spec_id(EXCLUSIVE) in t for t in seen.topics)


def test_a_spec_with_pulsars_defaults_is_refused_before_recording_on_a_broker(spark, tmp_path):
    source = tmp_path / "source"
    generate.run(spark, source, specs=[Spec(subscription_type=SubscriptionType.SHARED)], programs=2, steps=5, seed=1)
    broker = TargetSpec(name="pulsar", service_url="pulsar://127.0.0.1:9", admin_url="http://127.0.0.1:9")
    with pytest.raises(TargetError, match="(?s)nothing was recorded.*a nack comes back after 60000 ms"):
        record.run(spark, source, tmp_path / "rec", target=broker)
    assert not (tmp_path / "rec").exists()


def test_the_catalog_specs_are_recordable_and_pulsars_defaults_are_not():
    broker = {"activeConsumerFailoverDelayTimeMillis": "100", "acknowledgmentAtBatchIndexLevelEnabled": "true"}
    assert all(refusals(spec, broker) == [] for spec in ALL_TYPES.values())
    assert all(refusals(spec, broker) == [] for spec in parse_matrix(None))  # generate's default specs
    for kind in SubscriptionType:
        assert any("60000 ms" in r for r in refusals(Spec(subscription_type=kind), broker))
    pulsar_failover = FAILOVER.with_(failover_delay_ms=1000)  # Pulsar's pause, the catalog's nack delay
    assert any("Failover pause is 1000 ms" in r for r in refusals(pulsar_failover, broker))


@pytest.mark.parametrize("spec", [SHARED, EXCLUSIVE], ids=["Shared", "Exclusive"])
def test_a_closed_loop_program_never_acks_what_the_consumer_does_not_hold(spec):
    """On a target that delivers a step later than the model's ideal broker, a program replayed as
    generated acks, nacks and seeks messages its consumer never received (the driver's KeyError:
    unknown, a harness error); drawn from what the target delivered, it conforms to its end."""
    target = Withholding()
    open_loop = [check_history(spec, record_program(target, _rows(spec, seed, with_seed=False), "r"))
                 for seed in range(20)]
    closed_loop = [record_program(target, _rows(spec, seed), "r") for seed in range(20)]
    assert sum(v.reason == HARNESS for v in open_loop) >= 15
    assert not [e for events in closed_loop for e in events if e.error and "TargetError" in e.error]
    assert [check_history(spec, events).verdict for events in closed_loop] == [CONFORMS] * 20
    assert all(len(events) == STEPS for events in closed_loop)


def test_on_the_model_the_closed_loop_is_the_generated_program():
    """The same seed gives the same program on the model, generated or recorded closed-loop."""
    for spec in parse_matrix(None):
        for seed in range(25):
            generated = run_on_model(spec, seed, STEPS)
            assert run_on_model(spec, seed, STEPS) == generated
            recorded, stopped = run_closed_loop(ModelTarget(), spec, seed, STEPS, "t")
            assert stopped is None and recorded == generated


def test_no_cursor_read_before_a_subscription_nor_unload_before_the_topic():
    for spec in parse_matrix(None):
        for seed in range(200):
            trace = run_on_model(spec, seed, 12)
            for i, (op, _) in enumerate(trace):
                before = [earlier for earlier, _ in trace[:i]]
                if isinstance(op, o.ReadCursor):
                    assert any(isinstance(b, o.Subscribe) for b in before), (spec, seed, i)
                if isinstance(op, o.Unload):
                    assert any(isinstance(b, (o.Subscribe, o.Send)) for b in before), (spec, seed, i)


@pytest.mark.spark
def test_recording_on_a_withholding_target_conforms_in_every_program(spark, tmp_path):
    """The whole path, `generate` then `record --check`-style: a closed-loop recording of a
    non-deterministic target is judged conforming in every program by `traces check`."""
    from traces.jobs import check

    source = tmp_path / "source"
    generate.run(spark, source, specs=[SHARED, EXCLUSIVE], programs=10, steps=STEPS, seed=3)
    record.run(spark, source, tmp_path / "rec", target=TargetSpec(name="suites.traces.withholding:withholding"))
    summary = check.run(spark, tmp_path / "rec", tmp_path / "check")
    assert summary["verdicts"] == {"conforms": 20, "violation": 0, "unknown": 0}, summary["verdicts"]
    assert c.open_corpus(spark, tmp_path / "rec").events.count() == 20 * STEPS
