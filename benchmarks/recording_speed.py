"""Record-and-check throughput on a real broker: programs one at a time beside programs at once.

    python -m benchmarks.recording_speed [--programs 100] [--concurrency 1,8,16] [--send-timeout-ms 5000]
                                         [--seed 7] [--service-url URL --admin-url URL] [--master local[2]]
                                         [--work DIR]

A corpus of `--programs` programs per catalog spec (generate's default specs: the four
subscription types with the suites' short delays; 50 steps each) is generated once, then recorded
closed-loop against the broker and checked against the model (`traces record --target pulsar
--check`) once per pair of a `--concurrency` value and a `--send-timeout-ms` value, in this order,
in one run, each in a fresh process (30000 is the clients' own send timeout, which every send of a
producer left on a closed topic waits out: KD-40). Printed per pair: events, programs, the record
stage's events per second (the recording's manifest, `seconds_last_run`: reading the corpus,
recording, writing), the whole command's (Spark's start and the check included), the CPU seconds of
the command's process tree (Spark, the Python workers and the driver processes) and, for a broker
the benchmark started itself (no URLs: on free ports, stopped at the end), the broker's, then the
check's verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.spark_diff import _tree, measured

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
STEPS = 50


def _traces(*args: str) -> list[str]:
    return [PYTHON, "-m", "traces", *args]


def _run(command: list[str], what: str):
    wall, peak, cpu, done = measured(command, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return wall, peak, cpu


def _cpu_seconds(pid: int | None) -> float | None:
    """The CPU seconds of process `pid` and its children so far (None: no such process to read)."""
    tree = _tree(pid) if pid is not None else {}
    return sum(seconds for _, seconds in tree.values()) if tree else None


def record_figures(corpus: Path, work: Path, concurrency: int, send_timeout_ms: int, service_url: str,
                   admin_url: str, master: str, broker_pid: int | None = None) -> dict:
    name = f"rec-{concurrency}-{send_timeout_ms}"
    out, check = work / name, work / f"{name}-check"
    before = _cpu_seconds(broker_pid)
    wall, peak, cpu = _run(_traces("record", "--corpus", str(corpus), "--out", str(out), "--target", "pulsar",
                                   "--service-url", service_url, "--admin-url", admin_url, "--concurrency",
                                   str(concurrency), "--send-timeout-ms", str(send_timeout_ms), "--check",
                                   "--check-out", str(check), "--overwrite", "--master", master, "-q"),
                           f"record --concurrency {concurrency} --send-timeout-ms {send_timeout_ms}")
    after = _cpu_seconds(broker_pid)
    manifest = json.loads((out / "corpus.json").read_text())
    summary = json.loads((check / "summary.json").read_text())
    return {"concurrency": concurrency, "send_timeout_ms": send_timeout_ms, "events": manifest["events"],
            "programs": manifest["programs"], "record_seconds": manifest["seconds_last_run"], "wall": wall,
            "cpu": cpu, "broker_cpu": after - before if before is not None and after is not None else None,
            "peak_gib": peak / 2**30, "verdicts": summary["verdicts"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=100, help="programs per catalog spec (default 100)")
    parser.add_argument("--concurrency", default="1,8,16", help="values side by side, in order (default 1,8,16)")
    parser.add_argument("--send-timeout-ms", default="5000",
                        help="values side by side, each with every --concurrency value (default 5000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--service-url", default=None, help="a running broker (else one is started on free ports)")
    parser.add_argument("--admin-url", default=None)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--work", default=None, help="kept when given (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    values = [(int(c), int(t)) for t in args.send_timeout_ms.split(",") for c in args.concurrency.split(",")]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="recording-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    own = broker_pid = None
    try:
        if args.service_url:
            service_url, admin_url = args.service_url, args.admin_url
        else:
            from fixtures.broker import Broker, BrokerConfig, free_port

            own = Broker(BrokerConfig(instance=f"bench-{os.getpid()}", broker_port=free_port(), web_port=free_port()))
            broker_pid = own.start(fresh=True).pid
            service_url, admin_url = own.config.service_url, own.config.admin_url
        corpus = work / "corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        _run(_traces("generate", "--out", str(corpus), "--programs", str(args.programs), "--steps", str(STEPS),
                     "--seed", str(args.seed), "--master", args.master, "-q"), "generate")
        print(f"corpus: {args.programs} programs per catalog spec, {STEPS} steps, seed {args.seed}", flush=True)
        print(f"{'concurrency':>11} {'send timeout':>12} {'events':>8} {'programs':>8} {'record ev/s':>11} "
              f"{'command ev/s':>12} {'CPU s':>7} {'broker CPU s':>12} {'peak GiB':>8}  verdicts", flush=True)
        for concurrency, send_timeout_ms in values:
            f = record_figures(corpus, work, concurrency, send_timeout_ms, service_url, admin_url, args.master,
                               broker_pid)
            broker = "-" if f["broker_cpu"] is None else f"{f['broker_cpu']:.0f}"
            print(f"{f['concurrency']:>11} {f['send_timeout_ms']:>10} ms {f['events']:>8,} {f['programs']:>8} "
                  f"{f['events'] / f['record_seconds']:>11,.0f} {f['events'] / f['wall']:>12,.0f} {f['cpu']:>7.0f} "
                  f"{broker:>12} {f['peak_gib']:>8.2f}  {f['verdicts']}", flush=True)
    finally:
        if own is not None:
            own.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
