"""A corrupt page inside a corpus is found and named: `diff` and `validate` exit 2 with a message
naming the file (corpus.json keeps each data file's size and CRC-32; validate also decodes every
page), never a pass ("programs same") nor a Spark stack trace."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest

from traces import corpus as c
from traces.cli import main

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def generated(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("corrupt") / "corpus"
    assert main(["generate", "--out", str(path), "--programs", "20", "--steps", "20", "--matrix",
                 "subscription_type=Shared", "-q"]) == 0
    return path


def _damage(corpus, column: str, length: int):
    """Flip `length` bytes in the middle of one column chunk of one events file; its footer stays."""
    victim = sorted((corpus / c.EVENTS).rglob("*.parquet"))[0]
    metadata = pq.ParquetFile(victim).metadata
    chunk = metadata.row_group(0).column(metadata.schema.names.index(column))
    data = bytearray(victim.read_bytes())
    middle = chunk.data_page_offset + chunk.total_compressed_size // 2
    for i in range(middle, middle + length):
        data[i] ^= 0xFF
    victim.write_bytes(bytes(data))
    return victim


@pytest.fixture(params=[("at", 40), ("op", 16)], ids=["page-does-not-decode", "page-decodes-to-other-values"])
def corrupt(generated, tmp_path, request):
    copy = tmp_path / "corrupt"
    shutil.copytree(generated, copy)
    return copy, _damage(copy, *request.param)


def test_diff_names_the_corrupt_file_and_writes_nothing(generated, corrupt, tmp_path, capsys):
    copy, victim = corrupt
    assert main(["diff", str(copy), str(generated), "--out", str(tmp_path / "diff"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"{victim.relative_to(copy)}: corrupt" in err
    assert not (tmp_path / "diff").exists()


def test_validate_names_the_corrupt_file(corrupt, capsys):
    copy, victim = corrupt
    assert main(["validate", str(copy), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(victim.relative_to(copy)) in err and "Traceback" not in err


def test_validate_decodes_every_page_of_a_dataset_without_manifest(generated, tmp_path, capsys):
    events = tmp_path / "events"
    shutil.copytree(generated / c.EVENTS, events)
    victim = _damage(tmp_path, "at", 40)
    assert main(["validate", str(events), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{victim.relative_to(events)}: a page does not decode" in err


def test_an_intact_corpus_still_validates_and_diffs(generated, tmp_path):
    assert main(["validate", str(generated), "-q"]) == 0
    assert main(["diff", str(generated), str(generated), "--out", str(tmp_path / "d"), "--fail-on-divergence", "-q"]) == 0
