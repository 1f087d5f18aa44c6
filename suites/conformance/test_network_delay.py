"""A network that delays (fixtures/network.py), on the same connections: a stall, nothing passing
between the clients and the broker for a while, then everything held, in order; a slow network,
every byte late by as much each way to the program's end. A stall shorter than the keep-alive is a
wait: what a consumer held it still holds, an ack whose flush the stall held reaches the broker
after it, a nacked message comes back once its request gets through, never sooner than its delay.
A slow network lands every redelivery and rewind late, and changes nothing else. On a broker the
suite starts, the check gets a broker of its own behind the proxy; on one given by URL, or without
Go to build the proxy, its programs leave the stall and the slow network out.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

pytestmark = pytest.mark.slow  # each stall costs its length on a broker, each round trip its delay


@pytest.mark.parametrize("spec", [spec for _, spec in cases("network_delay")],
                         ids=[name for name, _ in cases("network_delay")])
def test_network_delay(spec, target, target_name, program_ids, request):
    verify(check("network_delay"), spec, target, program_ids, target_name, request.config)
