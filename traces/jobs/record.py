"""record: run a corpus's programs against a target and write the observed traces as a corpus in
the same schema, resumably. A program with a seed runs closed-loop, its ops drawn from what the
target delivered (traces/run.py); a broker is first asked whether it runs the corpus's specs
(traces/recordable.py), and a spec it does not is refused before anything is recorded.

The source's programs are split into chunks per spec (by a hash of the program id; the number of
chunks is fixed in `_record.json` at the first start). Finished chunks are Parquet files in
`events/`; the chunk being recorded keeps a journal of its finished programs. Running the same
command again after a crash skips finished chunks and committed programs. When every chunk is
there, the per-program table and corpus.json are written and the recording is complete.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from functools import partial
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from model.history import spec_of
from traces import corpus as c
from traces.recordable import refuse_unrecordable
from traces.run import RecordPlan, chunk_file, record_batches
from traces.schema import EVENT_SCHEMA, PARTITION, TASK_STATUS_SCHEMA, CorpusError
from traces.session import progress
from traces.targets import TargetSpec
from traces.transforms import KEY, program_table, with_seeds

log = logging.getLogger("traces")
STATE = c.RECORD_STATE
JOURNAL = "_journal"


def _state_for(out: Path, source: Path, target: TargetSpec, *, overwrite: bool) -> dict | None:
    """The saved state of an unfinished recording of `source` on `target` at `out` (None: start anew)."""
    if not out.exists():
        return None
    if overwrite:
        c.check_replaceable(out)
    if (out / c.MANIFEST).exists() and not overwrite:
        raise CorpusError(out, "already a complete recording; refusing to overwrite it (pass --overwrite to record again)")
    state_file = out / STATE
    if overwrite or not state_file.exists():
        if not overwrite:
            raise CorpusError(out, "already exists and is not a recording in progress; refusing to overwrite it "
                                   "(pass --overwrite)")
        return None
    state = c.read_json(state_file)
    if state.get("source") != str(source) or state.get("target") != target.name:
        raise CorpusError(out, f"is a recording of {state.get('source')} on {state.get('target')}, not of {source} "
                               f"on {target.name}; refusing to mix them (pass --overwrite to start anew)")
    return state


def _set_aside(out: Path) -> Path | None:
    """With --overwrite, keep the previous output until the new recording is complete."""
    if not out.exists():
        return None
    aside = out.parent / f".{out.name}.replaced-{uuid.uuid4().hex[:8]}"
    out.rename(aside)
    log.warning("record: the previous %s is kept at %s until the new recording is complete", out, aside)
    return aside


def run(spark: SparkSession, source: str | Path, out: str | Path, *, target: TargetSpec, chunk_programs: int = 500,
        overwrite: bool = False, concurrency: int = 1) -> dict:
    target.check()
    source, out = Path(source).absolute(), Path(out).absolute()
    c.check_overlap(out, (source,))
    corpus = c.open_corpus(spark, source)
    refuse_unrecordable(target, {key: spec_of(text) for key, text in c.spec_texts(corpus).items()})
    state = _state_for(out, source, target, overwrite=overwrite)
    # Asked before anything is moved or recorded, so that a target that cannot be reached fails
    # here, and kept in the state, so that a resumed recording says what it started on.
    recorded_on = target.identify() if state is None or "recorded_on" not in state else state["recorded_on"]
    aside = _set_aside(out) if overwrite else None
    started = time.monotonic()
    programs = corpus.program_table()
    if state is None:
        problems = c.value_problems(corpus.events)
        if problems:
            raise CorpusError(source, problems)
        counts = {r.spec_id: r["count"] for r in programs.groupBy(PARTITION).count().collect()}
        state = {"source": str(source), "target": target.name, "run": uuid.uuid4().hex[:8],
                 "recorded_on": recorded_on,
                 "chunks": {key: max(1, -(-n // chunk_programs)) for key, n in counts.items()},
                 "replaces": str(aside) if aside else None}
        out.mkdir(parents=True)
        c.write_json(out / STATE, state)
    chunks = state["chunks"]
    done = {(key, n) for key, total in chunks.items() for n in range(total) if chunk_file(out, key, n).exists()}
    pending_total = sum(chunks.values()) - len(done)
    log.info("record: %s on %s: %d chunks, %d already recorded", source, target.describe(), sum(chunks.values()),
             len(done))
    if pending_total:
        totals = F.create_map(*[v for key, n in chunks.items() for v in (F.lit(key), F.lit(n))])
        chunk = F.pmod(F.xxhash64("program_id"), F.element_at(totals, F.col(PARTITION)).cast("long")).cast("int")
        assigned = programs.select(*KEY, "seed", chunk.alias("chunk"))
        if done:
            finished = corpus.events.sparkSession.createDataFrame(sorted(done), f"{PARTITION} string, chunk int")
            assigned = assigned.join(finished, on=[PARTITION, "chunk"], how="left_anti")
        pending = (corpus.events.join(assigned, on=list(KEY), how="inner")
                   .repartition(min(pending_total, 4 * spark.sparkContext.defaultParallelism), PARTITION, "chunk")
                   .sortWithinPartitions(PARTITION, "chunk", "program_id", "step"))
        plan = RecordPlan(out=str(out), target=target, run=state["run"], concurrency=concurrency)
        with progress(spark, "record"):
            status = pending.mapInArrow(partial(record_batches, plan), TASK_STATUS_SCHEMA).collect()
        log.info("record: %d chunks recorded now (%d programs, %d resumed from journals)", len(status),
                 sum(r.programs for r in status), sum(r.resumed for r in status))
    missing = [(key, n) for key, total in chunks.items() for n in range(total) if not chunk_file(out, key, n).exists()]
    if missing:
        raise CorpusError(out, f"{len(missing)} chunks are still missing (first: spec {missing[0][0]} chunk "
                               f"{missing[0][1]}); run the same command again to resume")
    manifest = _finish(spark, out, corpus, target, started, recorded_on=recorded_on)
    if state.get("replaces"):
        shutil.rmtree(state["replaces"], ignore_errors=True)
    return manifest


def _finish(spark: SparkSession, out: Path, corpus: c.Corpus, target: TargetSpec, started: float, *,
            recorded_on: dict[str, str]) -> dict:
    recorded = spark.read.schema(EVENT_SCHEMA).parquet(str(out / c.EVENTS))
    staging = out / f".{c.PROGRAMS}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    seeds = corpus.programs if corpus.programs is not None else None
    table = program_table(recorded)
    if seeds is not None:
        table = with_seeds(table, seeds)
    with progress(spark, "fingerprints"):
        table.coalesce(max(1, spark.sparkContext.defaultParallelism)).write.parquet(str(staging))
    if (out / c.PROGRAMS).exists():
        shutil.rmtree(out / c.PROGRAMS)
    staging.rename(out / c.PROGRAMS)
    totals = (spark.read.schema(c.s.PROGRAM_SCHEMA).parquet(str(out / c.PROGRAMS))
              .agg(F.count(F.lit(1)).alias("programs"), F.sum("steps").alias("events")).collect()[0])
    manifest = {"format": c.FORMAT, "kind": "recorded", "source": str(corpus.path), "target": target.describe(),
                "target_name": target.name, "replay_args": target.replay_args(),  # for a check's reproductions
                # the broker and client the programs ran on: the specs keep the generated ones, so
                # that two recordings of one corpus align program by program
                "recorded_on": recorded_on,
                "specs": corpus.manifest.get("specs", {}), "programs": totals.programs, "events": int(totals.events or 0),
                "seconds_last_run": round(time.monotonic() - started, 2), c.CHECKSUMS: c.file_checksums(out)}
    c.write_json(out / c.MANIFEST, manifest)
    shutil.rmtree(out / JOURNAL, ignore_errors=True)
    (out / STATE).unlink(missing_ok=True)
    log.info("record: complete: %d programs, %d events", manifest["programs"], manifest["events"])
    return manifest
