"""record: a corpus's programs run on a target give a corpus in the same schema, each program run
closed-loop from its seed (the model gives the corpus back; another target's answers lead the
program, which stops at the first the model does not allow); finished programs survive a crash
and are not run again."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq
import pytest

from model.history import FIELDS
from model.spec import Spec, SubscriptionType
from suites.traces.faulty import CRASH_MARKER
from suites.traces.helpers import SHARED, model_program, rows
from traces import corpus as c
from traces.jobs import generate, record
from traces.run import RecordPlan, chunk_file, journal_file, read_journal, record_batches
from traces.schema import CorpusError, events_table
from traces.specs import parse_matrix
from traces.targets import TargetError, TargetSpec

OPS = ("spec_id", "program_id", "step", "op", "consumer", "entry", "index", "batched", "ms")
PROGRAM = ("spec_id", "program_id", "steps", "fingerprint")
SPECS = [Spec(subscription_type=SubscriptionType.SHARED), Spec(subscription_type=SubscriptionType.EXCLUSIVE)]


@pytest.fixture(scope="module")
def source(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("record") / "source"
    generate.run(spark, path, specs=SPECS, programs=10, steps=30, seed=2)
    return c.open_corpus(spark, path)


@pytest.mark.spark
def test_recording_the_model_gives_back_the_corpus(spark, source, tmp_path):
    manifest = record.run(spark, source.path, tmp_path / "rec", target=TargetSpec(name="model"), chunk_programs=4)
    recorded = c.open_corpus(spark, tmp_path / "rec")
    assert manifest["programs"] == 20 and manifest["kind"] == "recorded"
    assert rows(recorded.programs, *PROGRAM) == rows(source.programs, *PROGRAM)
    assert not (tmp_path / "rec" / "_journal").exists() and not (tmp_path / "rec" / record.STATE).exists()
    with pytest.raises(CorpusError, match="complete recording"):
        record.run(spark, source.path, tmp_path / "rec", target=TargetSpec(name="model"))


@pytest.mark.spark
def test_a_target_that_answers_differently_leads_the_program_until_the_model_refuses(spark, source, tmp_path):
    """A cumulative ack on Shared accepted: the model's ideal broker refuses it, so the program is the
    corpus's up to that step, which is now ok, and ends there (nothing after it has a state to be drawn from)."""
    target = TargetSpec(name="suites.traces.faulty:accepts_cumulative")
    record.run(spark, source.path, tmp_path / "rec", target=target)
    recorded = c.open_corpus(spark, tmp_path / "rec")
    refused = source.events.where("op = 'acknowledge_cumulative' AND outcome = 'fail'")
    first = {(r.spec_id, r.program_id): r.step for r in refused.groupBy("spec_id", "program_id").min("step")
             .withColumnRenamed("min(step)", "step").collect()}
    assert first, "the source corpus should contain refused cumulative acks"
    mine = [r for r in rows(recorded.events, *OPS, "outcome") if (r[0], r[1]) in first]
    theirs = [r for r in rows(source.events, *OPS, "outcome") if (r[0], r[1]) in first and r[2] <= first[r[0], r[1]]]
    assert [r[:-1] for r in mine] == [r[:-1] for r in theirs]
    assert {r[-1] for r in mine if r[2] == first[r[0], r[1]]} == {"ok"}
    assert max(r[2] for r in mine if (r[0], r[1]) == next(iter(first))) == first[next(iter(first))]


@pytest.mark.spark
def test_an_op_the_target_cannot_perform_is_recorded_as_failed(spark, source, tmp_path):
    record.run(spark, source.path, tmp_path / "rec", target=TargetSpec(name="suites.traces.faulty:cannot_seek"))
    seeks = c.open_corpus(spark, tmp_path / "rec").events.where("op = 'seek'").collect()
    assert seeks, "the source corpus should contain seeks"
    assert {(r.outcome, r.error) for r in seeks} == {("fail", "TargetError: RuntimeError: seek is not supported")}


@pytest.mark.spark
def test_a_crash_loses_no_finished_chunk(spark, source, tmp_path):
    out = tmp_path / "rec"
    target = TargetSpec(name="suites.traces.faulty:crashes_once")
    _crash_once_midway(spark, source, out, target)
    state = json.loads((out / record.STATE).read_text())
    finished = {f: f.stat().st_mtime_ns for f in (out / "events").rglob("chunk-*.parquet")}
    assert 0 < len(finished) < sum(state["chunks"].values())
    record.run(spark, source.path, out, target=target, chunk_programs=2)
    assert all(f.stat().st_mtime_ns == mtime for f, mtime in finished.items())
    assert rows(c.open_corpus(spark, out).programs, *PROGRAM) == rows(source.programs, *PROGRAM)


@pytest.mark.spark
def test_a_broker_that_cannot_be_reached_fails_before_anything_is_moved_or_written(spark, source, tmp_path):
    from fixtures.broker import free_port

    catalog = tmp_path / "catalog"  # the catalog's specs, which a broker runs with
    generate.run(spark, catalog, specs=parse_matrix(["subscription_type=Shared"]), programs=1, steps=5, seed=3)
    port = free_port()  # nothing listens there
    target = TargetSpec(name="pulsar", service_url=f"pulsar://127.0.0.1:{port}", admin_url=f"http://127.0.0.1:{port}")
    with pytest.raises(TargetError, match=f"127.0.0.1:{port}"):
        record.run(spark, catalog, tmp_path / "new", target=target)
    assert not (tmp_path / "new").exists()
    record.run(spark, catalog, tmp_path / "rec", target=TargetSpec(name="model"))
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "rec").rglob("*"))
    with pytest.raises(TargetError):
        record.run(spark, catalog, tmp_path / "rec", target=target, overwrite=True)
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "rec").rglob("*")) == before
    assert not list(tmp_path.glob(".rec.replaced-*"))  # not set aside either


@pytest.mark.spark
def test_what_a_recording_ran_on_is_asked_once_at_its_start_and_kept_for_a_resume(spark, source, tmp_path,
                                                                                     monkeypatch):
    asked = []
    monkeypatch.setattr(TargetSpec, "identify", lambda self: asked.append(1) or {"client": f"asked-{len(asked)}"})
    out = tmp_path / "rec"
    target = TargetSpec(name="suites.traces.faulty:crashes_once")
    _crash_once_midway(spark, source, out, target)
    assert json.loads((out / record.STATE).read_text())["recorded_on"] == {"client": "asked-1"}
    manifest = record.run(spark, source.path, out, target=target, chunk_programs=2)
    assert manifest["recorded_on"] == {"client": "asked-1"} and len(asked) == 1


def _crash_once_midway(spark, source, out, target):
    """Record until the `crashes_once` target kills its process after the first finished chunk."""
    CRASH_MARKER.write_text(str(out))
    try:
        with pytest.raises(Exception):
            record.run(spark, source.path, out, target=target, chunk_programs=2)
    finally:
        CRASH_MARKER.unlink(missing_ok=True)


class Crash(BaseException):
    pass


class CountingTarget:
    """The model, counting programs; optionally crashing when it starts a given program."""

    name = "counting"

    def __init__(self, crash_at: str | None = None) -> None:
        from fixtures.targets.model_target import ModelTarget

        self.model = ModelTarget()
        self.crash_at = crash_at
        self.programs: list[str] = []

    def reset(self, spec, program_id):
        program = program_id.split("-")[1]  # the topic: spec, program, run
        if program == self.crash_at:
            raise Crash()
        self.programs.append(program)
        self.model.reset(spec, program_id)

    def invoke(self, op):
        return self.model.invoke(op)

    def close(self):
        pass


def _chunked(programs: dict[int, list[str]]) -> pa.Table:
    events = [e for pids in programs.values() for pid in pids
              for e in model_program(SHARED, sum(map(ord, pid)), 12, pid)]
    chunks = [chunk for chunk, pids in programs.items() for pid in pids for _ in range(12)]
    return events_table(events).append_column("chunk", pa.array(chunks, pa.int32()))


def test_journal_keeps_finished_programs_across_a_crash(tmp_path, monkeypatch):
    plan = RecordPlan(out=str(tmp_path), target=TargetSpec(name="model"), run="r1")
    table = _chunked({0: ["a1", "a2"], 1: ["b1", "b2", "b3"]})
    key = model_program(SHARED, 0, 1, "x")[0].spec_id

    crashing = CountingTarget(crash_at="b3")
    monkeypatch.setattr(TargetSpec, "build", lambda self: crashing)
    with pytest.raises(Crash):
        list(record_batches(plan, iter(table.to_batches(max_chunksize=7))))
    assert chunk_file(tmp_path, key, 0).exists() and not chunk_file(tmp_path, key, 1).exists()
    journal = journal_file(tmp_path, key, 1)
    with journal.open("a") as handle:
        handle.write('{"program_id": "b3", "step": 0, "torn')  # a write cut short by the crash
    assert sorted(read_journal(journal)) == ["b1", "b2"]
    assert journal.read_text().endswith("}\n")

    resumed = CountingTarget()
    monkeypatch.setattr(TargetSpec, "build", lambda self: resumed)
    pending = table.filter(pa.compute.equal(table["chunk"], 1)).to_batches(max_chunksize=7)
    statuses = [b.to_pylist()[0] for b in record_batches(plan, iter(pending))]
    assert resumed.programs == ["b3"]
    assert statuses[0] | {"seconds": 0} == {"spec_id": key, "chunk": 1, "programs": 3, "resumed": 2, "events": 36,
                                            "seconds": 0}
    assert not journal.exists()
    written = pq.read_table(chunk_file(tmp_path, key, 1))
    assert written.column("program_id").to_pylist() == ["b1"] * 12 + ["b2"] * 12 + ["b3"] * 12
    assert written.schema.names == [f for f in FIELDS if f != "spec_id"]
