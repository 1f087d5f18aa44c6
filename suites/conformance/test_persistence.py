"""Persistence: acks survive a topic unload and a graceful restart.

Against a broker the suite controls, restart and crash are in the vocabulary too: after a crash the
cursor may be any earlier persisted state (observed on 4.0.7), never one with an ack it did not have.
"""

import pytest

from suites.conformance.catalog import cases, check
from suites.machines import verify


@pytest.mark.parametrize("spec", [spec for _, spec in cases("persistence")], ids=[name for name, _ in cases("persistence")])
def test_persistence(spec, target, target_name, program_ids, request):
    verify(check("persistence"), spec, target, program_ids, target_name, request.config)
