"""The Java driver's class-data archive (drivers/java/warm.py): made on the broker by a short
program whose producer and consumer classes it holds, mapped by every driver started after it; an
archive the JVM cannot use costs only time, never a line in the protocol."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from drivers import wire
from drivers.java import build as java_build
from drivers.java.warm import WarmUp, make_archive
from fixtures.admin import AdminClient, AdminError
from model.spec import Spec

pytestmark = pytest.mark.broker


def _plain(version: str | None) -> tuple[str, ...]:
    """The driver's command without its archive."""
    return java_build.command(version, archive=False)


def _hello_and_close(command, service_url: str, *requests: dict) -> tuple[list[dict], str]:
    """The driver's replies (its stdout, line by line, as JSON) and its stderr."""
    lines = [wire.hello(service_url), *requests, wire.close()]
    done = subprocess.run(command, input="".join(json.dumps(r) + "\n" for r in lines), capture_output=True,
                          text=True, timeout=120)
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_the_archive_is_made_on_the_broker_and_holds_the_consumer_s_classes(pulsar_broker, tmp_path):
    admin = AdminClient(pulsar_broker.admin_url)
    topic = f"persistent://public/default/java-warm-up-{time.monotonic_ns()}"
    archive = tmp_path / "driver.jsa"
    plain = _plain(pulsar_broker.version)
    assert make_archive(plain, archive, WarmUp(pulsar_broker.service_url, None, topic, admin.delete_topic))
    assert not list(tmp_path.glob(".driver.jsa.*"))  # the scratch copy became the archive
    with pytest.raises(AdminError) as gone:
        admin.subscriptions(topic)
    assert gone.value.status == 404  # the program's topic is gone

    # -Xshare:on: a JVM that cannot map the archive does not start at all.
    cp = plain.index("-cp")
    mapped = (*plain[:cp], "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-Xlog:class+load=info:stderr",
              *plain[cp:])
    other = f"persistent://public/default/java-warm-up-mapped-{time.monotonic_ns()}"
    replies, stderr = _hello_and_close(mapped, pulsar_broker.service_url, wire.reset(Spec(), other, "s"),
                                       {"type": "op", "op": "subscribe", "consumer": "c0"})
    assert replies[0]["client"] == "java" and replies[2]["outcome"] == "ok"
    loaded = [line for line in stderr.splitlines() if "org.apache.pulsar.client.impl.NegativeAcksTracker " in line]
    assert loaded and "shared objects file" in loaded[0], loaded  # from the archive, not the jar
    admin.delete_topic(other)


def test_an_archive_that_cannot_be_made_leaves_nothing_behind(tmp_path):
    deleted = []
    archive = tmp_path / "driver.jsa"
    assert not make_archive(("false",), archive, WarmUp("pulsar://127.0.0.1:1", None, "t", deleted.append))
    assert list(tmp_path.iterdir()) == [] and deleted == ["t"]


def test_the_jvm_s_own_warnings_go_to_stderr_never_into_the_protocol(tmp_path):
    """A JVM dumping its classes warns of those it skips, on stdout unless told otherwise: every
    line the driver writes there must be a reply of the protocol."""
    plain = _plain(None)
    command = (plain[0], f"-XX:ArchiveClassesAtExit={tmp_path / 'driver.jsa'}", *plain[1:])
    replies, stderr = _hello_and_close(command, "pulsar://127.0.0.1:6650")  # each stdout line read as JSON
    assert replies[0]["client"] == "java" and replies[-1] == {"id": None, "outcome": "ok"}
    assert "[warning][cds]" in stderr
