"""Individual acknowledgement: an acked message is never delivered again and the cursor shows it.

Pulsar docs (concepts-messaging, "Acknowledgment"): an individual ack marks one message; the
broker adds it to the cursor's individually deleted ranges and moves markDeletePosition over the
contiguous acked prefix. Checked on every subscription type: no acked message comes back, nothing
unacked is lost, the cursor read from the broker is the one the acks explain.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("individual_ack")], ids=[name for name, _ in cases("individual_ack")])
def test_individual_ack(spec, target, target_name, program_ids, request):
    verify(check("individual_ack"), spec, target, program_ids, target_name, request.config)
