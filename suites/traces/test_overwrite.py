"""--overwrite replaces only what the trace jobs wrote (a corpus, a recording, a diff, known by
its manifest): never a folder of someone's documents, the working directory or a folder that
holds an input."""

from __future__ import annotations

import json

import pytest

from traces import corpus as c
from traces.cli import main
from traces.schema import CorpusError


def _documents(folder):
    folder.mkdir()
    (folder / "letter.txt").write_text("dear reader")
    return folder


@pytest.mark.parametrize("manifest, content", [
    (c.MANIFEST, {"format": c.FORMAT, "kind": "generated"}),
    (c.MANIFEST, {"format": c.FORMAT, "kind": "recorded"}),
    (c.SUMMARY, {"format": c.FORMAT, "kind": "diff"}),
    (c.RECORD_STATE, {"source": "/corpus", "target": "model", "chunks": {}}),
])
def test_an_output_of_the_jobs_may_be_replaced(tmp_path, manifest, content):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / manifest).write_text(json.dumps(content))
    c.refuse_existing(tmp_path / "out", overwrite=True)


@pytest.mark.parametrize("make", [
    lambda base: _documents(base / "documents"),
    lambda base: (base / "empty").mkdir() or base / "empty",
    lambda base: (base / "file.parquet").write_bytes(b"PAR1") and base / "file.parquet",
    lambda base: (_documents(base / "foreign") / c.MANIFEST).write_text('{"format": "other/1"}') and base / "foreign",
])
def test_anything_else_is_refused_even_with_overwrite(tmp_path, make):
    target = make(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(CorpusError, match="not a corpus, recording or diff written by python -m traces"):
        c.refuse_existing(target, overwrite=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_the_working_directory_and_its_parents_are_refused(tmp_path, monkeypatch):
    here = tmp_path / "work"
    here.mkdir()
    (here / c.MANIFEST).write_text(json.dumps({"format": c.FORMAT, "kind": "generated"}))
    monkeypatch.chdir(here)
    for target in (here, tmp_path):
        with pytest.raises(CorpusError, match="working directory"):
            c.refuse_existing(target, overwrite=True)


def test_a_folder_holding_an_input_is_refused(tmp_path):
    (tmp_path / c.SUMMARY).write_text(json.dumps({"format": c.FORMAT, "kind": "diff"}))
    with pytest.raises(CorpusError, match="overlaps the input"):
        c.refuse_existing(tmp_path, overwrite=True, inputs=(tmp_path / "corpus",))


@pytest.mark.spark
@pytest.mark.parametrize("out", ["documents", "."])
def test_generate_overwrite_leaves_documents_and_the_working_directory_alone(spark, tmp_path, monkeypatch, capsys, out):
    documents = _documents(tmp_path / "documents")
    monkeypatch.chdir(documents if out == "." else tmp_path)
    assert main(["generate", "--out", out, "--overwrite", "--programs", "1", "--steps", "2",
                 "--matrix", "subscription_type=Exclusive", "-q"]) == 2
    assert "refusing to replace it even with --overwrite" in capsys.readouterr().err
    assert sorted(p.name for p in documents.iterdir()) == ["letter.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["documents"]


@pytest.mark.spark
def test_generate_overwrite_replaces_a_corpus(spark, tmp_path):
    def generate(programs: int, *extra: str) -> int:
        return main(["generate", "--out", str(tmp_path / "corpus"), "--programs", str(programs), "--steps", "4",
                     "--matrix", "subscription_type=Exclusive", "-q", *extra])

    assert generate(2) == 0
    assert generate(3, "--overwrite") == 0
    assert json.loads((tmp_path / "corpus" / c.MANIFEST).read_text())["programs"] == 3
