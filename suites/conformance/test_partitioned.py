"""A partitioned topic: every guarantee holds per partition, through the multi-topics consumer.

A topic of N partitions is N cursors. A send goes to the partition its producer routes it to (by
key, round robin without one), and the messages of each partition come in publish order. A
cumulative ack acknowledges its own partition's messages up to the one it names, and no other
partition's. A redelivery request, a close, an unload and a client crash reach every partition.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("partitioned")], ids=[name for name, _ in cases("partitioned")])
def test_partitioned(spec, target, target_name, program_ids, request):
    verify(check("partitioned"), spec, target, program_ids, target_name, request.config)
