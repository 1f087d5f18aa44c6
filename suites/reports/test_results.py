"""Result records and the conformance matrix (reports/results.py, reports/markdown.py), from synthetic records."""

from __future__ import annotations

import json

import pytest

from reports.markdown import summary_markdown
from reports.results import InputError, load_summary, matrix, order_spec_ids, to_json
from suites.reports.samples import result, save, summary

RUN = summary(result("individual_ack", "Shared", "passed", examples=30, steps=700),
              result("individual_ack", "Exclusive", "failed", guarantee="no-loss", detail="m2 never came",
                     failure="individual_ack-Exclusive", examples=4, steps=40),
              result("negative_ack", "Key_Shared", "unknown", reason="the test raised RuntimeError: boom",
                     examples=None, steps=None),
              result("zero_queue", "Shared", "skipped", reason="cannot drive receiver_queue_size=0"))


def test_the_matrix_is_area_by_spec_id_with_outcomes_and_counts():
    cells = matrix(RUN)
    assert set(cells) == {"individual_ack", "negative_ack", "zero_queue"}
    assert cells["individual_ack"]["Shared"] == {"outcome": "passed", "guarantees": [], "examples": 30, "steps": 700,
                                                 "subscription_type": "Shared"}
    assert cells["individual_ack"]["Exclusive"]["guarantees"] == ["no-loss"]
    assert cells["negative_ack"]["Key_Shared"]["outcome"] == "unknown"
    assert to_json(RUN)["totals"] == {"passed": 1, "failed": 1, "unknown": 1, "skipped": 1}


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
    assert "| negative_ack |  |  | ❔ unknown | 0 / 0 |" in text
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
