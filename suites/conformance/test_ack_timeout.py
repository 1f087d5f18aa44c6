"""Ack timeout: an unacknowledged message comes back after the timeout.

Tracking starts when the application receives the message (PR #3079); the redelivery is requested
between the timeout and one tracker tick (1 s) after it. The Python client's minimum is 10 s, so
these checks are `slow`.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("spec", [spec for _, spec in cases("ack_timeout")], ids=[name for name, _ in cases("ack_timeout")])
def test_ack_timeout(spec, target, target_name, program_ids, request):
    verify(check("ack_timeout"), spec, target, program_ids, target_name, request.config)
