"""A failure replayed N times on its target (reports/replay_failures.py): a deterministic fault
reproduces N of N, one that struck once reproduces 0 of N, and the reports say so."""

from __future__ import annotations

import json

from reports import replay_failures
from reports.failures import write_failure
from reports.results import load_summary
from suites.reports.samples import (LosesAMessageOnce, StallsOnce, lost_message_failure, result, save,
                                    stalled_failure, summary)
from suites.reports.test_plugin import make_project, pytest_run

LOSES = "fixtures.targets.faulty:LosesAMessage"
ONCE = "suites.reports.samples:LosesAMessageOnce"
STALLS = "suites.reports.samples:StallsOnce"


def failed_run(folder, failure, target: str) -> None:
    write_failure(folder / "failures", "individual_ack-Exclusive", failure, area="individual_ack",
                  spec_id="Exclusive", target=target)
    save(folder, summary(result("individual_ack", "Exclusive", "failed", guarantee="no-loss",
                                detail=failure.violation.detail, failure="individual_ack-Exclusive"),
                         result("individual_ack", "Shared", "passed"), target=target))


def replayed(folder) -> dict:
    (r, _) = load_summary(folder / "summary.json").results
    return r.violations[0].replayed


def test_a_deterministic_fault_reproduces_every_time(tmp_path, capsys):
    failed_run(tmp_path, lost_message_failure(), LOSES)
    assert replay_failures.main([str(tmp_path), "--times", "4"]) == 0
    assert replayed(tmp_path) == {"times": 4, "reproduced": 4, "errors": 0}
    assert "individual_ack [Exclusive] no-loss: reproduced 4 of 4 replays" in capsys.readouterr().out
    assert "broke `no-loss` (reproduced 4 of 4 replays)" in (tmp_path / "summary.md").read_text()
    assert '<b class="replayed">reproduced 4 of 4 replays</b>' in (tmp_path / "report.html").read_text()


def test_a_fault_that_struck_once_reproduces_none_of_the_times(tmp_path):
    LosesAMessageOnce.spent = False
    failed_run(tmp_path, lost_message_failure(target=LosesAMessageOnce(), name=ONCE), ONCE)
    assert replay_failures.main([str(tmp_path), "--times", "3"]) == 0
    assert replayed(tmp_path) == {"times": 3, "reproduced": 0, "errors": 0}
    assert "(reproduced 0 of 3 replays)" in (tmp_path / "summary.md").read_text()


def test_a_loss_whose_messages_come_this_time_is_not_reproduced(tmp_path):
    """The stored drain gave up after fewer receives than the messages owed; a replay whose target
    delivers them all has not reproduced the loss, though those few receives cannot take them all:
    the replay drains again until nothing more comes."""
    StallsOnce.spent = False
    failed_run(tmp_path, stalled_failure(StallsOnce(), STALLS), STALLS)
    assert replay_failures.main([str(tmp_path), "--times", "2"]) == 0
    assert replayed(tmp_path) == {"times": 2, "reproduced": 0, "errors": 0}


def test_a_failure_seen_on_a_broker_needs_the_broker_s_addresses(tmp_path, capsys):
    failed_run(tmp_path, lost_message_failure(), "pulsar")
    assert replay_failures.main([str(tmp_path), "--times", "2"]) == 2
    assert "give --service-url and --admin-url" in capsys.readouterr().err


def test_the_plugin_replays_each_failure_on_the_run_s_own_target(tmp_path):
    """The fake suite of test_plugin with --replay-failures 3: its lost message (a real program of
    LosesAMessage) reproduces 3 of 3; the made-up failures of batches (one send) never do."""
    project = make_project(tmp_path)
    done = pytest_run(project, "suites", "--replay-failures", "3")
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((project / "reports" / "out" / "summary.json").read_text())["results"]
    counts = {(r["area"], r["spec_id"], v["guarantee"]): v["replayed"] for r in results for v in r["violations"]}
    assert counts == {("individual_ack", "Exclusive", "no-loss"): {"times": 3, "reproduced": 3, "errors": 0},
                      ("individual_ack", "Failover", "cursor"): None,  # undecided: nothing to reproduce
                      ("batches", "Shared", "order"): {"times": 3, "reproduced": 0, "errors": 0},
                      ("batches", "Shared", "no-phantom"): {"times": 3, "reproduced": 0, "errors": 0}}
