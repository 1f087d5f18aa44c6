"""The client feature matrix (reports/matrix.py): one column per client's run, one row per guarantee,
each cell folded from that run's own guarantee view; the failures under it with their reproduction
and the baseline's KD number; the capabilities each client declared; clear errors for a summary that
is missing, malformed, or a second run of the same client and version.

The summaries are written by the code that writes summary.json (reports/results.py `write_summary`,
and once the conformance plugin itself on a fake suite), never typed by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from model.guarantees import Guarantee
from reports import matrix
from reports.baseline import accept, write_baseline
from reports.results import load_summary
from reports.verdicts import Baseline
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN
from suites.reports.samples import result, save, summary
from suites.reports.test_plugin import GIVEN_BROKER_CONFTEST, make_project, pytest_run

ROOT = Path(__file__).resolve().parents[2]
QUEUE = ("receiver-queue", "no-loss")
STICKY = ("key-shared-stickiness",)
DEAD = ("dead-letter", "no-loss")


def runs(tmp_path: Path, *, go_receiver_queue: str = FAILED) -> list[Path]:
    """python and go on one broker: go fails receiver-queue on Shared-queue-1 (its finding) and passes
    it on Shared-queue-3; dead-letter is not applicable for go; python's Key_Shared cell timed out,
    its Key_Shared-batch one passed."""
    go_cell = result("receiver_queue", "Shared-queue-1", go_receiver_queue, can_break=QUEUE,
                     guarantee="receiver-queue" if go_receiver_queue == FAILED else None,
                     detail="drained c1, yet 7 messages (m1, m2) did not come", failure="receiver_queue-Shared-queue-1")
    python = summary(result("receiver_queue", "Shared-queue-1", PASSED, can_break=QUEUE),
                     result("dead_letter", "Shared-dlq1", PASSED, can_break=DEAD),
                     result("key_shared", "Key_Shared", UNKNOWN, reason="the test raised TimeoutError: receive",
                            can_break=STICKY),
                     result("key_shared", "Key_Shared-batch", PASSED, can_break=STICKY),
                     client=("python", "3.13.0"))
    go = summary(go_cell, result("receiver_queue", "Shared-queue-3", PASSED, can_break=QUEUE),
                 result("dead_letter", "Shared-dlq1", NOT_APPLICABLE, can_break=DEAD,
                        reason="not applicable for client go 0.21.0: it lacks redeliver_unacknowledged"),
                 result("key_shared", "Key_Shared", PASSED, can_break=STICKY),
                 client=("go", "0.21.0"))
    return [save(tmp_path / name, run) for name, run in (("python", python), ("go", go))]


def columns(paths: list[Path], baseline: Baseline = Baseline()) -> list[matrix.Column]:
    return matrix.load_columns(paths, baseline)


def outcome(cols: list[matrix.Column], label: str, guarantee: str) -> str:
    col = next(c for c in cols if c.label == label)
    return matrix.verdict(col, guarantee).outcome


def row(text: str, guarantee: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| `{guarantee}` |"))


def test_a_failed_cell_fails_the_guarantee_for_its_own_client_only(tmp_path):
    cols = columns(runs(tmp_path))
    assert [c.label for c in cols] == ["python 3.13.0", "go 0.21.0"]  # as each driver named itself
    assert outcome(cols, "go 0.21.0", "receiver-queue") == FAILED
    assert outcome(cols, "python 3.13.0", "receiver-queue") == PASSED
    # the same go cell could break no-loss, but stopped on receiver-queue first: undecided, never passed
    assert outcome(cols, "go 0.21.0", "no-loss") == UNKNOWN
    text = matrix.render_markdown(cols, tmp_path)
    assert row(text, "receiver-queue") == "| `receiver-queue` | ✅ passed on 1 spec | ❌ failed on 1 of 2 specs |"
    assert "receiver_queue [Shared-queue-1]: failed on receiver-queue first: leaves `no-loss` undecided" in text


def test_not_applicable_unknown_and_not_checked(tmp_path):
    cols = columns(runs(tmp_path))
    assert outcome(cols, "go 0.21.0", "dead-letter") == NOT_APPLICABLE  # its only cell lacked a capability
    assert outcome(cols, "python 3.13.0", "dead-letter") == PASSED
    assert outcome(cols, "python 3.13.0", "key-shared-stickiness") == UNKNOWN  # timed out: never a pass
    assert outcome(cols, "go 0.21.0", "key-shared-stickiness") == PASSED
    assert {outcome(cols, label, "cursor") for label in ("python 3.13.0", "go 0.21.0")} == {matrix.NOT_CHECKED}
    text = matrix.render_markdown(cols, tmp_path)
    assert row(text, "dead-letter") == "| `dead-letter` | ✅ passed on 1 spec | ➖ not applicable |"
    assert row(text, "key-shared-stickiness") == ("| `key-shared-stickiness` | ❔ unknown: passed on 1 of 2 specs, "
                                                  "1 undecided | ✅ passed on 1 spec |")
    assert row(text, "cursor") == "| `cursor` | ⬜ not checked | ⬜ not checked |"
    assert "redeliver_unacknowledged" in text.split("### Not applicable")[1]
    table = [line.split("`")[1] for line in text.splitlines() if line.startswith("| `")]
    assert table == [g.value for g in Guarantee]  # every guarantee, in model/guarantees.py's order


def test_a_failure_the_baseline_accepts_shows_its_kd_and_the_reproduction(tmp_path):
    paths = runs(tmp_path)
    go = load_summary(paths[1])
    baseline, _, _ = accept(go, Baseline(), area="receiver_queue", spec_id="Shared-queue-1",
                            guarantee="receiver-queue", reason="KD-27: a Go consumer takes ten more",
                            evidence="a run", target="pulsar", client="go")
    write_baseline(baseline, tmp_path / "baseline.json")
    out = tmp_path / "matrix"
    done = matrix.main(["render", *map(str, paths), "--out", str(out), "--baseline", str(tmp_path / "baseline.json")])
    assert done == 0
    text = (out / "matrix.md").read_text()
    assert row(text, "receiver-queue").endswith("| ❌ failed on 1 of 2 specs (KD-27) |")
    failures = text.split("### Failures")[1]
    assert ("drained c1, yet 7 messages (m1, m2) did not come · reproduction "
            "`../go/failures/receiver_queue-Shared-queue-1.py` · known divergence of go 0.21.0: KD-27") in failures
    page = (out / "matrix.html").read_text()
    assert 'href="../go/failures/receiver_queue-Shared-queue-1.py"' in page and "KD-27" in page
    assert "<script" not in page and "http" not in page.replace('xmlns="http', "")  # offline


def test_the_baseline_accepts_a_failure_for_its_own_client_only(tmp_path):
    paths = runs(tmp_path)
    python = summary(result("receiver_queue", "Shared-queue-1", FAILED, can_break=QUEUE, guarantee="receiver-queue",
                            detail="drained c1, yet 7 messages (m1, m2) did not come"), client=("python", "3.13.0"))
    paths[0] = save(tmp_path / "python", python)
    baseline, _, _ = accept(load_summary(paths[1]), Baseline(), area="receiver_queue", spec_id="Shared-queue-1",
                            guarantee="receiver-queue", reason="KD-27: go only", evidence="a run", target="pulsar",
                            client="go")
    text = matrix.render_markdown(columns(paths, baseline), tmp_path)
    assert row(text, "receiver-queue") == ("| `receiver-queue` | ❌ failed on 1 of 1 spec | "
                                           "❌ failed on 1 of 2 specs (KD-27) |")
    assert "· new: not accepted by the baseline" in text.split("**python 3.13.0**:")[2]


def test_the_capabilities_a_client_declared_in_its_hello(tmp_path):
    """The conformance plugin records the hello's capabilities in summary.json; the matrix lists them."""
    hello = '"protocol": 1, "ops": ["send", "receive"], "capabilities": ["seek_by_id", "ack_timeout"]}'
    project = make_project(tmp_path, GIVEN_BROKER_CONFTEST.replace('"protocol": 1}', hello))
    done = pytest_run(project, "suites/conformance/test_individual_ack.py::test_individual_ack[Shared]")
    assert done.returncode == 0, done.stdout + done.stderr
    path = project / "reports" / "out" / "summary.json"
    assert load_summary(path).run["client"]["capabilities"] == ["seek_by_id", "ack_timeout"]
    text = matrix.render_markdown(columns([path]), tmp_path)
    declared = text.split("### Capabilities declared in the hello")[1].split("###")[0]
    assert "| `ack_timeout` | ✓ |" in declared and "| `seek_by_id` | ✓ |" in declared


def test_the_matrix_goes_between_the_page_s_markers(tmp_path):
    page = tmp_path / "CLIENTS.md"
    page.write_text(f"# Clients\n\nintro\n\n{matrix.BEGIN}\nstale matrix\n{matrix.END}\nafter\n")
    assert matrix.main(["render", *map(str, runs(tmp_path)), "--out", str(tmp_path / "m"), "--page", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Clients\n\nintro\n\n") and text.endswith(f"{matrix.END}\nafter\n")
    assert "stale matrix" not in text
    assert "`go/summary.json`" in text  # paths relative to the page's folder


def errors(capsys, *args: str) -> tuple[int, str]:
    code = matrix.main(["render", *args])
    return code, capsys.readouterr().err


def test_a_missing_or_malformed_summary_is_named(tmp_path, capsys):
    good = runs(tmp_path)[0]
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, err = errors(capsys, str(good), str(broken), "--out", str(tmp_path / "m"))
    assert code == 2 and f"results {broken}: not JSON" in err
    code, err = errors(capsys, str(tmp_path / "nowhere.json"), "--out", str(tmp_path / "m"))
    assert code == 2 and f"results {tmp_path / 'nowhere.json'}: no such file" in err
    assert not (tmp_path / "m" / "matrix.md").exists()


def test_two_runs_of_one_client_and_version_are_an_error_that_names_both(tmp_path, capsys):
    first, _ = runs(tmp_path)
    again = save(tmp_path / "again", summary(result("seek", "Exclusive", PASSED, can_break=("no-loss",)),
                                             client=("python", "3.13.0")))
    code, err = errors(capsys, str(first), str(again), "--out", str(tmp_path / "m"))
    assert code == 2 and f"results {first} and {again}: both are runs of python 3.13.0" in err
    older = save(tmp_path / "older", summary(result("seek", "Exclusive", PASSED, can_break=("no-loss",)),
                                             client=("python", "3.5.0")))
    assert errors(capsys, str(first), str(older), "--out", str(tmp_path / "m"))[0] == 0  # another version


def test_a_client_whose_toolchain_is_missing_is_not_run_and_no_broker_starts(tmp_path):
    env = {**os.environ, "PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                 if not (Path(p) / "go").exists())}
    done = subprocess.run([sys.executable, "-m", "reports.matrix", "run", "--clients", "go", "--out",
                           str(tmp_path / "m")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "go: not run" in done.stdout and "needs `go` on PATH" in done.stdout
    assert "starting Pulsar" not in done.stderr
    assert "| `no-loss` | ⏹ not run |" in (tmp_path / "m" / "matrix.md").read_text()
