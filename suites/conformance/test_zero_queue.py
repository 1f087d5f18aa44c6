"""receiver_queue_size=0 (ZeroQueueConsumer): the client prefetches nothing.

Each receive asks the broker for one message; the same ack guarantees hold one message at a time.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("zero_queue")], ids=[name for name, _ in cases("zero_queue")])
def test_zero_queue(spec, target, target_name, program_ids, request):
    verify(check("zero_queue"), spec, target, program_ids, target_name, request.config)
