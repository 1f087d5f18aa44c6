"""Broker restarts and crashes inside generated programs: the broker stops (gracefully, or by kill -9)
and starts again on the same data while the clients reconnect. A restart keeps every ack the broker
applied; a crash may undo the acks it had not persisted yet (the cursor's markDeletePosition is
persisted at most once a second), and a cursor read after it says which. On a broker the suite
starts, the check gets a broker of its own (the one the network cut gets); on one given by URL, or
without Go to build the proxy in front of it, its programs leave the restart and the crash out.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

pytestmark = pytest.mark.slow  # each restart takes seconds on a broker


@pytest.mark.parametrize("spec", [spec for _, spec in cases("broker_restart")],
                         ids=[name for name, _ in cases("broker_restart")])
def test_broker_restart(spec, target, target_name, program_ids, request):
    verify(check("broker_restart"), spec, target, program_ids, target_name, request.config)
