"""Pure DataFrame -> DataFrame transforms over trace corpora. Each is one Spark SQL query whose
SELECT list is its output contract (the *_COLUMNS constants); none uses a Python UDF, none
collects, every join names its type. (A query is one call to the JVM: building the same plan
from Column objects costs hundreds of Py4J round trips, seconds of a short job.)

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

from pyspark.sql import DataFrame

from traces.schema import FIELDS

KEY = ("spec_id", "program_id")
OP_COLUMNS = ("op", "consumer", "entry", "index", "keys", "batched", "ms")
OBSERVED_COLUMNS = ("outcome", "delivered_entry", "delivered_index", "redelivery_count", "cursor", "sent",
                    "error_class")
COMPARED = OP_COLUMNS + OBSERVED_COLUMNS
# Carried through the alignment for the report, not compared.
SHOWN = COMPARED + ("at", "error")
SIDES = ("expected", "observed")

PROGRAM_COLUMNS = (*KEY, "seed", "steps", "fingerprint")
PAIRED_COLUMNS = (*KEY, "status", "expected_steps", "observed_steps")
STATUSES = ("same", "differs", "only_expected", "only_observed")
ALIGNED_COLUMNS = (*KEY, "step", *(f"{side}_{c}" for side in SIDES for c in SHOWN))
DIVERGENCE_COLUMNS = (
    *KEY, "step", "op", "expected_class", "observed_class", "fields", "expected_steps", "observed_steps",
    *(f"{side}_{c}" for side in SIDES for c in COMPARED))
SIGNATURE = ("op", "spec_id", "expected_class", "observed_class", "fields")
SIGNATURE_COLUMNS = ("signature", *SIGNATURE, "programs", "representative_program", "representative_steps",
                     "representative_step")
ERROR_CLASS = "substring_index(error, ':', 1)"
# The session hands an IN list of up to this many values to Parquet value by value (Spark's
# default is 10; above it, Parquet gets the list's min..max range, which skips nothing). Spark
# chains the values' equalities one inside the other, and a task holding a chain of 1000 overflowed
# the JVM's stack (and, in local mode, ended the JVM), so programs_listed names its programs in
# INs of at most this many.
PARQUET_IN_VALUES = 200


def _sql(anchor: DataFrame, query: str, **frames: DataFrame) -> DataFrame:
    return anchor.sparkSession.sql(query, **frames)


def _list(columns, prefix: str = "") -> str:
    return ", ".join(f"{prefix}`{c}`" for c in columns)


def row_hash_sql(prefix: str = "") -> str:
    """xxhash64 of one event's step and compared columns, nulls told apart by a mask."""
    mask = " + ".join(f"IF({prefix}`{c}` IS NULL, {1 << i}, 0)" for i, c in enumerate(COMPARED))
    values = ", ".join(f"to_json({prefix}`{c}`)" if c == "keys" else f"{prefix}`{c}`" for c in COMPARED)
    return f"xxhash64({prefix}step, {mask}, {values})"


def program_table(events: DataFrame) -> DataFrame:
    """One row per program: its length and fingerprint (seed unknown: null)."""
    return _sql(events, f"""
        SELECT spec_id, program_id, CAST(NULL AS BIGINT) AS seed, CAST(count(1) AS INT) AS steps,
               bit_xor({row_hash_sql()}) AS fingerprint
        FROM (SELECT *, {ERROR_CLASS} AS error_class FROM {{events}})
        GROUP BY spec_id, program_id""", events=events)


def with_seeds(programs: DataFrame, seeds: DataFrame) -> DataFrame:
    """Fill `seed` from a (spec_id, program_id, seed) table."""
    return _sql(programs, """
        SELECT p.spec_id, p.program_id, s.seed, p.steps, p.fingerprint
        FROM {programs} p LEFT OUTER JOIN {seeds} s ON p.spec_id = s.spec_id AND p.program_id = s.program_id""",
                programs=programs, seeds=seeds)


def pair_programs(expected: DataFrame, observed: DataFrame) -> DataFrame:
    """Every program of either corpus with its status: same, differs, only_expected, only_observed."""
    return _sql(expected, """
        SELECT spec_id, program_id,
               CASE WHEN o.fingerprint IS NULL THEN 'only_expected' WHEN e.fingerprint IS NULL THEN 'only_observed'
                    WHEN e.fingerprint = o.fingerprint AND e.steps = o.steps THEN 'same' ELSE 'differs' END AS status,
               e.steps AS expected_steps, o.steps AS observed_steps
        FROM {expected} e FULL OUTER JOIN {observed} o USING (spec_id, program_id)""",
                expected=expected, observed=observed)


def programs_of(frame: DataFrame, programs: DataFrame, *, broadcast: bool) -> DataFrame:
    """The rows (events, aligned steps) of the given programs only: a semi join on the program
    key; the columns are the input's."""
    hint = "/*+ BROADCAST(k) */" if broadcast else ""
    return _sql(frame, f"""
        SELECT {hint} {_list(frame.columns, 'e.')}
        FROM {{frame}} e LEFT SEMI JOIN {{programs}} k ON e.spec_id = k.spec_id AND e.program_id = k.program_id""",
                frame=frame, programs=programs)


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _balanced_or(terms: list[str]) -> str:
    """`t1 OR t2 OR ...` as a balanced tree (depth log2 n), however many IN lists a scan needs."""
    if len(terms) == 1:
        return terms[0]
    middle = len(terms) // 2
    return f"({_balanced_or(terms[:middle])} OR {_balanced_or(terms[middle:])})"


def programs_listed(events: DataFrame, keys: list[tuple[str, str]]) -> DataFrame:
    """The events of exactly the given (spec_id, program_id) programs: one scan per spec, filtered
    on `spec_id = ...` (which prunes the other specs' directories) and on the listed program ids,
    as a balanced OR of `program_id IN (...)` lists of at most PARQUET_IN_VALUES ids each, which
    the session hands to Parquet value by value: with files sorted by program, Parquet then reads
    only the pages that may hold a listed program. The columns are FIELDS."""
    by_spec: dict[str, list[str]] = {}
    for spec, program in keys:
        by_spec.setdefault(spec, []).append(program)
    if not by_spec:
        return _sql(events, f"SELECT {_list(FIELDS)} FROM {{events}} WHERE false", events=events)
    scans = []
    for spec, programs in sorted(by_spec.items()):
        values = [_sql_string(p) for p in sorted(set(programs))]
        lists = [f"program_id IN ({', '.join(values[i:i + PARQUET_IN_VALUES])})"
                 for i in range(0, len(values), PARQUET_IN_VALUES)]
        scans.append(f"SELECT {_list(FIELDS)} FROM {{events}} WHERE spec_id = {_sql_string(spec)} "
                     f"AND {_balanced_or(lists)}")
    return _sql(events, " UNION ALL ".join(scans), events=events)


def align(expected: DataFrame, observed: DataFrame) -> DataFrame:
    """Both corpora's events side by side, one row per (program, step) present on either side."""
    def side(prefix: str) -> str:
        return ", ".join(f"{ERROR_CLASS} AS {prefix}_error_class" if c == "error_class" else f"`{c}` AS {prefix}_{c}"
                         for c in SHOWN)

    return _sql(expected, f"""
        SELECT {_list(ALIGNED_COLUMNS)}
        FROM (SELECT spec_id, program_id, step, {side('expected')} FROM {{expected}})
        FULL OUTER JOIN (SELECT spec_id, program_id, step, {side('observed')} FROM {{observed}})
        USING (spec_id, program_id, step)""", expected=expected, observed=observed)


def _differs(column: str, alias: str = "") -> str:
    return f"NOT ({alias}expected_{column} <=> {alias}observed_{column})"


def observation_class_sql(prefix: str) -> str:
    """A coarse class of what one side saw at a step: `missing`, `fail:<error>`, `info:<error>`,
    `ok:nothing` / `ok:delivery` / `ok:redelivery` (receive), `ok:cursor`, `ok:sent`, `ok`."""
    p = f"{prefix}_"
    return (f"CASE WHEN {p}op IS NULL THEN 'missing' "
            f"WHEN {p}outcome <> 'ok' THEN concat({p}outcome, ':', coalesce({p}error_class, '?')) "
            f"WHEN {p}op = 'receive' THEN CASE WHEN {p}delivered_entry IS NULL THEN 'ok:nothing' "
            f"WHEN {p}redelivery_count > 0 THEN 'ok:redelivery' ELSE 'ok:delivery' END "
            f"WHEN {p}op = 'read_cursor' THEN IF({p}cursor IS NULL, 'ok:no-cursor', 'ok:cursor') "
            f"WHEN {p}op = 'send' THEN 'ok:sent' ELSE 'ok' END")


def first_divergences(aligned: DataFrame) -> DataFrame:
    """Per program, the first step where the two sides differ, with what each side saw there.

    `fields` names the compared columns that differ (a missing step: `missing`); programs whose
    events are all equal do not appear.
    """
    differs = " OR ".join(_differs(c) for c in COMPARED)
    names = ", ".join(f"IF({_differs(c, 'a.')}, '{c}', NULL)" for c in COMPARED)
    carried = _list([f"{side}_{c}" for side in SIDES for c in COMPARED], "a.")
    return _sql(aligned, f"""
        WITH firsts AS (
            SELECT spec_id, program_id, min(IF({differs}, step, NULL)) AS step,
                   CAST(count(expected_op) AS INT) AS expected_steps, CAST(count(observed_op) AS INT) AS observed_steps
            FROM {{aligned}} GROUP BY spec_id, program_id)
        SELECT a.spec_id, a.program_id, a.step, coalesce(a.expected_op, a.observed_op) AS op,
               {observation_class_sql('a.expected')} AS expected_class,
               {observation_class_sql('a.observed')} AS observed_class,
               IF(a.expected_op IS NULL OR a.observed_op IS NULL, 'missing',
                  concat_ws(',', array_compact(array({names})))) AS fields,
               f.expected_steps, f.observed_steps, {carried}
        FROM {{aligned}} a INNER JOIN firsts f
          ON a.spec_id = f.spec_id AND a.program_id = f.program_id AND a.step = f.step""", aligned=aligned)


def signatures(divergences: DataFrame) -> DataFrame:
    """Divergences grouped by (op, spec, expected class, observed class, differing fields), with a
    count and the shortest program showing each (ties: the smallest program id)."""
    keys = _list(SIGNATURE)
    return _sql(divergences, f"""
        SELECT substring(sha2(concat_ws('|', {keys}), 256), 1, 12) AS signature, {keys}, programs,
               rep.program_id AS representative_program, rep.steps AS representative_steps,
               rep.step AS representative_step
        FROM (SELECT {keys}, count(1) AS programs,
                     min(named_struct('steps', greatest(expected_steps, observed_steps), 'program_id', program_id,
                                      'step', step)) AS rep
              FROM {{divergences}} GROUP BY {keys})""", divergences=divergences)


def status_per_spec(unequal: DataFrame, expected_programs: DataFrame) -> DataFrame:
    """Per spec, how many programs are the same, differ, or exist on one side only, from the
    paired programs that are not the same and the expected side's per-program table (the same
    ones are the expected programs that neither differ nor are missing on the observed side).
    One aggregation over both (one Spark job fewer than two)."""
    counted = ", ".join(f"IF(status = '{s}', 1, 0) AS {s}" for s in STATUSES if s != "same")
    sums = ", ".join(f"CAST(sum({s}) AS BIGINT) AS {s}" for s in STATUSES if s != "same")
    return _sql(unequal, f"""
        SELECT spec_id, CAST(sum(programs) - sum(differs) - sum(only_expected) AS BIGINT) AS same, {sums}
        FROM (SELECT spec_id, {counted}, 0 AS programs FROM {{unequal}}
              UNION ALL
              SELECT spec_id, 0, 0, 0, 1 FROM {{expected_programs}})
        GROUP BY spec_id""", unequal=unequal, expected_programs=expected_programs)


def problems(aligned: DataFrame, known_ops: tuple[str, ...], outcomes: tuple[str, ...]) -> DataFrame:
    """Per side (`side`, `events`, `first`): events with an op outside the vocabulary or an outcome
    other than ok/fail/info, their count and the first one. One aggregation over both sides."""
    ops = ", ".join(_sql_string(op) for op in known_ops)
    kinds = ", ".join(_sql_string(outcome) for outcome in outcomes)
    flags = ", ".join(f"{side}_op IS NOT NULL AND ({side}_op NOT IN ({ops}) OR {side}_outcome IS NULL "
                      f"OR {side}_outcome NOT IN ({kinds})) AS {side}_bad" for side in SIDES)
    found = ", ".join(f"count_if({side}_bad) AS {side}_events, min(IF({side}_bad, named_struct('spec_id', spec_id, "
                      f"'program_id', program_id, 'step', step, 'op', {side}_op, 'outcome', {side}_outcome), NULL)) "
                      f"AS {side}_first" for side in SIDES)
    rows = ", ".join(f"named_struct('side', '{side}', 'events', {side}_events, 'first', {side}_first)"
                     for side in SIDES)
    return _sql(aligned, f"""
        SELECT inline(array({rows}))
        FROM (SELECT {found} FROM (SELECT spec_id, program_id, step, {_list([f"{side}_{c}" for side in SIDES
                                                                             for c in ("op", "outcome")])}, {flags}
                                    FROM {{aligned}}))""", aligned=aligned)


def steps_until(aligned: DataFrame, picks: list[tuple[str, str, int]]) -> DataFrame:
    """The aligned steps of the picked (spec_id, program_id, step) programs up to their step."""
    if not picks:
        return _sql(aligned, f"SELECT {_list(ALIGNED_COLUMNS)} FROM {{aligned}} WHERE false", aligned=aligned)
    values = ", ".join(f"({_sql_string(k)}, {_sql_string(p)}, {int(step)})" for k, p, step in picks)
    return _sql(aligned, f"""
        SELECT /*+ BROADCAST(c) */ {_list(ALIGNED_COLUMNS, 'a.')}
        FROM {{aligned}} a INNER JOIN (VALUES {values}) AS c(spec_id, program_id, until)
          ON a.spec_id = c.spec_id AND a.program_id = c.program_id
        WHERE a.step <= c.until""", aligned=aligned)


# -- check: the verdicts of traces.check, one row per program --------------------------------------
VERDICT_COUNT_COLUMNS = ("spec_id", "verdict", "guarantee", "reason", "programs", "events")
VERDICT_SIGNATURE_COLUMNS = ("signature", "verdict", "guarantee", "reason", "detail_class", "programs", "specs",
                             "representative_spec", "representative_program", "representative_step",
                             "representative_steps", "representative_detail")


def verdict_counts(verdicts: DataFrame) -> DataFrame:
    """Programs and events per (spec, verdict, guarantee, unknown's reason): every count a summary
    shows is a sum of these rows."""
    return _sql(verdicts, """
        SELECT spec_id, verdict, guarantee, reason, count(1) AS programs, CAST(sum(steps) AS BIGINT) AS events
        FROM {verdicts} GROUP BY spec_id, verdict, guarantee, reason""", verdicts=verdicts)


def verdict_signatures(verdicts: DataFrame) -> DataFrame:
    """The programs that do not conform grouped by signature, with a count, the number of specs
    showing it, and its shortest program: the one whose anomaly comes first (fewest steps up to it;
    ties: spec, then program id)."""
    return _sql(verdicts, """
        SELECT signature, verdict, guarantee, reason, detail_class, programs, specs,
               rep.spec_id AS representative_spec, rep.program_id AS representative_program,
               rep.step AS representative_step, rep.steps AS representative_steps, rep.detail AS representative_detail
        FROM (SELECT signature, verdict, guarantee, reason, detail_class, count(1) AS programs,
                     CAST(count(DISTINCT spec_id) AS BIGINT) AS specs,
                     min(named_struct('length', coalesce(step, -1) + 1, 'spec_id', spec_id, 'program_id', program_id,
                                      'step', step, 'steps', steps, 'detail', detail)) AS rep
              FROM {verdicts} WHERE verdict <> 'conforms'
              GROUP BY signature, verdict, guarantee, reason, detail_class)""", verdicts=verdicts)
