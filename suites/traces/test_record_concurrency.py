"""record --concurrency: a task records several programs at once, each on a target of its own, from
one pool across its chunks, and writes the same recording as one at a time."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fixtures.targets.model_target import ModelTarget
from model.history import FIELDS, event_of, spec_id, spec_json
from model.spec import Spec
from suites.conformance.catalog import SHARED
from traces.programs import run_on_model
from traces.run import RecordPlan, chunk_file, record_batches
from traces.targets import TargetSpec

STEPS = 30
PROGRAMS = 8


def _table(spec: Spec, chunks: int = 1) -> pa.Table:
    """PROGRAMS generated programs in `chunks` chunks (the first ones in chunk 0), as the recording's
    input rows (closed loop: with seeds)."""
    text, key = spec_json(spec), spec_id(spec)
    rows = [{name: getattr(e, name) for name in FIELDS} | {"seed": seed, "chunk": seed * chunks // PROGRAMS}
            for seed in range(PROGRAMS)
            for e in (event_of(f"p{seed:06d}", spec, step, op, completion, spec_text=text, spec_key=key)
                      for step, (op, completion) in enumerate(run_on_model(spec, seed, STEPS)))]
    return pa.Table.from_pylist(rows)


class Gathering(ModelTarget):
    """A model target whose reset waits until `barrier.parties` programs are being reset at once:
    only programs recorded side by side, each on a target of its own, get past it."""

    def __init__(self, barrier: threading.Barrier, built: list) -> None:
        super().__init__()
        self.barrier = barrier
        built.append(self)

    def reset(self, spec, program_id):
        self.barrier.wait(timeout=20)
        super().reset(spec, program_id)


def _record(tmp_path, name: str, table: pa.Table, concurrency: int) -> pa.Table:
    plan = RecordPlan(out=str(tmp_path / name), target=TargetSpec(name="model"), run="r1", concurrency=concurrency)
    statuses = [b.to_pylist()[0] for b in record_batches(plan, iter(table.to_batches(max_chunksize=100)))]
    assert [(s["programs"], s["resumed"]) for s in statuses] == [(PROGRAMS, 0)]
    return pq.read_table(chunk_file(tmp_path / name, spec_id(SHARED), 0))


def test_programs_recorded_at_once_give_the_recording_of_one_at_a_time(tmp_path):
    table = _table(SHARED)
    assert _record(tmp_path, "alone", table, 1).equals(_record(tmp_path, "four", table, 4))


def test_each_program_in_flight_has_a_target_of_its_own(tmp_path, monkeypatch):
    table = _table(SHARED)
    alone = _record(tmp_path, "alone", table, 1)
    barrier, built = threading.Barrier(4), []
    monkeypatch.setattr(TargetSpec, "build", lambda self: Gathering(barrier, built))
    assert _record(tmp_path, "four", table, 4).equals(alone)  # every program got past the barrier
    assert len(built) == 4  # and the four targets were reused by the programs after the first four


def test_one_at_a_time_never_gathers_programs(tmp_path, monkeypatch):
    """The check above can fail: recorded one at a time, each program waits alone at the barrier and
    its reset fails (recorded as the program's one event)."""
    barrier = threading.Barrier(2)
    monkeypatch.setattr(TargetSpec, "build", lambda self: Gathering(barrier, []))
    monkeypatch.setattr(Gathering, "reset", lambda self, spec, pid: self.barrier.wait(timeout=0.2))
    errors = _record(tmp_path, "alone", _table(SHARED), 1).column("error").to_pylist()
    assert len(errors) == PROGRAMS and all("BrokenBarrierError" in e for e in errors)


class Straggling(ModelTarget):
    """A model target on which chunk 0's first program cannot finish before a program of the next
    chunk has started: it waits for one (a Failover pause, a send timeout, as far as the pool can
    tell), and its reset fails if none comes."""

    started = None

    def reset(self, spec, program_id):
        if f"-p{PROGRAMS // 2:06d}-" in program_id:
            Straggling.started.set()
        if "-p000000-" in program_id and not Straggling.started.wait(timeout=5):
            raise TimeoutError("no program of the next chunk started while this one ran")
        super().reset(spec, program_id)


def test_the_next_chunk_starts_while_a_chunk_waits_for_its_last_program(tmp_path, monkeypatch):
    table = _table(SHARED, chunks=2)
    Straggling.started = threading.Event()
    monkeypatch.setattr(TargetSpec, "build", lambda self: Straggling())
    plan = RecordPlan(out=str(tmp_path), target=TargetSpec(name="model"), run="r1", concurrency=2)
    statuses = [b.to_pylist()[0] for b in record_batches(plan, iter(table.to_batches(max_chunksize=100)))]
    assert sorted((s["chunk"], s["programs"]) for s in statuses) == [(0, PROGRAMS // 2), (1, PROGRAMS // 2)]
    errors = pq.read_table(chunk_file(tmp_path, spec_id(SHARED), 0)).column("error").to_pylist()
    assert not [e for e in errors if e and e.startswith("TargetError")]
