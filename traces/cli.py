"""Command line of the trace jobs.

    python -m traces generate --out CORPUS [--programs N] [--steps S] [--seed X] [--matrix FIELD=V1,V2 ...]
    python -m traces record --corpus CORPUS --out RECORDING --target model|pulsar|package.module:factory
                            [--service-url pulsar://... --admin-url http://...] [--concurrency N]
                            [--send-timeout-ms MS]
                            [--check [--check-out CHECK]]
    python -m traces diff EXPECTED OBSERVED --out DIFF [--fail-on-divergence]
    python -m traces check CORPUS --out CHECK [--partitions N] [--fail-on-violation] [--against OLD_CHECK]
    python -m traces compare BEFORE_CHECK AFTER_CHECK --out COMPARISON [--fail-on-change]
    python -m traces validate PATH

Every job takes --master (default local[*], or what spark-submit set), --driver-memory, --conf
KEY=VALUE and --overwrite (an existing output is refused without it; with it, only a corpus, a
recording, a diff or a check these jobs wrote is replaced, never another folder). Exit status: 0
done, 1 the diff found divergences and --fail-on-divergence was given (or the check found a
violation and --fail-on-violation was given, or a comparison found a changed verdict and
--fail-on-change was given), 2 bad input or usage, 3 the Spark job failed (its
output is not published; a recording can be resumed).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from traces.schema import CorpusError
from traces.specs import MatrixError, parse_matrix
from traces.targets import TargetError, TargetSpec

log = logging.getLogger("traces")
RECORD_CONCURRENCY = 8  # programs at once per task on a broker (BENCHMARKS, "Trace recording on the broker")
# How long a recorded send waits for the broker before it ends `info`. A corpus program restarts no
# broker, so a send answered at all is answered within a second or two even under load, and the
# clients' 30 s only make a producer left on a closed topic (KD-40, drivers/README.md) cost that much.
RECORD_SEND_TIMEOUT_MS = 5_000


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("spark")
    group.add_argument("--master", default=None, help="Spark master URL (default: local[*], or spark-submit's)")
    group.add_argument("--driver-memory", default=None, help="driver heap, e.g. 4g (local mode; default 4g)")
    group.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    parser.add_argument("--quiet", "-q", action="store_true", help="only warnings and errors")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m traces",
                                  description="Trace corpora in Spark: generate, record, diff, check.")
    sub = top.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="seeded random programs executed by the model, as a corpus")
    gen.add_argument("--out", required=True, help="corpus directory to write")
    gen.add_argument("--programs", type=int, default=1000, help="programs per spec (default 1000)")
    gen.add_argument("--steps", type=int, default=50, help="steps per program (default 50)")
    gen.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    gen.add_argument("--matrix", action="append", metavar="FIELD=V1,V2",
                     help="a Spec field and its values; the specs are their product over the catalog's spec of each "
                          "subscription type (default: the 4 types, a nack delay of 100 ms)")
    gen.add_argument("--chunk-programs", type=int, default=None, help="programs per task (default: ~100k events)")
    gen.add_argument("--overwrite", action="store_true")
    _common(gen)

    rec = sub.add_parser("record", help="run a corpus's programs against a target; resumable")
    rec.add_argument("--corpus", required=True, help="the corpus whose programs are run")
    rec.add_argument("--out", required=True, help="recording directory (run again to resume)")
    rec.add_argument("--target", default="model", help="model, pulsar or package.module:factory (default model)")
    rec.add_argument("--service-url", default=None, help="pulsar://host:6650 (with --target pulsar)")
    rec.add_argument("--admin-url", default=None, help="http://host:8080 (with --target pulsar)")
    from fixtures.credentials import OPTIONS

    for flag, settings in OPTIONS:  # for --service-url and --admin-url
        rec.add_argument(flag, **settings)
    rec.add_argument("--chunk-programs", type=int, default=500, help="programs per chunk file (default 500)")
    rec.add_argument("--concurrency", type=_positive, default=None, metavar="N",
                     help="programs recorded at once per Spark task, each on a target (a client) of its own "
                          f"(default {RECORD_CONCURRENCY} on a broker, 1 on the model, whose programs never wait)")
    rec.add_argument("--send-timeout-ms", type=_positive, default=RECORD_SEND_TIMEOUT_MS, metavar="MS",
                     help="how long a send waits for the broker before it is recorded as of unknown outcome "
                          f"(default {RECORD_SEND_TIMEOUT_MS}; the clients' own default is 30000)")
    rec.add_argument("--overwrite", action="store_true", help="record again from scratch")
    rec.add_argument("--check", action="store_true",
                     help="check the recording against the model once it is complete (as traces check does)")
    rec.add_argument("--check-out", default=None, help="where the check is written (default: RECORDING-check)")
    _common(rec)

    diff = sub.add_parser("diff", help="first divergent step per program, grouped into signatures")
    diff.add_argument("expected", help="corpus, Parquet events or JSON-lines history")
    diff.add_argument("observed", help="corpus, Parquet events or JSON-lines history")
    diff.add_argument("--out", required=True, help="directory for divergences/, signatures/, summary.json, report.html")
    diff.add_argument("--overwrite", action="store_true")
    diff.add_argument("--fail-on-divergence", action="store_true", help="exit 1 when any program diverges")
    _common(diff)

    chk = sub.add_parser("check", help="every program replayed through the model's checker: a verdict per program")
    chk.add_argument("corpus", help="corpus (generated or recorded), Parquet events or JSON-lines history")
    chk.add_argument("--out", required=True,
                     help="directory for verdicts/, signatures.parquet, reproductions/, summary.json, summary.md")
    chk.add_argument("--partitions", type=int, default=None,
                     help="partitions the programs are checked in (default: 4 per core)")
    chk.add_argument("--overwrite", action="store_true")
    chk.add_argument("--fail-on-violation", action="store_true", help="exit 1 when any program breaks a guarantee")
    chk.add_argument("--against", default=None, metavar="OLD_CHECK",
                     help="an earlier check of the same corpus (another model version): compare the verdicts")
    chk.add_argument("--compare-out", default=None, help="where the comparison goes (default: CHECK-compare)")
    chk.add_argument("--fail-on-change", action="store_true", help="with --against: exit 1 when a verdict changed")
    _common(chk)

    cmp = sub.add_parser("compare", help="two checks' verdicts per program and per signature, and the corpora's "
                                         "distributions")
    cmp.add_argument("before", help="a `traces check` output")
    cmp.add_argument("after", help="another `traces check` output (the same corpus re-checked, or a corpus "
                                   "recorded from the same seeds elsewhere)")
    cmp.add_argument("--out", required=True, help="directory for changes/, summary.json, summary.md")
    cmp.add_argument("--overwrite", action="store_true")
    cmp.add_argument("--no-distributions", action="store_true", help="skip reading the corpora's events")
    cmp.add_argument("--fail-on-change", action="store_true",
                     help="exit 1 when a program's verdict or signature changed, or is on one side only")
    _common(cmp)

    val = sub.add_parser("validate", help="check a corpus, Parquet events or a history against the schema")
    val.add_argument("path")
    _common(val)
    return top


def _session(args: argparse.Namespace):
    from traces.session import spark_session

    conf = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"error: --conf {item!r}: expected KEY=VALUE")
        conf[key] = value
    started = time.monotonic()
    spark = spark_session(args.master, app=f"traces-{args.command}", driver_memory=args.driver_memory, conf=conf)
    java = spark.sparkContext._jvm.java.lang.System.getProperty("java.version")
    log.info("spark %s on %s, Java %s, ready in %.1f s", spark.version, spark.sparkContext.master, java,
             time.monotonic() - started)
    return spark


def _validate(spark, path: str) -> dict:
    from traces import corpus as c

    opened = c.open_corpus(spark, path)
    problems = [] if opened.manifest.get("kind") == "history" else c.page_problems(opened.path)
    if problems:
        raise CorpusError(opened.path, problems)
    problems = c.value_problems(opened.events)
    if problems:
        raise CorpusError(opened.path, problems)
    programs = opened.program_table().count()
    log.info("validate: %s matches the event schema (%d programs)", opened.path, programs)
    return {"programs": programs}


def _check_out(args: argparse.Namespace):
    """record --check: where the check goes, refused before anything is recorded if it exists
    (without --overwrite) or overlaps the corpus or the recording."""
    from pathlib import Path

    from traces import corpus as c

    if not args.check:
        if args.check_out:
            raise ValueError("--check-out goes with --check")
        return None
    out = Path(args.out).absolute()
    check_out = Path(args.check_out).absolute() if args.check_out else out.with_name(f"{out.name}-check")
    c.refuse_existing(check_out, overwrite=args.overwrite, inputs=(Path(args.corpus), out))
    return check_out


def _compare_out(args: argparse.Namespace):
    """check --against: where the comparison goes, refused before anything is checked if it exists
    (without --overwrite) or is one of the inputs."""
    from pathlib import Path

    from traces.corpus import refuse_existing

    if args.against is None:
        if args.compare_out or args.fail_on_change:
            raise ValueError("--compare-out and --fail-on-change go with --against")
        return None
    check = Path(args.out).absolute()
    out = Path(args.compare_out).absolute() if args.compare_out else check.with_name(f"{check.name}-compare")
    refuse_existing(out, overwrite=args.overwrite, inputs=(Path(args.corpus), Path(args.against), check))
    return out


def _changed(compared: dict) -> bool:
    programs = compared["programs"]
    return bool(programs["changed"] or programs["only_before"] or programs["only_after"])


def job_finished() -> None:
    from traces.session import job_finished as finished

    finished()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    status = 0
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        if args.command == "generate":
            specs = parse_matrix(args.matrix)
            from traces.jobs import generate

            generate.run(_session(args), args.out, specs=specs, programs=args.programs, steps=args.steps,
                         seed=args.seed, chunk=args.chunk_programs, overwrite=args.overwrite)
        elif args.command == "record":
            from fixtures.credentials import from_options

            target = TargetSpec(name=args.target, service_url=args.service_url, admin_url=args.admin_url,
                                credentials=from_options(lambda name: getattr(args, name)),
                                send_timeout_ms=args.send_timeout_ms)
            target.check()
            from traces.jobs import record

            check_out = _check_out(args)
            spark = _session(args)
            concurrency = args.concurrency or (1 if target.name == "model" else RECORD_CONCURRENCY)
            record.run(spark, args.corpus, args.out, target=target, chunk_programs=args.chunk_programs,
                       overwrite=args.overwrite, concurrency=concurrency)
            if check_out is not None:
                from traces.jobs import check

                check.run(spark, args.out, check_out, overwrite=args.overwrite)
        elif args.command == "check":
            from traces.jobs import check

            compare_out = _compare_out(args)
            spark = _session(args)
            summary = check.run(spark, args.corpus, args.out, overwrite=args.overwrite, partitions=args.partitions)
            if args.fail_on_violation and summary["verdicts"]["violation"]:
                status = 1
            if compare_out is not None:
                from traces.jobs import compare

                compared = compare.run(spark, args.against, args.out, compare_out, overwrite=args.overwrite)
                if args.fail_on_change and _changed(compared):
                    status = 1
        elif args.command == "compare":
            from traces.jobs import compare

            compared = compare.run(_session(args), args.before, args.after, args.out, overwrite=args.overwrite,
                                   with_distributions=not args.no_distributions)
            if args.fail_on_change and _changed(compared):
                status = 1
        elif args.command == "diff":
            from traces.jobs import diff

            summary = diff.run(_session(args), args.expected, args.observed, args.out, overwrite=args.overwrite)
            if args.fail_on_divergence and summary["divergent_programs"]:
                status = 1
        else:
            _validate(_session(args), args.path)
    except (CorpusError, MatrixError, TargetError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - a failed Spark job: one message, nothing was published
        from pyspark.errors import PySparkException
        from py4j.protocol import Py4JJavaError

        if not isinstance(error, (PySparkException, Py4JJavaError)):
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"error: the Spark job failed ({first}); its output was not published", file=sys.stderr)
        return 3
    job_finished()
    return status
