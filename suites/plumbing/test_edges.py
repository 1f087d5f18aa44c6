"""The edges of a run: a broker that cannot be reached, a reproduction that must point at the broker
a failure was seen on, third-party targets loaded the same way everywhere, a target that hangs.

None of these needs a broker: an unreachable one is a closed port, a live admin API a tiny local
HTTP server answering every GET with 200.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

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


def run_pytest(tmp_path: Path, *args: str, timeout_s: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--reports-dir", str(tmp_path / "out"), "--histories", str(tmp_path / "histories"),
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
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
    assert took < 10, f"{took:.1f} s to the verdict"


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
