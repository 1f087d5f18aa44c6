"""Which build of the Java driver a pytest run starts: pulsar-client of the broker's version, so
of `--pulsar-version` (else $PULSAR_VERSION, else the pinned one) with the embedded broker, built
when it is missing, with a line that says so, or a usage error that names the command to build it
by hand. No broker and no Maven: a build folder is faked with the stamp of the current sources."""

from __future__ import annotations

import pytest

from drivers.java import build as java_build
from fixtures import options
from fixtures.broker.config import HOME_ENV, PINNED_VERSION, VERSION_ENV
from fixtures.targets.driver_target import driver_command


class _Config:
    def __init__(self, **given: object) -> None:
        self.given = given

    def getoption(self, name: str) -> object:
        return self.given.get(name)


def _built(version: str):
    """A build folder of `version` that is up to date (what `python -m drivers.java build` leaves)."""
    folder = java_build.build_dir(version)
    (folder / "classes").mkdir(parents=True)
    (folder / java_build.JAR).write_bytes(b"")
    (folder / "BUILT").write_text(f"{java_build.sources_hash()}\npulsar-client {version}: faked\n")
    return folder


@pytest.fixture(autouse=True)
def _own_state(tmp_path, monkeypatch):
    monkeypatch.setenv(HOME_ENV, str(tmp_path))
    monkeypatch.delenv(VERSION_ENV, raising=False)


def test_the_pulsar_version_option_then_the_environment_then_the_pinned_one(monkeypatch):
    assert options.pulsar_version(_Config()) == PINNED_VERSION
    monkeypatch.setenv(VERSION_ENV, "4.2.4")
    assert options.pulsar_version(_Config()) == "4.2.4"
    assert options.pulsar_version(_Config(**{options.PULSAR_VERSION: "3.0.12"})) == "3.0.12"


def test_the_java_driver_is_the_build_of_the_pulsar_version_option(tmp_path):
    chosen, pinned = _built("3.0.12"), _built(PINNED_VERSION)
    said = []
    assert options.java_driver(_Config(**{options.PULSAR_VERSION: "3.0.12"}), say=said.append) == chosen
    assert options.java_driver(_Config(), say=said.append) == pinned
    assert options.java_driver(_Config(), "3.0.12", say=said.append) == chosen  # a broker's own version wins
    assert said == []  # up to date: nothing built
    assert chosen == tmp_path / "drivers" / "java" / "3.0.12"
    classpath = driver_command("java", version="3.0.12")[-2]
    assert classpath.startswith(f"{chosen / java_build.JAR}:")


def test_a_missing_build_is_built_and_says_so_or_names_the_command(monkeypatch, tmp_path):
    """Without Maven on PATH the build cannot run: the usage error names what is missing and the
    command that builds this version by hand, after the line that said a build was starting."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    said = []
    with pytest.raises(pytest.UsageError) as refused:
        options.java_driver(_Config(**{options.PULSAR_VERSION: "3.0.12"}), say=said.append)
    assert len(said) == 1 and "building the Java driver for pulsar-client 3.0.12" in said[0]
    assert "mvn" in str(refused.value)
    assert "python -m drivers.java build --pulsar-version 3.0.12" in str(refused.value)
