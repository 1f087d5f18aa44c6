"""Network stalls: nothing passes between the clients and the broker for a while, then everything
held goes through, in order, on the same connections (fixtures/network.py). A stall shorter than the
keep-alive is a wait: what a consumer held it still holds, an ack whose flush the stall held
reaches the broker after it, a nacked message comes back once its request gets through, never
sooner than its delay. On a broker the suite starts, the check gets a broker of its own behind the
proxy; on one given by URL, or without Go to build the proxy, its programs leave the stall out.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

pytestmark = pytest.mark.slow  # each stall costs its length on a broker


@pytest.mark.parametrize("spec", [spec for _, spec in cases("network_stall")],
                         ids=[name for name, _ in cases("network_stall")])
def test_network_stall(spec, target, target_name, program_ids, request):
    verify(check("network_stall"), spec, target, program_ids, target_name, request.config)
