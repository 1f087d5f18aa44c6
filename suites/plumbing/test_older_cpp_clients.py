"""Older C++ clients through their Python wheels (`--client python==X.Y.Z`, drivers/python/versions.py):
the Python driver runs in a virtualenv of that pulsar-client version, speaks the protocol, and its
hello names the wheel that is installed there, so a report names the client that really ran."""

from __future__ import annotations

import pytest

from drivers import wire
from drivers.python import versions
from fixtures.targets.driver_target import DriverProcess
from suites.plumbing.test_drivers import test_a_driver_answers_every_request_and_errors_are_data as answers_every_request

OLDER = "3.5.0"  # the C++ client 3.5.1 underneath


@pytest.fixture(scope="module")
def older_driver() -> tuple[str, ...]:
    try:
        return versions.command(OLDER)
    except versions.VersionError as error:
        pytest.skip(f"pulsar-client {OLDER} could not be installed: {error}")


def test_an_older_client_names_the_wheel_it_runs(older_driver):
    driver = DriverProcess(older_driver)
    try:
        hello = driver.request(wire.hello("pulsar://127.0.0.1:1"), 30_000)
        assert (hello["client"], hello["version"]) == ("python", OLDER)
    finally:
        driver.stop()


def test_an_older_client_answers_every_request_and_errors_are_data(older_driver):
    answers_every_request(older_driver)


def test_a_version_that_is_not_a_release_is_refused_before_pip_runs():
    with pytest.raises(versions.VersionError, match="expected MAJOR.MINOR.PATCH"):
        versions.ensure("3.5")
