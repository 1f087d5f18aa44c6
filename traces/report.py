"""The diff's HTML page: one self-contained file (inline CSS, no script, no server, no CDN).

It reads results, never decides them: the summary written by the diff job and the steps of the
representative programs. Charts (HTML bars, each label whole): programs per status, divergent
programs per signature and per spec.
"""

from __future__ import annotations

from html import escape

from model.describe import describe_completion, describe_op
from model.history import FIELDS, Event, MalformedEvent, completion_of, op_of

SHOWN_BARS = 30
TABLE_ROWS = 200
COLORS = {"same": "#7fb77e", "differs": "#d9534f", "only_expected": "#f0ad4e", "only_observed": "#5bc0de"}

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin-bottom:4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}tr.divergent td{background:#fde2e1}code{font-size:12px}.muted{color:#777}
.chart{display:grid;grid-template-columns:minmax(10em,45%) minmax(12em,1fr);gap:3px 10px;align-items:center;
max-width:980px;margin:8px 0;font-size:12px}.bar-label{overflow-wrap:anywhere}
.bar-track{display:flex;align-items:center;gap:4px}.bar{display:inline-block;height:14px}
"""


def bar_chart(rows: list[tuple[str, int, str]], *, title: str) -> str:
    """A horizontal bar chart in HTML: (label, value, color) per bar. Labels are whole and wrap
    (signatures differ only at their end); bars are a share of the widest."""
    if not rows:
        return f'<p class="muted">{escape(title)}: nothing to show.</p>'
    top = max(value for _, value, _ in rows) or 1
    bars = "".join(
        f'<div class="bar-label">{escape(label)}</div><div class="bar-track">'
        f'<span class="bar" style="width: calc((100% - 6em) * {value / top:.4f}); background: {color}"></span>'
        f'<span>{value:,}</span></div>' for label, value, color in rows)
    return f'<div class="chart" role="figure" aria-label="{escape(title)}">{bars}</div>'


def signature_label(sig: dict) -> str:
    return f"{sig['op']}: {sig['expected_class']} -> {sig['observed_class']} [{sig['fields']}] @ {sig['spec_id']}"


def _side(row: dict, side: str) -> str:
    if row.get(f"{side}_op") is None:
        return "(missing)"
    values = {name: row.get(f"{side}_{name}") for name in FIELDS}
    values.update(program_id=row["program_id"], step=row["step"], spec_id=row["spec_id"], spec="")
    if values["keys"] is not None:
        values["keys"] = tuple(values["keys"])
    try:
        event = Event(**values)
        return f"{describe_op(op_of(event))} -> {describe_completion(completion_of(event))}"
    except (MalformedEvent, TypeError, ValueError) as error:
        return f"{values['op']} -> {values['outcome']} ({error})"


def _program_table(sig: dict, steps: list[dict]) -> str:
    rows = [r for r in steps if r["spec_id"] == sig["spec_id"] and r["program_id"] == sig["representative_program"]]
    body = []
    for r in rows:
        divergent = ' class="divergent"' if r["step"] == sig["representative_step"] else ""
        body.append(f"<tr{divergent}><td>{r['step']}</td><td><code>{escape(_side(r, 'expected'))}</code></td>"
                    f"<td><code>{escape(_side(r, 'observed'))}</code></td></tr>")
    return (f"<h3>{escape(signature_label(sig))}</h3><p class=\"muted\">{sig['programs']:,} programs; shortest: "
            f"{escape(sig['representative_program'])} ({sig['representative_steps']} steps), first divergence at step "
            f"{sig['representative_step']}</p><table><tr><th>step</th><th>expected</th><th>observed</th></tr>"
            f"{''.join(body)}</table>")


def html(summary: dict, steps: list[dict]) -> str:
    programs = summary["programs"]
    sigs = summary["signatures"]
    status_rows = [(status, programs[status], COLORS[status]) for status in COLORS]
    sig_rows = [(signature_label(sig), sig["programs"], COLORS["differs"]) for sig in sigs[:SHOWN_BARS]]
    spec_rows = [(f"{r['describe']} ({r['spec_id']})", r["differs"], COLORS["differs"]) for r in summary["per_spec"]]
    table = "".join(
        f"<tr><td><code>{escape(s['signature'])}</code></td><td>{escape(s['op'])}</td><td>{escape(s['spec_id'])}</td>"
        f"<td>{escape(s['expected_class'])}</td><td>{escape(s['observed_class'])}</td><td>{escape(s['fields'])}</td>"
        f"<td>{s['programs']:,}</td><td>{escape(s['representative_program'])} ({s['representative_steps']} steps, "
        f"step {s['representative_step']})</td></tr>" for s in sigs[:TABLE_ROWS])
    spec_table = "".join(
        f"<tr><td><code>{escape(r['spec_id'])}</code></td><td>{escape(r['describe'])}</td>"
        + "".join(f"<td>{r[status]:,}</td>" for status in COLORS) + "</tr>" for r in summary["per_spec"])
    shown = {(r["spec_id"], r["program_id"]) for r in steps}
    examples = "".join(_program_table(sig, steps) for sig in sigs
                       if (sig["spec_id"], sig["representative_program"]) in shown)
    more = (f'<p class="muted">{summary["signature_count"] - len(sigs):,} more signatures are in signatures/.</p>'
            if summary["signature_count"] > len(sigs) else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Trace diff</title><style>{STYLE}</style></head><body>
<h1>Trace diff</h1>
<p>expected: <code>{escape(summary['expected']['path'])}</code> ({escape(summary['expected']['kind'])})<br>
observed: <code>{escape(summary['observed']['path'])}</code> ({escape(summary['observed']['kind'])})<br>
{summary['divergent_programs']:,} divergent programs in {summary['signature_count']:,} signatures.
Compared per step: <code>{escape(', '.join(summary['compared_columns']))}</code>.</p>
<h2>Programs</h2>{bar_chart(status_rows, title="programs per status")}
<h2>Divergent programs per signature</h2>{bar_chart(sig_rows, title="divergent programs per signature")}
<h2>Divergent programs per spec</h2>{bar_chart(spec_rows, title="divergent programs per spec")}
<table><tr><th>spec</th><th>description</th>{''.join(f'<th>{s}</th>' for s in COLORS)}</tr>{spec_table}</table>
<h2>Signatures</h2>
<table><tr><th>signature</th><th>op</th><th>spec</th><th>expected</th><th>observed</th><th>fields</th><th>programs</th>
<th>shortest program</th></tr>{table}</table>{more}
<h2>Shortest program per signature</h2>{examples or '<p class="muted">No divergence.</p>'}
</body></html>
"""
