"""Redelivery count and the dead-letter policy, with redeliveries asked by negative_acknowledge only.

The rules of test_redelivery_count_and_dead_letter.py, in programs of sends, receives, nacks and
ticks only, so that a client without redeliver_unacknowledged_messages (Go) is checked too: on Shared
and Key_Shared each nack's redelivery adds one to the count (InMemoryRedeliveryTracker), and with
max_redeliver_count M the application sees counts 0..M, then the message goes to the dead-letter
topic, acknowledged: not before (it would never come back: `no-loss`) and not later (a delivery
counted above M: `dead-letter`). A client that cannot show the count (drivers/PROTOCOL.md,
`redelivery_count`) is not checked here.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

AREA = "dead_letter_by_nack"


@pytest.mark.parametrize("spec", [spec for _, spec in cases(AREA)], ids=[name for name, _ in cases(AREA)])
def test_dead_letter_by_nack(spec, target, target_name, program_ids, request):
    verify(check(AREA), spec, target, program_ids, target_name, request.config)
