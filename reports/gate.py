"""The CI gate: a run's results against a baseline of accepted divergences.

    python -m reports.gate --results reports/out/summary.json --baseline reports/baseline.json

A failed cell whose broken guarantee the baseline accepts for that area and spec id is an accepted
divergence; any other is new. A baseline entry whose cell now passes is fixed (time to remove it).
An unknown cell (an undecided check, an error that is not a conformance failure) is shown as
unknown, never as a pass. The baseline (see reports/README.md) is

    {"schema": "pulsar-ack-conformance/baseline/1", "description": "...",
     "accepted": [{"area": "...", "spec_id": "...", "guarantee": "...", "reason": "...", "evidence": "...",
                   "target": "pulsar"}]}            # target: optional, the entry applies to that --target only

Exit status: 0 the gate passes; 1 new divergences, or unknown cells (unless --allow-unknown), or
fixed entries with --fail-on-fixed; 2 a missing or malformed results or baseline file. The verdict
is printed as markdown, written to --markdown (default: gate.md next to the results) and appended
to $GITHUB_STEP_SUMMARY when GitHub Actions sets it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from model.guarantees import Guarantee
from reports.markdown import gate_markdown
from reports.results import FAILED, PASSED, SKIPPED, UNKNOWN, InputError, Summary, load_summary, read_json
from reports.verdicts import Accepted, Baseline, Judgement

BASELINE_SCHEMA = "pulsar-ack-conformance/baseline/1"
REQUIRED = ("area", "spec_id", "guarantee", "reason", "evidence")
EXIT_PASS, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


def load_baseline(path: Path) -> Baseline:
    where = f"baseline {path}"
    raw = read_json(Path(path), "baseline")
    if not isinstance(raw, dict) or raw.get("schema") != BASELINE_SCHEMA:
        raise InputError(f"{where}: not a baseline (expected \"schema\": \"{BASELINE_SCHEMA}\")")
    extra = sorted(set(raw) - {"schema", "description", "accepted"})
    if extra:
        raise InputError(f"{where}: unknown top-level fields {extra} (allowed: schema, description, accepted)")
    if not isinstance(raw.get("accepted"), list):
        raise InputError(f"{where}: \"accepted\" must be a list of entries (it may be empty)")
    entries = tuple(_entry(item, f"{where}: accepted[{i}]") for i, item in enumerate(raw["accepted"]))
    keys = [(e.area, e.spec_id, e.guarantee, e.target) for e in entries]
    twice = sorted({f"{a} [{s}] {g}" for a, s, g, _ in keys if keys.count((a, s, g, _)) > 1})
    if twice:
        raise InputError(f"{where}: accepted more than once: {', '.join(twice)}")
    return Baseline(accepted=entries, description=str(raw.get("description") or ""))


def _entry(item: object, where: str) -> Accepted:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object with {', '.join(REQUIRED)}")
    unknown = sorted(set(item) - set(REQUIRED) - {"target"})
    missing = [name for name in REQUIRED if not (isinstance(item.get(name), str) and item[name].strip())]
    if unknown or missing:
        raise InputError(f"{where}: " + "; ".join(
            ([f"unknown fields {unknown}"] if unknown else []) + ([f"missing or empty {missing}"] if missing else [])))
    if item["guarantee"] not in {g.value for g in Guarantee}:
        raise InputError(f"{where}: unknown guarantee {item['guarantee']!r} "
                         f"(one of {', '.join(g.value for g in Guarantee)})")
    if "target" in item and not isinstance(item["target"], str):
        raise InputError(f"{where}: \"target\" must be text (a --target value)")
    return Accepted(**item)


def judge(summary: Summary, baseline: Baseline, *, allow_unknown: bool = False,
          fail_on_fixed: bool = False) -> Judgement:
    if not summary.results:
        raise InputError("results: no conformance test ran (did the run select any test under suites/conformance?)")
    target = summary.run.get("target")
    entries = [e for e in baseline.accepted if e.target in (None, target)]
    accepts = {(e.area, e.spec_id, e.guarantee): e for e in entries}
    new, accepted = [], []
    for result in summary.results:
        if result.outcome != FAILED:
            continue
        for violation in result.violations:
            entry = accepts.get((result.area, result.spec_id, violation.guarantee))
            if violation.undecided:
                continue
            if entry is None:
                new.append((result, violation.guarantee, violation.detail))
            elif (entry, result) not in accepted:
                accepted.append((entry, result))
    fixed, unconfirmed = [], []
    for entry in entries:
        result = summary.result(entry.area, entry.spec_id)
        if result is None:
            unconfirmed.append((entry, "not in this run"))
        elif result.outcome == PASSED:
            fixed.append((entry, result))
        elif result.outcome in (SKIPPED, UNKNOWN):
            unconfirmed.append((entry, f"{result.outcome}: {result.reason or 'no reason recorded'}"))
        elif entry.guarantee not in result.guarantees:
            unconfirmed.append((entry, f"the cell now fails on {', '.join(sorted(result.guarantees))} instead, "
                                       "which stops the program before this one could show"))
    return Judgement(summary=summary, new=tuple(new), accepted=tuple(accepted), fixed=tuple(fixed),
                     unknown=tuple(r for r in summary.results if r.outcome == UNKNOWN),
                     unconfirmed=tuple(unconfirmed), allow_unknown=allow_unknown, fail_on_fixed=fail_on_fixed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.gate",
                                     description="Compare a conformance run with a baseline of accepted divergences.")
    parser.add_argument("--results", type=Path, default=Path("reports/out/summary.json"),
                        help="summary.json of the run (default: %(default)s)")
    parser.add_argument("--baseline", type=Path, default=Path("reports/baseline.json"),
                        help="accepted divergences (default: %(default)s)")
    parser.add_argument("--allow-unknown", action="store_true", help="unknown cells do not fail the gate")
    parser.add_argument("--fail-on-fixed", action="store_true",
                        help="baseline entries that no longer diverge fail the gate (keeps the baseline tidy)")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="where to write the verdict as markdown (default: gate.md next to the results)")
    args = parser.parse_args(argv)
    try:
        judgement = judge(load_summary(args.results), load_baseline(args.baseline),
                          allow_unknown=args.allow_unknown, fail_on_fixed=args.fail_on_fixed)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    text = gate_markdown(judgement)
    print(text)
    (args.markdown or args.results.parent / "gate.md").write_text(text)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a") as out:
            out.write(text + "\n")
    return EXIT_PASS if judgement.passed else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
