"""The JVM of short local Spark jobs: the newest Java that Spark runs on, the C1 compiler only, the
serial collector, a class-data archive, and no wait at exit.

Which Java: $TRACES_JAVA_HOME, else $JAVA_HOME, else the newest JDK of a version Spark runs on
(spark_java(): 17, 21, 25 for Spark 4.3+) installed side by side with the `java` on PATH (in
/usr/lib/jvm, where Debian and Ubuntu put them), when it is newer than that one. A newer JVM runs
the diff faster (the 50M-event diff, median of three runs alternating: 22.5 s wall on Java 25,
31.7 s on Java 17; the 10M one 14.8 s and 17.1 s). Only this process's Spark JVM gets it, not the
broker nor anything else started from the same process.

A short local job spends much of its CPU starting the JVM and compiling: C1 alone compiles
quickly; the serial collector does without G1's concurrent threads, which on two cores compete
with the job (the 10M-event diff, same archive, four runs each: 16-18 CPU s and 12.6-13.6 s wall
instead of 20-23 and 14.7-16.6); and a dynamic class-data-sharing (CDS) archive of the classes
Spark loads spares their loading and verification at every start; and from Java 22 on, the JVM
ends without waiting 300 ms for its threads blocked in native socket reads (EXIT_TUNING). The
archive lives in ~/.cache/pulsar-ack-traces (or $XDG_CACHE_HOME), one per Spark, Python and JVM
build; TRACES_CDS=0 turns it off.

The JVM writes an archive when it exits (`-XX:ArchiveClassesAtExit`), and a truncated archive
crashes the JVM that maps it, so an archive is never used where it is written: each writer gets
its own `*.writing` file and records its JVM's pid next to it; a later start renames the file into
place (atomically) once that JVM is gone. One writer at a time: while a writing JVM is alive,
other starts neither write nor wait. An archive holds the classes its writer loaded, so it is kept
only if its writer finished a job (`kept`, called by `python -m traces` after one): a session that
ran none (an option refused, a corpus already built) would leave an archive that lacks most of what
a job needs (measured: one written by a session without a job left the 10M diff 1.5-2 s slower).
If a JVM does not start with these options (an archive that is corrupt anyway, a JVM that rejects
an option), the session starts again without them and the archive is removed (see
traces.session), so a tuning problem costs one failed start, never a job; and if a Java picked
here does not start at all, the session starts on the `java` on PATH.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

log = logging.getLogger("traces")

TUNING: tuple[str, ...] = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
# At exit the JVM waits up to 300 ms for its threads blocked in native calls (Spark's and Py4J's
# socket reads are) before it ends; Java 22 and later let that wait go (measured: the JVM ends
# 0.1 s after its Python closes it, instead of 0.4 s).
EXIT_TUNING: tuple[str, ...] = ("-XX:UserThreadWaitAttemptsAtExit=0",)
EXIT_TUNING_SINCE = 22
# Where a crashing JVM writes its report (not the working directory).
ERROR_FILE = f"-XX:ErrorFile={Path(tempfile.gettempdir()) / 'traces-hs_err_%p.log'}"
QUIET_CDS = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
STALE_WRITING_S = 24 * 3600  # a *.writing file this old whose writer was never recorded is dropped


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    options: tuple[str, ...]
    archive: Path | None = None  # the archive these options read (removed if the JVM fails to start)
    writing: Path | None = None  # the archive these options write at exit (its writer's pid goes next to it)
    java_home: Path | None = None  # the Java the JVM runs from (java_home(); None: the `java` on PATH)
    java_picked: bool = False  # java_home was picked here, not named by the user: the one on PATH is the fallback


def error_file(pid: int) -> Path:
    """Where the JVM `pid`, started with these options, writes its crash report."""
    return Path(ERROR_FILE.split("=", 1)[1].replace("%p", str(pid)))


def death(process) -> str | None:
    """None while the JVM `process` (a Popen) runs; once it is gone, how it ended and the head of
    its crash report, if it wrote one."""
    if process.poll() is None:
        return None
    code = process.returncode
    how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    if code == -9:
        how += " (SIGKILL: the kernel's out-of-memory killer, or a kill -9)"
    report = error_file(process.pid)
    try:
        head = "\n".join(report.read_text(errors="replace").splitlines()[:40])
        return f"the JVM (pid {process.pid}) is gone: {how}; its crash report, {report}:\n{head}"
    except OSError:
        return f"the JVM (pid {process.pid}) is gone: {how}; it wrote no crash report ({report})"


def spark_java() -> tuple[int, ...]:
    """The Java versions the installed Spark runs on (Java 25 checked with Spark 4.3 here)."""
    import pyspark

    version = tuple(int(part) for part in pyspark.__version__.split(".")[:2] if part.isdigit())
    return (17, 21, 25) if version >= (4, 3) else (17, 21) if version >= (4, 0) else (8, 11, 17)


JVM_DIRS = (Path("/usr/lib/jvm"),)
JAVA_HOME_VARIABLES = ("TRACES_JAVA_HOME", "JAVA_HOME")  # a Java the user names, in this order


def java_major(home: Path) -> int | None:
    """The major version of the JDK or JRE at `home`, from its `release` file (None: not one)."""
    try:
        found = re.search(r'^JAVA_VERSION="(\d+)', (home / "release").read_text(errors="replace"), re.M)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def java_home() -> Path | None:
    """The Java home the local Spark JVM runs from (None: the `java` on PATH, as found)."""
    return _named_java_home() or _picked_java_home()


def _named_java_home() -> Path | None:
    """The Java the user names ($TRACES_JAVA_HOME, else $JAVA_HOME), if any."""
    for variable in JAVA_HOME_VARIABLES:
        if os.environ.get(variable):
            home = Path(os.environ[variable])
            if not (home / "bin" / "java").exists():
                raise ValueError(f"${variable} is {home}, which has no bin/java")
            return home
    return None


def installed_javas() -> list[tuple[int, Path]]:
    """(major version, home) of every Java installed in JVM_DIRS, in name order."""
    return [(major, home) for folder in JVM_DIRS if folder.is_dir() for home in sorted(folder.iterdir())
            if (home / "bin" / "java").exists() and (major := java_major(home)) is not None]


def _picked_java_home() -> Path | None:
    """The newest Java Spark runs on beside the `java` on PATH, if newer than that one."""
    on_path = shutil.which("java")
    current = java_major(Path(os.path.realpath(on_path)).parent.parent) if on_path else None
    if on_path and current is None:
        return None  # a wrapper or shim whose version is unknown: left as found
    supported = spark_java()
    installed = [(major, home) for major, home in installed_javas() if major in supported]
    if not installed:
        return None
    major, home = max(installed, key=lambda found: found[0])
    return home if current is None or current not in supported or major > current else None


def _java(home: Path | None) -> str:
    java = str(home / "bin" / "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)


def archive_path(java: str | None = None) -> Path | None:
    """The archive for this Spark, Python and JVM build (`java`: the JVM's executable, by default
    the one java_home() picks; None: turned off with TRACES_CDS=0). A dynamic archive holds the
    classes its writer loaded, whatever the collector."""
    if os.environ.get("TRACES_CDS", "1") == "0":
        return None
    import pyspark

    java = java or _java(java_home())
    jvm = Path(java).parent.parent / "lib" / "server" / "libjvm.so"
    try:
        stat = jvm.stat()
        build = f"{stat.st_size}-{stat.st_mtime_ns}"
    except OSError:
        build = "?"
    tag = hashlib.sha1(f"{pyspark.__version__}|{java}|{build}|{sys.version}".encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pulsar-ack-traces"
    return cache / f"spark-{pyspark.__version__}-{tag}.jsa"


def _alive(pid: int) -> bool:
    """Whether `pid` is a running JVM (a reused pid of another program is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        return b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: assume it is


def _pid_file(writing: Path) -> Path:
    return writing.with_name(writing.name + ".pid")


def _keep_file(writing: Path) -> Path:
    return writing.with_name(writing.name + ".keep")


def _writer_pid(writing: Path) -> int | None:
    try:
        return int(_pid_file(writing).read_text().strip())
    except (OSError, ValueError):
        return None


def settle(archive: Path) -> bool:
    """Put a finished archive in place and drop abandoned ones; True while a writer's JVM runs."""
    busy = False
    for pid_file in sorted(archive.parent.glob(f"{archive.stem}.*.writing.pid")):
        writing = pid_file.with_suffix("")
        pid = _writer_pid(writing)
        if pid is not None and _alive(pid):
            busy = True  # it writes when it exits
            continue
        if writing.exists() and _keep_file(writing).exists():
            try:
                os.replace(writing, archive)  # complete: its JVM has exited
                log.info("spark: class-data archive ready (%s)", archive)
            except FileNotFoundError:
                pass  # another start put it in place first
        elif writing.exists():
            writing.unlink(missing_ok=True)  # its writer finished no job: a later one writes it again
        _keep_file(writing).unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)
    for writing in archive.parent.glob(f"{archive.stem}.*.writing"):
        try:
            if not _pid_file(writing).exists() and time.time() - writing.stat().st_mtime > STALE_WRITING_S:
                writing.unlink()  # its writer was never recorded
        except OSError:
            continue
    return busy


def local_options() -> Options:
    """The tuning options for a local session on the Java java_home() picks, reading or writing
    the archive as it stands."""
    named = _named_java_home()
    home = named or _picked_java_home()
    return replace(_tuning(_java(home)), java_home=home, java_picked=named is None and home is not None)


def path_options() -> Options:
    """The tuning options for a local session on the `java` on PATH (the fallback of a picked Java
    that does not start)."""
    return _tuning(_java(None))


def tuning_for(java: str) -> tuple[str, ...]:
    """The tuning options the JVM `java` (its executable) accepts: EXIT_TUNING only from Java
    EXIT_TUNING_SINCE on (an older JVM refuses an option it does not know)."""
    major = java_major(Path(java).parent.parent)
    return (*TUNING, *EXIT_TUNING) if major is not None and major >= EXIT_TUNING_SINCE else TUNING


def _tuning(java: str) -> Options:
    tuned = (*tuning_for(java), ERROR_FILE)
    archive = archive_path(java)
    if archive is None:
        return Options(options=tuned)
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        busy = settle(archive)
    except OSError as error:  # a read-only or unusable cache: no archive
        log.info("spark: no class-data archive (%s)", error)
        return Options(options=tuned)
    if archive.exists():
        return Options(options=(*tuned, f"-XX:SharedArchiveFile={archive}", *QUIET_CDS), archive=archive)
    if busy:
        return Options(options=tuned)
    writing = archive.with_name(f"{archive.stem}.{uuid.uuid4().hex[:12]}.writing")
    log.info("spark: this run also writes a class-data archive for faster start-ups (%s)", archive)
    return Options(options=(*tuned, f"-XX:ArchiveClassesAtExit={writing}", *QUIET_CDS), writing=writing)


def started(options: Options, jvm_pid: int) -> None:
    """Record the pid of the JVM that writes `options.writing` at its exit."""
    if options.writing is not None:
        try:
            _pid_file(options.writing).write_text(f"{jvm_pid}\n")
        except OSError as error:
            log.info("spark: cannot record the archive writer (%s)", error)


def kept(options: Options) -> None:
    """The session started with these options finished a job: the archive it writes at exit is
    worth keeping."""
    if options.writing is not None:
        try:
            _keep_file(options.writing).touch()
        except OSError as error:
            log.info("spark: cannot mark the archive as worth keeping (%s)", error)


def failed(options: Options) -> None:
    """The JVM did not start with these options: drop the archive it read."""
    if options.archive is not None:
        options.archive.unlink(missing_ok=True)
