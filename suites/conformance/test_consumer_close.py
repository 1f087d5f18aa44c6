"""Closing a consumer: pending acks are flushed, unacked messages go to the others.

`close()` flushes the grouped acks before CLOSE_CONSUMER (C++ ConsumerImpl::closeAsync), so the
cursor shows them at once; what the consumer held unacknowledged is dispatched again.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("consumer_close")], ids=[name for name, _ in cases("consumer_close")])
def test_consumer_close(spec, target, target_name, program_ids, request):
    verify(check("consumer_close"), spec, target, program_ids, target_name, request.config)
