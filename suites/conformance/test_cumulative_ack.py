"""Cumulative acknowledgement: everything up to the message, on Exclusive and Failover only.

A cumulative ack of M acknowledges M and every earlier message (markDeletePosition moves to M);
on Shared and Key_Shared the client refuses it with CumulativeAcknowledgementNotAllowedError.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("cumulative_ack")], ids=[name for name, _ in cases("cumulative_ack")])
def test_cumulative_ack(spec, target, target_name, program_ids, request):
    verify(check("cumulative_ack"), spec, target, program_ids, target_name, request.config)
