"""Network cuts: every connection between the clients and the broker closed for a while through a
proxy (fixtures/network.py), then back. The broker keeps what it applied; what a consumer held
comes again once its client reconnects; an ack still grouped at the cut may be lost, and its
message come again. On a broker the suite starts, the check gets a broker of its own behind the
proxy; on one given by URL, or without Go to build the proxy, its programs leave the cut out.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("network_cut")], ids=[name for name, _ in cases("network_cut")])
def test_network_cut(spec, target, target_name, program_ids, request):
    verify(check("network_cut"), spec, target, program_ids, target_name, request.config)
