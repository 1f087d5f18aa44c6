"""A driver on a secured broker (drivers/PROTOCOL.md, "Credentials"): what the Java, Go and Rust
drivers' tests check, each on a broker of its module's own (token authentication, authorization
and TLS only, on free ports; fixtures/broker/secrets.py makes its token and certificates).

- With the broker's admin token and its CA trusted, the host name checked, the driver produces,
  receives and acknowledges, and the broker's cursor has the ack.
- With no token, or one signed with another key, the hello is an `error` reply, AuthenticationError,
  "authentication failed", within seconds: the clients themselves retry a refused connection until
  their operation timeout (Java 4.0.7, Go 0.21.0) or say only "fatal error when connecting" (the
  crate pulsar 6.9.1). Without the CA the hello is a TlsError the same way.
- No reply and no line of the driver's stderr shows the token, even where the driver echoes a name
  it was given (a consumer named like the token is answered with *** in its place).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager

from drivers import wire
from fixtures.broker import Broker, BrokerConfig, free_port
from fixtures.broker.secrets import ADMIN_ROLE, jwt_hs256, new_secret_key
from fixtures.credentials import HIDDEN, Credentials
from fixtures.targets.driver_target import DriverProcess
from model.spec import Spec, SubscriptionType

REFUSAL_S = 10  # a refused hello answers within this (drivers/PROTOCOL.md: one connection, at most 10 s)
SUBSCRIPTION = "secured"


@contextmanager
def secured_broker(client: str, version: str) -> Iterator[Broker]:
    """A secured broker on free ports for one test module, stopped and removed at its end (named
    after this process, so that a run killed before the end has it reaped: fixtures/broker/reap.py)."""
    config = BrokerConfig(version=version, instance=f"pytest-secured-{client}-{os.getpid()}",
                          broker_port=free_port(), web_port=free_port(), secured=True)
    broker = Broker(config)
    try:
        broker.start(fresh=True)
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(config.home, ignore_errors=True)


def _op(driver: DriverProcess, op: str, **fields) -> dict:
    return driver.request({"type": "op", "op": op, **fields}, 45_000)


def produces_receives_and_acknowledges(command, broker: Broker, credentials: Credentials) -> dict:
    """A program with these credentials: send, subscribe, receive, acknowledge, close; the cursor
    has the ack. Returns the hello's reply."""
    topic = f"persistent://public/default/secured-driver-{time.monotonic_ns()}"
    driver = DriverProcess(command)
    try:
        hello = driver.request(wire.hello(broker.config.service_url, credentials.to_wire()), 60_000)
        assert "outcome" not in hello, hello
        spec = Spec(subscription_type=SubscriptionType.EXCLUSIVE)
        assert driver.request(wire.reset(spec, topic, SUBSCRIPTION), 30_000)["outcome"] == "ok"
        assert _op(driver, "send", entry=0, keys=[None], batched=False)["outcome"] == "ok"
        assert _op(driver, "subscribe", consumer="c0")["outcome"] == "ok"
        got = _op(driver, "receive", consumer="c0", ms=10_000)
        assert got.get("delivered_entry") == 0, got
        assert _op(driver, "acknowledge", consumer="c0", entry=0, index=-1)["outcome"] == "ok"
        assert _op(driver, "close", consumer="c0")["outcome"] == "ok"  # flushes the grouped ack
        assert broker.admin.cursor(topic, SUBSCRIPTION).mark_delete_position.entry == 0
    finally:
        driver.stop()
    return hello


def refused_hello(command, broker: Broker, auth: dict) -> dict:
    """The hello's reply with this `auth`, within REFUSAL_S; neither it, an op naming a consumer
    after the token, nor the driver's stderr shows the token."""
    token = auth.get("token")
    driver = DriverProcess(command)
    try:
        started = time.monotonic()
        reply = driver.request(wire.hello(broker.config.service_url, auth), 30_000)
        took = time.monotonic() - started
        echoed = _op(driver, "close", consumer=token or "c0")
        stderr = driver.stderr_tail(2000)
    finally:
        driver.stop()
    assert reply.get("outcome") == "error", reply
    assert took < REFUSAL_S, f"the hello took {took:.1f} s: {reply}"
    if token:
        written = json.dumps(reply) + json.dumps(echoed) + stderr
        assert token not in written, "the driver wrote the token"
        assert HIDDEN in echoed["error"]["message"], echoed
    return reply["error"]


def refuses_what_the_broker_refuses(command, broker: Broker) -> None:
    """No token, a token the broker did not sign: AuthenticationError; no CA trusted: TlsError."""
    admin = broker.credentials()
    forged = jwt_hs256(ADMIN_ROLE, new_secret_key())
    ca = {"tls_trust_certs": admin.tls_trust_certs, "tls_hostname_verification": True}
    for auth in (ca, {**ca, "token": forged}):
        error = refused_hello(command, broker, auth)
        assert error["class"] == "AuthenticationError" and error["message"].startswith("authentication failed"), error
    error = refused_hello(command, broker, {"token": admin.token, "tls_hostname_verification": True})
    assert error["class"] == "TlsError", error


def with_client_certificate(broker: Broker) -> Credentials:
    """The admin credentials and the broker's client certificate (mutual TLS; the broker does not ask for one)."""
    admin, secrets = broker.credentials(), broker.secrets
    return Credentials(token=admin.token, tls_trust_certs=admin.tls_trust_certs,
                       tls_cert=str(secrets.client_cert), tls_key=str(secrets.client_key))
