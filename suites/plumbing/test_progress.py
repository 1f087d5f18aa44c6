"""Progress of the long waits (fixtures/broker/progress.py): a line every few seconds of the Maven
resolve, of a broker's start (what it waits for) and of a long conformance test (programs run), to
a terminal or when asked (-v, PULSAR_CONFORMANCE_PROGRESS=1), never in a quiet CI log."""

from __future__ import annotations

import os
import stat
import textwrap

import pytest

from fixtures.broker import progress
from fixtures.broker.progress import Ticker
from suites.plumbing.test_edges import run_pytest


def test_a_ticker_says_nothing_of_a_short_wait_then_a_line_every_few_seconds():
    now = [0.0]
    said: list[str] = []
    ticker = Ticker(said.append, "waiting", every_s=5, clock=lambda: now[0])
    for t in range(0, 17):
        now[0] = float(t)
        ticker.tick(f"at {t}")
    assert said == ["waiting: at 5 (5 s)", "waiting: at 10 (10 s)", "waiting: at 15 (15 s)"]
    Ticker(None, "quiet", every_s=0).tick("nothing")  # no one to tell: nothing happens


@pytest.mark.parametrize("env, tty, expected", [
    ({}, True, True), ({"CI": "true"}, True, False), ({}, False, False),
    ({"CI": "true", progress.PROGRESS_ENV: "1"}, False, True), ({progress.PROGRESS_ENV: "0"}, True, False),
])
def test_lines_go_to_a_terminal_outside_ci_or_when_asked(monkeypatch, env, tty, expected):
    for name in ("CI", progress.PROGRESS_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("sys.stderr.isatty", lambda: tty)
    assert progress.watched() is expected


def test_a_broker_start_says_what_it_waits_for(tmp_path, monkeypatch):
    from fixtures.broker import Broker, BrokerConfig

    broker = Broker(BrokerConfig(root=tmp_path, instance="progress", broker_port=10001, web_port=10002))
    answers = iter([False] * 6 + [True] * 3)
    monkeypatch.setattr(broker.admin, "ready", lambda: next(answers))
    monkeypatch.setattr(broker.admin, "namespaces", lambda tenant: ("public/default",) if next(answers) else ())
    monkeypatch.setattr(broker.admin, "health_check", lambda: None)
    monkeypatch.setattr(broker.admin, "create_topic", lambda topic: None)
    monkeypatch.setattr(broker.admin, "delete_topic", lambda topic: None)
    monkeypatch.setattr(progress, "EVERY_S", 0.2)
    said: list[str] = []
    broker._wait_usable(None, float("inf"), said.append)
    assert said and all(line.startswith("Pulsar 4.0.7 broker starting on pulsar://127.0.0.1:10001: waiting for ")
                        for line in said)
    assert "GET /admin/v2/brokers/ready to answer 200" in said[0]


def test_the_maven_resolve_says_it_is_running(tmp_path, monkeypatch):
    from fixtures.broker.provision import resolve

    mvn = tmp_path / "bin" / "mvn"
    mvn.parent.mkdir()
    mvn.write_text(textwrap.dedent("""\
        #!/bin/sh
        for arg in "$@"; do case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac; done
        echo "Downloading from central: pulsar-broker"
        sleep 1.2
        mkdir -p "$out" && touch "$out/org.apache.pulsar.pulsar-broker-4.0.7.jar"
        """))
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{mvn.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(progress, "EVERY_S", 0.4)
    said: list[str] = []
    resolve("4.0.7", root=tmp_path / "state", say=said.append)
    assert said and said[0].startswith("resolving Pulsar 4.0.7's broker from Maven Central (once per version): mvn running")
    assert "last: Downloading from central: pulsar-broker" in said[0]


PLUGIN = """
import time

import fixtures.conformance
from fixtures.targets.model_target import ModelTarget

fixtures.conformance.PROGRAMS_EVERY_S = 0.5


class Slow(ModelTarget):
    deterministic = False

    def reset(self, spec, program_id):
        time.sleep(0.4)
        super().reset(spec, program_id)
"""


@pytest.mark.parametrize("verbose", [True, False])
def test_a_long_test_says_how_many_programs_it_ran_when_verbose(tmp_path, monkeypatch, verbose):
    (tmp_path / "slowprogress.py").write_text(PLUGIN)
    for name in ("CI", progress.PROGRESS_ENV):
        monkeypatch.delenv(name, raising=False)
    done, _ = run_pytest(tmp_path, "suites/conformance/test_individual_ack.py", "-k", "Exclusive", "-p", "slowprogress",
                         "--target", "slowprogress:Slow", "--hypothesis-profile", "dev", *(["-vv"] if verbose else []),  # -vv: run_pytest passes -q
                         timeout_s=120, path=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if "programs run (" in line]
    if verbose:
        assert lines and "test_individual_ack.py::test_individual_ack[" in lines[0]
    else:
        assert lines == []
