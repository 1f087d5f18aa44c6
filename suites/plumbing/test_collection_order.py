"""Tests that restart or crash the session's broker run after every other test (the kit's plugin:
pulsar_ack_conformance/plugin.py)."""

from types import SimpleNamespace

from pulsar_ack_conformance import plugin


def _item(name, restarts=False):
    return SimpleNamespace(name=name, get_closest_marker=lambda marker: object() if restarts and
                           marker == "restarts_broker" else None)


def test_restarting_tests_run_last_and_the_crash_last_of_all():
    items = [_item("test_crash_brings_back", restarts=True), _item("test_a"), _item("test_restart", restarts=True),
             _item("test_crash_of_a_model"), _item("test_b")]
    plugin.pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["test_a", "test_crash_of_a_model", "test_b", "test_restart",
                                       "test_crash_brings_back"]
