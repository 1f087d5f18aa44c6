"""A broker killed with `kill -9` starts again on its data, reliably (fixtures/broker/recovery.py):
the restart waits until the old process is gone to its last thread and its ports are free (a port
that stays taken is named with its holder), and the sessions the killed broker left in the
metadata store are removed first (left there, the restarted bookie's registration can loop and no
ledger can be created: "Not enough non-faulty bookies available")."""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
import threading
import time

import pytest

from fixtures.admin import AdminError
from fixtures.broker import Broker, BrokerConfig, BrokerError, free_port
from fixtures.broker.process import _MAIN_CLASS, _alive, port_in_use
from fixtures.broker.recovery import port_holders, threads_left, wait_ports_free

_SYS_EXIT = {"x86_64": 60, "aarch64": 93}  # exit(2): ends the calling thread only

# A process that passes for the broker (its command line names the main class) whose main thread
# ends at once while another thread keeps a listening socket: a JVM's state seconds after SIGKILL.
_LEFT_BEHIND = """
import ctypes, socket, sys, threading, time
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
threading.Thread(target=time.sleep, args=(float(sys.argv[2]),)).start()
print("listening", flush=True)
ctypes.CDLL(None).syscall(int(sys.argv[3]), 0)
"""


@pytest.fixture
def left_behind():
    """Start such a process holding `port` for `hold_s`; yields a starter, kills what it started."""
    started = []

    def start(port: int, hold_s: float) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-c", _LEFT_BEHIND, str(port), str(hold_s),
                                    str(_SYS_EXIT[platform.machine()]), _MAIN_CLASS],
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "listening"
        started.append(process)
        deadline = time.monotonic() + 10
        while not _main_thread_ended(process.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


def _main_thread_ended(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.skipif(platform.machine() not in _SYS_EXIT, reason="exit(2) by number on x86_64 and aarch64 only")
def test_a_broker_whose_main_thread_ended_but_whose_sockets_live_is_still_alive(left_behind):
    port = free_port()
    process = left_behind(port, hold_s=30)
    assert _main_thread_ended(process.pid) and port_in_use(port)
    assert threads_left(process.pid) == 1
    assert _alive(process.pid), "its port is still bound: a start now would find it taken"
    assert f"LISTEN (pid {process.pid}: " in port_holders(port)
    process.kill()
    deadline = time.monotonic() + 10
    while _alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(process.pid) and threads_left(process.pid) == 0 and not port_in_use(port)


def test_waiting_for_ports_returns_once_they_are_free_and_names_a_holder_that_stays():
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", free_port()))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(BrokerError, match=rf"the broker port {port}: LISTEN \(pid \d+: "):
            wait_ports_free({"broker": port}, 0.3, port_in_use)
        threading.Timer(0.3, squatter.close).start()
        started = time.monotonic()
        wait_ports_free({"broker": port}, 10, port_in_use)
    assert 0.2 < time.monotonic() - started < 5


@pytest.mark.broker
def test_a_crashed_broker_starts_again_without_the_sessions_it_left(tmp_path):
    shared_dist = BrokerConfig().root / "dist"
    (tmp_path / "dist").symlink_to(shared_dist, target_is_directory=True)
    broker = Broker(BrokerConfig(root=tmp_path, instance="crash", broker_port=free_port(), web_port=free_port(),
                                 failpoint=False))
    broker.start(fresh=True)
    try:
        broker.admin.create_topic("persistent://public/default/before-the-crash")
        broker.crash()
        log = broker.log_file.read_text(errors="replace")
        forgotten = log[log.rfind("=== forget dead sessions"):log.rindex("=== start")]
        assert "ForgetDeadSessions: walked" in forgotten, forgotten
        # The registrations it deletes ("Deleted path: /ledgers/available/...") are on disk only if
        # the store wrote them before the kill: in a CI run the walk found none to delete. What
        # matters is below: the restarted bookie finds no stale registration, and a ledger opens.
        restarted = log[log.rindex("=== start"):]
        assert "Deleting path: /ledgers/available/" not in restarted, "the bookie found a stale registration"
        broker.admin.create_topic("persistent://public/default/after-the-crash")  # a new ledger: a bookie is there
    finally:
        broker.stop()


class _Admin:
    """The admin API of a broker that is ready and healthy, whose new topics answer `created`."""

    def __init__(self, created: int | None) -> None:
        self.created, self.deleted = created, []

    def ready(self):
        return True

    def namespaces(self, tenant):
        return ("public/default",)

    def health_check(self):
        return None

    def create_topic(self, topic):
        if self.created is not None:
            raise AdminError(f"PUT {topic} -> HTTP {self.created}", status=self.created)

    def delete_topic(self, topic):
        self.deleted.append(topic)


@pytest.mark.parametrize("created, waiting", [
    (None, None),
    (409, None),  # created by an earlier try whose answer came too late
    (500, "a new topic and its ledger (PUT persistent://public/default/probe -> HTTP 500)"),
])
def test_a_broker_is_usable_only_once_a_new_topic_can_be_created(tmp_path, created, waiting):
    """The health check's topic may take writes while no new ledger can be created (a bookie whose
    registration flaps after a kill): a new topic, and so a new ledger, is the last readiness step."""
    broker = Broker(BrokerConfig(root=tmp_path, broker_port=free_port(), web_port=free_port()))
    broker.admin = _Admin(created)
    assert broker._waiting_for("persistent://public/default/probe") == waiting
    assert broker.admin.deleted == ([] if waiting else ["persistent://public/default/probe"])
