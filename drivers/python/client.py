"""The Python client (pulsar-client, the C++ client underneath) made for a run's broker and credentials.

One place builds it, so the driver, the in-process target and the tests' `pulsar_client` fixture
all connect the same way: a token through `AuthenticationToken`, TLS checked against the trusted
certificates and, unless told not to, the broker's host name (the C++ client's own default is not
to check it: a conformance run against a secured cluster checks it), a client certificate when one
is given. Older wheels (`--client python==X.Y.Z`) that know no client certificate refuse one by name.
"""

from __future__ import annotations

import inspect
import logging

import pulsar

from fixtures.credentials import NONE, Credentials, CredentialsError


def new_client(service_url: str, credentials: Credentials = NONE, *, logger: logging.Logger | None = None,
               operation_timeout_seconds: int = 30) -> pulsar.Client:
    options: dict = {"operation_timeout_seconds": operation_timeout_seconds,
                     "logger": logger or logging.getLogger("pulsar.client")}
    if credentials.token:
        options["authentication"] = pulsar.AuthenticationToken(credentials.token)
    if service_url.startswith("pulsar+ssl://"):
        options.update(tls_trust_certs_file_path=credentials.tls_trust_certs,
                       tls_validate_hostname=credentials.tls_hostname_verification)
        if credentials.tls_cert:
            if not client_certificates():
                raise CredentialsError("--tls-cert: this pulsar-client wheel cannot present a client certificate")
            options.update(tls_certificate_file_path=credentials.tls_cert,
                           tls_private_key_file_path=credentials.tls_key)
    return pulsar.Client(service_url, **options)


def client_certificates() -> bool:
    """Whether this pulsar-client wheel can present a client certificate (3.x can; older ones cannot)."""
    return "tls_certificate_file_path" in inspect.signature(pulsar.Client.__init__).parameters
