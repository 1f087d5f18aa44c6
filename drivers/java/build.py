"""The Java client's driver (drivers/java: a Maven project on org.apache.pulsar:pulsar-client), built
once per Pulsar version into the project's ignored folder, and the command that starts it.

`build(version)` runs Maven with the machine's Java 17+ on `pom.xml`, with the client's version as
the `pulsar.version` property: the classes and the client's class path (from Maven Central) land
in `.pulsar/drivers/java/<version>/`, the classes also as `driver.jar`. A build is redone only when
the pom or a source changed (their hash is kept in the folder's stamp); it goes to a scratch folder
first and is renamed into place only when complete. What is missing (mvn, javac, Maven Central) is
a clear `BuildError` with Maven's error lines.

The command maps the driver's class-data archive when there is one (drivers/java/warm.py); the
JVM's own log lines go to stderr, never into the protocol on stdout.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from drivers.java.warm import WarmUp, archive_path, make_archive
from fixtures.broker.config import default_version, parse_version, state_root
from fixtures.broker.provision import find_java
from fixtures.scratch import replacing

PROJECT = Path(__file__).resolve().parent
MAIN_CLASS = "org.apache.pulsar.conformance.Main"
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               # The JVM logs its warnings to stdout by default, where the protocol's replies go.
               "-Xlog:disable", "-Xlog:all=warning:stderr")
JAR = "driver.jar"  # the driver's classes: a class-data archive maps classes from jars only
_STAMP = "BUILT"
_MAVEN_TAIL_LINES = 25


class BuildError(RuntimeError):
    """The Java driver could not be built; the message says what is missing."""


def build_dir(version: str) -> Path:
    return state_root() / "drivers" / "java" / version


def sources_hash() -> str:
    """What the build depends on in the repository: the pom and every source, by content."""
    digest = hashlib.sha256()
    for path in sorted([PROJECT / "pom.xml", *(PROJECT / "src").rglob("*.java")]):
        digest.update(path.relative_to(PROJECT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def up_to_date(version: str) -> bool:
    stamp = build_dir(version) / _STAMP
    return stamp.exists() and stamp.read_text().splitlines()[0] == sources_hash() and (build_dir(version) / JAR).exists()


def build(version: str | None = None, *, force: bool = False, say: Callable[[str], None] | None = None) -> Path:
    """Build the driver against pulsar-client `version` (default: the broker's, $PULSAR_VERSION or
    the pinned one) unless it is up to date; return its folder. A build says so first (`say`, by
    default stderr: Maven takes a while), and one that cannot run names the command to run by hand."""
    version = version or default_version()
    parse_version(version)
    target = build_dir(version)
    if not force and up_to_date(version):
        return target
    (say or _stderr)(f"building the Java driver for pulsar-client {version} into {target} (once per version "
                     f"and source change; by hand: {build_command(version)})")
    try:
        return _build(version, target)
    except BuildError as error:
        raise BuildError(f"{error}\nTo build it by hand: {build_command(version)}") from None


def build_command(version: str) -> str:
    return f".venv/bin/python -m drivers.java build --pulsar-version {version}"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _build(version: str, target: Path) -> Path:
    missing = [tool for tool in ("mvn", "javac") if shutil.which(tool) is None]
    if missing:
        raise BuildError(f"the Java driver needs {' and '.join(missing)} on PATH to be built (Maven and a Java 17 "
                         "JDK; on Debian: apt-get install maven openjdk-17-jdk-headless)")
    find_java()
    with replacing(target) as scratch:
        started = time.monotonic()
        done = subprocess.run([shutil.which("mvn"), "-B", "-ntp", "-Dstyle.color=never", "-f",
                               str(PROJECT / "pom.xml"), f"-Dpulsar.version={version}", f"-Ddriver.build={scratch}",
                               "compile"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            lines = (done.stdout + done.stderr).strip().splitlines()
            errors = [line for line in lines if line.startswith("[ERROR]") and line.strip() != "[ERROR]"]
            tail = "\n".join(errors[:_MAVEN_TAIL_LINES] if errors else lines[-_MAVEN_TAIL_LINES:])
            raise BuildError(f"Maven could not build the Java driver for pulsar-client {version} (exit "
                             f"{done.returncode}; is Maven Central reachable?); its errors:\n{tail}")
        _jar(scratch / "classes", scratch / JAR)
        jars = sorted(p.name for p in (scratch / "lib").glob("*.jar"))
        if f"pulsar-client-{version}.jar" not in jars or not (scratch / "classes").is_dir():
            raise BuildError(f"Maven finished but pulsar-client-{version}.jar or the driver's classes are missing "
                             f"from {scratch}")
        (scratch / _STAMP).write_text(f"{sources_hash()}\npulsar-client {version}: built in "
                                      f"{time.monotonic() - started:.1f} s, {len(jars)} jars\n")
    return target


def command(version: str | None = None, *, say: Callable[[str], None] | None = None,
            warm_on: WarmUp | None = None, archive: bool = True) -> tuple[str, ...]:
    """The command that starts the Java driver (built first when it is not up to date), with its
    class-data archive when there is one for this JVM; `warm_on` (a broker the run uses) makes it
    first when there is none (drivers/java/warm.py). `archive=False`: the command without it (what
    the archive is made with, and what a comparison starts cold)."""
    folder = build(version, say=say)
    java = find_java()
    classpath = f"{folder / JAR}:{folder / 'lib' / '*'}"
    plain = (str(java), *JVM_OPTIONS, "-cp", classpath, MAIN_CLASS)
    if not archive:
        return plain
    shared = archive_path(folder, java)
    if not shared.exists() and warm_on is not None:
        make_archive(plain, shared, warm_on)
    return (str(java), *JVM_OPTIONS, f"-XX:SharedArchiveFile={shared}", "-cp", classpath, MAIN_CLASS) \
        if shared.exists() else plain


def _jar(classes: Path, jar: Path) -> None:
    """The compiled classes as a jar, its entries in a fixed order."""
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(classes.rglob("*")):
            if path.is_file():
                out.write(path, path.relative_to(classes).as_posix())
