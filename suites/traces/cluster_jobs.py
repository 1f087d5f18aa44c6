"""`python -m suites.traces.cluster_jobs MASTER -- ARGS -- ARGS ...`: several `traces` command
lines run one after the other in one process, so that they share one Spark session on MASTER (a
cluster's executors start once, not once per job). Exits with the first non-zero status."""

from __future__ import annotations

import sys

from traces.cli import main as traces


def main(argv: list[str]) -> int:
    master, jobs, job = argv[0], [], None
    for arg in argv[1:]:
        if arg == "--":
            job = []
            jobs.append(job)
        else:
            job.append(arg)
    for args in jobs:
        status = traces([*args, "--master", master, "--quiet"])
        if status not in (0, 1):
            return status
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
