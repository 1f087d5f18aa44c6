"""A corpus on disk, how it is opened (checked against the schema), and how outputs are written so
that nothing already written is lost.

    <corpus>/events/spec_id=<id>/*.parquet   the events (model.history.Event), partitioned by spec
    <corpus>/programs/*.parquet              one row per program: steps, fingerprint, seed
    <corpus>/corpus.json                     what made it (kind, seed, specs, counts) and the size
                                             and CRC-32 of each data file, written last

Opening a corpus checks every data file against corpus.json's sizes and CRC-32s (a diff reads
only the pages of differing programs: a corrupt page elsewhere would go unnoticed), and every
file's footer against the schema. An input may also be a bare Parquet dataset or file of events (its per-program table is then
computed on the fly), or a JSON-lines history. Outputs are built in a hidden staging directory next
to the target and renamed into place when complete; an existing output is refused unless
`overwrite`, and then it is replaced only after the new one is complete, and only if these jobs
wrote it (its manifest says so): never another folder, the working directory or a folder that
holds an input. Paths are local (or a shared mount on a cluster).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from traces import schema as s
from traces.transforms import program_table

EVENTS = "events"
PROGRAMS = "programs"
MANIFEST = "corpus.json"
FORMAT = "pulsar-ack-traces/1"
HISTORY_SUFFIXES = (".jsonl", ".ndjson", ".json")
# The events' layout is designed for diffing: each file holds a range of program ids sorted by
# (program, step), written in pages with a page index, so a scan filtered on a few program ids
# reads only their pages. The page size balances what a diff of N programs costs: Parquet checks
# each listed id against the page index at a cost that grows with the number of pages (about
# 1 us per id and page), and decodes a whole page for each id. Measured on 50M events and 1077
# differing programs: the scans of the listed programs take about 40% less time with pages of
# 4000 events than with 1000, the whole diff about the same.
PAGE_ROWS = 4000
ROW_GROUP_BYTES = 32 << 20
EVENTS_PER_FILE = 4_000_000
WRITE_OPTIONS = {"parquet.page.row.count.limit": str(PAGE_ROWS), "parquet.block.size": str(ROW_GROUP_BYTES),
                 "compression": "snappy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Corpus:
    path: Path
    events: DataFrame
    programs: DataFrame | None  # None: not stored, computed on demand
    manifest: dict

    def program_table(self) -> DataFrame:
        return self.programs if self.programs is not None else program_table(self.events)


def write_events(events: DataFrame, path: str | os.PathLike, *, expected_events: int, specs: dict[str, str]) -> None:
    """Write events partitioned by spec, each file sorted by program and step and holding its own
    range of program ids (about EVENTS_PER_FILE events), so that a scan filtered on a few program
    ids finds each in one page of one file. The spec's JSON (`specs`: spec_id -> JSON) is dropped
    before the shuffle and put back after. (The generate job's tasks write their own files:
    traces.run.generate_files.)"""
    texts = F.create_map(*[F.lit(v) for pair in sorted(specs.items()) for v in pair])
    events = events.drop("spec")
    per_spec = max(1, round(expected_events / max(len(specs), 1) / EVENTS_PER_FILE))
    events = events.repartitionByRange(max(1, len(specs) * per_spec), s.PARTITION, "program_id")
    (events.sortWithinPartitions(s.PARTITION, "program_id", "step")
     .select(*[F.element_at(texts, F.col(s.PARTITION)).alias("spec") if f == "spec" else F.col(f) for f in s.FIELDS])
     .write.options(**WRITE_OPTIONS).partitionBy(s.PARTITION).parquet(str(path)))


def _read_parquet(spark: SparkSession, path: Path, types: dict[str, str]) -> DataFrame:
    schema = s.spark_schema(types)
    if s.exact_file_schema(path, types):
        return spark.read.schema(schema).parquet(str(path)).selectExpr(*(f"`{name}`" for name in schema.names))
    # Lossless widening (checked by inspect_parquet): read as stored, cast in the select (one
    # expression list: a Column per field costs dozens of calls to the JVM each).
    return spark.read.parquet(str(path)).selectExpr(
        *(f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in schema.fields))


def _is_history(path: Path) -> bool:
    if path.suffix in HISTORY_SUFFIXES:
        return True
    with path.open("rb") as handle:
        return handle.read(1) in (b"{", b"")


def open_corpus(spark: SparkSession, path: str | os.PathLike) -> Corpus:
    """Open and check a corpus directory, a Parquet dataset of events, or a JSON-lines history."""
    base = Path(path).absolute()
    if not base.exists():
        raise s.CorpusError(base, "not found")
    if base.is_file() and _is_history(base):
        table = s.events_table(s.read_history(base))
        return Corpus(path=base, events=spark.createDataFrame(table).select(*s.FIELDS), programs=None,
                      manifest={"kind": "history"})
    events_path = base / EVENTS if (base / EVENTS).is_dir() else base
    programs_path = base / PROGRAMS
    problems = s.inspect_parquet(events_path, s.EVENT_TYPES)
    has_programs = events_path != base and programs_path.exists()
    if has_programs:
        problems += [f"{PROGRAMS}/{p}" for p in s.inspect_parquet(programs_path, s.PROGRAM_TYPES)]
    manifest = read_manifest(base) if events_path != base else {}
    if manifest.get(CHECKSUMS):
        problems += checksum_problems(base, manifest[CHECKSUMS])
    if problems:
        raise s.CorpusError(base, problems)
    events = _read_parquet(spark, events_path, s.EVENT_TYPES)
    programs = _read_parquet(spark, programs_path, s.PROGRAM_TYPES) if has_programs else None
    return Corpus(path=base, events=events, programs=programs, manifest=manifest)


def spec_texts(corpus: Corpus) -> dict[str, str]:
    """spec_id -> spec JSON: from corpus.json, else the first row of each spec_id=... directory."""
    if corpus.manifest.get("specs"):
        return dict(corpus.manifest["specs"])
    events = corpus.path / EVENTS if (corpus.path / EVENTS).is_dir() else corpus.path
    texts = {}
    if events.is_dir():
        for directory in sorted(events.glob(f"{s.PARTITION}=*")):
            files = s.data_files(directory)
            if files:
                first = next(pq.ParquetFile(files[0]).iter_batches(batch_size=1, columns=["spec"]), None)
                if first is not None and first.num_rows:
                    texts[directory.name.split("=", 1)[1]] = first.column(0)[0].as_py()
    if not texts:
        texts = {r.spec_id: r.spec for r in corpus.events.groupBy(s.PARTITION).agg(F.first("spec").alias("spec")).collect()}
    return texts


# corpus.json's record of the data files as written: relative path -> {"bytes": n, "crc32": hex}.
CHECKSUMS = "files"
_READ_BYTES = 8 << 20


def _crc32(file: Path) -> str:
    crc = 0
    with file.open("rb") as handle:
        while block := handle.read(_READ_BYTES):
            crc = zlib.crc32(block, crc)
    return f"{crc:08x}"


def _corpus_files(base: Path) -> list[Path]:
    return [f for folder in (EVENTS, PROGRAMS) if (base / folder).is_dir() for f in s.data_files(base / folder)]


def file_checksums(base: Path) -> dict[str, dict]:
    """Size and CRC-32 of each data file of the corpus at `base` (events/ and programs/), for
    corpus.json (zlib releases the GIL: the files are read on a few threads)."""
    files = _corpus_files(base)
    with ThreadPoolExecutor(max_workers=4) as pool:
        crcs = list(pool.map(_crc32, files))
    return {str(f.relative_to(base)): {"bytes": f.stat().st_size, "crc32": crc} for f, crc in zip(files, crcs)}


def checksum_problems(base: Path, recorded: dict[str, dict]) -> list[str]:
    """The data files that are not as corpus.json says they were written: changed (size or
    CRC-32), missing, or added since."""
    present = {str(f.relative_to(base)): f for f in _corpus_files(base)}
    problems = [f"{name}: listed in {MANIFEST} but missing" for name in sorted(set(recorded) - set(present))]
    problems += [f"{name}: not among the files {MANIFEST} lists (added after the corpus was written)"
                 for name in sorted(set(present) - set(recorded))]
    shared = sorted(set(present) & set(recorded))
    with ThreadPoolExecutor(max_workers=4) as pool:
        crcs = list(pool.map(lambda name: _crc32(present[name]), shared))
    for name, crc in zip(shared, crcs):
        size, expected = present[name].stat().st_size, recorded[name]
        if size != expected.get("bytes") or crc != expected.get("crc32"):
            problems.append(f"{name}: corrupt: {size} bytes with CRC-32 {crc}, written as {expected.get('bytes')} "
                            f"bytes with CRC-32 {expected.get('crc32')}")
    return problems


def page_problems(path: Path) -> list[str]:
    """Every data file of a corpus or Parquet dataset decoded page by page (what validate adds to
    the checks of open_corpus): a page that does not decode, named by its file."""
    base = path / EVENTS if (path / EVENTS).is_dir() else path
    folders = [base] + ([path / PROGRAMS] if base != path and (path / PROGRAMS).is_dir() else [])
    problems = []
    for folder in folders:
        for file in s.data_files(folder):
            try:
                parquet = pq.ParquetFile(file, page_checksum_verification=True)
                for group in range(parquet.num_row_groups):
                    parquet.read_row_group(group)
            except (pa.ArrowException, OSError) as error:
                problems.append(f"{file.relative_to(path) if file != path else file}: a page does not decode: {error}")
    return problems


def read_json(file: Path) -> dict:
    try:
        return json.loads(file.read_text())
    except json.JSONDecodeError as error:
        raise s.CorpusError(file, f"not JSON: {error}") from None


def read_manifest(corpus: Path) -> dict:
    file = corpus / MANIFEST
    return read_json(file) if file.exists() else {}


def write_json(file: Path, data: object) -> None:
    """Write JSON atomically (a temporary file renamed over the target)."""
    temporary = file.with_name(f".{file.name}.tmp-{uuid.uuid4().hex[:8]}")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(temporary, file)


def value_problems(events: DataFrame, *, limit_note: str = "") -> list[str]:
    """Values outside the vocabulary: unknown ops, bad outcomes, nulls in required columns, each
    with a count and the first example. One aggregation over the given events."""
    checks = {
        "unknown op": ~F.col("op").isin(*s.KNOWN_OPS),
        "outcome not ok/fail/info": ~F.col("outcome").isin(*s.OUTCOMES),
        **{f"null {c}": F.col(c).isNull() for c in s.REQUIRED},
        "negative step": F.col("step") < 0,
    }
    example = F.struct("spec_id", "program_id", "step", "op", "outcome")
    aggregates = []
    for i, cond in enumerate(checks.values()):
        aggregates += [F.sum(F.when(cond, 1).otherwise(0)).alias(f"n{i}"),
                       F.min(F.when(cond, example)).alias(f"e{i}")]
    row = events.agg(*aggregates).collect()[0]
    problems = []
    for i, name in enumerate(checks):
        count, first = row[f"n{i}"], row[f"e{i}"]
        if count:
            line = (f"{name}: {count} event(s){limit_note}, first: spec {first.spec_id} program {first.program_id} "
                    f"step {first.step} (op {first.op!r}, outcome {first.outcome!r})")
            problems.append(line + (f"; known ops: {', '.join(s.KNOWN_OPS)}" if name == "unknown op" else ""))
    return problems


# -- outputs ------------------------------------------------------------------------------------
def check_overlap(target: Path, inputs: tuple[Path, ...]) -> None:
    for source in inputs:
        source = Path(source).absolute()
        if target == source or target in source.parents or source in target.parents:
            raise s.CorpusError(target, f"the output overlaps the input {source}; choose another output path")


def refuse_existing(target: Path, *, overwrite: bool, inputs: tuple[Path, ...] = ()) -> None:
    check_overlap(target, inputs)
    if target.exists() and not overwrite:
        raise s.CorpusError(target, "already exists; refusing to overwrite it (pass --overwrite to replace it "
                                    "once the new output is complete)")
    if target.exists():
        check_replaceable(target)


# What marks a folder as an output of these jobs: a corpus or a finished recording (corpus.json),
# a recording in progress (its state file), a diff (summary.json of kind diff).
RECORD_STATE = "_record.json"
SUMMARY = "summary.json"


def _written_here(folder: Path) -> bool:
    def manifest(file: Path) -> dict:
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    return (manifest(folder / MANIFEST).get("format") == FORMAT
            or manifest(folder / SUMMARY).get("format") == FORMAT
            or bool(manifest(folder / RECORD_STATE).get("source")))


def check_replaceable(target: Path) -> None:
    """--overwrite replaces only what these jobs wrote (recognised by its manifest), never the
    working directory or a folder that holds it."""
    target = target.absolute()
    here = Path.cwd().absolute()
    if target == here or target in here.parents:
        raise s.CorpusError(target, "is the working directory or holds it; refusing to replace it even with "
                                    "--overwrite (give a folder of its own as the output)")
    if not target.is_dir() or not _written_here(target):
        raise s.CorpusError(target, f"is not a corpus, recording or diff written by python -m traces (no "
                                    f"{MANIFEST}, {RECORD_STATE} or {SUMMARY} of format {FORMAT}); refusing to "
                                    f"replace it even with --overwrite: remove it yourself or choose another output")


@contextmanager
def staged_output(path: str | os.PathLike, *, overwrite: bool, inputs: tuple[Path, ...] = ()) -> Iterator[Path]:
    """A fresh staging directory that becomes `path` when the block completes; on any error the
    staging directory is removed and an existing `path` is untouched."""
    target = Path(path).absolute()
    refuse_existing(target, overwrite=overwrite, inputs=inputs)
    target.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:8]
    staging = target.parent / f".{target.name}.staging-{token}"
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    publish(staging, target, token=token)


def publish(staging: Path, target: Path, *, token: str) -> None:
    replaced = None
    if target.exists():
        replaced = target.parent / f".{target.name}.replaced-{token}"
        os.rename(target, replaced)
    os.rename(staging, target)
    if replaced is not None:
        if replaced.is_dir():
            shutil.rmtree(replaced)
        else:
            replaced.unlink()
