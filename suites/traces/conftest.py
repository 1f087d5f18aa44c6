"""One local Spark session for every trace test (session-scoped: it costs seconds to start).

The session's JVM writes no class-data archive (traces.jvm): it lives for the whole run, so an
archive would save it little, while a dynamic dump keeps a core busy for a minute or two after it
exits and JDK 17's dynamic dump has had crash bugs. One CI run lost this JVM mid-run (first run on
a fresh machine, the one that writes the archive; not reproduced since): if it dies again, the
test that saw it says how it died instead of a wall of `Connection refused`.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from traces.session import spark_session

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRACES_CDS", "0")
        session = spark_session("local[2]", app="traces-tests", driver_memory="1g",
                                conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield session
    if _jvm_death(session) is None:
        session.stop()


@pytest.fixture(autouse=True)
def _spark_jvm_alive(request):
    """After a test that used the session: fail it, with the JVM's exit status and crash report,
    if the JVM is gone."""
    yield
    if "spark" not in request.fixturenames:
        return
    death = _jvm_death(request.getfixturevalue("spark"))
    if death is not None:
        pytest.fail(death, pytrace=False)


def _jvm_death(session) -> str | None:
    from traces.jvm import death

    process = getattr(session.sparkContext._gateway, "proc", None)
    return None if process is None else death(process)
