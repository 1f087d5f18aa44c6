"""summary.md of `traces check`: the counts and the signatures of summary.json, for people (plain
GitHub-flavoured tables, the marks of reports/markdown.py). It reads results, never decides them."""

from __future__ import annotations

from model.guarantees import Guarantee
from reports.markdown import MARK
from reports.vocabulary import FAILED, PASSED, UNKNOWN
from traces.check import CONFORMS, CRASH, HARNESS, MALFORMED, SOLVER, UNKNOWN as CHECK_UNKNOWN, VIOLATION

MARKS = {CONFORMS: MARK[PASSED], VIOLATION: MARK[FAILED], CHECK_UNKNOWN: MARK[UNKNOWN]}
REASONS = {
    SOLVER: "Z3 could not decide a cursor read within its resource limit",
    HARNESS: "the recording could not perform an op (an event failed with TargetError)",
    MALFORMED: "the program cannot be checked (a spec or op that does not read back, steps other than 0..n-1, "
               "times that go back, an op on a consumer the model has not connected)",
    CRASH: "the checker raised",
}
SHOWN = 50


def _cell(text: object) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _promise(name: str) -> str:
    try:
        return Guarantee(name).promise
    except ValueError:
        return ""


def _recorded_on(found: dict) -> str:
    said = [f"Pulsar {found['pulsar']}"] if found.get("pulsar") else []
    said += [f"client {found['client']}"] if found.get("client") else []
    return f" ({', '.join(said)})" if said else ""


def markdown(summary: dict) -> str:
    verdicts = summary["verdicts"]
    lines = [
        "# Trace check",
        "",
        f"Corpus `{summary['corpus']['path']}` ({summary['corpus']['kind']}"
        + (f", recorded on `{summary['corpus']['target']}`" if summary["corpus"].get("target") else "")
        + _recorded_on(summary["corpus"].get("recorded_on") or {}) + "): "
        f"{summary['programs']:,} programs, {summary['events']:,} events, each replayed through the model's checker.",
        "",
        " · ".join(f"{MARKS[v]} {verdicts[v]:,} {v}" for v in (VIOLATION, CHECK_UNKNOWN, CONFORMS)),
        "",
        "## Per spec",
        "",
        "| spec | description | conforms | violation | unknown | events |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| `{r['spec_id']}` | {_cell(r['describe'])} | {r[CONFORMS]:,} | {r[VIOLATION]:,} | "
              f"{r[CHECK_UNKNOWN]:,} | {r['events']:,} |" for r in summary["per_spec"]]
    lines += ["", "## Per guarantee", ""]
    if summary["per_guarantee"]:
        lines += ["| guarantee | programs that break it | undecided | promise |", "|---|---|---|---|"]
        lines += [f"| {r['guarantee']} | {r[VIOLATION]:,} | {r[CHECK_UNKNOWN]:,} | {_cell(_promise(r['guarantee']))} |"
                  for r in summary["per_guarantee"]]
    else:
        lines.append("No program breaks a guarantee.")
    if summary["unknown_reasons"]:
        lines += ["", "## Unknown verdicts", "", "| reason | programs | what it means |", "|---|---|---|"]
        lines += [f"| {reason} | {n:,} | {REASONS.get(reason, '')} |"
                  for reason, n in summary["unknown_reasons"].items()]
    lines += ["", "## Signatures", ""]
    if not summary["signatures"]:
        lines.append("Every program conforms.")
    else:
        lines += ["The guarantee (or the unknown's reason) and the detail with message ids, consumer names and numbers "
                  "left out; the shortest program is the one whose anomaly comes first.", "",
                  "| signature | verdict | guarantee / reason | detail class | programs | specs | shortest program "
                  "| reproduction |", "|---|---|---|---|---|---|---|---|"]
        for s in summary["signatures"][:SHOWN]:
            what = s["guarantee"] if s["verdict"] == VIOLATION else f"{s['reason']} {s['guarantee'] or ''}".strip()
            shortest = f"{s['representative_program']} of `{s['representative_spec']}`, step {s['representative_step']}"
            reproduction = f"[{s['reproduction'].rsplit('/', 1)[-1]}]({s['reproduction']})" if s.get("reproduction") \
                else ""
            lines.append(f"| `{s['signature']}` | {MARKS[s['verdict']]} {s['verdict']} | {_cell(what)} | "
                         f"{_cell(s['detail_class'])} | {s['programs']:,} | {s['specs']:,} | {_cell(shortest)} | "
                         f"{reproduction} |")
        more = summary["signature_count"] - min(SHOWN, len(summary["signatures"]))
        if more > 0:
            lines += ["", f"{more:,} more signatures are in signatures.parquet."]
    lines += ["", f"Checked in {summary['check_seconds']} s ({summary['partitions']} partitions); "
                  f"the whole job {summary['seconds']} s.", ""]
    return "\n".join(lines)
