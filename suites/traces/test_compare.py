"""compare (and check --against): two checks' verdicts paired per program, the signatures counted on
each side, and the corpora's distributions. A target that breaks one guarantee turns exactly the
programs that meet it from conforms to a violation; the same corpus checked twice changes nothing;
the distributions are what counting the events by hand gives."""

from __future__ import annotations

import json

import pytest

from model.spec import Spec, SubscriptionType
from traces import corpus as c
from traces.cli import main
from traces.jobs import compare, generate

pytestmark = pytest.mark.spark
SPECS = [Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100),
         Spec(subscription_type=SubscriptionType.EXCLUSIVE, nack_delay_ms=100)]


@pytest.fixture(scope="module")
def checked(spark, tmp_path_factory):
    """A model corpus and its check, and a recording of it on a target that accepts cumulative acks
    on Shared, with its check."""
    base = tmp_path_factory.mktemp("compare")
    generate.run(spark, base / "source", specs=SPECS, programs=10, steps=40, seed=5)
    assert main(["check", str(base / "source"), "--out", str(base / "source-check"), "-q"]) == 0
    assert main(["record", "--corpus", str(base / "source"), "--out", str(base / "rec"), "--target",
                 "suites.traces.faulty:accepts_cumulative", "--check", "-q"]) == 0
    return base


def _summary(path) -> dict:
    return json.loads((path / c.SUMMARY).read_text())


def test_a_target_breaking_one_guarantee_changes_exactly_the_programs_that_meet_it(spark, checked, tmp_path):
    broken = _summary(checked / "rec-check")
    violations = broken["verdicts"]["violation"]
    assert violations > 0, "the corpus should hold cumulative acks on Shared"
    assert main(["compare", str(checked / "source-check"), str(checked / "rec-check"), "--out", str(tmp_path / "cmp"),
                 "--fail-on-change", "-q"]) == 1
    summary = _summary(tmp_path / "cmp")
    assert summary["programs"] == {"same": 20 - violations, "changed": violations, "only_before": 0, "only_after": 0}
    assert {(t["before"], t["after"]): t["programs"] for t in summary["transitions"]} == \
           {("conforms", "conforms"): 20 - violations, ("conforms", "violation"): violations}
    assert summary["per_guarantee"] == [{"guarantee": "cumulative-refused-on-shared", "before": 0, "after": violations}]
    [signature] = summary["signatures"]
    assert (signature["programs_before"], signature["programs_after"]) == (0, violations)
    changes = spark.read.parquet(str(tmp_path / "cmp" / compare.CHANGES)).collect()
    assert len(changes) == violations
    assert all(r.change == "changed" and r.before_verdict == "conforms" and r.after_verdict == "violation"
               and r.after_guarantee == "cumulative-refused-on-shared" for r in changes)
    assert "**" + str(violations) + " changed**" in (tmp_path / "cmp" / "summary.md").read_text()


def test_the_same_corpus_checked_again_changes_nothing(checked, tmp_path):
    """check --against: the one command that re-checks a stored corpus and says which verdicts changed."""
    assert main(["check", str(checked / "rec"), "--out", str(tmp_path / "again"), "--against",
                 str(checked / "rec-check"), "--fail-on-change", "-q"]) == 0
    summary = _summary(tmp_path / "again-compare")
    assert summary["programs"] == {"same": 20, "changed": 0, "only_before": 0, "only_after": 0}
    assert all(s["programs_before"] == s["programs_after"] for s in summary["signatures"])


def test_programs_on_one_side_only_are_counted_as_such(spark):
    rows = lambda *pids: spark.createDataFrame(  # noqa: E731
        [("s", p, "conforms", None, None, None, None, None, 5) for p in pids],
        "spec_id string, program_id string, verdict string, guarantee string, reason string, step int, "
        "detail string, signature string, steps int")
    pairs = compare.paired(rows("p1", "p2"), rows("p2", "p3"))
    assert sorted((r.program_id, r.change) for r in pairs.collect()) == \
           [("p1", "only_before"), ("p2", "same"), ("p3", "only_after")]


def test_the_distributions_are_the_events_counted_by_hand(checked):
    from pyspark.sql import SparkSession

    events = c.open_corpus(SparkSession.getActiveSession(), checked / "source").events
    rows = [r.asDict() for r in events.collect()]
    deliveries = [r for r in rows if r["op"] == "receive" and r["outcome"] == "ok" and r["delivered_entry"] is not None]
    expected: dict[str, dict] = {}
    for r in deliveries:
        spec = expected.setdefault(r["spec_id"], {"counts": {}, "messages": {}})
        spec["counts"][str(r["redelivery_count"])] = spec["counts"].get(str(r["redelivery_count"]), 0) + 1
        key = (r["program_id"], r["delivered_entry"], r["delivered_index"])
        spec["messages"][key] = spec["messages"].get(key, 0) + 1
    waits: dict[str, list] = {}
    for n in (r for r in rows if r["op"] == "negative_acknowledge" and r["outcome"] == "ok"):
        later = [d["at"] - n["at"] for d in deliveries if d["program_id"] == n["program_id"]
                 and d["spec_id"] == n["spec_id"] and d["step"] > n["step"]
                 and (d["delivered_entry"], d["delivered_index"]) == (n["entry"], n["index"])]
        waits.setdefault(n["spec_id"], []).append(min(later) if later else None)
    assert any(w is not None for ws in waits.values() for w in ws), "the corpus should hold nacks redelivered"
    found = compare.distributions(events)
    for key, spec in expected.items():
        assert found[key]["deliveries_by_redelivery_count"] == dict(sorted(spec["counts"].items(), key=lambda i: int(i[0])))
        per_count: dict[str, int] = {}
        for n in spec["messages"].values():
            per_count[str(n)] = per_count.get(str(n), 0) + 1
        assert found[key]["messages_by_deliveries"] == dict(sorted(per_count.items(), key=lambda i: int(i[0])))
        measured = [w for w in waits.get(key, []) if w is not None]
        wait = found[key]["nack_to_redelivery_ms"]
        if key in waits:
            assert (wait["nacks"], wait["never_redelivered"]) == (len(waits[key]), len(waits[key]) - len(measured))
            assert wait["max"] == (max(measured) if measured else None)


def test_compare_refuses_what_is_not_a_check(checked, tmp_path):
    assert main(["compare", str(checked / "source"), str(checked / "rec-check"), "--out", str(tmp_path / "cmp"),
                 "-q"]) == 2
    assert not (tmp_path / "cmp").exists()
