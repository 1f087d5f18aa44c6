"""The CI gate (reports/gate.py): exit codes and what it says, for new, accepted, not shown and unknown
cells, and for missing or malformed inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports import gate
from reports.baseline import SCHEMA as BASELINE_SCHEMA
from suites.reports.samples import result, save, summary

ROOT = Path(__file__).resolve().parents[2]
LOST = result("individual_ack", "Shared", "failed", guarantee="no-loss", detail="m2 never came")
ENTRY = {"area": "individual_ack", "spec_id": "Shared", "guarantee": "no-loss",
         "reason": "the client drops a message on reconnect", "evidence": "apache/pulsar-client-cpp#1"}


def write_baseline(folder: Path, *entries: dict, **extra) -> Path:
    path = folder / "baseline.json"
    path.write_text(json.dumps({"schema": BASELINE_SCHEMA, "accepted": list(entries), **extra}))
    return path


def run_gate(tmp_path: Path, run, *entries: dict, args: tuple[str, ...] = ()) -> tuple[int, str]:
    results = save(tmp_path, run)
    baseline = write_baseline(tmp_path, *entries)
    code = gate.main(["--results", str(results), "--baseline", str(baseline), *args])
    return code, (tmp_path / "gate.md").read_text() if (tmp_path / "gate.md").exists() else ""


def test_a_failure_not_in_the_baseline_is_a_new_divergence(tmp_path, capsys):
    code, text = run_gate(tmp_path, summary(LOST, result("seek", "Shared", "passed")))
    assert code == 1
    assert "Conformance gate: ❌ failed" in text
    assert "| individual_ack | Shared | `no-loss` | m2 never came |" in text
    assert "1 new divergence(s)" in capsys.readouterr().out


def test_an_accepted_failure_passes_and_is_listed_with_its_reason(tmp_path):
    code, text = run_gate(tmp_path, summary(LOST), ENTRY)
    assert code == 0
    assert "0 new divergence(s) · 1 accepted" in text
    assert "the client drops a message on reconnect" in text


def test_a_failure_on_another_guarantee_of_an_accepted_cell_is_new(tmp_path):
    ordered = result("individual_ack", "Shared", "failed", guarantee="order", detail="m1 before m0")
    code, text = run_gate(tmp_path, summary(ordered), ENTRY)
    assert code == 1
    assert "| individual_ack | Shared | `order` |" in text
    assert "now fails on order instead" in text  # the accepted no-loss is neither confirmed nor passed


def test_a_failure_its_cell_did_not_repeat_when_run_again_is_shown_and_does_not_fail(tmp_path):
    """What `./dev test` does with a real broker's failures: the failed cells run once more, and
    only a failure the broker repeats is judged."""
    first = summary(LOST, result("seek", "Shared", "failed", guarantee="no-loss", detail="m1 never came"))
    again = tmp_path / "again"
    again.mkdir()
    rerun = save(again, summary(result("individual_ack", "Shared", "passed"),
                                result("seek", "Shared", "failed", guarantee="no-loss", detail="m1 never came")))
    code, text = run_gate(tmp_path, first, args=("--rerun", str(rerun)))
    assert code == 1
    assert "| seek | Shared | `no-loss` | m1 never came |" in text
    assert "1 new divergence(s)" in text and "1 failed once, not repeated" in text
    assert "### Failed once, passed when run again" in text and "- **individual_ack [Shared]**: `no-loss`" in text
    rerun = save(again, summary(result("individual_ack", "Shared", "passed"), result("seek", "Shared", "passed")))
    code, text = run_gate(tmp_path, first, args=("--rerun", str(rerun)))
    assert code == 0 and "2 failed once, not repeated" in text


def test_a_baseline_entry_whose_cell_passes_is_reported_not_shown(tmp_path):
    code, text = run_gate(tmp_path, summary(result("individual_ack", "Shared", "passed")), ENTRY)
    assert code == 0
    assert "1 not shown" in text and "### Not shown" in text and "now passed" in text
    code, _ = run_gate(tmp_path, summary(result("individual_ack", "Shared", "passed")), ENTRY,
                       args=("--fail-on-fixed",))
    assert code == 1


def test_unknown_is_shown_as_unknown_and_fails_unless_allowed(tmp_path):
    undecided = result("persistence", "Shared", "unknown", reason="the check could not decide (a solver limit)")
    code, text = run_gate(tmp_path, summary(undecided, result("seek", "Shared", "passed")))
    assert code == 1
    assert "1 unknown" in text and "the check could not decide" in text and "passed" not in text.split("\n")[0]
    code, text = run_gate(tmp_path, summary(undecided, result("seek", "Shared", "passed")), args=("--allow-unknown",))
    assert code == 0
    assert "allowed by --allow-unknown" in text and "*solver limit*" in text


@pytest.mark.parametrize("cells, why", [
    ((result("seek", "Shared", "unknown", reason="the test raised ConnectError: Connection refused"),
      result("zero_queue", "Shared", "not applicable", reason="the client lacks receiver_queue_0")),
     "no cell passed or failed (1 unknown, 1 not applicable)"),
    ((result("seek", "Shared", "passed", examples=0, steps=0), result("seek", "Exclusive", "passed", examples=0)),
     "the 2 decided cell(s) ran 0 programs"),
    ((result("seek", "Shared", "unknown", reason="setup of the test raised UsageError: --target 'x:y': cannot "
                                                 "import 'x'"),), "no cell passed or failed (1 unknown)"),
], ids=["unknown-and-not-applicable", "no-program", "target-never-loaded"])
def test_a_run_that_checked_nothing_fails_even_with_allow_unknown(tmp_path, cells, why):
    code, text = run_gate(tmp_path, summary(*cells), args=("--allow-unknown",))
    assert code == 1
    assert "Conformance gate: ❌ failed" in text and "**Nothing was checked**" in text and why in text


def test_an_entry_for_another_target_does_not_apply(tmp_path):
    code, _ = run_gate(tmp_path, summary(LOST, target="model"), {**ENTRY, "target": "pulsar"})
    assert code == 1
    code, _ = run_gate(tmp_path, summary(LOST, target="pulsar"), {**ENTRY, "target": "pulsar"})
    assert code == 0


def test_entries_for_cells_not_run_are_unconfirmed_not_passed(tmp_path):
    code, text = run_gate(tmp_path, summary(result("seek", "Shared", "passed")), ENTRY)
    assert code == 0
    assert "0 not shown" in text and "not in this run" in text


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    (json.dumps({"accepted": []}), "not a baseline"),
    (json.dumps({"schema": BASELINE_SCHEMA, "accepted": {}}), "\"accepted\" must be a list"),
    (json.dumps({"schema": BASELINE_SCHEMA, "accepted": [{**ENTRY, "evidence": ""}]}), "missing or empty ['evidence']"),
    (json.dumps({"schema": BASELINE_SCHEMA, "accepted": [{**ENTRY, "guarantee": "no-lost"}]}),
     "unknown guarantee 'no-lost'"),
    (json.dumps({"schema": BASELINE_SCHEMA, "accepted": [{**ENTRY, "reasn": "typo"}]}), "unknown fields ['reasn']"),
    (json.dumps({"schema": BASELINE_SCHEMA, "accepted": [ENTRY, ENTRY]}), "accepted more than once"),
], ids=["not-json", "no-schema", "not-a-list", "empty-evidence", "unknown-guarantee", "typo", "duplicate"])
def test_a_malformed_baseline_is_a_clear_error(tmp_path, capsys, content, message):
    results = save(tmp_path, summary(LOST))
    (tmp_path / "baseline.json").write_text(content)
    assert gate.main(["--results", str(results), "--baseline", str(tmp_path / "baseline.json")]) == 2
    err = capsys.readouterr().err
    assert f"baseline {tmp_path / 'baseline.json'}" in err and message in err


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("[]", "not a conformance summary"),
    (json.dumps({"schema": "pulsar-ack-conformance/summary/1", "results": [
        {"nodeid": "n", "area": "a", "spec_id": "Shared", "outcome": "green"}]}), "outcome must be one of"),
    (json.dumps({"schema": "pulsar-ack-conformance/summary/1", "results": [
        {"nodeid": "n", "area": "a", "spec_id": "Shared", "outcome": "failed"}]}), "failed without naming"),
    (json.dumps({"schema": "pulsar-ack-conformance/summary/1", "results": []}), "no conformance test ran"),
], ids=["missing", "not-a-summary", "bad-outcome", "failed-without-guarantee", "empty"])
def test_missing_or_malformed_results_are_a_clear_error(tmp_path, capsys, content, message):
    results = tmp_path / "summary.json"
    if content is not None:
        results.write_text(content)
    baseline = write_baseline(tmp_path)
    assert gate.main(["--results", str(results), "--baseline", str(baseline)]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_baseline_is_a_clear_error(tmp_path, capsys):
    results = save(tmp_path, summary(LOST))
    assert gate.main(["--results", str(results), "--baseline", str(tmp_path / "absent.json")]) == 2
    assert "absent.json: no such file" in capsys.readouterr().err


def test_the_shipped_baseline_is_valid_and_holds_only_client_findings():
    """The broker and the model agree with the Python client; an entry is a known divergence of the
    client it names (`client`), found with that client's driver (`--client NAME` in its KD entry)."""
    baseline = gate.load_baseline(ROOT / "reports" / "baseline.json")
    known = (ROOT / "KNOWN_DIVERGENCES.md").read_text()
    assert "reason" in baseline.description
    for entry in baseline.accepted:
        kd = entry.reason.split(":")[0]
        assert entry.reason.startswith("KD-") and f"### {kd}: " in known, entry
        section = known.split(f"### {kd}: ")[1].split("\n### ")[0]
        assert entry.client and f"--client {entry.client.partition('==')[0]}" in section, entry
    for crash in baseline.crashes:  # a known crash: the client bug's KD entry quotes the log line
        kd = crash.reason.split(":")[0]
        assert crash.reason.startswith("KD-") and f"### {kd}: " in known, crash
        section = known.split(f"### {kd}: ")[1].split("\n### ")[0]
        assert crash.client and f"--client {crash.client.partition('==')[0]}" in section, crash
        assert crash.log in " ".join(section.split()), crash


def test_the_command_line_exits_non_zero_and_writes_the_step_summary(tmp_path):
    results = save(tmp_path, summary(LOST))
    baseline = write_baseline(tmp_path)
    step_summary = tmp_path / "step-summary.md"
    done = subprocess.run([sys.executable, "-m", "reports.gate", "--results", str(results), "--baseline",
                           str(baseline), "--markdown", str(tmp_path / "verdict.md")], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, "GITHUB_STEP_SUMMARY": str(step_summary)})
    assert done.returncode == 1, done.stderr
    assert "New divergences" in done.stdout
    assert (tmp_path / "verdict.md").read_text() == step_summary.read_text().rstrip("\n") + "\n"
