"""Broker start-up figures: cold (jars not resolved yet), warm, graceful restart, crash, and memory,
each with the failpoint's Byteman agent loaded (fixtures/broker/failpoint.py) beside without it.

    python -m benchmarks.broker_start [--pulsar-version X.Y.Z] [--runs 3] [--skip-cold]

Cold resolves the class path into an empty Maven repository and an empty `.pulsar/dist`, so it
measures the download from Maven Central too. Warm starts on jars already resolved, with fresh
data. Resident memory is the broker JVM's VmRSS once usable and after publishing and consuming
2,000 messages. The runs with and without the agent alternate, so that a loaded machine weighs on
both alike.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from fixtures.broker import Broker, BrokerConfig, free_port
from fixtures.broker.config import default_version
from fixtures.broker.failpoint import agent_jar, fetch_agent
from fixtures.broker.provision import resolve


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _workload(service_url: str) -> None:
    import pulsar

    client = pulsar.Client(service_url, logger=logging.getLogger("pulsar.client"))
    try:
        consumer = client.subscribe("persistent://public/default/bench-rss", "bench",
                                    consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer("persistent://public/default/bench-rss", block_if_queue_full=True)
        for n in range(2000):
            producer.send_async(str(n).encode(), lambda *_: None)
        producer.flush()
        for _ in range(2000):
            consumer.acknowledge(consumer.receive(10_000))
    finally:
        client.close()


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulsar-version", default=default_version())
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-cold", action="store_true")
    args = parser.parse_args()
    version = args.pulsar_version
    print(f"Pulsar {version} standalone, figures in seconds (median of {args.runs} where repeated)")

    if not args.skip_cold:
        with tempfile.TemporaryDirectory() as scratch:
            scratch_path = Path(scratch)
            cold = _timed(lambda: resolve(version, root=scratch_path, maven_repo=scratch_path / "m2", quiet=True))
            jars = len(list((scratch_path / "dist" / version / "lib").glob("*.jar")))
            size = sum(p.stat().st_size for p in (scratch_path / "dist" / version / "lib").glob("*.jar")) / 2**20
        print(f"cold resolve from Maven Central : {cold:6.1f}  ({jars} jars, {size:.0f} MiB)")
    resolve(version)

    fetch_agent()
    figures = {with_agent: {name: [] for name in ("start", "restart", "crash", "stop", "rss_idle", "rss_busy")}
               for with_agent in (True, False)}
    with tempfile.TemporaryDirectory() as scratch:
        roots = {}
        for with_agent in (True, False):
            root = roots[with_agent] = Path(scratch) / ("with" if with_agent else "without")
            root.mkdir()
            (root / "dist").symlink_to(BrokerConfig().root / "dist", target_is_directory=True)
            if with_agent:
                agent_jar(root).parent.mkdir(parents=True)
                agent_jar(root).symlink_to(agent_jar())
        for _ in range(args.runs):
            for with_agent, root in roots.items():
                got = figures[with_agent]
                broker = Broker(BrokerConfig(version=version, root=root, instance="bench", failpoint=with_agent,
                                             broker_port=free_port(), web_port=free_port()))
                got["start"].append(_timed(lambda: broker.start(fresh=True)))
                assert broker.has_failpoint() == with_agent
                got["rss_idle"].append(_rss_mib(broker.status().pid))
                _workload(broker.config.service_url)
                got["rss_busy"].append(_rss_mib(broker.status().pid))
                got["restart"].append(_timed(broker.restart))
                got["crash"].append(_timed(broker.crash))
                got["stop"].append(_timed(broker.stop))
    median = statistics.median
    rows = (("warm start to usable (fresh data)", "start", "s"), ("graceful restart (stop + start)", "restart", "s"),
            ("crash (kill -9 + start)", "crash", "s"), ("graceful stop", "stop", "s"),
            ("resident memory once usable", "rss_idle", "MiB"), ("resident memory after 2k msgs", "rss_busy", "MiB"))
    print(f"{'':34s} {'with the failpoint':>20s} {'without':>12s}")
    for label, name, unit in rows:
        cells = [f"{median(figures[w][name]):.1f} {unit}" if unit == "s" else f"{median(figures[w][name]):.0f} {unit}"
                 for w in (True, False)]
        print(f"{label:34s} {cells[0]:>20s} {cells[1]:>12s}")

if __name__ == "__main__":
    main()
