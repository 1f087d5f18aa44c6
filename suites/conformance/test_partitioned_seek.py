"""A seek on a partitioned topic: the multi-topics consumer seeks the partition of the message.

The seeking consumer's partition is reset to the message (its client skips the target, as on one
topic), and comes again from there; the other partitions keep their cursors, and what they had
dispatched is still owed. The Java and C++ clients clear the multi-topics consumer's whole receiver
queue at a seek, so what the other partitions had queued is lost to that consumer until a
redelivery (KD-44); the Go client refuses a seek on a partitioned topic. A check of the nightly
run (`slow`, suites/conformance/catalog.py says why).
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("spec", [spec for _, spec in cases("partitioned_seek")],
                         ids=[name for name, _ in cases("partitioned_seek")])
def test_partitioned_seek(spec, target, target_name, program_ids, request):
    verify(check("partitioned_seek"), spec, target, program_ids, target_name, request.config)
