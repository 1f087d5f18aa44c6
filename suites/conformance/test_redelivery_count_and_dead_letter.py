"""Redelivery count and the dead-letter policy.

Shared and Key_Shared count redeliveries in the broker (InMemoryRedeliveryTracker): +1 per
redelivery request, back to 0 when the last consumer leaves (observed on 4.0.7: a consumer's close
does not count). Exclusive and Failover always report 0. With max_redeliver_count M the
application sees counts 0..M, then the message goes to the dead-letter topic.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("redelivery_count_and_dead_letter")], ids=[name for name, _ in cases("redelivery_count_and_dead_letter")])
def test_redelivery_count_and_dead_letter(spec, target, target_name, program_ids, request):
    verify(check("redelivery_count_and_dead_letter"), spec, target, program_ids, target_name, request.config)
