"""The build backend: setuptools', except that a wheel holds the kit under one package name.

The repository keeps its top-level packages (`model`, `fixtures`, `suites`, `reports`, `traces`,
`benchmarks`, `drivers`); installed as such they would meet a user's own `model/` or `fixtures/`
on sys.path. So `build_wheel` stages a copy in which each of them is a subpackage of
`pulsar_ack_conformance`, every import of one rewritten to that name (`from model.spec import
Spec` -> `from pulsar_ack_conformance.model.spec import Spec`), and builds the wheel from there.
Names the code keeps in strings go through `fixtures.kit.module`, which reads the prefix from
its own module name. An editable install (`./dev setup`) and an sdist are setuptools' own: the
repository as it is.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from setuptools import build_meta as _setuptools

PACKAGE = "pulsar_ack_conformance"
TOP_LEVEL = ("model", "fixtures", "suites", "reports", "traces", "benchmarks", "drivers")
ROOT = Path(__file__).resolve().parents[1]
# What a package folder holds that is not the kit: run outputs, build outputs, caches.
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "out", "out-*", "target", ".pytest_cache", ".hypothesis")

_NAMES = "|".join(TOP_LEVEL)
_FROM = re.compile(rf"^(\s*)from ({_NAMES})((?:\.\w+)*) import ", re.MULTILINE)
_IMPORT = re.compile(rf"^(\s*)import ({_NAMES})((?:\.\w+)*)(\s+as\s+\w+)?[ \t]*(#.*)?$", re.MULTILINE)

get_requires_for_build_wheel = _setuptools.get_requires_for_build_wheel
get_requires_for_build_sdist = _setuptools.get_requires_for_build_sdist
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
build_editable = _setuptools.build_editable
build_sdist = _setuptools.build_sdist


def rewrite(source: str) -> str:
    """A module's source with each import of a top-level package made an import under PACKAGE."""
    source = _FROM.sub(lambda m: f"{m[1]}from {PACKAGE}.{m[2]}{m[3]} import ", source)

    def plain(m: re.Match) -> str:
        indent, name, rest, alias, comment = m[1], m[2], m[3], m[4], m[5] or ""
        if alias:
            return f"{indent}import {PACKAGE}.{name}{rest}{alias} {comment}".rstrip()
        # `import model.nondet` binds `model`: the same name, bound to the subpackage
        loaded = f"; import {PACKAGE}.{name}{rest}" if rest else ""
        return f"{indent}from {PACKAGE} import {name}{loaded} {comment}".rstrip()

    return _IMPORT.sub(plain, source)


@contextmanager
def _staged() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="pulsar-ack-conformance-wheel-") as scratch:
        stage = Path(scratch)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, stage / name)
        shutil.copytree(ROOT / PACKAGE, stage / PACKAGE, ignore=LEFT_OUT)
        for name in TOP_LEVEL:
            shutil.copytree(ROOT / name, stage / PACKAGE / name, ignore=LEFT_OUT)
        for file in (stage / PACKAGE).rglob("*.py"):
            file.write_text(rewrite(file.read_text()))
        yield stage


@contextmanager
def _inside(folder: Path) -> Iterator[None]:
    here = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(here)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    with _staged() as stage, _inside(stage):
        return _setuptools.prepare_metadata_for_build_wheel(os.path.abspath(metadata_directory), config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_directory = os.path.abspath(wheel_directory)
    with _staged() as stage, _inside(stage):
        return _setuptools.build_wheel(wheel_directory, config_settings, None)
