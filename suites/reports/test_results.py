"""Result records and the conformance matrix (reports/results.py, reports/markdown.py), from synthetic records."""

from __future__ import annotations

import json

import pytest

from reports.markdown import summary_markdown
from reports.results import InputError, load_summary, matrix, order_spec_ids, to_json
from reports.vocabulary import kind_of_error
from suites.reports.samples import result, save, summary

RUN = summary(result("individual_ack", "Shared", "passed", examples=30, steps=700),
              result("individual_ack", "Exclusive", "failed", guarantee="no-loss", detail="m2 never came",
                     failure="individual_ack-Exclusive", examples=4, steps=40),
              result("negative_ack", "Key_Shared", "unknown", reason="the test raised RuntimeError: boom",
                     examples=None, steps=None),
              result("zero_queue", "Shared", "not applicable", reason="cannot drive receiver_queue_size=0"))


def test_the_matrix_is_area_by_spec_id_with_outcomes_and_counts():
    cells = matrix(RUN)
    assert set(cells) == {"individual_ack", "negative_ack", "zero_queue"}
    assert cells["individual_ack"]["Shared"] == {"outcome": "passed", "reason_kind": None, "guarantees": [],
                                                 "examples": 30, "steps": 700, "subscription_type": "Shared"}
    assert cells["individual_ack"]["Exclusive"]["guarantees"] == ["no-loss"]
    assert cells["negative_ack"]["Key_Shared"]["outcome"] == "unknown"
    assert to_json(RUN)["totals"] == {"passed": 1, "failed": 1, "unknown": 1, "not applicable": 1}


def test_a_summary_round_trips_through_its_file(tmp_path):
    assert load_summary(save(tmp_path, RUN)) == RUN


def test_spec_ids_are_grouped_by_subscription_type():
    ids = ["Shared-dlq1", "Key_Shared", "Shared", "Exclusive-batch-index-ack", "Failover", "Exclusive",
           "Key_Shared-dlq2"]
    assert order_spec_ids(ids) == ["Exclusive", "Exclusive-batch-index-ack", "Failover", "Shared", "Shared-dlq1",
                                   "Key_Shared", "Key_Shared-dlq2"]


def test_the_markdown_summary_shows_the_matrix_the_failures_and_why_unknown():
    text = summary_markdown(RUN, failures_dir="failures")
    assert text.startswith("## Pulsar ack conformance: ❌ divergences found")
    assert "| area | Exclusive | Shared | Key_Shared | programs / ops |" in text
    assert "| individual_ack | ❌ no-loss | ✅ |  | 34 / 740 |" in text
    assert "| negative_ack |  |  | ❔ harness error | 0 / 0 |" in text
    assert "`python failures/individual_ack-Exclusive.py`" in text
    assert "RuntimeError: boom" in text and "cannot drive receiver_queue_size=0" in text


def test_an_unknown_cell_is_never_reported_as_conforming():
    text = summary_markdown(summary(result("seek", "Shared", "unknown", reason="solver limit"),
                                    result("seek", "Exclusive", "passed")))
    assert text.startswith("## Pulsar ack conformance: ❔ undecided")


@pytest.mark.parametrize("change, message", [
    (lambda raw: raw["results"].append(dict(raw["results"][0])), "more than one result for individual_ack [Shared]"),
    (lambda raw: raw["results"][0].update(colour="green"), "unknown fields ['colour']"),
    (lambda raw: raw["results"][0].pop("area"), "missing text fields ['area']"),
    (lambda raw: raw.update(schema="something/else"), "not a conformance summary"),
], ids=["duplicate", "unknown-field", "missing-area", "wrong-schema"])
def test_a_malformed_summary_says_what_is_wrong(tmp_path, change, message):
    path = save(tmp_path, RUN)
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_summary(path)


def test_a_summary_older_than_the_verdict_words_reads_back_in_them(tmp_path):
    """`skipped` is read as not applicable; an unknown without a kind gets the kind its reason says."""
    path = save(tmp_path, RUN)
    raw = json.loads(path.read_text())
    for item in raw["results"]:
        item.pop("reason_kind")
        item["outcome"] = "skipped" if item["outcome"] == "not applicable" else item["outcome"]
    raw["results"].append({"nodeid": "n", "area": "seek", "spec_id": "Shared", "outcome": "unknown",
                           "reason": "client crashed: python 3.13.0 exited with code 139"})
    path.write_text(json.dumps(raw))
    loaded = load_summary(path)
    assert [r.verdict() for r in loaded.results] == ["passed", "failed: no-loss", "unknown: harness error",
                                                     "not applicable", "unknown: client crashed"]


@pytest.mark.parametrize("error, kind", [
    (TimeoutError("no reply"), "timed out"),
    (type("TargetTimedOut", (BaseException,), {})("receive did not return"), "timed out"),
    (type("Timeout", (Exception,), {})("Pulsar error: TimeOut"), "timed out"),
    (type("ConnectError", (Exception,), {})("Pulsar error: ConnectError"), "unreachable"),
    (ConnectionRefusedError(111, "Connection refused"), "unreachable"),
    (RuntimeError("the driver could not perform subscribe: ConnectError: Pulsar error: ConnectError"),
     "unreachable"),  # a driver's error reply names the client's exception
    (RuntimeError("the driver could not perform receive: Timeout: Pulsar error: TimeOut"), "timed out"),
    (KeyboardInterrupt(), "interrupted"),
    (type("Crash", (AssertionError,), {"crashed_client": True})(), "client crashed"),
    (RuntimeError("the target fell over"), "harness error"),
], ids=["timeout", "target-timed-out", "pulsar-timeout", "pulsar-connect", "refused", "driver-connect", "driver-timeout", "interrupt",
        "crash", "other"])
def test_an_error_that_is_not_a_conformance_failure_is_unknown_of_its_kind(error, kind):
    assert kind_of_error(error) == kind


def test_a_kind_outside_the_vocabulary_is_refused(tmp_path):
    path = save(tmp_path, RUN)
    raw = json.loads(path.read_text())
    raw["results"][2]["reason_kind"] = "broker down"
    path.write_text(json.dumps(raw))
    with pytest.raises(InputError, match="reason_kind must be one of unreachable, timed out"):
        load_summary(path)
