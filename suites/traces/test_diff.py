"""The diff job on hand-made corpora: exactly the injected divergences are found, each at its first
divergent step with its signature; what is not compared (time, error text) is not a divergence;
outputs are refused when they exist, and bad inputs fail before anything is written."""

from __future__ import annotations

import dataclasses
import json

import pytest

from model.history import to_json_line
from suites.traces.helpers import EXCLUSIVE, SHARED, change, first_step, model_program, program_ranges, rows, \
    write_corpus
from traces import transforms as t
from traces.jobs import diff
from traces.schema import CorpusError

pytestmark = pytest.mark.spark
STEPS = 40


def _program(spec, seed, pid):
    return model_program(spec, seed, STEPS, pid)


@pytest.fixture(scope="module")
def injected(spark, tmp_path_factory):
    """Expected and observed corpora, the divergences injected, and the diff's output."""
    base = tmp_path_factory.mktemp("diff")
    programs = {pid: _program(SHARED, seed, pid) for seed, pid in enumerate(
        ["redelivery", "truncated", "extra", "twice", "timing", "consumer", "only-expected", "same"], start=11)}
    programs["exclusive"] = _program(EXCLUSIVE, 5, "exclusive")
    observed = dict(programs)
    truth = {}

    p = programs["redelivery"]
    k = next(e.step for e in p if e.op == "receive" and e.delivered_entry is not None and e.redelivery_count == 0)
    observed["redelivery"] = change(p, k, redelivery_count=4)
    truth["redelivery"] = (k, "receive", "ok:delivery", "ok:redelivery", "redelivery_count")

    p = programs["truncated"]
    observed["truncated"] = [e for e in p if e.step < 20]
    truth["truncated"] = (20, p[20].op, truth_class(p[20]), "missing", "missing")

    p = programs["extra"]
    tail = dataclasses.replace(p[-1], step=STEPS, op="read_cursor", consumer=None, entry=None, index=None, keys=None,
                               batched=None, ms=None, outcome="ok", delivered_entry=None, delivered_index=None,
                               redelivery_count=None, cursor="-1|", sent=None, error=None)
    observed["extra"] = p + [tail]
    truth["extra"] = (STEPS, "read_cursor", "missing", "ok:cursor", "missing")

    p = programs["twice"]
    a = first_step(p, "send")
    b = first_step(p, "receive", after=a + 1)
    observed["twice"] = change(change(p, a, outcome="info", error="TimeoutException: no answer"), b, outcome="fail",
                               error="AlreadyClosed")
    truth["twice"] = (a, "send", "ok:sent", "info:TimeoutException", "outcome,error_class")

    p = programs["timing"]
    observed["timing"] = [dataclasses.replace(e, at=e.at + 1234) for e in p]  # time is not compared

    p = programs["consumer"]
    k = first_step(p, "receive")
    observed["consumer"] = change(p, k, consumer="c9")
    truth["consumer"] = (k, "receive", truth_class(p[k]), truth_class(p[k]), "consumer")

    del observed["only-expected"]
    observed["only-observed"] = _program(SHARED, 99, "only-observed")

    expected_path = write_corpus(spark, base / "expected", [e for p in programs.values() for e in p])
    observed_path = write_corpus(spark, base / "observed", [e for p in observed.values() for e in p])
    summary = diff.run(spark, expected_path, observed_path, base / "out")
    return {"base": base, "truth": truth, "summary": summary, "expected": expected_path, "observed": observed_path,
            "spec": SHARED}


def truth_class(event) -> str:
    if event.outcome != "ok":
        return f"{event.outcome}:{(event.error or '?').split(':')[0]}"
    if event.op == "receive":
        return "ok:nothing" if event.delivered_entry is None else "ok:redelivery" if event.redelivery_count else "ok:delivery"
    return {"read_cursor": "ok:cursor", "send": "ok:sent"}.get(event.op, "ok")


def test_exactly_the_injected_divergences_at_their_first_step(spark, injected):
    found = spark.read.parquet(str(injected["base"] / "out" / "divergences"))
    assert found.columns == list(t.DIVERGENCE_COLUMNS)
    got = {r.program_id: (r.step, r.op, r.expected_class, r.observed_class, r.fields) for r in found.collect()}
    assert got == injected["truth"]


def test_program_statuses_are_counted(injected):
    assert injected["summary"]["programs"] == {"same": 3, "differs": 5, "only_expected": 1, "only_observed": 1}
    assert injected["summary"]["divergent_programs"] == 5


def test_signatures_group_divergences_with_the_shortest_program(spark, injected):
    signatures = spark.read.parquet(str(injected["base"] / "out" / "signatures.parquet"))
    assert signatures.columns == list(t.SIGNATURE_COLUMNS)
    got = rows(signatures, "op", "expected_class", "observed_class", "fields", "programs", "representative_program")
    want = sorted((op, e, o, f, 1, pid) for pid, (_, op, e, o, f) in injected["truth"].items())
    assert got == want
    assert len(injected["summary"]["signatures"]) == 5


@pytest.mark.parametrize("broadcast", [True, False], ids=["keys broadcast", "keys shuffled"])
def test_too_many_differing_programs_to_list_are_joined_with_the_same_result(spark, injected, monkeypatch, tmp_path,
                                                                            broadcast):
    """Past KEY_LIST_PROGRAMS differing programs the scans cannot name them: their events are found
    by a semi join on the differing programs instead (their keys broadcast up to
    BROADCAST_PROGRAMS), with the same divergences, counts and signatures."""
    monkeypatch.setattr(diff, "KEY_LIST_PROGRAMS", 2)
    monkeypatch.setattr(diff, "BROADCAST_PROGRAMS", 1_000 if broadcast else 2)
    summary = diff.run(spark, injected["expected"], injected["observed"], tmp_path / "out")
    found = spark.read.parquet(str(tmp_path / "out" / "divergences"))
    got = {r.program_id: (r.step, r.op, r.expected_class, r.observed_class, r.fields) for r in found.collect()}
    assert got == injected["truth"]
    listed = injected["summary"]
    assert (summary["programs"], summary["per_spec"], summary["signatures"]) == \
        (listed["programs"], listed["per_spec"], listed["signatures"])


def test_report_is_one_self_contained_page(injected):
    page = (injected["base"] / "out" / "report.html").read_text()
    assert page.count('class="chart"') == 3
    for outside in ("<script", "<link", "src=", "@import", "url("):
        assert outside not in page
    assert "read cursor" in page  # the representative programs are told step by step


def test_summary_is_json_with_the_spec_described(injected):
    summary = json.loads((injected["base"] / "out" / "summary.json").read_text())
    shared = next(r for r in summary["per_spec"] if r["describe"].startswith("Shared"))
    assert shared["differs"] == 5 and shared["same"] == 2


def test_existing_output_is_refused_and_kept(spark, injected):
    before = (injected["base"] / "out" / "summary.json").read_text()
    with pytest.raises(CorpusError, match="already exists"):
        diff.run(spark, injected["expected"], injected["observed"], injected["base"] / "out")
    assert (injected["base"] / "out" / "summary.json").read_text() == before


def test_missing_input_fails_before_writing(spark, injected, tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        diff.run(spark, tmp_path / "nothing", injected["observed"], tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_corrupt_input_fails_and_leaves_nothing(spark, injected, tmp_path):
    bad = write_corpus(spark, tmp_path / "bad", _program(SHARED, 1, "p"))
    victim = next((bad / "events").rglob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:-30])
    with pytest.raises(CorpusError, match="truncated or corrupt Parquet"):
        diff.run(spark, injected["expected"], bad, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad"]


def test_values_outside_the_vocabulary_in_differing_programs_fail_and_leave_nothing(spark, tmp_path):
    """An op the vocabulary does not know, or an outcome other than ok/fail/info, on either side of
    a program that differs: the diff names the side, the count and the first one."""
    program = _program(SHARED, 3, "p")
    expected = write_corpus(spark, tmp_path / "expected", program)
    send = first_step(program, "send")
    observed = write_corpus(spark, tmp_path / "observed",
                            change(change(program, send, op="frobnicate"), send + 1, outcome="maybe"))
    with pytest.raises(CorpusError) as raised:
        diff.run(spark, expected, observed, tmp_path / "out")
    said = str(raised.value)
    assert f"observed: 2 event(s) with an unknown op or an outcome other than ok/fail/info, first: spec " \
           f"{program[0].spec_id} program p step {send} (op 'frobnicate'" in said
    assert "expected:" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expected", "observed"]


def test_output_inside_an_input_is_refused(spark, injected):
    with pytest.raises(CorpusError, match="overlaps the input"):
        diff.run(spark, injected["expected"], injected["observed"], injected["expected"] / "diff")


def test_a_history_diffs_against_a_corpus(spark, tmp_path):
    program = _program(SHARED, 21, "h")
    history = tmp_path / "h.jsonl"
    history.write_text("".join(to_json_line(e) + "\n" for e in program))
    k = first_step(program, "send")
    observed = write_corpus(spark, tmp_path / "observed", change(program, k, outcome="fail", error="ProducerBusy"))
    summary = diff.run(spark, history, observed, tmp_path / "out")
    [signature] = summary["signatures"]
    assert (signature["representative_step"], signature["observed_class"]) == (k, "fail:ProducerBusy")


def test_observation_classes(spark):
    frame = spark.createDataFrame(
        [("receive", "ok", None, None, None, None), ("receive", "ok", 3, 0, None, None),
         ("receive", "ok", 3, 2, None, None), ("read_cursor", "ok", None, None, "1|", None),
         ("send", "ok", None, None, None, None), ("acknowledge", "fail", None, None, None, "AckError: boom"),
         ("close", "info", None, None, None, None), ("close", "ok", None, None, None, None),
         (None, None, None, None, None, None)],
        "x_op string, x_outcome string, x_delivered_entry int, x_redelivery_count int, x_cursor string, x_error string")
    frame = frame.selectExpr("*", f"{t.ERROR_CLASS.replace('error', 'x_error')} AS x_error_class")
    got = [r[0] for r in frame.selectExpr(t.observation_class_sql("x")).collect()]
    assert got == ["ok:nothing", "ok:delivery", "ok:redelivery", "ok:cursor", "ok:sent", "fail:AckError", "info:?",
                   "ok", "missing"]


def test_a_same_named_program_of_another_spec_is_not_a_divergence(spark, tmp_path):
    changed = _program(SHARED, 31, "twin")
    k = first_step(changed, "send")
    alone = _program(EXCLUSIVE, 32, "twin")  # the same program id, in another spec, on one side only
    expected = write_corpus(spark, tmp_path / "e", changed + alone)
    observed = write_corpus(spark, tmp_path / "o", change(changed, k, outcome="info", error="Timeout"))
    summary = diff.run(spark, expected, observed, tmp_path / "out")
    assert summary["programs"] == {"same": 0, "differs": 1, "only_expected": 1, "only_observed": 0}
    assert [s["spec_id"] for s in summary["signatures"]] == [changed[0].spec_id]


def _scanned_rows(frame) -> int:
    """Rows the Parquet scans of an executed frame handed to Spark (after page skipping)."""
    def walk(plan) -> int:
        metrics = plan.metrics()
        own = metrics.apply("numOutputRows").value() if plan.nodeName().startswith("Scan parquet") else 0
        children = plan.children().iterator()
        total = own
        while children.hasNext():
            total += walk(children.next())
        return total

    return walk(frame._jdf.queryExecution().executedPlan())


def _many_events() -> list:
    """400 small programs (10 events) in each of two specs, the same ids in both."""
    return [e for spec in (SHARED, EXCLUSIVE) for i in range(400) for e in _program(spec, i, f"m{i:04d}")[:10]]


@pytest.fixture(scope="module")
def many(spark, tmp_path_factory):
    """One file per spec, four pages of 1000 events each."""
    from traces import corpus as c

    events = _many_events()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(c, "PAGE_ROWS", 1000)
        patch.setitem(c.WRITE_OPTIONS, "parquet.page.row.count.limit", "1000")
        return write_corpus(spark, tmp_path_factory.mktemp("many") / "corpus", events), events


def test_listed_programs_are_exactly_their_events_and_skip_the_other_pages(spark, many):
    from traces import corpus as c

    path, events = many
    corpus = c.open_corpus(spark, path)
    # Two programs, and 400 absent ones: more than Spark hands to Parquet in one IN value by value
    # (t.PARQUET_IN_VALUES; a longer IN would reach Parquet as its min..max range, all pages between).
    keys = [(events[0].spec_id, p) for p in ("m0007", "m0301", *(f"m0007_{x:03d}" for x in range(400)))]
    listed = t.programs_listed(corpus.events, keys)
    got = sorted((r.spec_id, r.program_id, r.step) for r in listed.collect())
    assert got == sorted((e.spec_id, e.program_id, e.step) for e in events if (e.spec_id, e.program_id) in keys)
    assert listed.columns == list(t.FIELDS)
    # Pages of 1000 events: two programs of 10 events are found in at most two pages, not in all
    # 4000 events of their spec's file.
    assert 0 < _scanned_rows(listed) <= 2 * 1000 < len(events) // 2


def test_a_list_longer_than_sparks_default_reaches_parquet_value_by_value(spark, many):
    """22 ids in one IN list: past Spark's default of 10 values Parquet would get the list's
    min..max range (every page from m0007 to m0301); the session's pushdown threshold hands it the
    values, so only the two programs' pages are read."""
    from traces import corpus as c

    path, events = many
    keys = [(events[0].spec_id, p) for p in ("m0007", "m0301", *(f"m0007_{x:02d}" for x in range(20)))]
    listed = t.programs_listed(c.open_corpus(spark, path).events, keys)
    assert len(listed.collect()) == 20  # m0007 and m0301, 10 events each
    assert 0 < _scanned_rows(listed) <= 2 * 1000


def test_thousands_of_listed_programs_are_one_query(spark, many):
    """Thousands of ids (most of them absent) do not overflow the JVM's stack: Spark hands each IN
    to Parquet as a chain of equalities, so the ids go in short INs under a balanced OR."""
    from traces import corpus as c

    path, events = many
    spec = events[0].spec_id
    keys = [(spec, f"m{i:04d}") for i in range(0, 5000, 2)]
    listed = t.programs_listed(c.open_corpus(spark, path).events, keys)
    assert listed.count() == sum(1 for e in events if e.spec_id == spec and int(e.program_id[1:]) % 2 == 0)
    assert t.programs_listed(c.open_corpus(spark, path).events, []).count() == 0


def test_files_hold_disjoint_ranges_of_programs_in_order(spark, tmp_path):
    from traces import corpus as c

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(c, "EVENTS_PER_FILE", 1000)  # four files per spec
        path = write_corpus(spark, tmp_path / "corpus", _many_events())
    for spec_dir in (path / "events").glob("spec_id=*"):
        ranges = program_ranges(spec_dir)
        assert len(ranges) > 2
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))
