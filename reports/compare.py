"""Two runs side by side: where their verdicts differ (e.g. Pulsar 4.0.7 against 4.2.4).

    python -m reports.compare runs/4.0.7/summary.json runs/4.2.4/summary.json --out reports/out/compare

Cells are matched by guarantee area and spec id; a cell differs when both runs have it and its
outcome or its broken guarantees differ; cells only one run has are listed apart. Writes
`compare.html` (offline, like report.html: the matrix with both verdicts in every cell, the
differing ones marked, links to each run's own report) and `compare.md`, and prints the markdown. Exit status 0, or 1 with --fail-on-difference
when some cell differs; 2 for a missing or malformed summary.
"""

from __future__ import annotations

import argparse
import os
import sys
from html import escape
from pathlib import Path

from reports.html import MARK, STYLE, css, matrix_head, scrolling
from reports.markdown import compare_markdown, run_line
from reports.results import InputError, Result, Summary, load_summary, order_spec_ids
from reports.verdicts import Cell, Comparison
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN

RANK = (PASSED, NOT_APPLICABLE, UNKNOWN, FAILED)  # the worse side colours a cell


def compare(a: Summary, b: Summary, labels: tuple[str, str] | None = None) -> Comparison:
    if labels is None:
        labels = run_labels(a, b)
    areas = list(dict.fromkeys(a.areas() + b.areas()))
    spec_ids = order_spec_ids(a.spec_ids() + b.spec_ids())
    cells = tuple(Cell(area=area, spec_id=s, a=a.result(area, s), b=b.result(area, s))
                  for area in areas for s in spec_ids if a.result(area, s) or b.result(area, s))
    return Comparison(a=a, b=b, labels=labels, cells=cells)


def run_labels(a: Summary, b: Summary) -> tuple[str, str]:
    """Name each run by what sets it apart: the Pulsar version (read from a given broker too),
    where the broker was (embedded or the URL given; only when the versions agree), the client and
    its version, the target, in that order, each only when the two runs differ in it (two clients
    on one broker compare as two broker versions do); `(A)` and `(B)` when they differ in none."""
    facts = [(run.label_parts()) for run in (a, b)]
    differing = [i for i in range(len(facts[0])) if facts[0][i] != facts[1][i]]
    if 0 in differing and 1 in differing:  # two versions: where each broker was adds nothing
        differing.remove(1)
    if not differing:
        return f"{a.label()} (A)", f"{b.label()} (B)"
    return tuple(" · ".join(str(f[i] or "?") for i in differing) for f in facts)


def render_html(comparison: Comparison, *, reports: tuple[str | None, str | None] = (None, None)) -> str:
    la, lb = comparison.labels
    areas = list(dict.fromkeys(c.area for c in comparison.cells))
    spec_ids = order_spec_ids(c.spec_id for c in comparison.cells)
    by_key = {(c.area, c.spec_id): c for c in comparison.cells}
    rows = []
    for area in areas:
        tds = "".join(_td(by_key.get((area, s)), la, lb) for s in spec_ids)
        rows.append(f"<tr><th class=\"area\">{escape(area)}</th>{tds}</tr>")
    links = " · ".join(f"<a href=\"{escape(href)}\">{escape(label)}: report</a>"
                       for label, href in zip(comparison.labels, reports) if href)
    runs = "".join(f"<li><b>{escape(label)}</b>: {escape(run_line(s).replace('`', ''))} · "
                   + ", ".join(f"{n} {outcome}" for outcome, n in s.totals().items()) + "</li>"
                   for label, s in zip(comparison.labels, comparison.runs))
    differing, lonely = ("".join(f"<li><b>{escape(c.area)} [{escape(c.spec_id)}]</b>: {escape(la)} "
                                 f"{escape(_text(c.a))}, {escape(lb)} {escape(_text(c.b))}</li>" for c in cells)
                         for cells in (comparison.differing, comparison.in_one_run))
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(la)} vs {escape(lb)}"
            f"</title><style>{STYLE} td.differs {{ outline: 3px solid #f9ab00; outline-offset: -3px; }}"
            f" .side {{ display: block; white-space: nowrap; }}</style></head><body>"
            f"<h1>Conformance side by side: {escape(la)} vs {escape(lb)}</h1><ul>{runs}</ul><p>{links}</p>"
            f"<p class=\"totals\"><span>{len(comparison.differing)} of {len(comparison.cells)} cells differ</span>"
            f"<span>{len(comparison.in_one_run)} run by one side only</span></p>"
            + scrolling(f"<table class=\"matrix\">{matrix_head(spec_ids)}<tbody>{''.join(rows)}</tbody></table>")
            + (f"<h2>Where the verdicts differ</h2><ul class=\"reasons\">{differing}</ul>" if differing else "")
            + (f"<h2>Run by one side only</h2><ul class=\"reasons\">{lonely}</ul>" if lonely else "")
            + "</body></html>\n")


def _text(result: Result | None) -> str:
    if result is None:
        return "not run"
    return result.verdict()


def _td(cell: Cell | None, la: str, lb: str) -> str:
    if cell is None:
        return "<td></td>"
    worst = max((r for r in (cell.a, cell.b) if r), key=lambda r: RANK.index(r.outcome))
    sides = "".join(f"<span class=\"side\">{escape(label)}: {MARK[r.outcome] + ' ' if r else ''}"
                    f"{escape(', '.join(sorted(r.guarantees)) if r and r.outcome == FAILED else _text(r))}</span>"
                    for label, r in ((la, cell.a), (lb, cell.b)))
    marker = " differs" if cell.differs else ""
    return f"<td class=\"{css(worst.outcome, worst.reason_kind)}{marker}\">{sides}</td>"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.compare",
                                     description="Show where two conformance runs' verdicts differ.")
    parser.add_argument("a", type=Path, help="summary.json of the first run")
    parser.add_argument("b", type=Path, help="summary.json of the second run")
    parser.add_argument("--labels", nargs=2, metavar=("A", "B"), help="names of the runs (default: Pulsar versions)")
    parser.add_argument("--out", type=Path, default=Path("reports/out/compare"),
                        help="folder for compare.html and compare.md (default: %(default)s)")
    parser.add_argument("--fail-on-difference", action="store_true", help="exit 1 when some cell differs")
    args = parser.parse_args(argv)
    try:
        comparison = compare(load_summary(args.a), load_summary(args.b), tuple(args.labels) if args.labels else None)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    reports = tuple(os.path.relpath(p.parent / "report.html", args.out) if (p.parent / "report.html").is_file()
                    else None for p in (args.a, args.b))
    (args.out / "compare.html").write_text(render_html(comparison, reports=reports))
    text = compare_markdown(comparison)
    (args.out / "compare.md").write_text(text)
    print(text)
    return 1 if args.fail_on_difference and comparison.differing else 0


if __name__ == "__main__":
    sys.exit(main())
