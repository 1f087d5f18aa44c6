"""The checked client feature matrix: which client keeps which guarantee, read from the conformance
runs of several clients (or client versions) on one broker.

    python -m reports.matrix render out/python/summary.json out/go/summary.json --out reports/out/matrix
    python -m reports.matrix run --clients python,java,go --hypothesis-profile ci --out reports/out/matrix

Rows are the guarantees of model/guarantees.py, in their order; columns are the runs, each named by
the client as its driver named itself in its hello, with its version (summary.json's `run.client`:
`go 0.21.0`). A cell is that client's verdict on the guarantee, folded from its own run's guarantee
view (reports/results.py `guarantee_view`, the same cells summary.json's `guarantee_matrix` holds):
a conformance cell (area, spec id) checks a guarantee when its test can break it (`can_break`, the
catalog's `Check.guarantees` recorded per result) or when it failed naming it. No second list maps
cells to guarantees. Over the run's spec ids, the guarantee is

- failed: some cell failed naming it (each column reads its own run, so only for that client);
- unknown: none did, but a cell that can break it was undecided: unknown, or failed on another
  guarantee first, which stopped its program before this one could show. Never a pass;
- passed: every cell that can break it and ran passed (some may have been not applicable);
- not applicable: every such cell was not applicable for this client (it lacks an op or capability);
- not checked: no cell of the run can break it (a summary older than `can_break` shows only its
  failures).

Under the table: per failed guarantee and client, the failing cells with their detail and
reproduction (`failures/<stem>.py` under the summary's folder), and whether the gate's baseline
accepts the failure as a known divergence of that client (reports/baseline.py, matched by
reports/gate.py's `judge`; the KD number is read from the entry's reason); then the capabilities
each client declared in its hello (`run.client.capabilities`) and the cells not applicable for it,
with why. `matrix.md` and `matrix.html` (offline, like report.html) are written to `--out`; `--page
FILE` also writes the markdown between FILE's `<!-- matrix:begin -->` and `<!-- matrix:end -->`.

`run` builds each client's driver (a missing toolchain makes that client a column "not run", with
why), starts one broker (fixtures/broker: fresh data, free ports, stopped at the end whatever
happens), runs `pytest --target pulsar --client C suites/conformance -m "not slow"` against it once
per client, each into `--out/<client>/`, and renders the matrix of the summaries it got.

Exit status: 0 the matrix is written (failures are findings, shown in it); 2 a summary is missing
or malformed, two summaries are runs of the same client and version, the page has no markers, or
(`run`) a client's run could not start or ended without a summary.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from fixtures.kit import command
from model.guarantees import Guarantee
from reports.baseline import load_baseline
from reports.gate import judge
from reports.html import MARK as HTML_MARKS, STYLE, css, scrolling
from reports.markdown import run_line, totals_line
from reports.matrix_run import Stopped, run_clients
from reports.results import GuaranteeCell, InputError, Summary, guarantee_view, guarantees_of, load_summary
from reports.verdicts import Accepted, Baseline
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN

NOT_CHECKED, NOT_RUN = "not checked", "not run"
FOLD = (FAILED, UNKNOWN, PASSED, NOT_APPLICABLE)  # the first outcome a spec cell has is the guarantee's
MARK = {PASSED: "✅", FAILED: "❌", UNKNOWN: "❔", NOT_APPLICABLE: "➖", NOT_CHECKED: "⬜", NOT_RUN: "⏹"}
HTML_MARK = {**HTML_MARKS, NOT_CHECKED: "·", NOT_RUN: "∅"}  # a page needs no emoji font
BEGIN, END = "<!-- matrix:begin -->", "<!-- matrix:end -->"
KD = re.compile(r"\bKD-\d+\b")
ROOT = Path(__file__).resolve().parents[1]
EXIT_OK, EXIT_INPUT = 0, 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """One client's run: its summary, the folder that holds it, the baseline entries that accept its
    failures ((area, spec id, guarantee) -> entry), or why the run did not happen."""

    label: str
    folder: Path | None = None
    summary: Summary | None = None
    accepted: dict[tuple[str, str, str], Accepted] = field(default_factory=dict)
    not_run: str | None = None
    view: dict[str, dict[str, GuaranteeCell]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """One guarantee for one client, over the spec cells that can break it."""

    outcome: str
    cells: tuple[GuaranteeCell, ...] = ()

    def count(self, outcome: str) -> int:
        return sum(c.outcome == outcome for c in self.cells)


def label_of(summary: Summary) -> str:
    """The column's name: the client as its driver named itself, else the target (no client ran)."""
    return summary.client() or f"target {summary.run.get('target') or '?'}"


def column(path: Path, summary: Summary, baseline: Baseline) -> Column:
    if not summary.results:
        raise InputError(f"results {path}: no conformance test ran")
    judgement = judge(summary, baseline)
    accepted = {(r.area, r.spec_id, e.guarantee): e for e, r in judgement.accepted}
    return Column(label=label_of(summary), folder=Path(path).parent, summary=summary, accepted=accepted,
                  view=guarantee_view(summary))


def load_columns(paths: list[Path], baseline: Baseline) -> list[Column]:
    """One column per summary, in the order given; two runs of one client and version are an error."""
    columns, seen = [], {}
    for path in paths:
        col = column(path, load_summary(path), baseline)
        if col.label in seen:
            raise InputError(f"results {seen[col.label]} and {path}: both are runs of {col.label} "
                             "(the matrix has one column per client and version)")
        seen[col.label] = path
        columns.append(col)
    return columns


def verdict(col: Column, guarantee: str) -> Verdict:
    if col.summary is None:
        return Verdict(outcome=NOT_RUN)
    cells = tuple(col.view.get(guarantee, {}).values())
    outcomes = {c.outcome for c in cells}
    return Verdict(outcome=next((o for o in FOLD if o in outcomes), NOT_CHECKED), cells=cells)


def rows(columns: list[Column]) -> list[str]:
    """Every guarantee of model/guarantees.py in its order, then any other a failure names."""
    named = [g for c in columns if c.summary for g in guarantees_of(c.summary)]
    return list(dict.fromkeys([g.value for g in Guarantee] + named))


def kd_of(entry: Accepted) -> str:
    """`KD-27` from an accepted entry's reason, or what stands for it when the reason names none."""
    found = KD.findall(entry.reason)
    return ", ".join(dict.fromkeys(found)) if found else "accepted (no KD number in its reason)"


def cell_text(col: Column, guarantee: str, v: Verdict, mark: dict[str, str] = MARK) -> str:
    """`❌ failed on 2 of 14 specs (KD-27)`, `✅ passed on 13 specs, 1 not applicable`."""
    n = len(v.cells)
    specs = "spec" if n == 1 else "specs"
    if v.outcome == FAILED:
        kds = [col.accepted.get((area, c.spec_id, guarantee)) for c in v.cells for area, _ in c.failures]
        known = ", ".join(dict.fromkeys(kd for e in kds if e for kd in kd_of(e).split(", ")))
        new = sum(e is None for e in kds)
        note = "; ".join(x for x in (known, f"{new} new" if new and known else "") if x)
        return f"{mark[FAILED]} failed on {v.count(FAILED)} of {n} {specs}" + (f" ({note})" if note else "")
    if v.outcome == UNKNOWN:
        na = v.count(NOT_APPLICABLE)
        return (f"{mark[UNKNOWN]} unknown: passed on {v.count(PASSED)} of {n} {specs}, {v.count(UNKNOWN)} undecided"
                + (f", {na} not applicable" if na else ""))
    if v.outcome == PASSED:
        na, ran = v.count(NOT_APPLICABLE), v.count(PASSED)
        return f"{mark[PASSED]} passed on {ran} spec{'s' * (ran != 1)}" + (f", {na} not applicable" if na else "")
    return f"{mark[v.outcome]} {v.outcome}"


def rel(path: Path, base: Path) -> str:
    return os.path.relpath(path, base)


@dataclass(frozen=True, slots=True, kw_only=True)
class Failing:
    """One failing cell of a guarantee for a client: what it saw, its reproduction (a path from the
    page's folder), and what the baseline says of it (`known divergence of go 0.21.0: KD-27`, or new)."""

    area: str
    spec_id: str
    detail: str
    reproduction: str | None
    baseline: str


def failures(columns: list[Column], base: Path) -> list[tuple[str, Column, list[Failing]]]:
    """Per failed guarantee and client, its failing cells."""
    found = []
    for guarantee in rows(columns):
        for col in columns:
            v = verdict(col, guarantee)
            if v.outcome != FAILED:
                continue
            items = []
            for c in v.cells:
                for area, violation in c.failures:
                    repro = (rel(col.folder / "failures" / f"{violation.failure}.py", base)
                             if violation.failure and col.folder else None)
                    entry = col.accepted.get((area, c.spec_id, guarantee))
                    word = f"known divergence of {col.label}: {kd_of(entry)}" if entry else \
                        "new: not accepted by the baseline"
                    items.append(Failing(area=area, spec_id=c.spec_id, detail=violation.detail,
                                         reproduction=repro, baseline=word))
            found.append((guarantee, col, items))
    return found


def capabilities(col: Column) -> list[str] | None:
    """What the client declared in its hello; None when its summary did not record it."""
    client = (col.summary.run.get("client") or {}) if col.summary else {}
    found = client.get("capabilities")
    return sorted(found) if isinstance(found, list) else None


def capability_table(columns: list[Column]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The capabilities any client declared (rows), per run's label a `✓` / `–` for each (`?` when
    not recorded), and the labels whose summary did not record them."""
    declared = {c.label: capabilities(c) for c in columns if c.summary}
    names = sorted({name for found in declared.values() for name in found or ()})
    marks = {label: ["?" if found is None else "✓" if name in found else "–" for name in names]
             for label, found in declared.items()}
    return names, marks, [label for label, found in declared.items() if found is None]


def undecided(col: Column) -> dict[tuple[str, str, str], list[str]]:
    """(area, spec id, why: `timed out: ...`, `failed on cursor first`) -> the guarantees it leaves
    unknown for this client."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for guarantee in rows([col]):
        for c in col.view.get(guarantee, {}).values():
            if c.outcome == UNKNOWN:
                for reason in c.reasons:
                    area, _, why = reason.partition(": ")
                    found.setdefault((area, c.spec_id, why), []).append(guarantee)
    return found


def not_applicable(col: Column) -> list[tuple[str, str, str]]:
    return [(r.area, r.spec_id, r.reason or "no reason recorded")
            for r in (col.summary.results if col.summary else ()) if r.outcome == NOT_APPLICABLE]


# -- markdown ---------------------------------------------------------------------------------------
def render_markdown(columns: list[Column], base: Path, *, made: str = "") -> str:
    labels = [c.label for c in columns]
    lines = ["## Client feature matrix", ""] + ([made, ""] if made else [])
    for col in columns:
        if col.summary is None:
            lines.append(f"- **{col.label}**: {MARK[NOT_RUN]} not run: {_inline(col.not_run or '')}")
        else:
            lines.append(f"- **{col.label}**: {run_line(col.summary)} · {totals_line(col.summary)} · "
                         f"`{rel(col.folder / 'summary.json', base)}`")
    lines += ["", "| guarantee | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for guarantee in rows(columns):
        lines.append(f"| `{guarantee}` | " + " | ".join(cell_text(c, guarantee, verdict(c, guarantee))
                                                       for c in columns) + " |")
    lines += ["", "Each cell folds the client's conformance cells that can break the guarantee, over every "
                  "spec: failed when one failed naming it; unknown when none did but one was undecided; passed "
                  "when every one that ran passed; not applicable when the client could run none.", ""]
    found = failures(columns, base)
    if found:
        lines += ["### Failures", ""]
        for guarantee, col, items in found:
            lines.append(f"- `{guarantee}`, **{col.label}**:")
            lines += [f"  - {f.area} [{f.spec_id}]: {_inline(f.detail)}"
                      + (f" · reproduction `{f.reproduction}`" if f.reproduction else "") + f" · {f.baseline}"
                      for f in items]
        lines.append("")
    lines += _capabilities_markdown(columns)
    lines += ["### Undecided (never a pass)", ""]
    for col in columns:
        found = undecided(col)
        lines.append(f"- **{col.label}**: " + ("none" if not found else f"{len(found)} spec cell(s)"))
        lines += [f"  - {area} [{spec_id}]: {_inline(why)}: leaves {', '.join(f'`{g}`' for g in guarantees)} "
                  "undecided" for (area, spec_id, why), guarantees in found.items()]
    lines += ["", "### Not applicable", ""]
    for col in columns:
        skipped = not_applicable(col)
        lines.append(f"- **{col.label}**: " + ("not run" if col.summary is None else "none" if not skipped
                                                else f"{len(skipped)} cell(s)"))
        lines += [f"  - {area} [{spec_id}]: {_inline(why)}" for area, spec_id, why in skipped]
    return "\n".join(lines).rstrip() + "\n"


def _capabilities_markdown(columns: list[Column]) -> list[str]:
    names, marks, missing = capability_table(columns)
    lines = ["### Capabilities declared in the hello", ""]
    if names:
        lines += ["| capability | " + " | ".join(marks) + " |", "|---|" + "---|" * len(marks)]
        lines += [f"| `{name}` | " + " | ".join(m[i] for m in marks.values()) + " |" for i, name in enumerate(names)]
    if missing:
        lines += ["", f"Not recorded in the summary of {', '.join(missing)} (written before summaries kept them)."]
    return lines + [""]


def _inline(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# -- html -------------------------------------------------------------------------------------------
def render_html(columns: list[Column], base: Path, *, made: str = "") -> str:
    head = "".join(f"<th>{escape(c.label)}</th>" for c in columns)
    body = []
    for guarantee in rows(columns):
        promise = Guarantee(guarantee).promise if guarantee in {g.value for g in Guarantee} else ""
        tds = "".join(_td(c, guarantee, verdict(c, guarantee)) for c in columns)
        body.append(f"<tr id=\"g-{escape(guarantee)}\"><th class=\"area\" title=\"{escape(promise)}\">"
                    f"{escape(guarantee)}</th>{tds}</tr>")
    runs = "".join(f"<li><b>{escape(c.label)}</b>: " + (
        f"not run: {escape(c.not_run or '')}" if c.summary is None else
        f"{escape(run_line(c.summary).replace('`', ''))} · "
        + escape(" · ".join(f"{n} {o}" for o, n in c.summary.totals().items() if n))
        + _link(c.folder / "report.html", base, "report")) + "</li>" for c in columns)
    parts = ["<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Client feature matrix</title>",
             f"<style>{STYLE} td.not-checked, td.not-run {{ background: #fafafa; color: #888; }}</style></head><body>",
             "<h1>Client feature matrix</h1>", f"<p class=\"run\">{escape(made)}</p>" if made else "",
             f"<ul>{runs}</ul>",
             scrolling(f"<table class=\"matrix\"><thead><tr><th class=\"area\">guarantee</th>{head}</tr></thead>"
                       f"<tbody>{''.join(body)}</tbody></table>"),
             "<p class=\"run\">Each cell folds the client's conformance cells that can break the guarantee, over "
             "every spec (hover for each spec's verdict).</p>"]
    found = failures(columns, base)
    if found:
        parts.append("<h2 id=\"failures\">Failures</h2>")
        for guarantee, col, items in found:
            lis = "".join(f"<li><b>{escape(f.area)} [{escape(f.spec_id)}]</b>: {escape(f.detail)}"
                          + (f" · reproduction <a href=\"{escape(f.reproduction)}\">{escape(f.reproduction)}</a>"
                             if f.reproduction else "") + f" · <b>{escape(f.baseline)}</b></li>" for f in items)
            parts.append(f"<h3 id=\"f-{escape(guarantee)}-{escape(col.label)}\">{escape(guarantee)}, "
                         f"{escape(col.label)}</h3><ul class=\"reasons\">{lis}</ul>")
    parts.append(_capabilities_html(columns))
    parts.append("<h2>Not applicable</h2><ul class=\"reasons\">" + "".join(
        f"<li><b>{escape(c.label)}</b>: " + ("not run" if c.summary is None else "none" if not not_applicable(c)
                                              else "<ul>" + "".join(f"<li>{escape(a)} [{escape(s)}]: {escape(w)}</li>"
                                                                    for a, s, w in not_applicable(c)) + "</ul>")
        + "</li>" for c in columns) + "</ul>")
    return "\n".join(p for p in parts if p) + "\n</body></html>\n"


def _td(col: Column, guarantee: str, v: Verdict) -> str:
    tip = "; ".join(f"{c.spec_id}: {c.outcome}" + (f" ({', '.join(area for area, _ in c.failures)})"
                                                    if c.failures else "") for c in v.cells)
    text = escape(cell_text(col, guarantee, v, HTML_MARK))
    if v.outcome == FAILED:
        text = f"<a href=\"#f-{escape(guarantee)}-{escape(col.label)}\">{text}</a>"
    return f"<td class=\"{css(v.outcome)}\" title=\"{escape(tip or v.outcome)}\">{text}</td>"


def _link(path: Path, base: Path, text: str) -> str:
    return f" · <a href=\"{escape(rel(path, base))}\">{escape(text)}</a>" if path.is_file() else ""


def _capabilities_html(columns: list[Column]) -> str:
    names, marks, missing = capability_table(columns)
    head = "".join(f"<th>{escape(label)}</th>" for label in marks)
    trs = "".join(f"<tr><th class=\"area\">{escape(name)}</th>" + "".join(
        f"<td class=\"{'passed' if m[i] == '✓' else 'not-applicable'}\">{m[i]}</td>" for m in marks.values())
        + "</tr>" for i, name in enumerate(names))
    note = (f"<p class=\"run\">Not recorded in the summary of {escape(', '.join(missing))}.</p>" if missing else "")
    table = (f"<table class=\"matrix\"><thead><tr><th class=\"area\">capability</th>{head}</tr></thead>"
             f"<tbody>{trs}</tbody></table>" if names else "")
    return f"<h2>Capabilities declared in the hello</h2>{table}{note}"


# -- writing ----------------------------------------------------------------------------------------
def write(columns: list[Column], out: Path, *, made: str = "", page: Path | None = None) -> list[Path]:
    """matrix.md and matrix.html in `out`, paths in them relative to `out`; the page's block relative
    to the page's folder. Returns what it wrote."""
    if page is not None:
        text = page.read_text() if page.is_file() else ""
        if BEGIN not in text or END not in text:
            raise InputError(f"page {page}: no {BEGIN} ... {END} block to write the matrix into")
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "matrix.md", out / "matrix.html"]
    written[0].write_text(render_markdown(columns, out, made=made))
    written[1].write_text(render_html(columns, out, made=made))
    if page is not None:
        head, rest = text.split(BEGIN, 1)
        block = render_markdown(columns, page.resolve().parent, made=made)
        page.write_text(f"{head}{BEGIN}\n{block}{END}{rest.split(END, 1)[1]}")
        written.append(page)
    return written


def made_line(columns: list[Column], *, commit: str | None = None, command: str | None = None) -> str:
    """When the runs finished, from which commit, by which command."""
    finished = sorted(str(c.summary.run["finished"]) for c in columns if c.summary and c.summary.run.get("finished"))
    when = finished[-1][:10] if finished else datetime.now(timezone.utc).date().isoformat()
    return (f"Runs of {when}" + (f" at commit {commit}" if commit else "")
            + (f", by `{command}`" if command else "") + ".")


RUN_FROM = ("conftest.py", "model", "fixtures", "drivers", "suites/conformance", "reports")  # what a run executes


def git_commit() -> str | None:
    """The checkout's commit, and whether the code a run executes has uncommitted changes."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", *RUN_FROM], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" (with uncommitted changes to the code it runs)" if dirty else "")


def render_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"{command('reports.matrix')} render",
                                     description="Write the client feature matrix of several conformance runs.")
    parser.add_argument("summaries", nargs="+", type=Path, help="summary.json of each run (one per client or version)")
    _common(parser)
    parser.add_argument("--commit", default=None, help="the commit the runs were made from, shown with the date")
    args = parser.parse_args(argv)
    try:
        columns = load_columns(args.summaries, load_baseline(args.baseline))
        written = write(columns, args.out, made=made_line(columns, commit=args.commit), page=args.page)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    print("\n".join(str(p) for p in written))
    return EXIT_OK


def run_main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog=f"{command('reports.matrix')} run",
                                     description="Run the conformance suites for each client against one broker, "
                                                 "then write the client feature matrix (extra pytest arguments "
                                                 "after --).")
    parser.add_argument("--clients", required=True,
                        help="comma-separated --client values: python,java,go,rust,python==3.5.0")
    parser.add_argument("--pulsar-version", default=None, help="the broker's release (default: the pinned one)")
    parser.add_argument("--hypothesis-profile", default=None, help="the Hypothesis profile of every run (ci, ...)")
    _common(parser)
    args = parser.parse_args(argv)
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    twice = sorted({c for c in clients if clients.count(c) > 1})
    if not clients or twice:
        parser.error(f"--clients names {', '.join(twice)} more than once" if twice else "--clients names no client")
    from fixtures.broker.config import default_version

    try:
        baseline = load_baseline(args.baseline)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    commit, version, start = git_commit(), args.pulsar_version or default_version(), time.monotonic()
    say = lambda line: print(f"matrix: {line}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        runs = run_clients(clients, out=args.out, version=version, profile=args.hypothesis_profile, extra=extra,
                           say=say)
    except (KeyboardInterrupt, Stopped) as error:
        print(f"interrupted ({type(error).__name__}); the broker is stopped", file=sys.stderr)
        return 130
    columns, failed = [], False
    for run in runs:
        took = f"driver ready in {run.ready_s:.0f} s" + (f", suites in {_minutes(run.run_s)}" if run.run_s else "")
        if run.not_run is None:
            try:
                columns.append(column(run.summary_path, load_summary(run.summary_path), baseline))
                print(f"{columns[-1].label}: {totals_line(columns[-1].summary)} ({took}); {run.folder}")
                continue
            except InputError as error:
                run = replace(run, not_run=str(error))
        failed = True
        print(f"{run.client}: not run ({took}): {run.not_run}")
        columns.append(Column(label=run.client, not_run=run.not_run.splitlines()[0]))
    labels = [c.label for c in columns]
    if len(set(labels)) < len(labels):
        print(f"error: two runs of one client and version: {', '.join(labels)}", file=sys.stderr)
        return EXIT_INPUT
    rerun = f"{command('reports.matrix')} run --clients " + ",".join(clients) + (
        f" --hypothesis-profile {args.hypothesis_profile}" if args.hypothesis_profile else "")
    try:
        written = write(columns, args.out, made=made_line(columns, commit=commit, command=rerun), page=args.page)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    print("matrix: " + ", ".join(str(p) for p in written) + f" ({_minutes(time.monotonic() - start)} in all)")
    return EXIT_INPUT if failed else EXIT_OK


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="folder for matrix.md and matrix.html")
    parser.add_argument("--baseline", type=Path, default=ROOT / "reports" / "baseline.json",
                        help="accepted divergences, to show each failure's KD number (default: reports/baseline.json)")
    parser.add_argument("--page", type=Path, default=None,
                        help=f"also write the matrix between this file's {BEGIN} and {END} (e.g. CLIENTS.md)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["render"]:
        return render_main(argv[1:])
    if argv[:1] == ["run"]:
        return run_main(argv[1:])
    print(f"usage: {command('reports.matrix')} {{render,run}} ...  (each takes --help)", file=sys.stderr)
    return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
