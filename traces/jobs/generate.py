"""generate: N seeded random programs per spec, executed by the model in the executors, written
as a corpus (events partitioned by spec, the per-program table, corpus.json).

The same seed, program count, step count and spec matrix give the same corpus (the same rows;
file names differ). Programs the model rejects are listed in corpus.json with their error.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from model.history import spec_json, spec_id, spec_of
from model.spec import Spec
from traces import corpus as c
from traces.programs import run_on_model
from traces.run import GenerationPlan, generate_files, id_width, program_seed
from traces.schema import EVENT_SCHEMA, PARTITION, TASK_STATUS_SCHEMA
from traces.session import progress
from traces.transforms import KEY, program_table, with_seeds

log = logging.getLogger("traces")
EVENTS_PER_TASK = 250_000
SHOWN_REJECTIONS = 50


def plan_for(specs: list[Spec], *, programs: int, steps: int, seed: int, chunk: int | None,
             parallelism: int) -> GenerationPlan:
    if programs < 1 or steps < 1:
        raise ValueError("--programs and --steps must be at least 1")
    if not 0 <= seed < 2**31:
        raise ValueError(f"--seed must be in 0..2^31-1, got {seed}")
    if chunk is None:
        chunk = max(1, EVENTS_PER_TASK // steps)
        # enough tasks to keep every core busy and to show progress
        while chunk > 1 and len(specs) * -(-programs // chunk) < 4 * parallelism:
            chunk //= 2
    return GenerationPlan(specs=tuple((spec_id(s), spec_json(s)) for s in specs), programs=programs,
                          steps=steps, seed=seed, chunk=chunk)


def seed_table(spark: SparkSession, plan: GenerationPlan) -> DataFrame:
    """(spec_id, program_id, seed) of every program the plan asks for."""
    specs = spark.createDataFrame([(key,) for key, _ in plan.specs], f"{PARTITION} string")
    ids = spark.range(plan.programs).select(
        F.format_string(f"p%0{id_width(plan.programs)}d", F.col("id")).alias("program_id"),
        (F.lit(plan.seed).cast("long") * F.lit(1 << 32) + F.col("id")).alias("seed"))
    return specs.crossJoin(ids).select(*KEY, "seed")


def rejections(plan: GenerationPlan, missing: list[tuple[str, str, int]]) -> list[dict]:
    """Run the rejected programs again on the driver to say why the model rejected them."""
    texts = dict(plan.specs)
    found = []
    for key, pid, seed in missing[:SHOWN_REJECTIONS]:
        try:
            run_on_model(spec_of(texts[key]), seed, plan.steps)
            reason = "not rejected when run again (nondeterminism?)"
        except AssertionError as error:
            reason = str(error)
        found.append({"spec_id": key, "program_id": pid, "seed": seed, "error": reason})
    return found


def run(spark: SparkSession, out: str | Path, *, specs: list[Spec], programs: int, steps: int, seed: int,
        chunk: int | None = None, overwrite: bool = False) -> dict:
    parallelism = spark.sparkContext.defaultParallelism
    plan = plan_for(specs, programs=programs, steps=steps, seed=seed, chunk=chunk, parallelism=parallelism)
    log.info("generate: %d specs x %d programs x %d steps in %d tasks of %d programs", len(specs), programs,
             steps, plan.tasks, plan.chunk)
    started = time.monotonic()
    with c.staged_output(out, overwrite=overwrite) as staging:
        tasks = spark.range(0, plan.tasks, 1, numPartitions=plan.tasks)
        with progress(spark, "generate"):
            tasks.mapInArrow(partial(generate_files, plan, str(staging / c.EVENTS)), TASK_STATUS_SCHEMA).collect()
        generated = time.monotonic()
        written = spark.read.schema(EVENT_SCHEMA).parquet(str(staging / c.EVENTS))
        seeds = seed_table(spark, plan)
        with progress(spark, "fingerprints"):
            (with_seeds(program_table(written), seeds).coalesce(max(1, parallelism))
             .write.parquet(str(staging / c.PROGRAMS)))
        programs_written = spark.read.schema(c.s.PROGRAM_SCHEMA).parquet(str(staging / c.PROGRAMS))
        totals = programs_written.agg(F.count(F.lit(1)).alias("programs"), F.sum("steps").alias("events")).collect()[0]
        missing = [(r.spec_id, r.program_id, r.seed) for r in
                   seeds.join(programs_written.select(*KEY), on=list(KEY), how="left_anti").limit(SHOWN_REJECTIONS).collect()]
        rejected_count = len(specs) * programs - totals.programs
        manifest = {
            "format": c.FORMAT, "kind": "generated", "seed": seed, "programs_per_spec": programs, "steps": steps,
            "specs": {key: text for key, text in plan.specs}, "programs": totals.programs,
            "events": int(totals.events or 0), "rejected_count": rejected_count,
            "rejected": rejections(plan, missing), "seconds": round(time.monotonic() - started, 2),
            "generation_seconds": round(generated - started, 2), c.CHECKSUMS: c.file_checksums(staging),
        }
        c.write_json(staging / c.MANIFEST, manifest)
    rate = manifest["events"] / max(manifest["generation_seconds"], 1e-9) * 60
    log.info("generate: %d programs, %d events (%d programs rejected by the model) in %.1f s: %.0f events/min",
             manifest["programs"], manifest["events"], rejected_count, manifest["seconds"], rate)
    return manifest
