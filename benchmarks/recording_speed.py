"""Record-and-check throughput on a real broker: programs one at a time beside programs at once.

    python -m benchmarks.recording_speed [--programs 50] [--concurrency 1,16] [--seed 7]
                                         [--service-url URL --admin-url URL] [--master local[2]] [--work DIR]

A corpus of `--programs` programs per catalog spec (generate's default specs: the four
subscription types with the suites' short delays; 50 steps each) is generated once, then recorded
closed-loop against the broker and checked against the model (`traces record --target pulsar
--check`) once per `--concurrency` value, in this order, in one run, each in a fresh process.
Printed per value: events, programs, the record stage's events per second (the recording's
manifest, `seconds_last_run`: reading the corpus, recording, writing), the whole command's (Spark's
start and the check included), the CPU seconds of the command's process tree (Spark, the Python
workers and the driver processes; the broker is not in it) and the check's verdicts. With no URLs a
broker of its own is started on free ports and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.spark_diff import measured

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


def record_figures(corpus: Path, work: Path, concurrency: int, service_url: str, admin_url: str,
                   master: str) -> dict:
    out, check = work / f"rec-{concurrency}", work / f"rec-{concurrency}-check"
    wall, peak, cpu = _run(_traces("record", "--corpus", str(corpus), "--out", str(out), "--target", "pulsar",
                                   "--service-url", service_url, "--admin-url", admin_url, "--concurrency",
                                   str(concurrency), "--check", "--check-out", str(check), "--overwrite",
                                   "--master", master, "-q"), f"record --concurrency {concurrency}")
    manifest = json.loads((out / "corpus.json").read_text())
    summary = json.loads((check / "summary.json").read_text())
    return {"concurrency": concurrency, "events": manifest["events"], "programs": manifest["programs"],
            "record_seconds": manifest["seconds_last_run"], "wall": wall, "cpu": cpu, "peak_gib": peak / 2**30,
            "verdicts": summary["verdicts"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=50, help="programs per catalog spec (default 50)")
    parser.add_argument("--concurrency", default="1,16", help="values side by side, in order (default 1,16)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--service-url", default=None, help="a running broker (else one is started on free ports)")
    parser.add_argument("--admin-url", default=None)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--work", default=None, help="kept when given (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    values = [int(v) for v in args.concurrency.split(",")]
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="recording-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    own = None
    try:
        if args.service_url:
            service_url, admin_url = args.service_url, args.admin_url
        else:
            from fixtures.broker import Broker, BrokerConfig, free_port

            own = Broker(BrokerConfig(instance=f"bench-{os.getpid()}", broker_port=free_port(), web_port=free_port()))
            own.start(fresh=True)
            service_url, admin_url = own.config.service_url, own.config.admin_url
        corpus = work / "corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        _run(_traces("generate", "--out", str(corpus), "--programs", str(args.programs), "--steps", str(STEPS),
                     "--seed", str(args.seed), "--master", args.master, "-q"), "generate")
        print(f"corpus: {args.programs} programs per catalog spec, {STEPS} steps, seed {args.seed}", flush=True)
        print(f"{'concurrency':>11} {'events':>8} {'programs':>8} {'record ev/s':>11} {'command ev/s':>12} "
              f"{'CPU s':>7} {'peak GiB':>8}  verdicts", flush=True)
        for value in values:
            f = record_figures(corpus, work, value, service_url, admin_url, args.master)
            print(f"{f['concurrency']:>11} {f['events']:>8,} {f['programs']:>8} {f['events'] / f['record_seconds']:>11,.0f} "
                  f"{f['events'] / f['wall']:>12,.0f} {f['cpu']:>7.0f} {f['peak_gib']:>8.2f}  {f['verdicts']}",
                  flush=True)
    finally:
        if own is not None:
            own.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
