"""diff: two corpora (expected, observed) -> per program the first divergent step, grouped into
signatures; Parquet tables, summary.json and a self-contained HTML report.

    <out>/divergences/              one row per divergent program: first divergent step, both sides there
    <out>/signatures.parquet        (op, spec, expected class, observed class, fields): count, shortest program
    <out>/representatives.parquet   the steps of each shown signature's shortest program, up to the divergence
    <out>/summary.json              counts per status, per spec, the signatures
    <out>/report.html               charts (inline SVG) and the representative programs

Plan: join the two per-program tables (length, fingerprint) and keep the programs that are not
the same; only programs whose fingerprints differ are read from the events, and when they are few
they are named in per-spec scans' filters, so Parquet skips every page that cannot hold them
(the corpus files are sorted by program); they are aligned step by step. Programs present
on one side only are counted, not aligned; the counts per spec and the check of the aligned
events run beside the alignment and the write (two cores: Spark runs the jobs side by side,
measured 9.1 -> 8.65 s for the 10M-event diff, medians of six alternating). The small results
(signatures, representatives) are collected and written from the driver; the divergences, which
can be many, by Spark.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
from pyspark import inheritable_thread_target
from pyspark.sql import DataFrame, SparkSession

from model.history import spec_of
from traces import corpus as c
from traces import report
from traces import schema as s
from traces import transforms as t
from traces.session import progress

log = logging.getLogger("traces")
KEY_LIST_PROGRAMS = 20_000  # differing programs up to this many: listed in the scans' pushed-down filter
BROADCAST_PROGRAMS = 1_000_000  # up to this many: their keys are broadcast to the semi joins
SHOWN_SIGNATURES = 1000
REPRESENTED = 25  # signatures whose representative program is shown step by step


def _problems(aligned: DataFrame) -> list[str]:
    found = []
    for row in t.problems(aligned, s.KNOWN_OPS, s.OUTCOMES).collect():
        if row.events:
            e = row.first
            found.append(f"{row.side}: {row.events} event(s) with an unknown op or an outcome other than ok/fail/info, "
                         f"first: spec {e.spec_id} program {e.program_id} step {e.step} (op {e.op!r}, outcome "
                         f"{e.outcome!r}); known ops: {', '.join(s.KNOWN_OPS)}")
    return found


def _describe_spec(text: str | None, key: str) -> str:
    if not text:
        return key
    try:
        return spec_of(text).describe()
    except (ValueError, TypeError, KeyError):
        return key


def _listed_keys(unequal: DataFrame) -> list[tuple[str, str]] | None:
    """The keys of the differing programs when they are at most KEY_LIST_PROGRAMS (a bounded list
    comes to the driver, not the corpus), else None."""
    rows = unequal.where("status = 'differs'").select(*t.KEY).limit(KEY_LIST_PROGRAMS + 1).collect()
    return None if len(rows) > KEY_LIST_PROGRAMS else [(r.spec_id, r.program_id) for r in rows]


def _aligned_divergent(a: c.Corpus, b: c.Corpus, unequal: DataFrame, keys: list[tuple[str, str]] | None,
                       differs: Callable[[], int]) -> DataFrame:
    """The differing programs' events aligned step by step: the listed `keys`' programs named in
    the scans' filters (other specs pruned, and the Parquet pages that hold none of them), or, when
    they are too many to list, a semi join on the differing programs, whose keys are broadcast
    when `differs()` (their count) is at most BROADCAST_PROGRAMS."""
    if keys is not None:
        return t.align(*(t.programs_listed(side.events, keys) for side in (a, b)))
    differing = unequal.where("status = 'differs'")
    broadcast = differs() <= BROADCAST_PROGRAMS
    return t.align(*(t.programs_of(side.events, differing, broadcast=broadcast) for side in (a, b)))


def _per_spec(unequal: DataFrame, expected_programs: DataFrame) -> list[dict]:
    """Status counts per spec (see traces.transforms.status_per_spec)."""
    return sorted((r.asDict() for r in t.status_per_spec(unequal, expected_programs).collect()),
                  key=lambda r: r["spec_id"])


def _totals(per_spec: list[dict]) -> dict[str, int]:
    return {status: sum(row[status] for row in per_spec) for status in t.STATUSES}


def run(spark: SparkSession, expected: str | Path, observed: str | Path, out: str | Path, *,
        overwrite: bool = False) -> dict:
    started = time.monotonic()
    target = Path(out).absolute()
    c.refuse_existing(target, overwrite=overwrite, inputs=(Path(expected), Path(observed)))
    with progress(spark, "diff: open"):
        a, b = c.open_corpus(spark, expected), c.open_corpus(spark, observed)
    for side in (a, b):
        if side.programs is None:
            log.warning("diff: %s has no per-program table: fingerprints are computed from all its events (slower)",
                        side.path)
    with c.staged_output(target, overwrite=overwrite, inputs=(a.path, b.path)) as staging, \
            ThreadPoolExecutor(max_workers=2, thread_name_prefix="diff") as pool:
        in_thread = inheritable_thread_target(spark)  # a job from a pool thread runs as one from this thread
        with progress(spark, "diff: programs"):
            # Only the programs that are not the same are kept, materialized once (a local
            # checkpoint, not a cache: the SQL transforms refer to their inputs through views,
            # which a cached plan would not match); usually a small part of the corpus.
            unequal = t.pair_programs(a.program_table(), b.program_table()).where("status <> 'same'").localCheckpoint()
            # Aligning the differing programs needs their keys, not the counts per spec: Spark
            # counts while they are aligned, each job on its own thread of the driver.
            counting = pool.submit(in_thread(_per_spec), unequal, a.program_table())
            keys = _listed_keys(unequal)

        def differs() -> int:  # waits for the counts: only when the differing programs are too many to list
            return _totals(counting.result())["differs"]

        with progress(spark, "diff: first divergences"):
            aligned = _aligned_divergent(a, b, unequal, keys, differs).localCheckpoint()
            # The vocabulary check runs beside the divergences' write (a program that differs in
            # nothing compared has no divergence and no check).
            checking = pool.submit(in_thread(_problems), aligned) if keys != [] else None
            files = 1 if keys is not None else differs() // 2_000_000 + 1
            divergences = t.first_divergences(aligned)
            divergences.coalesce(files).write.parquet(str(staging / "divergences"))
        per_spec = counting.result()
        totals = _totals(per_spec)
        log.info("diff: programs %s", ", ".join(f"{k} {v}" for k, v in totals.items()))
        with progress(spark, "diff: signatures"):
            problems = checking.result() if checking is not None else []
            if problems:
                raise s.CorpusError(f"{a.path} vs {b.path}", problems)
            written = spark.read.schema(divergences.schema).parquet(str(staging / "divergences"))
            table = t.signatures(written).toArrow().sort_by([("programs", "descending"), ("signature", "ascending")])
            pq.write_table(table, staging / "signatures.parquet")
            sigs = table.slice(0, SHOWN_SIGNATURES).to_pylist()
        with progress(spark, "diff: representatives"):
            picks = [(r["spec_id"], r["representative_program"], r["representative_step"]) for r in sigs[:REPRESENTED]]
            steps_table = t.steps_until(aligned, picks).toArrow().sort_by([(k, "ascending") for k in (*t.KEY, "step")])
            pq.write_table(steps_table, staging / "representatives.parquet")
            steps = steps_table.to_pylist()
        specs = {**c.spec_texts(a), **c.spec_texts(b)}
        for row in per_spec:
            row["describe"] = _describe_spec(specs.get(row["spec_id"]), row["spec_id"])
        summary = {
            "format": c.FORMAT, "kind": "diff",
            "expected": {"path": str(a.path), "kind": a.manifest.get("kind", "events")},
            "observed": {"path": str(b.path), "kind": b.manifest.get("kind", "events")},
            "programs": totals, "divergent_programs": sum(table.column("programs").to_pylist()),
            "signature_count": table.num_rows, "signatures": sigs, "per_spec": per_spec,
            "compared_columns": list(t.COMPARED), "seconds": round(time.monotonic() - started, 2),
        }
        c.write_json(staging / "summary.json", summary)
        (staging / "report.html").write_text(report.html(summary, steps), encoding="utf-8")
    log.info("diff: %d divergent programs in %d signatures, written to %s in %.1f s", summary["divergent_programs"],
             summary["signature_count"], target, summary["seconds"])
    return summary
