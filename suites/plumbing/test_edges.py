"""The edges of a run: a broker that cannot be reached, a reproduction that must point at the broker
a failure was seen on, third-party targets loaded the same way everywhere, a target that hangs.

None of these needs a broker: an unreachable one is a closed port, a live admin API a tiny local
HTTP server answering every GET with 200.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from suites.conformance.catalog import CHECKS

ROOT = Path(__file__).resolve().parents[2]


class _Answers(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b"{}" if "configuration" in self.path else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def live_admin():
    """An admin URL that answers (every GET: 200), on a free port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_pytest(tmp_path: Path, *args: str, timeout_s: float = 60,
               path: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(path or ""), os.environ.get("PYTHONPATH"))))}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--reports-dir", str(tmp_path / "out"), "--histories", str(tmp_path / "histories"),
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    return done, time.monotonic() - began


# -- an unreachable broker ------------------------------------------------------------------------

@pytest.mark.parametrize("dead", ["service", "admin"])
def test_an_unreachable_broker_ends_every_conformance_test_as_unknown_within_seconds(tmp_path, live_admin, dead):
    """A dead service URL (or admin URL) is found once, before the first program, and every
    conformance test ends as unknown, unreachable: not a failed cell, not 30 s per op."""
    service = f"pulsar://127.0.0.1:{closed_port()}"
    admin = live_admin if dead == "service" else f"http://127.0.0.1:{closed_port()}"
    if dead == "admin":  # a service port that does accept connections: the admin URL is what is dead
        service = "pulsar://" + live_admin.removeprefix("http://")
    try:
        done, took = run_pytest(tmp_path, "suites/conformance", "--target", "pulsar",
                                "--service-url", service, "--admin-url", admin, timeout_s=40)
    except subprocess.TimeoutExpired:
        pytest.fail("the run against an unreachable broker did not end within 40 s")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    outcomes = {r["outcome"] for r in summary["results"]}
    assert outcomes == {"unknown"}, outcomes
    assert len(summary["results"]) > 30
    unreachable = (service if dead == "service" else admin)
    assert [r["reason"] for r in summary["results"] if not ("unreachable" in r["reason"].lower() and unreachable in r["reason"])] == []
    # The goal is under 10 s for the whole run (about 2 s on an idle machine); the bound leaves room
    # for a loaded CI machine. Before the probe, the first op alone waited the client's 30 s.
    assert took < 20, f"{took:.1f} s to the verdict"


def test_the_probe_says_what_it_tried(live_admin):
    from fixtures.targets.loader import TargetUnreachable
    from fixtures.targets.pulsar_target import probe_broker

    dead = closed_port()
    with pytest.raises(TargetUnreachable, match=rf"pulsar://127.0.0.1:{dead}.*TCP connect to 127.0.0.1:{dead}"):
        probe_broker(f"pulsar://127.0.0.1:{dead}", live_admin)
    live_service = "pulsar://" + live_admin.removeprefix("http://")
    with pytest.raises(TargetUnreachable, match=rf"admin URL http://127.0.0.1:{dead} .*GET /admin/v2/brokers/version"):
        probe_broker(live_service, f"http://127.0.0.1:{dead}")
    assert probe_broker(f"pulsar://127.0.0.1:{dead},{live_service.removeprefix('pulsar://')}", live_admin) == "ok"
    assert TargetUnreachable.reason_kind == "unreachable"


@pytest.mark.parametrize("url, addresses", [
    ("pulsar://a:6650,b:6651/", [("a", 6650), ("b", 6651)]),
    ("pulsar+ssl://broker.example", [("broker.example", 6651)]),
    ("pulsar://[::1]:6650", [("::1", 6650)]),
    ("http://web:8080", [("web", 8080)]),
])
def test_service_addresses(url, addresses):
    from fixtures.targets.pulsar_target import service_addresses

    assert service_addresses(url) == addresses


def test_replay_and_record_probe_before_starting_a_driver(live_admin):
    """The loader every entry point uses (pytest, replay, traces record) probes the broker first."""
    from fixtures.targets.loader import TargetUnreachable, load_target

    began = time.monotonic()
    with pytest.raises(TargetUnreachable):
        load_target("pulsar", service_url=f"pulsar://127.0.0.1:{closed_port()}", admin_url=live_admin)
    assert time.monotonic() - began < 5


# -- the printed reproduction -----------------------------------------------------------------------

def _failure_on(target, kinds=("send", "subscribe", "receive")):
    """The first ConformanceFailure of a short conformance run on `target` (a faulty one)."""
    import itertools

    from hypothesis import settings

    from fixtures.targets.lockstep import ConformanceFailure
    from model.spec import Spec, SubscriptionType
    from suites.machines import run_conformance

    ids = (f"edge-{n}" for n in itertools.count())
    with pytest.raises(ConformanceFailure) as caught:
        run_conformance(target, Spec(subscription_type=SubscriptionType.EXCLUSIVE), lambda: next(ids), kinds=kinds,
                        settings_=settings(settings.get_profile("ci"), max_examples=300))
    return caught.value


class _FakeBroker:
    """What the session broker fixture hands a loaded target: a controller with its version."""

    class config:  # noqa: N801 (Broker.config)
        version = "4.2.4"


def test_the_reproduction_carries_the_broker_the_client_and_the_version(live_admin, monkeypatch):
    """A failure seen on a given broker replays on that broker (its URLs, the version it ran, the
    client); one seen on the embedded broker starts one of that version, and says so."""
    from fixtures.targets import loader
    from fixtures.targets.faulty import LosesAMessage

    monkeypatch.setattr(loader, "pulsar_target", lambda *args, **kwargs: LosesAMessage())
    service = "pulsar://" + live_admin.removeprefix("http://")
    given = loader.load_target("pulsar", service_url=service, admin_url=live_admin, client="cmd:./my-driver")
    source = _failure_on(given).source
    assert f"service_url={service!r}, admin_url={live_admin!r}, pulsar_version='ok', client='cmd:./my-driver')" \
        in source
    assert f"# on the broker the failure was seen on (Pulsar ok at {service}), left as it is" in source
    embedded = loader.load_target("pulsar", service_url=service, admin_url=live_admin, controller=_FakeBroker())
    source = _failure_on(embedded).source
    assert "], drained=True, pulsar_version='4.2.4')" in source and "service_url" not in source
    assert "# starts a Pulsar 4.2.4 broker of its own on free ports, stopped when the replay ends" in source


def test_replay_starts_a_broker_only_when_none_was_given_and_stops_it(live_admin, monkeypatch):
    from fixtures import broker as broker_package
    from fixtures.targets import loader, replay as replay_module
    from fixtures.targets.model_target import ModelTarget
    from model import ops as o
    from model.spec import Spec

    started = []

    class Broker:
        def __init__(self, config):
            self.config = config

        def start(self, fresh=False):
            started.append(("start", self.config.version, self.config.broker_port, self.config.web_port))

        def stop(self):
            started.append(("stop", self.config.instance))

    monkeypatch.setattr(broker_package, "Broker", Broker)
    monkeypatch.setattr(loader, "pulsar_target", lambda *args, **kwargs: ModelTarget())
    monkeypatch.setattr("fixtures.targets.pulsar_target.probe_broker", lambda *args, **kwargs: "4.0.7")
    ops = [o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0")]
    replay_module.replay("pulsar", Spec(), ops, service_url="pulsar://given:6650", admin_url="http://given:8080")
    assert started == []  # a given broker: nothing started
    replay_module.replay("pulsar", Spec(), ops, pulsar_version="4.2.4")
    (start, version, port, web), (stop, instance) = started
    assert (start, version, stop) == ("start", "4.2.4", "stop") and {port, web}.isdisjoint({6650, 8080})
    assert instance.startswith("replay-")


def test_hypothesis_does_not_print_its_own_reproduction_beside_ours():
    """On a target that is not deterministic the failure is raised as Hypothesis found it: its
    `state.step(...)` notes would replay the machine's choices, not the program, beside ours."""
    from fixtures.targets.faulty import LosesAMessage

    class Once(LosesAMessage):
        deterministic = False

    failure = _failure_on(Once())
    notes = "\n".join(getattr(failure, "__notes__", []))
    assert "state." not in notes and "Failing test case" not in notes
    assert "c0: subscribe -> ok" in notes  # the story stays


# -- one loader ---------------------------------------------------------------------------------------

PLUGIN = '''
from fixtures.targets.model_target import ModelTarget


def for_pytest(service_url, admin_url):
    target = ModelTarget()
    target.seen = (service_url, admin_url)
    return target


def any_kwargs(**kwargs):
    target = ModelTarget()
    target.seen = kwargs
    return target


class Unsaid:
    name = "unsaid"

    def reset(self, spec, program_id):
        pass

    def invoke(self, op):
        pass

    def ground_truth(self):
        return None

    def close(self):
        pass


class Hangs(ModelTarget):
    """The model, except that a receive never returns (for 30 s)."""

    op_deadline_s = 0.5

    def invoke(self, op):
        if type(op).__name__ == "Receive":
            import time

            time.sleep(30)
        return super().invoke(op)


def hangs():
    return Hangs()
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "edge_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("edge_plugin", None)


def test_a_factory_written_for_pytest_records_in_traces(plugin, live_admin):
    from traces.targets import TargetError, TargetSpec

    service = "pulsar://" + live_admin.removeprefix("http://")
    with pytest.raises(TargetError, match="needs --service-url and --admin-url"):
        TargetSpec(name="edge_plugin:for_pytest").check()
    spec = TargetSpec(name="edge_plugin:for_pytest", service_url=service, admin_url=live_admin)
    spec.check()
    assert spec.build().seen == (service, live_admin)


def test_a_factory_taking_kwargs_does_not_need_a_broker(plugin):
    from fixtures.targets.loader import load_target, needs_broker

    assert not needs_broker("edge_plugin:any_kwargs") and needs_broker("edge_plugin:for_pytest")
    assert load_target("edge_plugin:any_kwargs", seed=3, client="python").seen == {"seed": 3, "client": "python"}


def test_a_target_that_does_not_say_it_is_deterministic_gets_a_warning(plugin):
    from fixtures.targets.loader import TargetWarning, load_target

    with pytest.warns(TargetWarning, match="does not say whether it is deterministic"):
        load_target("edge_plugin:Unsaid")


def test_the_reproduction_of_a_plugin_target_runs_in_a_fresh_interpreter(plugin, tmp_path):
    from fixtures.targets.lockstep import program_source
    from fixtures.targets.loader import load_target
    from model import ops as o
    from model.spec import Spec

    target = load_target("edge_plugin:any_kwargs")
    assert target.replay_args == {"module_path": str(plugin)}
    script = tmp_path / "reproduction.py"
    script.write_text(program_source(Spec(), [o.Send(), o.Subscribe(consumer="c0"), o.Receive(consumer="c0")],
                                     target.name, replay_args=target.replay_args) + "print('replayed')\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "replayed", done.stderr[-2000:]


# -- a target that hangs --------------------------------------------------------------------------------

def test_a_target_that_hangs_times_out_as_unknown_and_takes_no_more_programs(plugin):
    from fixtures.targets.deadline import TargetTimedOut
    from fixtures.targets.loader import load_target
    from model import ops as o
    from model.spec import Spec

    target = load_target("edge_plugin:hangs")
    target.reset(Spec(), "p")
    began = time.monotonic()
    target.invoke(o.Send())
    target.invoke(o.Subscribe(consumer="c0"))
    with pytest.raises(TargetTimedOut, match=r"did not return from invoke\(Receive\(.*within 0.6 s") as caught:
        target.invoke(o.Receive(consumer="c0", timeout_ms=100))
    assert caught.value.reason_kind == "timed out" and time.monotonic() - began < 3
    with pytest.raises(TargetTimedOut):
        target.reset(Spec(), "q")  # at once: the hung call is still running
    assert time.monotonic() - began < 3


def test_a_run_on_a_target_that_hangs_ends_every_test_as_unknown(plugin, tmp_path):
    """The first receive hangs: that test ends at its deadline, the others at once, all unknown
    (TargetTimedOut), none failed; Hypothesis neither shrinks nor replays a hung target."""
    try:
        done, took = run_pytest(tmp_path, "suites/conformance", "-k", "individual_ack or seek",
                                "--target", "edge_plugin:hangs", path=plugin, timeout_s=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the run on a target that hangs did not end within 60 s")
    results = json.loads((tmp_path / "out" / "summary.json").read_text())["results"]
    cells = sum(len(c.specs) for c in CHECKS if "individual_ack" in c.area or "seek" in c.area)  # as -k matches
    assert len(results) == cells and {r["outcome"] for r in results} == {"unknown"}
    assert all("TargetTimedOut" in r["reason"] for r in results), [r["reason"] for r in results]
    assert took < 30


def test_a_client_crash_reproduction_carries_what_it_was_seen_with():
    """A crashed driver's reproduction names the same broker and client as a failure's, and
    Hypothesis's notes of the machine are left out of it too."""
    from fixtures.targets.driver_target import MODEL_DRIVER, ClientCrashed, DriverProcess, DriverTarget
    from model import ops as o
    from model.spec import Spec

    target = DriverTarget(lambda: DriverProcess(MODEL_DRIVER + ("--die-after", "2", "--die-by", "exit")),
                          name="pulsar", grace_ms=1500)
    target.replay_args = {"service_url": "pulsar://seen:6650", "admin_url": "http://seen:8080", "client": "cmd:./d"}
    try:
        target.reset(Spec(), "p1")
        target.invoke(o.Send())
        with pytest.raises(ClientCrashed) as crashed:
            target.invoke(o.Send())
    finally:
        target.close()
    assert "service_url='pulsar://seen:6650', admin_url='http://seen:8080', client='cmd:./d')" in crashed.value.source
    crashed.value.add_note("state.step(ticket=3, choice=1)")
    crashed.value.add_note("c0: subscribe -> ok")
    assert crashed.value.__notes__ == ["c0: subscribe -> ok"]


def test_a_driver_leaves_no_temporary_files_behind():
    """Every driver gets a temporary folder of its own ($TMPDIR, and java.io.tmpdir for a JVM),
    removed once it is gone, killed or dead on its own: the Java client unpacks a native library
    there at every start, which a killed JVM leaves behind."""
    from fixtures.targets.driver_target import DriverProcess

    def started(command):
        driver = DriverProcess("sh -c 'echo \"$JAVA_TOOL_OPTIONS\" > \"$TMPDIR/o\" && mv \"$TMPDIR/o\" \"$TMPDIR/options\"; "
                               f"{command}'")
        deadline = time.monotonic() + 10
        while not (driver.tmp / "options").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return driver

    killed = started("exec sleep 60")
    try:
        assert f"-Djava.io.tmpdir={killed.tmp}" in (killed.tmp / "options").read_text()
    finally:
        killed.kill()  # as a client crash does
        killed.stop()
    died = started("exit 3")
    died.process.wait(timeout=10)
    died.stop()
    assert not killed.tmp.exists() and not died.tmp.exists()
