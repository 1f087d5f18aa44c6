"""The pages people read, laid out by a real browser (headless Chromium, suites/reports/browser.py)
at 1,280 and 1,920 px: the conformance matrix of a run as wide as the whole catalog stays inside
the window (it scrolls in its own box) with its row labels in view at its far right edge; a
61-step broker timeline keeps its lane names in view when scrolled to its end; the trace diff's
bar labels are neither clipped nor cut to the same text; the comparison's matrix (two verdicts a
cell) stays inside the window as the report's does.

Skipped, saying why, where Chromium is not installed (`./dev setup` installs Debian's `chromium`).
"""

from __future__ import annotations

import pytest

from suites.reports import browser
from suites.reports.samples import full_run
from reports.html import write_report

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(browser.BROWSER is None,
                                 reason="headless Chromium is not installed (Debian: apt-get install chromium; "
                                        "./dev setup installs it)")]

WIDTHS = (1280, 1920)
SLACK = 1  # px: rounding of fractional layout


def inside(box: dict, left: float, right: float) -> bool:
    return box["left"] >= left - SLACK and box["right"] <= right + SLACK


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("full-run")
    full_run(folder)
    return write_report(folder)


def assert_matrices_in_view(seen: dict) -> None:
    viewport = seen["viewport"]
    assert seen["page"] <= viewport, f"the page is {seen['page']} px wide in a {viewport} px window"
    for matrix in seen["matrices"]:
        assert inside(matrix["box"], 0, viewport), f"the matrix's box {matrix['box']} leaves the window"
        assert all(inside(cell, 0, viewport) for cell in matrix["last"]), "the last column cannot be reached"
        assert matrix["head"]["shown"], f"the header is out of view at the matrix's last row: {matrix['head']}"
        for label in matrix["labels"]:
            assert inside(label["box"], matrix["box"]["left"], viewport) and label["shown"], \
                f"row label {label['text']!r} is out of view with the matrix scrolled to its right edge: {label}"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_matrix_and_the_timelines_stay_in_the_window(report, width):
    seen = browser.layout(report, width)
    assert seen["viewport"] <= width
    assert len(seen["matrices"]) == 2  # by area, by guarantee
    assert_matrices_in_view(seen)
    wide = [t for t in seen["timelines"] if t["scrolls"]]
    assert wide, "no timeline is wider than the window: the sample no longer tests the lane names"
    for timeline in seen["timelines"]:
        assert inside(timeline["box"], 0, seen["viewport"])
        assert {lane["text"] for lane in timeline["lanes"]} >= {"producer", "c0"}
        for lane in timeline["lanes"]:
            assert inside(lane["box"], timeline["box"]["left"], timeline["box"]["right"]) and lane["shown"], \
                f"lane name {lane['text']!r} is out of view with the timeline scrolled to its end: {lane}"


def test_the_comparison_s_matrix_stays_in_the_window(report, tmp_path):
    from reports.compare import compare, render_html
    from reports.results import load_summary

    run = load_summary(report.parent / "summary.json")
    page = tmp_path / "compare.html"
    page.write_text(render_html(compare(run, run, ("4.0.7", "4.2.4"))))
    seen = browser.layout(page, 1280)
    assert len(seen["matrices"]) == 1
    assert_matrices_in_view(seen)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_screenshot_is_the_window_s_width(report, width, tmp_path):
    png = browser.screenshot(report, width, tmp_path / f"report-{width}.png")
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(header[16:20], "big") == width


def test_the_trace_diff_s_bar_labels_are_whole_and_apart(tmp_path):
    from suites.reports.samples import trace_diff_summary
    from traces import report as diff_report

    summary = trace_diff_summary()
    page = tmp_path / "report.html"
    page.write_text(diff_report.html(summary, []))
    seen = browser.layout(page, 1280)
    assert seen["page"] <= seen["viewport"]
    labels = [label for chart in seen["charts"] for label in chart["labels"]]
    wanted = [diff_report.signature_label(s) for s in summary["signatures"]]
    texts = [label["text"].strip() for label in labels]
    assert set(wanted) <= set(texts), "a signature's label is cut"
    for chart in seen["charts"]:
        for label in chart["labels"]:
            assert inside(label["box"], chart["box"]["left"], chart["box"]["right"]), \
                f"bar label {label['text']!r} is clipped: {label['box']} outside {chart['box']}"
