"""The Spark session of the trace jobs: quiet, small, local by default, spark-submit friendly.

Sized for a 2-core / 24 GiB machine in local mode (everything runs in the driver JVM): a 4 GiB
heap, shuffle partitions at twice the cores (adaptive execution coalesces further), no UI, no
console progress bar, Spark's own log at ERROR, and a JVM tuned for short jobs (traces.jvm: the
newest Java Spark runs on, C1 only, a class-data archive written by the first run; TRACES_CDS=0
turns the archive off; TRACES_JAVA_OPTIONS adds options, TRACES_JAVA_HOME picks the Java). Under
`spark-submit` the master and memory come from spark-submit, and on a non-local master the
project's packages are shipped to the executors.
Progress of long jobs is logged from the driver (tasks done per stage) every few seconds.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fixtures import kit
from traces import jvm

log = logging.getLogger("traces")

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "4g"
PACKAGES = ("model", "traces", "fixtures", "reports")  # reports: the signatures of traces check
_HERE = Path(__file__).resolve().parent
_TUNING = None  # the JVM options of this process's session (traces.jvm.Options), once started


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ or "SPARK_SUBMIT_OPTS" in os.environ


def _local_cores(master: str) -> int:
    if master.startswith("local[") and master[6:-1].isdigit():
        return int(master[6:-1])
    return os.cpu_count() or 2


def spark_session(master: str | None = None, *, app: str = "traces", driver_memory: str | None = None,
                  conf: dict[str, str] | None = None):
    """Get or create the session; `master` None means local[*] unless spark-submit chose one."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from traces.transforms import PARQUET_IN_VALUES

    builder = SparkSession.builder.appName(app)
    submitted = _under_spark_submit()
    if master is None and not submitted:
        master = DEFAULT_MASTER
    if master is not None:
        builder = builder.master(master)
    local = master is not None and master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",

        # AQE may build a hash table instead of sorting both sides of a join when every
        # partition is small (the per-program tables of a diff).
        "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold": "64MB",
        # An IN list of up to this many values goes to Parquet value by value, so that a diff's
        # scans of the programs it lists read only their pages (traces.transforms.programs_listed).
        "spark.sql.parquet.pushdown.inFilterThreshold": str(PARQUET_IN_VALUES),
    }
    tuning = jvm.local_options() if local else jvm.Options(options=())

    def java_options(options: jvm.Options) -> str:
        return " ".join([f"-Dlog4j2.configurationFile=file:{_HERE / 'log4j2.properties'}", *options.options,
                         os.environ.get("TRACES_JAVA_OPTIONS", ""),
                         (conf or {}).get("spark.driver.extraJavaOptions", "")]).strip()

    if local:
        settings.update({
            "spark.driver.memory": driver_memory or DEFAULT_DRIVER_MEMORY,
            "spark.sql.shuffle.partitions": str(max(4, 2 * _local_cores(master))),
            "spark.local.dir": os.environ.get("TRACES_SPARK_LOCAL_DIR", tempfile.gettempdir()),
        })
    elif driver_memory:
        settings["spark.driver.memory"] = driver_memory
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    _import_in_background("pyspark.testing.utils")
    spark, tuning = _start(builder, _attempts(tuning), java_options)
    jvm.started(tuning, spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    global _TUNING
    _TUNING = tuning
    spark.sparkContext.setLogLevel("ERROR")
    if not local and not spark.sparkContext.master.startswith("local"):
        ship_packages(spark)
    return spark


def _import_in_background(module: str) -> None:
    """Import `module` in a thread while the JVM starts (this process only waits for it then).
    pyspark imports pyspark.testing.utils, and with it pandas (0.4 s), on its first call to the
    JVM with arguments (its numpy converter asks that module whether numpy is installed); the
    thread has it imported by then, or the call waits for the rest of the import (measured: the
    session and a first query 3.17 -> 2.91 s, medians of five runs alternating)."""
    if module in sys.modules:
        return

    def load() -> None:
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001 - pyspark's own import, later, reports it
            log.debug("spark: importing %s ahead failed (%s)", module, error)

    threading.Thread(target=load, name=f"import-{module}", daemon=True).start()


def _attempts(tuning: jvm.Options) -> Iterator[jvm.Options]:
    """The JVMs to try, in order, while none starts: the tuned one, the same Java without the
    tuning (a JVM that rejects an option, an archive it cannot map), and for a Java picked beside
    the one on PATH, the `java` on PATH, tuned and not."""
    yield tuning
    if tuning.options:
        yield jvm.Options(options=(), java_home=tuning.java_home)
    if tuning.java_picked:
        on_path = jvm.path_options()
        yield on_path
        if on_path.options:
            yield jvm.Options(options=())


def _start(builder, attempts: Iterator[jvm.Options], java_options) -> tuple:
    """Start the session with the first of `attempts` whose JVM starts. Only a JVM that did not
    start (pyspark has no gateway) leads to the next attempt; any other error, or the last
    attempt's, is raised as it is."""
    from pyspark import SparkContext

    failure = None
    for options in attempts:
        if failure is not None:
            previous, error = failure
            if options.java_home != previous.java_home:
                log.warning("spark: the JVM did not start on %s (%s); trying %s", _java_name(previous),
                            _first_line(error), _java_name(options))
            else:
                log.warning("spark: the JVM did not start with %s (%s); trying without them",
                            " ".join(previous.options), _first_line(error))
        try:
            with _with_java_home(options.java_home):
                return builder.config("spark.driver.extraJavaOptions", java_options(options)).getOrCreate(), options
        except Exception as error:  # noqa: BLE001 - a JVM that did not start: the next attempt, if any
            if SparkContext._gateway is not None:
                raise
            if options.options:
                jvm.failed(options)
            failure = (options, error)
    raise failure[1]


def _java_name(options: jvm.Options) -> str:
    return str(options.java_home) if options.java_home else "the java on PATH"


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextmanager
def _with_java_home(home: Path | None) -> Iterator[None]:
    """JAVA_HOME set to `home` while the Spark JVM starts (pyspark starts it with this process's
    environment), as it was afterwards: a broker started later from this process keeps its Java."""
    if home is None:
        yield
        return
    before = os.environ.get("JAVA_HOME")
    os.environ["JAVA_HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = before


def job_finished() -> None:
    """A job of this process finished: the class-data archive its JVM writes at exit, if any, is
    worth keeping (traces.jvm)."""
    if _TUNING is not None:
        jvm.kept(_TUNING)


_SHIPPED: set[str] = set()  # the applications (by id) this process has shipped its packages to


def ship_packages(spark) -> None:
    """Zip this project's packages and add them to the executors' Python path (cluster masters): the
    clone's top-level ones, or an installed kit's one package, under the names the code imports.
    Once per application: a second job of the same process reuses the session, and Spark refuses
    a file of the same name added again."""
    application = spark.sparkContext.applicationId
    if application in _SHIPPED:
        return
    root = kit.CODE_ROOT.parent if kit.INSTALLED else kit.CODE_ROOT
    folders = [kit.CODE_ROOT] if kit.INSTALLED else [kit.CODE_ROOT / package for package in PACKAGES]
    archive = Path(tempfile.mkdtemp(prefix="traces-code-")) / "pulsar_ack_conformance.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for folder in folders:
            for file in folder.rglob("*"):
                if file.suffix in (".py", ".properties") and "__pycache__" not in file.parts:
                    zipped.write(file, file.relative_to(root))
    spark.sparkContext.addPyFile(str(archive))
    _SHIPPED.add(application)


@contextmanager
def progress(spark, what: str, every_s: float = 5.0) -> Iterator[None]:
    """Log the tasks done per active stage every `every_s` seconds while the block runs, then the
    time it took."""
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()

    def report() -> None:
        last = None
        while not stop.wait(every_s):
            stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            parts = [f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s]
            line = "; ".join(parts) or "planning"
            if line != last:
                log.info("%s: %s", what, line)
                last = line

    thread = threading.Thread(target=report, name=f"progress-{what}", daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)
    log.info("%s: done in %.1f s", what, time.monotonic() - started)
