"""Trace diff in Spark against the DuckDB floor, on the same Parquet, and generation speed.

    python -m benchmarks.spark_diff [--sizes 1M,10M,50M] [--runs 1] [--work DIR] [--generate-events 200000]
                                    [--java HOME,HOME] [--variants tuned,no-archive,no-jvm-flags]

For each size, two corpora in the project's schema are built once (kept in --work and reused):
real model programs (run_random_program over the 4 subscription types) tiled with fresh program
ids up to the size, and a copy where 0.1% of the programs diverge (a changed observation, a
truncated program or an extra step). Then `python -m traces diff` runs in a fresh process (wall
time includes Python and Spark start-up) and the same diff (fingerprint prefilter, semi join,
full join on the step, first divergence, signatures) runs in DuckDB in another fresh process.
Peak memory is the summed RSS of the whole process tree (the JVM included), and CPU time the
summed user + system time of that tree, both sampled every 50 ms (CPU time says what the wall
time would be on idle cores when the machine is shared).
With --java, the Spark diff runs on each of the given Java homes, the runs of every engine
alternating. With --variants, each Java runs the diff with the jobs' JVM tuning (traces.jvm) as it
is (`tuned`), without the class-data archive (`no-archive`: TRACES_CDS=0) and without the C1-only
and serial-collector flags (`no-jvm-flags`: C2 and G1 given back), side by side, so the benchmarks
page shows whether each piece of tuning still pays for itself. Both results are checked against the number of programs made divergent. Generation runs
`python -m traces generate` and reports events per minute, with a profile of the model.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
TEMPLATE_PROGRAMS = 250  # per spec
STEPS = 50
DIVERGENT_PER_MILLE = 1


def _tree(pid: int) -> dict[int, tuple[int, float]]:
    """RSS in bytes and CPU seconds (user + system) of `pid` and each of its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    children: dict[int, list[int]] = {}
    usage: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            usage[int(entry)] = (int(fields[21]) * page, (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, IndexError, ValueError):
            continue
    found, stack = {}, [pid]
    while stack:
        current = stack.pop()
        if current in usage:
            found[current] = usage[current]
        stack.extend(children.get(current, []))
    return found


def measured(command: list[str], **kwargs) -> tuple[float, int, float, subprocess.CompletedProcess]:
    """Run a command; wall seconds, peak process-tree RSS, CPU seconds of the tree (sampled every
    50 ms: the last samples of each process), the completed process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    peak, cpu = 0, {}
    done = threading.Event()
    out: dict[str, str] = {}

    def drain() -> None:
        out["stdout"], out["stderr"] = process.communicate()
        done.set()

    threading.Thread(target=drain, daemon=True).start()
    while not done.wait(0.05):
        tree = _tree(process.pid)
        peak = max(peak, sum(rss for rss, _ in tree.values()))
        cpu.update({pid: seconds for pid, (_, seconds) in tree.items()})
    wall = time.perf_counter() - started
    return wall, peak, sum(cpu.values()), subprocess.CompletedProcess(command, process.returncode, out["stdout"],
                                                                         out["stderr"])


# -- corpora ------------------------------------------------------------------------------------
def build_template(path: Path) -> None:
    """Real model programs: TEMPLATE_PROGRAMS per subscription type, STEPS steps each."""
    import pyarrow.parquet as pq

    from model.history import event_of, spec_id, spec_json
    from model.simulate import run_random_program
    from traces.schema import events_table
    from traces.specs import parse_matrix

    events = []
    for spec in parse_matrix(None):
        text, key = spec_json(spec), spec_id(spec)
        for i in range(TEMPLATE_PROGRAMS):
            try:
                trace = run_random_program(spec, 1_000_000 + i, STEPS)
            except AssertionError:
                continue
            events += [event_of(f"t{i:04d}", spec, n, op, c, spec_text=text, spec_key=key)
                       for n, (op, c) in enumerate(trace)]
    pq.write_table(events_table(events), path)


def _layout() -> str:
    """What the corpora's file layout depends on (traces.corpus.write_events)."""
    from traces import corpus as c

    return f"program ranges, {c.PAGE_ROWS} events a page, {c.EVENTS_PER_FILE} a file"


def build_corpora(spark, template: Path, work: Path, events: int) -> tuple[Path, Path, int]:
    """Expected and observed corpora of about `events` events; returns their paths and the number
    of programs made divergent."""
    from pyspark.sql import functions as F

    from traces import corpus as c
    from traces.schema import EVENT_SCHEMA, FIELDS, PARTITION
    from traces.transforms import program_table

    expected, observed = work / "expected", work / "observed"
    truth_file = work / "truth.json"
    layout = _layout()
    if truth_file.exists() and (expected / c.MANIFEST).exists() and (observed / c.MANIFEST).exists():
        truth = json.loads(truth_file.read_text())
        if truth.get("layout") == layout:  # corpora written by an older layout are built again
            return expected, observed, truth["divergent"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = spark.read.parquet(str(template)).select(*FIELDS).cache()
    specs = {r.spec_id: r.spec for r in base.select(PARTITION, "spec").distinct().collect()}
    per_copy = base.count()
    copies = max(1, round(events / per_copy))
    tasks = max(2, min(64, copies // 4 or 1))
    tiled = (spark.range(0, copies, 1, numPartitions=tasks).crossJoin(F.broadcast(base))
             .withColumn("program_id", F.concat("program_id", F.lit("-"), F.lpad(F.col("id").cast("string"), 6, "0")))
             .select(*FIELDS))
    selector = F.pmod(F.xxhash64(PARTITION, "program_id"), F.lit(1000))
    kind = F.pmod(F.xxhash64("program_id", F.lit(1)), F.lit(10))
    at = F.pmod(F.xxhash64("program_id", F.lit(2)), F.lit(STEPS - 1)) + 1  # a truncation keeps step 0
    divergent = selector < DIVERGENT_PER_MILLE
    changed = divergent & (kind < 6) & (F.col("step") == at)
    receive = F.col("op") == "receive"
    observed_rows = (tiled
                     .where(~(divergent & kind.isin(6, 7) & (F.col("step") >= at)))  # truncated programs
                     .withColumn("redelivery_count", F.when(changed & receive & F.col("delivered_entry").isNotNull(),
                                                            F.coalesce("redelivery_count", F.lit(0)) + 1)
                                 .otherwise(F.col("redelivery_count")))
                     .withColumn("outcome", F.when(changed & ~(receive & F.col("delivered_entry").isNotNull()), "info")
                                 .otherwise(F.col("outcome")))
                     .withColumn("error", F.when(changed & ~(receive & F.col("delivered_entry").isNotNull()),
                                                 "TimeoutException: injected").otherwise(F.col("error"))))
    last = tiled.where(divergent & kind.isin(8, 9) & (F.col("step") == F.lit(STEPS - 1)))
    appended = {"step": F.col("step") + 1, "op": F.lit("read_cursor"), "outcome": F.lit("ok"), "cursor": F.lit("-1|")}
    kept = ("program_id", "spec_id", "spec", "at")
    extra = last.select(*[appended[f.name].cast(f.dataType).alias(f.name) if f.name in appended else
                          F.col(f.name) if f.name in kept else F.lit(None).cast(f.dataType).alias(f.name)
                          for f in EVENT_SCHEMA.fields])
    for path, rows in ((expected, tiled), (observed, observed_rows.unionByName(extra))):
        staging = path / c.EVENTS
        c.write_events(rows, staging, expected_events=events, specs=specs)
        written = spark.read.schema(EVENT_SCHEMA).parquet(str(staging))
        program_table(written).coalesce(2).write.parquet(str(path / c.PROGRAMS))
        c.write_json(path / c.MANIFEST, {"format": c.FORMAT, "kind": "synthetic", "events": written.count(),
                                         "specs": specs})
    truth = tiled.where(divergent).select(PARTITION, "program_id").distinct().count()
    truth_file.write_text(json.dumps({"divergent": truth, "layout": layout}))
    base.unpersist()
    return expected, observed, truth


# -- the DuckDB floor ---------------------------------------------------------------------------
DUCKDB_DIFF = """
CREATE TEMP TABLE paired AS
SELECT coalesce(a.spec_id, b.spec_id) AS spec_id, coalesce(a.program_id, b.program_id) AS program_id,
       CASE WHEN b.fingerprint IS NULL THEN 'only_expected' WHEN a.fingerprint IS NULL THEN 'only_observed'
            WHEN a.fingerprint = b.fingerprint AND a.steps = b.steps THEN 'same' ELSE 'differs' END AS status,
       a.steps AS expected_steps, b.steps AS observed_steps
FROM read_parquet('{a}/programs/*.parquet') a FULL JOIN read_parquet('{b}/programs/*.parquet') b
  ON a.spec_id = b.spec_id AND a.program_id = b.program_id;
CREATE TEMP TABLE differing AS SELECT spec_id, program_id FROM paired WHERE status = 'differs';
CREATE TEMP TABLE aligned AS
WITH ea AS (SELECT * FROM read_parquet('{a}/events/*/*.parquet', hive_partitioning = true, hive_types = {{'spec_id': VARCHAR}})
            SEMI JOIN differing USING (spec_id, program_id)),
     eb AS (SELECT * FROM read_parquet('{b}/events/*/*.parquet', hive_partitioning = true, hive_types = {{'spec_id': VARCHAR}})
            SEMI JOIN differing USING (spec_id, program_id))
SELECT coalesce(ea.spec_id, eb.spec_id) AS spec_id, coalesce(ea.program_id, eb.program_id) AS program_id,
       coalesce(ea.step, eb.step) AS step, ea.op AS e_op, eb.op AS o_op,
       {differs} AS differs,
       {e_class} AS expected_class, {o_class} AS observed_class
FROM ea FULL JOIN eb ON ea.spec_id = eb.spec_id AND ea.program_id = eb.program_id AND ea.step = eb.step;
CREATE TEMP TABLE divergences AS
SELECT a.spec_id, a.program_id, first.step, coalesce(first.e_op, first.o_op) AS op, first.expected_class,
       first.observed_class, a.e_steps, a.o_steps
FROM (SELECT spec_id, program_id, min(step) FILTER (WHERE differs) AS first_step,
             count(e_op) AS e_steps, count(o_op) AS o_steps FROM aligned GROUP BY ALL) a
JOIN aligned first ON first.spec_id = a.spec_id AND first.program_id = a.program_id AND first.step = a.first_step;
COPY divergences TO '{out}/divergences.parquet' (FORMAT parquet);
COPY (SELECT op, spec_id, expected_class, observed_class, count(*) AS programs,
             arg_min(program_id, greatest(e_steps, o_steps)) AS representative
      FROM divergences GROUP BY ALL) TO '{out}/signatures.parquet' (FORMAT parquet);
"""


def _duckdb_sql(a: Path, b: Path, out: Path) -> str:
    from traces.transforms import COMPARED

    def col(side: str, name: str) -> str:
        if name == "error_class":
            return f"split_part({side}.error, ':', 1)"
        return f"{side}.{name}"

    differs = " OR ".join(f"{col('ea', c)} IS DISTINCT FROM {col('eb', c)}" for c in COMPARED)

    def klass(side: str) -> str:
        return (f"CASE WHEN {side}.op IS NULL THEN 'missing' WHEN {side}.outcome <> 'ok' THEN {side}.outcome || ':' || "
                f"coalesce(split_part({side}.error, ':', 1), '?') WHEN {side}.op = 'receive' THEN CASE WHEN "
                f"{side}.delivered_entry IS NULL THEN 'ok:nothing' WHEN {side}.redelivery_count > 0 THEN 'ok:redelivery' "
                f"ELSE 'ok:delivery' END WHEN {side}.op = 'read_cursor' THEN 'ok:cursor' WHEN {side}.op = 'send' "
                f"THEN 'ok:sent' ELSE 'ok' END")

    return DUCKDB_DIFF.format(a=a, b=b, out=out, differs=differs, e_class=klass("ea"), o_class=klass("eb"))


def duckdb_diff(a: str, b: str, out: str) -> None:
    import duckdb

    Path(out).mkdir(parents=True, exist_ok=True)
    connection = duckdb.connect()
    connection.execute(_duckdb_sql(Path(a), Path(b), Path(out)))
    count = connection.execute(f"SELECT count(*) FROM read_parquet('{out}/divergences.parquet')").fetchone()[0]
    print(json.dumps({"divergent_programs": count}))


# -- generation -----------------------------------------------------------------------------------
def profile_model(programs: int = 300) -> str:
    from model.simulate import run_random_program
    from model.spec import Spec

    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    events = sum(len(run_random_program(Spec(), seed, STEPS)) for seed in range(programs))
    profiler.disable()
    elapsed = time.perf_counter() - started
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(8)
    lines = [line for line in text.getvalue().splitlines() if line.strip()][-9:]
    return f"model alone, one process, profiled: {events / elapsed * 60:,.0f} events/min\n" + "\n".join(lines)


def measure_generation(work: Path, events: int) -> dict:
    out = work / "generated"
    programs = max(1, events // (4 * STEPS))
    wall, peak, cpu, done = measured([PYTHON, "-m", "traces", "generate", "--out", str(out), "--programs",
                                      str(programs), "--steps", str(STEPS), "--overwrite"], cwd=ROOT)
    if done.returncode:
        raise RuntimeError(done.stderr)
    manifest = json.loads((out / "corpus.json").read_text())
    return {"events": manifest["events"], "wall": wall, "generation_seconds": manifest["generation_seconds"],
            "peak": peak, "cpu": cpu}


# -- main -----------------------------------------------------------------------------------------
def _size(text: str) -> int:
    text = text.strip().upper()
    factor = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("KM")) * factor)


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# What each --variants name changes in the jobs' environment (traces.jvm reads these).
VARIANTS: dict[str, dict[str, str]] = {
    "tuned": {},
    "no-archive": {"TRACES_CDS": "0"},
    "no-jvm-flags": {"TRACES_JAVA_OPTIONS": "-XX:TieredStopAtLevel=4 -XX:-UseSerialGC -XX:+UseG1GC"},
}


def _variant_env(name: str) -> dict[str, str]:
    try:
        return VARIANTS[name]
    except KeyError:
        raise SystemExit(f"error: --variants {name}: not one of {', '.join(VARIANTS)}") from None


def _spark_engines(java: str) -> list[tuple[str, str]]:
    """("spark (Java N[, home])", TRACES_JAVA_HOME or "" for the jobs' own choice) per Java to compare."""
    from traces import jvm

    if not java:
        try:
            home = jvm.java_home() or Path(os.path.realpath(shutil.which("java") or "java")).parent.parent
        except ValueError as error:
            raise SystemExit(f"error: {error}") from None
        return [(f"spark (Java {jvm.java_major(home)})", "")]
    engines = []
    for home in dict.fromkeys(str(Path(h).absolute()) for h in java.split(",")):
        major = jvm.java_major(Path(home))
        if major is None:
            raise SystemExit(f"error: --java {home}: not a Java home (no release file naming its version)")
        engines.append((f"spark (Java {major}, {Path(home).name})", home))
    return engines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,10M,50M")
    parser.add_argument("--runs", type=int, default=1, help="diff runs per engine and size (the median is shown)")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "spark_diff_bench"))
    parser.add_argument("--generate-events", type=_size, default=200_000, help="0 skips the generation figure")
    parser.add_argument("--java", default="", help="Java homes to run the Spark diff on, side by side "
                                                   "(comma-separated; default: the one the jobs pick)")
    parser.add_argument("--variants", default="tuned", help="the jobs' JVM tuning to compare, side by side "
                                                           f"(comma-separated, of: {', '.join(VARIANTS)})")
    parser.add_argument("--duckdb-diff", nargs=3, metavar=("EXPECTED", "OBSERVED", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.duckdb_diff:
        duckdb_diff(*args.duckdb_diff)
        return
    variants = [(name, _variant_env(name)) for name in dict.fromkeys(args.variants.split(","))]
    engines = [(name if len(variants) == 1 else f"{name} {variant}", java_home, env)
               for name, java_home in _spark_engines(args.java) for variant, env in variants] + [("duckdb", None, {})]
    work = Path(args.work).absolute()
    work.mkdir(parents=True, exist_ok=True)
    template = work / "template.parquet"
    if not template.exists():
        build_template(template)
    sizes = [_size(s) for s in args.sizes.split(",")]
    if args.build_only:
        from traces.session import spark_session

        spark = spark_session("local[*]")
        for size in sizes:
            started = time.perf_counter()
            build_corpora(spark, template, work / f"{size // 1_000_000}M", size)
            print(f"corpora of {size:,} events ready ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        return
    # Built in another process, so that its JVM is gone before anything is measured; with the C2
    # compiler, since this is a long job (C1 alone, good for short jobs, took 498 s for the 10M
    # corpora here, C2 89 s).
    env = {**os.environ, "TRACES_JAVA_OPTIONS": f"{os.environ.get('TRACES_JAVA_OPTIONS', '')} -XX:TieredStopAtLevel=4"}
    subprocess.run([PYTHON, "-m", "benchmarks.spark_diff", "--build-only", "--sizes", args.sizes, "--work", str(work)],
                   cwd=ROOT, check=True, env=env)
    corpora = {}
    for size in sizes:
        base = work / f"{size // 1_000_000}M"
        corpora[size] = (base / "expected", base / "observed", json.loads((base / "truth.json").read_text())["divergent"])
    rows = []
    for size, (expected, observed, truth) in corpora.items():
        events = sum(json.loads((p / "corpus.json").read_text())["events"] for p in (expected, observed))
        runs: dict[str, list] = {name: [] for name, _, _ in engines}
        for _ in range(args.runs):  # the engines alternate, so that a machine slowing down weighs on all
            for name, java_home, variant_env in engines:
                out = work / f"diff-{name.split()[0]}-{size}"
                shutil.rmtree(out, ignore_errors=True)
                if java_home is None:
                    command, env = [PYTHON, "-m", "benchmarks.spark_diff", "--duckdb-diff", str(expected), str(observed),
                                    str(out)], None
                else:
                    command = [PYTHON, "-m", "traces", "diff", str(expected), str(observed), "--out", str(out), "-q"]
                    env = {**os.environ, **variant_env, **({"TRACES_JAVA_HOME": java_home} if java_home else {})}
                wall, peak, cpu, done = measured(command, cwd=ROOT, env=env)
                if done.returncode:
                    raise RuntimeError(f"{name} diff failed:\n{done.stderr}")
                found = (json.loads(done.stdout)["divergent_programs"] if java_home is None
                         else json.loads((out / "summary.json").read_text())["divergent_programs"])
                runs[name].append((wall, peak, found, cpu))
        figures = {name: sorted(measured_runs)[len(measured_runs) // 2] for name, measured_runs in runs.items()}
        rows.append((size, events, truth, figures, os.getloadavg()[0]))
        print(f"{size:,}: " + ", ".join(f"{name} {figures[name][0]:.1f} s" for name, _, _ in engines) + f" ({_load()})",
              file=sys.stderr, flush=True)
    print(f"\nTrace diff, 2 cores, local[*], wall time including process and session start ({_load()} at the end)\n")
    print("| events per corpus | divergent programs (truth / found) | engine | wall s | CPU s | events/s "
          "| peak RSS | / DuckDB (wall) | load (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for size, events, truth, figures, load in rows:
        floor = figures["duckdb"][0]
        for name, java_home, _ in engines:
            wall, peak, found, cpu = figures[name]
            print(f"| {size:,} | {truth} / {found} | {name} | {wall:.1f} | {cpu:.1f} | {events / wall / 1e6:.2f} M | "
                  f"{peak / 2**30:.2f} GiB | {'' if java_home is None else f'{wall / floor:.1f}x'} | {load:.1f} |")
    if args.generate_events:
        generated = measure_generation(work, args.generate_events)
        print(f"\nGeneration through the model ({generated['events']:,} events, 4 specs, {STEPS} steps): "
              f"{generated['events'] / generated['generation_seconds'] * 60:,.0f} events/min in the write stage, "
              f"{generated['events'] / generated['wall'] * 60:,.0f} events/min wall (session start included), "
              f"{generated['cpu']:.0f} CPU s, peak RSS {generated['peak'] / 2**30:.2f} GiB ({_load()})")
        print(profile_model())


if __name__ == "__main__":
    main()
