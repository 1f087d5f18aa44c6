"""The JVM tuning of local sessions (traces/jvm.py): the class-data archive is only ever used once
complete, one writer at a time, and a JVM that will not start with the tuning starts without it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from traces import jvm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TRACES_CDS", raising=False)
    archive = jvm.archive_path()
    assert archive is not None and archive.parent == tmp_path / "pulsar-ack-traces"
    return archive


def _option(options: jvm.Options, prefix: str) -> str | None:
    return next((o.split("=", 1)[1] for o in options.options if o.startswith(prefix)), None)


def test_first_start_writes_an_archive_of_its_own_and_reads_none(cache):
    options = jvm.local_options()
    writing = _option(options, "-XX:ArchiveClassesAtExit=")
    assert writing is not None and Path(writing) == options.writing and writing.endswith(".writing")
    assert Path(writing).parent == cache.parent and Path(writing) != cache
    assert _option(options, "-XX:SharedArchiveFile=") is None
    assert "-XX:TieredStopAtLevel=1" in options.options
    assert jvm.local_options().writing != options.writing  # two writers never share a file


def test_an_archive_whose_writer_runs_is_not_used_and_no_second_writer_starts(cache, monkeypatch):
    options = jvm.local_options()
    jvm.started(options, 4242)
    options.writing.write_bytes(b"half an archive")
    monkeypatch.setattr(jvm, "_alive", lambda pid: pid == 4242)
    again = jvm.local_options()
    assert _option(again, "-XX:SharedArchiveFile=") is None and again.writing is None
    assert not cache.exists()


def test_an_archive_is_put_in_place_once_its_writer_is_gone(cache, monkeypatch):
    options = jvm.local_options()
    jvm.started(options, 4242)
    jvm.kept(options)  # its session finished a job
    options.writing.write_bytes(b"a whole archive")
    monkeypatch.setattr(jvm, "_alive", lambda pid: False)
    again = jvm.local_options()
    assert _option(again, "-XX:SharedArchiveFile=") == str(cache) and again.archive == cache
    assert cache.read_bytes() == b"a whole archive"
    assert not options.writing.exists() and list(cache.parent.glob("*.pid")) == []
    assert list(cache.parent.glob("*.keep")) == []


def test_an_archive_written_by_a_session_that_finished_no_job_is_dropped(cache, monkeypatch):
    """It would lack most classes a job loads: the next start writes one again."""
    options = jvm.local_options()
    jvm.started(options, 4242)
    options.writing.write_bytes(b"an archive of a session that did nothing")
    monkeypatch.setattr(jvm, "_alive", lambda pid: False)
    again = jvm.local_options()
    assert not cache.exists() and not options.writing.exists()
    assert again.writing is not None and again.archive is None


def test_a_writer_that_wrote_nothing_leaves_nothing(cache, monkeypatch):
    options = jvm.local_options()
    jvm.started(options, 4242)
    monkeypatch.setattr(jvm, "_alive", lambda pid: False)
    again = jvm.local_options()
    assert not cache.exists() and again.writing is not None
    assert not Path(str(options.writing) + ".pid").exists()


def test_a_failed_start_drops_the_archive_it_read(cache):
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"corrupt")
    options = jvm.local_options()
    assert options.archive == cache
    jvm.failed(options)
    assert not cache.exists()


def test_the_archive_can_be_turned_off(cache, monkeypatch):
    monkeypatch.setenv("TRACES_CDS", "0")
    options = jvm.local_options()
    assert options.archive is None and options.writing is None
    assert not any("Archive" in o for o in options.options)


def test_only_a_running_jvm_counts_as_a_writer():
    assert not jvm._alive(os.getpid())  # a Python process, not a JVM
    assert not jvm._alive(2**22 + 12345)  # no such process


@pytest.mark.spark
def test_a_jvm_that_rejects_the_tuning_starts_without_it(tmp_path):
    """In a fresh process: an option the JVM refuses, and an archive in place; the session starts
    anyway, says so once, and the archive is gone."""
    script = (
        "import logging, sys\n"
        "from traces import jvm, session\n"
        "jvm.TUNING = ('-XX:TieredStopAtLevel=banana',)\n"
        "archive = jvm.archive_path(); archive.parent.mkdir(parents=True); archive.write_bytes(b'x')\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "spark = session.spark_session('local[1]', driver_memory='512m')\n"
        "assert spark.range(3).count() == 3\n"
        "assert not archive.exists()\n"
        "print('started')\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("TRACES_CDS", None)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("started")
    assert done.stderr.count("did not start with") == 1


@pytest.mark.spark
def test_a_picked_java_that_does_not_start_gives_way_to_the_java_on_path(tmp_path):
    """In a fresh process: the newest Java beside the one on PATH is broken (its `java` exits at
    once); the session says so and starts on the `java` on PATH."""
    broken = _jdk(tmp_path / "jvm", "jdk-99", "99.0.1")
    (broken / "bin" / "java").write_text("#!/bin/sh\necho 'Error: this Java is broken' >&2\nexit 1\n")
    script = (
        "import logging, os, sys\n"
        "from pathlib import Path\n"
        "from traces import jvm, session\n"
        f"jvm.JVM_DIRS = (Path({str(tmp_path / 'jvm')!r}),)\n"
        "jvm.spark_java = lambda: (8, 11, 17, 21, 25, 99)\n"
        f"assert jvm.java_home() == Path({str(broken)!r})\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "spark = session.spark_session('local[1]', driver_memory='512m')\n"
        "assert spark.range(3).count() == 3\n"
        "print(spark.sparkContext._jvm.java.lang.System.getProperty('java.home'))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TRACES_CDS": "0"}
    for variable in jvm.JAVA_HOME_VARIABLES:
        env.pop(variable, None)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    on_path = Path(os.path.realpath(shutil.which("java"))).parent.parent
    assert Path(done.stdout.strip().splitlines()[-1]).resolve() == on_path.resolve()
    assert f"the JVM did not start on {broken}" in done.stderr and "trying the java on PATH" in done.stderr


def test_a_crash_report_is_found_by_the_pid_of_its_jvm():
    assert jvm.error_file(4242).name == "traces-hs_err_4242.log"
    assert f"-XX:ErrorFile={jvm.error_file(4242)}".replace("4242", "%p") == jvm.ERROR_FILE


def test_a_dead_jvm_says_how_it_died_and_shows_its_crash_report(tmp_path, monkeypatch):
    process = subprocess.Popen(["sleep", "60"])
    assert jvm.death(process) is None
    monkeypatch.setattr(jvm, "ERROR_FILE", f"-XX:ErrorFile={tmp_path / 'hs_err_%p.log'}")
    (tmp_path / f"hs_err_{process.pid}.log").write_text("# A fatal error has been detected\n# SIGBUS\n")
    process.kill()
    process.wait()
    said = jvm.death(process)
    assert f"pid {process.pid}" in said and "signal 9" in said and "out-of-memory" in said
    assert "# SIGBUS" in said
    finished = subprocess.Popen(["sh", "-c", "exit 3"])
    finished.wait()
    assert "exit status 3" in jvm.death(finished) and "no crash report" in jvm.death(finished)


def _jdk(folder: Path, name: str, version: str) -> Path:
    home = folder / name
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "bin" / "java").chmod(0o755)
    (home / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return home


@pytest.fixture
def jdks(tmp_path, monkeypatch):
    """A JVM folder with Java 17 (the one on PATH), 21, 25, an unsupported 26 and a folder that holds
    no Java; no JAVA_HOME."""
    folder = tmp_path / "jvm"
    homes = {v: _jdk(folder, f"jdk-{v}", f"{v}.0.1") for v in ("17", "21", "25", "26")}
    (folder / "not-a-jdk").mkdir()
    monkeypatch.setattr(jvm, "JVM_DIRS", (folder,))
    monkeypatch.setenv("PATH", f"{homes['17'] / 'bin'}{os.pathsep}{os.environ['PATH']}")
    for variable in jvm.JAVA_HOME_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return homes


def test_spark_runs_on_the_newest_java_it_supports_installed_beside_the_one_on_path(jdks, monkeypatch):
    monkeypatch.setattr(jvm, "spark_java", lambda: (17, 21, 25))
    assert jvm.java_home() == jdks["25"]  # not 26: Spark does not run on it
    monkeypatch.setattr(jvm, "spark_java", lambda: (17, 21))
    assert jvm.java_home() == jdks["21"]
    monkeypatch.setattr(jvm, "spark_java", lambda: (17,))
    assert jvm.java_home() is None  # the one on PATH is the newest: left as found


def test_a_java_on_path_of_unknown_version_is_left_as_found(jdks, monkeypatch, tmp_path):
    shim = tmp_path / "shims"
    shim.mkdir()
    (shim / "java").write_text("#!/bin/sh\n")
    (shim / "java").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    assert jvm.java_home() is None


def test_a_java_home_chosen_by_the_user_wins_and_a_wrong_one_is_named(jdks, monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(jdks["17"]))
    assert jvm.java_home() == jdks["17"]
    monkeypatch.setenv("TRACES_JAVA_HOME", str(jdks["21"]))
    assert jvm.java_home() == jdks["21"]
    monkeypatch.setenv("TRACES_JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"\$TRACES_JAVA_HOME is .*nowhere, which has no bin/java"):
        jvm.java_home()


def test_the_wait_at_exit_is_dropped_only_on_a_java_that_knows_the_option(jdks):
    for version, exit_tuned in (("17", False), ("21", False), ("25", True), ("26", True)):
        options = jvm.tuning_for(str(jdks[version] / "bin" / "java"))
        assert options[:len(jvm.TUNING)] == jvm.TUNING
        assert (set(jvm.EXIT_TUNING) <= set(options)) is exit_tuned, version


def _installed_javas() -> list[Path]:
    found = {Path(os.path.realpath(java)) for java in [shutil.which("java")] if java}
    found |= {Path(os.path.realpath(home / "bin" / "java")) for _, home in jvm.installed_javas()}
    return sorted(found)


@pytest.mark.parametrize("java", _installed_javas(), ids=str)
def test_every_installed_java_starts_with_the_tuning_it_gets(java):
    """A JVM refuses an option it does not know, and the session then starts again without any
    tuning: each Java here gets only options it takes."""
    done = subprocess.run([str(java), *jvm.tuning_for(str(java)), "-version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_only_a_java_picked_here_gives_way_to_the_one_on_path(jdks, monkeypatch):
    """A Java the user names is the user's choice: if it does not start, the session fails."""
    monkeypatch.setattr(jvm, "spark_java", lambda: (17, 21, 25))
    monkeypatch.setenv("TRACES_CDS", "0")
    options = jvm.local_options()
    assert options.java_home == jdks["25"] and options.java_picked
    monkeypatch.setenv("JAVA_HOME", str(jdks["21"]))
    options = jvm.local_options()
    assert options.java_home == jdks["21"] and not options.java_picked


class _Started:
    """What spark_session uses of a session that started."""

    class sparkContext:  # noqa: N801 - pyspark's name
        master = "local[1]"
        _jvm = SimpleNamespace(java=SimpleNamespace(lang=SimpleNamespace(ProcessHandle=SimpleNamespace(
            current=lambda: SimpleNamespace(pid=lambda: 4242)))))

        @staticmethod
        def setLogLevel(level):  # noqa: N802 - pyspark's name
            pass


@pytest.fixture
def starts(jdks, monkeypatch):
    """spark_session with pyspark's start replaced: each start takes the next outcome ('started',
    'no jvm': the JVM did not start, 'jvm': an error after it started) and records the JAVA_HOME and
    JVM options it saw."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from traces import session

    monkeypatch.setattr(jvm, "spark_java", lambda: (17, 21, 25))
    monkeypatch.setenv("TRACES_CDS", "0")
    monkeypatch.setattr(SparkContext, "_gateway", None)
    monkeypatch.setattr(session, "_TUNING", None)
    seen, outcomes = [], []

    def get_or_create(builder):
        seen.append((os.environ.get("JAVA_HOME"), builder._options["spark.driver.extraJavaOptions"]))
        outcome = outcomes.pop(0)
        if outcome == "started":
            return _Started
        if outcome == "jvm":
            monkeypatch.setattr(SparkContext, "_gateway", object())
        raise RuntimeError(f"start failed: {outcome}")

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", get_or_create)

    def start(*planned: str):
        outcomes[:] = planned
        return session.spark_session("local[1]")

    return SimpleNamespace(start=start, seen=seen)


def test_the_session_tries_the_picked_java_then_without_tuning_then_the_java_on_path(starts, jdks, caplog):
    assert starts.start("no jvm", "no jvm", "started") is _Started
    tuned = " ".join(jvm.TUNING)
    assert [home for home, _ in starts.seen] == [str(jdks["25"]), str(jdks["25"]), None]
    assert [tuned in options for _, options in starts.seen] == [True, False, True]
    assert f"did not start on {jdks['25']}" in caplog.text and "trying the java on PATH" in caplog.text


def test_a_java_the_user_names_is_not_replaced_and_an_error_after_the_start_is_not_retried(starts, jdks,
                                                                                            monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(jdks["21"]))
    with pytest.raises(RuntimeError, match="start failed: no jvm"):
        starts.start("no jvm", "no jvm", "started")
    assert [home for home, _ in starts.seen] == [str(jdks["21"])] * 2
    starts.seen.clear()
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(RuntimeError, match="start failed: jvm"):
        starts.start("jvm", "started")
    assert len(starts.seen) == 1


def test_the_spark_jvm_gets_its_java_home_and_the_process_keeps_its_own(monkeypatch, tmp_path):
    from traces.session import _with_java_home

    monkeypatch.setenv("JAVA_HOME", "/the/users/java")
    with _with_java_home(tmp_path):
        assert os.environ["JAVA_HOME"] == str(tmp_path)
    assert os.environ["JAVA_HOME"] == "/the/users/java"
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(RuntimeError), _with_java_home(tmp_path):
        raise RuntimeError("the JVM did not start")
    assert "JAVA_HOME" not in os.environ


@pytest.mark.parametrize("version, javas", [("3.5.1", (8, 11, 17)), ("4.0.0", (17, 21)), ("4.3.0", (17, 21, 25))])
def test_the_javas_to_pick_from_follow_the_installed_spark(monkeypatch, version, javas):
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", version)
    assert jvm.spark_java() == javas


def test_a_module_imported_ahead_is_there_once_imported_and_a_failed_one_costs_nothing(tmp_path, monkeypatch):
    """The session imports what pyspark imports on its first call to the JVM while the JVM starts
    (traces.session._import_in_background); an import that fails there is left to pyspark."""
    import threading

    from traces.session import _import_in_background

    (tmp_path / "ahead_ok.py").write_text("import time\ntime.sleep(0.2)\nLOADED = True\n")
    (tmp_path / "ahead_broken.py").write_text("raise ImportError('not here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("ahead_ok", "ahead_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
        _import_in_background(name)
    for thread in threading.enumerate():
        if thread.name.startswith("import-ahead_"):
            thread.join(timeout=10)
    assert sys.modules["ahead_ok"].LOADED
    assert "ahead_broken" not in sys.modules
