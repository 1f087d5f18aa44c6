"""The trace jobs on a real Spark cluster (a standalone master and worker, suites/traces/cluster.py),
submitted through the command line with `--master spark://...`, give what they give in local mode:
the same corpus from the same seed, the same verdicts and signatures from `check`, the same
divergences from `diff`. Nothing in them may rely on running in the driver's process. The three
jobs run in one process (suites/traces/cluster_jobs.py), one Spark session on the cluster, so that
its executors start once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from suites.traces.cluster import standalone_cluster
from suites.traces.helpers import rows
from traces import corpus as c
from traces.jobs import check, diff, generate, record
from traces.specs import parse_matrix
from traces.targets import TargetSpec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MATRIX = "subscription_type=Shared,Exclusive"
PROGRAMS, STEPS, SEED = 10, 30, 4
TIMINGS = ("seconds", "check_seconds", "partitions")  # how the work was cut and how long it took


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as url:
        yield url


def submit(master: str, *jobs: tuple) -> None:
    """The command lines, in one process on the cluster; its stderr's tail when one fails."""
    argv = [str(a) for job in jobs for a in ("--", *job)]
    done = subprocess.run([sys.executable, "-m", "suites.traces.cluster_jobs", master, *argv],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"the jobs exited {done.returncode}:\n{done.stderr[-3000:]}"


def _summary(path) -> dict:
    summary = json.loads((path / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in TIMINGS and k not in ("corpus", "expected", "observed")}


def test_the_jobs_give_on_a_standalone_cluster_what_they_give_in_local_mode(spark, cluster, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "remote"
    generate.run(spark, local / "corpus", specs=parse_matrix([MATRIX]), programs=PROGRAMS, steps=STEPS, seed=SEED)
    # A recording on a target that accepts cumulative acks on Shared: programs that break a
    # guarantee, so that the verdicts and divergences compared are not all "conforms".
    recorded = tmp_path / "recorded"
    record.run(spark, local / "corpus", recorded, target=TargetSpec(name="suites.traces.faulty:accepts_cumulative"))
    check.run(spark, recorded, local / "check")
    diff.run(spark, local / "corpus", recorded, local / "diff")

    submit(cluster,
           ("generate", "--out", remote / "corpus", "--matrix", MATRIX, "--programs", PROGRAMS, "--steps", STEPS,
            "--seed", SEED),
           ("check", "--out", remote / "check", recorded),
           ("diff", "--out", remote / "diff", local / "corpus", recorded))

    ours, theirs = c.open_corpus(spark, local / "corpus"), c.open_corpus(spark, remote / "corpus")
    columns = ours.events.columns
    assert rows(theirs.events, *columns) == rows(ours.events, *columns)
    assert rows(theirs.programs, *ours.programs.columns) == rows(ours.programs, *ours.programs.columns)

    verdicts = spark.read.parquet(str(local / "check" / "verdicts"))
    theirs = spark.read.parquet(str(remote / "check" / "verdicts"))
    assert rows(theirs, *verdicts.columns) == rows(verdicts, *verdicts.columns)
    assert _summary(remote / "check") == _summary(local / "check")
    assert _summary(local / "check")["per_guarantee"], "the recording should break a guarantee"

    divergences = spark.read.parquet(str(local / "diff" / "divergences"))
    theirs = spark.read.parquet(str(remote / "diff" / "divergences"))
    assert rows(theirs, *divergences.columns) == rows(divergences, *divergences.columns)
    assert _summary(remote / "diff") == _summary(local / "diff")
    assert _summary(local / "diff")["divergent_programs"] > 0
