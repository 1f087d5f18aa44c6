"""A partitioned topic with an ack timeout: what a consumer holds times out per partition, and a
cumulative ack ends the timeout of what it acknowledges on its own partition, none of another's.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

pytestmark = pytest.mark.slow

AREA = "partitioned_ack_timeout"


@pytest.mark.parametrize("spec", [spec for _, spec in cases(AREA)], ids=[name for name, _ in cases(AREA)])
def test_partitioned_ack_timeout(spec, target, target_name, program_ids, request):
    verify(check(AREA), spec, target, program_ids, target_name, request.config)
