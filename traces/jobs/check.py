"""check: every program of a corpus replayed through the model's non-deterministic checker in the
executors (traces.check), one verdict per program, and what they add up to.

    <out>/verdicts/            one row per program: conforms / violation (guarantee, step, detail) /
                               unknown (reason, step, detail), its signature, the checker's peak states
    <out>/signatures.parquet   per signature (guarantee or unknown's reason, and the detail's class):
                               programs, specs, the shortest program
    <out>/reproductions/       the shortest program of each violation signature, as a conformance
                               failure is written (traces.reproduce)
    <out>/summary.json         counts per verdict, spec, guarantee and unknown reason (and per
                               combination of them: `counts`); the signatures
    <out>/summary.md           the same for people

Plan: the corpus's events without the spec column (its JSON goes to the executors once per spec
id) are repartitioned by program and sorted by step within each partition, and a mapInArrow body
checks each program as its rows come by; nothing of the corpus comes to the driver but the events
of the reproduced programs (a scan filtered on their ids, traces.transforms.programs_listed). The
verdicts are written, then counted and grouped into signatures from what was written (small
results, collected).
"""

from __future__ import annotations

import json
import logging
import time
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from model.guarantees import Guarantee
from model.history import Event
from traces import check_summary
from traces import corpus as c
from traces import transforms as t
from traces.check import INPUT_COLUMNS, VERDICT_SCHEMA, VERDICTS, VIOLATION, check_batches
from traces.jobs.diff import _describe_spec
from traces.reproduce import Recorder, write_reproduction
from traces.session import progress

log = logging.getLogger("traces")
VERDICTS_DIR = "verdicts"
SIGNATURES = "signatures.parquet"
REPRODUCTIONS = "reproductions"
SHOWN_SIGNATURES = 1000
REPRODUCED = 50  # violation signatures (the most frequent first) whose shortest program is written


def verdicts(events: DataFrame, specs: dict[str, str], partitions: int) -> DataFrame:
    """One verdict row per program (traces.check.VERDICT_TYPES): each program's events brought
    together in one partition, in step order, and checked there."""
    return (events.select(*INPUT_COLUMNS).repartition(partitions, "spec_id", "program_id")
            .sortWithinPartitions("spec_id", "program_id", "step")
            .mapInArrow(partial(check_batches, specs), VERDICT_SCHEMA))


def as_recorded(text: str | None, recorded_on: dict[str, str]) -> str | None:
    """A recorded program's spec as it ran: the broker and client the recording names in place of
    the generated spec's (its spec id, the key two recordings of one corpus align on, stays)."""
    if not text or not recorded_on:
        return text
    fields = json.loads(text)
    fields.update({"broker_version": recorded_on["pulsar"]} if recorded_on.get("pulsar") else {})
    fields.update({"client": recorded_on["client"]} if recorded_on.get("client") else {})
    return json.dumps(fields, sort_keys=True)


def tally(counts: list[dict], specs: dict[str, str]) -> dict:
    """The summary's counts from verdict_counts' rows: per verdict, per spec, per guarantee, per
    unknown reason."""
    per_verdict = dict.fromkeys(VERDICTS, 0)
    per_spec: dict[str, dict] = {}
    per_guarantee: dict[str, dict] = {}
    reasons: dict[str, int] = {}
    for row in counts:
        per_verdict[row["verdict"]] += row["programs"]
        spec = per_spec.setdefault(row["spec_id"], {"spec_id": row["spec_id"], **dict.fromkeys(VERDICTS, 0),
                                                    "events": 0})
        spec[row["verdict"]] += row["programs"]
        spec["events"] += row["events"]
        if row["guarantee"]:
            found = per_guarantee.setdefault(row["guarantee"], {"guarantee": row["guarantee"], VIOLATION: 0,
                                                                "unknown": 0})
            found[row["verdict"]] += row["programs"]
        if row["reason"]:
            reasons[row["reason"]] = reasons.get(row["reason"], 0) + row["programs"]
    for key, row in per_spec.items():
        row["describe"] = _describe_spec(specs.get(key), key)
    order = {g.value: i for i, g in enumerate(Guarantee)}
    return {"verdicts": per_verdict, "per_spec": sorted(per_spec.values(), key=lambda r: r["spec_id"]),
            "per_guarantee": sorted(per_guarantee.values(), key=lambda r: order.get(r["guarantee"], len(order))),
            "unknown_reasons": dict(sorted(reasons.items()))}


def _reproduce(corpus: c.Corpus, signatures: list[dict], folder: Path, recorder: Recorder) -> dict[str, str]:
    """Write the shortest program of each of the first REPRODUCED violation signatures; signature -> stem."""
    chosen = [s for s in signatures if s["verdict"] == VIOLATION][:REPRODUCED]
    if not chosen:
        return {}
    keys = sorted({(s["representative_spec"], s["representative_program"]) for s in chosen})
    table = t.programs_listed(corpus.events, keys).toArrow().sort_by([("spec_id", "ascending"),
                                                                      ("program_id", "ascending"),
                                                                      ("step", "ascending")])
    programs: dict[tuple[str, str], list[Event]] = {}
    for row in table.to_pylist():
        programs.setdefault((row["spec_id"], row["program_id"]), []).append(Event(**row))
    stems = {}
    for signature in chosen:
        events = programs[(signature["representative_spec"], signature["representative_program"])]
        stems[signature["signature"]] = write_reproduction(folder, signature, events, corpus=str(corpus.path),
                                                           recorder=recorder)
    return stems


def run(spark: SparkSession, source: str | Path, out: str | Path, *, overwrite: bool = False,
        partitions: int | None = None, recorder: Recorder | None = None) -> dict:
    started = time.monotonic()
    target = Path(out).absolute()
    c.refuse_existing(target, overwrite=overwrite, inputs=(Path(source),))
    if partitions is not None and partitions < 1:
        raise ValueError("--partitions must be at least 1")
    partitions = partitions or 4 * spark.sparkContext.defaultParallelism
    with progress(spark, "check: open"):
        corpus = c.open_corpus(spark, source)
        specs = c.spec_texts(corpus)
    recorder = recorder or Recorder.of(corpus.manifest)
    with c.staged_output(target, overwrite=overwrite, inputs=(corpus.path,)) as staging:
        with progress(spark, "check: programs"):
            verdicts(corpus.events, specs, partitions).write.parquet(str(staging / VERDICTS_DIR))
        checked = time.monotonic()
        written = spark.read.schema(VERDICT_SCHEMA).parquet(str(staging / VERDICTS_DIR))
        with progress(spark, "check: signatures"):
            counts = [r.asDict() for r in t.verdict_counts(written).collect()]
            table = t.verdict_signatures(written).toArrow().sort_by([("programs", "descending"),
                                                                     ("signature", "ascending")])
            pq.write_table(table, staging / SIGNATURES)
        signatures = table.slice(0, SHOWN_SIGNATURES).to_pylist()
        with progress(spark, "check: reproductions"):
            stems = _reproduce(corpus, signatures, staging / REPRODUCTIONS, recorder)
        for signature in signatures:
            signature["reproduction"] = f"{REPRODUCTIONS}/{stems[signature['signature']]}.py" \
                if signature["signature"] in stems else None
        recorded_on = corpus.manifest.get("recorded_on") or {}
        totals = tally(counts, {key: as_recorded(text, recorded_on) for key, text in specs.items()})
        events = sum(row["events"] for row in counts)
        summary = {
            "format": c.FORMAT, "kind": "check",
            "corpus": {"path": str(corpus.path), "kind": corpus.manifest.get("kind", "events"),
                       "target": recorder.name if recorder.said else None, "recorded_on": recorded_on},
            "programs": sum(totals["verdicts"].values()), "events": events, **totals,
            "counts": sorted(counts, key=lambda r: tuple(str(r[k] or "") for k in t.VERDICT_COUNT_COLUMNS[:4])),
            "signature_count": table.num_rows, "signatures": signatures,
            "partitions": partitions, "check_seconds": round(checked - started, 2),
            "seconds": round(time.monotonic() - started, 2),
        }
        c.write_json(staging / c.SUMMARY, summary)
        (staging / "summary.md").write_text(check_summary.markdown(summary), encoding="utf-8")
    log.info("check: %d programs (%s), %d events in %.1f s, %d signatures, written to %s", summary["programs"],
             ", ".join(f"{k} {v}" for k, v in summary["verdicts"].items()), events, summary["seconds"],
             summary["signature_count"], target)
    return summary

