"""Pure DataFrame -> DataFrame transforms over trace corpora. Each ends in a `select` that is its
output contract; none uses a Python UDF, none collects, every join names its `how`.

What two events are compared on: the op (`op`, `consumer`, `entry`, `index`, `keys`, `batched`,
`ms`) and the observation (`outcome`, the delivered message and its redelivery count, the cursor,
the number of ids a send returned, and the error's class: the text before the first `:`). The
time `at` and the error's free text are not compared: a broker's clock and its messages differ
from the model's without a difference in ack semantics.

A program's fingerprint is the XOR of one xxhash64 per event over its step and exactly the
compared columns (with a null mask, since xxhash64 skips nulls), and its length: two programs
with equal fingerprints and lengths have equal compared events (up to a 2^-64 collision), so a
diff joins the small per-program tables first and reads the events of differing programs only.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from traces.schema import FIELDS

KEY = ("spec_id", "program_id")
OP_COLUMNS = ("op", "consumer", "entry", "index", "keys", "batched", "ms")
OBSERVED_COLUMNS = ("outcome", "delivered_entry", "delivered_index", "redelivery_count", "cursor", "sent",
                    "error_class")
COMPARED = OP_COLUMNS + OBSERVED_COLUMNS
# Carried through the alignment for the report, not compared.
SHOWN = COMPARED + ("at", "error")

ALIGNED_COLUMNS = (*KEY, "step", *(f"expected_{c}" for c in SHOWN), *(f"observed_{c}" for c in SHOWN))
DIVERGENCE_COLUMNS = (
    *KEY, "step", "op", "expected_class", "observed_class", "fields", "expected_steps", "observed_steps",
    *(f"expected_{c}" for c in COMPARED), *(f"observed_{c}" for c in COMPARED))
SIGNATURE = ("op", "spec_id", "expected_class", "observed_class", "fields")
SIGNATURE_COLUMNS = ("signature", *SIGNATURE, "programs", "representative_program", "representative_steps",
                     "representative_step")
PAIRED_COLUMNS = (*KEY, "status", "expected_steps", "observed_steps")
STATUSES = ("same", "differs", "only_expected", "only_observed")


def error_class(error: Column) -> Column:
    return F.substring_index(error, ":", 1)


def with_error_class(events: DataFrame) -> DataFrame:
    return events.select(*FIELDS, error_class(F.col("error")).alias("error_class"))


def row_hash(columns: dict[str, Column]) -> Column:
    """xxhash64 of one event's step and compared columns, nulls told apart by a mask."""
    ordered = [columns[c] for c in COMPARED]
    mask = sum((F.when(c.isNull(), 1 << i).otherwise(0) for i, c in enumerate(ordered)), F.lit(0))
    values = [F.to_json(c) if name == "keys" else c for name, c in zip(COMPARED, ordered)]
    return F.xxhash64(columns["step"], mask, *values)


def program_table(events: DataFrame) -> DataFrame:
    """One row per program: its length and fingerprint (seed unknown: null)."""
    typed = with_error_class(events)
    hashed = typed.select(*KEY, row_hash({c: F.col(c) for c in ("step", *COMPARED)}).alias("h"))
    return (hashed.groupBy(*KEY).agg(F.count(F.lit(1)).cast("int").alias("steps"), F.bit_xor("h").alias("fingerprint"))
            .select(*KEY, F.lit(None).cast("long").alias("seed"), "steps", "fingerprint"))


def with_seeds(programs: DataFrame, seeds: DataFrame) -> DataFrame:
    """Fill `seed` from a (spec_id, program_id, seed) table."""
    joined = programs.drop("seed").join(seeds.select(*KEY, "seed"), on=list(KEY), how="left")
    return joined.select(*KEY, "seed", "steps", "fingerprint")


def pair_programs(expected: DataFrame, observed: DataFrame) -> DataFrame:
    """Every program of either corpus with its status: same, differs, only_expected, only_observed."""
    e = expected.select(*KEY, F.col("steps").alias("expected_steps"), F.col("fingerprint").alias("e_fp"))
    o = observed.select(*KEY, F.col("steps").alias("observed_steps"), F.col("fingerprint").alias("o_fp"))
    joined = e.join(o, on=list(KEY), how="full")
    status = (F.when(F.col("o_fp").isNull(), "only_expected").when(F.col("e_fp").isNull(), "only_observed")
              .when((F.col("e_fp") == F.col("o_fp")) & (F.col("expected_steps") == F.col("observed_steps")), "same")
              .otherwise("differs"))
    return joined.select(*KEY, status.alias("status"), "expected_steps", "observed_steps")


def programs_of(events: DataFrame, programs: DataFrame, *, broadcast: bool) -> DataFrame:
    """The events of the given programs only (a semi join on the program key)."""
    keys = programs.select(*KEY)
    return events.join(F.broadcast(keys) if broadcast else keys, on=list(KEY), how="left_semi").select(*FIELDS)


def align(expected: DataFrame, observed: DataFrame) -> DataFrame:
    """Both corpora's events side by side, one row per (program, step) present on either side."""
    def side(events: DataFrame, prefix: str) -> DataFrame:
        typed = with_error_class(events)
        return typed.select(*KEY, "step", *(F.col(c).alias(f"{prefix}_{c}") for c in SHOWN))

    joined = side(expected, "expected").join(side(observed, "observed"), on=[*KEY, "step"], how="full")
    return joined.select(*ALIGNED_COLUMNS)


def _differs(column: str) -> Column:
    return ~F.col(f"expected_{column}").eqNullSafe(F.col(f"observed_{column}"))


def observation_class(prefix: str) -> Column:
    """A coarse class of what one side saw at a step: `missing`, `fail:<error>`, `info:<error>`,
    `ok:nothing` / `ok:delivery` / `ok:redelivery` (receive), `ok:cursor`, `ok:sent`, `ok`."""
    c = lambda name: F.col(f"{prefix}_{name}")  # noqa: E731
    return (F.when(c("op").isNull(), F.lit("missing"))
            .when(c("outcome") != "ok", F.concat(c("outcome"), F.lit(":"), F.coalesce(c("error_class"), F.lit("?"))))
            .when(c("op") == "receive", F.when(c("delivered_entry").isNull(), "ok:nothing")
                  .when(c("redelivery_count") > 0, "ok:redelivery").otherwise("ok:delivery"))
            .when(c("op") == "read_cursor", F.when(c("cursor").isNull(), "ok:no-cursor").otherwise("ok:cursor"))
            .when(c("op") == "send", F.lit("ok:sent"))
            .otherwise(F.lit("ok")))


def first_divergences(aligned: DataFrame) -> DataFrame:
    """Per program, the first step where the two sides differ, with what each side saw there.

    `fields` names the compared columns that differ (a missing step: `missing`); programs whose
    events are all equal do not appear.
    """
    names = [F.when(_differs(c), F.lit(c)) for c in COMPARED]
    missing = F.col("expected_op").isNull() | F.col("observed_op").isNull()
    fields = F.when(missing, F.lit("missing")).otherwise(F.concat_ws(",", F.array_compact(F.array(*names))))
    any_difference = F.lit(False)
    for c in COMPARED:
        any_difference = any_difference | _differs(c)
    carried = [f"{side}_{c}" for side in ("expected", "observed") for c in COMPARED]
    rows = aligned.select(*KEY, "step", *carried, fields.alias("fields"), any_difference.alias("differs"))
    first = F.min(F.when(F.col("differs"), F.struct("step", "fields", *carried))).alias("first")
    grouped = rows.groupBy(*KEY).agg(first, F.count("expected_op").cast("int").alias("expected_steps"),
                                     F.count("observed_op").cast("int").alias("observed_steps"))
    flat = grouped.where(F.col("first").isNotNull()).select(
        *KEY, "expected_steps", "observed_steps", *(F.col(f"first.{c}").alias(c) for c in ("step", "fields", *carried)))
    op = F.coalesce(F.col("expected_op"), F.col("observed_op")).alias("op")
    return flat.select(*KEY, "step", op, observation_class("expected").alias("expected_class"),
                       observation_class("observed").alias("observed_class"), *DIVERGENCE_COLUMNS[6:])


def signatures(divergences: DataFrame) -> DataFrame:
    """Divergences grouped by (op, spec, expected class, observed class, differing fields), with a
    count and the shortest program showing each (ties: the smallest program id)."""
    length = F.greatest(F.col("expected_steps"), F.col("observed_steps"))
    rep = F.min(F.struct(length.alias("steps"), F.col("program_id"), F.col("step"))).alias("rep")
    grouped = divergences.groupBy(*SIGNATURE).agg(F.count(F.lit(1)).alias("programs"), rep)
    signature = F.substring(F.sha2(F.concat_ws("|", *SIGNATURE), 256), 1, 12)
    return grouped.select(signature.alias("signature"), *SIGNATURE, "programs",
                          F.col("rep.program_id").alias("representative_program"),
                          F.col("rep.steps").alias("representative_steps"),
                          F.col("rep.step").alias("representative_step"))


def status_per_spec(paired: DataFrame) -> DataFrame:
    """Per spec, how many programs are the same, differ, or exist on one side only."""
    counts = [F.sum(F.when(F.col("status") == s, 1).otherwise(0)).alias(s) for s in STATUSES]
    return paired.groupBy("spec_id").agg(*counts).select("spec_id", *STATUSES)


def status_counts(paired: DataFrame) -> DataFrame:
    counts = [F.sum(F.when(F.col("status") == s, 1).otherwise(0)).alias(s) for s in STATUSES]
    return paired.agg(*counts).select(*STATUSES)


def steps_until(aligned: DataFrame, chosen: DataFrame) -> DataFrame:
    """The aligned steps of chosen programs up to and including their given `step`."""
    picked = chosen.select(*KEY, F.col("step").alias("until"))
    joined = aligned.join(F.broadcast(picked), on=list(KEY), how="inner")
    return joined.where(F.col("step") <= F.col("until")).select(*ALIGNED_COLUMNS)
