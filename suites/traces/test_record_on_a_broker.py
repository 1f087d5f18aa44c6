"""A recording on a real broker says what it ran on: the broker's version and the client's, in
its manifest and in its check's summary. The specs keep the generated ones (the key two
recordings of one corpus align on), so without this a recording on Pulsar 4.2.4 read as one on
the generated spec's 4.0.7, and two versions compared side by side were labelled alike."""

from __future__ import annotations

import json

import pytest

from suites.conformance.catalog import SHARED
from traces import corpus as c
from traces.check_summary import markdown
from traces.cli import main
from traces.jobs import generate
from traces.jobs.check import as_recorded

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_a_recording_names_the_broker_and_the_client_it_ran_on(spark, pulsar_broker, tmp_path):
    generate.run(spark, tmp_path / "model", specs=[SHARED], programs=2, steps=12, seed=3)
    out = tmp_path / "rec"
    assert main(["record", "--corpus", str(tmp_path / "model"), "--out", str(out), "--target", "pulsar",
                 "--service-url", pulsar_broker.service_url, "--admin-url", pulsar_broker.admin_url,
                 "--check", "-q"]) == 0
    recorded_on = json.loads((out / c.MANIFEST).read_text())["recorded_on"]
    assert recorded_on["pulsar"] == pulsar_broker.admin.broker_version()
    assert recorded_on["client"].startswith("python-3.")  # the Python client's driver, as its hello says
    summary = json.loads((tmp_path / "rec-check" / c.SUMMARY).read_text())
    assert summary["corpus"]["recorded_on"] == recorded_on
    assert [row["describe"] for row in summary["per_spec"]] == [
        SHARED.with_(broker_version=recorded_on["pulsar"], client=recorded_on["client"]).describe()]
    assert f"(Pulsar {recorded_on['pulsar']}, client {recorded_on['client']})" in markdown(summary)


def test_the_spec_of_a_recording_is_described_with_what_it_ran_on():
    text = json.dumps({"subscription_type": "Shared", "broker_version": "4.0.7", "client": "python-3.13"})
    assert json.loads(as_recorded(text, {"pulsar": "4.2.4", "client": "java-4.2.4"})) == {
        "subscription_type": "Shared", "broker_version": "4.2.4", "client": "java-4.2.4"}
    assert as_recorded(text, {}) == text  # a corpus recorded before this, or on the model
