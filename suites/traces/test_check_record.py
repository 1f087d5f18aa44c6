"""record --check: the recording is checked against the model as soon as it is complete, by the
same command, and the check's output is written next to it. A target that answers one op otherwise
than Pulsar is caught in exactly the programs that ask it that op, and the reproduction written
for it replays the failure on that target; an op the target could not perform leaves its program
unknown, never a pass or a violation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from model.spec import Spec, SubscriptionType
from traces import corpus as c
from traces.cli import main
from traces.jobs import generate

pytestmark = pytest.mark.spark
SPECS = [Spec(subscription_type=SubscriptionType.SHARED), Spec(subscription_type=SubscriptionType.EXCLUSIVE)]


@pytest.fixture(scope="module")
def source(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("record-check") / "source"
    generate.run(spark, path, specs=SPECS, programs=12, steps=40, seed=4)
    return c.open_corpus(spark, path)


def _programs_with(source, where: str) -> set[tuple[str, str]]:
    return {(r.spec_id, r.program_id) for r in source.events.where(where).select("spec_id", "program_id").collect()}


def test_a_target_that_accepts_cumulative_acks_on_shared_is_caught_where_it_answers(spark, source, tmp_path):
    out = tmp_path / "rec"
    target = "suites.traces.faulty:accepts_cumulative"
    assert main(["record", "--corpus", str(source.path), "--out", str(out), "--target", target, "--check", "-q"]) == 0
    summary = json.loads((tmp_path / "rec-check" / c.SUMMARY).read_text())
    assert summary["kind"] == "check" and summary["corpus"]["target"] == target
    shared = next(k for k, text in source.manifest["specs"].items() if '"Shared"' in text)
    refused = _programs_with(source, f"spec_id = '{shared}' AND op = 'acknowledge_cumulative' AND outcome = 'fail'")
    assert refused, "the source corpus should hold cumulative acks on Shared"
    per_spec = {r["spec_id"]: r for r in summary["per_spec"]}
    assert per_spec[shared]["violation"] == len(refused) and per_spec[shared]["unknown"] == 0
    assert [r["conforms"] for k, r in per_spec.items() if k != shared] == [12]
    assert [(g["guarantee"], g["violation"]) for g in summary["per_guarantee"]] == \
           [("cumulative-refused-on-shared", len(refused))]
    [signature] = summary["signatures"]
    assert (signature["representative_spec"], signature["representative_program"]) in refused
    # The reproduction drives the same target, which answers the same: the failure comes back.
    ran = subprocess.run([sys.executable, str(tmp_path / "rec-check" / signature["reproduction"])], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0 and "broke cumulative-refused-on-shared" in ran.stderr, ran.stderr[-2000:]
    assert f"replay({target!r}" in (tmp_path / "rec-check" / signature["reproduction"]).read_text()


def test_an_op_the_target_could_not_perform_leaves_its_program_unknown(spark, source, tmp_path):
    check_out = tmp_path / "checked"
    assert main(["record", "--corpus", str(source.path), "--out", str(tmp_path / "rec"), "--target",
                 "suites.traces.faulty:cannot_seek", "--check", "--check-out", str(check_out), "-q"]) == 0
    summary = json.loads((check_out / c.SUMMARY).read_text())
    seeking = _programs_with(source, "op = 'seek'")
    assert seeking, "the source corpus should hold seeks"
    assert summary["verdicts"] == {"conforms": 24 - len(seeking), "violation": 0, "unknown": len(seeking)}
    assert summary["unknown_reasons"] == {"harness": len(seeking)}


def test_an_existing_check_output_is_refused_before_anything_is_recorded(spark, source, tmp_path, capsys):
    (tmp_path / "rec-check").mkdir()
    assert main(["record", "--corpus", str(source.path), "--out", str(tmp_path / "rec"), "--check", "-q"]) == 2
    assert "rec-check" in capsys.readouterr().err and not (tmp_path / "rec").exists()
