"""Two runs side by side (reports/compare.py): exactly the cells whose verdicts differ are found."""

from __future__ import annotations

import re
from dataclasses import replace

from reports import compare
from suites.reports.samples import result, save, summary

A = summary(result("individual_ack", "Shared", "passed"),
            result("individual_ack", "Exclusive", "failed", guarantee="no-loss"),
            result("negative_ack", "Shared", "passed"),
            result("seek", "Shared", "failed", guarantee="no-loss"),
            result("cumulative_ack", "Exclusive", "not applicable", reason="not on this target"), version="4.0.7")
B = summary(result("individual_ack", "Shared", "failed", guarantee="no-loss"),
            result("individual_ack", "Exclusive", "failed", guarantee="no-loss", examples=3, steps=9),
            result("negative_ack", "Shared", "unknown", reason="time limit"),
            result("seek", "Shared", "failed", guarantee="order"),
            result("cumulative_ack", "Exclusive", "not applicable", reason="not on this target"),
            result("batches", "Shared", "passed"), version="4.2.4")
DIFFERING = {("individual_ack", "Shared"), ("negative_ack", "Shared"), ("seek", "Shared")}


def test_the_cells_whose_verdicts_differ_and_only_those():
    comparison = compare.compare(A, B)
    assert {(c.area, c.spec_id) for c in comparison.differing} == DIFFERING
    assert [(c.area, c.spec_id) for c in comparison.in_one_run] == [("batches", "Shared")]
    assert len(comparison.cells) == 6
    assert comparison.labels == ("4.0.7", "4.2.4")  # the Pulsar versions name the runs


def test_identical_verdicts_do_not_differ_whatever_the_counts():
    assert compare.compare(A, A).differing == ()


def test_the_page_marks_the_differing_cells(tmp_path):
    page = compare.render_html(compare.compare(A, B))
    assert len(re.findall(r'<td class="[a-z -]+ differs"', page)) == len(DIFFERING)
    assert "3 of 6 cells differ" in page and "1 run by one side only" in page
    assert "seek [Shared]</b>: 4.0.7 failed: no-loss, 4.2.4 failed: order" in page
    assert "batches [Shared]</b>: 4.0.7 not run, 4.2.4 passed" in page
    assert not re.search(r"https?://", page) and "<script" not in page


def test_the_command_line_writes_both_pages_and_can_fail_on_a_difference(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = save(tmp_path / "a", A), save(tmp_path / "b", B)
    (tmp_path / "a" / "report.html").write_text("<html></html>")
    out = tmp_path / "side-by-side"
    assert compare.main([str(a), str(b), "--out", str(out), "--labels", "LTS", "latest"]) == 0
    markdown = (out / "compare.md").read_text()
    assert "| seek | Shared | ❌ no-loss | ❌ order |" in markdown and markdown in capsys.readouterr().out
    assert "3 of 6 cells differ; 1 ran in one run only" in markdown
    assert "| batches | Shared | not run | ✅ |" in markdown
    assert 'href="../a/report.html"' in (out / "compare.html").read_text()
    assert compare.main([str(a), str(b), "--out", str(out), "--fail-on-difference"]) == 1
    assert compare.main([str(a), str(a), "--out", str(out), "--fail-on-difference"]) == 0


def test_a_malformed_summary_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{}")
    assert compare.main([str(tmp_path / "bad.json"), str(tmp_path / "bad.json"), "--out", str(tmp_path)]) == 2
    assert "not a conformance summary" in capsys.readouterr().err


def with_client(run, name: str, version: str):
    return replace(run, run={**run.run, "client": {"name": name, "version": version, "pulsar-client": "3.13.0"}})


def test_two_clients_on_one_broker_compare_as_two_versions_do(tmp_path, capsys):
    crashed = result("negative_ack", "Shared", "unknown", reason="client crashed: java 4.0.7 exited with code 134",
                     reason_kind="client crashed")
    python = with_client(summary(result("negative_ack", "Shared", "passed"), result("seek", "Shared", "passed")),
                         "python", "3.13.0")
    java = with_client(summary(crashed, result("seek", "Shared", "passed")), "java", "4.0.7")
    comparison = compare.compare(python, java)
    assert comparison.labels == ("python 3.13.0", "java 4.0.7")  # the broker is the same: the clients name the runs
    assert [(c.area, c.spec_id) for c in comparison.differing] == [("negative_ack", "Shared")]
    a, b = save(tmp_path / "a", python), save(tmp_path / "b", java)
    assert compare.main([str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    markdown = capsys.readouterr().out
    assert "- **python 3.13.0**: target `pulsar` · Pulsar 4.0.7 (embedded broker) · client python 3.13.0" in markdown
    assert "| negative_ack | Shared | ✅ | ❔ client crashed |" in markdown
    page = (tmp_path / "out" / "compare.html").read_text()
    assert '<td class="unknown k-client-crashed differs">' in page and "java 4.0.7: ? unknown: client crashed" in page


def test_an_unknown_of_another_kind_is_a_difference():
    timed_out = summary(result("seek", "Shared", "unknown", reason="the test raised TimeoutError"))
    refused = summary(result("seek", "Shared", "unknown", reason="the test raised ConnectError: Connection refused"))
    assert len(compare.compare(timed_out, refused).differing) == 1


def on_broker(run, version: str, service_url: str | None):
    """The run's broker as reports/plugin.py records it: embedded, or given (--service-url)."""
    where = ({"embedded": True, "source": "embedded broker"} if service_url is None else
             {"embedded": False, "service_url": service_url, "source": f"existing broker at {service_url}"})
    return replace(run, run={**run.run, "pulsar": {"version": version, **where}})


def test_runs_on_an_embedded_and_a_given_broker_are_named_by_where_the_broker_was():
    run = summary(result("seek", "Shared", "passed"))
    embedded, given = on_broker(run, "4.2.4", None), on_broker(run, "4.2.4", "pulsar://cluster:6650")
    assert compare.run_labels(embedded, given) == ("embedded", "at pulsar://cluster:6650")
    assert compare.run_labels(on_broker(run, "4.0.7", None), given) == ("4.0.7", "4.2.4")  # the versions say it
