"""generate: the same seed gives the same corpus, each program is the model's run of its own seed,
and the per-program table holds what a diff needs (length, fingerprint, seed)."""

from __future__ import annotations

import pytest

from model.history import spec_id
from model.spec import Spec, SubscriptionType
from suites.traces.helpers import model_program, program_ranges, rows
from traces import corpus as c
from traces.jobs import generate
from traces.run import program_seed
from traces.schema import FIELDS, CorpusError
from traces.specs import MatrixError, parse_matrix
from traces.transforms import program_table

pytestmark = pytest.mark.spark
SPECS = [Spec(subscription_type=SubscriptionType.SHARED), Spec(subscription_type=SubscriptionType.FAILOVER)]
SIZE = {"programs": 12, "steps": 20}


@pytest.fixture(scope="module")
def corpora(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("generate")
    made = {name: generate.run(spark, base / name, specs=SPECS, seed=seed, **SIZE)
            for name, seed in (("first", 5), ("again", 5), ("other", 6))}
    return base, made


def _events(spark, path):
    return rows(c.open_corpus(spark, path).events, *[f for f in FIELDS if f != "keys"])


def test_same_seed_same_corpus(spark, corpora):
    base, made = corpora
    assert _events(spark, base / "first") == _events(spark, base / "again")
    assert (rows(c.open_corpus(spark, base / "first").programs, "spec_id", "program_id", "seed", "steps", "fingerprint")
            == rows(c.open_corpus(spark, base / "again").programs, "spec_id", "program_id", "seed", "steps", "fingerprint"))
    assert made["first"]["events"] == made["again"]["events"] == 2 * 12 * 20


def test_another_seed_another_corpus(spark, corpora):
    base, _ = corpora
    assert _events(spark, base / "first") != _events(spark, base / "other")


def test_each_program_is_the_model_run_of_its_seed(spark, corpora):
    base, _ = corpora
    corpus = c.open_corpus(spark, base / "first")
    key = spec_id(SPECS[1])
    stored = corpus.events.where(f"spec_id = '{key}' AND program_id = 'p000007'").orderBy("step").collect()
    expected = model_program(SPECS[1], program_seed(5, 7), 20, "p000007")
    assert [r.asDict() | {"keys": tuple(r["keys"]) if r["keys"] else r["keys"]} for r in stored] == \
        [{f: getattr(e, f) for f in FIELDS} for e in expected]
    [seed] = [r.seed for r in corpus.programs.where(f"spec_id = '{key}' AND program_id = 'p000007'").collect()]
    assert seed == program_seed(5, 7)


def test_program_table_is_the_fingerprint_of_the_events(spark, corpora):
    base, _ = corpora
    corpus = c.open_corpus(spark, base / "first")
    columns = ("spec_id", "program_id", "steps", "fingerprint")
    assert rows(corpus.programs, *columns) == rows(program_table(corpus.events), *columns)


def test_generate_refuses_an_existing_output(spark, corpora):
    base, _ = corpora
    before = (base / "first" / c.MANIFEST).read_text()
    with pytest.raises(CorpusError, match="already exists"):
        generate.run(spark, base / "first", specs=SPECS, seed=1, **SIZE)
    assert (base / "first" / c.MANIFEST).read_text() == before


def test_matrix_is_the_product_of_its_axes():
    specs = parse_matrix(["subscription_type=Shared,Exclusive", "nack_delay_ms=100,1000", "ack_timeout_ms=none"])
    assert len(specs) == 4
    assert {(s.subscription_type.value, s.nack_delay_ms, s.ack_timeout_ms) for s in specs} == {
        ("Shared", 100, None), ("Shared", 1000, None), ("Exclusive", 100, None), ("Exclusive", 1000, None)}
    assert len(parse_matrix(None)) == 4


@pytest.mark.parametrize("option, message", [
    ("color=red", "FIELD=V1,V2"), ("subscription_type=Queue", "not one of"), ("nack_delay_ms=soon", "integer"),
    ("ack_timeout_ms=10", "ack_timeout_ms must be >= 1000")])
def test_matrix_errors_say_what_is_wrong(option, message):
    with pytest.raises(MatrixError, match=message):
        parse_matrix([option])


def test_each_file_holds_one_range_of_programs_in_order(corpora):
    """Written as the tasks made them (no shuffle): every file is one spec's programs, sorted by
    program and step, and no two files of a spec share a program; each has the page index a diff's
    filtered scan skips pages by, and holds the spec's JSON as a plain string column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base, _ = corpora
    spec_dirs = list((base / "first" / c.EVENTS).glob(f"{c.s.PARTITION}=*"))
    assert len(spec_dirs) == len(SPECS)
    for spec_dir in spec_dirs:
        ranges = program_ranges(spec_dir)
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))
        for file in spec_dir.glob("*.parquet"):
            handle = pq.ParquetFile(file)
            assert handle.schema_arrow.field("spec").type == pa.string()
            program_column = handle.metadata.row_group(0).column(handle.schema_arrow.get_field_index("program_id"))
            assert program_column.has_column_index and program_column.has_offset_index, file.name
