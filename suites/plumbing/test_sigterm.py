"""A pytest run ended by SIGTERM tears its session down as Ctrl-C does (fixtures/pulsar.py): its
brokers and proxies are stopped, not left running for the next run's reaper."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

from fixtures.broker.config import PROJECT_ROOT

_TEST = textwrap.dedent("""
    import time
    import pytest

    @pytest.fixture(scope="session")
    def held(tmp_path_factory):
        yield
        open({marker!r}, "w").write("torn down")

    def test_waits(held):
        print("started", flush=True)
        time.sleep(60)
""")


def test_a_run_ended_by_sigterm_tears_its_session_fixtures_down(tmp_path):
    marker = tmp_path / "teardown"
    (tmp_path / "test_waits.py").write_text(_TEST.format(marker=str(marker)))
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "fixtures.pulsar",
                            str(tmp_path / "test_waits.py")],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"})
    try:
        for line in run.stdout:
            if "started" in line:
                break
        run.send_signal(signal.SIGTERM)
        output = run.communicate(timeout=30)[0]
    finally:
        run.kill()
    assert marker.read_text() == "torn down", output
    assert "KeyboardInterrupt" in output and "SIGTERM" in output, output
