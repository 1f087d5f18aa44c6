"""Negative acknowledgement: the message comes back after the nack delay.

The client's NegativeAcksTracker requests the redelivery between the delay and a third of the
delay later (C++ timerInterval = delay/3); on Shared/Key_Shared only the nacked message comes back,
counted; on Exclusive/Failover the client falls back to redelivering every unacked message.
With a nack backoff (Shared-backoff: MultiplierRedeliveryBackoff) each nack waits the backoff's
delay for the redelivery count of the message nacked (suites/broker/test_java_nack_backoff.py).
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("negative_ack")], ids=[name for name, _ in cases("negative_ack")])
def test_negative_ack(spec, target, target_name, program_ids, request):
    verify(check("negative_ack"), spec, target, program_ids, target_name, request.config)
