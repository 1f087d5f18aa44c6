"""The CI gate: a run's results against a baseline of accepted divergences (reports/baseline.py).

    python -m reports.gate --results reports/out/summary.json --baseline reports/baseline.json
    python -m reports.gate accept AREA SPEC_ID GUARANTEE --reason ... --evidence ...   (adds an entry)
    python -m reports.gate accept-crash AREA SPEC_ID --log TEXT --reason ... --evidence ...   (a known crash)

A failed cell whose broken guarantee the baseline accepts for that area and spec id, with the same
signature (reports/signatures.py: the class of the detail, the shape of the shrunk program), on
the run's target and client (an entry's `client`: the driver's name, optionally `==version`; none:
any client), is an accepted divergence (of two entries that match, the one whose program shape matches too gives
the reason); any other is new, even in a cell with an accepted one, and a Rust client's accepted
finding is new when the Python client shows it. A baseline entry whose cell now passes is not shown
(fixed, or not reached: most are races, or need a program shape a run may not draw); one for a
client this run did not drive is not in this run. An unknown cell is shown as unknown with its kind, never as a pass; one where the client
crashed the way a baseline crash entry says (its log line: a known client bug) stays unknown but
does not fail the gate. A run that decided nothing (every cell unknown or not applicable, or no
program run) fails the gate even with --allow-unknown: a target that never loaded is not a pass.

Exit status: 0 the gate passes; 1 new divergences, or nothing checked, or unknown cells (unless
--allow-unknown), or entries not shown with --fail-on-fixed; 2 a missing or malformed results or
baseline file, or an `accept` of a cell the run did not fail. The verdict is printed as markdown,
written to --markdown (default: gate.md next to the results) and appended to $GITHUB_STEP_SUMMARY
when GitHub Actions sets it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fixtures.kit import command
from reports.baseline import PARTS, accept, accept_crash, known_crash, load_baseline, run_client, write_baseline
from reports.markdown import gate_markdown
from reports.results import InputError, Summary, load_summary
from reports.signatures import differences, signature
from reports.verdicts import Baseline, Divergence, Judgement
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN

EXIT_PASS, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


LOCAL_BASELINE = Path("reports/baseline.json")  # a project's own, next to its reports (this repository's too)
KIT_BASELINE = Path(__file__).resolve().parent / "baseline.json"  # shipped with the kit


def judge(summary: Summary, baseline: Baseline, *, allow_unknown: bool = False,
          fail_on_fixed: bool = False, rerun: Summary | None = None) -> Judgement:
    """`rerun`: the failed cells run once more; a failure the baseline does not accept whose cell
    did not repeat it there (it passed) is reported as not repeated, not new: a real broker's rare
    choice, or a race."""
    if not summary.results:
        raise InputError("results: no conformance test ran (did the run select any test under suites/conformance?)")
    target = summary.run.get("target")
    ours = [e for e in baseline.accepted if e.target in (None, target)]
    entries = [e for e in ours if e.for_client(summary.run)]
    new, accepted, unsigned, mismatched, not_repeated = [], [], [], {}, []
    for result in summary.results:
        if result.outcome != FAILED:
            continue
        again = rerun.result(result.area, result.spec_id) if rerun is not None else None
        repeated = again is None or again.outcome != PASSED
        for violation in result.violations:
            if violation.undecided:
                continue
            cell = [e for e in entries if (e.area, e.spec_id, e.guarantee) == (result.area, result.spec_id,
                                                                                violation.guarantee)]
            found = violation.signature or signature(violation.detail)
            # The entry that says most about what was seen: one whose program shape matches too is
            # the failure's own reason, where another entry of the cell matches its detail alone.
            entry = max((e for e in cell if e.signature is None or not differences(e.signature, found)),
                        key=_specificity, default=None)
            if entry is None and not repeated:
                if result not in not_repeated:
                    not_repeated.append(result)
                continue
            if entry is None:
                why = "; ".join(f"accepted with another signature: {', '.join(differences(e.signature, found))}"
                                for e in cell) or "not in the baseline"
                new.append(Divergence(result=result, guarantee=violation.guarantee, detail=violation.detail, why=why))
                for e in cell:
                    mismatched[id(e)] = "the cell fails on this guarantee with another signature (listed as new)"
                continue
            if (entry, result) not in accepted:
                accepted.append((entry, result))
            if entry.signature is None and entry not in unsigned:
                unsigned.append(entry)
    matched = [e for e, _ in accepted]
    fixed, unconfirmed = [], []
    for entry in entries:
        result = summary.result(entry.area, entry.spec_id)
        if entry in matched:
            continue
        if result is None:
            unconfirmed.append((entry, "not in this run"))
        elif result.outcome == PASSED:
            fixed.append((entry, result))
        elif result.outcome in (NOT_APPLICABLE, UNKNOWN):
            reason = result.reason or "no reason recorded"
            # A crash's reason starts with its kind ("client crashed: ..."): said once.
            said = result.outcome if result.reason_kind and reason.startswith(result.reason_kind) else result.verdict()
            unconfirmed.append((entry, f"{said}: {reason}"))
        elif id(entry) in mismatched:
            unconfirmed.append((entry, mismatched[id(entry)]))
        elif entry.guarantee not in result.guarantees:
            unconfirmed.append((entry, f"the cell now fails on {', '.join(sorted(result.guarantees))} instead, "
                                       "which stops the program before this one could show"))
    crashed = tuple((known, r) for r in summary.results if r.outcome == UNKNOWN
                    for known in [known_crash(baseline, summary, r)] if known is not None)
    explained = {id(r) for _, r in crashed}
    return Judgement(summary=summary, new=tuple(new), accepted=tuple(accepted), fixed=tuple(fixed),
                     unknown=tuple(r for r in summary.results if r.outcome == UNKNOWN and id(r) not in explained),
                     crashed=crashed,
                     unconfirmed=tuple(unconfirmed), unsigned=tuple(unsigned),
                     other_clients=tuple(e for e in ours if e not in entries),
                     nothing_checked=nothing_checked(summary), allow_unknown=allow_unknown,
                     fail_on_fixed=fail_on_fixed, not_repeated=tuple(not_repeated))


def _specificity(entry) -> int:
    """How much of a failure an entry's signature pins down: none (an entry written before
    signatures) < {} (any failure of the guarantee) < the detail < the detail and the program."""
    return -1 if entry.signature is None else len(entry.signature)


def nothing_checked(summary: Summary) -> str | None:
    """Why the run decided nothing about Pulsar, or None when some cell passed or failed having run programs."""
    decided = [r for r in summary.results if r.outcome in (PASSED, FAILED)]
    if not decided:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in summary.totals().items() if n)
        return f"no cell passed or failed ({counts}): the run checked nothing about Pulsar"
    counted = [r.examples for r in decided if r.examples is not None]
    if len(counted) == len(decided) and not any(counted):
        return f"the {len(decided)} decided cell(s) ran 0 programs: the run checked nothing about Pulsar"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["accept"]:
        return accept_main(argv[1:])
    if argv[:1] == ["accept-crash"]:
        return accept_crash_main(argv[1:])
    parser = argparse.ArgumentParser(prog=command("reports.gate"),
                                     description="Compare a conformance run with a baseline of accepted divergences.")
    parser.add_argument("--results", type=Path, default=Path("reports/out/summary.json"),
                        help="summary.json of the run (default: %(default)s)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help=f"accepted divergences (default: {LOCAL_BASELINE} when there is one, else the kit's "
                             "own: the known divergences of the clients it drives, KNOWN_DIVERGENCES.md)")
    parser.add_argument("--allow-unknown", action="store_true", help="unknown cells do not fail the gate")
    parser.add_argument("--fail-on-fixed", action="store_true",
                        help="baseline entries whose cell passed in this run (fixed, or not reached) fail the gate")
    parser.add_argument("--rerun", type=Path, default=None,
                        help="summary.json of the failed cells run once more (pytest --last-failed): a failure whose "
                             "cell passed there did not repeat, and is shown without failing the gate")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="where to write the verdict as markdown (default: gate.md next to the results)")
    args = parser.parse_args(argv)
    if args.baseline is None:
        args.baseline = LOCAL_BASELINE if LOCAL_BASELINE.exists() else KIT_BASELINE
        print(f"baseline: {args.baseline}", file=sys.stderr)
    try:
        judgement = judge(load_summary(args.results), load_baseline(args.baseline),
                          allow_unknown=args.allow_unknown, fail_on_fixed=args.fail_on_fixed,
                          rerun=load_summary(args.rerun) if args.rerun else None)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    text = gate_markdown(judgement)
    print(text)
    for entry in judgement.unsigned:
        print(f"warning: baseline entry {entry.area} [{entry.spec_id}] {entry.guarantee} has no signature, so any "
              f"failure of {entry.guarantee} in that cell passes as accepted; re-accept it with: "
              f"{command('reports.gate')} accept {entry.area} {entry.spec_id} {entry.guarantee} "
              f"--results {args.results} --baseline {args.baseline} --reason ... --evidence ...", file=sys.stderr)
    (args.markdown or args.results.parent / "gate.md").write_text(text)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a") as out:
            out.write(text + "\n")
    return EXIT_PASS if judgement.passed else EXIT_FAIL


def _entry_arguments(parser: argparse.ArgumentParser, run: str) -> None:
    """What every baseline entry is written from: the cell, why, the evidence, the run, the baseline."""
    parser.add_argument("area", help="the cell's area (the test name without test_)")
    parser.add_argument("spec_id", help="the cell's spec id (Shared, Key_Shared-dlq2, ...)")
    parser.add_argument("--reason", required=True, help="why it is accepted")
    parser.add_argument("--evidence", required=True, help="the issue, test or run that shows it")
    parser.add_argument("--results", type=Path, default=Path("reports/out/summary.json"),
                        help=f"summary.json of {run} (default: %(default)s)")
    parser.add_argument("--baseline", type=Path, default=Path("reports/baseline.json"),
                        help="the baseline to add it to, created when missing (default: %(default)s)")


def accept_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"{command('reports.gate')} accept",
                                     description="Accept a divergence of a run into a baseline, with its signature.")
    _entry_arguments(parser, "the run that failed it")
    parser.add_argument("guarantee", help="the guarantee it broke (model/guarantees.py)")
    parser.add_argument("--any-target", action="store_true",
                        help="accept it whatever --target a run has (default: only the run's own target)")
    parser.add_argument("--any-client", action="store_true",
                        help="accept it whatever client a run drives (default: only the client this run drove, "
                             "by name: a finding is the client's)")
    parser.add_argument("--client-version", action="store_true",
                        help="accept it for this run's client at this version only (client NAME==VERSION)")
    parser.add_argument("--match", choices=("both", *PARTS, "none"), default="both",
                        help="which part of the signature must match: the detail's class, the program's "
                             "shape, both (default), or none (any failure of the guarantee in the cell)")
    args = parser.parse_args(argv)
    if args.any_client and args.client_version:
        parser.error("--any-client and --client-version contradict each other")
    try:
        summary = load_summary(args.results)
        baseline = load_baseline(args.baseline) if args.baseline.exists() else Baseline()
        updated, entry, replaced = accept(
            summary, baseline, area=args.area, spec_id=args.spec_id, guarantee=args.guarantee,
            reason=args.reason, evidence=args.evidence,
            target=None if args.any_target else summary.run.get("target"),
            client=None if args.any_client else run_client(summary, with_version=args.client_version),
            parts={"both": PARTS, "none": ()}.get(args.match, (args.match,)))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    write_baseline(updated, args.baseline)
    shown = ", ".join(f"{k} `{v}`" for k, v in (entry.signature or {}).items()) or "any signature"
    print(f"accepted {entry.area} [{entry.spec_id}] {entry.guarantee} for target {entry.target or 'any'}, "
          f"client {entry.client or 'any'} ({shown}) into {args.baseline}")
    for old in replaced:
        print(f"  replacing the entry for target {old.target or 'any'}, client {old.client or 'any'}, "
              f"signature {old.signature or 'none'}")
    return EXIT_PASS


def accept_crash_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"{command('reports.gate')} accept-crash",
                                     description="Accept a client crash of a run, known by a line of the client's "
                                                 "log, into a baseline: the cell stays unknown but passes the gate.")
    _entry_arguments(parser, "the run where the client crashed")
    parser.add_argument("--log", required=True, help="text of the crash's record (its signal or the end of the "
                                                     "client's log) that names the client bug")
    parser.add_argument("--any-target", action="store_true", help="whatever --target a run has")
    parser.add_argument("--client-version", action="store_true",
                        help="for this run's client at this version only (client NAME==VERSION)")
    args = parser.parse_args(argv)
    try:
        summary = load_summary(args.results)
        baseline = load_baseline(args.baseline) if args.baseline.exists() else Baseline()
        client = run_client(summary, with_version=args.client_version)
        if client is None:
            raise InputError("accept-crash: this run drove no client process (an in-process target has no crash "
                             "to accept)")
        updated, entry, replaced = accept_crash(
            summary, baseline, area=args.area, spec_id=args.spec_id, log=args.log, reason=args.reason,
            evidence=args.evidence, target=None if args.any_target else summary.run.get("target"), client=client)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    write_baseline(updated, args.baseline)
    print(f"accepted the crash of client {entry.client} in {entry.area} [{entry.spec_id}] (log: {entry.log!r}) "
          f"for target {entry.target or 'any'} into {args.baseline}"
          + (f", replacing {len(replaced)} entry" if replaced else ""))
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
