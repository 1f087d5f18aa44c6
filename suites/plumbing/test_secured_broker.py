"""The embedded broker's secured mode: a token to get in, a role to be let do things, TLS only.

`python -m fixtures.broker start --secured` (fixtures/broker/secrets.py makes the material) runs
Pulsar's `AuthenticationProviderToken` with an HS256 secret key, `authorizationEnabled` with one
super-user role, and TLS on the broker and web ports with no plain port. This module starts one of
its own on free ports, through that command line, and holds what a client meets there (Python
client 3.13, Pulsar 4.0.7):

- the super-user token, the CA trusted and the host name checked (127.0.0.1 is in the server
  certificate's names): produce, consume, acknowledge, and read the cursor on the admin API;
- no token, or one signed with another key: the broker answers the CONNECT with an
  AuthenticationError and closes; the Python client does not say so, it retries the connection
  until the operation timeout and raises `pulsar.Timeout` (apache/pulsar-client-cpp#227); only the
  broker's log says "Failed to authenticate". The admin API answers 401;
- a role granted nothing: `pulsar.AuthorizationError` at once; the admin API answers 403 to a
  topic's creation and, on 4.0.7, 401 with "Unauthorized to validateTopicOperation" to its stats;
- a client that trusts no CA, or another one: `pulsar.ConnectError` at once, no retry;
- no file of the broker's home but those in secrets/ holds a token.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pulsar
import pytest

from fixtures import options
from fixtures.admin import AdminClient, AdminError
from fixtures.broker import Broker, BrokerConfig, free_port
from fixtures.broker.__main__ import main as broker_cli
from fixtures.broker.secrets import ADMIN_ROLE, jwt_hs256, new_secret_key
from fixtures.broker.tls import certificate_authority
from fixtures.credentials import Credentials
from fixtures.pulsar import poll, position_of

pytestmark = pytest.mark.broker

REFUSAL_TIMEOUT_S = 3  # the clients refused below give up after this (operation_timeout_seconds)
SUBSCRIPTION = "secured"
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = broker_cli(list(args))
    assert code == 0, f"python -m fixtures.broker {' '.join(args)} exited {code}: {out.getvalue()}"
    return out.getvalue()


@pytest.fixture(scope="module")
def secured(request: pytest.FixtureRequest):
    """A secured broker of this module's own, started and stopped with the command line; yields
    the Broker and what `start --secured` printed."""
    instance = f"pytest-secured-{os.getpid()}"  # reaped like a session broker if this run is killed
    version = options.pulsar_version(request.config)
    started = time.monotonic()
    printed = _cli("start", "--secured", "--fresh", "--instance", instance, "--pulsar-version", version,
                   "--broker-port", str(free_port()), "--web-port", str(free_port()))
    logging.getLogger("fixtures").info("secured broker started in %.1f s", time.monotonic() - started)
    broker = Broker(BrokerConfig(version=version, instance=instance))  # a plain config, as reap.py has
    try:
        yield broker, printed
    finally:
        _cli("stop", "--instance", instance)


def _addresses(broker: Broker) -> tuple[str, str]:
    status = broker.status()
    return status.service_url, status.admin_url


def _client(service_url: str, **settings) -> pulsar.Client:
    logger = logging.getLogger("pulsar.client.secured")
    logger.setLevel(logging.CRITICAL)  # the C++ client logs every refused reconnect at ERROR
    return pulsar.Client(service_url, operation_timeout_seconds=REFUSAL_TIMEOUT_S, logger=logger, **settings)


def _token(broker: Broker, role_file: str = "admin_token") -> str:
    return getattr(broker.secrets, role_file).read_text().strip()


def _refused_connect(broker: Broker, reason: str, **settings) -> tuple[type, float]:
    """Try to create a producer; returns the exception's type and how long it took, after checking
    that the broker logged a refused CONNECT for `reason` meanwhile."""
    service_url, _ = _addresses(broker)
    logged_before = broker.log_file.read_text(errors="replace").count(reason)
    client = _client(service_url, tls_trust_certs_file_path=str(broker.secrets.ca_cert), **settings)
    started = time.monotonic()
    try:
        with pytest.raises(pulsar.PulsarException) as refused:
            client.create_producer(f"persistent://public/default/refused-{time.time_ns()}")
        took = time.monotonic() - started
    finally:
        client.close()
    logged = broker.log_file.read_text(errors="replace")
    assert logged.count(reason) > logged_before, f"the broker logged no refused CONNECT for {reason!r}"
    return type(refused.value), took


def test_start_secured_prints_its_addresses_and_files_never_the_token(secured):
    broker, printed = secured
    status = broker.status()
    assert status.running and status.usable and status.secured, status
    assert status.service_url.startswith("pulsar+ssl://127.0.0.1:") and status.admin_url.startswith("https://127.0.0.1:")
    for line in (f"service URL:    {status.service_url}", f"admin URL:      {status.admin_url}",
                 f"token file:     {broker.secrets.admin_token}", f"CA certificate: {broker.secrets.ca_cert}"):
        assert line in printed
    assert _token(broker) not in printed
    shown = _cli("status", "--instance", broker.config.instance)
    assert "secured (token, TLS), usable" in shown and status.service_url in shown


def test_the_broker_serves_tls_only_with_authentication_and_authorization(secured):
    broker, _ = secured
    _, admin_url = _addresses(broker)
    settings = AdminClient(admin_url, credentials=broker.credentials()).runtime_configuration()
    assert settings["brokerServicePort"] == settings["webServicePort"] == "Optional.empty", "no plain port"
    assert (settings["authenticationEnabled"], settings["authorizationEnabled"]) == ("true", "true")
    assert settings["superUserRoles"] == f"[{ADMIN_ROLE}]"


def test_the_admin_token_produces_consumes_acknowledges_and_reads_the_cursor(secured, names):
    broker, _ = secured
    service_url, admin_url = _addresses(broker)
    topic = names.topic()
    client = _client(service_url, authentication=pulsar.AuthenticationToken(_token(broker)),
                     tls_trust_certs_file_path=str(broker.secrets.ca_cert), tls_validate_hostname=True)
    try:
        consumer = client.subscribe(topic, SUBSCRIPTION)
        client.create_producer(topic).send(b"let in")
        message = consumer.receive(10_000)
        assert message.data() == b"let in"
        consumer.acknowledge(message)
        admin = AdminClient(admin_url, credentials=broker.credentials())
        cursor = poll(lambda: admin.cursor(topic, SUBSCRIPTION),
                      lambda c: c.is_acknowledged(position_of(message)))
        assert cursor.is_acknowledged(position_of(message)), cursor
    finally:
        client.close()


def test_no_token_is_refused_by_the_broker_and_the_admin_api(secured):
    broker, _ = secured
    refused, took = _refused_connect(broker, "reason=No anonymous role")
    # The client never hears why: it retries the refused connection until its operation timeout.
    assert refused is pulsar.Timeout and took < REFUSAL_TIMEOUT_S + 5, (refused, took)
    _, admin_url = _addresses(broker)
    admin = AdminClient(admin_url, credentials=Credentials(tls_trust_certs=str(broker.secrets.ca_cert)))
    with pytest.raises(AdminError, match="authentication failed: no token was given") as error:
        admin.namespaces("public")
    assert error.value.status == 401


def test_a_token_signed_with_another_key_is_refused(secured):
    broker, _ = secured
    forged = jwt_hs256(ADMIN_ROLE, new_secret_key())  # the super-user's name, another key
    refused, took = _refused_connect(broker, "JWT signature does not match",
                                     authentication=pulsar.AuthenticationToken(forged))
    assert refused is pulsar.Timeout and took < REFUSAL_TIMEOUT_S + 5, (refused, took)
    _, admin_url = _addresses(broker)
    admin = AdminClient(admin_url, credentials=Credentials(token=forged, tls_trust_certs=str(broker.secrets.ca_cert)))
    with pytest.raises(AdminError, match="authentication failed: the token given was refused") as error:
        admin.namespaces("public")
    assert error.value.status == 401


def test_a_role_granted_nothing_is_not_authorized(secured, names):
    broker, _ = secured
    service_url, admin_url = _addresses(broker)
    topic = names.topic()
    nobody = _client(service_url, authentication=pulsar.AuthenticationToken(_token(broker, "nobody_token")),
                     tls_trust_certs_file_path=str(broker.secrets.ca_cert))
    started = time.monotonic()
    try:
        with pytest.raises(pulsar.AuthorizationError):
            nobody.subscribe(topic, SUBSCRIPTION)
        with pytest.raises(pulsar.AuthorizationError):
            nobody.create_producer(topic)
    finally:
        nobody.close()
    assert time.monotonic() - started < REFUSAL_TIMEOUT_S, "an authorization error comes back at once"
    AdminClient(admin_url, credentials=broker.credentials()).create_topic(topic)
    admin = AdminClient(admin_url, credentials=Credentials(token=_token(broker, "nobody_token"),
                                                           tls_trust_certs=str(broker.secrets.ca_cert)))
    with pytest.raises(AdminError, match="not authorized") as creating:
        admin.create_topic(names.topic())
    assert creating.value.status == 403
    # 4.0.7 answers a topic operation the role may not do with 401, not 403; the reason says which.
    with pytest.raises(AdminError, match=r"Unauthorized to validateTopicOperation") as reading:
        admin.cursor(topic, SUBSCRIPTION)
    assert reading.value.status in (401, 403)


def test_a_client_that_does_not_trust_the_broker_s_ca_is_refused(secured, tmp_path):
    broker, _ = secured
    service_url, admin_url = _addresses(broker)
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_bytes(certificate_authority("another CA").certificate_pem())
    token = pulsar.AuthenticationToken(_token(broker))
    for trust in ({}, {"tls_trust_certs_file_path": str(other_ca)}):  # the system's CAs; another CA
        client = _client(service_url, authentication=token, **trust)
        started = time.monotonic()
        try:
            with pytest.raises(pulsar.ConnectError):
                client.create_producer(f"persistent://public/default/untrusted-{time.time_ns()}")
        finally:
            client.close()
        assert time.monotonic() - started < REFUSAL_TIMEOUT_S, "a TLS refusal is not retried"
    admin = AdminClient(admin_url, credentials=Credentials(token=_token(broker), tls_trust_certs=str(other_ca)))
    with pytest.raises(AdminError, match="CERTIFICATE_VERIFY_FAILED"):
        admin.namespaces("public")


def test_no_file_but_the_secrets_holds_a_token(secured):
    """Runs after the refusals above, so that the log holds whatever they made the broker write."""
    broker, _ = secured
    assert stat.S_IMODE(broker.secrets.folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(f.stat().st_mode) for f in broker.secrets.folder.iterdir()} == {0o600}
    tokens = {_token(broker).encode(), _token(broker, "nobody_token").encode()}
    holding = [str(path.relative_to(broker.home)) for path in broker.home.rglob("*")
               if path.is_file() and broker.secrets.folder not in path.parents
               and any(token in path.read_bytes() for token in tokens)]
    assert holding == []
    assert broker.saved_settings()["secured"] is True


# -- the conformance suite on the secured broker ----------------------------------------------------
def _suite(secured, tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
    """The conformance suite run as a user runs it on a secured cluster, in a process of its own,
    with every file it writes under tmp_path; returns the run and those files."""
    command = [sys.executable, "-m", "pytest", "--target", "pulsar", "-p", "no:cacheprovider", "-p", "no:randomly",
               "--hypothesis-profile", "ci", "--reports-dir", str(tmp_path / "out"),
               "--histories", str(tmp_path / "histories"), "--keep-histories", "all",
               "--junitxml", str(tmp_path / "junit.xml"), "--alluredir", str(tmp_path / "allure"), *args]
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run(command, cwd=ROOT, env=env, text=True, capture_output=True, timeout=600)
    return done, [path for path in tmp_path.rglob("*") if path.is_file()]


def test_the_suite_runs_on_the_secured_broker_and_no_file_it_writes_holds_the_token(secured, tmp_path):
    """The token given on the command line, the hardest case: it must not reach summary.json's
    command line, the reports, JUnit, allure, the histories or the terminal."""
    broker, _ = secured
    service_url, admin_url = _addresses(broker)
    token = _token(broker)
    done, written = _suite(secured, tmp_path, str(ROOT / "suites" / "conformance" / "test_individual_ack.py"),
                           "--service-url", service_url, "--admin-url", admin_url, "--auth-token", token,
                           "--tls-trust-certs", str(broker.secrets.ca_cert))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["passed"] >= 4 and summary["totals"]["unknown"] == 0, summary["totals"]
    assert summary["run"]["pulsar"]["service_url"] == service_url and "--auth-token" in summary["run"]["args"]
    assert any(p.suffix == ".jsonl" for p in written) and any(p.parent.name == "allure" for p in written)
    holding = [str(p.relative_to(tmp_path)) for p in written if token.encode() in p.read_bytes()]
    assert holding == [] and token not in done.stdout + done.stderr


def test_a_wrong_token_ends_the_run_in_seconds_saying_so(secured, tmp_path):
    broker, _ = secured
    service_url, admin_url = _addresses(broker)
    forged = jwt_hs256({"sub": ADMIN_ROLE}, new_secret_key())
    began = time.monotonic()
    done, written = _suite(secured, tmp_path, str(ROOT / "suites" / "conformance" / "test_individual_ack.py"),
                           "--service-url", service_url, "--admin-url", admin_url, "--auth-token", forged,
                           "--tls-trust-certs", str(broker.secrets.ca_cert))
    assert done.returncode != 0 and time.monotonic() - began < 60
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["passed"] == summary["totals"]["failed"] == 0  # unknown: never a verdict
    assert "authentication failed: the token given was refused" in done.stdout
    assert not [p for p in written if forged.encode() in p.read_bytes()] and forged not in done.stdout + done.stderr


def test_a_service_url_with_userinfo_is_refused_and_its_password_shown_nowhere(secured, tmp_path):
    broker, _ = secured
    service_url, admin_url = _addresses(broker)
    with_userinfo = service_url.replace("://", "://svc:hunter2@")
    done, written = _suite(secured, tmp_path, str(ROOT / "suites" / "conformance" / "test_individual_ack.py"),
                           "--service-url", with_userinfo, "--admin-url", admin_url,
                           "--auth-token-file", str(broker.secrets.admin_token),
                           "--tls-trust-certs", str(broker.secrets.ca_cert))
    assert done.returncode != 0
    assert "holds userinfo, which Pulsar clients do not take" in done.stdout + done.stderr
    assert "hunter2" not in done.stdout + done.stderr and not [p for p in written if b"hunter2" in p.read_bytes()]
