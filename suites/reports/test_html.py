"""The static report (reports/html.py): self-contained, the matrix first, then each failure with its
guarantee, its picture, its shrunk program and its reproduction."""

from __future__ import annotations

import re

from reports import html
from suites.reports.samples import failed_run_with_files


def page(tmp_path) -> str:
    failed_run_with_files(tmp_path)
    assert html.main([str(tmp_path)]) == 0
    return (tmp_path / "report.html").read_text()


def test_the_page_needs_nothing_from_the_network(tmp_path):
    text = page(tmp_path)
    assert not re.search(r"https?://", text)
    assert "<script" not in text and "<link" not in text and " src=" not in text
    assert not re.search(r'href="(?!#|failures/)', text)  # only anchors and the run's own files


def test_the_matrix_comes_first_then_the_failure_with_its_picture(tmp_path):
    text = page(tmp_path)
    assert text.index('id="matrix"') < text.index('class="failure"')
    article = text[text.index('class="failure"'):]
    assert "individual_ack [Exclusive]: broke no-loss" in article
    assert "every unacknowledged message is eventually delivered" in article  # the guarantee's promise
    assert "drained every consumer, yet m2 never came" in article
    assert article.count('<svg class="timeline"') == 1
    assert len(re.findall(r'<g class="ev"', article)) == 7  # the seven ops of the shrunk program


def test_the_failure_tells_the_shrunk_program_and_how_to_reproduce_it(tmp_path):
    text = page(tmp_path)
    story = re.search(r'<ol class="story" start="0">(.*?)</ol>', text, re.S).group(1)
    assert re.findall(r"<li>(.*?)</li>", story)[:4] == [
        "send -&gt; ok m0 @0ms", "send -&gt; ok m1 @0ms", "send -&gt; ok m2 @0ms", "c0: subscribe -&gt; ok @0ms"]
    assert "replay(&#x27;fixtures.targets.faulty:LosesAMessage&#x27;" in text
    assert 'href="failures/individual_ack-Exclusive.jsonl"' in text


def test_cells_show_their_verdict_and_a_failed_cell_links_to_its_failure(tmp_path):
    text = page(tmp_path)
    assert re.search(r'<td class="failed"[^>]*><a href="#f-individual_ack-Exclusive">✗ no-loss</a>', text)
    assert 'id="f-individual_ack-Exclusive"' in text
    assert re.search(r'<td class="passed"[^>]*>✓ passed', text)
    assert re.search(r'<td class="unknown k-timed-out"[^>]*>\? timed out', text)  # its kind, its own style
    assert "TimeoutError: broker gone" in text  # why it is unknown


def test_a_missing_summary_is_a_clear_error(tmp_path, capsys):
    assert html.main([str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err
