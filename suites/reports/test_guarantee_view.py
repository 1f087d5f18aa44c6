"""The report's guarantee view (reports/results.py `guarantee_view`, in summary.json, summary.md and
report.html): one row per guarantee, each spec id's cell over every test that can break it there;
a failure lands in the row of the guarantee it names, and only there."""

from __future__ import annotations

import json
import re

from model.guarantees import Guarantee
from reports import html
from reports.markdown import summary_markdown
from reports.results import NOT_RUN, guarantee_cell, guarantee_view, load_summary
from reports.vocabulary import FAILED, NOT_APPLICABLE, PASSED, UNKNOWN
from suites.reports.samples import result, save, summary

CAN = ("no-loss", "order", "cursor", "no-redelivery-after-ack")
RUN = summary(
    result("individual_ack", "Exclusive", FAILED, guarantee="no-loss", detail="m2 never came",
           failure="individual_ack-Exclusive", can_break=CAN),
    result("individual_ack", "Shared", PASSED, can_break=CAN),
    result("seek", "Shared", UNKNOWN, reason="the test raised TimeoutError: broker gone",
           can_break=("no-loss", "no-redelivery-after-ack")),
    result("seek", "Exclusive", PASSED, can_break=("no-loss", "no-redelivery-after-ack")),
    result("ack_timeout", "Shared", NOT_APPLICABLE, reason="slow", can_break=("no-duplicate-without-cause", "order")),
    result("key_shared", "Key_Shared", NOT_APPLICABLE, reason="not on this target",
           can_break=("key-shared-stickiness",)))


def outcomes(run=RUN) -> dict[str, dict[str, str]]:
    return {g: {s: c.outcome for s, c in cells.items()} for g, cells in guarantee_view(run).items()}


def test_a_failure_lands_in_the_row_of_the_guarantee_it_names():
    view = outcomes()
    assert view["no-loss"]["Exclusive"] == FAILED
    cell = guarantee_cell(RUN, "no-loss", "Exclusive")
    assert [(area, v.failure) for area, v in cell.failures] == [("individual_ack", "individual_ack-Exclusive")]
    # the same test could break order and cursor, but stopped on no-loss: undecided there, never failed
    assert view["order"]["Exclusive"] == view["cursor"]["Exclusive"] == UNKNOWN
    assert "individual_ack: failed on no-loss first" in guarantee_cell(RUN, "cursor", "Exclusive").reasons
    assert not any(guarantee_cell(RUN, g, s).failures for g in view for s in ("Exclusive", "Shared")
                   if g != "no-loss")


def test_a_cell_passes_only_when_every_test_that_can_break_it_passed():
    view = outcomes()
    assert view["cursor"]["Shared"] == PASSED  # only individual_ack can break it there
    assert view["no-loss"]["Shared"] == UNKNOWN  # individual_ack passed, seek is unknown
    assert guarantee_cell(RUN, "no-loss", "Shared").reasons == (
        "seek: timed out: the test raised TimeoutError: broker gone",)  # the unknown's kind, then its reason
    assert view["no-redelivery-after-ack"]["Exclusive"] == UNKNOWN  # individual_ack stopped on no-loss, seek passed
    assert view["order"]["Shared"] == PASSED  # ack_timeout not applicable: listed, not a failure
    assert guarantee_cell(RUN, "order", "Shared").reasons == ("ack_timeout: not applicable, slow",)
    assert view["key-shared-stickiness"] == {"Key_Shared": NOT_APPLICABLE}
    assert guarantee_cell(RUN, "dead-letter", "Shared").outcome == NOT_RUN
    assert list(view) == [g.value for g in Guarantee]  # every guarantee has its row, run or not


def test_a_failure_a_test_did_not_declare_still_lands_in_its_row():
    run = summary(result("seek", "Shared", FAILED, guarantee="ack", failure="seek-Shared", can_break=("no-loss",)))
    assert outcomes(run)["ack"] == {"Shared": FAILED}
    assert outcomes(run)["no-loss"] == {"Shared": UNKNOWN}


def test_summary_json_holds_the_view_and_reads_back(tmp_path):
    path = save(tmp_path, RUN)
    raw = json.loads(path.read_text())
    assert raw["guarantee_matrix"]["no-loss"]["Exclusive"]["failures"] == [
        {"area": "individual_ack", "guarantee": "no-loss", "detail": "m2 never came",
         "failure": "individual_ack-Exclusive", "undecided": False, "signature": None,
         "replayed": None}]
    assert raw["guarantee_matrix"]["dead-letter"] == {}
    assert set(raw) >= {"matrix", "totals", "results", "run"}  # the area view's keys stay for old readers
    assert load_summary(path) == RUN


def test_an_old_summary_without_can_break_places_its_failures_only(tmp_path):
    path = save(tmp_path, RUN)
    raw = json.loads(path.read_text())
    for item in raw["results"]:
        del item["can_break"]
    path.write_text(json.dumps(raw))
    old = load_summary(path)
    assert outcomes(old)["no-loss"] == {"Exclusive": FAILED}
    assert outcomes(old)["cursor"] == {}


def test_the_markdown_shows_the_failure_in_its_guarantees_row():
    text = summary_markdown(RUN)
    rows = {line.split(" | ")[0].strip("| `"): line for line in text.splitlines() if line.startswith("| `")}
    assert "| guarantee | Exclusive | Shared | Key_Shared |" in text
    assert rows["no-loss"] == "| `no-loss` | ❌ individual_ack | ❔ unknown |  |"
    assert rows["cursor"] == "| `cursor` | ❔ unknown | ✅ |  |"
    assert "individual_ack" not in rows["order"] + rows["cursor"]


def test_the_page_links_the_failure_from_its_guarantees_row_only(tmp_path):
    save(tmp_path, RUN)
    assert html.main([str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    table = page[page.index('<table class="matrix guarantees">'):]
    table = table[:table.index("</table>")]
    rows = dict(re.findall(r'<tr id="g-([a-z-]+)">(.*?)</tr>', table))
    assert list(rows) == [g.value for g in Guarantee]
    assert '<a href="#f-individual_ack-Exclusive">individual_ack</a>' in rows["no-loss"]
    assert [g for g, row in rows.items() if "#f-" in row] == ["no-loss"]
    assert re.search(r'<td class="passed"[^>]*>✓ passed</td>', rows["cursor"])
