"""How often a failure reproduces: each failing example's program replayed N times on its target.

A failure found at nightly depth that does not fail again when replayed once may be a rare choice
the broker makes or a one-off; replaying it N times on the same target and saying "reproduced k of
N" lets a user tell which. A replay runs the stored program's ops (failures/<stem>.jsonl) in
lock-step with the model, then the drain that found it again (the sidecar's `drained`: receive until
nothing more comes, then the drain check), exactly as the printed reproduction does; it reproduces
when it breaks the same guarantee. A replay that
raises anything else (the client crashed, the target errored) is counted apart, never as a
reproduction.

Two ways to run it:

    pytest suites/conformance --target pulsar --replay-failures 5     # in the run, on its live target
    python -m reports.replay_failures reports/out --times 5           # afterwards, on a target loaded again

The command reads `summary.json` and `failures/`, loads the target the failure was seen on (its
sidecar's `target`; `--service-url`, `--admin-url` and `--client` for a real broker), and rewrites
summary.json, summary.md and report.html with each failure's `replayed` counts.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from dataclasses import replace
from pathlib import Path

from model.history import op_of
from reports import failures as stored
from reports.results import InputError, ReportedViolation, Summary, load_summary, write_summary


def replay_times(target, spec, ops, *, guarantee: str, drained, times: int) -> dict[str, int]:
    """Replay `ops` on `target` `times` times: {"times", "reproduced", "errors"}."""
    from fixtures.targets.lockstep import ConformanceFailure, Lockstep
    from fixtures.targets.replay import drain_again

    reproduced = errors = 0
    for attempt in range(times):
        try:
            run = Lockstep(target, spec, f"replay-{uuid.uuid4().hex[:8]}-{attempt}")
            for op in ops:
                run.do(op)
            if drained:
                drain_again(run, drained)
        except ConformanceFailure as failure:
            violation = failure.violation
            reproduced += violation.guarantee.value == guarantee and not violation.undecided
        except Exception:  # noqa: BLE001 - a replay that could not run is counted, never a reproduction
            errors += 1
    return {"times": times, "reproduced": reproduced, "errors": errors}


def replay_stored(target, folder: Path, violation: ReportedViolation, times: int) -> dict[str, int]:
    """Replay the failure kept under `folder` (failures/) for `violation`."""
    found = stored.read_failure(folder, violation.failure)
    if not found.events:
        raise InputError(f"{folder / violation.failure}.jsonl: no events to replay")
    from model.history import spec_of

    ops = [op_of(e) for e in found.events]
    return replay_times(target, spec_of(found.events[0].spec), ops, guarantee=violation.guarantee,
                        drained=found.expectation.get("drained"), times=times)


def replay_run(folder: Path, times: int, load) -> Summary:
    """Replay every decided failure of the run in `folder` on `load(target name)`; rewrite its reports."""
    summary = load_summary(folder / "summary.json")
    targets: dict[str, object] = {}
    results = []
    try:
        for result in summary.results:
            violations = []
            for v in result.violations:
                if v.failure and not v.undecided and (folder / "failures" / f"{v.failure}.jsonl").is_file():
                    name = str(stored.read_failure(folder / "failures", v.failure).expectation.get("target")
                               or result.target or summary.run.get("target"))
                    target = targets.get(name) or targets.setdefault(name, load(name))
                    v = replace(v, replayed=replay_stored(target, folder / "failures", v, times))
                violations.append(v)
            results.append(replace(result, violations=tuple(violations)))
    finally:
        for target in targets.values():
            target.close()
    updated = replace(summary, results=tuple(results))
    write_summary(updated, folder / "summary.json")
    from reports.html import write_report
    from reports.markdown import summary_markdown

    (folder / "summary.md").write_text(summary_markdown(updated, failures_dir="failures"))
    write_report(folder)
    return updated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.replay_failures",
                                     description="Replay each failure of a run N times on its target.")
    parser.add_argument("folder", type=Path, help="a reports folder (summary.json and failures/)")
    parser.add_argument("--times", type=int, default=5, help="replays per failure (default: %(default)s)")
    parser.add_argument("--service-url", help="the broker's service URL, for a failure seen on --target pulsar")
    parser.add_argument("--admin-url", help="the broker's admin URL, for a failure seen on --target pulsar")
    parser.add_argument("--client", default="python", help="the client for --target pulsar (default: python)")
    from fixtures.credentials import OPTIONS

    for flag, settings in OPTIONS:  # for --service-url and --admin-url
        parser.add_argument(flag, **settings)
    args = parser.parse_args(argv)
    if args.times < 1:
        parser.error("--times must be at least 1")
    from fixtures.credentials import CredentialsError, from_options
    from fixtures.targets.loader import TargetLoadError, load_target

    def load(name: str):
        if name == "pulsar" and not (args.service_url and args.admin_url):
            raise InputError("a failure seen on --target pulsar replays on a broker: give --service-url and "
                             "--admin-url of the broker the run used")
        return load_target(name, seed=0, service_url=args.service_url, admin_url=args.admin_url, client=args.client,
                           credentials=from_options(lambda option: getattr(args, option)))

    try:
        summary = replay_run(args.folder, args.times, load)
    except (InputError, TargetLoadError, CredentialsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for result in summary.results:
        for v in result.violations:
            if v.replayed:
                print(f"{result.area} [{result.spec_id}] {v.guarantee}: {v.replayed_text()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
