"""The Java driver's start: time to its hello reply, with its class-data archive beside without.

    python -m benchmarks.java_driver_start [--starts 10] [--pulsar-version X.Y.Z]

A conformance run starts a fresh driver process at every client crash its programs make
(`crash_client`), and the Java driver is a JVM: its start is the larger part of a crash's cost.
Each start here is a driver process given a hello (its client built; no broker is needed: the
client connects at its first producer or consumer) and a close; the two commands alternate, the
one `drivers.java.build.command` gives (with `-XX:SharedArchiveFile`, the archive a run with
`--client java` made on its broker) and the same without the archive. Printed: the median and the slowest time to the hello's reply, and to the process's exit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

from drivers import wire
from drivers.java.build import command


def _start(argv: tuple[str, ...]) -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    process.stdin.write(json.dumps(wire.hello("pulsar://127.0.0.1:6650")) + "\n")
    process.stdin.flush()
    reply = json.loads(process.stdout.readline())
    hello = time.perf_counter() - started
    if reply.get("client") != "java":
        raise SystemExit(f"the driver's hello reply is not the Java client's: {reply}")
    process.stdin.write(json.dumps({"type": "close"}) + "\n")
    process.stdin.flush()
    process.wait(timeout=60)
    return hello, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10, help="driver starts per command")
    parser.add_argument("--pulsar-version", default=None)
    args = parser.parse_args()
    shared = command(args.pulsar_version)
    plain = command(args.pulsar_version, archive=False)
    if plain == shared:
        raise SystemExit("no class-data archive for this JVM yet: the first run with --client java makes it on its "
                         "broker (drivers/java/warm.py); nothing to compare")
    runs: dict[str, list[tuple[float, float]]] = {"with the archive": [], "without": []}
    for _ in range(args.starts):
        runs["with the archive"].append(_start(shared))
        runs["without"].append(_start(plain))
    print(f"Java driver starts ({args.starts} each, alternating): hello reply / process exit, median and slowest")
    for name, times in runs.items():
        hellos, exits = [t[0] for t in times], [t[1] for t in times]
        print(f"  {name:17s} {statistics.median(hellos):5.2f} s (max {max(hellos):4.2f}) / "
              f"{statistics.median(exits):5.2f} s (max {max(exits):4.2f})")


if __name__ == "__main__":
    main()
