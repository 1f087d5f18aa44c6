"""pytest plugin: records a conformance run's verdicts and writes its reports.

Register it with `-p reports.plugin`, or list "reports.plugin" in the root conftest's
`pytest_plugins`. For every test under suites/conformance it records the guarantee area (the test
function's name without `test_`), the spec id (the parametrize id), the target (`--target`), the
verdict (reports/vocabulary.py: passed; failed; unknown, with its reason and the reason's kind,
when the check was undecided, the client crashed or the test errored for a reason other than a
conformance failure; not applicable, a skip with its reason), the broken guarantee with its
detail, the guarantees the test can break (its `guarantee` marks: the root conftest gives each
conformance test its catalog check's guarantees), how many programs and ops ran (counted on
the `target` fixture's `reset` and `invoke`), and for each fault its programs could use how many
performed it and reached each of its windows (the `target` fixture's `faults_reached`). At the end of the session it writes under
`--reports-dir` (default reports/out):

- `summary.json`: the run and the matrix (reports/results.py), what the gate and the comparison read;
- `summary.md`: the same for a person, or for a GitHub Actions step summary;
- `failures/<area>-<spec id>.{jsonl,py,expect.json}`: each failing example's history, reproduction
  and expectation (reports/failures.py);
- `report.html`: one static page (reports/html.py).

The run's `pulsar` and `client` say what really ran: the broker the tests ran on (its version, and
`embedded` when the suite started it, else the `--service-url` it was given; none for an in-process
target), and the client whose driver answered its hello, with the ops and capabilities it declared
(none when no client ran).

JUnit XML and allure results are pytest's (`--junitxml`) and allure's (`--alluredir`). When the run
covers suites/conformance (or `--reports-dir` is given) and the user named neither, they default to
`<reports-dir>/junit.xml` and `<reports-dir>/allure-results` (cleaned first); the histories of every
program (`--histories`) follow the reports folder when left at their default. With
`--replay-failures N` each failing example is replayed N times on the test's own target as soon as
it is found, and its violation records how often it reproduced (reports/replay_failures.py). The verdict travels
on the test report (`report.conformance`), so it also reaches the controller under pytest-xdist,
whose workers write failures, allure results and histories into the folders the controller settled
(handed over in each worker's `workerinput`).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fixtures.credentials import redact_args, redact_url
from fixtures.kit import module
from model.history import OP_KINDS, spec_json
from model.spec import Spec
from reports import failures as stored
from reports.results import ReportedViolation, Result, Summary, subscription_of, write_summary
from reports.signatures import signature
from reports.vocabulary import (CLIENT_CRASHED, FAILED, HARNESS_ERROR, INTERRUPTED, NOT_APPLICABLE, PASSED,
                                SOLVER_LIMIT, UNKNOWN, kind_of_error)

REPORTS_DIR = "--reports-dir"
REPLAY_FAILURES = "--replay-failures"
DEFAULT_DIR = Path("reports/out")
DEFAULT_HISTORIES = Path("reports/out/histories")  # the default of --histories (fixtures/options.py)
RECORD = "conformance"  # the attribute on a TestReport that carries the verdict
WORKER_INPUT = "conformance_reports"  # pytest-xdist: the controller's folders, in each worker's workerinput
FOLLOWED = ("allure_report_dir", "histories")  # options a worker takes from the controller
BROKER_FIXTURE = "pulsar_broker"  # fixtures/pulsar.py: the session's broker (a PulsarEndpoint)
STDERR_TAIL = 3  # lines of a crashed driver's stderr in the verdict (all of it is in the sidecar)
RANK = {PASSED: 0, NOT_APPLICABLE: 1, UNKNOWN: 2, FAILED: 3}  # when phases disagree, the worst one wins


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "Pulsar acknowledgement conformance")
    try:
        group.addoption(REPORTS_DIR, default=None, metavar="DIR",
                        help="where a conformance run writes summary.json, summary.md, report.html, the failing "
                             "examples' histories, and (unless --junitxml / --alluredir say otherwise) junit.xml "
                             f"and allure-results (default: {DEFAULT_DIR})")
    except ValueError:  # the group already declares it (it must then default to None, meaning reports/out)
        pass
    group.addoption(REPLAY_FAILURES, type=int, default=0, metavar="N",
                    help="replay each failing example N times on the same target when it is found, and report "
                         "how often it reproduced (reports/replay_failures.py; default 0: not replayed)")


@pytest.hookimpl(tryfirst=True)  # before junitxml's and allure's own pytest_configure read their options
def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("reports_dir", None)
    folder = config.invocation_params.dir / (given or DEFAULT_DIR)  # fixed now, whatever a test's cwd is later
    reports = ConformanceReports(config, folder, explicit=given is not None)
    config.pluginmanager.register(reports, "conformance-reports")
    if _is_worker(config):
        reports.follow(config.workerinput.get(WORKER_INPUT) or {})
    elif config.option.collectonly:
        return  # nothing runs: the last run's reports stay as they are
    elif given is not None or covers_conformance(config):
        reports.prepare()


class Counts:
    """Programs (`reset`) and ops (`invoke`) a test ran, counted on its target."""

    def __init__(self) -> None:
        self.examples: int | None = None
        self.steps: int | None = None

    def watch(self, target: object) -> Callable[[], None]:
        """Count calls on `target` until the returned function is called."""
        reset, invoke = getattr(target, "reset", None), getattr(target, "invoke", None)
        if not (callable(reset) and callable(invoke)):
            return lambda: None
        own = {name for name in ("reset", "invoke") if name in getattr(target, "__dict__", {})}
        self.examples, self.steps = 0, 0

        def counted_reset(*args, **kwargs):
            self.examples += 1
            return reset(*args, **kwargs)

        def counted_invoke(*args, **kwargs):
            self.steps += 1
            return invoke(*args, **kwargs)

        try:
            target.reset, target.invoke = counted_reset, counted_invoke
        except AttributeError:  # a slotted or frozen target: no counts
            self.examples = self.steps = None
            return lambda: None

        def undo() -> None:
            for name, original in (("reset", reset), ("invoke", invoke)):
                if name in own:
                    setattr(target, name, original)
                else:
                    delattr(target, name)
        return undo


COUNTS = pytest.StashKey[Counts]()


class ConformanceReports:
    def __init__(self, config: pytest.Config, folder: Path, *, explicit: bool) -> None:
        self.config = config
        self.folder = folder
        self.explicit = explicit
        self.records: dict[str, dict] = {}
        self.started = _now()
        self.written: list[Path] = []
        self.problems: list[str] = []
        self.totals: dict[str, int] = {}
        self.broker: dict | None = None  # the session broker this process's tests ran on, once one was set up

    # -- before the run ------------------------------------------------------------------------
    def prepare(self) -> None:
        """Default JUnit, allure and histories into the reports folder; drop the last run's outputs."""
        option = self.config.option
        if hasattr(option, "xmlpath") and not option.xmlpath:
            option.xmlpath = str(self.folder / "junit.xml")
        if hasattr(option, "allure_report_dir") and not option.allure_report_dir:
            option.allure_report_dir = str(self.folder / "allure-results")
            option.clean_alluredir = True
        histories = getattr(option, "histories", None)
        if self.explicit and histories is not None and Path(histories) == DEFAULT_HISTORIES:
            option.histories = str(self.folder / "histories")
        for name in ("summary.json", "summary.md", "report.html"):
            (self.folder / name).unlink(missing_ok=True)
        stored.clear(self.folder / "failures")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """pytest-xdist, on the controller: hand each worker the folders settled here (a worker's
        own pytest_configure sees only the command line)."""
        option = self.config.option
        node.workerinput[WORKER_INPUT] = {"folder": str(self.folder),
                                          **{name: getattr(option, name, None) for name in FOLLOWED}}

    def follow(self, settled: dict) -> None:
        """On a pytest-xdist worker: write where the controller settled (failures under its folder,
        allure results and histories in its defaults; the controller has cleaned them already)."""
        if settled.get("folder"):
            self.folder = Path(settled["folder"])
        option = self.config.option
        for name in FOLLOWED:
            if settled.get(name) is not None and hasattr(option, name):
                setattr(option, name, settled[name])
        if settled.get("allure_report_dir") and hasattr(option, "clean_alluredir"):
            option.clean_alluredir = False  # each worker cleaning it would delete the others' results

    # -- while tests run (on the worker, under xdist) ---------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        """Remember the broker the session fixture (fixtures/pulsar.py `pulsar_broker`) gave: its
        version (the embedded one's, or what the probe read from a given one) and whether the suite
        started it; each conformance test's record carries it to the summary."""
        value = yield
        if fixturedef.argname == BROKER_FIXTURE and hasattr(value, "service_url"):
            self.broker = {"version": getattr(value, "version", None),
                           "embedded": getattr(value, "controller", None) is not None,
                           "service_url": redact_url(value.service_url)}
        return value

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        if not is_conformance(item):
            return (yield)
        counts = item.stash.setdefault(COUNTS, Counts())
        undo = counts.watch(getattr(item, "funcargs", {}).get("target"))
        try:
            return (yield)
        finally:
            undo()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if is_conformance(item):
            setattr(report, RECORD, self._record(item, call, report))
        return report

    def _record(self, item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> dict:
        record: dict = {"phase": report.when}
        if report.when == "setup":
            record.update(self._describe(item))
        if report.skipped:
            if hasattr(report, "wasxfail"):
                record.update(outcome=UNKNOWN, reason_kind=HARNESS_ERROR,
                              reason=f"marked xfail: {report.wasxfail or 'no reason given'}")
            else:
                record.update(outcome=NOT_APPLICABLE, reason=_skip_reason(report))
        elif report.failed:
            record.update(self._failed(item, call.excinfo.value if call.excinfo else None, report.when))
        elif report.when == "call":
            record["outcome"] = PASSED
        if report.when == "call":
            client = getattr(getattr(getattr(item, "funcargs", {}).get("target"), "target", None), "client", None)
            if isinstance(client, dict) and client.get("client"):
                record["client"] = {"name": client["client"], "version": client.get("version"),
                                    "protocol": client.get("protocol"), "ops": client.get("ops"),
                                    "capabilities": client.get("capabilities")}
            if self.broker is not None:
                record["broker"] = self.broker
            counts = item.stash.get(COUNTS, None)
            record.update(duration_s=round(report.duration, 3),
                          examples=counts.examples if counts else None, steps=counts.steps if counts else None)
            faults = getattr(getattr(item, "funcargs", {}).get("target"), "faults_reached", None)
            if faults:
                record["faults"] = {fault: dict(tally) for fault, tally in faults.items()}
        return record

    def _describe(self, item: pytest.Item) -> dict:
        area, spec_id = area_and_spec_id(item)
        spec = getattr(getattr(item, "callspec", None), "params", {}).get("spec")
        subscription = getattr(getattr(spec, "subscription_type", None), "value", None) or subscription_of(spec_id)
        marked = [value for mark in item.iter_markers("guarantee") for value in mark.args]
        return {"area": area, "spec_id": spec_id, "subscription_type": subscription,
                "can_break": sorted(set(marked)) if marked else None,
                "spec": spec.describe() if hasattr(spec, "describe") else None,
                "spec_fields": json.loads(spec_json(spec)) if isinstance(spec, Spec) else None,
                "target": self.config.getoption("target", None)}

    def _failed(self, item: pytest.Item, error: BaseException | None, when: str) -> dict:
        crashed = next((e for e in _leaves(error) if getattr(e, "crashed_client", False)), None)
        if crashed is not None:
            return self._crashed(item, crashed)
        found = [e for e in _leaves(error) if isinstance(e, stored.FailureLike)]
        if not found:
            where = "the test" if when == "call" else f"{when} of the test"
            first = next(_leaves(error), error)
            return {"outcome": UNKNOWN, "reason_kind": kind_of_error(first),
                    "reason": f"{where} raised {_one_line(first)}, not a conformance failure"}
        area, spec_id = area_and_spec_id(item)
        violations = []
        for index, failure in enumerate(found):
            stem = stored.stem_for(area, spec_id, index)
            stored.write_failure(self.folder / "failures", stem, failure, nodeid=item.nodeid,
                                 target=self.config.getoption("target", None), area=area, spec_id=spec_id)
            kinds = [OP_KINDS.get(type(op), type(op).__name__) for op, _ in failure.history]
            violations.append(asdict(ReportedViolation(
                guarantee=failure.violation.guarantee.value, detail=failure.violation.detail, failure=stem,
                undecided=bool(failure.violation.undecided), signature=signature(failure.violation.detail, kinds),
                replayed=self._replayed(item, failure))))
        decided = any(not v["undecided"] for v in violations)
        return {"outcome": FAILED if decided else UNKNOWN, "violations": violations,
                "flaky": type(error).__name__ in ("FlakyFailure", "Flaky"),
                "reason_kind": None if decided else SOLVER_LIMIT,
                "reason": None if decided else "the check could not decide (a solver or time limit)"}

    def _replayed(self, item: pytest.Item, failure) -> dict | None:
        """The failure's program replayed --replay-failures times on the test's own target, still live."""
        times = self.config.getoption("replay_failures", 0) or 0
        target = getattr(item, "funcargs", {}).get("target")
        if times < 1 or target is None or failure.violation.undecided:
            return None
        from reports.replay_failures import replay_times

        drained = stored.expectation_of(failure)["drained"]
        return replay_times(getattr(target, "target", target), failure.spec, [op for op, _ in failure.history],
                            guarantee=failure.violation.guarantee.value, drained=drained, times=times)

    def _crashed(self, item: pytest.Item, crash: BaseException) -> dict:
        """A client whose driver died (fixtures.targets.driver_target.ClientCrashed): never a pass,
        never a broken guarantee; its history up to the crash is kept beside the failures."""
        area, spec_id = area_and_spec_id(item)
        stem = stored.stem_for(area, spec_id) + "-client-crashed"
        write_crash(self.folder / "failures", stem, crash, nodeid=item.nodeid,
                    target=self.config.getoption("target", None))
        tail = " | ".join(line.strip() for line in crash.stderr.strip().splitlines()[-STDERR_TAIL:] if line.strip())
        return {"outcome": UNKNOWN, "reason_kind": CLIENT_CRASHED, "flaky": False,
                "reason": f"client crashed: {crash.client} {crash.reason}"
                          + (f" (stderr: {tail[-600:]})" if tail else "") + f"; history in failures/{stem}.jsonl"}

    # -- collecting (on the controller) -----------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, RECORD, None)
        if not isinstance(record, dict):
            return
        merged = self.records.setdefault(report.nodeid, {"nodeid": report.nodeid})
        fields = {k: v for k, v in record.items() if k != "phase"}
        outcome = fields.pop("outcome", None)
        verdict = {k: fields.pop(k) for k in ("reason", "reason_kind", "violations", "flaky") if k in fields}
        merged.update(fields)
        if outcome is not None and RANK[outcome] >= RANK.get(merged.get("outcome"), -1):
            merged["outcome"] = outcome
            merged.update(verdict)

    # -- after the run ---------------------------------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if _is_worker(self.config) or not (self.records or self.explicit):
            return
        summary = Summary(run=self.run_info(), results=tuple(_result_of(r) for r in self.records.values()))
        self.totals = summary.totals()
        write_summary(summary, self.folder / "summary.json")
        self.written.append(self.folder / "summary.json")
        from reports.html import write_report
        from reports.markdown import summary_markdown

        (self.folder / "summary.md").write_text(summary_markdown(summary, failures_dir="failures"))
        self.written.append(self.folder / "summary.md")
        try:
            write_report(self.folder)
            self.written.append(self.folder / "report.html")
        except Exception as error:  # the JSON and the markdown are written; say what broke the page
            self.problems.append(f"report.html was not written: {_one_line(error)}")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not (self.written or self.problems):
            return
        terminalreporter.write_sep("-", "conformance reports")
        if self.totals:
            counts = ", ".join(f"{n} {outcome}" for outcome, n in self.totals.items())
            terminalreporter.write_line(f"conformance: {counts}")
        for path in self.written:
            terminalreporter.write_line(str(path))
        for problem in self.problems:
            terminalreporter.write_line(problem, red=True, bold=True)

    def run_info(self) -> dict:
        """What really ran: the target; the broker its tests ran on (version, embedded or given),
        or none; the client whose driver answered, or none (an in-process target drives no client)."""
        from hypothesis import settings

        config = self.config
        target = config.getoption("target", None)
        modelled = {name: sorted({r["spec_fields"][name] for r in self.records.values() if r.get("spec_fields")})
                    for name in ("broker_version", "client")}
        driven = next((r["client"] for r in self.records.values() if r.get("client")), None)
        broker = next((r["broker"] for r in self.records.values() if r.get("broker")), None)
        return {
            "target": target, "pulsar": _pulsar(config, target, broker, modelled["broker_version"]),
            "client": {**(driven or {"name": None, "version": None}), "requested": _client_option(config, target),
                       "modelled": modelled["client"]},
            "hypothesis_profile": settings.get_current_profile_name(), "python": platform.python_version(),
            "run_id": getattr(sys.modules.get(module("fixtures.pulsar")), "RUN_ID", None),
            "started": self.started, "finished": _now(), "args": redact_args(config.invocation_params.args),
        }


def write_crash(folder: Path, stem: str, crash, **context: object) -> None:
    """A crashed client's history (the ops completed before the crash), its reproduction (which
    replays the op it died on too) and a sidecar saying what happened (`expect`: client-crashed)."""
    from model.history import event_of, to_json_line

    folder.mkdir(parents=True, exist_ok=True)
    events = [event_of(stem, crash.spec, i, op, c) for i, (op, c) in enumerate(crash.history)]
    (folder / f"{stem}.jsonl").write_text("".join(to_json_line(e) + "\n" for e in events))
    (folder / f"{stem}.py").write_text(crash.source)
    sidecar = {"expect": "client-crashed", "client": crash.client, "reason": crash.reason,
               "stderr": crash.stderr, "step": len(crash.history),
               **{k: v for k, v in context.items() if v is not None}}
    (folder / f"{stem}.expect.json").write_text(json.dumps(sidecar, indent=2) + "\n")


def is_conformance(item: pytest.Item) -> bool:
    path = getattr(item, "path", None)  # an item without a file (a plugin's own) is not a conformance test
    if path is None:
        return False
    parts = Path(str(path)).parts
    return any(parts[i:i + 2] == ("suites", "conformance") for i in range(len(parts) - 1))


def area_and_spec_id(item: pytest.Item) -> tuple[str, str]:
    name = getattr(item, "originalname", None) or item.name.partition("[")[0]
    callspec = getattr(item, "callspec", None)
    return name.removeprefix("test_"), callspec.id if callspec is not None else "default"


def covers_conformance(config: pytest.Config) -> bool:
    """Whether the paths the run was given include conformance tests (`suites`, `suites/conformance/...`)."""
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        path = path if path.is_absolute() else config.invocation_params.dir / path
        parts = path.resolve().parts
        inside = any(parts[i:i + 2] == ("suites", "conformance") for i in range(len(parts) - 1))
        above = path.is_dir() and ((path / "suites" / "conformance").is_dir()
                                   or (path.name == "suites" and (path / "conformance").is_dir()))
        if inside or above:
            return True
    return False


def _result_of(record: dict) -> Result:
    fields = {k: v for k, v in record.items() if k in Result.__dataclass_fields__}
    fields.setdefault("area", "?")
    fields.setdefault("spec_id", "?")
    if "outcome" not in fields:
        fields.update(outcome=UNKNOWN, reason_kind=INTERRUPTED, reason="the test did not finish (interrupted?)")
    fields["violations"] = tuple(ReportedViolation(**v) for v in fields.get("violations") or ())
    return Result(**fields)


def _client_option(config: pytest.Config, target: str | None) -> str | None:
    """The client `--client` names, when the target drives one (--target pulsar)."""
    return config.getoption("client", None) if target == "pulsar" else None


def pytest_report_header(config: pytest.Config) -> str | None:
    target = config.getoption("target", None)
    client = _client_option(config, target)
    if client is None:
        return None
    shown = "python (pulsar-client " + str(_version("pulsar-client")) + ")" if client == "python" else client
    return f"conformance: --target {target}, client {shown} as a driver process (drivers/PROTOCOL.md)"


def _pulsar(config: pytest.Config, target: str | None, broker: dict | None, modelled: list[str]) -> dict:
    """The broker the run's tests ran on: `version` (the embedded broker's, or what a given broker's
    admin API said), `embedded` (the suite started it) or not (`--service-url`), or no broker at all."""
    info: dict = {"modelled": modelled}
    if broker is not None:
        where = "embedded broker" if broker["embedded"] else f"existing broker at {broker['service_url']} (--service-url)"
        given = {} if broker["embedded"] else {"service_url": broker["service_url"]}
        return {**info, "version": broker.get("version"), "embedded": broker["embedded"], **given, "source": where}
    if target == "model":
        return {**info, "version": None, "embedded": None, "source": "none: the reference model target"}
    service_url = redact_url(config.getoption("service_url", None) or "")
    return {**info, "version": None, "embedded": None,
            "source": f"none answered at {service_url} (--service-url)" if service_url
            else "none: no broker ran"}


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _leaves(error: BaseException | None) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    elif error is not None:
        yield error


def _one_line(error: BaseException | None) -> str:
    if error is None:
        return "an error"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300]}" if text else type(error).__name__


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
