"""diff: two corpora (expected, observed) -> per program the first divergent step, grouped into
signatures; Parquet tables, summary.json and a self-contained HTML report.

    <out>/divergences/      one row per divergent program: first divergent step, both sides there
    <out>/signatures/       (op, spec, expected class, observed class, fields): count, shortest program
    <out>/representatives/  the steps of each shown signature's shortest program, up to the divergence
    <out>/summary.json      counts per status, per spec, the signatures
    <out>/report.html       charts (inline SVG) and the representative programs

Plan: join the two per-program tables (length, fingerprint); only programs whose fingerprints
differ are read from the events (a semi join) and aligned step by step. Programs present on one
side only are counted, not aligned.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from model.history import spec_of
from traces import corpus as c
from traces import report
from traces import schema as s
from traces import transforms as t
from traces.session import progress

log = logging.getLogger("traces")
BROADCAST_PROGRAMS = 1_000_000  # differing programs up to this many: broadcast their keys to the scans
SHOWN_SIGNATURES = 1000
REPRESENTED = 25  # signatures whose representative program is shown step by step


def aligned_problems(aligned: DataFrame) -> list[str]:
    """Unknown ops and bad outcomes among the events a diff reads, with the first example."""
    problems = []
    for side in ("expected", "observed"):
        op, outcome = F.col(f"{side}_op"), F.col(f"{side}_outcome")
        bad = (op.isNotNull() & ~op.isin(*s.KNOWN_OPS)) | (op.isNotNull() & ~outcome.isin(*s.OUTCOMES))
        row = aligned.where(bad).agg(F.count(F.lit(1)).alias("n"),
                                     F.min(F.struct(*t.KEY, "step", op.alias("op"), outcome.alias("outcome"))).alias("e")).collect()[0]
        if row.n:
            e = row.e
            problems.append(f"{side}: {row.n} event(s) with an unknown op or an outcome other than ok/fail/info, "
                            f"first: spec {e.spec_id} program {e.program_id} step {e.step} (op {e.op!r}, "
                            f"outcome {e.outcome!r}); known ops: {', '.join(s.KNOWN_OPS)}")
    return problems


def _describe_spec(text: str | None, key: str) -> str:
    if not text:
        return key
    try:
        return spec_of(text).describe()
    except (ValueError, TypeError, KeyError):
        return key


def run(spark: SparkSession, expected: str | Path, observed: str | Path, out: str | Path, *,
        overwrite: bool = False) -> dict:
    started = time.monotonic()
    target = Path(out).absolute()
    c.refuse_existing(target, overwrite=overwrite, inputs=(Path(expected), Path(observed)))
    a, b = c.open_corpus(spark, expected), c.open_corpus(spark, observed)
    for side in (a, b):
        if side.programs is None:
            log.warning("diff: %s has no per-program table: fingerprints are computed from all its events (slower)",
                        side.path)
    with c.staged_output(target, overwrite=overwrite, inputs=(a.path, b.path)) as staging:
        paired = t.pair_programs(a.program_table(), b.program_table()).persist()
        with progress(spark, "diff: programs"):
            per_spec = [r.asDict() for r in t.status_per_spec(paired).orderBy("spec_id").collect()]
        totals = {status: sum(r[status] for r in per_spec) for status in t.STATUSES}
        log.info("diff: programs %s", ", ".join(f"{k} {v}" for k, v in totals.items()))
        differing = paired.where(F.col("status") == "differs")
        broadcast = totals["differs"] <= BROADCAST_PROGRAMS
        aligned = t.align(t.programs_of(a.events, differing, broadcast=broadcast),
                          t.programs_of(b.events, differing, broadcast=broadcast)).persist()
        with progress(spark, "diff: divergences"):
            divergences = t.first_divergences(aligned)
            divergences.coalesce(max(1, totals["differs"] // 2_000_000 + 1)).write.parquet(str(staging / "divergences"))
        problems = aligned_problems(aligned) if totals["differs"] else []
        if problems:
            raise s.CorpusError(f"{a.path} vs {b.path}", problems)
        written = spark.read.parquet(str(staging / "divergences"))
        t.signatures(written).coalesce(1).write.parquet(str(staging / "signatures"))
        sigs = [r.asDict() for r in spark.read.parquet(str(staging / "signatures"))
                .orderBy(F.desc("programs"), "signature").limit(SHOWN_SIGNATURES).collect()]
        shown = spark.createDataFrame(
            [(r["spec_id"], r["representative_program"], r["representative_step"]) for r in sigs[:REPRESENTED]],
            "spec_id string, program_id string, step int")
        t.steps_until(aligned, shown).coalesce(1).write.parquet(str(staging / "representatives"))
        steps = [r.asDict() for r in spark.read.parquet(str(staging / "representatives"))
                 .orderBy(*t.KEY, "step").collect()]
        divergent = sum(r["programs"] for r in sigs) if len(sigs) < SHOWN_SIGNATURES else written.count()
        paired.unpersist()
        aligned.unpersist()
        specs = {**c.spec_texts(a), **c.spec_texts(b)}
        for row in per_spec:
            row["describe"] = _describe_spec(specs.get(row["spec_id"]), row["spec_id"])
        summary = {
            "format": c.FORMAT, "kind": "diff",
            "expected": {"path": str(a.path), "kind": a.manifest.get("kind", "events")},
            "observed": {"path": str(b.path), "kind": b.manifest.get("kind", "events")},
            "programs": totals, "divergent_programs": divergent,
            "signature_count": spark.read.parquet(str(staging / "signatures")).count(),
            "signatures": sigs,
            "per_spec": per_spec, "compared_columns": list(t.COMPARED),
            "seconds": round(time.monotonic() - started, 2),
        }
        c.write_json(staging / "summary.json", summary)
        (staging / "report.html").write_text(report.html(summary, steps), encoding="utf-8")
    log.info("diff: %d divergent programs in %d signatures, written to %s in %.1f s", divergent,
             summary["signature_count"], target, summary["seconds"])
    return summary
