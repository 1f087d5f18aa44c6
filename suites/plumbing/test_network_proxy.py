"""The network-fault proxy (fixtures/network.py: Toxiproxy, pinned, built with Go) in front of a
TCP echo server: a cut closes the open connections and refuses new ones until restored, a
stall lets nothing through on a connection that stays open and, once cleared, everything it held
(in order, nothing lost), latency delays each direction,
and a server that cannot start or a call it refuses is a clear error. Skipped, saying why, where
Go is not installed."""

from __future__ import annotations

import shutil
import socket
import socketserver
import threading
import time

import pytest

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="Toxiproxy is built with Go: go is not on PATH")


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture(scope="module")
def echo():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    from fixtures.network import Toxiproxy

    server = Toxiproxy(tmp_path_factory.mktemp("toxiproxy") / "toxiproxy.log").start()
    yield server
    server.stop()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=2)


def _echoes(connection: socket.socket, timeout_s: float = 2.0) -> bool:
    connection.settimeout(timeout_s)
    try:
        connection.sendall(b"ping")
        return connection.recv(4) == b"ping"
    except (TimeoutError, ConnectionError):
        return False


def test_a_cut_closes_the_open_connections_and_refuses_new_ones_until_restored(toxiproxy, echo):
    proxy = toxiproxy.proxy("cut", echo)
    before = _connect(proxy.listen)
    assert _echoes(before)
    proxy.cut()
    assert not _echoes(before)  # closed by the proxy: reset, or end of stream
    with pytest.raises(ConnectionRefusedError):
        _connect(proxy.listen)
    proxy.restore()
    assert _echoes(_connect(proxy.listen))


def test_a_stall_passes_nothing_on_an_open_connection_and_then_all_it_held_in_order(toxiproxy, echo):
    proxy = toxiproxy.proxy("stall", echo)
    connection = _connect(proxy.listen)
    assert _echoes(connection)
    proxy.stall()
    sent = [f"m{i};".encode() for i in range(50)]
    for chunk in sent:
        connection.sendall(chunk)
    connection.settimeout(0.5)
    with pytest.raises(TimeoutError):
        connection.recv(4096)  # nothing back while it lasts
    proxy.clear()
    expected, got = b"".join(sent), b""
    connection.settimeout(2)
    while len(got) < len(expected) and (chunk := connection.recv(4096)):
        got += chunk
    assert got == expected  # every byte, in order, on the same connection
    assert _echoes(connection)


def test_latency_delays_each_direction(toxiproxy, echo):
    proxy = toxiproxy.proxy("latency", echo)
    proxy.latency(150)
    connection = _connect(proxy.listen)
    started = time.monotonic()
    assert _echoes(connection)
    assert time.monotonic() - started >= 0.3  # there and back
    proxy.clear()


def test_a_refused_call_and_a_server_that_cannot_start_are_clear_errors(toxiproxy, echo, tmp_path):
    from fixtures.network import NetworkError, Toxiproxy

    toxiproxy.proxy("twice", echo)
    with pytest.raises(NetworkError, match=r"Toxiproxy refused POST /proxies: HTTP 409 .*already exists"):
        toxiproxy.proxy("twice", echo)
    taken = Toxiproxy(tmp_path / "taken.log")
    taken.port = toxiproxy.port
    with pytest.raises(NetworkError, match=rf"Toxiproxy cannot start: port {toxiproxy.port} of 127.0.0.1 is in use"):
        taken.start()
    broken = Toxiproxy(tmp_path / "broken.log", binary=tmp_path / "toxiproxy-server")
    broken.binary.write_text("#!/bin/sh\necho 'listen tcp: address already in use' >&2\nexit 1\n")
    broken.binary.chmod(0o755)
    with pytest.raises(NetworkError, match=r"(?s)exited with status 1 at its start; its log .*address already in use"):
        broken.start()


def test_without_go_the_build_says_what_is_missing(tmp_path, monkeypatch):
    from fixtures import network

    monkeypatch.setattr(network.shutil, "which", lambda name: None)
    with pytest.raises(network.NetworkError, match="built with Go: `go` is not on PATH"):
        network.toxiproxy_binary(root=tmp_path)
