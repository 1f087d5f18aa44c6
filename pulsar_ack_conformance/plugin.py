"""The kit's pytest plugin: its plugin modules, the command-line options, the markers, and the
order of the tests. The root conftest.py loads it in the repository; an installed kit registers
it through the `pytest11` entry point (pulsar_ack_conformance/entry.py), so that a user runs the
suites from any folder without this repository's conftest.py.

Options are grouped under "conformance" and named once, in fixtures/options.py.
"""

import pytest

from fixtures import options
from fixtures.kit import module
from suites.conformance.catalog import CHECKS

pytest_plugins = [module("fixtures.pulsar"), module("fixtures.conformance"), module("reports.plugin")]

MARKERS = {
    "broker": "needs a real Pulsar broker (the embedded one, started on demand, or --service-url)",
    "slow": "takes more than a few seconds (ack timeouts are at least 10 s in the Python client)",
    "z3": "runs the Z3 solver",
    "spark": "starts a local Spark session",
    "browser": "lays a report page out in headless Chromium (skipped without Debian's chromium package)",
    "restarts_broker": "restarts or crashes the session's broker: runs after every other test (after a kill -9 "
                       "the standalone's bookie registration can go stale and fail later tests' ledgers)",
    "crashes_broker": "kill -9 of the session's broker and a start on its data (runs last, with restarts_broker; "
                      "fixtures/broker/recovery.py clears the dead sessions the kill leaves in the metadata store)",
    "guarantee": "guarantee(value, ...): the guarantees (model/guarantees.py values) a broker or fidelity test shows; "
                 "GUARANTEES.md lists the tests under each (reports/guarantees.py reads the marker)",
}


def pytest_addoption(parser):
    options.add_options(parser)


def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")


def pytest_collection_modifyitems(config, items):
    mark_conformance_guarantees(items)
    run_restarts_last(items)


def mark_conformance_guarantees(items):
    """Each conformance test carries the guarantees its catalog check can break, as a `guarantee`
    mark: the report's guarantee view reads them (reports/plugin.py)."""
    from reports.plugin import area_and_spec_id, is_conformance  # registered by pytest_plugins first

    by_area = {check.area: check for check in CHECKS}
    for item in items:
        if not is_conformance(item):
            continue
        check = by_area.get(area_and_spec_id(item)[0])
        if check is not None:
            item.add_marker(pytest.mark.guarantee(*sorted(g.value for g in check.guarantees)))


def run_restarts_last(items):
    """Tests that restart or crash the session's broker run last, the crash last of all: a broker
    back from a `kill -9` was seen to lose its bookie minutes later (stale registration in the
    RocksDB metadata store: "Not enough bookies", an 800 MB log of placement warnings), which
    failed unrelated tests that happened to run after it."""
    def last(item) -> tuple[bool, bool]:
        restarts = item.get_closest_marker("restarts_broker") is not None
        return restarts, restarts and "crash" in item.name

    items.sort(key=last)
