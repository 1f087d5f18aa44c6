"""The page a person reads: one static, offline HTML file per run (no server, no scripts, no CDN).

The conformance matrix comes first (area x spec id, grouped by subscription type; a failed cell
links to its failure), then the same run by guarantee (guarantee x spec id: one row per guarantee
of model/guarantees.py, each cell over every test that can break it, a failed cell linking to the
failures that name it), then what is unknown and why, then every failure: the guarantee and its
promise, what happened, the history drawn as a timeline (reports/timeline.py), the shrunk program
as a story, and the runnable reproduction. It reads `summary.json` and `failures/` only.

    python -m reports.html reports/out     # (re)writes reports/out/report.html
"""

from __future__ import annotations

import argparse
import sys
from html import escape
from pathlib import Path

from model.guarantees import Guarantee
from reports import failures as stored
from reports.results import GuaranteeCell, InputError, Result, Summary, guarantee_view, load_summary, subscription_of
from reports.timeline import legend_svg, story, timeline_html
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN

STYLE = """
body { font: 14px/1.45 "DejaVu Sans", Arial, sans-serif; color: #222; margin: 24px; max-width: 1400px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin: 0 0 6px; } h4 { font-size: 14px; margin: 14px 0 4px; }
.run { color: #555; margin: 0 0 12px; } .totals span { margin-right: 14px; font-weight: bold; }
.matrix-scroll { overflow: auto; max-width: 100%; max-height: 85vh; margin: 8px 0; }
table.matrix { border-collapse: separate; border-spacing: 0; border-top: 1px solid #ccc; border-left: 1px solid #ccc; }
.matrix th, .matrix td { border: solid #ccc; border-width: 0 1px 1px 0; padding: 4px 8px; text-align: center;
  font-size: 13px; }
.matrix th.area { text-align: left; position: sticky; left: 0; z-index: 1; background: #fff; }
.matrix thead { position: sticky; top: 0; z-index: 2; } .matrix thead th { background: #f4f4f4; }
td.passed { background: #e6f4ea; color: #1e5e2b; } td.failed { background: #fce8e6; color: #a50e0e; font-weight: bold; }
td.unknown { background: #fef7e0; color: #8a5a00; } td.not-applicable { background: #f1f3f4; color: #666; }
td.k-client-crashed { background: #f3e8fd; color: #6a1b9a; border: 2px dashed #8e24aa; }
td.k-unreachable, td.k-timed-out, td.k-interrupted { background: #fff8e1; color: #795548; border: 2px dotted #a1887f; }
td.k-harness-error { background: #eceff1; color: #37474f; border: 2px dotted #607d8b; }
td.failed a { color: inherit; } td.notrun { background: #fafafa; }
.count { display: block; font-size: 10px; color: #666; font-weight: normal; white-space: nowrap; }
article.failure { border: 1px solid #e0b4b4; border-left: 6px solid #c62828; padding: 12px 16px; margin: 16px 0;
  border-radius: 4px; background: #fffafa; }
.promise { color: #555; font-style: italic; } .detail { font-weight: bold; color: #a50e0e; }
.scroll { overflow-x: auto; border: 1px solid #eee; background: #fff; padding: 4px; }
ol.story { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; margin: 0; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; }
.files a { margin-right: 12px; } ul.reasons li { margin: 3px 0; }
"""
MARK = {PASSED: "✓", FAILED: "✗", UNKNOWN: "?", NOT_APPLICABLE: "–"}
GUARANTEE_NOTE = ("<p class=\"run\">Each cell: every test on that spec that can break the guarantee (hover for "
                  "which). Failed: a failure names it (the links); unknown: one of them was undecided or stopped on "
                  "another guarantee first; empty: no test of this run can break it there.</p>")


def render_report(summary: Summary, found: dict[str, stored.StoredFailure], *, failures_dir: str = "failures") -> str:
    run = summary.run
    client = summary.client()
    title = f"Pulsar ack conformance: {run.get('target') or 'run'}" + (f", client {client}" if client else "")
    parts = [f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>", _run_info(summary),
             "<h2 id=\"matrix\">Conformance matrix</h2>", _matrix(summary),
             "<h2 id=\"guarantees\">By guarantee</h2>", GUARANTEE_NOTE, _guarantee_matrix(summary),
             _reasons(summary, UNKNOWN, "Unknown (never a pass)"), _reasons(summary, NOT_APPLICABLE, "Not applicable")]
    failed = [(r, v) for r in summary.results if r.outcome in (FAILED, UNKNOWN) for v in r.violations]
    if failed:
        parts += ["<h2 id=\"failures\">Failures</h2>", "<div class=\"scroll\">", legend_svg(), "</div>"]
        parts += [_failure(r, v, found.get(v.failure or ""), failures_dir) for r, v in failed]
    parts.append("</body></html>\n")
    return "\n".join(p for p in parts if p)


def _run_info(summary: Summary) -> str:
    run = summary.run
    pulsar, client = run.get("pulsar") or {}, run.get("client") or {}
    version, source = pulsar.get("version"), pulsar.get("source")
    facts = [("target", run.get("target")),
             ("Pulsar", f"{version} ({source})" if version and source else version or source),
             ("modelled Pulsar", ", ".join(pulsar.get("modelled") or [])),
             ("client", " ".join(str(client[k]) for k in ("name", "version") if client.get(k))),
             ("pulsar-client", client.get("pulsar-client")),
             ("modelled client", ", ".join(client.get("modelled") or [])),
             ("Hypothesis profile", run.get("hypothesis_profile")), ("run", run.get("run_id")),
             ("finished", run.get("finished"))]
    text = " · ".join(f"{escape(k)}: <b>{escape(str(v))}</b>" for k, v in facts if v)
    totals = summary.totals()
    kinds = ", ".join(f"{n} {kind}" for kind, n in summary.unknown_kinds().items())
    counts = "".join(f"<span class=\"{css(o)}\">{MARK[o]} {totals[o]} {o}"
                     + (f" ({escape(kinds)})" if o == UNKNOWN and kinds else "") + "</span>"
                     for o in (FAILED, UNKNOWN, PASSED, NOT_APPLICABLE))
    return f"<p class=\"run\">{text}</p><p class=\"totals\">{counts}</p>"


def _matrix(summary: Summary) -> str:
    spec_ids = summary.spec_ids()
    rows = []
    for area in summary.areas():
        cells = "".join(_cell(summary.result(area, s)) for s in spec_ids)
        rows.append(f"<tr><th class=\"area\">{escape(area)}</th>{cells}</tr>")
    return scrolling(f"<table class=\"matrix\">{matrix_head(spec_ids)}<tbody>{''.join(rows)}</tbody></table>")


def _guarantee_matrix(summary: Summary) -> str:
    spec_ids = summary.spec_ids()
    rows = []
    for guarantee, cells in guarantee_view(summary).items():
        promise = Guarantee(guarantee).promise if guarantee in {g.value for g in Guarantee} else ""
        tds = "".join(_guarantee_td(cells.get(s)) for s in spec_ids)
        rows.append(f"<tr id=\"g-{escape(guarantee)}\"><th class=\"area\" title=\"{escape(promise)}\">"
                    f"{escape(guarantee)}</th>{tds}</tr>")
    return scrolling(f"<table class=\"matrix guarantees\">{matrix_head(spec_ids, label='guarantee')}"
                     f"<tbody>{''.join(rows)}</tbody></table>")


def scrolling(table: str) -> str:
    """A matrix in a box of the window's width that scrolls, its row labels and header kept in view."""
    return f"<div class=\"matrix-scroll\">{table}</div>"


def _guarantee_td(cell: GuaranteeCell | None) -> str:
    if cell is None:
        return "<td class=\"notrun\" title=\"no test of this run can break it on this spec\"></td>"
    tip = "; ".join([f"can break it: {', '.join(cell.tests)}", *cell.reasons])
    if cell.outcome == FAILED:
        links = ", ".join(f"<a href=\"#f-{escape(v.failure)}\">{escape(area)}</a>" if v.failure else escape(area)
                          for area, v in cell.failures)
        text = f"{MARK[FAILED]} {links}"
    else:
        text = escape(f"{MARK[cell.outcome]} {cell.outcome}")
    return f"<td class=\"{css(cell.outcome)}\" title=\"{escape(tip)}\">{text}</td>"


def matrix_head(spec_ids: list[str], *, label: str = "guarantee area") -> str:
    """Two header rows: the subscription types, then their variants (`plain`, `dlq1`, `batch-index-ack`)."""
    groups: list[tuple[str, int]] = []
    for spec_id in spec_ids:
        base = subscription_of(spec_id)
        if groups and groups[-1][0] == base:
            groups[-1] = (base, groups[-1][1] + 1)
        else:
            groups.append((base, 1))
    plain = [base for base, n in groups if n == 1 and base in spec_ids]  # a type with one spec: one header cell
    top = "".join(f"<th rowspan=\"2\">{escape(base)}</th>" if base in plain else
                  f"<th colspan=\"{n}\">{escape(base)}</th>" for base, n in groups)
    second = "".join(f"<th>{escape(s.removeprefix(subscription_of(s)).lstrip('-') or 'plain')}</th>"
                     for s in spec_ids if subscription_of(s) not in plain)
    return (f"<thead><tr><th class=\"area\" rowspan=\"2\">{escape(label)}</th>{top}</tr>"
            f"<tr>{second}</tr></thead>")


def _cell(result: Result | None) -> str:
    if result is None:
        return "<td></td>"
    counts = (f"{result.examples} programs, {result.steps} ops" if result.examples is not None else "not counted")
    replays = "; ".join(f"{v.guarantee}: {v.replayed_text()}" for v in result.violations if v.replayed)
    tip = (f"{result.nodeid}: {result.verdict()}; {counts}" + (f"; {result.reason}" if result.reason else "")
           + (f"; {replays}" if replays else ""))
    text = MARK[result.outcome] + " " + (", ".join(sorted(result.guarantees)) if result.outcome == FAILED
                                         else result.reason_kind or result.outcome if result.outcome == UNKNOWN
                                         else result.outcome)
    first = next((v.failure for v in result.violations if v.failure), None)
    if first and result.outcome in (FAILED, UNKNOWN):
        text = f"<a href=\"#f-{escape(first)}\">{escape(text)}</a>"
    else:
        text = escape(text)
    small = (f"<span class=\"count\">{result.examples} programs · {result.steps} ops</span>"
             if result.examples is not None else "")
    return f"<td class=\"{css(result.outcome, result.reason_kind)}\" title=\"{escape(tip)}\">{text}{small}</td>"


def css(outcome: str, kind: str | None = None) -> str:
    """The cell's classes: its outcome (`not-applicable`), and an unknown's kind (`k-client-crashed`)."""
    slug = outcome.replace(" ", "-")
    return f"{slug} k-{kind.replace(' ', '-')}" if outcome == UNKNOWN and kind else slug


def _reasons(summary: Summary, outcome: str, title: str) -> str:
    chosen = [r for r in summary.results if r.outcome == outcome]
    if not chosen:
        return ""
    items = "".join(f"<li><b>{escape(r.area)} [{escape(r.spec_id)}]</b>"
                    + (f" <i>{escape(r.reason_kind)}</i>" if outcome == UNKNOWN and r.reason_kind else "") + ": "
                    f"{escape(r.reason or 'no reason recorded')}</li>" for r in chosen)
    return f"<h2>{escape(title)}</h2><ul class=\"reasons\">{items}</ul>"


def _failure(result: Result, violation, failure: stored.StoredFailure | None, failures_dir: str) -> str:
    stem = violation.failure or f"{result.area}-{result.spec_id}"
    promise = Guarantee(violation.guarantee).promise if violation.guarantee in {g.value for g in Guarantee} else ""
    state = "undecided: " if violation.undecided else ""
    parts = [f"<article class=\"failure\" id=\"f-{escape(stem)}\">",
             f"<h3>{escape(result.area)} [{escape(result.spec_id)}]: {state}broke {escape(violation.guarantee)}</h3>",
             f"<p class=\"promise\">{escape(promise)}</p>" if promise else "",
             f"<p class=\"detail\">{escape(violation.detail)}</p>",
             f"<p>spec: {escape(result.spec or '?')} · target: <code>{escape(result.target or '?')}</code>"
             + (" · <b>flaky</b>: did not fail again on replay" if result.flaky else "")
             + (f" · <b class=\"replayed\">{escape(violation.replayed_text())}</b>" if violation.replayed else "")
             + "</p>"]
    if failure is None:
        parts.append(f"<p>The history file {escape(failures_dir)}/{escape(stem)}.jsonl is missing.</p></article>")
        return "\n".join(parts)
    drained = failure.expectation.get("drained")
    parts += ["<h4>Timeline</h4>",
              timeline_html(failure.events, violation=(violation.guarantee, violation.detail, bool(drained))),
              "<h4>The shrunk program</h4>", "<ol class=\"story\" start=\"0\">",
              "".join(f"<li>{escape(line)}</li>" for line in story(failure.events)), "</ol>"]
    if drained is True:
        parts.append("<p>then every connected consumer was drained, and the check that nothing owed is missing "
                     "failed.</p>")
    elif drained:
        parts.append(f"<p>then only {escape(', '.join(drained))} drained while the others took nothing, and the "
                     "check that what is missing fits in their receiver queues failed.</p>")
    if failure.source:
        parts.append(f"<details><summary>Reproduction (runnable Python)</summary><pre>{escape(failure.source)}</pre>"
                     "</details>")
    parts.append("<p class=\"files\">" + "".join(
        f"<a href=\"{escape(failures_dir)}/{escape(stem)}{suffix}\">{escape(stem)}{suffix}</a>"
        for suffix in stored.SUFFIXES) + "</p></article>")
    return "\n".join(p for p in parts if p)


def load_failures(folder: Path, summary: Summary) -> dict[str, stored.StoredFailure]:
    stems = {v.failure for r in summary.results for v in r.violations if v.failure}
    return {stem: stored.read_failure(folder, stem) for stem in sorted(stems) if (folder / f"{stem}.jsonl").is_file()}


def write_report(folder: Path) -> Path:
    """Read `folder/summary.json` and `folder/failures/`, write `folder/report.html`."""
    summary = load_summary(folder / "summary.json")
    page = render_report(summary, load_failures(folder / "failures", summary))
    path = folder / "report.html"
    path.write_text(page)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.html", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a reports folder (with summary.json and failures/)")
    args = parser.parse_args(argv)
    try:
        print(write_report(args.folder))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
