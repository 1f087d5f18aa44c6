"""The pytest plugin (reports/plugin.py) on a small fake conformance suite, run by pytest in a subprocess.

The fake suite has the real suite's shape (suites/conformance/test_<area>.py, parametrized by spec
id, a `target` fixture) and one test per outcome: a pass, a real conformance failure of the faulty
target that loses its third message, an undecided check, an error that is not a conformance
failure, a skip, two failures at once (Hypothesis reports them as an ExceptionGroup), and a client
whose driver died (what fixtures/targets/driver_target.py's ClientCrashed carries).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from suites.replay.stored import load, mismatch, replay

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = '''
import pytest

pytest_plugins = ["reports.plugin"]


def pytest_addoption(parser):
    parser.addoption("--target", default="fixtures.targets.faulty:LosesAMessage")


@pytest.fixture
def target(request):
    from fixtures.targets.faulty import LosesAMessage

    target = LosesAMessage()
    target.name = request.config.getoption("--target")
    return target
'''

INDIVIDUAL_ACK = '''
import pytest

from fixtures.targets.lockstep import ConformanceFailure, Lockstep
from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec, SubscriptionType
from model.violations import Violation

SHARED = Spec(subscription_type=SubscriptionType.SHARED, nack_delay_ms=100)
SPECS = {"Exclusive": SHARED.with_(subscription_type=SubscriptionType.EXCLUSIVE),
         "Failover": SHARED.with_(subscription_type=SubscriptionType.FAILOVER), "Shared": SHARED,
         "Shared-dlq1": SHARED.with_(max_redeliver_count=1),
         "Key_Shared": SHARED.with_(subscription_type=SubscriptionType.KEY_SHARED)}
C0 = "c0"


def program(target, spec, ops):
    run = Lockstep(target, spec, "p")
    for op in ops:
        run.do(op)
    run.check_drained()
    return run


@pytest.mark.parametrize("spec", SPECS.values(), ids=SPECS.keys())
def test_individual_ack(spec, target, request):
    case = request.node.callspec.id
    program(target, spec, [o.Send()])  # 1 program, 1 op
    if case == "Shared":  # 2 programs, 5 ops
        program(target, spec, [o.Send(), o.Subscribe(consumer=C0), o.Receive(consumer=C0), o.Receive(consumer=C0)])
    if case == "Exclusive":  # the third message never comes: 2 programs, 8 ops
        program(target, spec, [o.Send(), o.Send(), o.Send(), o.Subscribe(consumer=C0)] + [o.Receive(consumer=C0)] * 3)
    if case == "Failover":
        raise ConformanceFailure(Violation(guarantee=Guarantee.CURSOR, detail="solver gave up", undecided=True),
                                 [], spec)
    if case == "Key_Shared":
        raise RuntimeError("the target fell over")
    if case == "Shared-dlq1":
        pytest.skip("not on this target")
'''

BATCHES = '''
import pytest

from fixtures.targets.lockstep import ConformanceFailure
from model import ops as o
from model.guarantees import Guarantee
from model.spec import Spec
from model.violations import Violation


@pytest.mark.guarantee("order", "no-phantom", "cursor")
@pytest.mark.parametrize("spec", [Spec()], ids=["Shared"])
def test_batches(spec, target):
    history = [(o.Send(), o.ok((o.MessageId(0),)))]
    raise ExceptionGroup("Hypothesis found 2 distinct failures", [
        ConformanceFailure(Violation(guarantee=Guarantee.ORDER, detail="m1 before m0"), history, spec),
        ConformanceFailure(Violation(guarantee=Guarantee.NO_PHANTOM, detail="m9 was never sent"), history, spec)])
'''

CONSUMER_CLOSE = '''
import pytest

from model import ops as o
from model.spec import Spec


class Crashed(AssertionError):  # the fields of fixtures.targets.driver_target.ClientCrashed
    crashed_client = True

    def __init__(self, spec):
        self.client, self.reason, self.spec = "python 3.13.0", "was killed by SIGSEGV (signal 11) during receive", spec
        self.stderr = "connecting\\nConsumerImpl: message listener\\nSegmentation fault (core dumped)\\n"
        self.history = ((o.Send(), o.ok((o.MessageId(0),), at=0)),)
        self.source = "print('replay')\\n"
        super().__init__("client crashed")


@pytest.mark.parametrize("spec", [Spec()], ids=["Shared"])
def test_consumer_close(spec, target):
    raise Crashed(spec)
'''

OTHER = '''
def test_not_a_conformance_test():
    assert True
'''


# The session broker as fixtures/pulsar.py gives one with --service-url (a PulsarEndpoint: the
# suite did not start it, the probe read its version), and a target whose client driver answered.
GIVEN_BROKER_CONFTEST = '''
from types import SimpleNamespace

import pytest

pytest_plugins = ["reports.plugin"]


def pytest_addoption(parser):
    parser.addoption("--target", default="pulsar")


@pytest.fixture(scope="session")
def pulsar_broker():
    return SimpleNamespace(service_url="pulsar://broker.example:6650", admin_url="http://broker.example:8080",
                           version="4.2.4", controller=None)


@pytest.fixture
def target(pulsar_broker):
    from fixtures.targets.faulty import LosesAMessage

    target = LosesAMessage()
    target.name = "pulsar"
    target.target, target.client = target, {"client": "python", "version": "3.13.0", "protocol": 1}
    return target
'''


FAKE_TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.not-a-real-signature"
SECRET_SERVICE_URL = "pulsar+ssl://svc:hunter2@broker.example:6651"
SECRET_OPTIONS = '''    parser.addoption("--target", default="pulsar")
    parser.addoption("--auth-token", default=None)
    parser.addoption("--service-url", default=None)'''


def make_project(folder: Path, conftest: str = CONFTEST) -> Path:
    files = {"conftest.py": conftest, "suites/conformance/test_individual_ack.py": INDIVIDUAL_ACK,
             "suites/conformance/test_batches.py": BATCHES,
             "suites/conformance/test_consumer_close.py": CONSUMER_CLOSE, "other/test_other.py": OTHER}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path)


def pytest_run(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=project,
                          env=env, text=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The fake suite, run once with the default reports folder."""
    project = make_project(tmp_path_factory.mktemp("fake-suite"))
    stale = project / "reports" / "out" / "failures" / "old-failure.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    done = pytest_run(project, "suites")
    assert done.returncode == 1, done.stdout + done.stderr
    return project / "reports" / "out", done


def test_the_summary_has_one_cell_per_area_and_spec_with_its_outcome(finished):
    folder, _ = finished
    summary = json.loads((folder / "summary.json").read_text())
    cells = summary["matrix"]
    assert {area: {s: c["outcome"] for s, c in row.items()} for area, row in cells.items()} == {
        "individual_ack": {"Exclusive": "failed", "Failover": "unknown", "Shared": "passed",
                           "Shared-dlq1": "not applicable", "Key_Shared": "unknown"},
        "batches": {"Shared": "failed"}, "consumer_close": {"Shared": "unknown"}}
    assert cells["individual_ack"]["Exclusive"]["guarantees"] == ["no-loss"]
    assert cells["batches"]["Shared"]["guarantees"] == ["no-phantom", "order"]
    assert summary["totals"] == {"passed": 1, "failed": 2, "unknown": 3, "not applicable": 1}
    assert summary["run"]["target"] == "fixtures.targets.faulty:LosesAMessage"


def test_a_target_that_ran_no_broker_and_no_client_says_so(finished):
    folder, _ = finished
    run = json.loads((folder / "summary.json").read_text())["run"]
    assert (run["pulsar"]["version"], run["pulsar"]["embedded"]) == (None, None)
    assert run["pulsar"]["source"] == "none: no broker ran"
    assert (run["client"]["name"], run["client"]["version"]) == (None, None) and "pulsar-client" not in run["client"]
    page = (folder / "report.html").read_text()
    assert "embedded broker" not in page and "pulsar-client" not in page


def test_a_given_broker_s_version_and_the_client_that_answered_are_the_run_s(tmp_path):
    project = make_project(tmp_path, GIVEN_BROKER_CONFTEST)
    done = pytest_run(project, "suites/conformance/test_individual_ack.py::test_individual_ack[Shared]")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((project / "reports" / "out" / "summary.json").read_text())
    pulsar, client = summary["run"]["pulsar"], summary["run"]["client"]
    assert (pulsar["version"], pulsar["embedded"], pulsar["service_url"]) == ("4.2.4", False,
                                                                             "pulsar://broker.example:6650")
    assert pulsar["source"] == "existing broker at pulsar://broker.example:6650 (--service-url)"
    assert (client["name"], client["version"]) == ("python", "3.13.0")
    assert "Pulsar 4.2.4 (existing broker at pulsar://broker.example:6650 (--service-url))" in \
        (project / "reports" / "out" / "summary.md").read_text()


def test_no_report_holds_the_token_or_the_userinfo_of_the_urls_the_run_was_given(tmp_path):
    conftest = GIVEN_BROKER_CONFTEST.replace("pulsar://broker.example:6650", SECRET_SERVICE_URL).replace(
        '    parser.addoption("--target", default="pulsar")', SECRET_OPTIONS)
    project = make_project(tmp_path, conftest)
    done = pytest_run(project, "suites/conformance/test_individual_ack.py", "--auth-token", FAKE_TOKEN,
                      f"--service-url={SECRET_SERVICE_URL}", "--junitxml", "reports/out/junit.xml",
                      "--alluredir", "reports/out/allure")
    assert done.returncode == 1, done.stdout + done.stderr  # LosesAMessage fails Exclusive: a failing history too
    written = [path for path in (project / "reports").rglob("*") if path.is_file()]
    assert {p.name for p in written} >= {"summary.json", "summary.md", "report.html", "junit.xml"}
    assert any(p.suffix == ".jsonl" for p in written) and any(p.parent.name == "allure" for p in written)
    holding = [str(p) for p in written if FAKE_TOKEN in p.read_text(errors="replace")
               or "hunter2" in p.read_text(errors="replace")]
    assert holding == []
    run = json.loads((project / "reports" / "out" / "summary.json").read_text())["run"]
    assert run["pulsar"]["service_url"] == "pulsar+ssl://***@broker.example:6651"
    assert "--auth-token" in run["args"] and "***" in run["args"]


def test_the_guarantees_a_test_can_break_come_from_its_guarantee_marks(finished):
    folder, _ = finished
    summary = json.loads((folder / "summary.json").read_text())
    can_break = {(r["area"], r["spec_id"]): r["can_break"] for r in summary["results"]}
    assert can_break[("batches", "Shared")] == ["cursor", "no-phantom", "order"]
    assert can_break[("individual_ack", "Shared")] is None  # no mark: not recorded
    view = summary["guarantee_matrix"]
    assert view["order"]["Shared"]["outcome"] == "failed"
    assert view["cursor"]["Shared"]["outcome"] == "unknown"  # batches stopped on order and no-phantom first
    assert view["no-loss"] == {"Exclusive": {"outcome": "failed", "tests": ["individual_ack"], "reasons": [],
                                             "failures": [{"area": "individual_ack", "guarantee": "no-loss",
                                                           "detail": view["no-loss"]["Exclusive"]["failures"][0][
                                                               "detail"],
                                                           "failure": "individual_ack-Exclusive",
                                                           "undecided": False, "signature": {
                                                               "detail": "drained every consumer, yet m# never came",
                                                               "program": "send×3 subscribe receive+"},
                                                           "replayed": None}]}}


def test_unknown_and_not_applicable_cells_say_why(finished):
    folder, _ = finished
    results = {r["spec_id"]: r for r in json.loads((folder / "summary.json").read_text())["results"]
               if r["area"] == "individual_ack"}
    assert results["Key_Shared"]["reason"] == ("the test raised RuntimeError: the target fell over, "
                                               "not a conformance failure")
    assert "could not decide" in results["Failover"]["reason"]
    assert results["Failover"]["violations"][0]["undecided"] is True
    assert results["Shared-dlq1"]["reason"] == "not on this target"
    assert {s: r["reason_kind"] for s, r in results.items()} == {
        "Exclusive": None, "Failover": "solver limit", "Shared": None, "Shared-dlq1": None,
        "Key_Shared": "harness error"}


def test_a_crashed_client_is_unknown_of_its_own_kind_named_with_its_signal_and_stderr(finished):
    folder, _ = finished
    summary = json.loads((folder / "summary.json").read_text())
    crashed = next(r for r in summary["results"] if r["area"] == "consumer_close")
    assert (crashed["outcome"], crashed["reason_kind"], crashed["violations"]) == ("unknown", "client crashed", [])
    assert crashed["reason"] == ("client crashed: python 3.13.0 was killed by SIGSEGV (signal 11) during receive "
                                 "(stderr: connecting | ConsumerImpl: message listener | Segmentation fault (core "
                                 "dumped)); history in failures/consumer_close-Shared-client-crashed.jsonl")
    assert summary["unknown_kinds"] == {"client crashed": 1, "harness error": 1, "solver limit": 1}
    assert "| consumer_close |  |  | ❔ client crashed |  |  | 0 / 0 |" in (folder / "summary.md").read_text()
    page = (folder / "report.html").read_text()
    assert re.search(r'<td class="unknown k-client-crashed" title="[^"]*SIGSEGV[^"]*">\? client crashed', page)


def test_programs_and_ops_are_counted_on_the_target(finished):
    folder, _ = finished
    cells = json.loads((folder / "summary.json").read_text())["matrix"]["individual_ack"]
    assert (cells["Shared"]["examples"], cells["Shared"]["steps"]) == (2, 5)
    assert (cells["Exclusive"]["examples"], cells["Exclusive"]["steps"]) == (2, 8)


def test_the_failing_history_is_written_with_its_reproduction_and_replays_to_the_same_verdict(finished):
    folder, _ = finished
    failures = folder / "failures"
    assert not (failures / "old-failure.jsonl").exists()  # the last run's leftovers are gone
    assert sorted(p.name for p in failures.iterdir()) == sorted(
        f"{stem}{suffix}" for stem in ("individual_ack-Exclusive", "batches-Shared", "batches-Shared-2",
                                       "individual_ack-Failover", "consumer_close-Shared-client-crashed")
        for suffix in (".jsonl", ".py", ".expect.json"))
    assert len((failures / "individual_ack-Exclusive.jsonl").read_text().splitlines()) == 7
    assert "replay('fixtures.targets.faulty:LosesAMessage'" in (failures / "individual_ack-Exclusive.py").read_text()
    stored = load(failures / "individual_ack-Exclusive.jsonl")
    assert stored.expectation.guarantee.value == "no-loss" and stored.expectation.step == 7
    assert mismatch(replay(stored.spec, stored.history, drained=stored.expectation.drained), stored.expectation) is None


def test_markdown_html_junit_and_allure_land_in_the_reports_folder(finished):
    folder, done = finished
    markdown = (folder / "summary.md").read_text()
    assert "| individual_ack | ❌ no-loss | ❔ solver limit | ✅ | ➖ n/a | ❔ harness error |" in markdown
    page = (folder / "report.html").read_text()
    assert "<svg" in page and not re.search(r"https?://", page)
    assert 'testsuite name="pytest"' in (folder / "junit.xml").read_text()
    assert list((folder / "allure-results").glob("*-result.json"))
    assert str(folder.relative_to(folder.parents[1]) / "summary.json") in done.stdout


def test_junit_and_allure_given_on_the_command_line_are_respected(project):
    done = pytest_run(project, "suites", "--reports-dir", "elsewhere", "--junitxml", "mine.xml",
                      "--alluredir", "my-allure")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (project / "mine.xml").is_file() and list((project / "my-allure").glob("*-result.json"))
    assert (project / "elsewhere" / "summary.json").is_file()
    assert not (project / "elsewhere" / "junit.xml").exists()
    assert not (project / "elsewhere" / "allure-results").exists()


def test_collecting_only_leaves_the_last_run_s_reports_as_they_are(project):
    done = pytest_run(project, "suites")
    assert done.returncode == 1, done.stdout + done.stderr
    folder = project / "reports" / "out"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert any(p.parent.name == "failures" for p in before)
    done = pytest_run(project, "suites", "--collect-only")
    assert done.returncode == 0, done.stdout + done.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_a_run_without_conformance_tests_writes_no_reports(project):
    done = pytest_run(project, "other")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (project / "reports").exists()
