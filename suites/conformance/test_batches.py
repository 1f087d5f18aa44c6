"""Batches, with and without batch-index acknowledgement.

Without batch-index acks the client holds a partial batch ack and the broker redelivers the whole
entry; with them (PIP-54, both broker and client) only the unacked indexes come back.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("batches")], ids=[name for name, _ in cases("batches")])
def test_batches(spec, target, target_name, program_ids, request):
    verify(check("batches"), spec, target, program_ids, target_name, request.config)
