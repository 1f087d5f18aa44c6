"""Root pytest configuration: the plugin modules under fixtures/, the command-line options, the markers.

Options are grouped under "conformance" and named once, in fixtures/options.py.
"""

from fixtures import options

pytest_plugins = ["fixtures.pulsar", "fixtures.conformance", "reports.plugin"]

MARKERS = {
    "broker": "needs a real Pulsar broker (the embedded one, started on demand, or --service-url)",
    "slow": "takes more than a few seconds (ack timeouts are at least 10 s in the Python client)",
    "z3": "runs the Z3 solver",
    "spark": "starts a local Spark session",
}


def pytest_addoption(parser):
    options.add_options(parser)


def pytest_configure(config):
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
