"""Markdown for people and for GitHub Actions step summaries: a run, a gate verdict, a comparison.

Only GitHub-flavoured tables, lists and emoji; nothing that needs a renderer's extensions. Every
function is pure: results in, text out.
"""

from __future__ import annotations

from fixtures.kit import command
from reports.results import GuaranteeCell, Result, Summary, guarantee_view
from reports.verdicts import Comparison, Judgement
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN

MARK = {PASSED: "✅", FAILED: "❌", UNKNOWN: "❔", NOT_APPLICABLE: "➖"}


def cell(result: Result | None) -> str:
    if result is None:
        return ""
    if result.outcome == FAILED:
        return f"❌ {', '.join(sorted(result.guarantees))}"
    if result.outcome == UNKNOWN:
        return f"❔ {result.reason_kind or 'unknown'}"
    if result.outcome == NOT_APPLICABLE:
        return "➖ n/a"
    return MARK[result.outcome]


def run_line(summary: Summary) -> str:
    run = summary.run
    pulsar = run.get("pulsar") or {}
    client = run.get("client") or {}
    parts = [f"target `{run.get('target') or '?'}`"]
    if pulsar.get("version"):
        parts.append(f"Pulsar {pulsar['version']} ({pulsar.get('source', '?')})")
    elif pulsar.get("source"):
        parts.append(f"Pulsar: {pulsar['source']}")
    if pulsar.get("modelled"):
        parts.append(f"model of Pulsar {', '.join(pulsar['modelled'])}")
    if client.get("name"):  # the client under test, as its driver named itself
        parts.append(f"client {client['name']} {client.get('version') or ''}".rstrip())
    if client.get("pulsar-client"):
        parts.append(f"pulsar-client {client['pulsar-client']}")
    if run.get("hypothesis_profile"):
        parts.append(f"profile `{run['hypothesis_profile']}`")
    return " · ".join(parts)


def totals_line(summary: Summary) -> str:
    totals = summary.totals()
    shown = [o for o in (FAILED, UNKNOWN, PASSED, NOT_APPLICABLE) if totals[o] or o != NOT_APPLICABLE]
    kinds = ", ".join(f"{n} {kind}" for kind, n in summary.unknown_kinds().items())
    return " · ".join(f"{MARK[o]} {totals[o]} {o}" + (f" ({kinds})" if o == UNKNOWN and kinds else "")
                      for o in shown)


def matrix_table(summary: Summary) -> list[str]:
    spec_ids = summary.spec_ids()
    lines = ["| area | " + " | ".join(spec_ids) + " | programs / ops |",
             "|---|" + "---|" * len(spec_ids) + "---|"]
    for area in summary.areas():
        row = [summary.result(area, s) for s in spec_ids]
        examples = sum(r.examples or 0 for r in row if r)
        steps = sum(r.steps or 0 for r in row if r)
        lines.append(f"| {area} | " + " | ".join(cell(r) for r in row) + f" | {examples} / {steps} |")
    return lines


def guarantee_table(summary: Summary) -> list[str]:
    """One row per guarantee: in each spec id's cell the verdict over every test that can break it,
    a failed cell naming the areas whose failures name the guarantee."""
    spec_ids = summary.spec_ids()
    lines = ["| guarantee | " + " | ".join(spec_ids) + " |", "|---|" + "---|" * len(spec_ids)]
    for guarantee, cells in guarantee_view(summary).items():
        lines.append(f"| `{guarantee}` | " + " | ".join(_guarantee_cell(cells.get(s)) for s in spec_ids) + " |")
    return lines


def _guarantee_cell(cell: GuaranteeCell | None) -> str:
    if cell is None:
        return ""
    if cell.outcome == FAILED:
        return f"❌ {', '.join(dict.fromkeys(area for area, _ in cell.failures))}"
    if cell.outcome == UNKNOWN:
        return "❔ unknown"
    if cell.outcome == NOT_APPLICABLE:
        return "➖ n/a"
    return MARK[cell.outcome]


def summary_markdown(summary: Summary, *, failures_dir: str | None = None) -> str:
    failed = any(r.outcome == FAILED for r in summary.results)
    unknown = any(r.outcome == UNKNOWN for r in summary.results)
    headline = "❌ divergences found" if failed else "❔ undecided" if unknown else "✅ conforms"
    lines = [f"## Pulsar ack conformance: {headline}", "", run_line(summary), "", totals_line(summary), ""]
    lines += matrix_table(summary) + [""]
    lines += ["### By guarantee", ""] + guarantee_table(summary) + [""]
    lines += fault_list(summary)
    lines += _failure_list(summary, failures_dir)
    lines += _reason_list(summary, UNKNOWN, "Unknown (never a pass)")
    lines += _reason_list(summary, NOT_APPLICABLE, "Not applicable")
    return "\n".join(lines).rstrip() + "\n"


def fault_list(summary: Summary) -> list[str]:
    """Per test whose programs could use a fault: how many performed it and how many reached each
    of its windows; a window no program reached, or a fault the target cannot perform, said as such."""
    lines = []
    for r in summary.results:
        for fault, tally in sorted((r.faults or {}).items()):
            if not tally.get("performable", True):
                lines.append(f"- **{r.area} [{r.spec_id}]** `{fault}`: not performed, the target cannot")
                continue
            windows = [k for k in tally if k not in ("performable", "programs", "ops")]
            reached = ", ".join(f"{k} in {tally[k]}" if tally[k] else f"{k} **never reached**" for k in windows)
            lines.append(f"- **{r.area} [{r.spec_id}]** `{fault}` in {tally.get('programs', 0)} of "
                         f"{r.examples if r.examples is not None else '?'} programs ({_times(tally.get('ops', 0))})"
                         + (f"; reached: {reached}" if reached else ""))
    return ["### Faults reached", ""] + lines + [""] if lines else []


def _failure_list(summary: Summary, failures_dir: str | None) -> list[str]:
    failed = [r for r in summary.results if r.outcome == FAILED]
    if not failed:
        return []
    lines = ["### Failures", ""]
    for r in failed:
        for v in r.violations:
            files = ""
            if failures_dir and v.failure:
                files = (f" (history `{failures_dir}/{v.failure}.jsonl`, "
                         f"reproduce with `python {failures_dir}/{v.failure}.py`)")
            flaky = " (flaky: did not fail again on replay)" if r.flaky else ""
            replayed = f" ({v.replayed_text()})" if v.replayed else ""
            lines.append(f"- **{r.area} [{r.spec_id}]** broke `{v.guarantee}`{flaky}{replayed}: "
                         f"{_inline(v.detail)}{files}")
    return lines + [""]


def _reason_list(summary: Summary, outcome: str, title: str) -> list[str]:
    chosen = [r for r in summary.results if r.outcome == outcome]
    if not chosen:
        return []
    return [f"### {title}", ""] + [f"- **{r.area} [{r.spec_id}]**{_kind(r)}: "
                                   f"{_inline(r.reason or 'no reason recorded')}" for r in chosen] + [""]


def _kind(result: Result) -> str:
    return f" *{result.reason_kind}*" if result.outcome == UNKNOWN and result.reason_kind else ""


def gate_markdown(judgement: Judgement) -> str:
    verdict = "✅ passed" if judgement.passed else "❌ failed"
    lines = [f"## Conformance gate: {verdict}", "", run_line(judgement.summary), ""]
    if judgement.nothing_checked:
        lines += [f"**Nothing was checked**: {judgement.nothing_checked}. This fails the gate whatever is "
                  "allowed (--allow-unknown included).", ""]
    lines += [f"{len(judgement.new)} new divergence(s) · {len(judgement.accepted)} accepted · "
              f"{len(judgement.fixed)} not shown · {len(judgement.unknown)} unknown · "
              + (f"{len(judgement.crashed)} known client crash(es) · " if judgement.crashed else "") +
              f"{len(judgement.unconfirmed)} baseline entries not confirmed"
              + (f" · {len(judgement.not_repeated)} failed once, not repeated" if judgement.not_repeated else "")
              + (f" · {len(judgement.other_clients)} for other clients" if judgement.other_clients else ""), ""]
    if judgement.new:
        lines += ["### New divergences (not accepted by the baseline)", "",
                  "| area | spec | guarantee | detail | why new |", "|---|---|---|---|---|"]
        lines += [f"| {d.result.area} | {d.result.spec_id} | `{d.guarantee}` | {_cell_text(d.detail)} | "
                  f"{_cell_text(d.why)} |" for d in judgement.new] + [""]
    if judgement.not_repeated:
        lines += ["### Failed once, passed when run again (not repeated: shown, not failing the gate)", ""]
        lines += [f"- **{r.area} [{r.spec_id}]**: {', '.join(f'`{g}`' for g in sorted(r.guarantees))}"
                  for r in judgement.not_repeated] + [""]
    if judgement.unknown:
        allowed = " (allowed by --allow-unknown)" if judgement.allow_unknown else ""
        lines += [f"### Unknown, never a pass{allowed}", ""]
        lines += [f"- **{r.area} [{r.spec_id}]**{_kind(r)}: {_inline(r.reason or '')}"
                  for r in judgement.unknown] + [""]
    if judgement.crashed:
        lines += ["### Known client crashes (unknown, nothing decided; the baseline accepts the client bug)", ""]
        lines += [f"- **{r.area} [{r.spec_id}]**{_for(e)}: {_inline(e.reason)} (log: `{_inline(e.log)}`; "
                  f"evidence: {_inline(e.evidence)})" for e, r in judgement.crashed] + [""]
    if judgement.fixed:
        # A passing cell is not proof of a fix: most accepted divergences are races, or need a
        # program shape this run may not have drawn.
        lines += ["### Not shown: in the baseline, the cell passed in this run", "",
                  "Fixed, or not reached this time (a race that did not happen, a program shape not drawn): "
                  "remove an entry once the test its evidence names passes; `--fail-on-fixed` fails the gate on "
                  "these.", ""]
        lines += [f"- **{e.area} [{e.spec_id}]** `{e.guarantee}`{_for(e)}: now {r.verdict()} "
                  f"(was accepted: {_inline(e.reason)})"
                  for e, r in judgement.fixed] + [""]
    if judgement.accepted:
        lines += ["### Accepted divergences (still diverging, as the baseline says)", ""]
        lines += [f"- **{e.area} [{e.spec_id}]** `{e.guarantee}`{_for(e)}: {_inline(e.reason)} "
                  f"(evidence: {_inline(e.evidence)})"
                  for e, _ in judgement.accepted] + [""]
    if judgement.unsigned:
        lines += ["### Baseline entries without a signature (re-accept them)", ""]
        lines += [f"- **{e.area} [{e.spec_id}]** `{e.guarantee}`: accepts any failure of this guarantee in the cell; "
                  f"`{command('reports.gate')} accept {e.area} {e.spec_id} {e.guarantee} --reason ... --evidence ...` "
                  "records what this run saw" for e in judgement.unsigned] + [""]
    if judgement.unconfirmed:
        lines += ["### Baseline entries this run could not confirm", ""]
        lines += [f"- **{e.area} [{e.spec_id}]** `{e.guarantee}`{_for(e)}: {why}"
                  for e, why in judgement.unconfirmed] + [""]
    if judgement.other_clients:
        lines += ["### Baseline entries for other clients (not in this run)", ""]
        by_client: dict[str, list] = {}
        for e in judgement.other_clients:
            by_client.setdefault(e.client, []).append(e)
        lines += [f"- **{client}**: {len(entries)}: " + ", ".join(f"{e.area} [{e.spec_id}] `{e.guarantee}`"
                                                              for e in entries)
                  for client, entries in by_client.items()] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _for(entry) -> str:
    """Which client an entry is for, when it names one."""
    return f" (client {entry.client})" if entry.client else ""


def compare_markdown(comparison: Comparison) -> str:
    a, b = comparison.labels
    lines = [f"## Conformance side by side: {a} vs {b}", "",
             f"- **{a}**: {run_line(comparison.a)}", f"- **{b}**: {run_line(comparison.b)}", "",
             f"{len(comparison.differing)} of {len(comparison.cells)} cells differ; "
             f"{len(comparison.in_one_run)} ran in one run only.", ""]
    for title, cells in (("Where the verdicts differ", comparison.differing),
                         ("Run by one side only", comparison.in_one_run)):
        if cells:
            lines += [f"### {title}", "", f"| area | spec | {a} | {b} |", "|---|---|---|---|"]
            lines += [f"| {c.area} | {c.spec_id} | {cell(c.a) or 'not run'} | {cell(c.b) or 'not run'} |"
                      for c in cells] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _inline(text: str) -> str:
    return " ".join(str(text).split())


def _cell_text(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
