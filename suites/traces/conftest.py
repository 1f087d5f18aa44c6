"""One local Spark session for every trace test (session-scoped: it costs seconds to start)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from traces.session import spark_session

    session = spark_session("local[2]", app="traces-tests", driver_memory="1g",
                            conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    yield session
    session.stop()
