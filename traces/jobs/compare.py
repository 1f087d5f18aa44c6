"""compare: two checks (`traces check` outputs) -> which verdicts changed, per program and per
signature, and how the two corpora's deliveries are distributed.

    <out>/changes/          one row per program whose verdict or signature is not the same on both
                            sides, or that one side lacks: both verdicts, steps and details
    <out>/summary.json      counts per transition (verdict before -> after), per guarantee and per
                            signature on each side; per spec, the distributions of both corpora
    <out>/summary.md        the same for people

Two uses, one job. The same corpus checked by two versions of the model (`traces check CORPUS
--against OLD_CHECK`): which programs the new rules accept or refuse now, and why (the detail on
each side). Two corpora recorded from the same seeds on two targets (two broker versions, two
clients), each checked: programs are paired by spec and program id, so a seed that conforms on one
broker and breaks a guarantee on the other is one row of `changes/`, and the signatures say how
often each anomaly occurs on each. Closed-loop programs of the same seed take different paths on
different targets, so what is compared is the verdict, never the steps.

The distributions, per spec and side, are read from the checked corpora's events (the paths their
summaries name): the redelivery counts deliveries carried, how many times each message was
delivered, and the time from a nack to the next delivery of the nacked message (quantiles, and the
nacks never followed by one within the program).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from traces import corpus as c
from traces.check import VERDICT_SCHEMA, VERDICTS
from traces.schema import CorpusError
from traces.session import progress

log = logging.getLogger("traces")
CHANGES = "changes"
SIDES = ("before", "after")
SHOWN_SIGNATURES = 1000
QUANTILES = (0.5, 0.9, 0.99)
_KEY = ("spec_id", "program_id")
_COMPARED = ("verdict", "guarantee", "reason", "step", "detail", "signature", "steps")


def _check_output(path: Path) -> dict:
    summary = c.read_json(path / c.SUMMARY) if (path / c.SUMMARY).exists() else {}
    if summary.get("kind") != "check" or not (path / "verdicts").exists():
        raise CorpusError(path, "not the output of `traces check` (no summary.json of kind check with verdicts/)")
    return summary


def paired(before: DataFrame, after: DataFrame) -> DataFrame:
    """Both sides' verdicts per program (full outer join on spec and program id), with a `change`:
    same, changed (another verdict or signature), only_before, only_after."""
    b = before.select(*_KEY, *[F.col(n).alias(f"before_{n}") for n in _COMPARED])
    a = after.select(*_KEY, *[F.col(n).alias(f"after_{n}") for n in _COMPARED])
    both = b.join(a, on=list(_KEY), how="full_outer")
    same = F.col("before_verdict").eqNullSafe(F.col("after_verdict")) & \
        F.col("before_signature").eqNullSafe(F.col("after_signature"))
    change = (F.when(F.col("after_verdict").isNull(), F.lit("only_before"))
              .when(F.col("before_verdict").isNull(), F.lit("only_after"))
              .when(same, F.lit("same")).otherwise(F.lit("changed")))
    return both.withColumn("change", change)


def _signature_counts(verdicts: DataFrame, side: str) -> DataFrame:
    return (verdicts.where(F.col("signature").isNotNull())
            .groupBy("signature", "verdict", "guarantee", "reason", "detail_class")
            .agg(F.count(F.lit(1)).alias(f"programs_{side}")))


def signatures(before: DataFrame, after: DataFrame) -> list[dict]:
    """Every signature of either side with its programs on each (0 where the side has none), the
    largest change first."""
    keys = ["signature", "verdict", "guarantee", "reason", "detail_class"]
    b, a = _signature_counts(before, "before").alias("b"), _signature_counts(after, "after").alias("a")
    same = None
    for key in keys:  # null-safe: a violation has no reason, an unknown no guarantee
        equal = F.col(f"b.{key}").eqNullSafe(F.col(f"a.{key}"))
        same = equal if same is None else same & equal
    joined = b.join(a, same, how="full_outer").select(
        *[F.coalesce(F.col(f"b.{key}"), F.col(f"a.{key}")).alias(key) for key in keys],
        "programs_before", "programs_after").fillna(0, subset=["programs_before", "programs_after"])
    rows = [r.asDict() for r in joined.collect()]
    return sorted(rows, key=lambda r: (-abs(r["programs_after"] - r["programs_before"]),
                                       -(r["programs_after"] + r["programs_before"]), r["signature"]))


# -- distributions of a corpus ------------------------------------------------------------------
def _deliveries(events: DataFrame) -> DataFrame:
    return events.where((F.col("op") == "receive") & (F.col("outcome") == "ok") & F.col("delivered_entry").isNotNull())


def distributions(events: DataFrame) -> dict[str, dict]:
    """Per spec: deliveries per redelivery count, messages per number of deliveries, and the time
    from a nack to the nacked message's next delivery (ms quantiles; nacks never followed by one)."""
    deliveries = _deliveries(events)
    per_spec: dict[str, dict] = {}

    def spec(key: str) -> dict:
        return per_spec.setdefault(key, {"deliveries_by_redelivery_count": {}, "messages_by_deliveries": {},
                                         "nack_to_redelivery_ms": {}})

    for r in deliveries.groupBy("spec_id", "redelivery_count").count().collect():
        spec(r.spec_id)["deliveries_by_redelivery_count"][str(r.redelivery_count)] = r["count"]
    per_message = deliveries.groupBy("spec_id", "program_id", "delivered_entry", "delivered_index").count()
    for r in per_message.groupBy("spec_id", F.col("count").alias("deliveries")).count().collect():
        spec(r.spec_id)["messages_by_deliveries"][str(r.deliveries)] = r["count"]
    n = (events.where((F.col("op") == "negative_acknowledge") & (F.col("outcome") == "ok"))
         .select("spec_id", "program_id", "step", "at", "entry", "index").alias("n"))
    d = deliveries.select("spec_id", "program_id", "step", "at", "delivered_entry", "delivered_index").alias("d")
    after_the_nack = ((F.col("n.spec_id") == F.col("d.spec_id")) & (F.col("n.program_id") == F.col("d.program_id"))
                      & (F.col("n.entry") == F.col("d.delivered_entry"))
                      & (F.col("n.index") == F.col("d.delivered_index")) & (F.col("d.step") > F.col("n.step")))
    waits = (n.join(d, after_the_nack, how="left")
             .groupBy(F.col("n.spec_id").alias("spec_id"), "n.program_id", "n.step", "n.at")
             .agg(F.min(F.col("d.at") - F.col("n.at")).alias("wait_ms")))
    stats = waits.groupBy("spec_id").agg(
        F.count(F.lit(1)).alias("nacks"), F.count("wait_ms").alias("redelivered"),
        F.percentile_approx("wait_ms", list(QUANTILES)).alias("quantiles"), F.max("wait_ms").alias("max"))
    for r in stats.collect():
        quantiles = dict(zip((f"p{round(q * 100)}" for q in QUANTILES), r.quantiles or []))
        spec(r.spec_id)["nack_to_redelivery_ms"] = {"nacks": r.nacks, "never_redelivered": r.nacks - r.redelivered,
                                                    **quantiles, "max": r["max"]}
    for row in per_spec.values():
        for name in ("deliveries_by_redelivery_count", "messages_by_deliveries"):
            row[name] = dict(sorted(row[name].items(), key=lambda item: int(item[0])))
    return per_spec


def _corpus_distributions(spark: SparkSession, summary: dict, side: str) -> dict[str, dict] | None:
    path = (summary.get("corpus") or {}).get("path")
    if not path or not Path(path).exists():
        log.warning("compare: the %s check's corpus (%s) is not there: no distributions for it", side, path)
        return None
    return distributions(c.open_corpus(spark, path).events)


# -- the job --------------------------------------------------------------------------------------
def run(spark: SparkSession, before: str | Path, after: str | Path, out: str | Path, *, overwrite: bool = False,
        with_distributions: bool = True) -> dict:
    started = time.monotonic()
    before, after, target = Path(before).absolute(), Path(after).absolute(), Path(out).absolute()
    summaries = {"before": _check_output(before), "after": _check_output(after)}
    with c.staged_output(target, overwrite=overwrite, inputs=(before, after)) as staging:
        sides = {side: spark.read.schema(VERDICT_SCHEMA).parquet(str(path / "verdicts"))
                 for side, path in zip(SIDES, (before, after))}
        with progress(spark, "compare: programs"):
            pairs = paired(sides["before"], sides["after"])
            pairs.where(F.col("change") != "same").write.parquet(str(staging / CHANGES))
            written = spark.read.parquet(str(staging / CHANGES))
            transitions = [r.asDict() for r in pairs.groupBy("change", "before_verdict", "after_verdict")
                           .count().collect()]
        with progress(spark, "compare: signatures"):
            found = signatures(sides["before"], sides["after"])
            examples = {(r.before_signature, r.after_signature): (r.spec_id, r.program_id) for r in
                        written.groupBy("before_signature", "after_signature")
                        .agg(F.min(F.struct("spec_id", "program_id")).alias("first"))
                        .select("before_signature", "after_signature", "first.spec_id", "first.program_id")
                        .collect()}
        changes = {name: sum(r["count"] for r in transitions if r["change"] == name)
                   for name in ("same", "changed", "only_before", "only_after")}
        per_guarantee: dict[str, dict] = {}
        for row in found:
            if row["guarantee"]:
                entry = per_guarantee.setdefault(row["guarantee"], {"guarantee": row["guarantee"], "before": 0,
                                                                    "after": 0})
                entry["before"] += row["programs_before"]
                entry["after"] += row["programs_after"]
        summary = {
            "format": c.FORMAT, "kind": "compare",
            "before": {"check": str(before), "corpus": summaries["before"].get("corpus"),
                       "verdicts": summaries["before"].get("verdicts")},
            "after": {"check": str(after), "corpus": summaries["after"].get("corpus"),
                      "verdicts": summaries["after"].get("verdicts")},
            "programs": changes,
            "transitions": sorted(({"change": r["change"], "before": r["before_verdict"], "after": r["after_verdict"],
                                    "programs": r["count"]} for r in transitions),
                                  key=lambda r: (r["change"] == "same", -r["programs"])),
            "per_guarantee": sorted(per_guarantee.values(), key=lambda r: r["guarantee"]),
            "signature_count": len(found),
            "signatures": found[:SHOWN_SIGNATURES],
            "changed_examples": sorted(({"before": b, "after": a, "spec_id": key[0], "program_id": key[1]}
                                        for (b, a), key in examples.items()),
                                       key=lambda r: (str(r["before"]), str(r["after"]))),
        }
        if with_distributions:
            with progress(spark, "compare: distributions"):
                before_d = _corpus_distributions(spark, summaries["before"], "before")
                same = (summaries["before"].get("corpus") or {}).get("path") == \
                    (summaries["after"].get("corpus") or {}).get("path")
                # check --against re-checks one corpus: its distributions are read once
                summary["distributions"] = {"before": before_d, "after": before_d if same else
                                            _corpus_distributions(spark, summaries["after"], "after")}
        summary["seconds"] = round(time.monotonic() - started, 2)
        c.write_json(staging / c.SUMMARY, summary)
        (staging / "summary.md").write_text(markdown(summary), encoding="utf-8")
    log.info("compare: %d programs the same, %d changed, %d only before, %d only after; written to %s",
             changes["same"], changes["changed"], changes["only_before"], changes["only_after"], target)
    return summary


def markdown(summary: dict) -> str:
    programs = summary["programs"]
    lines = ["# Verdicts compared", "",
             f"Before: `{summary['before']['check']}`; after: `{summary['after']['check']}`.", "",
             f"{programs['same']} programs the same, **{programs['changed']} changed**, "
             f"{programs['only_before']} only before, {programs['only_after']} only after.", "",
             "## Verdicts", "", "| before \\ after | " + " | ".join(VERDICTS) + " | (absent) |",
             "|---|" + "---|" * (len(VERDICTS) + 1)]
    cells = {(t["before"], t["after"]): t["programs"] for t in summary["transitions"]}
    for before in (*VERDICTS, None):
        row = [str(cells.get((before, after), 0)) for after in (*VERDICTS, None)]
        lines.append(f"| {before or '(absent)'} | " + " | ".join(row) + " |")
    lines += ["", "## Guarantees broken (programs)", "", "| guarantee | before | after |", "|---|---|---|"]
    lines += [f"| {g['guarantee']} | {g['before']} | {g['after']} |" for g in summary["per_guarantee"]]
    lines += ["", "## Signatures", "", "| signature | verdict | guarantee / reason | detail class | before | after |",
              "|---|---|---|---|---|---|"]
    lines += [f"| `{s['signature']}` | {s['verdict']} | {s['guarantee'] or s['reason']} | {s['detail_class']} | "
              f"{s['programs_before']} | {s['programs_after']} |" for s in summary["signatures"]]
    if summary["changed_examples"]:
        lines += ["", "## A changed program per pair of signatures", "",
                  "| before | after | spec | program |", "|---|---|---|---|"]
        lines += [f"| {e['before'] or 'conforms'} | {e['after'] or 'conforms'} | `{e['spec_id']}` | {e['program_id']} |"
                  for e in summary["changed_examples"]]
    for side in SIDES:
        found = (summary.get("distributions") or {}).get(side)
        if not found:
            continue
        lines += ["", f"## Distributions, {side}", "",
                  "| spec | deliveries by redelivery count | messages by deliveries | nack to redelivery (ms) |",
                  "|---|---|---|---|"]
        for key, d in sorted(found.items()):
            wait = d["nack_to_redelivery_ms"]
            waits = ", ".join(f"{k} {v}" for k, v in wait.items()) if wait else ""
            lines.append(f"| `{key}` | {_counts(d['deliveries_by_redelivery_count'])} | "
                         f"{_counts(d['messages_by_deliveries'])} | {waits} |")
    return "\n".join(lines) + "\n"


def _counts(histogram: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in histogram.items())
