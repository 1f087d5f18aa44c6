"""The driver machinery (fixtures/targets/driver_target.py, drivers/): a client that dies is a
reported finding and the run goes on, a check the client cannot run is not applicable, and the
protocol itself carries the whole conformance suite (the reference model as a driver, no broker)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from drivers import wire
from fixtures import options
from fixtures.credentials import Credentials
from fixtures.targets.driver_target import (MODEL_DRIVER, PYTHON_DRIVER, ClientCrashed, DriverProcess, DriverTarget,
                                           driver_command)
from model import ops as o
from model.spec import Spec, SubscriptionType
from reports.failures import read_events
from suites.conformance.catalog import CHECKS, check
from suites.machines import run_conformance
from suites.replay.stored import replay

ROOT = Path(__file__).resolve().parents[2]


def _model_driver(*args: str, grace_ms: int = 10_000) -> DriverTarget:
    return DriverTarget(lambda: DriverProcess(MODEL_DRIVER + args), name="model-driver", grace_ms=grace_ms)


@pytest.mark.parametrize("how, reason", [
    ("segv", "was killed by SIGSEGV (signal 11)"),
    ("kill", "was killed by SIGKILL (signal 9)"),
    ("exit", "exited with code 3"),
    ("hang", "gave no reply to subscribe within its deadline (killed)"),
])
def test_a_driver_that_dies_is_a_crashed_client_and_a_fresh_driver_takes_the_next_program(how, reason):
    target = _model_driver("--die-after", "3", "--die-by", how, grace_ms=1500)
    try:
        target.reset(Spec(), "p1")
        target.invoke(o.Send())
        target.invoke(o.Send())
        with pytest.raises(ClientCrashed) as crashed:
            target.invoke(o.Subscribe(consumer="c0"))
        assert crashed.value.reason == reason
        assert str(crashed.value).startswith(f"client crashed: model {crashed.value.client.split()[1]} {reason} "
                                             "during c0: subscribe")
        assert "dying by" in crashed.value.stderr  # the tail of its stderr
        assert [type(op) for op, _ in crashed.value.history] == [o.Send, o.Send]
        assert "Subscribe(consumer='c0')" in crashed.value.source  # the reproduction replays the op it died on
        with pytest.raises(ClientCrashed) as again:  # the program ends with its driver: no fresh one mid-program
            target.invoke(o.Receive(consumer="c0"))
        assert again.value is crashed.value
        target.reset(Spec(), "p2")
        assert target.invoke(o.Send()).outcome is o.Outcome.OK
    finally:
        target.close()


ECHOES_ITS_CONFIGURATION = """
import json, sys
hello = json.loads(sys.stdin.readline())
print("client config: token", hello["auth"]["token"], "admin https://user:secret@host:8443", file=sys.stderr)
sys.exit(3)
"""


def test_a_crashed_driver_s_stderr_is_shown_without_the_token_or_url_userinfo():
    """Whatever a client logs before it dies (Go and Rust clients log their configuration), the
    crash report shows its tail with the token and URL passwords hidden."""
    token = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXJvbGU.signature"
    with pytest.raises(ClientCrashed) as crashed:  # at its hello
        DriverTarget(lambda: DriverProcess((sys.executable, "-c", ECHOES_ITS_CONFIGURATION)),
                     name="echoes", grace_ms=5000, credentials=Credentials(token=token))
    assert "client config: token ***" in crashed.value.stderr, crashed.value.stderr
    assert token not in str(crashed.value) and "secret@" not in str(crashed.value)
    compile(crashed.value.source, "reproduction", "exec")  # a crash before any op still reproduces as Python


def test_the_reference_model_as_a_driver_passes_every_check_through_the_protocol():
    """The protocol's self-test: every catalog check (the slow one aside), each spec, a few programs."""
    target = _model_driver()
    ids = (f"self-test-{n}" for n in itertools.count())
    try:
        for check in (c for c in CHECKS if not c.slow):
            for spec in check.specs.values():
                run_conformance(target, spec, lambda: next(ids), kinds=check.kinds,
                                settings_=settings(settings.get_profile("ci"), max_examples=3))
    finally:
        target.close()


def test_a_spec_names_the_client_the_driver_named_in_its_handshake(tmp_path):
    """The catalog's specs name the default client; a run through a driver says the one it runs."""
    from fixtures.targets.recording import RecordingTarget
    from suites.machines import as_run

    target = _model_driver()
    try:
        label = f"{target.client['client']}-{target.client['version']}"
        assert as_run(Spec(), RecordingTarget(target, tmp_path)).client == label != Spec().client
        assert as_run(Spec(), object()) == Spec()  # no driver: the spec as it is
        # What the client does where clients differ comes from the handshake too, never the catalog.
        assert not as_run(Spec(seek_sends_batch_index=True), target).seek_sends_batch_index
        target.client = {**target.client, "capabilities": [*target.client["capabilities"], "seek_batch_index"]}
        assert as_run(Spec(), RecordingTarget(target, tmp_path)).seek_sends_batch_index
        assert not as_run(Spec(seek_acks_skipped=True), target).seek_acks_skipped
        target.client = {**target.client, "capabilities": [*target.client["capabilities"], "seek_acks_skipped"]}
        assert as_run(Spec(), RecordingTarget(target, tmp_path)).seek_acks_skipped
    finally:
        target.close()


def test_every_catalog_check_asks_only_what_the_python_client_declares():
    """With --client python no check is skipped as not applicable but those of ack receipts, the
    nack backoff and the retry letter topic (the C++ client has none), and the Java and Go clients' seek rules: the
    catalog's other specs need only what pulsar-client offers (drivers/python/driver.py's CAPABILITIES)."""
    from drivers.python.driver import CAPABILITIES

    hello = {"ops": [k for k in wire.CLIENT_OPS if k != "reconsume_later"], "capabilities": list(CAPABILITIES)}
    needed = {c.area: sorted({n for s in c.specs.values() for n in wire.needs(c.kinds, s)}) for c in CHECKS}
    assert "seek_by_id" in needed["seek"]
    assert "dead_letter_policy" in needed["redelivery_count_and_dead_letter"]
    assert "receiver_queue_0" in needed["zero_queue"] and "ack_timeout" in needed["ack_timeout"]
    lacking = {(c.area, name): wire.lacking(hello, c.kinds, s) for c in CHECKS for name, s in c.specs.items()}
    assert {cell: need for cell, need in lacking.items() if need} == {
        ("persistence", "Exclusive-ack-receipts"): ["ack_receipts"], ("negative_ack", "Shared-backoff"): ["nack_backoff"],
        ("seek", "Shared-seek-batch-index"): ["seek_batch_index"],
        ("seek", "Shared-seek-acks-skipped"): ["seek_acks_skipped"],
        **{("retry_letter_topic", name): ["reconsume_later", "retry_letter_topic"]
           for name in check("retry_letter_topic").specs}}
    assert wire.lacking({**hello, "capabilities": []}, ("send", "seek"), Spec()) == ["seek_by_id"]


def test_the_redelivery_count_is_needed_where_a_program_can_ask_for_a_counted_redelivery():
    """`redelivery_count` (drivers/PROTOCOL.md): a program on Shared or Key_Shared with a nack, a
    redeliver_unacknowledged_messages or an ack timeout may see a count above 0, so a client that
    cannot show it is not checked there; elsewhere a count of 0 is always allowed."""
    shared = Spec(subscription_type=SubscriptionType.SHARED)
    exclusive, key_shared = (shared.with_(subscription_type=t) for t in (SubscriptionType.EXCLUSIVE,
                                                                         SubscriptionType.KEY_SHARED))
    assert "redelivery_count" in wire.needs(("send", "receive", "negative_acknowledge"), shared)
    assert "redelivery_count" in wire.needs(("send", "receive", "redeliver_unacknowledged_messages"), key_shared)
    assert "redelivery_count" in wire.needs(("send", "receive"), shared.with_(ack_timeout_ms=10_000))
    assert "redelivery_count" not in wire.needs(("send", "receive", "negative_acknowledge"), exclusive)
    assert "redelivery_count" not in wire.needs(("send", "receive", "acknowledge", "close", "seek", "unload"), shared)
    without = {"ops": list(wire.CLIENT_OPS), "capabilities": [c for c in wire.CAPABILITIES if c != "redelivery_count"]}
    assert wire.lacking(without, ("send", "negative_acknowledge"), shared) == ["redelivery_count"]


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CI": "true"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--reports-dir",
                           str(folder), *args], cwd=ROOT, env=env, text=True, capture_output=True, timeout=600)


def test_a_crash_is_its_own_verdict_with_its_history_and_the_run_goes_on(tmp_path):
    """The real conformance suite through a model driver that dies once, on its 40th op, by SIGSEGV,
    and that lacks seek by id: the test it dies in is unknown, "client crashed", with the history up
    to the crash; the next tests pass on a fresh driver; the seek checks are not applicable."""
    marker = tmp_path / "died"
    client = f"cmd:{sys.executable} -m drivers.model --die-after 40 --die-once {marker} --lacks seek_by_id"
    done = _pytest(tmp_path / "reports", "suites/conformance/test_individual_ack.py",
                   "suites/conformance/test_seek.py", "--target", "fixtures.targets.driver_target:without_broker",
                   "--client", client)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "client crashed: model" in done.stdout
    summary = json.loads((tmp_path / "reports" / "summary.json").read_text())
    outcomes = {(r["area"], r["spec_id"]): r for r in summary["results"]}
    crashed = outcomes.pop(("individual_ack", "Exclusive"))
    assert crashed["outcome"] == "unknown" and not crashed["violations"]
    assert crashed["reason"].startswith("client crashed: model ") and "SIGSEGV (signal 11)" in crashed["reason"]
    assert "dying by segv on op 40" in crashed["reason"] and crashed["reason_kind"] == "client crashed"
    skipped = {k: r for k, r in outcomes.items() if k[0] == "seek"}
    assert {r["outcome"] for r in skipped.values()} == {"not applicable"}
    assert len(skipped) == len(next(c for c in CHECKS if c.area == "seek").specs)
    assert all("not applicable for client model" in r["reason"] and "seek_by_id" in r["reason"]
               for r in skipped.values())
    assert {r["outcome"] for k, r in outcomes.items() if k[0] == "individual_ack"} == {"passed"}
    assert summary["run"]["client"]["name"] == "model" and summary["run"]["client"]["protocol"] == 1
    assert " · client model " in (tmp_path / "reports" / "summary.md").read_text()
    failures = tmp_path / "reports" / "failures"
    stem = "individual_ack-Exclusive-client-crashed"
    sidecar = json.loads((failures / f"{stem}.expect.json").read_text())
    assert sidecar["expect"] == "client-crashed" and "SIGSEGV" in sidecar["reason"]
    events = read_events(failures / f"{stem}.jsonl")
    assert len(events) == sidecar["step"] > 0
    from model.history import completion_of, op_of, spec_of

    history = [(op_of(e), completion_of(e)) for e in events]
    assert replay(spec_of(events[0].spec), history, drained=False).step is None  # the history up to the crash checks again


def pytest_generate_tests(metafunc):
    """The driver `--client` names when given (`cmd:COMMAND`, a client author's, or one of the
    project's: java, go, rust, python==X.Y.Z), else the project's two in Python."""
    if "driver_command" in metafunc.fixturenames:
        client = metafunc.config.getoption("client") or ""
        if client and client != "python":
            version = options.pulsar_version(metafunc.config) if client == "java" else None
            metafunc.parametrize("driver_command", [driver_command(client, version=version)],
                                 ids=["given" if client.startswith("cmd:") else client])
        else:
            metafunc.parametrize("driver_command", [MODEL_DRIVER, PYTHON_DRIVER], ids=["model", "python"])


def test_a_driver_answers_every_request_and_errors_are_data(driver_command):
    """What a client author's driver must do before it meets a broker (drivers/README.md)."""
    driver = DriverProcess(driver_command)
    try:
        hello = driver.request(wire.hello("pulsar://127.0.0.1:1"), 30_000)
        assert hello["protocol"] == wire.PROTOCOL and hello["client"] and hello["version"]
        assert set(hello["ops"]) <= set(wire.CLIENT_OPS) and set(hello["capabilities"]) <= set(wire.CAPABILITIES)
        assert driver.request({"type": "op", "op": "fly"}, 5_000)["outcome"] == "error"
        assert driver.request({"type": "dance"}, 5_000)["outcome"] == "error"
        assert driver.request({"type": "hello", "protocol": 99}, 5_000)["error"]["class"] == "ProtocolVersion"
        assert driver.request(wire.close(), 10_000)["outcome"] == "ok"
        assert driver.process.wait(timeout=10) == 0
    finally:
        driver.stop()


@pytest.mark.broker
def test_the_python_driver_gets_into_a_secured_broker_with_its_credentials_and_no_other(request):
    """Token and TLS from the hello's auth, a client certificate too; no token, a forged one or an
    untrusted CA refused at the hello within seconds. The C++ client says nothing when its token
    is refused (it reconnects until its operation timeout): the driver's hello looks a topic up
    with a 5 s timeout and calls a timeout that refusal."""
    from suites.plumbing import secured_driver

    command = driver_command("python")
    with secured_driver.secured_broker("python", options.pulsar_version(request.config)) as broker:
        hello = secured_driver.produces_receives_and_acknowledges(command, broker, broker.credentials())
        assert "tls_client_cert" in hello["capabilities"]
        secured_driver.produces_receives_and_acknowledges(command, broker, secured_driver.with_client_certificate(broker))
        secured_driver.refuses_what_the_broker_refuses(command, broker)
