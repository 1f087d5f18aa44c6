"""Small hand-made corpora for the trace tests: model programs as events, changed on purpose."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from model.history import Event, event_of, spec_id, spec_json
from traces.programs import run_on_model
from model.spec import Spec, SubscriptionType
from traces import corpus as c
from traces.schema import events_table
from traces.transforms import program_table

SHARED = Spec(subscription_type=SubscriptionType.SHARED)
EXCLUSIVE = Spec(subscription_type=SubscriptionType.EXCLUSIVE)


def model_program(spec: Spec, seed: int, steps: int, program_id: str) -> list[Event]:
    text, key = spec_json(spec), spec_id(spec)
    return [event_of(program_id, spec, step, op, completion, spec_text=text, spec_key=key)
            for step, (op, completion) in enumerate(run_on_model(spec, seed, steps))]


def first_step(events: list[Event], op: str, after: int = 0, **where: object) -> int:
    """The first step >= `after` with this op (and these field values)."""
    return next(e.step for e in events if e.step >= after and e.op == op
                and all(getattr(e, k) == v for k, v in where.items()))


def change(events: list[Event], step: int, **fields: object) -> list[Event]:
    return [dataclasses.replace(e, **fields) if e.step == step else e for e in events]


def write_corpus(spark, path: Path, events: list[Event], *, with_programs: bool = True) -> Path:
    """A corpus directory as the jobs write it (events, per-program table, corpus.json)."""
    frame = spark.createDataFrame(events_table(events))
    specs = {e.spec_id: e.spec for e in events}
    c.write_events(frame, path / c.EVENTS, expected_events=len(events), specs=specs)
    if with_programs:
        program_table(spark.read.parquet(str(path / c.EVENTS))).coalesce(1).write.parquet(str(path / c.PROGRAMS))
    c.write_json(path / c.MANIFEST, {"format": c.FORMAT, "kind": "hand-made", "specs": specs})
    return path


def rows(frame, *columns: str) -> list[tuple]:
    """A frame's rows as sorted tuples of the given columns (whole-frame comparisons)."""
    return sorted(tuple(r[c] for c in columns) for r in frame.select(*columns).collect())


def program_ranges(spec_dir: Path) -> list[tuple[str, str]]:
    """The (first, last) program of each Parquet file of one spec, sorted; asserts that every file
    is in (program, step) order."""
    import pyarrow.parquet as pq

    ranges = []
    for file in sorted(spec_dir.glob("*.parquet")):
        table = pq.read_table(file, columns=["program_id", "step"])
        pairs = list(zip(table.column("program_id").to_pylist(), table.column("step").to_pylist()))
        assert pairs == sorted(pairs), f"{file.name} is not in (program, step) order"
        ranges.append((pairs[0][0], pairs[-1][0]))
    return sorted(ranges)

