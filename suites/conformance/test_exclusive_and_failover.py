"""Exclusive and Failover: one consumer receives at a time, in publish order.

A second Exclusive consumer is refused (ConsumerBusy). A Failover subscription accepts standbys;
when the active consumer leaves, the next one continues from the first unacknowledged message.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("exclusive_and_failover")], ids=[name for name, _ in cases("exclusive_and_failover")])
def test_exclusive_and_failover(spec, target, target_name, program_ids, request):
    verify(check("exclusive_and_failover"), spec, target, program_ids, target_name, request.config)
