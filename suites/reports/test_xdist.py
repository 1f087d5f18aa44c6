"""A conformance run split over pytest-xdist workers (`-n 2`) writes where a single process does:
the workers' allure results and program histories land in the reports folder the controller
settled on (reports/plugin.py hands it to them), not in the working directory's defaults.

Skipped, saying why, where pytest-xdist is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                                reason="pytest-xdist is not installed (pip install pytest-xdist)")


def test_workers_write_allure_results_and_histories_into_the_reports_folder(tmp_path):
    elsewhere = tmp_path / "cwd"  # the working directory is not the project's
    elsewhere.mkdir()
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), str(ROOT / "suites" / "conformance" / "test_individual_ack.py"),
         "--target", "model", "--keep-histories", "all", "--reports-dir", str(out)],
        cwd=elsewhere, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    tests = {r["nodeid"] for r in summary["results"]}
    assert len(tests) == 5 and summary["totals"]["passed"] == 5
    assert len(list((out / "allure-results").glob("*-result.json"))) == 5, "the workers' allure results are missing"
    recorded = sorted(p.name for p in (out / "histories").iterdir())
    assert len(recorded) == 5 and all("test_individual_ack" in name for name in recorded)
    writers = {p.stem.split("-")[-2] for p in (out / "histories").glob("*/*.jsonl")}  # program ids name the worker
    assert writers <= {"gw0", "gw1"} and writers, writers
    assert not (elsewhere / "reports").exists(), "a worker wrote into the working directory's reports/out"
