"""Known client crashes (reports/baseline.py `crashes`): a cell where the client's process died is
unknown and fails the gate, unless the baseline accepts that crash for that cell and client by a
line of the client's own log that names a known client bug (KD-34: the C++ client's segmentation
fault when a consumer closes while it dead-letters). The cell stays unknown in the report; another
crash in the same cell, or the same crash of another client, still fails the gate.
`python -m reports.gate accept-crash` writes an entry from a run where the crash happened."""

from __future__ import annotations

import json

from reports import gate
from reports.baseline import load_baseline
from suites.reports.samples import result, save, summary
from suites.reports.test_gate import write_baseline

KD34_LOG = "Send to the DLQ successfully, but consumer is not ready"
CRASHED = result("redelivery_count_and_dead_letter", "Shared-dlq1", "unknown",
                 reason="client crashed: python 3.13.0 was killed by SIGSEGV (signal 11) (stderr: 02:33:42 pulsar.client "
                        f"{KD34_LOG}. ignore acknowledge : 4); history in failures/x.jsonl")
PASSED = result("seek", "Shared", "passed")
PYTHON = ("python", "3.13.0")
CRASH = {"area": "redelivery_count_and_dead_letter", "spec_id": "Shared-dlq1", "log": KD34_LOG,
         "reason": "KD-34: the C++ client crashes when a consumer closes while it dead-letters",
         "evidence": "suites/broker/test_dead_letter_send_at_close.py", "client": "python"}


def run_gate(tmp_path, run, *crashes: dict) -> tuple[int, str]:
    results = save(tmp_path, run)
    baseline = write_baseline(tmp_path, crashes=list(crashes))
    code = gate.main(["--results", str(results), "--baseline", str(baseline)])
    return code, (tmp_path / "gate.md").read_text()


def test_a_client_crash_is_unknown_and_fails_the_gate(tmp_path):
    code, text = run_gate(tmp_path, summary(CRASHED, PASSED, client=PYTHON))
    assert code == 1 and "1 unknown" in text and "*client crashed*" in text


def test_a_known_crash_stays_unknown_but_passes_the_gate(tmp_path):
    code, text = run_gate(tmp_path, summary(CRASHED, PASSED, client=PYTHON), CRASH)
    assert code == 0, text
    assert "0 unknown · 1 known client crash(es)" in text
    assert "### Known client crashes" in text and "KD-34" in text and KD34_LOG in text


def test_another_crash_of_the_cell_or_another_clients_crash_still_fails(tmp_path):
    segfault_elsewhere = result("redelivery_count_and_dead_letter", "Shared-dlq1", "unknown",
                                reason="client crashed: python 3.13.0 was killed by SIGSEGV (signal 11) "
                                       "(stderr: ConsumerImpl:1203 | something else)")
    assert run_gate(tmp_path, summary(segfault_elsewhere, PASSED, client=PYTHON), CRASH)[0] == 1
    assert run_gate(tmp_path, summary(CRASHED, PASSED, client=("go", "0.21.0")), CRASH)[0] == 1
    other_cell = {**CRASH, "spec_id": "Key_Shared-dlq2"}
    assert run_gate(tmp_path, summary(CRASHED, PASSED, client=PYTHON), other_cell)[0] == 1
    # An undecided cell (a solver limit) is not a crash, whatever its reason's text.
    undecided = result("redelivery_count_and_dead_letter", "Shared-dlq1", "unknown",
                       reason=f"the check could not decide (a solver limit) {KD34_LOG}")
    assert run_gate(tmp_path, summary(undecided, PASSED, client=PYTHON), CRASH)[0] == 1


def test_accept_crash_writes_the_entry_from_a_run_where_it_happened(tmp_path, capsys):
    results = save(tmp_path, summary(CRASHED, PASSED, client=PYTHON))
    baseline = tmp_path / "baseline.json"
    args = ["accept-crash", "redelivery_count_and_dead_letter", "Shared-dlq1", "--log", KD34_LOG,
            "--reason", CRASH["reason"], "--evidence", CRASH["evidence"], "--results", str(results),
            "--baseline", str(baseline)]
    assert gate.main(args) == 0
    written = load_baseline(baseline)
    assert [(c.area, c.spec_id, c.log, c.client, c.target) for c in written.crashes] == [
        ("redelivery_count_and_dead_letter", "Shared-dlq1", KD34_LOG, "python", "pulsar")]
    assert gate.main(args) == 0  # again: the entry is replaced, not doubled
    assert len(json.loads(baseline.read_text())["crashes"]) == 1
    assert gate.main(["--results", str(results), "--baseline", str(baseline)]) == 0


def test_accept_crash_refuses_a_cell_that_did_not_crash_or_a_log_it_does_not_have(tmp_path, capsys):
    results = save(tmp_path, summary(CRASHED, PASSED, client=PYTHON))
    common = ["--reason", "KD-34: x", "--evidence", "y", "--results", str(results),
              "--baseline", str(tmp_path / "baseline.json")]
    assert gate.main(["accept-crash", "seek", "Shared", "--log", KD34_LOG, *common]) == 2
    assert "did not crash in seek [Shared]" in capsys.readouterr().err
    assert gate.main(["accept-crash", "redelivery_count_and_dead_letter", "Shared-dlq1", "--log", "no such line",
                      *common]) == 2
    assert "does not contain 'no such line'" in capsys.readouterr().err
    assert gate.main(["accept-crash", "redelivery_count_and_dead_letter", "Shared-dlq9", "--log", KD34_LOG,
                      *common]) == 2
    assert "did you mean 'Shared-dlq1'" in capsys.readouterr().err
    assert not (tmp_path / "baseline.json").exists()


def test_a_malformed_crash_entry_is_a_clear_error(tmp_path, capsys):
    results = save(tmp_path, summary(CRASHED, client=PYTHON))
    baseline = write_baseline(tmp_path, crashes=[{**CRASH, "log": ""}])
    assert gate.main(["--results", str(results), "--baseline", str(baseline)]) == 2
    assert "crashes[0]: missing or empty ['log']" in capsys.readouterr().err
