"""The trace schema and its reader: one column per field of `model.history.Event`, and every
way an input can be wrong is named exactly (file, column, line), nothing dropped or coerced."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from model.history import FIELDS, Event, to_json_line
from suites.traces.helpers import SHARED, model_program, write_corpus
from traces import corpus as c
from traces import schema as s


def events_file(tmp_path, table: pa.Table, name: str = "events.parquet"):
    path = tmp_path / name
    pq.write_table(table, path)
    return path


@pytest.fixture
def program() -> list[Event]:
    return model_program(SHARED, seed=3, steps=25, program_id="p1")


def test_schema_has_one_column_per_event_field_in_order():
    assert tuple(s.EVENT_TYPES) == FIELDS
    assert s.EVENT_SCHEMA.fieldNames() == list(FIELDS)
    assert s.EVENT_ARROW.names == list(FIELDS)
    assert s.EVENT_SCHEMA["keys"].dataType.simpleString() == "array<string>"
    assert s.EVENT_FILE_ARROW.names == [f for f in FIELDS if f != s.PARTITION]


def test_a_matching_file_has_no_problems(tmp_path, program):
    assert s.inspect_parquet(events_file(tmp_path, s.events_table(program))) == []


def test_missing_path_is_not_found(tmp_path):
    assert s.inspect_parquet(tmp_path / "nowhere") == [f"{tmp_path / 'nowhere'}: not found"]


def test_empty_directory_is_not_a_corpus(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "no data files" in s.inspect_parquet(tmp_path / "empty")[0]


def test_json_lines_named_parquet_is_not_parquet(tmp_path, program):
    path = tmp_path / "events.parquet"
    path.write_text(to_json_line(program[0]) + "\n")
    [problem] = s.inspect_parquet(path)
    assert "not a Parquet file" in problem and "JSON lines" in problem


def test_truncated_parquet_is_named(tmp_path, program):
    path = events_file(tmp_path, s.events_table(program))
    path.write_bytes(path.read_bytes()[:200])
    [problem] = s.inspect_parquet(path)
    assert "truncated or corrupt Parquet" in problem


def test_missing_wrong_and_unexpected_columns_are_all_reported(tmp_path, program):
    table = s.events_table(program).drop_columns(["outcome"])
    table = table.set_column(table.schema.get_field_index("step"), "step",
                             pa.array([str(e.step) for e in program]))
    table = table.append_column("color", pa.array(["red"] * len(program)))
    problems = s.inspect_parquet(events_file(tmp_path, table))
    assert any("missing column 'outcome'" in p for p in problems)
    assert any("column 'step' has type string, expected int32" in p for p in problems)
    assert any("unexpected column 'color'" in p for p in problems)
    assert len(problems) == 3


def test_lossless_widening_is_accepted(tmp_path, program):
    table = s.events_table(program)
    table = table.set_column(table.schema.get_field_index("step"), "step",
                             pa.array([e.step for e in program], type=pa.int16()))
    assert s.inspect_parquet(events_file(tmp_path, table)) == []


def test_a_widened_corpus_is_read_back_in_the_event_schema(spark, tmp_path, program):
    """Opening casts what a file stores narrower (here `step` as int16, `at` as int32) to the
    event schema, with the values unchanged."""
    table = s.events_table(program)
    for name, kind in (("step", pa.int16()), ("at", pa.int32())):
        table = table.set_column(table.schema.get_field_index(name), name, table.column(name).cast(kind))
    events_file(tmp_path, table)
    events = c.open_corpus(spark, tmp_path / "events.parquet").events
    assert events.schema == s.EVENT_SCHEMA
    assert [(r.step, r.at, r.op) for r in events.orderBy("step").collect()] == [(e.step, e.at, e.op) for e in program]


def test_partition_column_may_live_in_the_path(tmp_path, program):
    directory = tmp_path / "events" / f"spec_id={program[0].spec_id}"
    directory.mkdir(parents=True)
    pq.write_table(s.events_table(program).drop_columns(["spec_id"]), directory / "part.parquet")
    assert s.inspect_parquet(tmp_path / "events") == []


def test_history_round_trips(tmp_path, program):
    path = tmp_path / "history.jsonl"
    path.write_text("".join(to_json_line(e) + "\n" for e in program))
    assert s.read_history(path) == program


def test_history_problems_name_their_lines(tmp_path, program):
    good = json.loads(to_json_line(program[0]))
    lines = [
        to_json_line(program[0]),
        "{not json",
        json.dumps({**good, "op": "frobnicate"}),
        json.dumps({**good, "step": "3"}),
        json.dumps({k: v for k, v in good.items() if k != "spec_id"}),
        json.dumps({**good, "outcome": "maybe"}),
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(s.CorpusError) as raised:
        s.read_history(path)
    problems = raised.value.problems
    assert len(problems) == 5
    assert problems[0].startswith("line 2: not JSON")
    assert problems[1].startswith("line 3:") and "unknown op 'frobnicate'" in problems[1]
    assert problems[2] == "line 4: step must be an integer, got '3'"
    assert problems[3].startswith("line 5:") and "missing fields ['spec_id']" in problems[3]
    assert problems[4].startswith("line 6:") and "outcome must be ok, fail or info" in problems[4]


def test_history_that_is_a_directory_or_missing(tmp_path):
    with pytest.raises(s.CorpusError, match="not found"):
        s.read_history(tmp_path / "none.jsonl")
    with pytest.raises(s.CorpusError, match="a directory"):
        s.read_history(tmp_path)


@pytest.mark.spark
def test_reading_a_corpus_loses_nothing(spark, tmp_path, program):
    other = model_program(SHARED, seed=4, steps=25, program_id="p2")
    path = write_corpus(spark, tmp_path / "corpus", program + other)
    opened = c.open_corpus(spark, path)
    assert opened.events.schema == s.EVENT_SCHEMA
    read = sorted((Event(**{**r.asDict(), "keys": tuple(r["keys"]) if r["keys"] is not None else None})
                   for r in opened.events.collect()), key=lambda e: (e.program_id, e.step))
    assert read == program + other


@pytest.mark.spark
def test_unknown_ops_in_parquet_are_found_with_their_place(spark, tmp_path, program):
    bad = [dataclasses.replace(e, op="frobnicate") if e.step == 7 else e for e in program]
    path = events_file(tmp_path, s.events_table(bad))
    problems = c.value_problems(c.open_corpus(spark, path).events)
    assert len(problems) == 1
    assert "unknown op: 1 event(s)" in problems[0] and "program p1 step 7" in problems[0]


@pytest.mark.spark
def test_opening_a_bad_corpus_names_every_bad_file(spark, tmp_path, program):
    path = write_corpus(spark, tmp_path / "corpus", program)
    (path / "events" / f"spec_id={program[0].spec_id}" / "zz-garbage.parquet").write_bytes(b"garbage!" * 10)
    with pytest.raises(s.CorpusError) as raised:
        c.open_corpus(spark, path)
    assert raised.value.problems == [f"spec_id={program[0].spec_id}/zz-garbage.parquet: not a Parquet file (no PAR1 magic)"]
