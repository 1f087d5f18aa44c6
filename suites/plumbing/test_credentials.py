"""Credentials for a secured broker (fixtures/credentials.py): where a token comes from, how TLS is
asked for, and that no secret is shown: a URL's userinfo and a token never reach a report."""

from __future__ import annotations

import http.server
import threading

import pytest

from fixtures.admin import AdminClient, AdminError
from fixtures.credentials import (NONE, Credentials, CredentialsError, from_options, redact_args, redact_text,
                                  redact_url, resolve_token)

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.fake-signature"


@pytest.mark.parametrize("url, shown", [
    ("pulsar+ssl://svc:hunter2@broker.example:6651", "pulsar+ssl://***@broker.example:6651"),
    ("https://token:hunter2@admin.example/path?x=1", "https://***@admin.example/path?x=1"),
    ("pulsar://svc@a:6650,b:6650", "pulsar://***@a:6650,b:6650"),
    ("pulsar://broker.example:6650", "pulsar://broker.example:6650"),
    ("not a url @ all", "not a url @ all"),
])
def test_a_url_is_shown_without_its_userinfo(url, shown):
    assert redact_url(url) == shown


def test_a_command_line_is_shown_without_its_token_or_userinfo():
    args = ["--target", "pulsar", "--auth-token", TOKEN, f"--auth-token={TOKEN}",
            "--service-url=pulsar+ssl://svc:hunter2@h:6651", "--admin-url", "https://svc:hunter2@h:8443"]
    shown = redact_args(args)
    assert shown == ["--target", "pulsar", "--auth-token", "***", "--auth-token=***",
                     "--service-url=pulsar+ssl://***@h:6651", "--admin-url", "https://***@h:8443"]
    assert TOKEN not in " ".join(shown) and "hunter2" not in " ".join(shown)


def test_text_is_shown_without_the_urls_userinfo_and_the_secrets_named():
    text = f"connect to pulsar+ssl://svc:hunter2@h:6651 with 'Bearer {TOKEN}' refused"
    assert redact_text(text, TOKEN) == "connect to pulsar+ssl://***@h:6651 with 'Bearer ***' refused"


def test_credentials_never_print_their_token():
    credentials = Credentials(token=TOKEN)
    assert TOKEN not in repr(credentials) and TOKEN not in str(credentials) and TOKEN not in f"{credentials}"
    assert credentials.described() == {"token": True, "tls_trust_certs": None, "tls_hostname_verification": True,
                                       "tls_cert": None}


def test_the_token_comes_from_one_source_a_value_a_file_or_a_variable(tmp_path, monkeypatch):
    (tmp_path / "token").write_text(f"  {TOKEN}\n")
    monkeypatch.setenv("FAKE_PULSAR_TOKEN", TOKEN)
    assert resolve_token(value=TOKEN) == resolve_token(file=str(tmp_path / "token")) == \
        resolve_token(env="FAKE_PULSAR_TOKEN") == TOKEN
    assert resolve_token() is None
    with pytest.raises(CredentialsError, match="give the token one way, not --auth-token and --auth-token-file"):
        resolve_token(value=TOKEN, file=str(tmp_path / "token"))


@pytest.mark.parametrize("source, message", [
    ({"file": "missing-token"}, "--auth-token-file: cannot read missing-token: No such file"),
    ({"file": "empty"}, "--auth-token-file: .*empty is empty"),
    ({"env": "NO_SUCH_PULSAR_TOKEN_VARIABLE"}, "the environment variable NO_SUCH_PULSAR_TOKEN_VARIABLE is not set"),
])
def test_a_token_source_that_gives_nothing_is_an_error_that_names_it(tmp_path, monkeypatch, source, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(CredentialsError, match=message):
        resolve_token(**source)


def test_tls_files_must_exist_and_a_client_certificate_needs_its_key(tmp_path):
    with pytest.raises(CredentialsError, match="--tls-trust-certs: no such file: nowhere.pem"):
        Credentials(tls_trust_certs="nowhere.pem")
    (tmp_path / "client.pem").write_text("x")
    with pytest.raises(CredentialsError, match="--tls-cert and --tls-key go together"):
        Credentials(tls_cert=str(tmp_path / "client.pem"))


def test_the_options_make_the_credentials_a_driver_s_hello_carries(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    values = {"auth_token": TOKEN, "tls_trust_certs": str(tmp_path / "ca.pem"), "tls_no_hostname_verification": True}
    credentials = from_options(lambda name: values.get(name))
    wire = credentials.to_wire()
    assert wire == {"token": TOKEN, "tls_trust_certs": str(tmp_path / "ca.pem"), "tls_hostname_verification": False}
    assert Credentials.from_wire(wire) == credentials
    assert from_options(lambda name: None) == NONE and NONE.to_wire() is None  # an open broker: no `auth` at all


class _Recorder(http.server.BaseHTTPRequestHandler):
    """An admin API that answers /admin/v2/brokers/version only to the fake token."""

    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        authorization = self.headers.get("Authorization")
        self.seen.append(authorization)
        status, body = (200, b'"4.0.7"') if authorization == f"Bearer {TOKEN}" else (401, b"")
        if self.path.endswith("/stats"):  # what Pulsar 4.0.7 answers a role not granted the topic
            status, body = 401, b'{"reason":"Unauthorized to validateTopicOperation for operation [GET_STATS]"}'
        if self.path.endswith("/tls"):  # a TLS port's answer to plain HTTP: a record, no status line
            self.wfile.write(b"\x15\x03\x03\x00\x02\x02\x50")
            return
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def admin_api():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Recorder.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_admin_client_sends_the_token_as_a_bearer_token(admin_api):
    assert AdminClient(admin_api, credentials=Credentials(token=TOKEN)).broker_version() == "4.0.7"
    assert _Recorder.seen == [f"Bearer {TOKEN}"]


@pytest.mark.parametrize("credentials, said", [
    (NONE, "authentication failed: no token was given (--auth-token)"),
    (Credentials(token="wrong-token"), "authentication failed: the token given was refused"),
])
def test_a_refused_token_is_said_in_words_without_the_token(admin_api, credentials, said):
    with pytest.raises(AdminError) as refused:
        AdminClient(admin_api, credentials=credentials).broker_version()
    assert refused.value.status == 401 and said in str(refused.value) and "wrong-token" not in str(refused.value)


def test_a_reproduction_names_where_the_token_is_never_the_token(tmp_path, monkeypatch):
    from fixtures.credentials import TOKEN_ENV
    from fixtures.targets.loader import _replay_args
    from fixtures.targets.lockstep import program_source
    from model import ops as o
    from model.spec import Spec

    (tmp_path / "token").write_text(TOKEN)
    by_file = from_options({"auth_token_file": str(tmp_path / "token")}.get)
    by_value = from_options({"auth_token": TOKEN}.get)
    assert by_file.replay_form() == {"auth_token_file": str(tmp_path / "token")}
    assert by_value.replay_form() == {"auth_token_env": TOKEN_ENV}
    args = _replay_args({"service_url": "pulsar+ssl://svc:hunter2@h:6651", "admin_url": "https://h:8443",
                         "credentials": by_value}, "4.0.7")
    assert args == {"service_url": "pulsar+ssl://***@h:6651", "admin_url": "https://h:8443",
                    "credentials": {"auth_token_env": TOKEN_ENV}, "pulsar_version": "4.0.7"}
    source = program_source(Spec(), [o.Send()], "pulsar", replay_args=args)
    assert TOKEN not in source and "hunter2" not in source
    assert f"in the environment variable {TOKEN_ENV}" in source and "userinfo is not written here" in source
    monkeypatch.setenv(TOKEN_ENV, TOKEN)  # what the reproduction's reader does
    assert from_options(args["credentials"].get) == by_value


def test_a_service_url_with_userinfo_is_refused_before_a_client_prints_it():
    from fixtures.targets.loader import TargetLoadError, load_target

    with pytest.raises(TargetLoadError) as refused:
        load_target("pulsar", service_url="pulsar+ssl://svc:hunter2@127.0.0.1:6651", admin_url="https://127.0.0.1:1")
    assert "pulsar+ssl://***@127.0.0.1:6651 holds userinfo" in str(refused.value) and "hunter2" not in str(refused.value)


def test_the_admin_url_s_userinfo_is_basic_authentication_kept_out_of_messages(admin_api):
    host = admin_api.removeprefix("http://")
    admin = AdminClient(f"http://svc:hunter2@{host}")
    with pytest.raises(AdminError) as refused:
        admin.broker_version()
    assert _Recorder.seen == ["Basic c3ZjOmh1bnRlcjI="] and "hunter2" not in str(refused.value)
    assert admin.admin_url == admin_api
    with pytest.raises(CredentialsError, match="holds userinfo and a token was given"):
        AdminClient(f"http://svc:hunter2@{host}", credentials=Credentials(token=TOKEN))


def test_a_role_refused_a_topic_is_not_authorized_although_pulsar_answers_401(admin_api):
    with pytest.raises(AdminError) as refused:
        AdminClient(admin_api, credentials=Credentials(token=TOKEN))._request("GET", "/admin/v2/x/stats")
    assert "not authorized: the token's role may not do this" in str(refused.value)


def test_plain_http_to_a_tls_port_is_an_admin_error_not_a_traceback(admin_api):
    with pytest.raises(AdminError, match="cannot reach the admin API"):
        AdminClient(admin_api)._request("GET", "/admin/v2/tls")
