"""The generated guarantees table (reports/guarantees.py): GUARANTEES.md and the README's block are
what the sources give, every empty cell has a reason, and what the table reads is there."""

from __future__ import annotations

import pytest

from model.guarantees import Guarantee
from reports import guarantees as table
from reports.guarantees import BEGIN, BROKER, PROOFS, README, ROOT, TABLE, MissingInterface


def test_guarantees_md_and_the_readme_block_are_up_to_date():
    assert table.stale() == [], "run: python -m reports.guarantees"


def test_every_guarantee_has_its_section_and_its_readme_row():
    text = (ROOT / TABLE).read_text()
    readme = (ROOT / README).read_text()
    for g in Guarantee:
        assert f"\n## {g.value}\n\n> {g.promise}\n" in text
        assert f"| [`{g.value}`]({TABLE}#{g.value}) | " in readme
        assert f"`report.html#g-{g.value}`" in text


@pytest.fixture
def copy(tmp_path):
    """Up-to-date copies of both files, whatever the state of the repository's own."""
    for name, text in table.expected().items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_an_edited_table_is_out_of_date(copy):
    path = copy / TABLE
    path.write_text(path.read_text().replace("## no-loss", "## no-loss (edited)"))
    assert table.stale(copy) == [TABLE]


def test_an_edited_readme_block_is_out_of_date(copy):
    path = copy / README
    text = path.read_text()
    path.write_text(text.replace(BEGIN, BEGIN + "\n| extra | row |"))
    assert table.stale(copy) == [README]
    path.write_text(text.replace("| [`no-phantom`]", "| [`no-ghost`]"))
    assert table.stale(copy) == [README]


def test_text_around_the_readme_block_is_the_readme_s_own(copy):
    path = copy / README
    path.write_text("# A new title\n" + path.read_text())
    assert table.stale(copy) == []


def test_an_empty_cell_without_a_reason_fails(monkeypatch):
    monkeypatch.setitem(table.EMPTY_BECAUSE, BROKER, {})
    with pytest.raises(MissingInterface, match="empty cells without a reason.*no-phantom: Broker tests"):
        table.rows()


def test_a_guarantee_without_proof_needs_the_proof_catalog_s_reason(monkeypatch):
    import model.smt.catalog

    because = dict(model.smt.catalog.NO_PROOF_BECAUSE)
    unproved = next(iter(because))
    del because[unproved]
    monkeypatch.setattr(model.smt.catalog, "NO_PROOF_BECAUSE", because)
    with pytest.raises(MissingInterface, match=f"{unproved.value}: {PROOFS}"):
        table.rows()


@pytest.mark.parametrize("module, name", [("model.checks", "RULES"), ("model.smt.catalog", "PROOFS"),
                                          ("model.smt.catalog", "NO_PROOF_BECAUSE")])
def test_a_missing_layer_is_an_error_naming_it(monkeypatch, module, name):
    import importlib

    monkeypatch.delattr(importlib.import_module(module), name)
    with pytest.raises(MissingInterface, match=rf"{module}\.{name} is missing"):
        table.rows()


def test_the_known_divergences_are_read_with_their_guarantees_and_versions():
    text = ("## Settled divergences\n\n### KD-8: `seek(message)` does not deliver the message\n"
            "- **Guarantee:** `no-loss`, `cursor`\n- **Seen on:** Pulsar 4.0.7 (pulsar-client 3.13.0)\n\nWhy.\n\n"
            "### KD-9: Another\n- **Guarantee:** `order`\n- **Seen on:** Pulsar 4.0.7, 4.2.4\n")
    first, second = table.known_divergences(text)
    assert (first.number, first.guarantees, first.seen_on) == (8, ("no-loss", "cursor"),
                                                              "Pulsar 4.0.7 (pulsar-client 3.13.0)")
    assert first.anchor == "kd-8-seekmessage-does-not-deliver-the-message"  # GitHub's anchor of the heading
    assert second.guarantees == ("order",)


@pytest.mark.parametrize("text, message", [
    ("# Known divergences\n\nnothing in the new format\n", "no '### KD-<n>: <title>' entries"),
    ("### KD-3: No guarantee line\n- **Seen on:** Pulsar 4.0.7\n", "KD-3 has no"),
    ("### KD-4: Unknown\n- **Guarantee:** `no-ghost`\n- **Seen on:** Pulsar 4.0.7\n", "KD-4 names no-ghost"),
], ids=["old-format", "no-guarantee", "unknown-guarantee"])
def test_a_malformed_known_divergence_is_an_error_naming_it(text, message):
    with pytest.raises(MissingInterface, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        table.known_divergences(text)


def test_every_broker_test_names_its_guarantee(tmp_path):
    assert table.broker_tests()  # the repository's own: each marked, each mark a guarantee
    (tmp_path / "suites" / "broker").mkdir(parents=True)
    (tmp_path / "suites" / "broker" / "test_new.py").write_text(
        "import pytest\n\n\n@pytest.mark.guarantee(\"no-loss\")\ndef test_marked():\n    pass\n\n\n"
        "def test_unmarked():\n    pass\n\n\n@pytest.mark.guarantee(\"no-ghost\")\ndef test_wrong():\n    pass\n")
    with pytest.raises(MissingInterface) as raised:
        table.broker_tests(tmp_path)
    assert "suites/broker/test_new.py::test_unmarked has no @pytest.mark.guarantee" in str(raised.value)
    assert "test_wrong marks no-ghost, not a guarantee" in str(raised.value)
    assert "test_marked" not in str(raised.value)


def test_the_mutants_column_is_the_recorded_sample_s_and_a_missing_record_names_its_command(tmp_path):
    score = table.mutation_score()
    readme = (ROOT / README).read_text()
    killed, survived = score.of(Guarantee.NO_LOSS)
    assert f"| {killed} of {killed + survived} |" in readme.split(f"[`{Guarantee.NO_LOSS.value}`]")[1].splitlines()[0]
    assert score.summary() in readme
    with pytest.raises(MissingInterface, match="mutation-score.json is missing or malformed.*--record"):
        table.mutation_score(tmp_path)
    (tmp_path / table.MUTATION).parent.mkdir(parents=True)
    (tmp_path / table.MUTATION).write_text('{"commit": "abc"}')
    with pytest.raises(MissingInterface, match="KeyError"):
        table.mutation_score(tmp_path)
